//! OSprof latency profiles: per system call and per process instance, the
//! latency of every call in log2 buckets of CPU cycles, stored next to the
//! sample counts (`latency_sets`, `latency_buckets`).
//!
//! Why tracepoints through perf_event_open and not BPF: the raw_syscalls
//! sys_enter/sys_exit tracepoints need nothing beyond the perf_event
//! interface the collector already uses (no BPF toolchain, no verifier
//! surprises across kernels), inherit to children and attach per process like
//! the sampling events. The cost is one ~100-byte record per enter and exit
//! through the ring buffer, paired and bucketed in user space; the measured
//! per-call overhead is in BENCHMARKS.md. In-kernel BPF histograms would save
//! the ring traffic and are the upgrade path.

pub mod histogram;
pub mod syscall_names;
pub mod tracefs;
pub mod tracer;

use crate::daemon::Daemon;
use crate::error::Result;
use crate::images::ImageRegistry;
use crate::session::{register_initial, supervise, Mode, Prepared, TracksProcesses};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::time::Duration;
use tracer::{Tracer, TracerConfig};

/// A latency capture request.
#[derive(Debug, Clone)]
pub struct LatencyConfig {
    pub db_path: PathBuf,
    pub mode: Mode,
    pub duration: Option<Duration>,
    /// Buckets per power of two (OSprof's r).
    pub resolution: u32,
    /// A new set of buckets every interval (OSprof's time-sliced profiles).
    pub interval: Option<Duration>,
    pub ring_bytes: usize,
    /// Also record scheduler wait after preemption.
    pub sched_layer: bool,
    /// Measure the host's characteristic times (context switch, tick, quantum).
    pub calibrate_host: bool,
}

/// How a capture ended.
#[derive(Debug, Clone)]
pub struct LatencyOutcome {
    pub run_id: i64,
    pub set_id: i64,
    pub exit_code: Option<i32>,
    pub interrupted: bool,
    pub duration: Duration,
    pub calls: u64,
    pub lost: u64,
}

/// Source description stored with each set.
pub const SOURCE: &str = "raw_syscalls:sys_enter/sys_exit tracepoints via perf_event_open";

/// Runs one latency capture.
pub fn capture(config: &LatencyConfig, user_stop: &AtomicBool) -> Result<LatencyOutcome> {
    let mut p = Prepared::new(&config.db_path, &config.mode)?;
    let events = match tracer::open(&p.target, config.ring_bytes, config.sched_layer) {
        Ok(e) => e,
        Err(e) => return Err(p.abandon(e)),
    };
    if let Err(e) = p.begin_run(&config.mode, &[]) {
        return Err(p.abandon(e));
    }
    let core_hz = p.clock.core_hz;
    let set_id = match p.writer.begin_latency_set(
        SOURCE,
        config.resolution,
        config.interval.map(|d| d.as_secs_f64()),
        core_hz,
    ) {
        Ok(id) => id,
        Err(e) => return Err(p.abandon(e)),
    };
    if config.calibrate_host {
        let t = dcpi_models::host_times::measure(core_hz);
        if let Err(e) = p.writer.write_host_times(&t.as_pairs()) {
            return Err(p.abandon(e));
        }
    }
    let Prepared {
        writer,
        kernel,
        argv,
        held,
        ..
    } = p;
    let run_id = writer.run_id();
    let (tx, rx) = mpsc::channel();
    let mut tracer = Tracer::new(
        events,
        tx,
        TracerConfig {
            resolution: config.resolution.max(1),
            interval: config.interval,
            flush_interval: Duration::from_secs(1),
            core_hz,
        },
    );
    register_initial(
        &mut tracer,
        &config.mode,
        held.as_ref().map(|h| h.pid),
        argv.as_deref(),
    );
    let end = supervise(
        Daemon::new(writer, ImageRegistry::new(kernel)),
        rx,
        move |stop| tracer.run(stop),
        held,
        &config.mode,
        config.duration,
        user_stop,
        None,
    )?;
    let reader = rusqlite::Connection::open_with_flags(
        &config.db_path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )?;
    let (calls, lost): (i64, i64) = reader.query_row(
        "SELECT calls, lost FROM latency_sets WHERE id = ?1",
        [set_id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    Ok(LatencyOutcome {
        run_id,
        set_id,
        exit_code: end.exit_code,
        interrupted: end.interrupted,
        duration: end.duration,
        calls: calls as u64,
        lost: lost as u64,
    })
}

impl TracksProcesses for Tracer {
    fn register_root(&mut self, pid: u32, comm: &str, cmdline: &str) {
        Tracer::register_root(self, pid, comm, cmdline)
    }
    fn seed(&mut self, pids: &[u32]) {
        Tracer::seed(self, pids)
    }
}
