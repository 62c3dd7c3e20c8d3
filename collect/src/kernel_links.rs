//! pkprof's process-labeled kernel attribution: kernel work done on behalf
//! of a process other than the one the CPU was running is charged to the
//! process it served.
//!
//! Synchronous work (system calls, page faults) already lands on the current
//! task and stays there. Asynchronous work is followed through tracepoints
//! read in the same time-ordered stream as the samples:
//! - softirqs (`irq:softirq_entry/exit`, e.g. NET_RX receive processing, BLOCK
//!   completion, tasklets) and hardirq handlers (`irq:irq_handler_entry/exit`):
//!   the kernel samples taken inside one run of the handler go to the tasks
//!   it woke (`sched:sched_waking`, shared evenly); with no wake-up they stay
//!   where they were (counted as unlinked);
//! - workqueue items (`workqueue:workqueue_execute_start/end`, per kworker
//!   thread): the item's samples go to the tasks it woke, else to the user
//!   process that queued it (`workqueue:workqueue_queue_work` from process
//!   context), else stay with the kworker.
//!
//! Not covered: kernel threads other than kworkers and ksoftirqd (kswapd,
//! jbd2, ...: their samples stay with the thread), work that wakes nobody and
//! was queued from interrupt context, wake-ups from timer interrupts (the
//! local timer has no irq_handler tracepoint), and chains longer than one
//! hop (a softirq that wakes a kworker charges the kworker, not the process
//! the kworker later wakes). With cpu-clock sampling (no PMU) hardirq
//! handlers never hold samples (the sampling timer cannot interrupt them), so
//! their tracepoints are opened only when a hardware event is sampled.

use crate::error::{CollectError, Result};
use crate::fast_hash::FastHash;
use crate::latency::tracefs::{field_offset, tracepoint_id, Tracepoint};
use crate::records::{SAMPLE_CPU, SAMPLE_IDENTIFIER, SAMPLE_TID, SAMPLE_TIME};
use perf_event::{Builder, Clock, Counter, SampleFlag, Sampler};
use std::collections::HashMap;

const SAMPLE_RAW: u64 = 1 << 10;

/// The open link tracepoints, each writing into its CPU's sample ring so
/// links and samples of a CPU come in one time-ordered stream.
pub struct LinkEvents {
    pub counters: Vec<Counter>,
    /// Event id → tracepoint.
    pub points: HashMap<u64, LinkTracepoint, FastHash>,
}

/// Opens the link tracepoints on every CPU into `rings` (one per CPU).
/// Without `hardirq` the irq_handler pair is left closed: when every sampled
/// event is a software timer (cpu-clock), no sample can land inside a
/// hardirq handler, so tracing them would be pure cost.
pub fn open(rings: &[Sampler], hardirq: bool) -> Result<LinkEvents> {
    let mut tps = tracepoints()?;
    if !hardirq {
        tps.retain(|t| !matches!(t.point, LinkPoint::IrqEntry | LinkPoint::IrqExit));
    }
    let mut counters = Vec::new();
    let mut points = HashMap::default();
    for (cpu, ring) in rings.iter().enumerate() {
        for tp in &tps {
            let mut b = Builder::new(Tracepoint(tp.id));
            b.one_cpu(cpu)
                .any_pid()
                .sample(SampleFlag::from_bits_truncate(
                    SAMPLE_IDENTIFIER | SAMPLE_TID | SAMPLE_TIME | SAMPLE_CPU | SAMPLE_RAW,
                ))
                .sample_period(1)
                .sample_id_all(true)
                .clockid(Clock::MONOTONIC)
                .exclude_kernel(false)
                .enabled(true);
            let c = b.build().map_err(|source| CollectError::PerfOpen {
                event: format!("kernel-link tracepoint {:?}", tp.point),
                cpu: cpu as i32,
                source,
            })?;
            crate::perf_setup::share_ring(&c, ring, cpu)?;
            points.insert(c.id(), *tp);
            counters.push(c);
        }
    }
    Ok(LinkEvents { counters, points })
}

/// Which tracepoint a record came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkPoint {
    Waking,
    SoftirqEntry,
    SoftirqExit,
    IrqEntry,
    IrqExit,
    QueueWork,
    WorkStart,
    WorkEnd,
}

impl LinkPoint {
    pub const ALL: [(LinkPoint, &'static str, &'static str, &'static str); 8] = [
        (LinkPoint::Waking, "sched", "sched_waking", "pid"),
        (LinkPoint::SoftirqEntry, "irq", "softirq_entry", "vec"),
        (LinkPoint::SoftirqExit, "irq", "softirq_exit", "vec"),
        (LinkPoint::IrqEntry, "irq", "irq_handler_entry", "irq"),
        (LinkPoint::IrqExit, "irq", "irq_handler_exit", "irq"),
        (
            LinkPoint::QueueWork,
            "workqueue",
            "workqueue_queue_work",
            "work",
        ),
        (
            LinkPoint::WorkStart,
            "workqueue",
            "workqueue_execute_start",
            "work",
        ),
        (
            LinkPoint::WorkEnd,
            "workqueue",
            "workqueue_execute_end",
            "work",
        ),
    ];
}

/// A tracepoint id with where its one interesting field lies.
#[derive(Debug, Clone, Copy)]
pub struct LinkTracepoint {
    pub point: LinkPoint,
    pub id: u64,
    pub offset: usize,
    /// Field width in bytes (8 for the work pointer, else 4).
    pub width: usize,
}

/// Looks the link tracepoints up in tracefs.
pub fn tracepoints() -> Result<Vec<LinkTracepoint>> {
    LinkPoint::ALL
        .iter()
        .map(|&(point, group, name, field)| {
            Ok(LinkTracepoint {
                point,
                id: tracepoint_id(group, name)?,
                offset: field_offset(group, name, field)?,
                width: if field == "work" { 8 } else { 4 },
            })
        })
        .collect()
}

/// One link record: which point, on which CPU, by which task, its field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkRecord {
    pub point: LinkPoint,
    pub pid: u32,
    pub tid: u32,
    pub time: u64,
    pub cpu: u32,
    pub arg: u64,
}

/// How asynchronous work reached the process it is charged to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Link {
    Softirq(u32),
    Irq(u32),
    /// A workqueue item that woke the process.
    WorkWake,
    /// A workqueue item the process queued.
    WorkQueued,
}

const SOFTIRQ_NAMES: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

impl Link {
    /// As stored in the database: `softirq NET_RX`, `irq 11`, `workqueue wake`, `workqueue queued`.
    pub fn label(&self) -> String {
        match self {
            Link::Softirq(v) => format!(
                "softirq {}",
                SOFTIRQ_NAMES.get(*v as usize).copied().unwrap_or("?")
            ),
            Link::Irq(n) => format!("irq {n}"),
            Link::WorkWake => "workqueue wake".into(),
            Link::WorkQueued => "workqueue queued".into(),
        }
    }
}

/// Kernel samples waiting for the process they will be charged to:
/// (interrupted instance, pc, event) → count.
type Pending = HashMap<(u32, u64, u16), u64, FastHash>;

#[derive(Debug, Default)]
struct Context {
    pending: Pending,
    /// Thread ids woken inside the context.
    wakees: Vec<u32>,
    /// Work item: the process (tgid) that queued it from process context.
    queued_by: Option<u32>,
}

/// A charge: samples of `from` (instance) moved to the process `to_pid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Charge {
    pub from: u32,
    pub to_pid: u32,
    pub pc: u64,
    pub event: u16,
    pub count: u64,
    pub link: Link,
    pub time: u64,
}

#[derive(Debug, Default, Clone, Copy)]
pub struct LinkStats {
    pub charged_samples: u64,
    pub unlinked_async_samples: u64,
    pub wakeups_seen: u64,
}

/// Most queued-but-not-started work items remembered.
const MAX_QUEUED: usize = 65_536;

/// Follows contexts and wake-ups; emits charges.
#[derive(Debug, Default)]
pub struct LinkTracker {
    /// Per CPU: (softirq vector, its context).
    softirq: Vec<Option<(u32, Context)>>,
    /// Per CPU: (irq number, its context).
    irq: Vec<Option<(u32, Context)>>,
    /// Per kworker thread: its running work item.
    work: HashMap<u32, Context, FastHash>,
    /// Work pointer → tgid of the process that queued it.
    queued: HashMap<u64, u32, FastHash>,
    /// Thread id → process id, from FORK records.
    tgid: HashMap<u32, u32, FastHash>,
    pub stats: LinkStats,
}

impl LinkTracker {
    pub fn new(ncpu: usize) -> Self {
        LinkTracker {
            softirq: (0..ncpu).map(|_| None).collect(),
            irq: (0..ncpu).map(|_| None).collect(),
            ..Default::default()
        }
    }

    /// A new thread (FORK record with pid ≠ tid).
    pub fn on_thread(&mut self, pid: u32, tid: u32) {
        if pid != tid {
            self.tgid.insert(tid, pid);
        }
    }

    pub fn on_exit(&mut self, tid: u32) {
        self.tgid.remove(&tid);
        if let Some(ctx) = self.work.remove(&tid) {
            self.stats.unlinked_async_samples += ctx.pending.values().sum::<u64>();
        }
    }

    fn process_of(&self, tid: u32) -> u32 {
        self.tgid.get(&tid).copied().unwrap_or(tid)
    }

    /// The context a record on `cpu` by `tid` runs in (innermost first).
    fn context(&mut self, cpu: usize, tid: u32) -> Option<&mut Context> {
        if let Some(Some((_, c))) = self.irq.get_mut(cpu) {
            return Some(c);
        }
        if let Some(Some((_, c))) = self.softirq.get_mut(cpu) {
            return Some(c);
        }
        self.work.get_mut(&tid)
    }

    /// A kernel-mode sample of `instance`; true when it is asynchronous work.
    pub fn on_sample(&mut self, cpu: u32, tid: u32, instance: u32, pc: u64, event: u16) -> bool {
        match self.context(cpu as usize, tid) {
            Some(c) => {
                *c.pending.entry((instance, pc, event)).or_insert(0) += 1;
                true
            }
            None => false,
        }
    }

    /// A link record; charges made are appended to `out`.
    pub fn on_record(&mut self, r: &LinkRecord, out: &mut Vec<Charge>) {
        let cpu = r.cpu as usize;
        if cpu >= self.softirq.len() {
            self.softirq.resize_with(cpu + 1, || None);
            self.irq.resize_with(cpu + 1, || None);
        }
        match r.point {
            LinkPoint::Waking => {
                self.stats.wakeups_seen += 1;
                let wakee = r.arg as u32;
                if let Some(c) = self.context(cpu, r.tid) {
                    c.wakees.push(wakee);
                }
            }
            LinkPoint::SoftirqEntry => self.softirq[cpu] = Some((r.arg as u32, Context::default())),
            LinkPoint::SoftirqExit => {
                if let Some((v, c)) = self.softirq[cpu].take() {
                    self.settle(c, Link::Softirq(v), Link::Softirq(v), r.time, out);
                }
            }
            LinkPoint::IrqEntry => self.irq[cpu] = Some((r.arg as u32, Context::default())),
            LinkPoint::IrqExit => {
                if let Some((n, c)) = self.irq[cpu].take() {
                    self.settle(c, Link::Irq(n), Link::Irq(n), r.time, out);
                }
            }
            LinkPoint::QueueWork => {
                // From process context only: queued inside a handler or by a
                // kworker, the item serves whoever that work served.
                let in_handler = self.irq[cpu].is_some() || self.softirq[cpu].is_some();
                if !in_handler && !self.work.contains_key(&r.tid) && r.pid != 0 {
                    if self.queued.len() >= MAX_QUEUED {
                        self.queued.clear();
                    }
                    self.queued.insert(r.arg, r.pid);
                }
            }
            LinkPoint::WorkStart => {
                let queued_by = self.queued.remove(&r.arg);
                if let Some(old) = self.work.insert(
                    r.tid,
                    Context {
                        queued_by,
                        ..Default::default()
                    },
                ) {
                    self.stats.unlinked_async_samples += old.pending.values().sum::<u64>();
                }
            }
            LinkPoint::WorkEnd => {
                if let Some(c) = self.work.remove(&r.tid) {
                    self.settle(c, Link::WorkWake, Link::WorkQueued, r.time, out);
                }
            }
        }
    }

    /// Shares a finished context's samples among the tasks it woke (or the
    /// process that queued it).
    fn settle(&mut self, c: Context, woke: Link, queued: Link, time: u64, out: &mut Vec<Charge>) {
        if c.pending.is_empty() {
            return;
        }
        let mut to: Vec<u32> = c.wakees.iter().map(|&t| self.process_of(t)).collect();
        to.sort_unstable();
        to.dedup();
        let link = if to.is_empty() {
            match c.queued_by {
                Some(p) => {
                    to.push(p);
                    queued
                }
                None => {
                    self.stats.unlinked_async_samples += c.pending.values().sum::<u64>();
                    return;
                }
            }
        } else {
            woke
        };
        let k = to.len() as u64;
        // Whose turn it is to take the next leftover sample, so remainders
        // are spread over the wakees instead of all going to the first.
        let mut turn = 0usize;
        let mut pending: Vec<_> = c.pending.into_iter().collect();
        pending.sort_unstable();
        for ((from, pc, event), n) in pending {
            self.stats.charged_samples += n;
            let mut shares = vec![n / k; to.len()];
            for _ in 0..n % k {
                shares[turn] += 1;
                turn = (turn + 1) % to.len();
            }
            for (&to_pid, count) in to.iter().zip(shares) {
                if count > 0 {
                    out.push(Charge {
                        from,
                        to_pid,
                        pc,
                        event,
                        count,
                        link,
                        time,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(point: LinkPoint, cpu: u32, tid: u32, arg: u64, time: u64) -> LinkRecord {
        LinkRecord {
            point,
            pid: tid,
            tid,
            time,
            cpu,
            arg,
        }
    }

    #[test]
    fn softirq_work_goes_to_the_woken_process() {
        let mut t = LinkTracker::new(2);
        let mut out = Vec::new();
        t.on_thread(500, 501); // thread 501 of process 500
        assert!(
            !t.on_sample(0, 100, 7, 0xffff_ffff_8100_0000, 0),
            "process context"
        );
        t.on_record(&rec(LinkPoint::SoftirqEntry, 0, 100, 3, 1), &mut out);
        for _ in 0..3 {
            assert!(t.on_sample(0, 100, 7, 0xffff_ffff_8100_0010, 0));
        }
        // Another CPU is not inside the softirq.
        assert!(!t.on_sample(1, 200, 9, 0xffff_ffff_8100_0010, 0));
        t.on_record(&rec(LinkPoint::Waking, 0, 100, 501, 2), &mut out);
        t.on_record(&rec(LinkPoint::SoftirqExit, 0, 100, 3, 3), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].to_pid, 500, "thread mapped to its process");
        assert_eq!((out[0].from, out[0].count), (7, 3));
        assert_eq!(out[0].link.label(), "softirq NET_RX");
        assert_eq!(t.stats.charged_samples, 3);
    }

    #[test]
    fn shares_are_even_and_sum_to_the_samples() {
        let mut t = LinkTracker::new(1);
        let mut out = Vec::new();
        t.on_record(&rec(LinkPoint::IrqEntry, 0, 0, 11, 1), &mut out);
        for pc in [1u64, 2] {
            for _ in 0..5 {
                t.on_sample(0, 0, 1, pc, 0);
            }
        }
        for w in [10, 20, 30] {
            t.on_record(&rec(LinkPoint::Waking, 0, 0, w, 2), &mut out);
        }
        t.on_record(&rec(LinkPoint::IrqExit, 0, 0, 11, 3), &mut out);
        assert_eq!(out.iter().map(|c| c.count).sum::<u64>(), 10);
        let per = |p: u32| {
            out.iter()
                .filter(|c| c.to_pid == p)
                .map(|c| c.count)
                .sum::<u64>()
        };
        let mut shares = [per(10), per(20), per(30)];
        shares.sort();
        assert_eq!(shares, [3, 3, 4]);
    }

    #[test]
    fn work_items_go_to_wakees_else_to_who_queued_them() {
        let mut t = LinkTracker::new(1);
        let mut out = Vec::new();
        let kworker = 50;
        // Process 300 queues work 0xabc; the kworker runs it and wakes nobody.
        t.on_record(
            &LinkRecord {
                pid: 300,
                ..rec(LinkPoint::QueueWork, 0, 300, 0xabc, 1)
            },
            &mut out,
        );
        t.on_record(&rec(LinkPoint::WorkStart, 0, kworker, 0xabc, 2), &mut out);
        t.on_sample(0, kworker, 4, 0xffff_ffff_8200_0000, 0);
        t.on_record(&rec(LinkPoint::WorkEnd, 0, kworker, 0xabc, 3), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].to_pid, out[0].link), (300, Link::WorkQueued));
        // Work queued from a softirq that wakes 77.
        out.clear();
        t.on_record(&rec(LinkPoint::SoftirqEntry, 0, 9, 1, 4), &mut out);
        t.on_record(&rec(LinkPoint::QueueWork, 0, 9, 0xdef, 5), &mut out);
        t.on_record(&rec(LinkPoint::SoftirqExit, 0, 9, 1, 6), &mut out);
        t.on_record(&rec(LinkPoint::WorkStart, 0, kworker, 0xdef, 7), &mut out);
        t.on_sample(0, kworker, 4, 0xffff_ffff_8200_0000, 0);
        t.on_record(&rec(LinkPoint::Waking, 0, kworker, 77, 8), &mut out);
        t.on_record(&rec(LinkPoint::WorkEnd, 0, kworker, 0xdef, 9), &mut out);
        assert_eq!((out[0].to_pid, out[0].link), (77, Link::WorkWake));
        // A work item with no wake-up and no queuing process stays unlinked.
        out.clear();
        t.on_record(&rec(LinkPoint::WorkStart, 0, kworker, 0x123, 10), &mut out);
        t.on_sample(0, kworker, 4, 0xffff_ffff_8200_0000, 0);
        t.on_record(&rec(LinkPoint::WorkEnd, 0, kworker, 0x123, 11), &mut out);
        assert!(out.is_empty());
        assert_eq!(t.stats.unlinked_async_samples, 1);
    }
}
