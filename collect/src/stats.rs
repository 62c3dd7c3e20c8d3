//! The collector's "statistics of run" (Prospect), stored per run.

use crate::daemon::DaemonStats;
use crate::hashtable::TableStats;
use crate::overflow::OverflowStats;

#[derive(Debug, Clone, Default)]
pub struct CollectorStats {
    pub samples: u64,
    pub user_samples: u64,
    pub kernel_samples: u64,
    /// Records the kernel dropped (PERF_RECORD_LOST) and samples it dropped.
    pub lost_records: u64,
    pub lost_samples: u64,
    pub throttles: u64,
    pub malformed_records: u64,
    pub ring_wakeups: u64,
    pub period_changes: u64,
    pub processes: u64,
    pub images: u64,
    pub table: TableStats,
    pub overflow: OverflowStats,
    pub daemon: DaemonStats,
    pub links: crate::kernel_links::LinkStats,
    /// Per event position: (samples, sum of periods), absolute.
    pub event_totals: Vec<(u16, u64, u64)>,
}

impl CollectorStats {
    /// Name/value pairs as stored in `collector_stats`.
    pub fn as_pairs(&self) -> Vec<(String, u64)> {
        let t = &self.table;
        [
            ("samples", self.samples),
            ("user_samples", self.user_samples),
            ("kernel_samples", self.kernel_samples),
            ("lost_records", self.lost_records),
            ("lost_samples", self.lost_samples),
            ("throttles", self.throttles),
            ("malformed_records", self.malformed_records),
            ("ring_wakeups", self.ring_wakeups),
            ("period_changes", self.period_changes),
            ("processes", self.processes),
            ("images", self.images),
            ("hash_lookups", t.samples),
            ("hash_hits", t.hits),
            ("hash_misses", t.misses),
            ("hash_evictions", t.evictions),
            ("hash_saturations", t.saturations),
            ("overflow_handoffs", self.overflow.handoffs),
            ("overflow_handoff_waits", self.overflow.handoff_waits),
            ("overflow_entries", self.overflow.entries),
            ("daemon_entries_merged", self.daemon.entries_merged),
            ("daemon_buffers", self.daemon.buffers),
            ("daemon_flushes", self.daemon.flushes),
            ("daemon_bound_flushes", self.daemon.bound_flushes),
            ("unknown_samples", self.daemon.unknown_samples),
            ("charged_samples", self.links.charged_samples),
            ("unlinked_async_samples", self.links.unlinked_async_samples),
            ("wakeups_seen", self.links.wakeups_seen),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}
