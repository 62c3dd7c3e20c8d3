//! A robustness sweep: models every basic block of each binary named, in
//! both repeat modes, with every bundled machine description (or those in
//! `DCPI_MODEL_CPUS`, comma-separated), and prints each block whose
//! analysis panicked — its address, bytes and text — so a crash the
//! analyzer would meet on real code is found before a user meets it.
//! Blocks are split as the `model_speed` bench splits them (at each
//! control-flow instruction, at most 64 instructions);
//! `DCPI_SWEEP_PATH=K` models paths of K blocks next to each other in
//! memory instead (the analyzer models loop bodies and hot paths of
//! several blocks: a conditional branch inside falls through).
//!
//! Run: cargo run --release -p dcpi-models --example whole_binary -- BINARY...

use dcpi_models::block::{decode, straight_pieces};
use dcpi_models::machine::Machine;
use dcpi_models::schedule::{analyze, Options, RepeatMode};
use object::{Object, ObjectSection};

/// (address, bytes) of every basic block of `.text`.
fn basic_blocks(path: &str) -> Vec<(u64, Vec<u8>)> {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let file = object::File::parse(&*data).expect("an ELF file");
    let Some(text) = file.section_by_name(".text") else {
        return Vec::new();
    };
    straight_pieces(text.data().expect(".text data"), text.address(), 64)
}

fn main() {
    let cpus = std::env::var("DCPI_MODEL_CPUS")
        .unwrap_or_else(|_| "generic,golden-cove,skylake,zen3,zen4,zen5".into());
    let machines: Vec<Machine> = cpus
        .split(',')
        .map(|c| Machine::by_name(c).unwrap_or_else(|e| panic!("{c}: {e}")))
        .collect();
    let k: usize = std::env::var("DCPI_SWEEP_PATH")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1);
    std::panic::set_hook(Box::new(|_| {}));
    let mut failures = 0usize;
    for path in std::env::args().skip(1) {
        let single = basic_blocks(&path);
        // Paths of k blocks, each starting where the one before ends.
        let blocks: Vec<(u64, Vec<u8>)> = single
            .windows(k)
            .filter(|w| w.windows(2).all(|p| p[0].0 + p[0].1.len() as u64 == p[1].0))
            .map(|w| (w[0].0, w.iter().flat_map(|b| b.1.iter().copied()).collect()))
            .collect();
        let mut modeled = 0usize;
        for (addr, bytes) in &blocks {
            let Ok(d) = decode(bytes, *addr, false) else {
                continue;
            };
            for m in &machines {
                for mode in [RepeatMode::Unrolled, RepeatMode::Loop] {
                    let opts = Options {
                        mode,
                        iterations: 0,
                    };
                    modeled += 1;
                    let run = std::panic::catch_unwind(|| analyze(m, &d, opts));
                    if let Err(e) = run {
                        failures += 1;
                        let why = e
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default();
                        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
                        let text: Vec<&str> = d.iter().map(|x| x.text.as_str()).collect();
                        println!(
                            "{path} {addr:#x} {} {mode:?}: {why}\n  --hex {hex}\n  {}",
                            m.name,
                            text.join("; ")
                        );
                    }
                }
            }
        }
        println!(
            "{path}: {} blocks, {modeled} analyses, {failures} failed so far",
            blocks.len()
        );
    }
    if failures > 0 {
        std::process::exit(1);
    }
}
