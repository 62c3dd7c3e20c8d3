//! The latency driver: raw_syscalls:sys_enter/sys_exit tracepoints through
//! perf_event_open, one event pair per CPU (per thread when attaching) with
//! every event of a CPU writing into that CPU's ring. Each round the records
//! of all rings are ordered by time; an enter is paired with the same
//! thread's exit and the latency, in CPU cycles, goes into a log2 bucket per
//! (process instance, operation, interval). Buckets, not records, go to the
//! daemon at each flush.
//!
//! Scheduler wait layer: PERF_RECORD_SWITCH records give, per thread, the
//! time from being preempted (switched out while runnable) to running again,
//! recorded as the operation `sched:preempted`. Wake-up latency (sleeping →
//! running) needs the waker's sched_wakeup, which per-task events do not
//! see; it is not covered, nor are page-fault or block-I/O latencies.

use super::histogram::bucket_of;
use super::syscall_names;
use super::tracefs::{tracepoint_id, Tracepoint};
use crate::daemon::DaemonMsg;
use crate::error::{CollectError, Result};
use crate::fast_hash::FastHash;
use crate::perf_setup::Target;
use crate::process_tracker::{ProcEvent, ProcessTracker};
use crate::procfs;
use crate::records::{self, PerfRecord, SAMPLE_CPU, SAMPLE_IDENTIFIER, SAMPLE_TID, SAMPLE_TIME};
use crate::ring_loop::{self, RingConsumer};
use crate::stats::CollectorStats;
use perf_event::{Builder, Clock, Counter, SampleFlag, Sampler};
use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc};
use std::time::Duration;

const SAMPLE_RAW: u64 = 1 << 10;
const SAMPLE_TYPE: u64 = SAMPLE_IDENTIFIER | SAMPLE_TID | SAMPLE_TIME | SAMPLE_CPU | SAMPLE_RAW;
const RECORD_SWITCH: u32 = 14;
const RECORD_SWITCH_CPU_WIDE: u32 = 15;
const MISC_SWITCH_OUT: u16 = 1 << 13;
const MISC_SWITCH_OUT_PREEMPT: u16 = 1 << 14;

/// Operation code of the scheduler-wait layer (syscall numbers are below it).
pub const OP_SCHED_PREEMPTED: u32 = 100_000;

/// Name of an operation code.
pub fn op_name(op: u32) -> String {
    if op == OP_SCHED_PREEMPTED {
        "sched:preempted".into()
    } else {
        syscall_names::name(op as i64)
    }
}

/// The open tracepoint events.
pub struct LatencyEvents {
    rings: Vec<Sampler>,
    others: Vec<Counter>,
    /// Event id → true for sys_enter, false for sys_exit.
    is_enter: HashMap<u64, bool>,
}

/// Opens sys_enter/sys_exit for `target` on every CPU.
pub fn open(target: &Target, ring_bytes: usize, sched_layer: bool) -> Result<LatencyEvents> {
    let enter = tracepoint_id("raw_syscalls", "sys_enter")?;
    let exit = tracepoint_id("raw_syscalls", "sys_exit")?;
    let ncpu = dcpi_models::host::online_cpus() as usize;
    let pids: Vec<Option<u32>> = match target {
        Target::Command { pid } => vec![Some(*pid)],
        Target::Pid { pid } => procfs::threads(*pid).into_iter().map(Some).collect(),
        Target::SystemWide => vec![None],
    };
    if pids.is_empty() {
        return Err(CollectError::Usage("no such process to attach to".into()));
    }
    let command = matches!(target, Target::Command { .. });
    let mut rings = Vec::new();
    let mut others = Vec::new();
    let mut is_enter = HashMap::new();
    for cpu in 0..ncpu {
        let mut ring: Option<Sampler> = None;
        for pid in &pids {
            for (first, id) in [(true, enter), (false, exit)] {
                let mut b = Builder::new(Tracepoint(id));
                b.one_cpu(cpu);
                match pid {
                    Some(p) => b.observe_pid(*p as i32),
                    None => b.any_pid(),
                };
                b.sample(SampleFlag::from_bits_truncate(SAMPLE_TYPE));
                b.sample_period(1);
                b.sample_id_all(true);
                b.clockid(Clock::MONOTONIC);
                b.exclude_kernel(false);
                b.inherit(command);
                b.enable_on_exec(command);
                b.enabled(!command);
                b.wakeup_watermark(ring_bytes / 4);
                if first {
                    b.comm(true).comm_exec(true).task(true);
                    if sched_layer {
                        b.context_switch(true);
                    }
                }
                let counter = b.build().map_err(|source| match source.raw_os_error() {
                    Some(libc::EACCES) | Some(libc::EPERM) => CollectError::Paranoid {
                        paranoid: procfs::perf_event_paranoid(),
                        source,
                    },
                    _ => CollectError::PerfOpen {
                        event: "raw_syscalls tracepoints".into(),
                        cpu: cpu as i32,
                        source,
                    },
                })?;
                is_enter.insert(counter.id(), first);
                match &ring {
                    None => {
                        ring = Some(counter.sampled(ring_bytes).map_err(|source| {
                            CollectError::PerfSetup {
                                what: format!("mapping the ring buffer of cpu {cpu}"),
                                source,
                            }
                        })?)
                    }
                    Some(r) => {
                        crate::perf_setup::share_ring(&counter, r, cpu)?;
                        others.push(counter);
                    }
                }
            }
        }
        rings.extend(ring);
    }
    Ok(LatencyEvents {
        rings,
        others,
        is_enter,
    })
}

/// A record of the latency capture, in time order.
#[derive(Debug)]
pub enum LatRecord {
    Sys {
        enter: bool,
        pid: u32,
        tid: u32,
        time: u64,
        nr: i64,
    },
    SwitchOut {
        tid: u32,
        pid: u32,
        time: u64,
        preempted: bool,
    },
    SwitchIn {
        tid: u32,
        time: u64,
    },
    Other(PerfRecord),
}

impl LatRecord {
    fn time(&self) -> u64 {
        match self {
            LatRecord::Sys { time, .. }
            | LatRecord::SwitchOut { time, .. }
            | LatRecord::SwitchIn { time, .. } => *time,
            LatRecord::Other(r) => r.time(),
        }
    }
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Parses one record of the latency events.
fn parse(kind: u32, misc: u16, body: &[u8], is_enter: &HashMap<u64, bool>) -> Option<LatRecord> {
    match kind {
        records::RECORD_SAMPLE => {
            // identifier, pid, tid, time, cpu, res, raw size, raw.
            let id = u64_at(body, 0)?;
            let pid = u32_at(body, 8)?;
            let tid = u32_at(body, 12)?;
            let time = u64_at(body, 16)?;
            let raw_size = u32_at(body, 32)? as usize;
            let raw = body.get(36..36 + raw_size)?;
            // Tracepoint data: 8 bytes of common fields, then `long id`.
            let nr = u64_at(raw, 8)? as i64;
            Some(LatRecord::Sys {
                enter: *is_enter.get(&id)?,
                pid,
                tid,
                time,
                nr,
            })
        }
        RECORD_SWITCH | RECORD_SWITCH_CPU_WIDE => {
            // The sample_id trailer names the task switching (out: prev, in: next).
            let t = body.len().checked_sub(32)?;
            let pid = u32_at(body, t)?;
            let tid = u32_at(body, t + 4)?;
            let time = u64_at(body, t + 8)?;
            if misc & MISC_SWITCH_OUT != 0 {
                Some(LatRecord::SwitchOut {
                    tid,
                    pid,
                    time,
                    preempted: misc & MISC_SWITCH_OUT_PREEMPT != 0,
                })
            } else {
                Some(LatRecord::SwitchIn { tid, time })
            }
        }
        _ => records::parse(kind, misc, body).map(LatRecord::Other),
    }
}

/// Bucket key: (instance serial, operation, interval, bucket).
type Key = (u32, u32, u32, i32);

/// Capture settings.
#[derive(Debug, Clone, Copy)]
pub struct TracerConfig {
    pub resolution: u32,
    pub interval: Option<Duration>,
    pub flush_interval: Duration,
    pub core_hz: f64,
}

/// The latency driver.
pub struct Tracer {
    events: LatencyEvents,
    tracker: ProcessTracker,
    tx: mpsc::Sender<DaemonMsg>,
    config: TracerConfig,
    start_ns: u64,
    /// tid → (syscall nr, enter time, instance).
    pending: HashMap<u32, (i64, u64, u32), FastHash>,
    /// tid → (preempted at, instance).
    preempted: HashMap<u32, (u64, u32), FastHash>,
    buckets: HashMap<Key, (u64, u64), FastHash>,
    proc_out: Vec<ProcEvent>,
    calls: u64,
    unpaired: u64,
    stats: CollectorStats,
}

impl Tracer {
    pub fn new(events: LatencyEvents, tx: mpsc::Sender<DaemonMsg>, config: TracerConfig) -> Self {
        Tracer {
            events,
            tracker: ProcessTracker::new(),
            tx,
            config,
            start_ns: crate::driver::monotonic_ns(),
            pending: HashMap::default(),
            preempted: HashMap::default(),
            buckets: HashMap::default(),
            proc_out: Vec::new(),
            calls: 0,
            unpaired: 0,
            stats: CollectorStats::default(),
        }
    }

    pub fn register_root(&mut self, pid: u32, comm: &str, cmdline: &str) {
        self.tracker
            .register_root(pid, comm, cmdline, &mut self.proc_out);
        self.send_proc_events();
    }

    pub fn seed(&mut self, pids: &[u32]) {
        self.tracker
            .seed_all(pids, crate::driver::monotonic_ns(), &mut self.proc_out);
        self.send_proc_events();
    }

    fn send_proc_events(&mut self) {
        for e in self.proc_out.drain(..) {
            // Address spaces are not needed for latency profiles.
            if !matches!(e, ProcEvent::Map { .. }) {
                let _ = self.tx.send(DaemonMsg::Proc(e));
            }
        }
    }

    /// Runs until `stop`, then drains and sends `Finish`.
    pub fn run(mut self, stop: Arc<AtomicBool>) {
        let interval = self.config.flush_interval;
        ring_loop::run(&mut self, &stop, interval);
    }

    fn add(&mut self, serial: u32, op: u32, start: u64, end: u64) {
        let ns = end.saturating_sub(start);
        let cycles = (ns as f64 * self.config.core_hz / 1e9) as u64;
        let interval = match self.config.interval {
            Some(iv) => (start.saturating_sub(self.start_ns) / iv.as_nanos().max(1) as u64) as u32,
            None => 0,
        };
        let b = bucket_of(cycles, self.config.resolution);
        let e = self
            .buckets
            .entry((serial, op, interval, b))
            .or_insert((0, 0));
        e.0 += 1;
        e.1 += cycles;
    }

    fn process_record(&mut self, r: LatRecord) {
        match r {
            LatRecord::Sys {
                enter: true,
                pid,
                tid,
                time,
                nr,
            } => {
                self.stats.samples += 1;
                let serial = self.tracker.instance_of(pid, time, &mut self.proc_out);
                if !self.proc_out.is_empty() {
                    self.send_proc_events();
                }
                if self.pending.insert(tid, (nr, time, serial)).is_some() {
                    self.unpaired += 1; // the previous exit was lost
                }
            }
            LatRecord::Sys {
                enter: false,
                tid,
                time,
                nr,
                ..
            } => {
                self.stats.samples += 1;
                match self.pending.remove(&tid) {
                    Some((enr, t0, serial)) if enr == nr => {
                        self.calls += 1;
                        self.add(serial, nr as u32, t0, time);
                    }
                    // Entered before the capture started, or a record was lost.
                    _ => self.unpaired += 1,
                }
            }
            LatRecord::SwitchOut {
                tid,
                pid,
                time,
                preempted,
            } => {
                if preempted {
                    let serial = self.tracker.instance_of(pid, time, &mut self.proc_out);
                    if !self.proc_out.is_empty() {
                        self.send_proc_events();
                    }
                    self.preempted.insert(tid, (time, serial));
                } else {
                    self.preempted.remove(&tid);
                }
            }
            LatRecord::SwitchIn { tid, time } => {
                if let Some((t0, serial)) = self.preempted.remove(&tid) {
                    self.add(serial, OP_SCHED_PREEMPTED, t0, time);
                }
            }
            LatRecord::Other(PerfRecord::Comm {
                time,
                pid,
                tid: _,
                comm,
                exec,
            }) => {
                self.tracker
                    .on_comm(time, pid, &comm, exec, &mut self.proc_out);
                self.send_proc_events();
            }
            LatRecord::Other(PerfRecord::Fork { time, task }) => {
                self.tracker.on_fork(time, task, &mut self.proc_out);
                self.send_proc_events();
            }
            LatRecord::Other(PerfRecord::Exit { time, task }) => {
                self.pending.remove(&task.tid);
                self.preempted.remove(&task.tid);
                self.tracker.on_exit(time, task, &mut self.proc_out);
                self.send_proc_events();
            }
            LatRecord::Other(PerfRecord::Lost { lost, .. }) => self.stats.lost_records += lost,
            LatRecord::Other(PerfRecord::LostSamples { lost, .. }) => {
                self.stats.lost_samples += lost
            }
            LatRecord::Other(_) => {}
        }
    }

    fn flush_all(&mut self, last: bool) {
        let rows = self
            .buckets
            .drain()
            .map(|((serial, op, interval, bucket), (n, cycles))| {
                (serial, op_name(op), interval, bucket, n, cycles)
            })
            .collect();
        let lost = self.stats.lost_records + self.stats.lost_samples;
        let _ = self
            .tx
            .send(DaemonMsg::Latency(rows, (self.calls, self.unpaired, lost)));
        let mut stats = self.stats.clone();
        stats.processes = self.tracker.started;
        let msg = if last {
            DaemonMsg::Finish(Box::new(stats), Default::default())
        } else {
            DaemonMsg::Flush(Box::new(stats), Default::default())
        };
        let _ = self.tx.send(msg);
    }
}

impl RingConsumer for Tracer {
    type Record = LatRecord;
    fn rings_and_parser(&mut self) -> (&mut [Sampler], ring_loop::Parser<'_, LatRecord>) {
        let is_enter = &self.events.is_enter;
        (
            &mut self.events.rings,
            Box::new(move |k, m, b| parse(k, m, b, is_enter)),
        )
    }
    fn fds(&self) -> Vec<i32> {
        crate::perf_setup::event_fds(&self.events.rings, &self.events.others)
    }
    fn time(r: &LatRecord) -> u64 {
        r.time()
    }
    fn process(&mut self, r: LatRecord) {
        self.process_record(r)
    }
    fn malformed(&mut self) {
        self.stats.malformed_records += 1;
    }
    fn flush(&mut self, last: bool) {
        self.flush_all(last)
    }
}
