//! Which general registers hold a known constant where in a function:
//! forward constant propagation over its CFG, block by block, to a fixed
//! point. A register is known after `mov $imm`, `lea` of known addresses
//! (rip-relative ones are), a zero idiom, a copy of a known register, and
//! `add`/`sub`/`inc`/`dec` of a known one; any other write (explicit or
//! implicit, a partial write of 8 or 16 bits included) makes it varying,
//! and so does a call, for the registers the callee may change (the
//! caller's [`CallClobbers`]). Values meet at joins: equal constants stay
//! known, different ones vary.
//!
//! Limits: general registers only (no flags, vector registers or memory);
//! a block with no predecessor and the entry start with nothing known;
//! edges carry no condition (after `cmp $1,%edi; jg` nothing is learned
//! about %edi on either side).

use crate::cfg::Cfg;
use dcpi_models::block::Decoded;
use iced_x86::{
    FlowControl, Instruction, InstructionInfoFactory, Mnemonic, OpAccess, OpKind, Register,
};

/// What a register holds at a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// No path reaches the point yet (the fixed point's start).
    Unset,
    Known(u64),
    Varying,
}

impl Value {
    /// The value where two paths join.
    pub fn meet(self, other: Value) -> Value {
        match (self, other) {
            (Value::Unset, x) | (x, Value::Unset) => x,
            (Value::Known(a), Value::Known(b)) if a == b => Value::Known(a),
            _ => Value::Varying,
        }
    }

    pub fn known(self) -> Option<u64> {
        match self {
            Value::Known(v) => Some(v),
            _ => None,
        }
    }
}

/// The sixteen general registers, by [`gpr_index`].
pub type Registers = [Value; 16];

/// The registers a call may change (bit [`gpr_index`] set), given the call
/// instruction: the System V ABI's caller-saved ones at most
/// ([`CALLER_SAVED`]), fewer where the callee's code is known not to write
/// some (compilers keep values in them across calls to functions they
/// compiled: gcc's IPA register allocation).
pub type CallClobbers<'a> = &'a dyn Fn(&Decoded) -> u16;

/// rax, rcx, rdx, rsi, rdi, r8-r11 (System V x86-64).
pub const CALLER_SAVED: u16 = 0x0fc7;

/// Index 0-15 of a general register's 64-bit form (rax 0 ... r15 15).
pub fn gpr_index(r: Register) -> Option<usize> {
    let full = r.full_register();
    full.is_gpr64().then(|| full.number())
}

/// The general registers an instruction writes, explicitly or not, as a
/// mask over [`gpr_index`] (a call's clobbers not included).
pub fn written_gprs(info: &mut InstructionInfoFactory, i: &Instruction) -> u16 {
    info.info(i)
        .used_registers()
        .iter()
        .filter(|u| {
            matches!(
                u.access(),
                OpAccess::Write
                    | OpAccess::CondWrite
                    | OpAccess::ReadWrite
                    | OpAccess::ReadCondWrite
            )
        })
        .filter_map(|u| gpr_index(u.register()))
        .fold(0, |m, k| m | 1 << k)
}

fn width_mask(r: Register) -> Option<u64> {
    match r.size() {
        8 => Some(u64::MAX),
        4 => Some(0xffff_ffff),
        _ => None,
    }
}

/// An immediate operand's value (sign-extended as the instruction does).
pub fn immediate(i: &Instruction, operand: u32) -> Option<u64> {
    matches!(
        i.op_kind(operand),
        OpKind::Immediate8
            | OpKind::Immediate8to16
            | OpKind::Immediate8to32
            | OpKind::Immediate8to64
            | OpKind::Immediate16
            | OpKind::Immediate32
            | OpKind::Immediate32to64
            | OpKind::Immediate64
    )
    .then(|| i.immediate(operand))
}

fn register_value(regs: &Registers, r: Register) -> Option<u64> {
    Some(regs[gpr_index(r)?].known()? & width_mask(r)?)
}

/// The address `lea` computes, where its registers are known.
fn address(regs: &Registers, i: &Instruction) -> Option<u64> {
    let base = i.memory_base();
    if base == Register::RIP {
        return Some(i.ip_rel_memory_address());
    }
    if base != Register::None && !base.is_gpr64() {
        return None;
    }
    let index = i.memory_index();
    let base_value = match base {
        Register::None => 0,
        b => register_value(regs, b)?,
    };
    let index_value = match index {
        Register::None => 0,
        x if x.is_gpr64() => register_value(regs, x)?.wrapping_mul(i.memory_index_scale() as u64),
        _ => return None,
    };
    Some(
        base_value
            .wrapping_add(index_value)
            .wrapping_add(i.memory_displacement64()),
    )
}

/// The register `i` sets to a known value, and the value.
fn known_result(regs: &Registers, i: &Instruction) -> Option<(usize, u64)> {
    if i.op_count() == 0 || i.op0_kind() != OpKind::Register {
        return None;
    }
    let dst = i.op0_register();
    let k = gpr_index(dst)?;
    let mask = width_mask(dst)?;
    let source = |n: u32| match i.op_kind(n) {
        OpKind::Register => register_value(regs, i.op_register(n)),
        _ => immediate(i, n),
    };
    let same_source =
        i.op_count() == 2 && i.op1_kind() == OpKind::Register && i.op1_register() == dst;
    let v = match i.mnemonic() {
        Mnemonic::Mov => source(1)?,
        Mnemonic::Lea => address(regs, i)?,
        Mnemonic::Xor | Mnemonic::Sub if same_source => 0,
        Mnemonic::Add => register_value(regs, dst)?.wrapping_add(source(1)?),
        Mnemonic::Sub => register_value(regs, dst)?.wrapping_sub(source(1)?),
        Mnemonic::Inc => register_value(regs, dst)?.wrapping_add(1),
        Mnemonic::Dec => register_value(regs, dst)?.wrapping_sub(1),
        _ => return None,
    };
    Some((k, v & mask))
}

/// The registers after instruction `d`, given them before it.
pub fn step(
    regs: &mut Registers,
    d: &Decoded,
    info: &mut InstructionInfoFactory,
    clobbers: CallClobbers,
) {
    let i = &d.instr;
    let mut written = written_gprs(info, i);
    if matches!(
        i.flow_control(),
        FlowControl::Call | FlowControl::IndirectCall
    ) {
        written |= clobbers(d);
    }
    let known = known_result(regs, i);
    for (k, r) in regs.iter_mut().enumerate() {
        if written >> k & 1 == 1 {
            *r = Value::Varying;
        }
    }
    if let Some((k, v)) = known {
        regs[k] = Value::Known(v);
    }
}

/// Per block: the registers on entering it and on leaving it.
#[derive(Debug, Clone)]
pub struct RegisterValues {
    pub on_entry: Vec<Registers>,
    pub on_exit: Vec<Registers>,
}

impl RegisterValues {
    /// What the registers hold on entering `to` from the blocks `from`
    /// (their values met).
    pub fn entering(&self, from: impl IntoIterator<Item = usize>) -> Registers {
        let mut regs = [Value::Unset; 16];
        for p in from {
            for (r, v) in regs.iter_mut().zip(self.on_exit[p]) {
                *r = r.meet(v);
            }
        }
        regs
    }
}

/// Constant propagation over `cfg` (see the module).
pub fn register_values(cfg: &Cfg, clobbers: CallClobbers) -> RegisterValues {
    let n = cfg.blocks.len();
    let mut values = RegisterValues {
        on_entry: vec![[Value::Unset; 16]; n],
        on_exit: vec![[Value::Unset; 16]; n],
    };
    let mut info = InstructionInfoFactory::new();
    // Each register can only fall (unset, known, varying): a pass changes
    // something at most 32 times per block before the fixed point.
    for _ in 0..=32 * n {
        let mut changed = false;
        for b in 0..n {
            let entry = b == 0 || cfg.predecessors(b).next().is_none();
            let start = if entry {
                [Value::Varying; 16]
            } else {
                values.entering(cfg.predecessors(b).map(|e| e.from))
            };
            let mut regs = start;
            if start.iter().any(|v| *v != Value::Unset) {
                for d in &cfg.insns[cfg.blocks[b].insns.clone()] {
                    step(&mut regs, d, &mut info, clobbers);
                }
            }
            if start != values.on_entry[b] || regs != values.on_exit[b] {
                values.on_entry[b] = start;
                values.on_exit[b] = regs;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;
    use dcpi_models::block::decode;

    fn run(bytes: &[u8], clobbers: CallClobbers) -> Registers {
        let mut regs = [Value::Varying; 16];
        let mut info = InstructionInfoFactory::new();
        for d in decode(bytes, 0x1000, false).unwrap() {
            step(&mut regs, &d, &mut info, clobbers);
        }
        regs
    }

    #[test]
    fn constants_move_through_moves_leas_and_steps() {
        let bytes = [
            0xb9, 0x28, 0x00, 0x00, 0x00, // mov $0x28,%ecx
            0x48, 0x8d, 0x35, 0x10, 0x00, 0x00, 0x00, // lea 0x10(%rip),%rsi
            0x49, 0x89, 0xf1, // mov %rsi,%r9
            0x49, 0x83, 0xc1, 0x08, // add $8,%r9
            0x31, 0xc0, // xor %eax,%eax
            0x83, 0xe9, 0x01, // sub $1,%ecx
            0x88, 0xda, // mov %bl,%dl (partial: varying)
        ];
        let r = run(&bytes, &|_| CALLER_SAVED);
        let at = |reg: Register| r[gpr_index(reg).unwrap()];
        assert_eq!(at(Register::RCX), Value::Known(0x27));
        // The lea ends at 0x100c: 0x100c + 0x10.
        assert_eq!(at(Register::RSI), Value::Known(0x101c));
        assert_eq!(at(Register::R9), Value::Known(0x1024));
        assert_eq!(at(Register::RAX), Value::Known(0));
        assert_eq!(at(Register::RDX), Value::Varying);
        assert_eq!(at(Register::RBX), Value::Varying);
    }

    #[test]
    fn a_call_changes_only_what_the_callee_may() {
        let bytes = [
            0x41, 0xb8, 0x05, 0x00, 0x00, 0x00, // mov $5,%r8d
            0xbb, 0x07, 0x00, 0x00, 0x00, // mov $7,%ebx
            0xe8, 0x00, 0x00, 0x00, 0x00, // call
        ];
        let abi = run(&bytes, &|_| CALLER_SAVED);
        assert_eq!(abi[gpr_index(Register::R8).unwrap()], Value::Varying);
        assert_eq!(abi[gpr_index(Register::RBX).unwrap()], Value::Known(7));
        let leaves_r8 = run(&bytes, &|_| CALLER_SAVED & !(1 << 8));
        assert_eq!(leaves_r8[gpr_index(Register::R8).unwrap()], Value::Known(5));
        assert_eq!(Value::Known(1).meet(Value::Known(2)), Value::Varying);
        assert_eq!(Value::Unset.meet(Value::Known(2)), Value::Known(2));
    }
}
