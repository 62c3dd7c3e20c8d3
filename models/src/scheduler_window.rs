//! The ALU scheduler's capacity ([`crate::machine::Machine::alu_scheduler_entries`]):
//! µops on the ALU pipes wait in it from dispatch until a cycle after they
//! issue, and dispatch stops while it is full. Kept as a ring of the
//! cycles its µops leave in, counted from the dispatch clock, which only
//! moves forward: a µop waiting longer than the ring is taken to leave at
//! its end (the scheduler is full long before).

/// Cycles ahead of the dispatch clock the ring holds.
const RING: usize = 1024;

/// The µops waiting in the scheduler, by the cycle they leave it.
pub(crate) struct SchedulerWindow {
    capacity: u32,
    /// µops in it at cycle `at`.
    held: u32,
    at: u64,
    /// µops leaving at each cycle after `at`, at `cycle % RING`.
    leaving: Vec<u16>,
}

impl SchedulerWindow {
    /// A scheduler of `capacity` entries (0: unlimited, never tracked).
    pub fn new(capacity: u32) -> Self {
        SchedulerWindow {
            capacity,
            held: 0,
            at: 0,
            leaving: if capacity > 0 {
                vec![0; RING]
            } else {
                Vec::new()
            },
        }
    }

    pub fn limited(&self) -> bool {
        self.capacity > 0
    }

    /// Moves the clock to `cycle` (no earlier than it is): the µops that
    /// left by then are gone.
    fn advance(&mut self, cycle: u64) {
        if cycle <= self.at {
            return;
        }
        for c in self.at + 1..=cycle.min(self.at + RING as u64) {
            let slot = (c % RING as u64) as usize;
            self.held -= self.leaving[slot] as u32;
            self.leaving[slot] = 0;
        }
        self.at = cycle;
    }

    /// The first cycle from `cycle` on with room for `need` more µops.
    pub fn room_at(&mut self, cycle: u64, need: u32) -> u64 {
        let mut c = cycle.max(self.at);
        self.advance(c);
        if need == 0 {
            return c;
        }
        while self.held > 0 && self.held + need > self.capacity {
            c += 1;
            self.advance(c);
        }
        c
    }

    /// A µop dispatched at the clock's cycle that leaves at `leave`.
    pub fn enter(&mut self, leave: u64) {
        if leave <= self.at {
            return;
        }
        let leave = leave.min(self.at + RING as u64 - 1);
        self.leaving[(leave % RING as u64) as usize] += 1;
        self.held += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_scheduler_has_room_when_its_earliest_leave() {
        let mut s = SchedulerWindow::new(2);
        assert_eq!(s.room_at(0, 1), 0);
        s.enter(10);
        s.enter(5);
        assert_eq!(s.room_at(0, 1), 5);
        s.enter(7);
        assert_eq!(s.room_at(5, 2), 10);
        // Leaving at once (issued in its dispatch cycle): never held.
        s.enter(10);
        assert_eq!(s.room_at(10, 2), 10);
    }
}
