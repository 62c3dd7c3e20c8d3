//! The latency model (OSprof): per operation a log2 histogram of latencies in
//! CPU cycles, its count, total latency and peaks; the automatic selection of
//! the operations that contribute most latency; and the comparison of two
//! profile sets by earth mover's distance, chi-square, and total latency and
//! count differences, flagging only significant differences.

use crate::error::{AnalyzeError, Result};
use dcpi_collect::latency::histogram::{bucket_mid, bucket_of};
use rusqlite::{Connection, OpenFlags};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Which latency buckets to load.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    pub db: PathBuf,
    pub run: Option<i64>,
    pub epoch: Option<i64>,
    pub set: Option<i64>,
    pub pid: Option<i64>,
    pub comm: Option<String>,
    /// `comm#instance`.
    pub appid: Option<String>,
    /// One time slice of an `--interval` capture.
    pub interval: Option<i64>,
}

impl Selector {
    /// Parses `[DB:]key=value,key=value` (keys: run, epoch, set, pid, comm,
    /// appid, interval); a bare `DB` selects everything in it.
    pub fn parse(text: &str, default_db: &Path) -> Result<Self> {
        let (db, rest) = match text.rsplit_once(':') {
            Some((db, rest)) if !db.is_empty() && !db.contains('=') => (PathBuf::from(db), rest),
            _ if !text.contains('=') && !text.is_empty() => (PathBuf::from(text), ""),
            _ => (default_db.to_path_buf(), text),
        };
        let mut s = Selector {
            db,
            ..Default::default()
        };
        for part in rest.split(',').filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').ok_or_else(|| {
                AnalyzeError::Usage(format!("bad selector '{part}': expected key=value"))
            })?;
            let num = || {
                v.parse::<i64>()
                    .map_err(|_| AnalyzeError::Usage(format!("bad number in selector '{part}'")))
            };
            match k {
                "run" => s.run = Some(num()?),
                "epoch" => s.epoch = Some(num()?),
                "set" => s.set = Some(num()?),
                "pid" => s.pid = Some(num()?),
                "interval" => s.interval = Some(num()?),
                "comm" => s.comm = Some(v.to_string()),
                "appid" => s.appid = Some(v.to_string()),
                _ => {
                    return Err(AnalyzeError::Usage(format!(
                        "unknown selector key '{k}' (run, epoch, set, pid, comm, appid, interval)"
                    )))
                }
            }
        }
        Ok(s)
    }

    /// Short description for reports.
    pub fn describe(&self) -> String {
        let mut parts = vec![self.db.display().to_string()];
        for (k, v) in [
            ("run", self.run.map(|x| x.to_string())),
            ("epoch", self.epoch.map(|x| x.to_string())),
            ("set", self.set.map(|x| x.to_string())),
            ("pid", self.pid.map(|x| x.to_string())),
            ("comm", self.comm.clone()),
            ("appid", self.appid.clone()),
            ("interval", self.interval.map(|x| x.to_string())),
        ] {
            if let Some(v) = v {
                parts.push(format!("{k}={v}"));
            }
        }
        parts.join(" ")
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Peak {
    pub bucket: i32,
    pub count: u64,
    /// Representative latency of the bucket.
    pub cycles: f64,
    pub seconds: f64,
    /// A host characteristic time that falls in this bucket.
    pub label: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OpProfile {
    pub operation: String,
    /// bucket → count.
    pub buckets: BTreeMap<i32, u64>,
    pub count: u64,
    pub total_cycles: u64,
    pub total_seconds: f64,
    /// Share of the total latency of all operations.
    pub percent: f64,
    pub peaks: Vec<Peak>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LatencyReport {
    pub selector: String,
    pub resolution: u32,
    pub core_hz: f64,
    pub sets: Vec<i64>,
    pub calls: u64,
    pub unpaired: u64,
    pub lost: u64,
    pub host_times: Vec<(String, f64)>,
    /// Sorted by total latency, largest first.
    pub operations: Vec<OpProfile>,
    /// OSprof's automatic selection: the operations that contribute most.
    pub selected: Vec<String>,
}

/// Finds the peaks of a histogram: local maxima holding at least 2% of the
/// calls, separated from a neighbouring peak by a valley below 3/4 of the
/// smaller one (else the smaller is a shoulder of the larger).
pub fn find_peaks(buckets: &BTreeMap<i32, u64>) -> Vec<(i32, u64)> {
    let Some((&lo, _)) = buckets.iter().next() else {
        return Vec::new();
    };
    let hi = *buckets.keys().last().expect("non-empty");
    let total: u64 = buckets.values().sum();
    let at = |b: i32| buckets.get(&b).copied().unwrap_or(0);
    let mut peaks: Vec<(i32, u64)> = (lo..=hi)
        .filter(|&b| {
            let c = at(b);
            c > 0 && c > at(b - 1) && c >= at(b + 1) && c * 50 >= total
        })
        .map(|b| (b, at(b)))
        .collect();
    loop {
        let merge = peaks.windows(2).position(|w| {
            let valley = (w[0].0..=w[1].0).map(at).min().unwrap_or(0);
            valley * 4 >= w[0].1.min(w[1].1) * 3
        });
        match merge {
            Some(i) => {
                let drop = if peaks[i].1 < peaks[i + 1].1 {
                    i
                } else {
                    i + 1
                };
                peaks.remove(drop);
            }
            None => return peaks,
        }
    }
}

fn open(db: &Path) -> Result<Connection> {
    // Validates the file (dcpi database, schema version) with a clear error.
    drop(dcpi_collect::db::ProfileReader::open(db)?);
    Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| AnalyzeError::Db(dcpi_collect::CollectError::Db(e)))
}

fn db_err(e: rusqlite::Error) -> AnalyzeError {
    AnalyzeError::Db(dcpi_collect::CollectError::Db(e))
}

/// Loads the latency profiles a selector names.
pub fn load(sel: &Selector) -> Result<LatencyReport> {
    let conn = open(&sel.db)?;
    let mut sets: Vec<(i64, i64, u32, f64, i64, i64, i64)> = conn
        .prepare(
            "SELECT s.id, s.run_id, s.resolution, s.core_hz, s.calls, s.unpaired, s.lost
             FROM latency_sets s WHERE (?1 IS NULL OR s.run_id = ?1) AND (?2 IS NULL OR s.epoch_id = ?2)
             AND (?3 IS NULL OR s.id = ?3) ORDER BY s.id",
        )
        .map_err(db_err)?
        .query_map(rusqlite::params![sel.run, sel.epoch, sel.set], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?))
        })
        .map_err(db_err)?
        .collect::<rusqlite::Result<_>>()
        .map_err(db_err)?;
    if sets.is_empty() {
        return Err(AnalyzeError::Usage(format!(
            "no latency profiles match {}; record one with: dcpi latency -o {} -- COMMAND",
            sel.describe(),
            sel.db.display()
        )));
    }
    let resolution = sets[0].2;
    if sets.iter().any(|s| s.2 != resolution) {
        // Mixed resolutions cannot share buckets: keep the newest resolution's sets.
        let r = sets.last().expect("non-empty").2;
        sets.retain(|s| s.2 == r);
    }
    let resolution = sets.last().expect("non-empty").2;
    let core_hz = sets.iter().map(|s| s.3).sum::<f64>() / sets.len() as f64;
    let mut ops: BTreeMap<String, (BTreeMap<i32, u64>, u64, u64)> = BTreeMap::new();
    let mut stmt = conn
        .prepare(
            "SELECT b.operation, b.bucket, b.count, b.total_cycles FROM latency_buckets b
             JOIN processes p ON p.id = b.process_id
             WHERE b.set_id = ?1 AND (?2 IS NULL OR p.pid = ?2) AND (?3 IS NULL OR p.comm = ?3)
               AND (?4 IS NULL OR p.comm || '#' || p.instance = ?4) AND (?5 IS NULL OR b.interval = ?5)",
        )
        .map_err(db_err)?;
    for s in &sets {
        let rows = stmt
            .query_map(
                rusqlite::params![s.0, sel.pid, sel.comm, sel.appid, sel.interval],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, i32>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, i64>(3)?,
                    ))
                },
            )
            .map_err(db_err)?;
        for row in rows {
            let (op, b, n, c) = row.map_err(db_err)?;
            let e = ops.entry(op).or_default();
            *e.0.entry(b).or_insert(0) += n as u64;
            e.1 += n as u64;
            e.2 += c as u64;
        }
    }
    let run_ids: Vec<i64> = sets.iter().map(|s| s.1).collect();
    let mut host_times: Vec<(String, f64)> = Vec::new();
    if let Some(&run) = run_ids.last() {
        host_times = conn
            .prepare("SELECT name, cycles FROM host_times WHERE run_id = ?1 ORDER BY cycles")
            .map_err(db_err)?
            .query_map([run], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(db_err)?
            .collect::<rusqlite::Result<_>>()
            .map_err(db_err)?;
    }
    let grand: u64 = ops.values().map(|o| o.2).sum();
    let mut operations: Vec<OpProfile> = ops
        .into_iter()
        .map(|(operation, (buckets, count, total_cycles))| {
            let peaks = find_peaks(&buckets)
                .into_iter()
                .map(|(bucket, count)| {
                    let cycles = bucket_mid(bucket, resolution);
                    let label = host_times
                        .iter()
                        .find(|(_, t)| bucket_of(*t as u64, resolution) == bucket)
                        .map(|(n, _)| n.clone());
                    Peak {
                        bucket,
                        count,
                        cycles,
                        seconds: cycles / core_hz,
                        label,
                    }
                })
                .collect();
            OpProfile {
                operation,
                count,
                total_cycles,
                total_seconds: total_cycles as f64 / core_hz,
                percent: if grand == 0 {
                    0.0
                } else {
                    100.0 * total_cycles as f64 / grand as f64
                },
                buckets,
                peaks,
            }
        })
        .collect();
    operations.sort_by(|a, b| {
        b.total_cycles
            .cmp(&a.total_cycles)
            .then(a.operation.cmp(&b.operation))
    });
    // OSprof's selection: the largest contributors up to 90% of all latency
    // (at most 10), and any other operation with 5% or more.
    let mut selected = Vec::new();
    let mut cum = 0.0;
    for o in &operations {
        if (cum < 90.0 && selected.len() < 10) || o.percent >= 5.0 {
            selected.push(o.operation.clone());
        }
        cum += o.percent;
    }
    Ok(LatencyReport {
        selector: sel.describe(),
        resolution,
        core_hz,
        sets: sets.iter().map(|s| s.0).collect(),
        calls: sets.iter().map(|s| s.4 as u64).sum(),
        unpaired: sets.iter().map(|s| s.5 as u64).sum(),
        lost: sets.iter().map(|s| s.6 as u64).sum(),
        host_times,
        operations,
        selected,
    })
}

/// How one operation differs between two profile sets.
#[derive(Debug, Clone, Serialize)]
pub struct OpDiff {
    pub operation: String,
    pub count_a: u64,
    pub count_b: u64,
    /// Earth mover's distance between the normalized histograms, in buckets.
    pub emd: f64,
    /// Chi-square distance of the normalized histograms (0 = same, 2 = disjoint).
    pub chi_square: f64,
    /// (B − A) / max(A, B) of the total latency, and of the call count.
    pub latency_diff: f64,
    pub count_diff: f64,
    pub peaks_a: Vec<i32>,
    pub peaks_b: Vec<i32>,
    pub significant: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub a: String,
    pub b: String,
    pub resolution: u32,
    /// Operations in both sets, most different first (significant ones first).
    pub operations: Vec<OpDiff>,
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
}

/// Earth mover's distance of two histograms on the same bucket axis (1-D:
/// the area between the cumulative distributions), in buckets.
pub fn emd(a: &BTreeMap<i32, u64>, b: &BTreeMap<i32, u64>) -> f64 {
    let (na, nb) = (
        a.values().sum::<u64>() as f64,
        b.values().sum::<u64>() as f64,
    );
    if na == 0.0 || nb == 0.0 {
        return f64::NAN;
    }
    let lo = *a.keys().next().unwrap().min(b.keys().next().unwrap());
    let hi = *a.keys().last().unwrap().max(b.keys().last().unwrap());
    let (mut ca, mut cb, mut d) = (0.0, 0.0, 0.0);
    for k in lo..=hi {
        ca += a.get(&k).copied().unwrap_or(0) as f64 / na;
        cb += b.get(&k).copied().unwrap_or(0) as f64 / nb;
        d += (ca - cb).abs();
    }
    d
}

/// Chi-square distance of the normalized histograms.
pub fn chi_square(a: &BTreeMap<i32, u64>, b: &BTreeMap<i32, u64>) -> f64 {
    let (na, nb) = (
        a.values().sum::<u64>() as f64,
        b.values().sum::<u64>() as f64,
    );
    if na == 0.0 || nb == 0.0 {
        return f64::NAN;
    }
    let keys: std::collections::BTreeSet<i32> = a.keys().chain(b.keys()).copied().collect();
    keys.iter()
        .map(|k| {
            let p = a.get(k).copied().unwrap_or(0) as f64 / na;
            let q = b.get(k).copied().unwrap_or(0) as f64 / nb;
            if p + q > 0.0 {
                (p - q) * (p - q) / (p + q)
            } else {
                0.0
            }
        })
        .sum()
}

fn rel(a: f64, b: f64) -> f64 {
    let m = a.max(b);
    if m == 0.0 {
        0.0
    } else {
        (b - a) / m
    }
}

/// Compares two loaded profile sets. Following OSprof, an operation is
/// significant only if it matters (≥ 1% of the latency in either set and at
/// least 50 calls in each) and its behaviour changed: EMD ≥ 0.5 bucket, or
/// total latency changed by a quarter or more while the count did not explain it.
pub fn compare(a: &LatencyReport, b: &LatencyReport) -> Result<Comparison> {
    if a.resolution != b.resolution {
        return Err(AnalyzeError::Usage(format!(
            "the two sets have different resolutions ({} and {}); capture both with the same --resolution",
            a.resolution, b.resolution
        )));
    }
    let find =
        |r: &LatencyReport, op: &str| r.operations.iter().find(|o| o.operation == op).cloned();
    let mut rows = Vec::new();
    let mut only_in_a = Vec::new();
    for oa in &a.operations {
        let Some(ob) = find(b, &oa.operation) else {
            only_in_a.push(oa.operation.clone());
            continue;
        };
        let e = emd(&oa.buckets, &ob.buckets);
        let chi = chi_square(&oa.buckets, &ob.buckets);
        let latency_diff = rel(oa.total_cycles as f64, ob.total_cycles as f64);
        let count_diff = rel(oa.count as f64, ob.count as f64);
        let matters = (oa.percent >= 1.0 || ob.percent >= 1.0) && oa.count >= 50 && ob.count >= 50;
        let changed =
            e >= 0.5 || (latency_diff.abs() >= 0.25 && (latency_diff - count_diff).abs() >= 0.25);
        rows.push(OpDiff {
            operation: oa.operation.clone(),
            count_a: oa.count,
            count_b: ob.count,
            emd: e,
            chi_square: chi,
            latency_diff,
            count_diff,
            peaks_a: oa.peaks.iter().map(|p| p.bucket).collect(),
            peaks_b: ob.peaks.iter().map(|p| p.bucket).collect(),
            significant: matters && changed,
        });
    }
    let only_in_b = b
        .operations
        .iter()
        .filter(|o| find(a, &o.operation).is_none())
        .map(|o| o.operation.clone())
        .collect();
    rows.sort_by(|x, y| {
        y.significant
            .cmp(&x.significant)
            .then(y.emd.total_cmp(&x.emd))
    });
    Ok(Comparison {
        a: a.selector.clone(),
        b: b.selector.clone(),
        resolution: a.resolution,
        operations: rows,
        only_in_a,
        only_in_b,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(v: &[(i32, u64)]) -> BTreeMap<i32, u64> {
        v.iter().copied().collect()
    }

    #[test]
    fn peaks_separate_two_paths_and_merge_shoulders() {
        let two = h(&[
            (9, 10),
            (10, 500),
            (11, 80),
            (12, 5),
            (13, 3),
            (14, 40),
            (15, 200),
            (16, 30),
        ]);
        assert_eq!(find_peaks(&two), vec![(10, 500), (15, 200)]);
        let shoulder = h(&[(10, 500), (11, 420), (12, 450), (13, 10)]);
        assert_eq!(find_peaks(&shoulder), vec![(10, 500)]);
        let noise = h(&[(10, 1000), (20, 3)]);
        assert_eq!(
            find_peaks(&noise),
            vec![(10, 1000)],
            "under 2% is not a peak"
        );
        assert!(find_peaks(&BTreeMap::new()).is_empty());
    }

    #[test]
    fn emd_counts_buckets_moved() {
        let a = h(&[(10, 100)]);
        assert_eq!(emd(&a, &h(&[(10, 7)])), 0.0);
        assert!((emd(&a, &h(&[(13, 100)])) - 3.0).abs() < 1e-9);
        assert!((emd(&a, &h(&[(10, 50), (12, 50)])) - 1.0).abs() < 1e-9);
        assert!((chi_square(&a, &h(&[(13, 1)])) - 2.0).abs() < 1e-9);
        assert_eq!(chi_square(&a, &a), 0.0);
    }

    #[test]
    fn selectors_parse() {
        let d = Path::new("dcpi.db");
        let s = Selector::parse("run=2,comm=flock", d).unwrap();
        assert_eq!(
            (s.db.to_str(), s.run, s.comm.as_deref()),
            (Some("dcpi.db"), Some(2), Some("flock"))
        );
        let s = Selector::parse("other.db:appid=x#3", d).unwrap();
        assert_eq!(
            (s.db.to_str(), s.appid.as_deref()),
            (Some("other.db"), Some("x#3"))
        );
        let s = Selector::parse("/tmp/a.db", d).unwrap();
        assert_eq!(s.db.to_str(), Some("/tmp/a.db"));
        assert!(Selector::parse("bogus=1", d).is_err());
        assert!(Selector::parse("run=x", d).is_err());
    }
}
