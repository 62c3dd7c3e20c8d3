//! The x87 register stack as the dependency tracker sees it: `st(i)`
//! names a register relative to the stack's top, which pushes (`fld`)
//! and pops (`fstp`, `faddp`) move. [`rename_fpu_stack`] renames each
//! instruction's `st(i)` to the physical register it means, following the
//! top through the block from 0, so `fldt a; fldt b; fmulp` multiplies
//! the two loads. Limits: every iteration of a repeated block starts from
//! the same top (a block that pushes more than it pops, repeated, would
//! overflow the stack on the machine too); `fdecstp`/`fincstp` and
//! conditional pushes (`fsincos`, `fptan`) move the top as iced says.

use crate::block::Decoded;
use crate::classify::{class_id, Reg, Shape};
use iced_x86::Register;

const X87_FIRST: usize = class_id("x87_arith");
const X87_LAST: usize = class_id("x87_trig");
const ST0: Reg = Register::ST0 as Reg;

/// Renames `st(i)` in the shapes of a block with x87 instructions (see the
/// module's header) and gives the stack's top before each instruction
/// (for [`relative_name`]); other blocks are left as they are, with no
/// tops.
pub fn rename_fpu_stack(block: &[Decoded], shapes: &mut [Shape]) -> Vec<i32> {
    if shapes
        .iter()
        .any(|s| (X87_FIRST..=X87_LAST).contains(&usize::from(s.class_id)))
    {
        rename(block, shapes)
    } else {
        Vec::new()
    }
}

/// How an instruction whose stack top is `top` names the physical x87
/// register `r` (`%st(1)`, `st(1)` in Intel syntax); None for other
/// registers.
pub fn relative_name(r: Reg, top: i32, intel: bool) -> Option<String> {
    (ST0..ST0 + 8).contains(&r).then(|| {
        let i = (i32::from(r - ST0) - top).rem_euclid(8);
        format!("{}st({i})", if intel { "" } else { "%" })
    })
}

#[cold]
#[inline(never)]
fn rename(block: &[Decoded], shapes: &mut [Shape]) -> Vec<i32> {
    let mut tops = Vec::with_capacity(block.len());
    let mut top: i32 = 0;
    for (d, sh) in block.iter().zip(shapes) {
        tops.push(top);
        let step = d.instr.fpu_stack_increment_info().increment();
        let physical = |r: &mut Reg, top: i32| {
            if (ST0..ST0 + 8).contains(r) {
                *r = ST0 + ((top + i32::from(*r - ST0)).rem_euclid(8)) as Reg;
            }
        };
        for r in sh.reads.iter_mut() {
            physical(r, top);
        }
        // A push writes the new top; everything else names registers as
        // they were before the instruction.
        let written_at = if step < 0 { top + step } else { top };
        for r in sh.writes.iter_mut() {
            physical(r, written_at);
        }
        // iced leaves a push's destination, the new st(0), unnamed.
        if step < 0 {
            let pushed = ST0 + (written_at.rem_euclid(8)) as Reg;
            if !sh.writes.contains(&pushed) {
                sh.writes.push(pushed);
            }
        }
        top += step;
    }
    tops
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::{decode, parse_hex};
    use crate::classify::shape;
    use iced_x86::InstructionInfoFactory;

    fn renamed(hex: &str) -> Vec<Shape> {
        let block = decode(&parse_hex(hex).unwrap(), 0x1000, false).unwrap();
        let mut info = InstructionInfoFactory::new();
        let mut shapes: Vec<Shape> = block.iter().map(|d| shape(&d.instr, &mut info)).collect();
        rename_fpu_stack(&block, &mut shapes);
        shapes
    }

    fn st(i: Reg) -> Reg {
        ST0 + i
    }

    #[test]
    fn two_loads_and_a_popping_multiply_name_the_loaded_registers() {
        // fldt (%rdi); fldt (%rsi); fmulp %st,%st(1); fstpt (%rdx)
        let s = renamed("db 2f db 2e de c9 db 3a");
        assert!(s[0].writes.contains(&st(7)), "{:?}", s[0].writes);
        assert!(s[1].writes.contains(&st(6)), "{:?}", s[1].writes);
        assert!(s[2].reads.contains(&st(6)) && s[2].reads.contains(&st(7)));
        assert!(s[2].writes.contains(&st(7)));
        assert!(s[3].reads.contains(&st(7)), "{:?}", s[3].reads);
    }

    #[test]
    fn registers_are_named_as_the_reading_instruction_writes_them() {
        // After two pushes the top is 6: physical 7 is that reader's st(1).
        assert_eq!(relative_name(st(7), 6, false).as_deref(), Some("%st(1)"));
        assert_eq!(relative_name(st(6), 6, true).as_deref(), Some("st(0)"));
        assert_eq!(relative_name(Register::RAX as Reg, 0, false), None);
    }

    #[test]
    fn blocks_without_x87_code_are_left_alone() {
        let s = renamed("48 01 d8"); // add %rbx,%rax
        assert_eq!(s[0].class, "alu");
    }
}
