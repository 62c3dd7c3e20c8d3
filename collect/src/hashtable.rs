//! DCPI's per-CPU sample hash table, made real in user space.
//!
//! A fixed array of buckets, each a 64-byte cache line of [`WAYS`] entries
//! keyed (process instance, pc, event) with a 16-bit count. A sample that hits
//! an entry increments it; a miss takes a free way, or — in a full bucket —
//! evicts one entry into the active overflow buffer (see [`crate::overflow`]).
//!
//! Eviction policy: the entry with the smallest count goes, ties broken by a
//! per-bucket round-robin cursor. Cold PCs pass through the table quickly
//! while hot ones stay resident and keep accumulating; stale hot entries
//! cannot squat forever because the driver empties every table at each
//! periodic flush ([`SampleTable::drain_all`]). An entry whose count would
//! pass `u16::MAX` is evicted with its count and starts again at one.

use crate::overflow::{HandoffSink, OverflowPair};

/// Entries per bucket: 4 × 16 bytes = one cache line.
pub const WAYS: usize = 4;

/// One aggregated (instance, pc, event) → count entry. `count == 0` is free.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Entry {
    pub pc: u64,
    /// Process instance serial assigned by the driver's process tracker.
    pub instance: u32,
    pub event: u16,
    pub count: u16,
}

impl Entry {
    fn matches(&self, pc: u64, instance: u32, event: u16) -> bool {
        self.pc == pc && self.instance == instance && self.event == event && self.count != 0
    }
}

#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Bucket {
    ways: [Entry; WAYS],
}

/// Counters of the table's behaviour, summed into the run statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableStats {
    pub samples: u64,
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    /// Evictions because a 16-bit count was full (a subset of `evictions`).
    pub saturations: u64,
}

/// A per-CPU table.
pub struct SampleTable {
    buckets: Box<[Bucket]>,
    cursors: Box<[u8]>,
    mask: usize,
    pub stats: TableStats,
}

#[inline]
fn bucket_index(pc: u64, instance: u32, event: u16, mask: usize) -> usize {
    // Multiplicative (Fibonacci) hashing of the mixed key; the high bits are
    // the best mixed, so shift them down.
    let k = pc ^ ((instance as u64) << 40) ^ ((event as u64) << 24) ^ (instance as u64);
    let h = k.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> 32) as usize & mask
}

impl SampleTable {
    /// A table of at least `buckets` buckets (rounded up to a power of two).
    pub fn new(buckets: usize) -> Self {
        let n = buckets.max(1).next_power_of_two();
        SampleTable {
            buckets: vec![Bucket::default(); n].into_boxed_slice(),
            cursors: vec![0u8; n].into_boxed_slice(),
            mask: n - 1,
            stats: TableStats::default(),
        }
    }

    /// Number of buckets.
    pub fn buckets(&self) -> usize {
        self.buckets.len()
    }

    /// Records one sample. An evicted entry goes to `overflow`.
    #[inline]
    pub fn record<S: HandoffSink>(
        &mut self,
        pc: u64,
        instance: u32,
        event: u16,
        overflow: &mut OverflowPair<S>,
    ) {
        self.stats.samples += 1;
        let b = bucket_index(pc, instance, event, self.mask);
        let bucket = &mut self.buckets[b];
        let mut free = None;
        for (i, e) in bucket.ways.iter_mut().enumerate() {
            if e.matches(pc, instance, event) {
                self.stats.hits += 1;
                if e.count == u16::MAX {
                    self.stats.evictions += 1;
                    self.stats.saturations += 1;
                    overflow.push(*e);
                    e.count = 1;
                } else {
                    e.count += 1;
                }
                return;
            }
            if e.count == 0 && free.is_none() {
                free = Some(i);
            }
        }
        self.stats.misses += 1;
        let fresh = Entry {
            pc,
            instance,
            event,
            count: 1,
        };
        if let Some(i) = free {
            bucket.ways[i] = fresh;
            return;
        }
        // Full bucket: evict the smallest count, round-robin among ties.
        let start = self.cursors[b] as usize;
        let mut victim = start % WAYS;
        for step in 1..WAYS {
            let i = (start + step) % WAYS;
            if bucket.ways[i].count < bucket.ways[victim].count {
                victim = i;
            }
        }
        self.cursors[b] = ((victim + 1) % WAYS) as u8;
        self.stats.evictions += 1;
        overflow.push(bucket.ways[victim]);
        bucket.ways[victim] = fresh;
    }

    /// Empties the table into `overflow` (periodic flush and end of run).
    pub fn drain_all<S: HandoffSink>(&mut self, overflow: &mut OverflowPair<S>) {
        for bucket in self.buckets.iter_mut() {
            for e in bucket.ways.iter_mut() {
                if e.count != 0 {
                    overflow.push(*e);
                    *e = Entry::default();
                }
            }
        }
    }

    /// Entries currently resident (for tests and statistics).
    pub fn resident(&self) -> usize {
        self.buckets
            .iter()
            .flat_map(|b| b.ways.iter())
            .filter(|e| e.count != 0)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overflow::{Handoff, OverflowPair};
    use std::collections::HashMap;
    use std::sync::mpsc;

    fn pair(capacity: usize) -> (OverflowPair, mpsc::Receiver<Handoff>) {
        let (tx, rx) = mpsc::sync_channel(4);
        (OverflowPair::new(0, capacity, tx), rx)
    }

    /// Everything that left the table plus what is resident must equal the input.
    fn totals(
        rx: &mpsc::Receiver<Handoff>,
        pair: &mut OverflowPair,
    ) -> HashMap<(u64, u32, u16), u64> {
        pair.hand_off_partial();
        let mut t = HashMap::new();
        while let Ok(h) = rx.try_recv() {
            for e in &h.entries {
                *t.entry((e.pc, e.instance, e.event)).or_insert(0) += e.count as u64;
            }
            h.give_back();
        }
        t
    }

    #[test]
    fn bucket_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Entry>(), 16);
        assert_eq!(std::mem::size_of::<Bucket>(), 64);
    }

    #[test]
    fn hits_increment_in_place() {
        let (mut ov, rx) = pair(16);
        let mut t = SampleTable::new(8);
        for _ in 0..10 {
            t.record(0x1000, 1, 0, &mut ov);
        }
        t.record(0x1000, 2, 0, &mut ov);
        t.record(0x1000, 1, 1, &mut ov);
        assert_eq!(t.stats.hits, 9);
        assert_eq!(t.stats.misses, 3);
        assert_eq!(t.stats.evictions, 0);
        assert_eq!(t.resident(), 3);
        t.drain_all(&mut ov);
        let m = totals(&rx, &mut ov);
        assert_eq!(m[&(0x1000, 1, 0)], 10);
        assert_eq!(m[&(0x1000, 2, 0)], 1);
        assert_eq!(m[&(0x1000, 1, 1)], 1);
    }

    #[test]
    fn full_bucket_evicts_smallest_count_into_overflow() {
        let (mut ov, rx) = pair(64);
        let mut t = SampleTable::new(1); // one bucket: every key collides
        for (i, pc) in [0x10u64, 0x20, 0x30, 0x40].iter().enumerate() {
            for _ in 0..=(i + 1) {
                t.record(*pc, 7, 0, &mut ov);
            }
        }
        // 0x10 has the smallest count (2): the fifth key evicts it.
        t.record(0x50, 7, 0, &mut ov);
        assert_eq!(t.stats.evictions, 1);
        assert_eq!(ov.active_len(), 1);
        let m = totals(&rx, &mut ov);
        assert_eq!(m.get(&(0x10, 7, 0)), Some(&2));
        assert_eq!(t.resident(), 4);
    }

    #[test]
    fn saturated_count_is_evicted_not_lost() {
        let (mut ov, rx) = pair(8);
        let mut t = SampleTable::new(1);
        for _ in 0..(u16::MAX as u32 + 5) {
            t.record(0x99, 1, 0, &mut ov);
        }
        t.drain_all(&mut ov);
        assert_eq!(t.stats.saturations, 1);
        assert_eq!(totals(&rx, &mut ov)[&(0x99, 1, 0)], u16::MAX as u64 + 5);
    }

    #[test]
    fn nothing_is_lost_under_heavy_eviction_and_handoffs() {
        let (tx, rx) = mpsc::sync_channel::<Handoff>(1);
        let mut ov = OverflowPair::new(3, 32, tx);
        let mut t = SampleTable::new(4);
        let drainer = std::thread::spawn(move || {
            let mut sums: HashMap<(u64, u32, u16), u64> = HashMap::new();
            let mut handoffs = 0;
            for h in rx {
                handoffs += 1;
                for e in &h.entries {
                    *sums.entry((e.pc, e.instance, e.event)).or_insert(0) += e.count as u64;
                }
                // Give the buffer back as the daemon does.
                h.give_back();
            }
            (sums, handoffs)
        });
        let mut expected: HashMap<(u64, u32, u16), u64> = HashMap::new();
        let mut x: u64 = 12345;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = (
                0x400000 + (x % 500) * 3,
                (x >> 20) as u32 % 3,
                ((x >> 30) % 2) as u16,
            );
            *expected.entry(key).or_insert(0) += 1;
            t.record(key.0, key.1, key.2, &mut ov);
        }
        t.drain_all(&mut ov);
        ov.hand_off_partial();
        let stats = ov.stats;
        drop(ov);
        let (sums, handoffs) = drainer.join().unwrap();
        assert_eq!(sums, expected);
        assert!(handoffs > 10, "{handoffs}");
        assert_eq!(stats.handoffs as usize, handoffs);
        assert!(t.stats.evictions > 1000);
    }
}
