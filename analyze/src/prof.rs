//! The `prof` model: DCPI's dcpiprof with Prospect's and SLEEPY's views —
//! samples per image, per procedure, per process instance (appid, user vs
//! kernel, extrapolated seconds), per group of instances of one command, and
//! per system, plus each run's "statistics of run". Views render it.

use crate::error::Result;
use crate::symbolizer::Symbolizer;
use dcpi_collect::db::reader::{EventRow, ProcessRow, RunRow};
use dcpi_collect::db::ProfileReader;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

/// How rows are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortKey {
    #[default]
    Samples,
    Name,
}

/// Filters and presentation limits.
#[derive(Debug, Clone, Default)]
pub struct ProfQuery {
    /// Substring of the image path.
    pub image: Option<String>,
    /// Which processes and epochs count.
    pub filter: crate::samples::SampleFilter,
    /// Event name (requested or used).
    pub event: Option<String>,
    pub sort: SortKey,
    /// Rows per section (0 = all).
    pub limit: usize,
    /// Hide rows below this percentage of the sort event's samples.
    pub min_percent: f64,
    /// Where to look for images first (`--symfs`).
    pub symfs: Option<std::path::PathBuf>,
}

#[derive(Debug, Clone, Serialize)]
pub struct EventColumn {
    /// The event sampled (after any fallback).
    pub name: String,
    /// What was asked for, across runs.
    pub requested: Vec<String>,
    pub unit: String,
    pub samples: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ImageSummary {
    pub image: String,
    pub path: String,
    pub kind: String,
    pub samples: Vec<u64>,
    pub percent: f64,
    pub cumulative_percent: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProcedureSummary {
    pub procedure: String,
    pub image: String,
    /// ELF virtual address of the procedure start, where known.
    pub start: Option<u64>,
    pub samples: Vec<u64>,
    pub percent: f64,
    pub cumulative_percent: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProcessSummary {
    pub appid: String,
    pub pid: i64,
    pub parent: Option<String>,
    pub cause: String,
    pub cmdline: Option<String>,
    pub user_samples: u64,
    pub kernel_samples: u64,
    pub user_seconds: Option<f64>,
    pub kernel_seconds: Option<f64>,
    pub percent: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct GroupSummary {
    pub comm: String,
    pub instances: u64,
    pub user_samples: u64,
    pub kernel_samples: u64,
    pub seconds: Option<f64>,
    pub percent: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct SystemSummary {
    pub samples: Vec<u64>,
    pub user_samples: u64,
    pub kernel_samples: u64,
    pub seconds: Option<f64>,
    pub processes_with_samples: u64,
    pub processes_seen: u64,
    pub images: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunEvent {
    pub requested: String,
    pub used: String,
    pub unit: String,
    pub period: Option<i64>,
    pub frequency: Option<i64>,
    pub period_jitter: f64,
    pub fallback_reason: Option<String>,
    pub samples: i64,
    /// The time its samples cover (timer events: samples × period), s.
    pub sampled_s: Option<f64>,
    /// The share of that time the command was on a CPU, where below one:
    /// the rest was steal (see [`crate::samples::steal_kept`]).
    pub steal_kept: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunStatistics {
    pub run: RunRow,
    pub epochs: Vec<i64>,
    pub events: Vec<RunEvent>,
    pub stats: BTreeMap<String, i64>,
    /// hash_hits / hash_lookups.
    pub hash_hit_rate: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProfReport {
    pub database: String,
    pub events: Vec<EventColumn>,
    /// Index of the column percentages and sorting use.
    pub sort_event: usize,
    pub system: SystemSummary,
    pub images: Vec<ImageSummary>,
    pub procedures: Vec<ProcedureSummary>,
    pub processes: Vec<ProcessSummary>,
    pub groups: Vec<GroupSummary>,
    pub runs: Vec<RunStatistics>,
    pub warnings: Vec<String>,
}

/// Seconds one sample of this event stands for, if it measures time.
pub(crate) fn seconds_per_sample(e: &EventRow, run: Option<&RunRow>) -> Option<f64> {
    let p = e.mean_period()?;
    match e.unit.as_str() {
        "ns" => Some(p / 1e9),
        "cycles" => run.and_then(|r| r.core_hz).map(|hz| p / hz),
        _ => None,
    }
}

pub(crate) fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

pub(crate) fn basename(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_string()
}

/// Builds the report from a database.
pub fn build(db_path: &Path, q: &ProfQuery) -> Result<ProfReport> {
    let reader = ProfileReader::open(db_path)?;
    let runs = reader.runs()?;
    let epochs = reader.epochs()?;
    let events = reader.events()?;
    let images: HashMap<i64, _> = reader.images()?.into_iter().map(|i| (i.id, i)).collect();
    let processes: HashMap<i64, ProcessRow> =
        reader.processes()?.into_iter().map(|p| (p.id, p)).collect();
    let counts = reader.counts(q.filter.epochs.as_deref())?;
    let mut warnings = Vec::new();

    // Columns: one per event actually sampled, in first-seen order.
    let mut columns: Vec<EventColumn> = Vec::new();
    let mut column_of: HashMap<i64, usize> = HashMap::new();
    for e in &events {
        if let Some(want) = &q.event {
            let base = |s: &str| s.split(':').next().unwrap_or(s).to_ascii_lowercase();
            if base(&e.used) != base(want) && base(&e.requested) != base(want) {
                continue;
            }
        }
        let idx = match columns.iter().position(|c| c.name == e.used) {
            Some(i) => i,
            None => {
                columns.push(EventColumn {
                    name: e.used.clone(),
                    requested: Vec::new(),
                    unit: e.unit.clone(),
                    samples: 0,
                });
                columns.len() - 1
            }
        };
        if !columns[idx].requested.contains(&e.requested) {
            columns[idx].requested.push(e.requested.clone());
        }
        column_of.insert(e.id, idx);
    }
    if let (Some(want), true) = (&q.event, columns.is_empty()) {
        let names: Vec<String> = events
            .iter()
            .map(|e| e.used.clone())
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        return Err(crate::error::AnalyzeError::Usage(format!(
            "no event '{want}' in this database; it has: {}",
            names.join(", ")
        )));
    }
    let ncol = columns.len().max(1);
    let sort_event = 0usize;
    let run_of_event: HashMap<i64, &RunRow> = events
        .iter()
        .filter_map(|e| runs.iter().find(|r| r.id == e.run_id).map(|r| (e.id, r)))
        .collect();
    let sec_of_event: HashMap<i64, Option<f64>> = events
        .iter()
        .map(|e| {
            (
                e.id,
                seconds_per_sample(e, run_of_event.get(&e.id).copied()),
            )
        })
        .collect();

    let keep_process = |p: &ProcessRow| q.filter.keeps(p);

    let mut symbolizer = Symbolizer::with_symfs(q.symfs.clone());
    let mut by_image: HashMap<i64, Vec<u64>> = HashMap::new();
    let mut by_proc: HashMap<(i64, String), (Option<u64>, Vec<u64>)> = HashMap::new();
    let mut by_process: HashMap<i64, (u64, u64, f64, f64, bool)> = HashMap::new();
    let mut total = vec![0u64; ncol];
    let (mut user, mut kernel) = (0u64, 0u64);
    let mut seconds_total: Option<f64> = None;
    let mut proc_cache: HashMap<(i64, u64, i64), (String, Option<u64>)> = HashMap::new();
    for c in &counts {
        let Some(&col) = column_of.get(&c.event_id) else {
            continue;
        };
        let Some(img) = images.get(&c.image_id) else {
            continue;
        };
        let Some(proc_row) = processes.get(&c.process_id) else {
            continue;
        };
        if !keep_process(proc_row) {
            continue;
        }
        if let Some(f) = &q.image {
            if !img.path.contains(f.as_str()) {
                continue;
            }
        }
        let is_kernel = matches!(img.kind.as_str(), "kernel" | "module");
        total[col] += c.count;
        by_image.entry(c.image_id).or_insert_with(|| vec![0; ncol])[col] += c.count;
        // An unknown region's addresses are per process (JIT code).
        let owner = if img.kind == "unknown" {
            proc_row.pid
        } else {
            0
        };
        let (name, start) = proc_cache
            .entry((c.image_id, c.offset, owner))
            .or_insert_with(|| symbolizer.procedure_of_process(img, c.offset, proc_row.pid))
            .clone();
        by_proc
            .entry((c.image_id, name))
            .or_insert_with(|| (start, vec![0; ncol]))
            .1[col] += c.count;
        if col == sort_event {
            let e = by_process
                .entry(c.process_id)
                .or_insert((0, 0, 0.0, 0.0, false));
            let secs = sec_of_event.get(&c.event_id).copied().flatten();
            if is_kernel {
                e.1 += c.count;
                kernel += c.count;
            } else {
                e.0 += c.count;
                user += c.count;
            }
            if let Some(s) = secs {
                let t = s * c.count as f64;
                if is_kernel {
                    e.3 += t;
                } else {
                    e.2 += t;
                }
                e.4 = true;
                *seconds_total.get_or_insert(0.0) += t;
            }
        }
    }
    for (i, c) in columns.iter_mut().enumerate() {
        c.samples = total[i];
    }
    let whole = total[sort_event];
    let keep = |n: u64| pct(n, whole) >= q.min_percent;
    let limit = |v: usize| if q.limit == 0 { v } else { v.min(q.limit) };

    // Images.
    let mut image_rows: Vec<ImageSummary> = by_image
        .into_iter()
        .map(|(id, s)| {
            let img = &images[&id];
            ImageSummary {
                image: basename(&img.path),
                path: img.path.clone(),
                kind: img.kind.clone(),
                percent: pct(s[sort_event], whole),
                samples: s,
                cumulative_percent: 0.0,
            }
        })
        .collect();
    match q.sort {
        SortKey::Samples => image_rows.sort_by(|a, b| {
            b.samples[sort_event]
                .cmp(&a.samples[sort_event])
                .then(a.path.cmp(&b.path))
        }),
        SortKey::Name => image_rows.sort_by(|a, b| a.image.cmp(&b.image)),
    }
    let mut cum = 0.0;
    for r in &mut image_rows {
        cum += r.percent;
        r.cumulative_percent = cum;
    }
    let n_images = image_rows.len() as u64;
    image_rows.retain(|r| keep(r.samples[sort_event]));
    image_rows.truncate(limit(image_rows.len()));

    // Procedures.
    let mut proc_rows: Vec<ProcedureSummary> = by_proc
        .into_iter()
        .map(|((img, name), (start, s))| ProcedureSummary {
            procedure: name,
            image: basename(&images[&img].path),
            start,
            percent: pct(s[sort_event], whole),
            samples: s,
            cumulative_percent: 0.0,
        })
        .collect();
    match q.sort {
        SortKey::Samples => proc_rows.sort_by(|a, b| {
            b.samples[sort_event]
                .cmp(&a.samples[sort_event])
                .then(a.procedure.cmp(&b.procedure))
        }),
        SortKey::Name => proc_rows.sort_by(|a, b| a.procedure.cmp(&b.procedure)),
    }
    let mut cum = 0.0;
    for r in &mut proc_rows {
        cum += r.percent;
        r.cumulative_percent = cum;
    }
    proc_rows.retain(|r| keep(r.samples[sort_event]));
    proc_rows.truncate(limit(proc_rows.len()));

    // Processes and groups.
    let mut process_rows: Vec<ProcessSummary> = by_process
        .iter()
        .map(|(id, &(u, k, us, ks, timed))| {
            let p = &processes[id];
            ProcessSummary {
                appid: p.appid(),
                pid: p.pid,
                parent: p
                    .parent_id
                    .and_then(|pp| processes.get(&pp))
                    .map(|pp| pp.appid()),
                cause: p.cause.clone(),
                cmdline: p.cmdline.clone(),
                user_samples: u,
                kernel_samples: k,
                user_seconds: timed.then_some(us),
                kernel_seconds: timed.then_some(ks),
                percent: pct(u + k, whole),
            }
        })
        .collect();
    let mut groups: BTreeMap<String, GroupSummary> = BTreeMap::new();
    for p in processes.values().filter(|p| keep_process(p)) {
        let g = groups
            .entry(p.comm.clone())
            .or_insert_with(|| GroupSummary {
                comm: p.comm.clone(),
                instances: 0,
                user_samples: 0,
                kernel_samples: 0,
                seconds: None,
                percent: 0.0,
            });
        g.instances += 1;
        if let Some(&(u, k, us, ks, timed)) = by_process.get(&p.id) {
            g.user_samples += u;
            g.kernel_samples += k;
            if timed {
                *g.seconds.get_or_insert(0.0) += us + ks;
            }
        }
    }
    let mut group_rows: Vec<GroupSummary> = groups.into_values().collect();
    for g in &mut group_rows {
        g.percent = pct(g.user_samples + g.kernel_samples, whole);
    }
    let processes_seen = processes.values().filter(|p| keep_process(p)).count() as u64;
    match q.sort {
        SortKey::Samples => {
            process_rows.sort_by(|a, b| {
                (b.user_samples + b.kernel_samples)
                    .cmp(&(a.user_samples + a.kernel_samples))
                    .then(a.appid.cmp(&b.appid))
            });
            group_rows.sort_by(|a, b| {
                (b.user_samples + b.kernel_samples)
                    .cmp(&(a.user_samples + a.kernel_samples))
                    .then(a.comm.cmp(&b.comm))
            });
        }
        SortKey::Name => {
            process_rows.sort_by(|a, b| a.appid.cmp(&b.appid));
        }
    }
    let processes_with_samples = process_rows.len() as u64;
    process_rows.retain(|r| keep(r.user_samples + r.kernel_samples));
    process_rows.truncate(limit(process_rows.len()));
    group_rows.retain(|r| {
        r.user_samples + r.kernel_samples > 0 && keep(r.user_samples + r.kernel_samples)
    });
    group_rows.truncate(limit(group_rows.len()));

    // Statistics of each run that contributed.
    let wanted_epochs: Option<HashSet<i64>> = q
        .filter
        .epochs
        .as_ref()
        .map(|v| v.iter().copied().collect());
    let mut run_stats = Vec::new();
    for r in &runs {
        let eps: Vec<i64> = epochs
            .iter()
            .filter(|e| {
                e.run_id == r.id && wanted_epochs.as_ref().is_none_or(|w| w.contains(&e.id))
            })
            .map(|e| e.id)
            .collect();
        if eps.is_empty() {
            continue;
        }
        let stats: BTreeMap<String, i64> = reader.stats(r.id)?.into_iter().collect();
        let hit_rate = match (stats.get("hash_hits"), stats.get("hash_lookups")) {
            (Some(&h), Some(&l)) if l > 0 => Some(h as f64 / l as f64),
            _ => None,
        };
        if !r.complete {
            warnings.push(format!(
                "run {} did not finish cleanly (killed, or still collecting): it holds its completed flushes",
                r.id
            ));
        }
        run_stats.push(RunStatistics {
            run: r.clone(),
            epochs: eps,
            events: events
                .iter()
                .filter(|e| e.run_id == r.id)
                .map(|e| RunEvent {
                    requested: e.requested.clone(),
                    used: e.used.clone(),
                    unit: e.unit.clone(),
                    period: e.period,
                    frequency: e.frequency,
                    period_jitter: e.period_jitter,
                    fallback_reason: e.fallback_reason.clone(),
                    samples: e.samples,
                    sampled_s: (e.unit == "ns").then_some(e.total_period as f64 / 1e9),
                    steal_kept: crate::samples::steal_kept(e, r),
                })
                .collect(),
            stats,
            hash_hit_rate: hit_rate,
        });
    }
    warnings.extend(symbolizer.take_warnings());
    warnings.sort();
    warnings.dedup();

    Ok(ProfReport {
        database: db_path.display().to_string(),
        events: columns,
        sort_event,
        system: SystemSummary {
            samples: total,
            user_samples: user,
            kernel_samples: kernel,
            seconds: seconds_total,
            processes_with_samples,
            processes_seen,
            images: n_images,
        },
        images: image_rows,
        procedures: proc_rows,
        processes: process_rows,
        groups: group_rows,
        runs: run_stats,
        warnings,
    })
}
