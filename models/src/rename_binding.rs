//! Intel's port binding at rename: each µop is tied to one port of its
//! class when it is renamed, from how many µops each port still has
//! waiting, and keeps that port even when another of its class is idle
//! when it becomes ready.
//!
//! The rule (after uiCA, Abel and Reineke 2022, measured there on Skylake
//! and later cores): the counts are taken once at the start of a rename
//! cycle — µops bound in earlier cycles that have not issued, or issued in
//! the cycle before — so µops renamed together do not see each other. A
//! µop in an even slot of its rename group takes the port with the fewest
//! waiting µops, one in an odd slot the second fewest unless that has at
//! least [`SECOND_CHOICE_MARGIN`] more; ties go to the highest-numbered
//! port. Only what the simulation knows is used: the cycle each earlier
//! µop issued in, settled in program order.
//!
//! Limits: the rule is Skylake's as published; Golden Cove's is not
//! documented. It is judged here by its effect on measured blocks
//! (BENCHMARKS.md).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// An odd slot's µop takes the second-least-used port unless it has this
/// many more waiting µops than the least used.
const SECOND_CHOICE_MARGIN: u32 = 3;

/// The binding's state over a simulation.
#[derive(Default)]
pub(crate) struct RenameBinder {
    /// The rename cycle the counts were taken for.
    cycle: u64,
    /// Per port: µops bound to it that were waiting at the start of `cycle`.
    waiting: Vec<u32>,
    /// Per port: the issue cycles of µops bound in cycles before `cycle`.
    pending: Vec<BinaryHeap<Reverse<u64>>>,
    /// µops bound in `cycle` so far: (port, issue cycle).
    group: Vec<(usize, u64)>,
    /// Per port: its number (`p10` → 10), for the tie-break.
    number: Vec<u32>,
}

impl RenameBinder {
    /// Clears the state for a simulation over `ports` (the machine's
    /// sorted port names).
    pub(crate) fn reset(&mut self, ports: &[String]) {
        let n = ports.len();
        self.cycle = 0;
        self.waiting.clear();
        self.waiting.resize(n, 0);
        self.pending.resize_with(n, BinaryHeap::new);
        self.pending.truncate(n);
        self.pending.iter_mut().for_each(BinaryHeap::clear);
        self.group.clear();
        self.number.clear();
        self.number.extend(ports.iter().map(|p| {
            p.trim_start_matches(|c: char| !c.is_ascii_digit())
                .parse()
                .unwrap_or(0)
        }));
    }

    /// Moves to rename cycle `cycle` (not before the current one): the
    /// last cycle's µops join the waiting ones and the counts are taken.
    pub(crate) fn start(&mut self, cycle: u64) {
        if cycle == self.cycle {
            return;
        }
        for (p, t) in self.group.drain(..) {
            self.pending[p].push(Reverse(t));
        }
        // Issued before the cycle before this one: no longer counted.
        let gone = cycle.saturating_sub(1);
        for (p, heap) in self.pending.iter_mut().enumerate() {
            while heap.peek().is_some_and(|r| r.0 < gone) {
                heap.pop();
            }
            self.waiting[p] = heap.len() as u32;
        }
        self.cycle = cycle;
    }

    /// The port of `mask` (not empty) a µop in rename slot `slot` of the
    /// current cycle is bound to.
    pub(crate) fn choose(&self, mask: u64, slot: u32) -> usize {
        let w = |a: usize| self.waiting[a];
        let better = |a: usize, b: usize| (w(a), Reverse(self.number[a])) < (w(b), Reverse(self.number[b]));
        let (mut first, mut second) = (None::<usize>, None::<usize>);
        let mut m = mask;
        while m != 0 {
            let p = m.trailing_zeros() as usize;
            m &= m - 1;
            match first {
                Some(f) if !better(p, f) => {
                    if second.is_none_or(|s| better(p, s)) {
                        second = Some(p);
                    }
                }
                _ => {
                    second = first;
                    first = Some(p);
                }
            }
        }
        let first = first.expect("a port");
        match second {
            Some(s) if slot % 2 == 1 && w(s) < w(first) + SECOND_CHOICE_MARGIN => s,
            _ => first,
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
        b.reset(&names.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        b
    }

    #[test]
    fn ties_go_to_the_highest_numbered_port_and_odd_slots_to_the_second() {
        // Sorted as strings: p0, p1, p10, p5, p6.
        let b = binder(&["p0", "p1", "p10", "p5", "p6"]);
        assert_eq!(b.choose(0b11111, 0), 2, "p10");
        assert_eq!(b.choose(0b11111, 1), 4, "p6");
        assert_eq!(b.choose(0b00001, 1), 0, "one port");
    }

    #[test]
    fn counts_are_taken_at_the_start_of_a_cycle() {
        let mut b = binder(&["p0", "p1"]);
        b.start(1);
        b.bound(1, 10);
        b.bound(1, 11);
        // Same cycle: p1 still looks empty.
        assert_eq!(b.choose(0b11, 0), 1);
        b.start(2);
        assert_eq!(b.choose(0b11, 0), 0, "p1 has two waiting");
        // Odd slot: p1 is within the margin of p0.
        assert_eq!(b.choose(0b11, 1), 1);
        // Both issued long ago: nothing waits at cycle 20.
        b.start(20);
        assert_eq!(b.choose(0b11, 0), 1);
    }
}
