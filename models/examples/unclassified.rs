//! Which instructions of real binaries the model's tables leave out: decodes
//! `.text` of each binary named, classifies every instruction, and prints
//! the mnemonics whose class the model guessed, most frequent first
//! (a disassembly of data is among them: `in`, `out`, `hlt`, ...).
//!
//! Run: cargo run --release -p dcpi-models --example unclassified -- BINARY...

use dcpi_models::classify::shape;
use iced_x86::{Decoder, DecoderOptions, Formatter, GasFormatter, InstructionInfoFactory};
use object::{Object, ObjectSection};
use std::collections::HashMap;
fn main() {
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut total = 0usize;
    let mut info = InstructionInfoFactory::new();
    for path in std::env::args().skip(1) {
        let data = std::fs::read(&path).unwrap();
        let file = object::File::parse(&*data).unwrap();
        for sec in file.sections() {
            if sec.name().unwrap_or("") != ".text" {
                continue;
            }
            let code = sec.data().unwrap();
            let mut d = Decoder::with_ip(64, code, sec.address(), DecoderOptions::NONE);
            while d.can_decode() {
                let i = d.decode();
                if i.is_invalid() {
                    continue;
                }
                total += 1;
                let sh = shape(&i, &mut info);
                if sh.unknown {
                    let mut f = GasFormatter::new();
                    let mut s = String::new();
                    f.format_mnemonic(&i, &mut s);
                    *counts.entry(s).or_default() += 1;
                }
            }
        }
    }
    let mut v: Vec<_> = counts.into_iter().collect();
    v.sort_by_key(|(_, count)| std::cmp::Reverse(*count));
    let unk: usize = v.iter().map(|x| x.1).sum();
    println!("{total} instructions, {unk} unknown");
    for (m, c) in v.iter().take(60) {
        println!("{c:8} {m}");
    }
}
