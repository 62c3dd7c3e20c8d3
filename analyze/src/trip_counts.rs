//! Loops whose trip count their code states: how many times the header
//! runs each time the loop is entered, when that is a constant — the
//! compiler's `for (i = 0; i < N; i++)` and `for (p = a; p != a + N; p++)`
//! over a static array. Such a count ties the loop's blocks to the code
//! around it exactly, whatever the samples say: hashtab's `main` runs its
//! insert loop and its lookup loop 20,000 times a round each, so the
//! inserts are counted as well as the lookups are.
//!
//! A loop qualifies when:
//! - it leaves only by one conditional branch (no return, tail call,
//!   `break` to elsewhere or indirect jump inside), in a block of this loop
//!   (not of a loop inside it) that every pass through the loop reaches;
//! - the flags that branch tests come from `cmp` of an induction register
//!   with a bound, or from stepping the induction register itself (`sub
//!   $1,%ecx; jne`);
//! - the induction register is written in the loop only by one step of a
//!   constant (`add`, `sub`, `inc`, `dec`, `lea d(%r),%r`) on every pass,
//!   and nothing else (no call may change it: see
//!   [`crate::register_values::CallClobbers`]);
//! - the bound is an immediate or a register the loop never writes;
//! - both are known constants on entry ([`crate::register_values`]) and
//!   the count is reached without the register wrapping around.
//!
//! Limits: a bound or start known only relative to another register (a
//! pointer argument plus a constant) is not followed; nor are loops whose
//! count is a run-time value, which are most.

use crate::cfg::Cfg;
use crate::register_values::{
    gpr_index, immediate, register_values, written_gprs, CallClobbers, Registers,
};
use iced_x86::{ConditionCode, FlowControl, Instruction, InstructionInfoFactory, Mnemonic, OpKind};

/// Most trips a count may state (beyond it the loop is taken for one that
/// does not end by its count).
const MOST_TRIPS: u64 = 1 << 40;

/// Per loop of `cfg` (as [`Cfg::loops`]): how many times its header runs
/// per entry, where the code states it (see the module).
pub fn trip_counts(cfg: &Cfg, clobbers: CallClobbers) -> Vec<Option<u64>> {
    if cfg.loops.is_empty() {
        return Vec::new();
    }
    let values = register_values(cfg, clobbers);
    let mut info = InstructionInfoFactory::new();
    (0..cfg.loops.len())
        .map(|l| loop_trips(cfg, l, &values, clobbers, &mut info))
        .collect()
}

/// One side of the comparison the exit branch tests.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Side {
    Register(usize),
    Immediate(u64),
}

/// What the exit branch compares: `cmp lhs, rhs` in Intel order, or the
/// stepped register's own result against zero (`zero_result`).
struct Test {
    lhs: Side,
    rhs: Side,
    /// Operand width in bytes (4 or 8).
    width: u32,
    /// Index (in the block) of the instruction setting the flags.
    at: usize,
    /// The flags come from the step itself: its result against zero
    /// (`add`, `inc`, `dec`) or its input against its operand (`sub`).
    by_step: bool,
}

fn side(i: &Instruction, n: u32) -> Option<Side> {
    match i.op_kind(n) {
        OpKind::Register => gpr_index(i.op_register(n)).map(Side::Register),
        _ => immediate(i, n).map(Side::Immediate),
    }
}

fn register_width(i: &Instruction) -> Option<u32> {
    (i.op0_kind() == OpKind::Register)
        .then(|| i.op0_register().size() as u32)
        .filter(|w| *w == 4 || *w == 8)
}

/// The flags the exit branch (block `x`'s last instruction) tests, if a
/// comparison this module reads sets them.
fn exit_test(cfg: &Cfg, x: usize) -> Option<Test> {
    let insns = &cfg.insns[cfg.blocks[x].insns.clone()];
    let (branch, before) = insns.split_last()?;
    let at = before
        .iter()
        .rposition(|d| d.instr.rflags_modified() != 0)?;
    let i = &before[at].instr;
    let width = register_width(i)?;
    let equality = matches!(
        branch.instr.condition_code(),
        ConditionCode::e | ConditionCode::ne
    );
    let test = |lhs, rhs, by_step| Test {
        lhs,
        rhs,
        width,
        at,
        by_step,
    };
    match i.mnemonic() {
        Mnemonic::Cmp => Some(test(side(i, 0)?, side(i, 1)?, false)),
        // Flags of `sub r, imm` are those of `cmp r, imm` before the step.
        Mnemonic::Sub if i.op1_kind() != OpKind::Register => {
            Some(test(side(i, 0)?, side(i, 1)?, true))
        }
        Mnemonic::Add | Mnemonic::Inc | Mnemonic::Dec if equality => {
            Some(test(side(i, 0)?, Side::Immediate(0), true))
        }
        _ => None,
    }
}

/// The constant an instruction adds to its destination register, if it is
/// such a step of register `r`.
fn step_of(i: &Instruction, r: usize) -> Option<i64> {
    if i.op0_kind() != OpKind::Register || gpr_index(i.op0_register()) != Some(r) {
        return None;
    }
    match i.mnemonic() {
        Mnemonic::Add => Some(immediate(i, 1)? as i64),
        Mnemonic::Sub => Some((immediate(i, 1)? as i64).wrapping_neg()),
        Mnemonic::Inc => Some(1),
        Mnemonic::Dec => Some(-1),
        Mnemonic::Lea
            if gpr_index(i.memory_base()) == Some(r)
                && i.memory_index() == iced_x86::Register::None =>
        {
            Some(i.memory_displacement64() as i64)
        }
        _ => None,
    }
}

/// Whether `cmp a, b` satisfies `cc`, `a` and `b` taken as the integers
/// they stand for (already read as signed or unsigned, as `cc` compares).
fn holds(cc: ConditionCode, a: i128, b: i128) -> Option<bool> {
    Some(match cc {
        ConditionCode::e => a == b,
        ConditionCode::ne => a != b,
        ConditionCode::b | ConditionCode::l => a < b,
        ConditionCode::ae | ConditionCode::ge => a >= b,
        ConditionCode::be | ConditionCode::le => a <= b,
        ConditionCode::a | ConditionCode::g => a > b,
        _ => return None,
    })
}

fn is_signed(cc: ConditionCode) -> bool {
    matches!(
        cc,
        ConditionCode::l | ConditionCode::ge | ConditionCode::le | ConditionCode::g
    )
}

/// The number of the first test (from 1) at which the loop leaves: the
/// tested value at test n is `start + (n - pre) · step` (`pre` 1 when the
/// test sees the value before that pass's step), compared as `cmp value,
/// bound` (or `cmp bound, value` when `swapped`), the loop going on while
/// `cc` holds (`on_true`) or while it does not. The values are followed as
/// integers: None when one tested on the way would not fit the register
/// (the loop would wrap around first), or no test up to [`MOST_TRIPS`]
/// leaves.
#[allow(clippy::too_many_arguments)]
fn first_exit(
    start: u64,
    step: i64,
    pre: u64,
    bound: u64,
    swapped: bool,
    cc: ConditionCode,
    on_true: bool,
    width: u32,
) -> Option<u64> {
    let bits = 8 * width;
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    // Values as integers of the comparison's kind, so "no wrap" is a range.
    let as_int = |v: u64| -> i128 {
        let v = (v & mask) as i128;
        if is_signed(cc) && v >> (bits - 1) == 1 {
            v - (1i128 << bits)
        } else {
            v
        }
    };
    let (lo, hi) = if is_signed(cc) {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    let (s, b) = (as_int(start), as_int(bound));
    let value = |n: u64| s + (n as i128 - pre as i128) * step as i128;
    let leaves = |n: u64| -> Option<bool> {
        let v = value(n);
        let (x, y) = if swapped { (b, v) } else { (v, b) };
        Some(holds(cc, x, y)? != on_true)
    };
    let n = if leaves(1)? {
        1
    } else if matches!(cc, ConditionCode::e | ConditionCode::ne) {
        // Leaves at the one test where value == bound (or != bound).
        if on_true == (cc == ConditionCode::e) {
            // Goes on while equal: the value moves on at the next test.
            2
        } else {
            let diff = b - s;
            if step == 0 || diff % step as i128 != 0 {
                return None;
            }
            u64::try_from(diff / step as i128 + pre as i128).ok()?
        }
    } else {
        // A linear value against a fixed bound: once the loop leaves, it
        // would at every later test too. The first such test, by halving.
        let (mut lo_n, mut hi_n) = (1u64, MOST_TRIPS);
        if !leaves(hi_n)? {
            return None;
        }
        while hi_n - lo_n > 1 {
            let mid = lo_n + (hi_n - lo_n) / 2;
            if leaves(mid)? {
                hi_n = mid;
            } else {
                lo_n = mid;
            }
        }
        hi_n
    };
    // Every value tested on the way within range: no wrap-around.
    let in_range = |v: i128| (lo..=hi).contains(&v);
    ((1..=MOST_TRIPS).contains(&n) && in_range(value(1)) && in_range(value(n)) && leaves(n)?)
        .then_some(n)
}

fn loop_trips(
    cfg: &Cfg,
    l: usize,
    values: &crate::register_values::RegisterValues,
    clobbers: CallClobbers,
    info: &mut InstructionInfoFactory,
) -> Option<u64> {
    let lp = &cfg.loops[l];
    if lp.body.iter().any(|&b| cfg.blocks[b].exit.is_some()) {
        return None;
    }
    // One way out, a conditional branch of this loop's own blocks.
    let mut exits = cfg
        .edges
        .iter()
        .filter(|e| lp.contains(e.from) && !lp.contains(e.to));
    let exit = *exits.next()?;
    if exits.next().is_some() {
        return None;
    }
    let x = exit.from;
    let branch = cfg.last_insn(x);
    if branch.instr.flow_control() != FlowControl::ConditionalBranch
        || cfg.loops_of[x].last() != Some(&l)
    {
        return None;
    }
    let latches: Vec<usize> = cfg
        .predecessors(lp.header)
        .filter(|e| lp.contains(e.from))
        .map(|e| e.from)
        .collect();
    let every_pass = |b: usize| {
        cfg.loops_of[b].last() == Some(&l) && latches.iter().all(|&t| cfg.dominates(b, t))
    };
    if !every_pass(x) {
        return None;
    }
    let test = exit_test(cfg, x)?;
    // The registers the loop writes, and where.
    let mut writes: Vec<(usize, usize, u16)> = Vec::new();
    for &b in &lp.body {
        for k in cfg.blocks[b].insns.clone() {
            let d = &cfg.insns[k];
            let mut w = written_gprs(info, &d.instr);
            if matches!(
                d.instr.flow_control(),
                FlowControl::Call | FlowControl::IndirectCall
            ) {
                w |= clobbers(d);
            }
            if w != 0 {
                writes.push((b, k, w));
            }
        }
    }
    let writers = |r: usize| writes.iter().filter(move |w| w.2 >> r & 1 == 1);
    let written = |s: Side| matches!(s, Side::Register(r) if writers(r).next().is_some());
    let (induction, bound, swapped) = match (written(test.lhs), written(test.rhs)) {
        (true, false) => (test.lhs, test.rhs, false),
        (false, true) => (test.rhs, test.lhs, true),
        _ => return None,
    };
    let Side::Register(r) = induction else {
        return None;
    };
    let mut w = writers(r);
    let &(step_block, step_at, _) = w.next()?;
    if w.next().is_some() || !every_pass(step_block) {
        return None;
    }
    let step_insn = &cfg.insns[step_at].instr;
    if register_width(step_insn) != Some(test.width) {
        return None;
    }
    let step = step_of(step_insn, r)?;
    // Does the test see the value before this pass's step?
    let first = cfg.blocks[x].insns.start;
    let pre = if test.by_step {
        if step_at != first + test.at {
            return None;
        }
        // `sub` compares its input; `add`/`inc`/`dec` their result.
        u64::from(step_insn.mnemonic() == Mnemonic::Sub)
    } else if step_block == x {
        u64::from(step_at > first + test.at)
    } else if cfg.dominates(step_block, x) {
        0
    } else if cfg.dominates(x, step_block) {
        1
    } else {
        return None;
    };
    // Values on entering the loop.
    if lp.header == 0 {
        return None;
    }
    let outside: Vec<usize> = cfg
        .predecessors(lp.header)
        .filter(|e| !lp.contains(e.from))
        .map(|e| e.from)
        .collect();
    if outside.is_empty() {
        return None;
    }
    let on_entry: Registers = values.entering(outside);
    let start = on_entry[r].known()?;
    let bound = match bound {
        Side::Immediate(v) => v,
        Side::Register(b) => on_entry[b].known()?,
    };
    // The branch goes on with the loop when taken, or when it falls through.
    let taken_stays = cfg
        .block_at(branch.instr.near_branch_target())
        .is_some_and(|t| lp.contains(t));
    if taken_stays == lp.contains(exit.to) {
        return None;
    }
    first_exit(
        start,
        step,
        pre,
        bound,
        swapped,
        branch.instr.condition_code(),
        taken_stays,
        test.width,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_up_to_a_bound() {
        // for (i = 0; i < 20000; i++): add then cmp, jl back (post-step).
        let n = first_exit(0, 1, 0, 20000, false, ConditionCode::l, true, 4);
        assert_eq!(n, Some(20000));
        // p != end with 8-byte steps.
        let n = first_exit(0x4060, 8, 0, 0x2b160, true, ConditionCode::ne, true, 8);
        assert_eq!(n, Some(20000));
        // Counting down: sub $1,%ecx (cmp before the step) ; jne.
        let n = first_exit(40, -1, 1, 1, false, ConditionCode::ne, true, 4);
        assert_eq!(n, Some(40));
        // A top-tested loop: cmp before the step, leaves when i >= 10.
        let n = first_exit(0, 1, 1, 10, false, ConditionCode::ge, false, 4);
        assert_eq!(n, Some(11));
    }

    #[test]
    fn a_count_that_wraps_or_never_ends_is_none() {
        // i != 7 by steps of 2 from 0: never equal without wrapping.
        assert_eq!(
            first_exit(0, 2, 0, 7, false, ConditionCode::ne, true, 4),
            None
        );
        // i > 5 going up from 10: leaves only after wrapping.
        assert_eq!(
            first_exit(10, 1, 0, 5, false, ConditionCode::g, true, 4),
            None
        );
        // Going on while equal leaves at once or at the second test.
        assert_eq!(
            first_exit(3, 1, 0, 4, false, ConditionCode::e, true, 4),
            Some(2)
        );
    }
}
