//! The latency of one pass through a block: its longest register
//! dependency chain, every input ready at cycle 0 (loads hit L1, moves the
//! renamer eliminates and zero idioms cost nothing).
//!
//! The steady-state models ([`crate::schedule`]) repeat a block back to back,
//! so a block whose inputs come from outside (a function's arguments) runs
//! at its throughput there. Executed once between other code — a small
//! function called from a loop whose next call needs this one's result —
//! the chain is exposed. The analyzer uses the larger of the two as a
//! block's best case outside loops.
//!
//! Pushes, pops, calls, returns and branches are left out: the stack
//! engine and the predictors keep them off the chain.
//!
//! A load from a fixed address (rip-relative, absolute) starts the chain at
//! its result: it waits for no register and issues as the block is
//! dispatched, ahead of the code before it retiring.
//!
//! Limits: memory dependencies (store then load of the same address) and
//! port contention are not on this path; the steady-state model has them.

use crate::block::Decoded;
use crate::classify::{shape, Reg};
use crate::machine::Machine;
use std::collections::HashMap;

/// Cycles from the first instruction's inputs to the last result.
pub fn critical_path(machine: &Machine, block: &[Decoded]) -> f64 {
    longest_path(machine, block, None)
}

/// Cycles from the values in `from` (ready at cycle 0) to the last result
/// that waits on them; inputs not derived from them count as ready long
/// before (a call's return value: what after it waits for the callee).
pub fn chain_from(machine: &Machine, block: &[Decoded], from: &[Reg]) -> f64 {
    longest_path(machine, block, Some(from))
}

fn longest_path(machine: &Machine, block: &[Decoded], from: Option<&[Reg]>) -> f64 {
    let mut info = iced_x86::InstructionInfoFactory::new();
    let mut ready: HashMap<Reg, u64> = HashMap::new();
    if let Some(from) = from {
        for r in from {
            ready.insert(*r, 0);
        }
    }
    let tracked = from.is_some();
    let mut end = 0u64;
    for d in block {
        use iced_x86::{FlowControl, Mnemonic};
        // Stack bookkeeping (the stack engine, the return stack) and
        // branches (predicted) hold no chain the next code waits for.
        if matches!(
            d.instr.mnemonic(),
            Mnemonic::Push | Mnemonic::Pop | Mnemonic::Call | Mnemonic::Ret | Mnemonic::Leave
        ) || d.instr.flow_control() != FlowControl::Next
        {
            continue;
        }
        let mut sh = shape(&d.instr, &mut info);
        crate::classify::name_overflow_flag(&d.instr, &mut sh);
        // Tracking `from`: a value derived from none of them is absent
        // (None), not ready at 0.
        let at = |regs: &[Reg], ready: &HashMap<Reg, u64>| -> Option<u64> {
            let t = regs.iter().filter_map(|r| ready.get(r).copied()).max();
            if tracked {
                t
            } else {
                Some(t.unwrap_or(0))
            }
        };
        if sh.zero_idiom && machine.zero_idioms {
            for w in &sh.writes {
                if tracked {
                    ready.remove(w);
                } else {
                    ready.insert(*w, 0);
                }
            }
            continue;
        }
        let reads: &[Reg] = if sh.flags_only && machine.sbb_idiom {
            &[crate::classify::FLAGS]
        } else {
            &sh.reads
        };
        let mut start = at(reads, &ready);
        // A load from a fixed address (rip-relative or absolute) waits for
        // nothing: it issues as the block is dispatched, while the code
        // before it still retires, so its latency is off the exposed chain
        // (next_key's xorshift of a global took 12 cycles by this path with
        // it, 6 without; the samples said about 5).
        if sh.load.is_some() && !sh.addr_reads.is_empty() {
            let load = machine.class(if sh.vector_mem { "vec_load" } else { "load" });
            let extra = machine.load_address_latency(&sh);
            if let Some(a) = at(&sh.addr_reads, &ready) {
                let loaded = a + u64::from(load.latency + extra);
                start = Some(start.map_or(loaded, |s| s.max(loaded)));
            }
        }
        let latency = if machine.eliminates_move(&sh) {
            0
        } else {
            u64::from(machine.class(sh.class).latency)
        };
        let Some(start) = start else {
            for w in &sh.writes {
                ready.remove(w);
            }
            continue;
        };
        let done = start + latency;
        for w in &sh.writes {
            ready.insert(*w, done);
        }
        end = end.max(done);
    }
    end as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::{decode, parse_hex};

    fn golden_cove() -> Machine {
        Machine::by_name("golden-cove").unwrap()
    }

    fn decode_hex(hex: &str, addr: u64) -> Result<Vec<Decoded>, crate::block::BlockError> {
        decode(&parse_hex(hex)?, addr, false)
    }

    #[test]
    fn a_dependent_chain_costs_its_latencies() {
        // mov %rdi,%rax; shr $33,%rax; xor %rdi,%rax; imul %rax,%rax
        let b = decode_hex("4889f848c1e8214831f8480fafc0", 0x1000).unwrap();
        // move eliminated (0) + shr 1 + xor 1 + imul 3
        assert_eq!(critical_path(&golden_cove(), &b), 5.0);
    }

    #[test]
    fn independent_instructions_overlap() {
        // add %rdi,%rax; add %rsi,%rdx; add %rcx,%r8
        let b = decode_hex("4801f84801f24901c8", 0x1000).unwrap();
        assert_eq!(critical_path(&golden_cove(), &b), 1.0);
    }

    #[test]
    fn a_chain_from_a_value_leaves_out_what_does_not_wait_for_it() {
        // mov %rax,%rsi; shr $8,%rsi; imul %rsi,%rsi (from rax: 0 + 1 + 3);
        // imul %rcx,%rcx; imul %rcx,%rcx (independent of rax: 6, left out)
        let b = decode_hex("4889c648c1ee08480faff6480fafc9480fafc9", 0x1000).unwrap();
        let rax = iced_x86::Register::RAX as Reg;
        assert_eq!(chain_from(&golden_cove(), &b, &[rax]), 4.0);
        assert_eq!(critical_path(&golden_cove(), &b), 6.0);
    }
}
