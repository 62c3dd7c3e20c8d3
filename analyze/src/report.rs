//! Prospect's report for a run or some of its epochs: statistics of run, an
//! extrapolated summary of processes (user and system hits and times), one
//! seamless profile per process with user and kernel procedures side by side
//! (`137u:read`, `137k:ksys_read`, pkprof's notation), and the global kernel
//! profile.
//!
//! System time is pkprof's: a process's own kernel samples, less the
//! asynchronous work it was merely interrupted by (charged to the process
//! that work served), plus the asynchronous work charged to it — see
//! `dcpi_collect::kernel_links` for which links are followed. Only one event
//! (the first, or `--event`) is reported; times are extrapolated from its
//! period (ns for cpu-clock, cycles over the run's measured core clock).

use crate::error::{AnalyzeError, Result};
use crate::prof::{basename, pct};
use crate::symbolizer::Symbolizer;
use dcpi_collect::db::reader::{EventRow, ImageRow, ProcessRow};
use dcpi_collect::db::ProfileReader;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// What to report.
#[derive(Debug, Clone)]
pub struct ReportQuery {
    /// Run id; default the last run.
    pub run: Option<i64>,
    /// Epochs of that run; default all.
    pub epochs: Option<Vec<i64>>,
    /// Event (requested or used name); default the run's first.
    pub event: Option<String>,
    /// Processes below this share of the hits are summed in one line.
    pub threshold_percent: f64,
    /// Per-process profiles for this many processes (the busiest).
    pub profiles: usize,
    /// Rows per process profile and in the kernel profile.
    pub rows: usize,
    /// Where to look for images first (`--symfs`).
    pub symfs: Option<std::path::PathBuf>,
}

impl Default for ReportQuery {
    fn default() -> Self {
        ReportQuery {
            run: None,
            epochs: None,
            event: None,
            threshold_percent: 1.0,
            profiles: 5,
            rows: 12,
            symfs: None,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RunStatistics {
    pub run_id: i64,
    pub mode: String,
    pub command: Option<String>,
    pub started_at: String,
    pub ended_at: Option<String>,
    /// False for a run still going or cut short (kill -9): counts up to the last flush.
    pub complete: bool,
    pub epochs: Vec<i64>,
    pub duration_s: Option<f64>,
    pub cpus: Option<i64>,
    pub event: String,
    pub event_requested: String,
    pub unit: String,
    pub period: Option<i64>,
    pub frequency: Option<i64>,
    pub samples: u64,
    pub user_hits: u64,
    pub system_hits: u64,
    /// Samples in the idle task (pid 0).
    pub idle_hits: u64,
    pub lost: i64,
    /// Samples per second per CPU over the run.
    pub rate_per_cpu: Option<f64>,
    /// pkprof: kernel samples charged to another process, and async samples left unlinked.
    pub charged_hits: u64,
    pub unlinked_async: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProcessLine {
    pub appid: String,
    pub pid: i64,
    pub user_hits: u64,
    pub user_seconds: Option<f64>,
    /// Own kernel samples − charged away + charged in.
    pub system_hits: u64,
    pub system_seconds: Option<f64>,
    /// Asynchronous kernel work done for this process elsewhere.
    pub charged_in: u64,
    /// Kernel samples taken in this process for others.
    pub charged_out: u64,
    pub percent: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProfileRow {
    /// `PIDu:procedure` or `PIDk:procedure`.
    pub label: String,
    pub procedure: String,
    pub image: String,
    pub kernel: bool,
    pub hits: u64,
    /// Of this process's hits.
    pub percent: f64,
    /// For charged work: how it reached this process (`softirq NET_RX`, ...).
    pub link: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProcessProfile {
    pub appid: String,
    pub pid: i64,
    pub hits: u64,
    pub rows: Vec<ProfileRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct KernelLine {
    pub procedure: String,
    pub image: String,
    pub hits: u64,
    pub percent: f64,
    pub seconds: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LinkLine {
    pub link: String,
    pub hits: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProspectReport {
    pub database: String,
    pub statistics: RunStatistics,
    pub idle_caveat: String,
    pub threshold_percent: f64,
    pub processes: Vec<ProcessLine>,
    /// Processes under the threshold: how many, and their hits.
    pub below_threshold: (u64, u64),
    pub profiles: Vec<ProcessProfile>,
    pub kernel_profile: Vec<KernelLine>,
    pub links: Vec<LinkLine>,
    pub warnings: Vec<String>,
}

fn is_kernel(img: &ImageRow) -> bool {
    matches!(img.kind.as_str(), "kernel" | "module")
}

#[derive(Default)]
struct PerProcess {
    user: u64,
    own_kernel: u64,
    charged_in: u64,
    charged_out: u64,
    /// (kernel?, procedure, image, link) → hits.
    rows: HashMap<(bool, String, String, Option<String>), i64>,
}

/// Builds the report.
pub fn build(db_path: &Path, q: &ReportQuery) -> Result<ProspectReport> {
    let reader = ProfileReader::open(db_path)?;
    let runs = reader.runs()?;
    let run = match q.run {
        Some(id) => runs.iter().find(|r| r.id == id).ok_or_else(|| {
            AnalyzeError::Usage(format!(
                "no run {id} in {}; it has runs {}",
                db_path.display(),
                runs.iter()
                    .map(|r| r.id.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?,
        None => runs.last().ok_or_else(|| {
            AnalyzeError::Usage(format!("{} holds no run yet", db_path.display()))
        })?,
    }
    .clone();
    let run_epochs: Vec<i64> = reader
        .epochs()?
        .into_iter()
        .filter(|e| e.run_id == run.id)
        .map(|e| e.id)
        .collect();
    let epochs = match &q.epochs {
        Some(want) => {
            if let Some(bad) = want.iter().find(|e| !run_epochs.contains(e)) {
                return Err(AnalyzeError::Usage(format!(
                    "epoch {bad} is not in run {}; its epochs are {:?}",
                    run.id, run_epochs
                )));
            }
            want.clone()
        }
        None => run_epochs.clone(),
    };
    let events: Vec<EventRow> = reader
        .events()?
        .into_iter()
        .filter(|e| e.run_id == run.id)
        .collect();
    let event = match &q.event {
        Some(want) => {
            let base = |s: &str| s.split(':').next().unwrap_or(s).to_ascii_lowercase();
            events
                .iter()
                .find(|e| base(&e.used) == base(want) || base(&e.requested) == base(want))
                .ok_or_else(|| {
                    AnalyzeError::Usage(format!(
                        "run {} did not sample '{want}'; it sampled {}",
                        run.id,
                        events
                            .iter()
                            .map(|e| e.used.clone())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?
        }
        None => events
            .first()
            .ok_or_else(|| AnalyzeError::Usage(format!("run {} has no events", run.id)))?,
    }
    .clone();
    let sps = crate::prof::seconds_per_sample(&event, Some(&run));
    let images: HashMap<i64, ImageRow> = reader.images()?.into_iter().map(|i| (i.id, i)).collect();
    let processes: HashMap<i64, ProcessRow> =
        reader.processes()?.into_iter().map(|p| (p.id, p)).collect();
    let mut symbolizer = Symbolizer::with_symfs(q.symfs.clone());
    let mut names: HashMap<(i64, u64, i64), String> = HashMap::new();
    // pid: an unknown region's addresses are per process (JIT code).
    let mut name_of = |img: &ImageRow, off: u64, pid: i64| {
        let owner = if img.kind == "unknown" { pid } else { 0 };
        names
            .entry((img.id, off, owner))
            .or_insert_with(|| symbolizer.procedure_of_process(img, off, pid).0)
            .clone()
    };

    let mut per: HashMap<i64, PerProcess> = HashMap::new();
    let mut kernel: HashMap<(String, String), u64> = HashMap::new();
    let (mut samples, mut user_hits, mut system_hits, mut idle) = (0u64, 0u64, 0u64, 0u64);
    for c in reader.counts(Some(&epochs))? {
        if c.event_id != event.id {
            continue;
        }
        let (Some(img), Some(p)) = (images.get(&c.image_id), processes.get(&c.process_id)) else {
            continue;
        };
        let k = is_kernel(img);
        samples += c.count;
        if p.pid == 0 {
            idle += c.count;
        }
        let proc_name = name_of(img, c.offset, p.pid);
        let e = per.entry(c.process_id).or_default();
        if k {
            system_hits += c.count;
            e.own_kernel += c.count;
            *kernel
                .entry((proc_name.clone(), basename(&img.path)))
                .or_insert(0) += c.count;
        } else {
            user_hits += c.count;
            e.user += c.count;
        }
        *e.rows
            .entry((k, proc_name, basename(&img.path), None))
            .or_insert(0) += c.count as i64;
    }
    let mut links: BTreeMap<String, u64> = BTreeMap::new();
    let mut charged = 0u64;
    for ch in reader.charges(Some(&epochs))? {
        if ch.event_id != event.id {
            continue;
        }
        let Some(img) = images.get(&ch.image_id) else {
            continue;
        };
        // Kernel charges: kernel images, never per process.
        let name = name_of(img, ch.offset, 0);
        charged += ch.count;
        *links.entry(ch.link.clone()).or_insert(0) += ch.count;
        let from = per.entry(ch.from_process_id).or_default();
        from.charged_out += ch.count;
        *from
            .rows
            .entry((true, name.clone(), basename(&img.path), None))
            .or_insert(0) -= ch.count as i64;
        let to = per.entry(ch.to_process_id).or_default();
        to.charged_in += ch.count;
        *to.rows
            .entry((true, name, basename(&img.path), Some(ch.link.clone())))
            .or_insert(0) += ch.count as i64;
    }

    let stats: HashMap<String, i64> = reader.stats(run.id)?.into_iter().collect();
    let stat = |k: &str| stats.get(k).copied().unwrap_or(0);
    let mut lines: Vec<(i64, ProcessLine)> = per
        .iter()
        .filter_map(|(id, e)| {
            let p = processes.get(id)?;
            let sys = (e.own_kernel + e.charged_in).saturating_sub(e.charged_out);
            Some((
                *id,
                ProcessLine {
                    appid: p.appid(),
                    pid: p.pid,
                    user_hits: e.user,
                    user_seconds: sps.map(|s| s * e.user as f64),
                    system_hits: sys,
                    system_seconds: sps.map(|s| s * sys as f64),
                    charged_in: e.charged_in,
                    charged_out: e.charged_out,
                    percent: pct(e.user + sys, samples),
                },
            ))
        })
        .filter(|(_, l)| l.user_hits + l.system_hits > 0)
        .collect();
    lines.sort_by(|a, b| {
        (b.1.user_hits + b.1.system_hits)
            .cmp(&(a.1.user_hits + a.1.system_hits))
            .then(a.1.appid.cmp(&b.1.appid))
    });
    let (shown, hidden): (Vec<_>, Vec<_>) = lines
        .into_iter()
        .partition(|(_, l)| l.percent >= q.threshold_percent);
    let below = (
        hidden.len() as u64,
        hidden
            .iter()
            .map(|(_, l)| l.user_hits + l.system_hits)
            .sum(),
    );

    let profiles = shown
        .iter()
        .take(q.profiles)
        .map(|(id, l)| {
            let e = &per[id];
            let total = l.user_hits + l.system_hits;
            let mut rows: Vec<ProfileRow> = e
                .rows
                .iter()
                .filter(|(_, &n)| n > 0)
                .map(|((k, procedure, image, link), &n)| ProfileRow {
                    label: format!("{}{}:{}", l.pid, if *k { 'k' } else { 'u' }, procedure),
                    procedure: procedure.clone(),
                    image: image.clone(),
                    kernel: *k,
                    hits: n as u64,
                    percent: pct(n as u64, total),
                    link: link.clone(),
                })
                .collect();
            rows.sort_by(|a, b| b.hits.cmp(&a.hits).then(a.label.cmp(&b.label)));
            rows.truncate(q.rows);
            ProcessProfile {
                appid: l.appid.clone(),
                pid: l.pid,
                hits: total,
                rows,
            }
        })
        .collect();
    let mut kernel_profile: Vec<KernelLine> = kernel
        .into_iter()
        .map(|((procedure, image), hits)| KernelLine {
            procedure,
            image,
            hits,
            percent: pct(hits, system_hits),
            seconds: sps.map(|s| s * hits as f64),
        })
        .collect();
    kernel_profile.sort_by(|a, b| b.hits.cmp(&a.hits).then(a.procedure.cmp(&b.procedure)));
    kernel_profile.truncate(q.rows.max(20));

    let timer = event.unit == "ns";
    let idle_caveat = if timer {
        format!(
            "{} is timer-driven: idle CPUs are sampled in the idle loop ({:.1} % of samples here, process swapper), so percentages are of wall-clock CPU time; a cycles-driven profile does not see halted idle CPUs and its percentages are of busy time",
            event.used,
            pct(idle, samples)
        )
    } else {
        format!(
            "{} is not timer-driven: halted idle CPUs take no samples, so percentages are of busy time, not of wall-clock time ({:.1} % of samples in the idle task)",
            event.used,
            pct(idle, samples)
        )
    };
    let mut warnings = symbolizer.take_warnings();
    if !run.complete {
        warnings.push(format!(
            "run {} is not complete (still running, or its collector was killed): counts are those of its last flush",
            run.id
        ));
    }
    Ok(ProspectReport {
        database: db_path.display().to_string(),
        statistics: RunStatistics {
            run_id: run.id,
            mode: run.mode.clone(),
            command: run.command.clone(),
            started_at: run.started_at.clone(),
            ended_at: run.ended_at.clone(),
            complete: run.complete,
            epochs,
            duration_s: run.duration_s,
            cpus: run.online_cpus,
            event: event.used.clone(),
            event_requested: event.requested.clone(),
            unit: event.unit.clone(),
            period: event.period,
            frequency: event.frequency,
            samples,
            user_hits,
            system_hits,
            idle_hits: idle,
            lost: stat("lost_records") + stat("lost_samples"),
            rate_per_cpu: match (run.duration_s, run.online_cpus) {
                (Some(d), Some(n)) if d > 0.0 && n > 0 => Some(samples as f64 / d / n as f64),
                _ => None,
            },
            charged_hits: charged,
            unlinked_async: stat("unlinked_async_samples"),
        },
        idle_caveat,
        threshold_percent: q.threshold_percent,
        processes: shown.into_iter().map(|(_, l)| l).collect(),
        below_threshold: below,
        profiles,
        kernel_profile,
        links: links
            .into_iter()
            .map(|(link, hits)| LinkLine { link, hits })
            .collect(),
        warnings,
    })
}
