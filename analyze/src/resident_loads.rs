//! Which loads read data that stays in the L1 cache while their code is
//! hot: a fixed address (rip-relative), or a small static object (a lookup
//! table of at most [`SMALL_OBJECT`] bytes) addressed from a base register
//! the function sets only once, with `lea object(%rip)`. Such a load's
//! consumer waits its latency, not a miss: its samples are evidence of how
//! often it ran, not suspects (codec's CRC loop: 8 cycles per byte through
//! a 1 KiB table, all its samples on the table load and after it).
//!
//! Limits: the object's size comes from its ELF symbol (none in a stripped
//! image: then nothing but rip-relative loads counts); a base register
//! copied from another register, or set in a caller, is not followed.

use crate::elf_symbols::ElfSymbols;
use crate::register_values::{gpr_index, written_gprs};
use dcpi_models::block::Decoded;
use iced_x86::{InstructionInfoFactory, Mnemonic, Register};

/// Static objects up to this size count as L1-resident (a sixth of the
/// smallest L1 data cache of the machines described, 32 KiB).
pub const SMALL_OBJECT: u64 = 8 * 1024;

/// Per instruction: it reads memory that stays in L1 (see the module).
pub fn resident_loads(insns: &[Decoded], symbols: &ElfSymbols) -> Vec<bool> {
    // Per general register: how many instructions write it, and the last one.
    let mut writers = [(0usize, 0usize); 16];
    let mut info = InstructionInfoFactory::new();
    for (k, d) in insns.iter().enumerate() {
        if crate::disasm::is_bad(d) {
            continue;
        }
        let written = written_gprs(&mut info, &d.instr);
        for (r, w) in writers.iter_mut().enumerate() {
            if written >> r & 1 == 1 {
                *w = (w.0 + 1, k);
            }
        }
    }
    insns
        .iter()
        .map(|d| {
            let Some(base) = crate::culprits::reads_memory(d) else {
                return false;
            };
            if base == Register::RIP {
                return true;
            }
            let Some((1, only)) = gpr_index(base).map(|r| writers[r]) else {
                return false;
            };
            let set = &insns[only].instr;
            set.mnemonic() == Mnemonic::Lea
                && set.memory_base() == Register::RIP
                && symbols
                    .data_object_size(set.ip_rel_memory_address())
                    .is_some_and(|size| size <= SMALL_OBJECT)
        })
        .collect()
}
