//! Whether a callee's return value decides a branch soon after its call.
//!
//! A straight-line leaf's dependency chain runs exposed or hidden depending
//! on the code around it (see [`crate::frequency::RANGE_LEAN`]). One thing
//! the callers show is what waits on the result: a conditional branch
//! whose flags come from it (msort's `compare`, whose result decides
//! merge's mispredicting branch; hashtab's `hash`, whose result is the
//! address of a load that decides the probe loop's branch; btree's
//! `next_random`, whose result decides `r % 5`) cannot resolve before the
//! chain has run, so the chain is on the path the core waits for. A result
//! that is only stored or handed to the next call (hashtab's `next_key`)
//! has nothing waiting on it before the caller's older work retires: the
//! chain runs in that work's shadow, at the leaf's throughput.
//!
//! [`result_decides_branch`] follows the return value (`%rax`) through the
//! caller's instructions after the call, in address order, to the next
//! call, return or jump (at most [`RESULT_REACH`] instructions): registers
//! computed from it (a load from an address computed from it too) carry
//! it, registers written from other values lose it, flags set from it
//! carry it into `cmov`/`set`/`adc`, and a conditional branch reading
//! flags it set is a decision.
//!
//! Limits: one path (the fall-through one); a result stored and loaded
//! back is lost; an indirect call's callers are not seen (textproc's
//! handlers called through a table keep the default lean).

use crate::function_code::FunctionCode;
use crate::register_values::{gpr_index, written_gprs};
use dcpi_models::block::Decoded;
use iced_x86::{FlowControl, InstructionInfoFactory, OpAccess};

/// Instructions after a call followed for its result.
pub const RESULT_REACH: usize = 16;

/// Whether the value a call at `insns[after - 1]` returns in `%rax`
/// decides a conditional branch among the instructions from `after` on
/// (see the module docs).
pub fn result_decides_branch(
    insns: &[Decoded],
    after: usize,
    info: &mut InstructionInfoFactory,
) -> bool {
    let mut carried: u16 = 1; // %rax
    let mut flags = false;
    for d in insns.iter().skip(after).take(RESULT_REACH) {
        let i = &d.instr;
        match i.flow_control() {
            FlowControl::ConditionalBranch => {
                if flags {
                    return true;
                }
                continue;
            }
            FlowControl::Next => {}
            _ => return false,
        }
        // The registers it reads, memory operands' bases and indexes included.
        let mut from_result = info
            .info(i)
            .used_registers()
            .iter()
            .filter(|u| {
                matches!(
                    u.access(),
                    OpAccess::Read
                        | OpAccess::CondRead
                        | OpAccess::ReadWrite
                        | OpAccess::ReadCondWrite
                )
            })
            .filter_map(|u| gpr_index(u.register()))
            .any(|k| carried & 1 << k != 0);
        // `cmov`, `set`, `adc`: a value computed from the result.
        from_result |= flags && i.rflags_read() != 0;
        let written = written_gprs(info, i);
        if from_result {
            carried |= written;
        } else {
            carried &= !written;
        }
        if i.rflags_modified() != 0 {
            flags = from_result;
        }
        if carried == 0 && !flags {
            return false;
        }
    }
    false
}

/// Counts, for each function of `codes`, the direct calls into it from
/// `codes` and those whose result decides a branch
/// ([`FunctionCode::result_sites`]).
pub fn count_result_sites(codes: &mut [FunctionCode]) {
    let mut info = InstructionInfoFactory::new();
    let mut counts = vec![(0u32, 0u32); codes.len()];
    for (caller, i, callee) in crate::return_charges::direct_calls(codes) {
        let insns = &codes[caller].cfg.insns;
        counts[callee].0 += 1;
        counts[callee].1 += result_decides_branch(insns, i + 1, &mut info) as u32;
    }
    for (code, c) in codes.iter_mut().zip(counts) {
        code.result_sites = c;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `call` (a rel32 to the next instruction) followed by `after`.
    fn decides(after: &[u8]) -> bool {
        let mut bytes = vec![0xe8, 0, 0, 0, 0];
        bytes.extend_from_slice(after);
        let insns = dcpi_models::block::decode(&bytes, 0x1000, false).expect("valid code");
        result_decides_branch(&insns, 1, &mut InstructionInfoFactory::new())
    }

    const TEST_EAX: [u8; 2] = [0x85, 0xc0];
    const JE: [u8; 2] = [0x74, 0x00];
    const JNE: [u8; 2] = [0x75, 0x00];
    const MOV_EAX_EDX: [u8; 2] = [0x89, 0xc2];
    const LOAD_RDX_FROM_RCX_RDX8: [u8; 4] = [0x48, 0x8b, 0x14, 0xd1];
    const CMP_RDX_RDI: [u8; 3] = [0x48, 0x39, 0xd7];
    const STORE_RAX: [u8; 4] = [0x49, 0x89, 0x41, 0xf8];
    const MOV_RAX_RDI: [u8; 3] = [0x48, 0x89, 0xc7];
    const CMP_1_EBX: [u8; 3] = [0x83, 0xfb, 0x01];
    const ADD_RAX_RBP: [u8; 3] = [0x48, 0x01, 0xc5];
    const CALL: [u8; 5] = [0xe8, 0, 0, 0, 0];
    const SETE_DL: [u8; 3] = [0x0f, 0x94, 0xc2];
    const TEST_DL: [u8; 2] = [0x84, 0xd2];

    #[test]
    fn a_result_tested_by_a_branch_decides_it() {
        // msort's `compare`: `test %eax,%eax; je`.
        assert!(decides(&[TEST_EAX.as_slice(), &JE].concat()));
    }

    #[test]
    fn a_result_used_as_a_load_address_decides_the_branch_on_the_load() {
        // hashtab's `hash` in `contains`: the first probe.
        let code = [
            MOV_EAX_EDX.as_slice(),
            &LOAD_RDX_FROM_RCX_RDX8,
            &CMP_RDX_RDI,
            &JNE,
        ]
        .concat();
        assert!(decides(&code));
    }

    #[test]
    fn a_result_stored_and_passed_to_the_next_call_decides_nothing() {
        // hashtab's `next_key` in `main`: stored, passed on, a loop test on
        // other registers, then the next call.
        let code = [
            STORE_RAX.as_slice(),
            &MOV_RAX_RDI,
            &ADD_RAX_RBP,
            &CMP_1_EBX,
            &JNE,
            &CALL,
        ]
        .concat();
        assert!(!decides(&code));
    }

    #[test]
    fn flags_set_from_a_result_carry_it_through_setcc() {
        let code = [TEST_EAX.as_slice(), &SETE_DL, &TEST_DL, &JE].concat();
        assert!(decides(&code));
        // Flags set from other registers in between do not.
        let code = [TEST_EAX.as_slice(), &CMP_1_EBX, &JE].concat();
        assert!(!decides(&code));
    }
}
