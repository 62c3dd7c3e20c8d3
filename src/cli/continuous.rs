//! Continuous mode: `dcpi start`, `stop`, `flush`, `epoch`, `status`, and
//! the hidden `daemon-run` that `start` launches in the background.

use super::collect::{rate_from, seconds};
use super::signals;
use super::Format;
use anyhow::{bail, Context};
use clap::Args;
use dcpi_collect::control::{self, Controls, LiveStatus, RunDir};
use dcpi_collect::driver::DriverConfig;
use dcpi_collect::event_spec::parse_event_list;
use dcpi_collect::self_usage::{cpu_seconds, resident_kib, MemoryBound};
use dcpi_collect::session::{collect, CollectConfig, Mode};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Args, Debug, Clone)]
pub struct StartArgs {
    /// Profile database the daemon writes (a new run; epochs inside it).
    #[arg(long = "db", short = 'o', default_value = "dcpi.db")]
    pub db: PathBuf,
    /// Events to sample, comma-separated.
    #[arg(short = 'e', long = "events", default_value = "cycles")]
    pub events: String,
    /// Sample every PERIOD events (cycles, or ns for cpu-clock).
    #[arg(short = 'c', long = "count", conflicts_with = "freq")]
    pub period: Option<u64>,
    /// Samples per second per CPU.
    #[arg(short = 'F', long = "freq")]
    pub freq: Option<u64>,
    /// Write aggregated counts every SECONDS (a kill -9 loses at most this much).
    #[arg(long = "flush-interval", default_value_t = 10.0)]
    pub flush_interval: f64,
    /// Sample user-space addresses only.
    #[arg(long = "user-only")]
    pub user_only: bool,
    /// Do not trace the kernel's wake-ups, softirqs and interrupts (pkprof's
    /// charging of asynchronous kernel work to the process it serves).
    #[arg(long = "no-kernel-links")]
    pub no_kernel_links: bool,
    /// Ring buffer size per CPU, KiB (power of two).
    #[arg(long = "ring-kib", default_value_t = 512)]
    pub ring_kib: usize,
    /// Buckets per CPU hash table (4 entries each).
    #[arg(long = "table-buckets", default_value_t = 16384)]
    pub table_buckets: usize,
    /// Directory of the daemon's socket, pid file and log (default $DCPI_RUN_DIR or /run/dcpi).
    #[arg(long = "run-dir")]
    pub run_dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ControlArgs {
    /// Directory of the daemon's socket, pid file and log (default $DCPI_RUN_DIR or /run/dcpi).
    #[arg(long = "run-dir")]
    pub run_dir: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// `dcpi start`: launches `dcpi daemon-run` detached and waits until it answers.
pub fn start(a: StartArgs) -> anyhow::Result<i32> {
    let run = RunDir::resolve(a.run_dir.as_deref());
    if let Some(pid) = run.running_pid() {
        bail!(
            "a dcpi daemon is already running (pid {pid}, run directory {}); stop it with: dcpi stop",
            run.dir.display()
        );
    }
    // Check the arguments here, where the user sees the error.
    parse_event_list(&a.events)?;
    rate_from(a.period, a.freq, 1000)?;
    seconds(a.flush_interval, "--flush-interval")?;
    std::fs::create_dir_all(&run.dir)
        .with_context(|| format!("creating the run directory {}", run.dir.display()))?;
    let db = absolute(&a.db)?;
    let log = std::fs::File::create(run.log())
        .with_context(|| format!("creating the daemon log {}", run.log().display()))?;
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.arg("daemon-run")
        .arg("--db")
        .arg(&db)
        .args(["--events", &a.events])
        .args(["--flush-interval", &a.flush_interval.to_string()])
        .args(["--ring-kib", &a.ring_kib.to_string()])
        .args(["--table-buckets", &a.table_buckets.to_string()])
        .arg("--run-dir")
        .arg(&run.dir);
    if let Some(p) = a.period {
        cmd.args(["--count", &p.to_string()]);
    }
    if let Some(f) = a.freq {
        cmd.args(["--freq", &f.to_string()]);
    }
    if a.user_only {
        cmd.arg("--user-only");
    }
    if a.no_kernel_links {
        cmd.arg("--no-kernel-links");
    }
    cmd.stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // SAFETY: setsid is async-signal-safe; it detaches the daemon from our terminal.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = cmd.spawn().context("launching the daemon")?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(st) = child.try_wait()? {
            let text = std::fs::read_to_string(run.log()).unwrap_or_default();
            bail!("the daemon exited at start ({st}):\n{}", text.trim_end());
        }
        if let Ok(v) = control::request(&run, "status", Duration::from_secs(2)) {
            if v["run_id"].as_i64().unwrap_or(0) > 0 {
                let events: Vec<String> = v["events"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|e| e["used"].as_str())
                            .map(String::from)
                            .collect()
                    })
                    .unwrap_or_default();
                eprintln!(
                    "dcpi: daemon {} sampling {} system-wide into {} (run {}); `dcpi stop` ends it",
                    child.id(),
                    events.join(","),
                    db.display(),
                    v["run_id"]
                );
                for w in v["warnings"].as_array().into_iter().flatten() {
                    if let Some(w) = w.as_str() {
                        eprintln!("dcpi: {w}");
                    }
                }
                return Ok(0);
            }
        }
        if Instant::now() > deadline {
            bail!(
                "the daemon (pid {}) did not answer within 60 s; see {}",
                child.id(),
                run.log().display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn absolute(p: &Path) -> anyhow::Result<PathBuf> {
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    })
}

/// The daemon itself (hidden subcommand): binds the socket, serves it, samples.
pub fn daemon_run(a: StartArgs) -> anyhow::Result<i32> {
    let run = RunDir::resolve(a.run_dir.as_deref());
    std::fs::create_dir_all(&run.dir)?;
    let _ = std::fs::remove_file(run.socket());
    let listener = std::os::unix::net::UnixListener::bind(run.socket())
        .with_context(|| format!("binding the control socket {}", run.socket().display()))?;
    std::fs::write(run.pid_file(), std::process::id().to_string())?;
    let cleanup = Cleanup(run.clone());

    let rate = rate_from(a.period, a.freq, 1000)?;
    let controls = Controls::new();
    signals::install();
    {
        let c = controls.clone();
        std::thread::spawn(move || loop {
            if signals::STOP.load(Ordering::Acquire) {
                c.stop.store(true, Ordering::Release);
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        });
    }
    let driver = DriverConfig {
        table_buckets: a.table_buckets.max(1),
        flush_interval: seconds(a.flush_interval, "--flush-interval")?,
        ..DriverConfig::default()
    };
    let ncpu = dcpi_models::host::online_cpus() as usize;
    let bound = MemoryBound::new(
        ncpu,
        driver.table_buckets,
        driver.overflow_capacity,
        a.ring_kib * 1024,
    );
    let warnings: Arc<Mutex<Vec<String>>> = Arc::default();
    {
        let (c, db, w) = (controls.clone(), a.db.clone(), warnings.clone());
        let started = Instant::now();
        let pid = std::process::id();
        let rate_text = format!("{rate:?}");
        let last = Mutex::new((Instant::now(), 0u64));
        std::thread::spawn(move || {
            control::serve(listener, c, move |s| {
                status_json(s, pid, &db, started, &rate_text, &bound, &w, &last)
            })
        });
    }
    let config = CollectConfig {
        db_path: a.db.clone(),
        events: parse_event_list(&a.events)?,
        rate,
        mode: Mode::Continuous,
        duration: None,
        driver,
        ring_bytes: a.ring_kib * 1024,
        include_kernel: a.user_only.then_some(false),
        controls: Some(controls.clone()),
        kernel_links: !a.no_kernel_links && !a.user_only,
    };
    let w = warnings.clone();
    let out = collect(&config, &controls.stop, &move |m| {
        eprintln!("dcpi: {m}");
        w.lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(m.to_string());
    });
    drop(cleanup);
    match out {
        Ok(o) => {
            eprintln!(
                "dcpi: daemon stopped after {:.1} s: {} samples, {} lost (run {})",
                o.duration.as_secs_f64(),
                o.samples,
                o.lost,
                o.run_id
            );
            Ok(0)
        }
        Err(e) => {
            controls.publish(|s| s.error = Some(e.to_string()));
            Err(e).with_context(|| format!("continuous profiling into {}", a.db.display()))
        }
    }
}

/// Removes the socket and pid file when the daemon ends.
struct Cleanup(RunDir);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.0.socket());
        let _ = std::fs::remove_file(self.0.pid_file());
    }
}

#[allow(clippy::too_many_arguments)]
fn status_json(
    s: &LiveStatus,
    pid: u32,
    db: &Path,
    started: Instant,
    rate: &str,
    bound: &MemoryBound,
    warnings: &Mutex<Vec<String>>,
    last: &Mutex<(Instant, u64)>,
) -> serde_json::Value {
    let up = started.elapsed().as_secs_f64();
    let samples = s.stat("samples");
    let recent = {
        let mut l = last.lock().unwrap_or_else(|p| p.into_inner());
        let dt = l.0.elapsed().as_secs_f64();
        let r = if samples > l.1 && dt > 0.0 {
            Some((samples - l.1) as f64 / dt)
        } else {
            None
        };
        *l = (Instant::now(), samples);
        r
    };
    let events = dcpi_collect::db::ProfileReader::open(db)
        .and_then(|r| r.events())
        .map(|ev| {
            ev.into_iter()
                .filter(|e| e.run_id == s.run_id)
                .map(|e| {
                    serde_json::json!({
                        "requested": e.requested, "used": e.used, "unit": e.unit,
                        "period": e.period, "frequency": e.frequency,
                        "fallback_reason": e.fallback_reason,
                    })
                })
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let (rss, hwm) = resident_kib();
    let (user, sys) = cpu_seconds();
    let db_bytes: u64 = ["", "-wal"]
        .iter()
        .filter_map(|suf| std::fs::metadata(format!("{}{suf}", db.display())).ok())
        .map(|m| m.len())
        .sum();
    let lookups = s.stat("hash_lookups");
    let ncpu = dcpi_models::host::online_cpus().max(1) as f64;
    serde_json::json!({
        "pid": pid,
        "database": db,
        "database_bytes": db_bytes,
        "run_id": s.run_id,
        "uptime_s": up,
        "rate": rate,
        "events": events,
        "warnings": *warnings.lock().unwrap_or_else(|p| p.into_inner()),
        "samples": samples,
        "user_samples": s.stat("user_samples"),
        "kernel_samples": s.stat("kernel_samples"),
        "samples_per_s": if up > 0.0 { samples as f64 / up } else { 0.0 },
        "recent_samples_per_s": recent,
        "epoch_id": s.epoch_id,
        "epochs": s.epochs,
        "flushes": s.flushes,
        "bound_flushes": s.bound_flushes,
        "last_flush_unix": s.last_flush_unix,
        "lost_records": s.stat("lost_records"),
        "lost_samples": s.stat("lost_samples"),
        "throttles": s.stat("throttles"),
        "processes": s.stat("processes"),
        "live_processes": s.live_processes,
        "peak_processes": s.peak_processes,
        "images": s.stat("images"),
        "unknown_samples": s.stat("unknown_samples"),
        "hash": {
            "lookups": lookups,
            "hits": s.stat("hash_hits"),
            "hit_rate": if lookups > 0 { s.stat("hash_hits") as f64 / lookups as f64 } else { 0.0 },
            "evictions": s.stat("hash_evictions"),
            "saturations": s.stat("hash_saturations"),
            "overflow_handoffs": s.stat("overflow_handoffs"),
            "overflow_handoff_waits": s.stat("overflow_handoff_waits"),
        },
        "kernel_links": {
            "charged_samples": s.stat("charged_samples"),
            "unlinked_async_samples": s.stat("unlinked_async_samples"),
            "wakeups": s.stat("wakeups_seen"),
        },
        "memory": {
            "resident_kib": rss,
            "peak_kib": hwm,
            // The heap of processes that exited stays with the allocator:
            // the bound holds the most tracked at once.
            "bound_kib": bound.total(s.live_processes.max(s.peak_processes)) / 1024,
            "bound_parts": bound,
        },
        "cpu": {
            "user_s": user,
            "system_s": sys,
            "percent_of_one_cpu": if up > 0.0 { 100.0 * (user + sys) / up } else { 0.0 },
            "percent_of_machine": if up > 0.0 { 100.0 * (user + sys) / up / ncpu } else { 0.0 },
        },
        "error": s.error,
    })
}

/// `dcpi status`.
pub fn status(a: ControlArgs) -> anyhow::Result<i32> {
    let run = RunDir::resolve(a.run_dir.as_deref());
    let v = control::request(&run, "status", Duration::from_secs(10))?;
    if a.format == Format::Json {
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", status_text(&v));
    }
    Ok(0)
}

/// How old the counts of a status `v` are (they are published at flushes).
fn flush_age(v: &serde_json::Value) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    match v["last_flush_unix"]
        .as_f64()
        .filter(|_| v["flushes"].as_u64() > Some(0))
    {
        Some(t) => format!(
            "(counted up to the last flush, {:.0} s ago; `dcpi flush` writes the newer ones)",
            (now - t).max(0.0)
        ),
        None => "(counted at each flush, and none has happened yet; `dcpi flush` writes now)"
            .to_string(),
    }
}

fn status_text(v: &serde_json::Value) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let f = |x: &serde_json::Value| x.as_f64().unwrap_or(0.0);
    let _ = writeln!(
        o,
        "dcpi daemon {} — run {}, up {:.0} s",
        v["pid"],
        v["run_id"],
        f(&v["uptime_s"])
    );
    let _ = writeln!(
        o,
        "database      {} ({:.1} MiB)",
        v["database"].as_str().unwrap_or("?"),
        f(&v["database_bytes"]) / 1048576.0
    );
    for e in v["events"].as_array().into_iter().flatten() {
        let _ = writeln!(
            o,
            "event         {} (asked {}){}{}",
            e["used"].as_str().unwrap_or("?"),
            e["requested"].as_str().unwrap_or("?"),
            e["frequency"]
                .as_i64()
                .map(|f| format!(", {f} Hz per CPU"))
                .unwrap_or_default(),
            e["period"]
                .as_i64()
                .map(|p| format!(", period {p}"))
                .unwrap_or_default(),
        );
    }
    let _ = writeln!(
        o,
        "samples       {} ({} user, {} kernel); {:.0}/s overall, {}",
        v["samples"],
        v["user_samples"],
        v["kernel_samples"],
        f(&v["samples_per_s"]),
        v["recent_samples_per_s"]
            .as_f64()
            .map(|r| format!("{r:.0}/s since the last status"))
            .unwrap_or_else(|| "no new samples since the last status".into())
    );
    // The counts are the daemon's as of its last flush: say so, or a
    // status before the first one reads as if nothing were sampled.
    let _ = writeln!(o, "              {}", flush_age(v));
    let _ = writeln!(
        o,
        "epochs        {} (current epoch id {})",
        v["epochs"], v["epoch_id"]
    );
    let _ = writeln!(
        o,
        "flushes       {} ({} forced by the memory bound)",
        v["flushes"], v["bound_flushes"]
    );
    let _ = writeln!(
        o,
        "lost          {} records, {} samples; {} throttles",
        v["lost_records"], v["lost_samples"], v["throttles"]
    );
    let _ = writeln!(
        o,
        "processes     {} seen, {} live (at most {} at once); {} images; {} samples in no image",
        v["processes"], v["live_processes"], v["peak_processes"], v["images"], v["unknown_samples"]
    );
    let h = &v["hash"];
    let _ = writeln!(
        o,
        "hash tables   {} lookups, hit rate {:.1} %, {} evictions, {} saturations; {} overflow hand-offs ({} waited)",
        h["lookups"], 100.0 * f(&h["hit_rate"]), h["evictions"], h["saturations"], h["overflow_handoffs"], h["overflow_handoff_waits"]
    );
    let k = &v["kernel_links"];
    let _ = writeln!(o, "kernel links  {} async kernel samples charged to the process they served, {} unlinked; {} wake-ups seen", k["charged_samples"], k["unlinked_async_samples"], k["wakeups"]);
    let m = &v["memory"];
    let _ = writeln!(
        o,
        "memory        {:.1} MiB resident (peak {:.1}), bound {:.1} MiB",
        f(&m["resident_kib"]) / 1024.0,
        f(&m["peak_kib"]) / 1024.0,
        f(&m["bound_kib"]) / 1024.0
    );
    let c = &v["cpu"];
    let _ = writeln!(
        o,
        "own CPU       {:.2} s user + {:.2} s system = {:.2} % of one CPU ({:.2} % of the machine)",
        f(&c["user_s"]),
        f(&c["system_s"]),
        f(&c["percent_of_one_cpu"]),
        f(&c["percent_of_machine"])
    );
    if let Some(e) = v["error"].as_str() {
        let _ = writeln!(o, "error         {e}");
    }
    o
}

/// `dcpi flush` and `dcpi epoch`.
pub fn flush(a: ControlArgs, epoch: bool) -> anyhow::Result<i32> {
    let run = RunDir::resolve(a.run_dir.as_deref());
    let v = control::request(
        &run,
        if epoch { "epoch" } else { "flush" },
        Duration::from_secs(70),
    )?;
    if a.format == Format::Json {
        println!("{v}");
    } else if epoch {
        println!(
            "dcpi: flushed; epoch {} started ({} epochs in this run)",
            v["epoch_id"], v["epochs"]
        );
    } else {
        println!(
            "dcpi: flushed (flush {} of this run, epoch {})",
            v["flushes"], v["epoch_id"]
        );
    }
    Ok(0)
}

/// `dcpi stop`: asks for the final flush and waits for the daemon to exit.
pub fn stop(a: ControlArgs) -> anyhow::Result<i32> {
    let run = RunDir::resolve(a.run_dir.as_deref());
    let pid = run.running_pid();
    let before = control::request(&run, "status", Duration::from_secs(10)).ok();
    control::request(&run, "stop", Duration::from_secs(10))?;
    let deadline = Instant::now() + Duration::from_secs(120);
    // The daemon removes its pid file after its last commit.
    while let Some(p) = run.running_pid() {
        if Instant::now() > deadline {
            bail!(
                "the daemon (pid {p}) has not exited 120 s after stop; see {}",
                run.log().display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let db = before
        .as_ref()
        .and_then(|b| b["database"].as_str().map(String::from))
        .unwrap_or_default();
    if a.format == Format::Json {
        println!(
            "{}",
            serde_json::json!({ "stopped": true, "pid": pid, "database": db })
        );
    } else {
        println!("dcpi: daemon stopped; profile in {db} (dcpi report --db {db})");
    }
    Ok(0)
}

#[cfg(test)]
mod flush_age_tests {
    use super::flush_age;

    #[test]
    fn a_status_says_how_old_its_counts_are() {
        let none = serde_json::json!({"flushes": 0, "last_flush_unix": 0.0});
        assert!(flush_age(&none).contains("none has happened yet"));
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let some = serde_json::json!({"flushes": 3, "last_flush_unix": now - 7.2});
        assert!(flush_age(&some).contains("7 s ago"), "{}", flush_age(&some));
    }
}
