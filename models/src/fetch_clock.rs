//! The front end's clock for the simulation ([`crate::simulate`]): the
//! cycle each instruction is fetched in at the earliest, by the taken
//! branches a cycle can follow, the aligned lines it fetches from
//! ([`Machine::fetch_line_bytes`]) and the op cache's entries
//! ([`Machine::op_cache_entry_ops`]); and where dense code's narrower
//! dispatch applies ([`Machine::dense_dispatch_width`]). Limits: the op
//! cache's slow ways are Zen 5's, measured on loops alone; other loops
//! are fetched as if from a queue (`datasets/models/op_cache_lines.py`
//! says what that leaves out).

use crate::classify::Shape;
use crate::machine::Machine;
use crate::simulate::DispatchStall;

/// The front end's clock: the cycle each instruction is fetched in at the
/// earliest, with a queue deep enough that only the fetch's own limits
/// count. It follows [`Machine::taken_branches_per_cycle`] taken branches
/// a cycle and, with [`Machine::fetch_line_bytes`], fetches one aligned
/// line a cycle: an instruction whose bytes reach into another line than
/// the one before it waits for that line's cycle. Lines are counted only
/// where the sequence comes back to the same addresses every iteration (a
/// loop, or a block ending in a taken jump); blocks laid back to back
/// drift through their lines, and the bytes a cycle bound them on average.
/// A loop whose first line holds more ops than one op-cache fetch
/// delivers ([`Machine::op_cache_entry_ops`]) is fetched line by line as
/// well, with two more cycles before each further fetch within a line,
/// and its back edge ends the cycle; so is a two-line loop whose first
/// line holds one entry or less and whose second holds more than a fetch
/// takes, its step into the second line free (Zen 5, session 61: `2,18`
/// 2.94 cycles a trip, `6,30` 4.96).
pub(crate) struct FetchClock {
    cycle: u64,
    taken: u32,
    taken_limit: u32,
    line_bytes: u64,
    line: Option<u64>,
    /// A loop fetched the slow way from the op cache: the cycles the
    /// clock moves on before each static instruction (its op-cache
    /// fetches within a line past the first); empty elsewhere.
    op_cache_waits: Vec<u8>,
    /// A two-line loop fetched the slow way whose first line holds one
    /// entry or less: its step into the second line costs no cycle.
    merged: bool,
    /// The step into the next line is free (a merged loop's, once a trip).
    line_step_free: bool,
    /// Why the clock last moved on: what an instruction waiting for it
    /// waited for.
    pub why: DispatchStall,
}

/// Bytes of the line an op-cache entry belongs to.
pub(crate) const OP_CACHE_LINE: u64 = 64;

/// Per static instruction, the cycles a loop fetched the slow way from
/// the op cache waits before it ([`Machine::op_cache_entry_ops`]), or
/// nothing where the loop's first line needs no more than one fetch and
/// the loop is not a small one whose first line holds two entries nor a
/// two-line one whose first line holds one entry and its second more
/// than a fetch takes (or `shapes` is not a loop back to its first
/// instruction). Non-empty: the loop's lines are fetched one a cycle, its
/// back edge ends the cycle; with `true` beside it (that two-line loop)
/// the step into its second line is free. `slots`: each instruction's
/// ops (0 for a branch fused with the one before it).
fn op_cache_waits(m: &Machine, shapes: &[Shape], slots: &[u32]) -> (Vec<u8>, bool) {
    let (entry, per_fetch) = (m.op_cache_entry_ops, m.op_cache_line_entries);
    let (Some(first), Some(last)) = (shapes.first(), shapes.last()) else {
        return (Vec::new(), false);
    };
    if entry == 0 || per_fetch == 0 || !last.taken || slots.len() != shapes.len() {
        return (Vec::new(), false);
    }
    // The ops from the loop's start to its first line's end (or to a
    // taken branch before it).
    let line_of = |sh: &Shape| sh.addr / OP_CACHE_LINE;
    let mut head_ops = 0;
    for (sh, &k) in shapes.iter().zip(slots) {
        if line_of(sh) != line_of(first) {
            break;
        }
        head_ops += k;
        if sh.taken {
            break;
        }
    }
    let last_line = (last.addr + last.len.max(1) as u64 - 1) / OP_CACHE_LINE;
    let one_stream = shapes[..shapes.len() - 1].iter().all(|sh| !sh.taken);
    // A first line of one entry or less before a second, last line costs
    // the trip no cycle of its own, and the loop goes the slow way only
    // where that second line holds more entries than a fetch takes (else
    // ops / 8, measured; session 61).
    let merged = head_ops <= entry
        && one_stream
        && last_line == line_of(first) + 1
        && entries_in_line(shapes, slots, entry, last_line) > per_fetch;
    if head_ops <= entry * per_fetch && !merged {
        // A loop of one fetch's ops or fewer, with no other taken branch,
        // whose first line holds more than one entry and whose bytes reach
        // past it: a line a cycle (Zen 5, measured: 7-12 ops reaching into
        // the next line 2.0 cycles a trip with 7 or more in the first line,
        // ops / 8 with 6 or fewer, at every start and nop length).
        let ops: u32 = slots.iter().sum();
        if ops <= entry * per_fetch && head_ops > entry && one_stream && last_line != line_of(first)
        {
            return (vec![0; shapes.len()], false);
        }
        return (Vec::new(), false);
    }
    // Entries in order from each taken branch's target; a fetch past a
    // line's first waits a cycle for itself and one more.
    let mut waits = vec![0u8; shapes.len()];
    let mut entries: Vec<(u64, u32)> = Vec::new();
    let mut ops = 0;
    for (s, (sh, &k)) in shapes.iter().zip(slots).enumerate() {
        for _ in 0..k {
            if ops % entry == 0 {
                let line = line_of(sh);
                let count = match entries.iter_mut().find(|e| e.0 == line) {
                    Some(e) => {
                        e.1 += 1;
                        e.1
                    }
                    None => {
                        entries.push((line, 1));
                        1
                    }
                };
                if count > per_fetch && (count - 1) % per_fetch == 0 {
                    waits[s] = waits[s].saturating_add(2);
                }
            }
            ops += 1;
        }
        if sh.taken {
            ops = 0;
        }
    }
    (waits, merged)
}

/// The op-cache entries of `entry` ops that start in `line` (64-byte
/// lines) when a sequence without taken branches inside is cut into
/// entries in order, each belonging to the line its first op is in.
fn entries_in_line(shapes: &[Shape], slots: &[u32], entry: u32, line: u64) -> u32 {
    let mut ops = 0;
    let mut count = 0;
    for (sh, &k) in shapes.iter().zip(slots) {
        if sh.addr / OP_CACHE_LINE == line {
            // The entries starting among this instruction's ops.
            count += (ops + k).div_ceil(entry) - ops.div_ceil(entry);
        }
        ops += k;
    }
    count
}

impl FetchClock {
    /// `slots`: each instruction's ops (0 for a branch fused with the one
    /// before it), for the op cache's entries; empty where not known.
    pub fn new(m: &Machine, shapes: &[Shape], slots: &[u32]) -> Self {
        let repeats = match (shapes.first(), shapes.last()) {
            (Some(first), Some(last)) => {
                last.taken || last.addr.wrapping_add(last.len as u64) == first.addr
            }
            _ => false,
        };
        let (op_cache_waits, merged) = op_cache_waits(m, shapes, slots);
        FetchClock {
            cycle: 0,
            taken: 0,
            taken_limit: m.taken_branches_per_cycle,
            line_bytes: if !op_cache_waits.is_empty() {
                OP_CACHE_LINE
            } else if repeats {
                m.fetch_line_bytes as u64
            } else {
                0
            },
            line: None,
            op_cache_waits,
            merged,
            line_step_free: merged,
            why: DispatchStall::TakenBranch,
        }
    }

    /// The cycle static instruction `s` (`sh`) is fetched in at the
    /// earliest.
    pub fn fetch(&mut self, s: usize, sh: &Shape) -> u64 {
        if let Some(first) = sh.addr.checked_div(self.line_bytes) {
            let last = (sh.addr + sh.len.max(1) as u64 - 1) / self.line_bytes;
            let (into, across) = (self.line.is_some_and(|l| l != first), last != first);
            if into || across {
                let mut steps = into as u64 + across as u64;
                if self.line_step_free {
                    self.line_step_free = false;
                    steps -= 1;
                }
                if steps > 0 {
                    self.cycle += steps;
                    self.why = DispatchStall::FetchLine;
                }
            }
            self.line = Some(last);
        }
        if let Some(&wait) = self.op_cache_waits.get(s).filter(|&&w| w > 0) {
            self.cycle += wait as u64;
            self.why = DispatchStall::OpCache;
        }
        self.cycle
    }

    /// After static instruction `s` (`sh`) is fetched: a taken branch ends
    /// its cycle's fetch once the cycle has followed as many as it can (a
    /// slow op-cache loop's back edge, always).
    pub fn passed(&mut self, s: usize, sh: &Shape) {
        if !sh.taken {
            return;
        }
        self.line = None;
        if !self.op_cache_waits.is_empty() && s + 1 == self.op_cache_waits.len() {
            self.cycle += 1;
            self.taken = 0;
            self.line_step_free = self.merged;
            self.why = DispatchStall::OpCache;
        } else if self.taken_limit > 0 {
            self.taken += 1;
            if self.taken >= self.taken_limit {
                self.cycle += 1;
                self.taken = 0;
                self.why = DispatchStall::TakenBranch;
            }
        }
    }
}

/// Cycles per iteration [`FetchClock`] needs for the lines `shapes` are
/// fetched from and the taken branches between them, where
/// [`Machine::fetch_line_bytes`] applies or the op cache's entries do
/// (0 elsewhere): the clock's advance over a second pass, and whether it
/// is the op cache's (a loop fed the slow way) rather than the lines'.
pub(crate) fn fetch_clock_cycles(m: &Machine, shapes: &[Shape], slots: &[u32]) -> (f64, bool) {
    let mut clock = FetchClock::new(m, shapes, slots);
    if clock.line_bytes == 0 {
        return (0.0, false);
    }
    let pass = |clock: &mut FetchClock| {
        for (s, sh) in shapes.iter().enumerate() {
            clock.fetch(s, sh);
            clock.passed(s, sh);
        }
        clock.cycle
    };
    let first = pass(&mut clock);
    (
        (pass(&mut clock) - first) as f64,
        !clock.op_cache_waits.is_empty(),
    )
}

/// [`Machine::dense_dispatch_width`] where it applies: straight-line code
/// (a sequence that does not end in a taken branch), 0 in a loop. Zen 5,
/// measured (session 60, `datasets/models/loop_front_end.py`): loops of
/// 3-byte eliminated moves whose first line needs one op-cache fetch run
/// at eight a cycle (13 ops at line offset 32 1.59 cycles a trip), as do
/// loops of 2- and 3-byte loads, adds and moves (16 and 24 a trip 2.12 and
/// 3.12): the dense-code width bound made them 14 % slower.
pub(crate) fn dense_dispatch_width(m: &Machine, shapes: &[Shape]) -> u32 {
    if shapes.last().is_some_and(|l| l.taken) {
        0
    } else {
        m.dense_dispatch_width
    }
}

/// Cycles per iteration dense code dispatches in where
/// [`dense_dispatch_width`] applies ([`Machine::dense_dispatch_cycles`]),
/// 0 in a loop: one rule for the simulation's bound and the reported one.
pub(crate) fn dense_code_cycles(m: &Machine, shapes: &[Shape], slots: u32, bytes: u32) -> f64 {
    if dense_dispatch_width(m, shapes) > 0 {
        m.dense_dispatch_cycles(slots, bytes)
    } else {
        0.0
    }
}
