//! One `dcpi collect`: open the database, start the command held, open the
//! events, run the driver and the daemon, wait, stop, drain, commit.

use crate::daemon::{Daemon, DaemonStats};
use crate::db::writer::{ProfileWriter, RunEnding, RunInfo};
use crate::driver::{Driver, DriverConfig};
use crate::error::{CollectError, Result};
use crate::event_spec::EventSpec;
use crate::images::ImageRegistry;
use crate::kernel::KernelLayout;
use crate::launcher::{reap, spawn_held, Reaped};
use crate::perf_setup::{open_events, Rate, Target};
use crate::procfs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// What to profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// `dcpi collect -- CMD ARGS`.
    Command(Vec<String>),
    /// `dcpi collect --pid PID`.
    Pid(u32),
    /// `dcpi collect --system-wide [-- CMD]`.
    SystemWide(Option<Vec<String>>),
    /// `dcpi start`: the whole system until `dcpi stop`, with epochs and
    /// flushes on request.
    Continuous,
}

/// A validated collection request.
#[derive(Debug, Clone)]
pub struct CollectConfig {
    pub db_path: PathBuf,
    pub events: Vec<EventSpec>,
    pub rate: Rate,
    pub mode: Mode,
    /// Stop after this long (required for system-wide without a command).
    pub duration: Option<Duration>,
    pub driver: DriverConfig,
    /// Ring buffer bytes per CPU (a power of two).
    pub ring_bytes: usize,
    /// Sample kernel addresses too; `None` = when permitted.
    pub include_kernel: Option<bool>,
    /// Continuous mode's flush/epoch requests and published status.
    pub controls: Option<Arc<crate::control::Controls>>,
    /// Follow softirqs, interrupts, work items and wake-ups to charge
    /// asynchronous kernel work to the process it served (pkprof).
    pub kernel_links: bool,
}

/// How a collection ended.
#[derive(Debug, Clone)]
pub struct CollectOutcome {
    pub run_id: i64,
    /// Exit code of the command (128 + signal if killed).
    pub exit_code: Option<i32>,
    pub interrupted: bool,
    pub duration: Duration,
    pub warnings: Vec<String>,
    pub samples: u64,
    pub lost: u64,
    pub daemon: DaemonStats,
    /// Share of the sampled code's time the sampling took (measured at the
    /// end of the run; the analyzer counts the samples' cycles without it).
    pub sampling_cost: Option<f64>,
}

fn kernel_allowed() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    procfs::perf_event_paranoid()
        .parse::<i32>()
        .map(|p| p <= 1)
        .unwrap_or(false)
}

/// Runs one collection. `user_stop` is set by the caller's SIGINT/SIGTERM
/// handler; `on_warning` prints fallbacks as soon as they are known.
pub fn collect(
    config: &CollectConfig,
    user_stop: &AtomicBool,
    on_warning: &dyn Fn(&str),
) -> Result<CollectOutcome> {
    let mut p = Prepared::new(&config.db_path, &config.mode)?;
    let include_kernel = config.include_kernel.unwrap_or_else(kernel_allowed);
    let events = match open_events(
        &config.events,
        &p.target,
        config.rate,
        include_kernel,
        config.ring_bytes,
    ) {
        Ok(e) => e,
        Err(e) => return Err(p.abandon(e)),
    };
    let mut warnings = events.warnings.clone();
    let links = if config.kernel_links && events.kernel_included {
        // PERF_TYPE_SOFTWARE events are timers here: they never sample inside hardirq handlers.
        let hardirq = events.configs.iter().any(|c| c.used.type_ != 1);
        match crate::kernel_links::open(&events.rings, hardirq) {
            Ok(l) => Some(l),
            Err(e) => {
                warnings.push(format!(
                    "warning: kernel links unavailable ({e}); asynchronous kernel work stays with the interrupted process"
                ));
                None
            }
        }
    } else {
        if config.kernel_links {
            warnings.push(
                "warning: kernel links need kernel samples (root, or perf_event_paranoid <= 1)"
                    .into(),
            );
        }
        None
    };
    for w in &warnings {
        on_warning(w);
    }
    if let Err(e) = p.begin_run(&config.mode, &events.configs) {
        return Err(p.abandon(e));
    }
    let idle_probe_rate = {
        let h = &p.host;
        let machine = dcpi_models::machine::Machine::for_cpu(
            &h.cpu_vendor,
            h.cpu_family,
            h.cpu_model,
            &h.cpu_features,
        );
        crate::core_share::idle_rate(&machine, &p.clock)
    };
    let Prepared {
        writer,
        kernel,
        argv,
        held,
        ..
    } = p;
    let run_id = writer.run_id();
    if let Some(c) = &config.controls {
        let epoch_id = writer.epoch_id();
        c.publish(|s| {
            s.run_id = run_id;
            s.epoch_id = epoch_id;
            s.epochs = 1;
        });
    }

    let probe = SamplingProbe {
        configs: events.configs.clone(),
        include_kernel,
        idle_probe_rate,
    };
    // 4. Driver and daemon.
    let (tx, rx) = mpsc::channel();
    let mut driver = Driver::new(events, tx, config.driver);
    if let Some(l) = links {
        driver = driver.with_links(l);
    }
    let mut daemon = Daemon::new(writer, ImageRegistry::new(kernel));
    if let Some(c) = &config.controls {
        driver = driver.with_controls(c.clone());
        daemon = daemon.with_controls(c.clone());
    }
    register_initial(
        &mut driver,
        &config.mode,
        held.as_ref().map(|h| h.pid),
        argv.as_deref(),
    );
    let end = supervise(
        daemon,
        rx,
        move |stop| driver.run(stop),
        held,
        &config.mode,
        config.duration,
        user_stop,
        Some(probe),
    )?;
    let reader = crate::db::ProfileReader::open(&config.db_path)?;
    let stats: std::collections::HashMap<String, i64> = reader.stats(run_id)?.into_iter().collect();
    let get = |k: &str| stats.get(k).copied().unwrap_or(0) as u64;
    Ok(CollectOutcome {
        run_id,
        exit_code: end.exit_code,
        interrupted: end.interrupted,
        duration: end.duration,
        warnings,
        samples: get("samples"),
        lost: get("lost_records") + get("lost_samples"),
        daemon: end.daemon,
        sampling_cost: end.sampling_cost,
    })
}

/// What every kind of run sets up first: the database (an unwritable path
/// fails before anything runs), host facts and the core clock, the kernel
/// layout, and the command forked and held before its exec.
pub(crate) struct Prepared {
    pub writer: ProfileWriter,
    pub host: dcpi_models::host::HostFacts,
    pub clock: dcpi_models::core_clock::CoreClock,
    pub kernel: KernelLayout,
    pub argv: Option<Vec<String>>,
    pub held: Option<crate::launcher::HeldChild>,
    pub target: Target,
}

impl Prepared {
    pub fn new(db_path: &std::path::Path, mode: &Mode) -> Result<Self> {
        let writer = ProfileWriter::open(db_path)?;
        let host = dcpi_models::host::read();
        let clock = dcpi_models::core_clock::calibrate();
        let kernel = KernelLayout::read();
        let argv = match mode {
            Mode::Command(a) => Some(a.clone()),
            Mode::SystemWide(a) => a.clone(),
            Mode::Pid(_) | Mode::Continuous => None,
        };
        let held = argv.as_ref().map(|a| spawn_held(a)).transpose()?;
        let target = match (mode, &held) {
            (Mode::Command(_), Some(h)) => Target::Command { pid: h.pid },
            (Mode::Pid(p), _) => Target::Pid { pid: *p },
            _ => Target::SystemWide,
        };
        Ok(Prepared {
            writer,
            host,
            clock,
            kernel,
            argv,
            held,
            target,
        })
    }

    /// Records the run with its events.
    pub fn begin_run(
        &mut self,
        mode: &Mode,
        events: &[crate::db::writer::EventConfig],
    ) -> Result<()> {
        let run = RunInfo {
            mode: match mode {
                Mode::Command(_) => "command",
                Mode::Pid(_) => "pid",
                Mode::SystemWide(_) => "system-wide",
                Mode::Continuous => "continuous",
            }
            .into(),
            command: self.argv.as_ref().map(|a| a.join(" ")),
            target_pid: match mode {
                Mode::Pid(p) => Some(*p as i64),
                _ => self.held.as_ref().map(|h| h.pid as i64),
            },
            host: self.host.clone(),
            kernel_build_id: self.kernel.build_id.clone(),
            clock: Some(self.clock),
        };
        self.writer.begin_run(&run, events)
    }

    /// Kills the held command after a setup error, and returns the error.
    pub fn abandon(self, e: CollectError) -> CollectError {
        if let Some(h) = self.held {
            h.abandon();
        }
        e
    }
}

/// A reader that tracks processes: told who exists before the run starts.
pub(crate) trait TracksProcesses {
    fn register_root(&mut self, pid: u32, comm: &str, cmdline: &str);
    fn seed(&mut self, pids: &[u32]);
}

impl TracksProcesses for Driver {
    fn register_root(&mut self, pid: u32, comm: &str, cmdline: &str) {
        Driver::register_root(self, pid, comm, cmdline)
    }
    fn seed(&mut self, pids: &[u32]) {
        Driver::seed(self, pids)
    }
}

/// The held command (renamed at its exec), the attached process, or every
/// process that runs now (system-wide).
pub(crate) fn register_initial(
    t: &mut impl TracksProcesses,
    mode: &Mode,
    held: Option<u32>,
    argv: Option<&[String]>,
) {
    match (mode, held, argv) {
        (Mode::Command(_), Some(pid), Some(a)) => t.register_root(pid, &root_comm(a), &a.join(" ")),
        (Mode::Pid(p), _, _) => t.seed(&[*p]),
        (Mode::SystemWide(_) | Mode::Continuous, _, _) => t.seed(&procfs::all_pids()),
        _ => {}
    }
}

/// The command name a held child will have after its exec (as the kernel truncates it).
pub(crate) fn root_comm(argv: &[String]) -> String {
    argv[0]
        .rsplit('/')
        .next()
        .unwrap_or(&argv[0])
        .chars()
        .take(15)
        .collect()
}

/// The run's sampling events, for measuring what sampling costs the code
/// (see [`crate::sampling_cost`]) once the run is over; and the idle
/// core's rate of the core-share probe (see [`crate::core_share`]).
pub(crate) struct SamplingProbe {
    pub configs: Vec<crate::db::writer::EventConfig>,
    pub include_kernel: bool,
    pub idle_probe_rate: Option<f64>,
}

/// How a supervised run ended.
pub(crate) struct RunEnd {
    pub exit_code: Option<i32>,
    pub interrupted: bool,
    pub duration: Duration,
    pub daemon: DaemonStats,
    /// Share of the sampled code's time the sampling took, where measured.
    pub sampling_cost: Option<f64>,
}

/// Runs the daemon and a driver until the command exits, the attached
/// process exits, `duration` passes or the user stops; then stops the
/// driver (which drains and sends `Finish`), waits for the daemon's last
/// flush, stops a command still running, and closes the run.
#[allow(clippy::too_many_arguments)]
pub(crate) fn supervise(
    daemon: Daemon,
    rx: mpsc::Receiver<crate::daemon::DaemonMsg>,
    driver: impl FnOnce(Arc<AtomicBool>) + Send + 'static,
    held: Option<crate::launcher::HeldChild>,
    mode: &Mode,
    duration: Option<Duration>,
    user_stop: &AtomicBool,
    probe: Option<SamplingProbe>,
) -> Result<RunEnd> {
    let daemon_thread = std::thread::Builder::new()
        .name("dcpi-daemon".into())
        .spawn(move || daemon.run(rx))
        .map_err(|source| CollectError::Io {
            what: "starting the daemon thread".into(),
            source,
        })?;
    let driver_stop = Arc::new(AtomicBool::new(false));
    let ds = driver_stop.clone();
    let driver_thread = std::thread::Builder::new()
        .name("dcpi-driver".into())
        .spawn(move || driver(ds))
        .map_err(|source| CollectError::Io {
            what: "starting the driver thread".into(),
            source,
        })?;

    let started = Instant::now();
    let steal_start = procfs::steal_seconds();
    let child = match held {
        Some(h) => match h.release() {
            Ok(pid) => Some(pid),
            Err(e) => {
                driver_stop.store(true, Ordering::Release);
                let _ = driver_thread.join();
                if let Ok(Ok((mut w, _))) = daemon_thread.join() {
                    let _ = w.end_run(&RunEnding {
                        exit_status: Some(127),
                        duration_s: started.elapsed().as_secs_f64(),
                        ..Default::default()
                    });
                }
                return Err(e);
            }
        },
        None => None,
    };
    // How much of its core the target gets (command and pid modes).
    let target_pid = match mode {
        Mode::Pid(p) => Some(*p),
        _ => child,
    };
    let core_probe = probe
        .as_ref()
        .and(target_pid)
        .and_then(|pid| crate::core_share::CoreShareProbe::start(pid).ok());
    let mut ended: Option<Reaped> = None;
    let mut interrupted = false;
    loop {
        if let Some(pid) = child {
            ended = reap(pid, false);
            if ended.is_some() {
                break;
            }
        }
        if let Mode::Pid(p) = mode {
            // SAFETY: signal 0 only checks existence.
            if unsafe { libc::kill(*p as i32, 0) } != 0 {
                break;
            }
        }
        if user_stop.load(Ordering::Acquire) {
            interrupted = true;
            break;
        }
        if duration.is_some_and(|d| started.elapsed() >= d) {
            break;
        }
        if daemon_thread.is_finished() {
            break; // the daemon failed; its error is reported below
        }
        std::thread::sleep(Duration::from_millis(5));
    }

    let core_share = core_probe
        .and_then(|c| c.finish())
        .zip(probe.as_ref().and_then(|p| p.idle_probe_rate))
        .map(|(rate, idle)| rate / idle);
    // Stop the driver, drain every buffer, commit.
    driver_stop.store(true, Ordering::Release);
    let _ = driver_thread.join();
    let joined = daemon_thread.join();
    let elapsed = started.elapsed();

    let steal_s = procfs::steal_seconds()
        .zip(steal_start)
        .map(|(end, start)| (end - start).max(0.0));
    // A command still running (Ctrl-C, --duration) is asked to stop.
    if let (Some(pid), None) = (child, ended) {
        ended = terminate(pid);
    }
    let (mut writer, daemon_stats) = match joined {
        Ok(r) => r?,
        Err(_) => {
            return Err(CollectError::Usage(
                "the daemon thread panicked; the database holds every completed flush".into(),
            ))
        }
    };
    let clock_end = dcpi_models::core_clock::calibrate();
    // Beside it, the clock sampled code gets (the samples' own cost); a
    // probe that cannot open its events leaves the plain clock in use.
    let sampled = probe
        .and_then(|p| crate::sampling_cost::sampled_core_hz(&p.configs, p.include_kernel).ok());
    let status = ended.map(|r| r.exit_code);
    writer.end_run(&RunEnding {
        exit_status: status,
        interrupted,
        duration_s: elapsed.as_secs_f64(),
        clock_end: Some(clock_end),
        sampled_core_hz: sampled,
        target_cpu_s: ended.map(|r| r.cpu_s),
        steal_s,
        core_share,
    })?;
    Ok(RunEnd {
        exit_code: status,
        interrupted,
        duration: elapsed,
        daemon: daemon_stats,
        sampling_cost: sampled.map(|s| (1.0 - s / clock_end.core_hz).clamp(0.0, 1.0)),
    })
}

/// SIGTERM, then SIGKILL after 5 s; how it ended (None: no longer our
/// child to wait for).
fn terminate(pid: u32) -> Option<Reaped> {
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(r) = reap(pid, false) {
            return Some(r);
        }
        // SAFETY: signal 0 only checks existence.
        if unsafe { libc::kill(pid as i32, 0) } != 0 {
            return None;
        }
        if Instant::now() >= deadline {
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
