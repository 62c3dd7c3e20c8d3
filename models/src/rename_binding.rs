//! Intel's port binding at rename: each µop is tied to one port of its
//! class when it is renamed, from how many µops each port still has
//! waiting, and keeps that port even when another of its class is idle
//! when it becomes ready.
//!
//! The rule is uiCA's for Intel cores with ten ports (Ice Lake; Abel and
//! Reineke, "uiCA", 2022, from measurements there): the ports a µop may use
//! are sorted by the µops bound to them that have not issued yet, counted
//! at the start of the rename cycle (so µops renamed together do not see
//! each other), fewest first and the highest-numbered on a tie, and only
//! those within [`SPREAD`] of the least used are candidates; the k-th µop
//! of the cycle with the same set of ports takes the k-th candidate
//! (round robin), except that the µop in rename slot 4 takes the first and
//! the first of its set in slot 3 the second. A µop with one port takes it.
//!
//! Limits: Golden Cove's rule is not published; this one was chosen over
//! Skylake's (uiCA's slot-parity rule) and over a free choice at issue by
//! 47 port-contention probes measured on Sapphire Rapids and four BHive
//! sets (BENCHMARKS.md, session 21). It misses a 1-cycle chain read by a
//! sign extension and a compare (`movslq %r12d,%r13; add $1,%r12d; cmp
//! $0xC,%r12d` 1.43 cycles measured, 1.00 modeled). The golden-cove
//! description leaves it off (`ports_bound_at_rename = false`): with it the
//! analyzer's frequency estimates on the recorded profiles got worse, and
//! the model 30 % slower (a block runs more iterations before its
//! retirement repeats).

use std::cmp::Reverse;

/// Ports more than this many waiting µops above the least used are not
/// candidates.
const SPREAD: u32 = 5;

/// Cycles ahead the per-cycle counts of issuing µops reach (a power of 2).
const RING: usize = 256;

/// The binding's state over a simulation.
#[derive(Default)]
pub(crate) struct RenameBinder {
    /// The rename cycle the counts were taken for.
    cycle: u64,
    /// Per port: µops bound to it in earlier cycles and not issued by the
    /// start of `cycle`.
    waiting: Vec<u32>,
    /// Per cycle (modulo [`RING`]) and port: the counted µops that issue
    /// in that cycle (and stop counting after it).
    issuing: Vec<u16>,
    /// Counted µops that issue [`RING`] cycles or more after `cycle`
    /// (long chains): (port, issue cycle).
    far: Vec<(usize, u64)>,
    /// µops bound in `cycle` so far: (port, issue cycle).
    group: Vec<(usize, u64)>,
    /// Sets of ports of the µops bound in `cycle` so far, with how many.
    sets: Vec<(u64, u32)>,
    /// Per port: its number (`p10` → 10), for the tie-break.
    number: Vec<u32>,
    /// The bound ports, fewest waiting first (the highest number on a
    /// tie), as of the start of `cycle`.
    order: Vec<usize>,
}

impl RenameBinder {
    /// Clears the state for a simulation over `ports` (the machine's
    /// sorted port names), of which those in `bindable` (a bit mask) are
    /// bound.
    pub(crate) fn reset(&mut self, ports: &[String], bindable: u64) {
        let n = ports.len();
        self.cycle = 0;
        self.waiting.clear();
        self.waiting.resize(n, 0);
        self.issuing.clear();
        self.issuing.resize(RING * n, 0);
        self.far.clear();
        self.group.clear();
        self.sets.clear();
        self.number.clear();
        self.number.extend(ports.iter().map(|p| {
            p.trim_start_matches(|c: char| !c.is_ascii_digit())
                .parse()
                .unwrap_or(0)
        }));
        self.order.clear();
        self.order.extend((0..n).filter(|p| bindable & 1 << p != 0));
        let number = &self.number;
        self.order.sort_by_key(|&p| Reverse(number[p]));
    }

    /// Moves to rename cycle `cycle` (not before the current one): the
    /// last cycle's µops join the waiting ones and the counts are taken.
    pub(crate) fn start(&mut self, cycle: u64) {
        if cycle == self.cycle {
            return;
        }
        let n = self.waiting.len();
        let mut changed = false;
        // The cycles from the last start to this one pass: µops issuing in
        // them stop counting.
        if cycle - self.cycle >= RING as u64 {
            self.waiting.iter_mut().for_each(|w| *w = 0);
            self.issuing.iter_mut().for_each(|c| *c = 0);
            changed = true;
        } else {
            for x in self.cycle..cycle {
                let row = (x as usize & (RING - 1)) * n;
                for &p in &self.order {
                    let k = std::mem::take(&mut self.issuing[row + p]);
                    self.waiting[p] -= k as u32;
                    changed |= k != 0;
                }
            }
        }
        // The last cycle's µops and those issuing far ahead that come
        // within reach, where they issue in this cycle or later.
        let far = std::mem::take(&mut self.far);
        for (p, t) in self.group.drain(..).chain(far) {
            if t < cycle {
                continue;
            }
            if t - cycle >= RING as u64 {
                self.far.push((p, t));
                continue;
            }
            self.waiting[p] += 1;
            self.issuing[(t as usize & (RING - 1)) * n + p] += 1;
            changed = true;
        }
        if changed {
            // Insertion sort: the order changes little from cycle to cycle.
            let (waiting, number) = (&self.waiting, &self.number);
            let key = |p: usize| (waiting[p], Reverse(number[p]));
            for k in 1..self.order.len() {
                let mut j = k;
                while j > 0 && key(self.order[j]) < key(self.order[j - 1]) {
                    self.order.swap(j, j - 1);
                    j -= 1;
                }
            }
        }
        self.sets.clear();
        self.cycle = cycle;
    }

    /// The port of `mask` (not empty) a µop in rename slot `slot` of the
    /// current cycle is bound to.
    pub(crate) fn choose(&mut self, mask: u64, slot: u32) -> usize {
        if mask.count_ones() == 1 {
            return mask.trailing_zeros() as usize;
        }
        let mut ports: smallvec::SmallVec<[usize; 8]> = smallvec::SmallVec::new();
        let mut least = None;
        for &p in &self.order {
            if mask & 1 << p == 0 {
                continue;
            }
            let w = self.waiting[p];
            if w >= *least.get_or_insert(w) + SPREAD {
                break;
            }
            ports.push(p);
        }
        let same_set = match self.sets.iter_mut().find(|s| s.0 == mask) {
            Some(s) => {
                s.1 += 1;
                s.1 - 1
            }
            None => {
                self.sets.push((mask, 1));
                0
            }
        };
        match slot {
            4 => ports[0],
            3 if same_set == 0 && ports.len() > 1 => ports[1],
            _ => ports[same_set as usize % ports.len()],
        }
    }

    /// Records a µop bound to `port` in the current cycle that issues in
    /// cycle `issued`.
    pub(crate) fn bound(&mut self, port: usize, issued: u64) {
        self.group.push((port, issued));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binder(names: &[&str]) -> RenameBinder {
        let mut b = RenameBinder::default();
        b.reset(&names.iter().map(|s| s.to_string()).collect::<Vec<_>>(), !0);
        b
    }

    #[test]
    fn a_cycles_uops_of_one_set_go_round_the_least_used_ports() {
        // Sorted as strings: p0, p1, p10, p5, p6; all idle, so by number
        // from the highest: p10, p6, p5, p1, p0.
        let mut b = binder(&["p0", "p1", "p10", "p5", "p6"]);
        b.start(1);
        let all = 0b11111;
        assert_eq!(b.choose(all, 0), 2, "p10");
        assert_eq!(b.choose(all, 1), 4, "p6");
        assert_eq!(b.choose(all, 2), 3, "p5");
        // Slot 4 takes the least used whatever came before.
        assert_eq!(b.choose(all, 4), 2, "p10");
        // One port: that one, not counted in the round.
        assert_eq!(b.choose(0b00001, 5), 0);
    }

    #[test]
    fn counts_are_taken_at_the_start_of_a_cycle_from_uops_not_issued() {
        let mut b = binder(&["p0", "p1"]);
        b.start(1);
        b.bound(1, 10);
        b.bound(1, 11);
        b.start(2);
        // p1 has two waiting: p0 first, then p1 (within the spread).
        assert_eq!(b.choose(0b11, 0), 0);
        assert_eq!(b.choose(0b11, 1), 1);
        // By cycle 11 the first has issued, by 12 both.
        b.start(12);
        assert_eq!(b.choose(0b11, 0), 1, "both idle: the higher number");
    }

    #[test]
    fn ports_far_above_the_least_used_are_left_out() {
        let mut b = binder(&["p0", "p1"]);
        b.start(1);
        for _ in 0..SPREAD {
            b.bound(1, 100);
        }
        b.start(2);
        assert_eq!(b.choose(0b11, 0), 0);
        assert_eq!(b.choose(0b11, 1), 0, "p1 is 5 above: not a candidate");
    }
}
