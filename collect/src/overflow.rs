//! The PAIR of overflow buffers between a per-CPU table and the daemon.
//!
//! Entries evicted from a [`crate::hashtable::SampleTable`] are appended to
//! the active buffer. When it is full it is handed to the daemon (through a
//! [`HandoffSink`]) and the other buffer becomes active. The daemon gives a
//! drained buffer back through [`Handoff::give_back`]. The sampling path only
//! waits when both buffers are with the daemon at once (counted in
//! [`OverflowStats::handoff_waits`]); it never waits on I/O, because the
//! daemon returns a buffer right after merging it in memory.

use crate::hashtable::Entry;
use std::sync::mpsc;

/// A full (or, at flush time, partial) buffer on its way to the daemon.
#[derive(Debug)]
pub struct Handoff {
    pub cpu: u32,
    pub entries: Vec<Entry>,
    back: mpsc::Sender<Vec<Entry>>,
}

impl Handoff {
    /// Returns the (drained) buffer to its pair so it can become active again.
    pub fn give_back(self) {
        let mut entries = self.entries;
        entries.clear();
        // The pair may be gone at the end of a run; then the buffer is freed.
        let _ = self.back.send(entries);
    }
}

/// Where full buffers go (the daemon's message channel).
pub trait HandoffSink {
    fn hand_off(&mut self, handoff: Handoff);
}

impl HandoffSink for mpsc::SyncSender<Handoff> {
    fn hand_off(&mut self, handoff: Handoff) {
        // A closed channel means the daemon died; its error is reported there.
        let _ = self.send(handoff);
    }
}

impl HandoffSink for mpsc::Sender<Handoff> {
    fn hand_off(&mut self, handoff: Handoff) {
        let _ = self.send(handoff);
    }
}

/// Counters summed into the run statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OverflowStats {
    /// Buffers handed to the daemon.
    pub handoffs: u64,
    /// Times the sampling path had to wait for the daemon to return a buffer.
    pub handoff_waits: u64,
    /// Entries that went through the overflow buffers.
    pub entries: u64,
}

/// The pair of overflow buffers of one CPU.
pub struct OverflowPair<S: HandoffSink = mpsc::SyncSender<Handoff>> {
    cpu: u32,
    capacity: usize,
    active: Vec<Entry>,
    spare: Option<Vec<Entry>>,
    returned: mpsc::Receiver<Vec<Entry>>,
    back: mpsc::Sender<Vec<Entry>>,
    sink: S,
    pub stats: OverflowStats,
}

impl<S: HandoffSink> OverflowPair<S> {
    /// Two buffers of `capacity` entries each for CPU `cpu`.
    pub fn new(cpu: u32, capacity: usize, sink: S) -> Self {
        let capacity = capacity.max(1);
        let (back, returned) = mpsc::channel();
        OverflowPair {
            cpu,
            capacity,
            active: Vec::with_capacity(capacity),
            spare: Some(Vec::with_capacity(capacity)),
            returned,
            back,
            sink,
            stats: OverflowStats::default(),
        }
    }

    /// Appends an evicted entry, handing the buffer off first if it is full.
    #[inline]
    pub fn push(&mut self, entry: Entry) {
        if self.active.len() == self.capacity {
            self.swap();
        }
        self.active.push(entry);
        self.stats.entries += 1;
    }

    /// Entries in the active buffer.
    pub fn active_len(&self) -> usize {
        self.active.len()
    }

    /// Hands off the active buffer even if not full (flush, end of run).
    pub fn hand_off_partial(&mut self) {
        if !self.active.is_empty() {
            self.swap();
        }
    }

    /// Access to the sink, e.g. to send process events in order with buffers.
    pub fn sink(&mut self) -> &mut S {
        &mut self.sink
    }

    fn swap(&mut self) {
        let next = match self.spare.take() {
            Some(b) => b,
            None => match self.returned.try_recv() {
                Ok(b) => b,
                Err(_) => {
                    self.stats.handoff_waits += 1;
                    // The daemon always returns buffers; if it died, start a new
                    // one rather than hang (its death is reported by the session).
                    self.returned
                        .recv_timeout(std::time::Duration::from_secs(5))
                        .unwrap_or_else(|_| Vec::with_capacity(self.capacity))
                }
            },
        };
        let full = std::mem::replace(&mut self.active, next);
        self.stats.handoffs += 1;
        self.sink.hand_off(Handoff {
            cpu: self.cpu,
            entries: full,
            back: self.back.clone(),
        });
        if self.spare.is_none() {
            if let Ok(b) = self.returned.try_recv() {
                self.spare = Some(b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(pc: u64) -> Entry {
        Entry {
            pc,
            instance: 1,
            event: 0,
            count: 1,
        }
    }

    #[test]
    fn full_buffer_is_handed_off_and_spare_becomes_active() {
        let (tx, rx) = mpsc::sync_channel(4);
        let mut p = OverflowPair::new(2, 3, tx);
        for pc in 0..3 {
            p.push(e(pc));
        }
        assert!(rx.try_recv().is_err(), "not handed off before it is needed");
        p.push(e(3));
        let h = rx.try_recv().unwrap();
        assert_eq!((h.cpu, h.entries.len()), (2, 3));
        assert_eq!(p.active_len(), 1);
        assert_eq!(p.stats.handoffs, 1);
        h.give_back();
        // Fill again: the returned buffer is reused, no wait.
        for pc in 4..7 {
            p.push(e(pc));
        }
        assert_eq!(p.stats.handoffs, 2);
        assert_eq!(p.stats.handoff_waits, 0);
    }

    #[test]
    fn waits_when_both_buffers_are_out() {
        let (tx, rx) = mpsc::sync_channel::<Handoff>(8);
        let mut p = OverflowPair::new(0, 1, tx);
        p.push(e(0));
        p.push(e(1)); // hand-off 1: spare becomes active
        let first = rx.recv().unwrap();
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            first.give_back();
        });
        p.push(e(2)); // hand-off 2 must wait for the first buffer
        t.join().unwrap();
        assert_eq!(p.stats.handoff_waits, 1);
        assert_eq!(rx.recv().unwrap().entries[0].pc, 1);
    }
}
