//! Read access to a profile database for the analysis tools. Opens the file
//! read-only, so it works while a collector is still writing (WAL).

use super::open_for_read;
use crate::error::Result;
use rusqlite::{Connection, Row};
use serde::Serialize;
use std::path::Path;

#[derive(Debug, Clone, Serialize)]
pub struct RunRow {
    pub id: i64,
    pub started_at: String,
    pub ended_at: Option<String>,
    pub duration_s: Option<f64>,
    pub mode: String,
    pub command: Option<String>,
    pub target_pid: Option<i64>,
    pub exit_status: Option<i64>,
    pub interrupted: bool,
    pub complete: bool,
    pub hostname: Option<String>,
    pub kernel: Option<String>,
    pub kernel_build_id: Option<String>,
    pub cpu_vendor: Option<String>,
    pub cpu_family: Option<i64>,
    pub cpu_model: Option<i64>,
    pub cpu_model_name: Option<String>,
    pub online_cpus: Option<i64>,
    pub core_hz: Option<f64>,
    pub core_hz_end: Option<f64>,
    pub tsc_hz: Option<f64>,
    /// The core clock sampled code got (schema 4): see `sampling_cost`.
    pub sampled_core_hz: Option<f64>,
    /// Space-separated CPUID features (schema 5): see `Machine::for_cpu`.
    pub cpu_features: Option<String>,
    /// The command's time on a CPU, user and system, its reaped children
    /// included (schema 6; command mode).
    pub target_cpu_s: Option<f64>,
    /// Time the hypervisor took from the guest's CPUs during the run,
    /// summed over them (schema 6; 0 on bare metal).
    pub steal_s: Option<f64>,
    /// The share of an idle core the command got (schema 7): see
    /// `core_share`.
    pub core_share: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct EpochRow {
    pub id: i64,
    pub run_id: i64,
    pub started_at: String,
    pub ended_at: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct EventRow {
    pub id: i64,
    pub run_id: i64,
    pub requested: String,
    pub used: String,
    pub unit: String,
    pub precise: i64,
    pub period: Option<i64>,
    pub frequency: Option<i64>,
    pub period_jitter: f64,
    pub fallback_reason: Option<String>,
    pub samples: i64,
    pub total_period: i64,
}

impl EventRow {
    /// Mean period of one sample (fixed period, or the kernel's in frequency mode).
    pub fn mean_period(&self) -> Option<f64> {
        if self.samples > 0 && self.total_period > 0 {
            Some(self.total_period as f64 / self.samples as f64)
        } else {
            self.period.map(|p| p as f64)
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ImageRow {
    pub id: i64,
    pub identity: String,
    pub kind: String,
    pub path: String,
    pub build_id: Option<String>,
    pub size: Option<i64>,
    pub mtime: Option<i64>,
    pub offset_kind: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProcessRow {
    pub id: i64,
    pub run_id: i64,
    pub comm: String,
    pub instance: i64,
    pub pid: i64,
    pub parent_id: Option<i64>,
    pub exec_from_id: Option<i64>,
    pub cause: String,
    pub cmdline: Option<String>,
    pub user_samples: i64,
    pub kernel_samples: i64,
}

impl ProcessRow {
    /// SLEEPY's application id: command name and instance number.
    pub fn appid(&self) -> String {
        format!("{}#{}", self.comm, self.instance)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CountRow {
    pub epoch_id: i64,
    pub process_id: i64,
    pub image_id: i64,
    /// Offset as its 64-bit pattern (see the schema docs for its meaning).
    pub offset: u64,
    pub event_id: i64,
    pub count: u64,
}

/// pkprof: kernel samples of `from_process_id` charged to `to_process_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChargeRow {
    pub epoch_id: i64,
    pub from_process_id: i64,
    pub to_process_id: i64,
    pub image_id: i64,
    pub offset: u64,
    pub event_id: i64,
    pub link: String,
    pub count: u64,
}

/// A read-only view of a profile database.
pub struct ProfileReader {
    conn: Connection,
}

fn rows<T>(
    conn: &Connection,
    sql: &str,
    f: impl Fn(&Row) -> rusqlite::Result<T>,
) -> Result<Vec<T>> {
    let mut st = conn.prepare(sql)?;
    let out = st
        .query_map([], |r| f(r))?
        .collect::<rusqlite::Result<Vec<T>>>()?;
    Ok(out)
}

impl ProfileReader {
    pub fn open(path: &Path) -> Result<Self> {
        Ok(ProfileReader {
            conn: open_for_read(path)?,
        })
    }

    pub fn runs(&self) -> Result<Vec<RunRow>> {
        let version: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?;
        // Read-only files keep their version: before 4, no sampled clock.
        let sampled = if version >= 4 {
            "sampled_core_hz"
        } else {
            "NULL"
        };
        let features = if version >= 5 { "cpu_features" } else { "NULL" };
        let times = if version >= 6 {
            "target_cpu_s, steal_s"
        } else {
            "NULL, NULL"
        };
        let share = if version >= 7 { "core_share" } else { "NULL" };
        rows(
            &self.conn,
            &format!("SELECT id, started_at, ended_at, duration_s, mode, command, target_pid, exit_status,
                    interrupted, complete, hostname, kernel, kernel_build_id, cpu_vendor, cpu_family,
                    cpu_model, cpu_model_name, online_cpus, core_hz, core_hz_end, tsc_hz, {sampled},
                    {features}, {times}, {share}
             FROM runs ORDER BY id"
            ),
            |r| {
                Ok(RunRow {
                    id: r.get(0)?,
                    started_at: r.get(1)?,
                    ended_at: r.get(2)?,
                    duration_s: r.get(3)?,
                    mode: r.get(4)?,
                    command: r.get(5)?,
                    target_pid: r.get(6)?,
                    exit_status: r.get(7)?,
                    interrupted: r.get(8)?,
                    complete: r.get(9)?,
                    hostname: r.get(10)?,
                    kernel: r.get(11)?,
                    kernel_build_id: r.get(12)?,
                    cpu_vendor: r.get(13)?,
                    cpu_family: r.get(14)?,
                    cpu_model: r.get(15)?,
                    cpu_model_name: r.get(16)?,
                    online_cpus: r.get(17)?,
                    core_hz: r.get(18)?,
                    core_hz_end: r.get(19)?,
                    tsc_hz: r.get(20)?,
                    sampled_core_hz: r.get(21)?,
                    cpu_features: r.get(22)?,
                    target_cpu_s: r.get(23)?,
                    steal_s: r.get(24)?,
                    core_share: r.get(25)?,
                })
            },
        )
    }

    pub fn epochs(&self) -> Result<Vec<EpochRow>> {
        rows(
            &self.conn,
            "SELECT id, run_id, started_at, ended_at FROM epochs ORDER BY id",
            |r| {
                Ok(EpochRow {
                    id: r.get(0)?,
                    run_id: r.get(1)?,
                    started_at: r.get(2)?,
                    ended_at: r.get(3)?,
                })
            },
        )
    }

    pub fn events(&self) -> Result<Vec<EventRow>> {
        rows(
            &self.conn,
            "SELECT id, run_id, requested, used, unit, precise, period, frequency, period_jitter,
                    fallback_reason, samples, total_period FROM events ORDER BY run_id, position",
            |r| {
                Ok(EventRow {
                    id: r.get(0)?,
                    run_id: r.get(1)?,
                    requested: r.get(2)?,
                    used: r.get(3)?,
                    unit: r.get(4)?,
                    precise: r.get(5)?,
                    period: r.get(6)?,
                    frequency: r.get(7)?,
                    period_jitter: r.get(8)?,
                    fallback_reason: r.get(9)?,
                    samples: r.get(10)?,
                    total_period: r.get(11)?,
                })
            },
        )
    }

    pub fn images(&self) -> Result<Vec<ImageRow>> {
        rows(
            &self.conn,
            "SELECT id, identity, kind, path, build_id, size, mtime, offset_kind FROM images ORDER BY id",
            |r| {
                Ok(ImageRow {
                    id: r.get(0)?,
                    identity: r.get(1)?,
                    kind: r.get(2)?,
                    path: r.get(3)?,
                    build_id: r.get(4)?,
                    size: r.get(5)?,
                    mtime: r.get(6)?,
                    offset_kind: r.get(7)?,
                })
            },
        )
    }

    pub fn processes(&self) -> Result<Vec<ProcessRow>> {
        rows(
            &self.conn,
            "SELECT id, run_id, comm, instance, pid, parent_id, exec_from_id, cause, cmdline,
                    user_samples, kernel_samples FROM processes ORDER BY id",
            |r| {
                Ok(ProcessRow {
                    id: r.get(0)?,
                    run_id: r.get(1)?,
                    comm: r.get(2)?,
                    instance: r.get(3)?,
                    pid: r.get(4)?,
                    parent_id: r.get(5)?,
                    exec_from_id: r.get(6)?,
                    cause: r.get(7)?,
                    cmdline: r.get(8)?,
                    user_samples: r.get(9)?,
                    kernel_samples: r.get(10)?,
                })
            },
        )
    }

    /// All counts, or those of some epochs.
    pub fn counts(&self, epochs: Option<&[i64]>) -> Result<Vec<CountRow>> {
        let sql = match epochs {
            None => "SELECT epoch_id, process_id, image_id, offset, event_id, count FROM counts".to_string(),
            Some(list) => format!(
                "SELECT epoch_id, process_id, image_id, offset, event_id, count FROM counts WHERE epoch_id IN ({})",
                list.iter().map(|e| e.to_string()).collect::<Vec<_>>().join(",")
            ),
        };
        rows(&self.conn, &sql, |r| {
            Ok(CountRow {
                epoch_id: r.get(0)?,
                process_id: r.get(1)?,
                image_id: r.get(2)?,
                offset: r.get::<_, i64>(3)? as u64,
                event_id: r.get(4)?,
                count: r.get::<_, i64>(5)? as u64,
            })
        })
    }

    /// pkprof charges, all or of some epochs (none in a database before schema 3).
    pub fn charges(&self, epochs: Option<&[i64]>) -> Result<Vec<ChargeRow>> {
        let has: i64 = self.conn.query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = 'kernel_charges'",
            [],
            |r| r.get(0),
        )?;
        if has == 0 {
            return Ok(Vec::new());
        }
        let mut sql = "SELECT epoch_id, from_process_id, to_process_id, image_id, offset, event_id, link, count
                       FROM kernel_charges"
            .to_string();
        if let Some(list) = epochs {
            sql += &format!(
                " WHERE epoch_id IN ({})",
                list.iter()
                    .map(|e| e.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            );
        }
        rows(&self.conn, &sql, |r| {
            Ok(ChargeRow {
                epoch_id: r.get(0)?,
                from_process_id: r.get(1)?,
                to_process_id: r.get(2)?,
                image_id: r.get(3)?,
                offset: r.get::<_, i64>(4)? as u64,
                event_id: r.get(5)?,
                link: r.get(6)?,
                count: r.get::<_, i64>(7)? as u64,
            })
        })
    }

    /// Collector statistics of a run, in name order.
    pub fn stats(&self, run_id: i64) -> Result<Vec<(String, i64)>> {
        let mut st = self
            .conn
            .prepare("SELECT name, value FROM collector_stats WHERE run_id = ?1 ORDER BY name")?;
        let out = st
            .query_map([run_id], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(out)
    }
}
