//! The driver: DCPI's interrupt-time half, in a user thread.
//!
//! One thread reads every CPU's perf ring. Each round it takes what the rings
//! hold, orders the records by time (so a FORK, COMM or MMAP2 seen on one CPU
//! is applied before a later sample of the same process on another CPU), and
//! then for each sample increments the (instance, pc, event) entry of that
//! CPU's hash table; entries evicted from a table go to that CPU's pair of
//! overflow buffers and on to the daemon. Process events go to the daemon on
//! the same channel, in order. Every flush interval all tables are emptied and
//! a flush marker is sent.
//!
//! Why one thread and not one per CPU: ordering sideband records across CPUs
//! is exact within a round only if one reader sees all rings; the per-CPU
//! tables keep DCPI's structure (and its cache behaviour per CPU's stream).

use crate::control::Controls;
use crate::daemon::DaemonMsg;
use crate::fast_hash::FastHash;
use crate::hashtable::SampleTable;
use crate::kernel_links::{Charge, Link, LinkEvents, LinkTracepoint, LinkTracker};
use crate::overflow::OverflowPair;
use crate::perf_setup::{set_period, OpenEvents};
use crate::process_tracker::{ProcEvent, ProcessTracker};
use crate::records::{self, PerfRecord};
use crate::ring_loop::{self, RingConsumer};
use crate::stats::CollectorStats;
use perf_event::Sampler;
use std::collections::HashMap;
use std::os::fd::AsRawFd;
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// Tunables of the aggregation core.
#[derive(Debug, Clone, Copy)]
pub struct DriverConfig {
    /// Buckets per CPU table (4 entries each).
    pub table_buckets: usize,
    /// Entries per overflow buffer.
    pub overflow_capacity: usize,
    pub flush_interval: Duration,
    /// Randomize fixed periods by ± this fraction (0 = off).
    pub period_jitter: f64,
}

impl Default for DriverConfig {
    fn default() -> Self {
        DriverConfig {
            table_buckets: 16 * 1024,
            overflow_capacity: 8 * 1024,
            flush_interval: Duration::from_secs(1),
            period_jitter: crate::perf_setup::PERIOD_JITTER,
        }
    }
}

/// Aggregates samples of one run.
pub struct Driver {
    events: OpenEvents,
    tracker: ProcessTracker,
    tables: Vec<SampleTable>,
    pairs: Vec<OverflowPair<mpsc::Sender<DaemonMsg>>>,
    tx: mpsc::Sender<DaemonMsg>,
    config: DriverConfig,
    stats: CollectorStats,
    event_totals: Vec<(u64, u64)>,
    proc_out: Vec<ProcEvent>,
    rng: u64,
    next_jitter: Instant,
    controls: Option<Arc<Controls>>,
    links: Option<LinkTracker>,
    link_points: HashMap<u64, LinkTracepoint, FastHash>,
    link_counters: Vec<perf_event::Counter>,
    /// (from instance, to instance, pc, event, link) → samples, until the next flush.
    charges: HashMap<(u32, u32, u64, u16, Link), u64, FastHash>,
    charge_out: Vec<Charge>,
}

impl Driver {
    pub fn new(events: OpenEvents, tx: mpsc::Sender<DaemonMsg>, config: DriverConfig) -> Self {
        let ncpu = events.rings.len().max(1);
        let tables = (0..ncpu)
            .map(|_| SampleTable::new(config.table_buckets))
            .collect();
        let pairs = (0..ncpu)
            .map(|cpu| OverflowPair::new(cpu as u32, config.overflow_capacity, tx.clone()))
            .collect();
        let nev = events.configs.len();
        Driver {
            events,
            tracker: ProcessTracker::new(),
            tables,
            pairs,
            tx,
            config,
            stats: CollectorStats::default(),
            event_totals: vec![(0, 0); nev],
            proc_out: Vec::new(),
            rng: 0x2545_F491_4F6C_DD1D ^ std::process::id() as u64,
            next_jitter: Instant::now(),
            controls: None,
            links: None,
            link_points: HashMap::default(),
            link_counters: Vec::new(),
            charges: HashMap::default(),
            charge_out: Vec::new(),
        }
    }

    /// pkprof: follow softirqs, interrupts, work items and wake-ups.
    pub fn with_links(mut self, links: LinkEvents) -> Self {
        self.links = Some(LinkTracker::new(self.tables.len()));
        self.link_points = links.points;
        self.link_counters = links.counters;
        self
    }

    /// Continuous mode: flushes and epochs on request.
    pub fn with_controls(mut self, controls: Arc<Controls>) -> Self {
        self.controls = Some(controls);
        self
    }

    /// Pre-registers the command dcpi holds before its exec.
    pub fn register_root(&mut self, pid: u32, comm: &str, cmdline: &str) {
        self.tracker
            .register_root(pid, comm, cmdline, &mut self.proc_out);
        self.send_proc_events();
    }

    /// Registers processes that already run (attach, system-wide).
    pub fn seed(&mut self, pids: &[u32]) {
        let now = monotonic_ns();
        self.tracker.seed_all(pids, now, &mut self.proc_out);
        self.send_proc_events();
    }

    fn send_proc_events(&mut self) {
        for e in self.proc_out.drain(..) {
            let _ = self.tx.send(DaemonMsg::Proc(e));
        }
    }

    /// Runs until `stop` is set, then drains everything and sends `Finish`.
    pub fn run(mut self, stop: Arc<AtomicBool>) {
        let interval = self.config.flush_interval;
        ring_loop::run(&mut self, &stop, interval);
    }

    #[inline]
    fn process_record(&mut self, r: PerfRecord) {
        match r {
            PerfRecord::Sample(s) => {
                let Some(&event) = self.events.ids.get(&s.id) else {
                    self.stats.malformed_records += 1;
                    return;
                };
                let instance = self.tracker.instance_of(s.pid, s.time, &mut self.proc_out);
                if !self.proc_out.is_empty() {
                    self.send_proc_events();
                }
                let cpu = s.cpu as usize % self.tables.len();
                self.tables[cpu].record(s.ip, instance, event, &mut self.pairs[cpu]);
                self.stats.samples += 1;
                // By address, as the daemon attributes it: a software event
                // (page fault) fires in kernel mode on a user address.
                if s.ip >= crate::kernel::KERNEL_START {
                    self.stats.kernel_samples += 1;
                    if let Some(l) = &mut self.links {
                        l.on_sample(s.cpu, s.tid, instance, s.ip, event);
                    }
                } else {
                    self.stats.user_samples += 1;
                }
                let t = &mut self.event_totals[event as usize];
                t.0 += 1;
                t.1 += s.period;
            }
            PerfRecord::Mmap { time, map } => {
                self.tracker.on_mmap(time, map, &mut self.proc_out);
                self.send_proc_events();
            }
            PerfRecord::Comm {
                time,
                pid,
                tid: _,
                comm,
                exec,
            } => {
                self.tracker
                    .on_comm(time, pid, &comm, exec, &mut self.proc_out);
                self.send_proc_events();
            }
            PerfRecord::Fork { time, task } => {
                if let Some(l) = &mut self.links {
                    l.on_thread(task.pid, task.tid);
                }
                self.tracker.on_fork(time, task, &mut self.proc_out);
                self.send_proc_events();
            }
            PerfRecord::Exit { time, task } => {
                if let Some(l) = &mut self.links {
                    l.on_exit(task.tid);
                }
                self.tracker.on_exit(time, task, &mut self.proc_out);
                self.send_proc_events();
            }
            PerfRecord::Lost { lost, .. } => self.stats.lost_records += lost,
            PerfRecord::LostSamples { lost, .. } => self.stats.lost_samples += lost,
            PerfRecord::Throttle { .. } => self.stats.throttles += 1,
            PerfRecord::Link(r) => self.on_link(r),
            PerfRecord::Other { .. } => {}
        }
    }

    fn on_link(&mut self, r: crate::kernel_links::LinkRecord) {
        let Some(l) = &mut self.links else { return };
        l.on_record(&r, &mut self.charge_out);
        for c in std::mem::take(&mut self.charge_out) {
            let to = self
                .tracker
                .instance_of(c.to_pid, c.time, &mut self.proc_out);
            if to != c.from {
                *self
                    .charges
                    .entry((c.from, to, c.pc, c.event, c.link))
                    .or_insert(0) += c.count;
            }
        }
        if !self.proc_out.is_empty() {
            self.send_proc_events();
        }
    }

    /// DCPI randomized its periods so periodic code cannot alias with the
    /// sampler. PERF_EVENT_IOC_PERIOD restarts the count, so it is done at
    /// most once per 64 base periods (≥ 10 ms) to keep the lost fraction small.
    fn maybe_jitter(&mut self) {
        if self.config.period_jitter <= 0.0 || self.events.jitter_fds.is_empty() {
            return;
        }
        let now = Instant::now();
        if now < self.next_jitter {
            return;
        }
        let mut longest = 0u64;
        for i in 0..self.events.jitter_fds.len() {
            let (fd, base) = self.events.jitter_fds[i];
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            let u = (self.rng >> 11) as f64 / (1u64 << 53) as f64;
            let p =
                (base as f64 * (1.0 + self.config.period_jitter * (2.0 * u - 1.0))).max(1.0) as u64;
            if set_period(fd, p) {
                self.stats.period_changes += 1;
            }
            longest = longest.max(base);
        }
        // For clock events the base period is in ns; for others assume ~1 ns/event.
        let gap = Duration::from_nanos(longest.saturating_mul(64)).max(Duration::from_millis(10));
        self.next_jitter = now + gap;
    }

    fn flush_all(&mut self, last: bool) {
        for (table, pair) in self.tables.iter_mut().zip(self.pairs.iter_mut()) {
            table.drain_all(pair);
            pair.hand_off_partial();
        }
        let mut stats = self.stats.clone();
        for (t, p) in self.tables.iter().zip(self.pairs.iter()) {
            stats.table.samples += t.stats.samples;
            stats.table.hits += t.stats.hits;
            stats.table.misses += t.stats.misses;
            stats.table.evictions += t.stats.evictions;
            stats.table.saturations += t.stats.saturations;
            stats.overflow.handoffs += p.stats.handoffs;
            stats.overflow.handoff_waits += p.stats.handoff_waits;
            stats.overflow.entries += p.stats.entries;
        }
        stats.processes = self.tracker.started;
        if let Some(l) = &self.links {
            stats.links = l.stats;
        }
        if !self.charges.is_empty() {
            let rows = self
                .charges
                .drain()
                .map(|((f, t, pc, e, link), n)| (f, t, pc, e, link, n))
                .collect();
            let _ = self.tx.send(DaemonMsg::Charges(rows));
        }
        stats.event_totals = self
            .event_totals
            .iter()
            .enumerate()
            .map(|(i, &(n, p))| (i as u16, n, p))
            .collect();
        let marker = self
            .controls
            .as_ref()
            .map(|c| c.start_flush())
            .unwrap_or_default();
        let msg = if last {
            DaemonMsg::Finish(Box::new(stats), marker)
        } else {
            DaemonMsg::Flush(Box::new(stats), marker)
        };
        let _ = self.tx.send(msg);
    }
}

/// CLOCK_MONOTONIC in ns, the clock the events are opened with.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl RingConsumer for Driver {
    type Record = PerfRecord;
    fn rings_and_parser(&mut self) -> (&mut [Sampler], ring_loop::Parser<'_, PerfRecord>) {
        let points = &self.link_points;
        let parse = move |kind: u32, misc: u16, body: &[u8]| {
            if kind == records::RECORD_SAMPLE && !points.is_empty() {
                let id = u64::from_ne_bytes(body.get(..8)?.try_into().ok()?);
                if let Some(tp) = points.get(&id) {
                    return records::parse_link(body, tp);
                }
            }
            records::parse(kind, misc, body)
        };
        (&mut self.events.rings, Box::new(parse))
    }
    fn fds(&self) -> Vec<i32> {
        let mut fds = crate::perf_setup::event_fds(&self.events.rings, &self.events.others);
        fds.extend(self.link_counters.iter().map(|c| c.as_raw_fd()));
        fds
    }
    fn time(r: &PerfRecord) -> u64 {
        r.time()
    }
    fn process(&mut self, r: PerfRecord) {
        self.process_record(r)
    }
    fn malformed(&mut self) {
        self.stats.malformed_records += 1;
    }
    fn woke(&mut self) {
        self.stats.ring_wakeups += 1;
    }
    fn idle(&mut self) {
        self.maybe_jitter();
    }
    fn flush_due(&self) -> bool {
        self.controls.as_ref().is_some_and(|c| c.flush_due())
    }
    fn flush(&mut self, last: bool) {
        self.flush_all(last)
    }
}
