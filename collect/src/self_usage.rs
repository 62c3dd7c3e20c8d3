//! What the collector itself costs: resident memory and CPU time (for
//! `dcpi status`), and the bound its memory is held to in continuous mode.

use crate::daemon::MAX_PENDING_ENTRIES;
use serde::Serialize;

/// Resident memory now and at its peak, KiB (from /proc/self/status).
pub fn resident_kib() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// User and system CPU seconds of this process, all threads.
pub fn cpu_seconds() -> (f64, f64) {
    // SAFETY: getrusage fills the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    (s(ru.ru_utime), s(ru.ru_stime))
}

/// The daemon's memory bound, and what it is made of (bytes).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct MemoryBound {
    /// Program text, heap and SQLite's page cache, measured idle.
    pub base: u64,
    /// Per-CPU hash tables (16-byte entries, 4 per bucket).
    pub tables: u64,
    /// Two overflow buffers per CPU.
    pub overflow: u64,
    /// Per-CPU perf ring buffers.
    pub rings: u64,
    /// Entries the daemon may hold between flushes ([`MAX_PENDING_ENTRIES`]).
    pub pending: u64,
    /// Per process tracked at once (the most since the start: what exited
    /// stays with the allocator): mappings and process state.
    pub per_process: u64,
}

/// Bytes per pending daemon entry, with the hash map's overhead.
const PENDING_ENTRY_BYTES: u64 = 64;

impl MemoryBound {
    pub fn new(
        ncpu: usize,
        table_buckets: usize,
        overflow_capacity: usize,
        ring_bytes: usize,
    ) -> Self {
        let n = ncpu as u64;
        MemoryBound {
            base: 32 << 20,
            tables: n * table_buckets as u64 * 4 * 16,
            overflow: n * 2 * overflow_capacity as u64 * 16,
            rings: n * (ring_bytes as u64 + 4096),
            pending: MAX_PENDING_ENTRIES as u64 * PENDING_ENTRY_BYTES,
            per_process: 16 << 10,
        }
    }

    /// The bound with `live` processes.
    pub fn total(&self, live: u64) -> u64 {
        self.base
            + self.tables
            + self.overflow
            + self.rings
            + self.pending
            + live * self.per_process
    }
}
