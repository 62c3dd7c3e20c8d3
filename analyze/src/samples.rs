//! Samples of one image, per instruction, from a profile database: counts
//! per event name (events merged across runs by the name sampled) and the
//! core cycles they stand for (period × clock for timer events, the period
//! for cycle events), filtered by process and epoch.

use crate::error::{AnalyzeError, Result};
use dcpi_collect::db::reader::{EventRow, ImageRow, ProcessRow, RunRow};
use dcpi_collect::db::ProfileReader;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Which samples count.
#[derive(Debug, Clone, Default)]
pub struct SampleFilter {
    pub pid: Option<i64>,
    pub comm: Option<String>,
    /// `comm#instance`.
    pub appid: Option<String>,
    pub epochs: Option<Vec<i64>>,
}

impl SampleFilter {
    /// Whether a process's samples count.
    pub fn keeps(&self, p: &ProcessRow) -> bool {
        self.pid.is_none_or(|pid| p.pid == pid)
            && self.comm.as_ref().is_none_or(|c| &p.comm == c)
            && self.appid.as_ref().is_none_or(|a| &p.appid() == a)
    }
}

/// An event column of the instruction views.
#[derive(Debug, Clone, Serialize)]
pub struct EventInfo {
    pub name: String,
    pub unit: String,
    /// Whether its samples measure time (cpu-clock, task-clock, cycles).
    pub measures_time: bool,
    /// Mean core cycles per sample over the runs that sampled it.
    pub cycles_per_sample: Option<f64>,
    /// The share of an idle core the sampled command had, over the runs
    /// that measured it (schema 7), weighted by their samples.
    pub core_share: Option<f64>,
}

/// Counts at one instruction (by file offset).
#[derive(Debug, Clone, Default)]
pub struct InsnSamples {
    /// Per event column.
    pub counts: Vec<u64>,
    /// Core cycles the time-event samples stand for.
    pub cycles: f64,
}

/// All samples of one image.
#[derive(Debug, Clone)]
pub struct ImageSamples {
    pub image: ImageRow,
    pub events: Vec<EventInfo>,
    /// Index into `events` of the time event the CPI uses.
    pub time_event: Option<usize>,
    pub by_offset: BTreeMap<u64, InsnSamples>,
}

/// Cycles one sample of an event stands for, if it measures time.
pub fn cycles_per_sample(e: &EventRow, run: Option<&RunRow>) -> Option<f64> {
    let p = e.mean_period()?;
    match e.unit.as_str() {
        "cycles" => Some(p),
        "ns" => {
            let run = run?;
            Some(p * sampled_core_hz(run)? / 1e9 * steal_kept(e, run).unwrap_or(1.0))
        }
        _ => None,
    }
}

/// Below this share of its sampled time on a CPU, a command's own figure
/// is not taken for steal (children it did not wait for leave their time
/// out of it).
const LEAST_KEPT: f64 = 0.5;

/// The share of a timer event's sampled time the command really ran
/// (schema 6): its time on a CPU over the time its samples stand for.
/// On a virtual machine the timer keeps firing while the host runs
/// something else (steal), so those samples stand for fewer cycles. None
/// where not measured (other modes, older files) or not believable.
///
/// Limits: only steal the guest kernel accounts. A core slowed by what
/// shares it on the host is not seen: on this project's Zen 4 guest, four
/// runs of one `./kernels` took 0.65 to 0.78 s, on a CPU all the while
/// (this share 0.996-1.011, no steal), and the slow ones' frequencies
/// came out high all the same (zen4-5k-d: fitted scale 0.825).
pub fn steal_kept(e: &EventRow, r: &RunRow) -> Option<f64> {
    let cpu = r.target_cpu_s.filter(|_| r.mode == "command")?;
    if e.unit != "ns" || e.total_period <= 0 {
        return None;
    }
    let kept = cpu / (e.total_period as f64 / 1e9);
    (kept >= LEAST_KEPT).then_some(kept.min(1.0))
}

/// The core clock a timer sample's nanoseconds stand for: the run's core
/// clock (the mean of its start and end), less the share of the sampled
/// code's time the sampling itself took, where the run measured it (schema
/// 4: a dependent-add chain under the run's own events, at the end, beside
/// the end clock). On a KVM guest sampling at 20 kHz that share was 25 %.
pub fn sampled_core_hz(r: &RunRow) -> Option<f64> {
    let hz = match (r.core_hz, r.core_hz_end) {
        (Some(a), Some(b)) => (a + b) / 2.0,
        (Some(a), None) => a,
        _ => return None,
    };
    Some(hz * sampling_kept(r).unwrap_or(1.0))
}

/// The share of the sampled code's time left to it by the sampling, where
/// measured (sampling never speeds code up: at most 1).
pub fn sampling_kept(r: &RunRow) -> Option<f64> {
    match (r.sampled_core_hz, r.core_hz_end) {
        (Some(s), Some(end)) if s > 0.0 && end > 0.0 => Some((s / end).min(1.0)),
        _ => None,
    }
}

/// Event row id -> (column, cycles per sample).
type ColumnOf = HashMap<i64, (usize, Option<f64>)>;

/// A profile database opened for instruction-level views.
pub struct Profile {
    pub runs: Vec<RunRow>,
    pub events: Vec<EventRow>,
    pub images: Vec<ImageRow>,
    processes: HashMap<i64, ProcessRow>,
    reader: ProfileReader,
    /// Where to look for images first (`--symfs`).
    pub symfs: Option<std::path::PathBuf>,
}

impl Profile {
    pub fn open(path: &Path) -> Result<Self> {
        let reader = ProfileReader::open(path)?;
        Ok(Profile {
            runs: reader.runs()?,
            events: reader.events()?,
            images: reader.images()?,
            processes: reader.processes()?.into_iter().map(|p| (p.id, p)).collect(),
            reader,
            symfs: None,
        })
    }

    /// Event columns in first-seen order, and the column of each event row.
    fn columns(&self) -> (Vec<EventInfo>, ColumnOf) {
        let mut cols: Vec<EventInfo> = Vec::new();
        let mut of = HashMap::new();
        let mut cps_sum: Vec<(f64, u64)> = Vec::new();
        let mut share_sum: Vec<(f64, u64)> = Vec::new();
        for e in &self.events {
            let idx = match cols.iter().position(|c| c.name == e.used) {
                Some(i) => i,
                None => {
                    cols.push(EventInfo {
                        name: e.used.clone(),
                        unit: e.unit.clone(),
                        measures_time: matches!(e.unit.as_str(), "ns" | "cycles"),
                        cycles_per_sample: None,
                        core_share: None,
                    });
                    cps_sum.push((0.0, 0));
                    share_sum.push((0.0, 0));
                    cols.len() - 1
                }
            };
            let run = self.runs.iter().find(|r| r.id == e.run_id);
            let cps = cycles_per_sample(e, run);
            if let Some(c) = cps {
                let w = e.samples.max(1) as u64;
                cps_sum[idx].0 += c * w as f64;
                cps_sum[idx].1 += w;
            }
            if let Some(share) = run.and_then(|r| r.core_share) {
                let w = e.samples.max(1) as u64;
                share_sum[idx].0 += share * w as f64;
                share_sum[idx].1 += w;
            }
            of.insert(e.id, (idx, cps));
        }
        for (c, (s, w)) in cols.iter_mut().zip(cps_sum) {
            if w > 0 {
                c.cycles_per_sample = Some(s / w as f64);
            }
        }
        for (c, (s, w)) in cols.iter_mut().zip(share_sum) {
            if w > 0 {
                c.core_share = Some(s / w as f64);
            }
        }
        (cols, of)
    }

    /// ELF images with samples under the filter, most samples first.
    pub fn images_with_samples(&self, filter: &SampleFilter) -> Result<Vec<(ImageRow, u64)>> {
        let mut per: HashMap<i64, u64> = HashMap::new();
        for c in self.reader.counts(filter.epochs.as_deref())? {
            if self
                .processes
                .get(&c.process_id)
                .is_some_and(|p| filter.keeps(p))
            {
                *per.entry(c.image_id).or_default() += c.count;
            }
        }
        let mut out: Vec<(ImageRow, u64)> = self
            .images
            .iter()
            .filter(|i| i.kind == "elf")
            .filter_map(|i| per.get(&i.id).map(|n| (i.clone(), *n)))
            .collect();
        out.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.path.cmp(&b.0.path)));
        Ok(out)
    }

    /// How many processes (kept by the filter) have samples in `image`: the
    /// executions a profile of repeated runs of one command adds up.
    /// The pids of the profile's processes.
    pub fn pids(&self) -> Vec<i64> {
        let mut v: Vec<i64> = self.processes.values().map(|p| p.pid).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    pub fn processes_with_samples(&self, image: &ImageRow, filter: &SampleFilter) -> Result<usize> {
        let mut seen = std::collections::HashSet::new();
        for c in self.reader.counts(filter.epochs.as_deref())? {
            if c.image_id == image.id
                && self
                    .processes
                    .get(&c.process_id)
                    .is_some_and(|p| filter.keeps(p))
            {
                seen.insert(c.process_id);
            }
        }
        Ok(seen.len())
    }

    /// The samples of one image.
    pub fn image_samples(&self, image: &ImageRow, filter: &SampleFilter) -> Result<ImageSamples> {
        let (events, col_of) = self.columns();
        let time_event = events.iter().position(|e| e.measures_time);
        let mut by_offset: BTreeMap<u64, InsnSamples> = BTreeMap::new();
        for c in self.reader.counts(filter.epochs.as_deref())? {
            if c.image_id != image.id {
                continue;
            }
            if !self
                .processes
                .get(&c.process_id)
                .is_some_and(|p| filter.keeps(p))
            {
                continue;
            }
            let Some(&(col, cps)) = col_of.get(&c.event_id) else {
                continue;
            };
            let slot = by_offset.entry(c.offset).or_insert_with(|| InsnSamples {
                counts: vec![0; events.len()],
                cycles: 0.0,
            });
            slot.counts[col] += c.count;
            if Some(col) == time_event {
                if let Some(cps) = cps {
                    slot.cycles += cps * c.count as f64;
                }
            }
        }
        Ok(ImageSamples {
            image: image.clone(),
            events,
            time_event,
            by_offset,
        })
    }

    /// The image a `--image` text names: a path, a basename or a substring.
    pub fn image_named(&self, text: &str, filter: &SampleFilter) -> Result<ImageRow> {
        let with = self.images_with_samples(filter)?;
        let exact: Vec<&ImageRow> = with
            .iter()
            .map(|(i, _)| i)
            .filter(|i| i.path == text || i.path.rsplit('/').next() == Some(text))
            .collect();
        let matches: Vec<&ImageRow> = if exact.is_empty() {
            with.iter()
                .map(|(i, _)| i)
                .filter(|i| i.path.contains(text))
                .collect()
        } else {
            exact
        };
        match matches.as_slice() {
            [one] => Ok((*one).clone()),
            [] => Err(AnalyzeError::Usage(format!(
                "no image with samples matches '{text}'; images with samples: {}",
                with.iter()
                    .take(8)
                    .map(|(i, _)| i.path.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
            many => Err(AnalyzeError::Usage(format!(
                "'{text}' matches several images: {}; give more of the path",
                many.iter()
                    .map(|i| i.path.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(core: Option<f64>, end: Option<f64>, sampled: Option<f64>) -> RunRow {
        RunRow {
            id: 1,
            started_at: String::new(),
            ended_at: None,
            duration_s: None,
            mode: "command".into(),
            command: None,
            target_pid: None,
            exit_status: None,
            interrupted: false,
            complete: true,
            hostname: None,
            kernel: None,
            kernel_build_id: None,
            cpu_vendor: None,
            cpu_family: None,
            cpu_model: None,
            cpu_model_name: None,
            online_cpus: None,
            core_hz: core,
            core_hz_end: end,
            tsc_hz: None,
            sampled_core_hz: sampled,
            cpu_features: None,
            target_cpu_s: None,
            steal_s: None,
            core_share: None,
        }
    }

    fn timer(samples: i64, period_ns: i64) -> EventRow {
        EventRow {
            id: 1,
            run_id: 1,
            requested: "cycles".into(),
            used: "cpu-clock".into(),
            unit: "ns".into(),
            precise: 0,
            period: Some(period_ns),
            frequency: None,
            period_jitter: 0.0,
            fallback_reason: None,
            samples,
            total_period: samples * period_ns,
        }
    }

    #[test]
    fn timer_samples_taken_during_steal_stand_for_fewer_cycles() {
        // 6,327 samples of 200 µs: 1.265 s sampled; the command ran 0.87 s
        // of it (the rest the host's): each sample is 69 % of its period.
        let e = timer(6327, 200_000);
        let mut r = run(Some(3.0e9), Some(3.0e9), None);
        assert_eq!(steal_kept(&e, &r), None, "not measured: unchanged");
        let plain = cycles_per_sample(&e, Some(&r)).unwrap();
        r.target_cpu_s = Some(0.87);
        let kept = steal_kept(&e, &r).unwrap();
        assert!((kept - 0.87 / 1.2654).abs() < 1e-9, "{kept}");
        let scaled = cycles_per_sample(&e, Some(&r)).unwrap();
        assert!((scaled - plain * kept).abs() < 1e-6);
        // More time on a CPU than sampled (lost samples): never scaled up.
        r.target_cpu_s = Some(1.4);
        assert_eq!(steal_kept(&e, &r), Some(1.0));
        // Far less: children not waited for, not steal.
        r.target_cpu_s = Some(0.3);
        assert_eq!(steal_kept(&e, &r), None);
        // Only a command's own time: not a whole system's.
        r.target_cpu_s = Some(0.87);
        r.mode = "system".into();
        assert_eq!(steal_kept(&e, &r), None);
    }

    #[test]
    fn timer_samples_count_the_clock_sampled_code_gets() {
        // No probe (schema 3 and older): the mean of the run's clocks.
        let old = run(Some(3.0e9), Some(3.2e9), None);
        assert_eq!(sampled_core_hz(&old), Some(3.1e9));
        assert_eq!(sampling_kept(&old), None);
        // The probe kept 75 % of the chain's clock at the end: the run's
        // mean clock is scaled by that share.
        let new = run(Some(3.6e9), Some(3.6e9), Some(2.7e9));
        assert!((sampling_kept(&new).unwrap() - 0.75).abs() < 1e-12);
        assert!((sampled_core_hz(&new).unwrap() - 2.7e9).abs() < 1.0);
        // Sampling never speeds code up: a probe above the clock counts as none.
        let fast = run(Some(3.0e9), Some(3.0e9), Some(3.1e9));
        assert_eq!(sampled_core_hz(&fast), Some(3.0e9));
        // No clock at all: no cycles.
        assert_eq!(sampled_core_hz(&run(None, None, Some(1e9))), None);
    }
}
