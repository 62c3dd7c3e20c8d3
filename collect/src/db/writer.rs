//! The daemon's side of the database: a run, its epoch, and periodic flushes
//! of aggregated counts. Every flush is one transaction, so a `kill -9`
//! leaves a readable database with every completed flush in it.

use super::{now_text, open_for_write};
use crate::error::Result;
use crate::event_spec::EventSpec;
use dcpi_models::{core_clock::CoreClock, host::HostFacts};
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::HashMap;
use std::path::Path;

/// How a run ended, as [`ProfileWriter::end_run`] records it.
#[derive(Debug, Clone, Default)]
pub struct RunEnding {
    pub exit_status: Option<i32>,
    pub interrupted: bool,
    pub duration_s: f64,
    pub clock_end: Option<CoreClock>,
    /// The clock sampled code got (see `sampling_cost`).
    pub sampled_core_hz: Option<f64>,
    /// The command's time on a CPU, from `wait4` (command mode).
    pub target_cpu_s: Option<f64>,
    /// Steal over the run, all CPUs, from `/proc/stat`.
    pub steal_s: Option<f64>,
    /// The share of an idle core the target got (see `core_share`).
    pub core_share: Option<f64>,
}

/// What a run is and where it ran.
#[derive(Debug, Clone)]
pub struct RunInfo {
    /// `command`, `pid` or `system-wide`.
    pub mode: String,
    pub command: Option<String>,
    pub target_pid: Option<i64>,
    pub host: HostFacts,
    pub kernel_build_id: Option<String>,
    pub clock: Option<CoreClock>,
}

/// One sampled event of a run.
#[derive(Debug, Clone)]
pub struct EventConfig {
    /// What the user asked for (`cycles:pp`).
    pub requested: String,
    /// What was opened (equal to the request unless a fallback was taken).
    pub used: EventSpec,
    pub period: Option<u64>,
    pub frequency: Option<u64>,
    /// Relative half-width of the period randomization (0.03 = ±3%).
    pub period_jitter: f64,
    pub fallback_reason: Option<String>,
}

/// An image as the daemon identified it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewImage {
    /// `build-id:<hex>`, `file:<path>:<size>:<mtime>`, `kernel:<id>`, ...
    pub identity: String,
    /// `elf`, `kernel`, `module`, `unknown`.
    pub kind: String,
    pub path: String,
    pub build_id: Option<String>,
    pub size: Option<u64>,
    pub mtime: Option<i64>,
    /// `file`, `kernel_text`, `module`, `absolute`.
    pub offset_kind: String,
}

/// A process instance (appid) as the daemon saw it start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewProcess {
    pub comm: String,
    pub pid: u32,
    /// Serial of the parent instance, if known.
    pub parent: Option<u32>,
    /// Serial of the instance this one replaced by exec.
    pub exec_from: Option<u32>,
    /// `fork`, `exec`, `root`, `seeded`, `unknown`.
    pub cause: String,
    pub cmdline: Option<String>,
    pub start_ns: u64,
}

/// Changes to an already-announced process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessDelta {
    pub user_samples: u64,
    pub kernel_samples: u64,
    pub end_ns: Option<u64>,
    /// New name before the first exec (the root command).
    pub rename: Option<String>,
    pub cmdline: Option<String>,
}

/// A count to add: (process serial, image slot, offset, event position, n).
pub type CountDelta = (u32, u32, u64, u16, u64);

/// One latency bucket to add: (process serial, operation, interval, bucket, count, cycles).
pub type LatencyDelta = (u32, String, u32, i32, u64, u64);

/// Everything one flush writes.
pub type ChargeDelta = (u32, u32, u32, u64, u16, String, u64);

#[derive(Debug, Default)]
pub struct FlushBatch {
    /// Latency buckets of the current latency set (see [`ProfileWriter::begin_latency_set`]).
    pub latency: Vec<LatencyDelta>,
    /// (calls, unpaired, lost) so far, absolute, for the latency set.
    pub latency_totals: Option<(u64, u64, u64)>,
    pub new_images: Vec<(u32, NewImage)>,
    pub new_processes: Vec<(u32, NewProcess)>,
    pub process_deltas: Vec<(u32, ProcessDelta)>,
    pub counts: Vec<CountDelta>,
    /// pkprof charges: (from instance, to instance, image, offset, event, link, count).
    pub charges: Vec<ChargeDelta>,
    /// Per event position: (samples, sum of periods) so far, absolute.
    pub event_totals: Vec<(u16, u64, u64)>,
    /// Collector statistics, absolute values so far.
    pub stats: Vec<(String, u64)>,
}

/// Writer of one run into a profile database.
pub struct ProfileWriter {
    conn: Connection,
    run_id: i64,
    epoch_id: i64,
    latency_set: Option<i64>,
    event_ids: Vec<i64>,
    process_ids: HashMap<u32, i64>,
    image_ids: HashMap<u32, i64>,
}

impl ProfileWriter {
    /// Opens or creates `path` (checking it before anything is started).
    pub fn open(path: &Path) -> Result<Self> {
        Ok(ProfileWriter {
            conn: open_for_write(path)?,
            run_id: 0,
            epoch_id: 0,
            latency_set: None,
            event_ids: Vec::new(),
            process_ids: HashMap::new(),
            image_ids: HashMap::new(),
        })
    }

    /// Starts a new run with one epoch.
    pub fn begin_run(&mut self, run: &RunInfo, events: &[EventConfig]) -> Result<()> {
        let tx = self.conn.unchecked_transaction()?;
        let now = now_text();
        let c = run.clock;
        tx.execute(
            "INSERT INTO runs(started_at, mode, command, target_pid, hostname, kernel, kernel_build_id,
                 cpu_vendor, cpu_family, cpu_model, cpu_stepping, cpu_model_name, online_cpus,
                 core_hz, tsc_hz, ticks_per_cycle, dcpi_version, cpu_features)
             VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18)",
            params![
                now,
                run.mode,
                run.command,
                run.target_pid,
                run.host.hostname,
                run.host.kernel,
                run.kernel_build_id,
                run.host.cpu_vendor,
                run.host.cpu_family,
                run.host.cpu_model,
                run.host.cpu_stepping,
                run.host.cpu_model_name,
                run.host.online_cpus,
                c.map(|c| c.core_hz),
                c.map(|c| c.tsc_hz),
                c.map(|c| c.ticks_per_cycle),
                env!("CARGO_PKG_VERSION"),
                run.host.cpu_features.join(" "),
            ],
        )?;
        let run_id = tx.last_insert_rowid();
        tx.execute(
            "INSERT INTO epochs(run_id, started_at) VALUES (?1, ?2)",
            params![run_id, now],
        )?;
        let epoch_id = tx.last_insert_rowid();
        let mut event_ids = Vec::new();
        for (pos, e) in events.iter().enumerate() {
            tx.execute(
                "INSERT INTO events(run_id, position, requested, used, type, config, precise, unit,
                     period, frequency, period_jitter, fallback_reason)
                 VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)",
                params![
                    run_id,
                    pos as i64,
                    e.requested,
                    e.used.display_name(),
                    e.used.type_,
                    e.used.config as i64,
                    e.used.precise,
                    e.used.unit.as_str(),
                    e.period.map(|p| p as i64),
                    e.frequency.map(|f| f as i64),
                    e.period_jitter,
                    e.fallback_reason,
                ],
            )?;
            event_ids.push(tx.last_insert_rowid());
        }
        tx.commit()?;
        self.run_id = run_id;
        self.epoch_id = epoch_id;
        self.event_ids = event_ids;
        Ok(())
    }

    pub fn run_id(&self) -> i64 {
        self.run_id
    }

    pub fn epoch_id(&self) -> i64 {
        self.epoch_id
    }

    /// Writes one flush in one transaction.
    pub fn flush(&mut self, batch: &FlushBatch) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        for (slot, img) in &batch.new_images {
            tx.execute(
                "INSERT OR IGNORE INTO images(identity, kind, path, build_id, size, mtime, offset_kind)
                 VALUES (?1,?2,?3,?4,?5,?6,?7)",
                params![
                    img.identity,
                    img.kind,
                    img.path,
                    img.build_id,
                    img.size.map(|s| s as i64),
                    img.mtime,
                    img.offset_kind
                ],
            )?;
            let id: i64 = tx.query_row(
                "SELECT id FROM images WHERE identity = ?1",
                [&img.identity],
                |r| r.get(0),
            )?;
            self.image_ids.insert(*slot, id);
        }
        for (serial, p) in &batch.new_processes {
            let instance = next_instance(&tx, &p.comm)?;
            let parent = p.parent.and_then(|s| self.process_ids.get(&s).copied());
            let exec_from = p.exec_from.and_then(|s| self.process_ids.get(&s).copied());
            tx.execute(
                "INSERT INTO processes(run_id, comm, instance, pid, parent_id, exec_from_id, cause, cmdline, start_ns)
                 VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)",
                params![
                    self.run_id,
                    p.comm,
                    instance,
                    p.pid,
                    parent,
                    exec_from,
                    p.cause,
                    p.cmdline,
                    p.start_ns as i64
                ],
            )?;
            self.process_ids.insert(*serial, tx.last_insert_rowid());
        }
        for (serial, d) in &batch.process_deltas {
            let Some(&id) = self.process_ids.get(serial) else {
                continue;
            };
            if let Some(name) = &d.rename {
                let instance = next_instance(&tx, name)?;
                tx.execute(
                    "UPDATE processes SET comm = ?1, instance = ?2 WHERE id = ?3",
                    params![name, instance, id],
                )?;
            }
            if let Some(cmd) = &d.cmdline {
                tx.execute(
                    "UPDATE processes SET cmdline = ?1 WHERE id = ?2",
                    params![cmd, id],
                )?;
            }
            tx.execute(
                "UPDATE processes SET user_samples = user_samples + ?1,
                     kernel_samples = kernel_samples + ?2, end_ns = COALESCE(?3, end_ns)
                 WHERE id = ?4",
                params![
                    d.user_samples as i64,
                    d.kernel_samples as i64,
                    d.end_ns.map(|t| t as i64),
                    id
                ],
            )?;
        }
        {
            let mut upsert = tx.prepare_cached(
                "INSERT INTO counts(epoch_id, process_id, image_id, offset, event_id, count)
                 VALUES (?1,?2,?3,?4,?5,?6)
                 ON CONFLICT DO UPDATE SET count = count + excluded.count",
            )?;
            for &(serial, slot, offset, event, n) in &batch.counts {
                let (Some(&pid), Some(&iid), Some(&eid)) = (
                    self.process_ids.get(&serial),
                    self.image_ids.get(&slot),
                    self.event_ids.get(event as usize),
                ) else {
                    continue;
                };
                upsert.execute(params![
                    self.epoch_id,
                    pid,
                    iid,
                    offset as i64,
                    eid,
                    n as i64
                ])?;
            }
        }
        if !batch.charges.is_empty() {
            let mut upsert = tx.prepare_cached(
                "INSERT INTO kernel_charges(epoch_id, from_process_id, to_process_id, image_id, offset,
                     event_id, link, count)
                 VALUES (?1,?2,?3,?4,?5,?6,?7,?8)
                 ON CONFLICT DO UPDATE SET count = count + excluded.count",
            )?;
            for (from, to, slot, offset, event, link, n) in &batch.charges {
                let (Some(&f), Some(&t), Some(&iid), Some(&eid)) = (
                    self.process_ids.get(from),
                    self.process_ids.get(to),
                    self.image_ids.get(slot),
                    self.event_ids.get(*event as usize),
                ) else {
                    continue;
                };
                upsert.execute(params![
                    self.epoch_id,
                    f,
                    t,
                    iid,
                    *offset as i64,
                    eid,
                    link,
                    *n as i64
                ])?;
            }
        }
        for &(pos, samples, total_period) in &batch.event_totals {
            if let Some(&eid) = self.event_ids.get(pos as usize) {
                tx.execute(
                    "UPDATE events SET samples = ?1, total_period = ?2 WHERE id = ?3",
                    params![samples as i64, total_period as i64, eid],
                )?;
            }
        }
        if let Some(set) = self.latency_set {
            let mut upsert = tx.prepare_cached(
                "INSERT INTO latency_buckets(set_id, process_id, operation, interval, bucket, count, total_cycles)
                 VALUES (?1,?2,?3,?4,?5,?6,?7)
                 ON CONFLICT DO UPDATE SET count = count + excluded.count,
                     total_cycles = total_cycles + excluded.total_cycles",
            )?;
            for (serial, op, interval, bucket, count, cycles) in &batch.latency {
                let Some(&pid) = self.process_ids.get(serial) else {
                    continue;
                };
                upsert.execute(params![
                    set,
                    pid,
                    op,
                    interval,
                    bucket,
                    *count as i64,
                    *cycles as i64
                ])?;
            }
            if let Some((calls, unpaired, lost)) = batch.latency_totals {
                tx.execute(
                    "UPDATE latency_sets SET calls = ?1, unpaired = ?2, lost = ?3 WHERE id = ?4",
                    params![calls as i64, unpaired as i64, lost as i64, set],
                )?;
            }
        }
        for (name, value) in &batch.stats {
            tx.execute(
                "INSERT INTO collector_stats(run_id, name, value) VALUES (?1,?2,?3)
                 ON CONFLICT DO UPDATE SET value = excluded.value",
                params![self.run_id, name, *value as i64],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Starts a latency profile set in the current run's epoch.
    pub fn begin_latency_set(
        &mut self,
        source: &str,
        resolution: u32,
        interval_s: Option<f64>,
        core_hz: f64,
    ) -> Result<i64> {
        self.conn.execute(
            "INSERT INTO latency_sets(run_id, epoch_id, source, resolution, interval_s, core_hz)
             VALUES (?1,?2,?3,?4,?5,?6)",
            params![
                self.run_id,
                self.epoch_id,
                source,
                resolution,
                interval_s,
                core_hz
            ],
        )?;
        let id = self.conn.last_insert_rowid();
        self.latency_set = Some(id);
        Ok(id)
    }

    /// Stores characteristic times of the host (context switch, timer tick, ...), in cycles.
    pub fn write_host_times(&mut self, times: &[(String, f64)]) -> Result<()> {
        let tx = self.conn.transaction()?;
        for (name, cycles) in times {
            tx.execute(
                "INSERT INTO host_times(run_id, name, cycles) VALUES (?1,?2,?3)
                 ON CONFLICT DO UPDATE SET cycles = excluded.cycles",
                params![self.run_id, name, cycles],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Ends the current epoch and opens the next one of this run (`dcpi epoch`).
    pub fn new_epoch(&mut self) -> Result<i64> {
        let now = now_text();
        let tx = self.conn.transaction()?;
        tx.execute(
            "UPDATE epochs SET ended_at = ?1 WHERE id = ?2",
            params![now, self.epoch_id],
        )?;
        tx.execute(
            "INSERT INTO epochs(run_id, started_at) VALUES (?1, ?2)",
            params![self.run_id, now],
        )?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        self.epoch_id = id;
        Ok(id)
    }

    /// Marks the run finished.
    pub fn end_run(&mut self, end: &RunEnding) -> Result<()> {
        let now = now_text();
        let tx = self.conn.transaction()?;
        tx.execute(
            "UPDATE runs SET ended_at = ?1, duration_s = ?2, exit_status = ?3, interrupted = ?4,
                 complete = 1, core_hz_end = ?5, sampled_core_hz = ?6, target_cpu_s = ?7,
                 steal_s = ?8, core_share = ?9 WHERE id = ?10",
            params![
                now,
                end.duration_s,
                end.exit_status,
                end.interrupted,
                end.clock_end.map(|c| c.core_hz),
                end.sampled_core_hz,
                end.target_cpu_s,
                end.steal_s,
                end.core_share,
                self.run_id
            ],
        )?;
        tx.execute(
            "UPDATE epochs SET ended_at = ?1 WHERE id = ?2",
            params![now, self.epoch_id],
        )?;
        tx.commit()?;
        // Fold the WAL back so the file is self-contained when copied.
        let _ = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
        Ok(())
    }
}

/// Next free instance number for a command name, across the whole database.
fn next_instance(conn: &Connection, comm: &str) -> Result<i64> {
    let max: Option<i64> = conn
        .query_row(
            "SELECT max(instance) FROM processes WHERE comm = ?1",
            [comm],
            |r| r.get(0),
        )
        .optional()?
        .flatten();
    Ok(max.unwrap_or(0) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::ProfileReader;

    fn run_info() -> RunInfo {
        RunInfo {
            mode: "command".into(),
            command: Some("loop".into()),
            target_pid: Some(42),
            host: dcpi_models::host::read(),
            kernel_build_id: None,
            clock: None,
        }
    }

    fn event() -> EventConfig {
        EventConfig {
            requested: "cycles".into(),
            used: EventSpec::cpu_clock(),
            period: Some(250_000),
            frequency: None,
            period_jitter: 0.03,
            fallback_reason: Some("no PMU".into()),
        }
    }

    fn image(id: &str) -> NewImage {
        NewImage {
            identity: format!("build-id:{id}"),
            kind: "elf".into(),
            path: format!("/bin/{id}"),
            build_id: Some(id.into()),
            size: Some(10),
            mtime: Some(1),
            offset_kind: "file".into(),
        }
    }

    fn process(comm: &str, pid: u32) -> NewProcess {
        NewProcess {
            comm: comm.into(),
            pid,
            parent: None,
            exec_from: None,
            cause: "root".into(),
            cmdline: Some(comm.into()),
            start_ns: 0,
        }
    }

    #[test]
    fn round_trip_with_upserts_and_unique_appids() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rt.db");
        for run in 0..2u64 {
            let mut w = ProfileWriter::open(&path).unwrap();
            w.begin_run(&run_info(), &[event()]).unwrap();
            let mut b = FlushBatch {
                new_images: vec![(0, image("aa")), (1, image("bb"))],
                new_processes: vec![(1, process("loop", 42)), (2, process("sh", 43))],
                counts: vec![
                    (1, 0, 0x1139, 0, 10),
                    (1, 1, 0x29000, 0, 3),
                    (2, 0, 0x1139, 0, 1),
                ],
                event_totals: vec![(0, 14, 14 * 250_000)],
                stats: vec![("samples".into(), 14)],
                ..Default::default()
            };
            b.process_deltas = vec![(
                1,
                ProcessDelta {
                    user_samples: 13,
                    ..Default::default()
                },
            )];
            w.flush(&b).unwrap();
            // A second flush adds to the same keys.
            let b2 = FlushBatch {
                counts: vec![(1, 0, 0x1139, 0, 5 + run)],
                process_deltas: vec![(
                    1,
                    ProcessDelta {
                        user_samples: 5,
                        end_ns: Some(99),
                        ..Default::default()
                    },
                )],
                ..Default::default()
            };
            w.flush(&b2).unwrap();
            w.end_run(&RunEnding {
                exit_status: Some(0),
                duration_s: 1.0,
                ..Default::default()
            })
            .unwrap();
        }
        let r = ProfileReader::open(&path).unwrap();
        let runs = r.runs().unwrap();
        assert_eq!(runs.len(), 2);
        assert!(runs.iter().all(|r| r.complete && r.exit_status == Some(0)));
        assert_eq!(
            r.images().unwrap().len(),
            2,
            "images are shared across runs"
        );
        let procs = r.processes().unwrap();
        let loops: Vec<String> = procs
            .iter()
            .filter(|p| p.comm == "loop")
            .map(|p| p.appid())
            .collect();
        assert_eq!(loops, vec!["loop#1", "loop#2"]);
        assert_eq!(procs[0].user_samples, 18);
        let ev = r.events().unwrap();
        assert_eq!(
            (ev[0].requested.as_str(), ev[0].used.as_str(), ev[0].samples),
            ("cycles", "cpu-clock", 14)
        );
        assert_eq!(ev[0].mean_period(), Some(250_000.0));
        let epochs = r.epochs().unwrap();
        let first = r.counts(Some(&[epochs[0].id])).unwrap();
        let hot = first
            .iter()
            .find(|c| c.offset == 0x1139 && c.count > 1)
            .unwrap();
        assert_eq!(hot.count, 15);
        let second = r.counts(Some(&[epochs[1].id])).unwrap();
        assert_eq!(
            second
                .iter()
                .find(|c| c.offset == 0x1139 && c.count > 1)
                .unwrap()
                .count,
            16
        );
        assert_eq!(r.counts(None).unwrap().len(), 6);
        assert_eq!(
            r.stats(runs[0].id).unwrap(),
            vec![("samples".to_string(), 14)]
        );
    }

    #[test]
    fn kernel_offsets_keep_their_64_bit_pattern() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.db");
        let mut w = ProfileWriter::open(&path).unwrap();
        w.begin_run(&run_info(), &[event()]).unwrap();
        let addr = 0xffff_ffff_8100_0123u64;
        w.flush(&FlushBatch {
            new_images: vec![(0, image("k"))],
            new_processes: vec![(1, process("x", 1))],
            counts: vec![(1, 0, addr, 0, 1)],
            ..Default::default()
        })
        .unwrap();
        let r = ProfileReader::open(&path).unwrap();
        assert_eq!(r.counts(None).unwrap()[0].offset, addr);
    }
}
