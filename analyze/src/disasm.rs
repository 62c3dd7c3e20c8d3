//! Disassembly of a function with iced-x86: AT&T syntax by default (as
//! objdump), Intel on request; branch and call targets get objdump's
//! `<name+0x10>` labels. Bytes that do not decode become one-byte `(bad)`
//! entries, as objdump shows them, so a function with data in its text
//! still disassembles.

use dcpi_models::block::Decoded;
use iced_x86::{
    Code, Decoder, DecoderOptions, FlowControl, Formatter, GasFormatter, IntelFormatter, OpKind,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Syntax {
    #[default]
    Att,
    Intel,
}

/// Target of a direct near branch or call.
pub fn direct_target(d: &Decoded) -> Option<u64> {
    match d.instr.op0_kind() {
        OpKind::NearBranch64 | OpKind::NearBranch32 | OpKind::NearBranch16 => {
            Some(d.instr.near_branch_target())
        }
        _ => None,
    }
}

/// True for undecodable bytes.
pub fn is_bad(d: &Decoded) -> bool {
    d.instr.code() == Code::INVALID
}

/// True for a call the CFG keeps inside its block (direct or through a
/// pointer); a `syscall` is not one: the kernel's work is no callee here.
pub fn is_call(d: &Decoded) -> bool {
    matches!(
        d.instr.flow_control(),
        iced_x86::FlowControl::Call | iced_x86::FlowControl::IndirectCall
    ) && d.instr.mnemonic() != iced_x86::Mnemonic::Syscall
}

/// True for a branch the predictor can get wrong: conditional or indirect
/// (the refetch after a mispredict lands one past its target).
pub fn may_mispredict(d: &Decoded) -> bool {
    matches!(
        d.instr.flow_control(),
        iced_x86::FlowControl::ConditionalBranch | iced_x86::FlowControl::IndirectBranch
    )
}

/// Decodes `bytes` placed at `addr`; `label` names branch/call targets.
pub fn disassemble(
    bytes: &[u8],
    addr: u64,
    syntax: Syntax,
    label: &dyn Fn(u64) -> Option<String>,
) -> Vec<Decoded> {
    let mut dec = Decoder::with_ip(64, bytes, addr, DecoderOptions::NONE);
    let mut gas = GasFormatter::new();
    let mut intel = IntelFormatter::new();
    // objdump's look: lower-case hex, branch targets without leading zeros,
    // RIP-relative operands as written (the target follows as a comment).
    for o in [gas.options_mut(), intel.options_mut()] {
        o.set_uppercase_hex(false);
        o.set_branch_leading_zeros(false);
        o.set_rip_relative_addresses(true);
        o.set_space_after_operand_separator(false);
    }
    let mut out = Vec::new();
    while dec.can_decode() {
        let pos = dec.position();
        let i = dec.decode();
        if i.code() == Code::INVALID {
            // Resynchronise one byte further on, as objdump does.
            let mut bad = iced_x86::Instruction::default();
            bad.set_ip(addr + pos as u64);
            bad.set_len(1);
            bad.set_code(Code::INVALID);
            out.push(Decoded {
                addr: addr + pos as u64,
                instr: bad,
                text: "(bad)".into(),
                intel: syntax == Syntax::Intel,
            });
            dec.set_position(pos + 1).expect("inside the buffer");
            dec.set_ip(addr + pos as u64 + 1);
            continue;
        }
        let mut text = String::new();
        match syntax {
            Syntax::Att => gas.format(&i, &mut text),
            Syntax::Intel => intel.format(&i, &mut text),
        }
        let d = Decoded {
            addr: i.ip(),
            instr: i,
            text,
            intel: syntax == Syntax::Intel,
        };
        let branchy = matches!(
            i.flow_control(),
            FlowControl::Call | FlowControl::UnconditionalBranch | FlowControl::ConditionalBranch
        );
        let mut d = d;
        if branchy {
            if let Some(name) = direct_target(&d).and_then(label) {
                d.text.push_str(&format!(" <{name}>"));
            }
        } else if i.is_ip_rel_memory_operand() {
            let target = i.ip_rel_memory_address();
            match label(target) {
                Some(name) => d.text.push_str(&format!("  # {target:x} <{name}>")),
                None => d.text.push_str(&format!("  # {target:x}")),
            }
        }
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn att_and_intel_with_labels_and_bad_bytes() {
        // add %rbx,%rax; jne back to start; (bad); ret
        let bytes = [0x48, 0x01, 0xd8, 0x75, 0xfb, 0x06, 0xc3];
        let label = |a: u64| (a == 0x1000).then(|| "f".to_string());
        let att = disassemble(&bytes, 0x1000, Syntax::Att, &label);
        assert_eq!(att.len(), 4);
        assert_eq!(att[0].text, "add %rbx,%rax");
        assert!(att[1].text.ends_with("<f>"), "{}", att[1].text);
        assert_eq!(direct_target(&att[1]), Some(0x1000));
        assert!(is_bad(&att[2]));
        assert_eq!(att[2].text, "(bad)");
        assert_eq!(att[3].addr, 0x1006);
        let intel = disassemble(&bytes, 0x1000, Syntax::Intel, &label);
        assert_eq!(intel[0].text, "add rax,rbx");
    }
}
