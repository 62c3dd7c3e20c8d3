//! Decoding a basic block (or a loop body) from bytes with iced-x86.

use iced_x86::{
    Code, Decoder, DecoderOptions, Formatter, GasFormatter, Instruction, IntelFormatter,
};

/// A decoded instruction with its address and text.
#[derive(Debug, Clone)]
pub struct Decoded {
    pub addr: u64,
    pub instr: Instruction,
    pub text: String,
    /// `text` is in Intel syntax (else AT&T, objdump's default): the
    /// model names registers in its stall reasons the same way.
    pub intel: bool,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BlockError {
    #[error("not hex: {0}")]
    BadHex(String),
    #[error("cannot decode the bytes at offset {offset} (address {addr:#x}): {bytes}")]
    Undecodable {
        offset: usize,
        addr: u64,
        bytes: String,
    },
    #[error("the block is empty")]
    Empty,
}

/// Parses hex text ("48 01 d8", "4801d8", "0x48,0x01").
pub fn parse_hex(text: &str) -> Result<Vec<u8>, BlockError> {
    let cleaned: String = text
        .split(|c: char| c.is_whitespace() || c == ',')
        .map(|t| t.trim_start_matches("0x").trim_start_matches("\\x"))
        .collect::<Vec<_>>()
        .join("");
    let cleaned = cleaned.replace("\\x", "");
    if cleaned.is_empty() {
        return Err(BlockError::Empty);
    }
    if !cleaned.len().is_multiple_of(2) || !cleaned.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(BlockError::BadHex(text.trim().chars().take(60).collect()));
    }
    (0..cleaned.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&cleaned[i..i + 2], 16).map_err(|_| BlockError::BadHex(text.into()))
        })
        .collect()
}

/// Decodes every instruction of `bytes` placed at `addr`.
pub fn decode(bytes: &[u8], addr: u64, intel: bool) -> Result<Vec<Decoded>, BlockError> {
    if bytes.is_empty() {
        return Err(BlockError::Empty);
    }
    let mut d = Decoder::with_ip(64, bytes, addr, DecoderOptions::NONE);
    let mut gas = GasFormatter::new();
    let mut intel_f = IntelFormatter::new();
    // objdump's look, as the analyzer's disassembly: lower-case hex,
    // branch targets without leading zeros, RIP-relative operands as
    // written, no space after commas.
    for o in [gas.options_mut(), intel_f.options_mut()] {
        o.set_uppercase_hex(false);
        o.set_branch_leading_zeros(false);
        o.set_rip_relative_addresses(true);
        o.set_space_after_operand_separator(false);
    }
    let mut out = Vec::new();
    while d.can_decode() {
        let offset = d.position();
        let i = d.decode();
        if i.code() == Code::INVALID {
            let end = (offset + 8).min(bytes.len());
            return Err(BlockError::Undecodable {
                offset,
                addr: addr + offset as u64,
                bytes: bytes[offset..end]
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<Vec<_>>()
                    .join(" "),
            });
        }
        let mut text = String::new();
        if intel {
            intel_f.format(&i, &mut text);
        } else {
            gas.format(&i, &mut text);
        }
        out.push(Decoded {
            addr: i.ip(),
            instr: i,
            text,
            intel,
        });
    }
    Ok(out)
}

/// Splits code placed at `addr` (a `.text` section) into straight-line
/// pieces as a whole-binary sweep models them: each ends at a
/// control-flow instruction (the branch in its piece, as in the
/// analyzer's CFGs) or after `max_len` instructions; an undecodable byte
/// starts the next piece after it, and code after the last branch that
/// fills no piece is left out. (address, bytes) of each.
pub fn straight_pieces(code: &[u8], addr: u64, max_len: usize) -> Vec<(u64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut d = Decoder::with_ip(64, code, addr, DecoderOptions::NONE);
    let (mut start, mut count) = (0usize, 0usize);
    while d.can_decode() {
        let i = d.decode();
        if i.is_invalid() {
            start = d.position();
            count = 0;
            continue;
        }
        count += 1;
        if i.flow_control() != iced_x86::FlowControl::Next || count == max_len {
            let end = d.position();
            out.push((addr + start as u64, code[start..end].to_vec()));
            start = end;
            count = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_forms_and_errors() {
        assert_eq!(parse_hex("48 01 d8").unwrap(), vec![0x48, 0x01, 0xd8]);
        assert_eq!(parse_hex("0x48,0x01,0xd8").unwrap(), vec![0x48, 0x01, 0xd8]);
        assert_eq!(
            parse_hex("\\x48\\x01\\xd8").unwrap(),
            vec![0x48, 0x01, 0xd8]
        );
        assert!(matches!(parse_hex("48 0"), Err(BlockError::BadHex(_))));
        assert!(matches!(parse_hex("zz"), Err(BlockError::BadHex(_))));
        assert_eq!(parse_hex(" "), Err(BlockError::Empty));
    }

    #[test]
    fn decodes_and_reports_undecodable_bytes() {
        let b = decode(&[0x48, 0x01, 0xd8, 0xc3], 0x1000, false).unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].text, "add %rbx,%rax");
        assert_eq!(b[1].addr, 0x1003);
        let err = decode(&[0x48, 0x01, 0xd8, 0x06], 0x1000, false).unwrap_err();
        assert!(
            matches!(err, BlockError::Undecodable { offset: 3, .. }),
            "{err:?}"
        );
        // A truncated instruction is undecodable too.
        assert!(decode(&[0x48, 0x01], 0, false).is_err());
    }

    #[test]
    fn straight_pieces_end_at_branches_and_skip_bad_bytes() {
        // add %rbx,%rax; ret; 06 90 (iced: one invalid instruction, `06`
        // has no meaning in 64-bit mode); nop; nop; nop
        let code = [0x48, 0x01, 0xd8, 0xc3, 0x06, 0x90, 0x90, 0x90, 0x90];
        let p = straight_pieces(&code, 0x1000, 2);
        assert_eq!(
            p,
            vec![
                (0x1000, vec![0x48, 0x01, 0xd8, 0xc3]),
                (0x1006, vec![0x90, 0x90]),
            ]
        );
    }
}
