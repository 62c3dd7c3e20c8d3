//! Speed of the pipeline model over every basic block of a large binary.
//!
//! Splits `.text` of a binary (default /usr/bin/python3.11, Debian's 6 MB
//! interpreter) into basic blocks at each control-flow instruction (the
//! branch ends its block, as in the analyzer's CFGs), spreads a budget of
//! instructions evenly over them, and models each block once with the
//! host-independent Golden Cove description on one thread. Prints
//! instructions modeled per second (decoding excluded, then included) and
//! the median of five passes.
//!
//! `DCPI_MODEL_DUMP=FILE` writes each block's address, cycles per
//! iteration, per-instruction M, dependency-chain bound and bottleneck, so a change that should not alter results can be checked
//! with `diff`.
//!
//! `DCPI_MODEL_DUMP_FULL=FILE` writes each block's whole analysis as one
//! JSON line (timings, stalls, timeline): the check for a change meant to
//! alter nothing at all.
//!
//! `DCPI_MODEL_ITERATIONS=N` runs every block exactly N iterations (the
//! reference the early stop is checked against).
//!
//! `DCPI_MODEL_ASM=FILE` writes the blocks as one assembly file of
//! llvm-mca regions (`# LLVM-MCA-BEGIN`/`END`), for timing `llvm-mca-19`
//! on the same blocks in one run.
//!
//! `DCPI_MODEL_CPU=NAME` models with another description than Golden
//! Cove's (the identity check of a speed change runs over all of them).
//!
//! `DCPI_MODEL_ITERS=1` also prints where the simulated instructions go:
//! their share by iterations simulated and whether the block settled.
//!
//! `DCPI_MODEL_WHOLE=1` also models every block of the binary once and
//! prints how long that took.
//!
//! Allocates through mimalloc, as `dcpi` does (its global allocator).
//!
//! Run: cargo bench -p dcpi-models --bench model_speed -- [INSTRUCTIONS] [BINARY]

use dcpi_models::block::{decode, straight_pieces, Decoded};
use dcpi_models::machine::Machine;
use dcpi_models::schedule::{analyze, Options, RepeatMode};
use object::{Object, ObjectSection};
use std::time::Instant;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// (address, bytes) of every basic block of `.text`, at most 64 instructions each.
fn basic_blocks(path: &str) -> Vec<(u64, Vec<u8>)> {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let file = object::File::parse(&*data).expect("an ELF file");
    let text = file.section_by_name(".text").expect("a .text section");
    straight_pieces(text.data().expect(".text data"), text.address(), 64)
}

/// Where the simulated instructions go: per outcome (a steady state or
/// none within the limit) and iterations simulated, the share of all the
/// instructions simulated (block size × iterations) and the blocks.
fn iteration_shares(machine: &Machine, blocks: &[(u64, Vec<Decoded>)], opts: Options) {
    let mut rows: std::collections::BTreeMap<(bool, usize), (usize, usize)> = Default::default();
    for (_, b) in blocks {
        let a = analyze(machine, b, opts);
        let s = a.simulation;
        let bucket = match s.iterations {
            i if i <= 12 => i,
            i if i <= 25 => 25,
            _ => 400,
        };
        let e = rows
            .entry((s.steady, if s.steady { bucket } else { 0 }))
            .or_default();
        e.0 += s.iterations * b.len();
        e.1 += 1;
    }
    let all: usize = rows.values().map(|r| r.0).sum();
    println!("simulated instructions: {all}");
    for ((steady, it), (insns, n)) in rows {
        let what = match (steady, it) {
            (false, _) => "never steady".to_string(),
            (true, 25) => "steady, 13-25 iterations".to_string(),
            (true, 400) => "steady, 26 and more".to_string(),
            (true, i) => format!("steady, {i} iterations"),
        };
        println!(
            "{:5.1} %  {n:6} blocks  {what}",
            100.0 * insns as f64 / all as f64
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let budget: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let binary = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| "/usr/bin/python3.11".into());
    let cpu = std::env::var("DCPI_MODEL_CPU").unwrap_or_else(|_| "golden-cove".into());
    let machine = Machine::by_name(&cpu).unwrap_or_else(|e| panic!("{cpu}: {e}"));
    let all = basic_blocks(&binary);
    let total: usize = all.iter().map(|(_, b)| b.len()).sum();
    // Every k-th block, so the sample spans the whole binary.
    let avg_bytes = total as f64 / all.len().max(1) as f64;
    let avg_len = avg_bytes / 4.0; // ~4 bytes per instruction, refined below
    let step = ((all.len() as f64 * avg_len / budget as f64).floor() as usize).max(1);
    let blocks: Vec<(u64, Vec<Decoded>)> = all
        .iter()
        .step_by(step)
        .filter_map(|(a, b)| decode(b, *a, false).ok().map(|d| (*a, d)))
        .collect();
    let insns: usize = blocks.iter().map(|(_, b)| b.len()).sum();
    println!(
        "{binary}: {} basic blocks in .text; modeling {} of them, {insns} instructions \
         (mean {:.1} per block)",
        all.len(),
        blocks.len(),
        insns as f64 / blocks.len().max(1) as f64
    );
    // DCPI_MODEL_ITERATIONS=N: run every block N iterations, no early stop
    // (a reference for the steady-state test).
    let iterations = std::env::var("DCPI_MODEL_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let opts = Options {
        mode: RepeatMode::Unrolled,
        iterations,
    };
    let dump = std::env::var_os("DCPI_MODEL_DUMP").is_some();
    let mut model_s = Vec::new();
    let mut cycles: Vec<String> = Vec::new();
    // `DCPI_MODEL_PASSES=1` for a long reference run (`DCPI_MODEL_ITERATIONS`).
    let passes: usize = std::env::var("DCPI_MODEL_PASSES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(1);
    for _pass in 0..passes {
        cycles.clear();
        let t = Instant::now();
        for (_, b) in &blocks {
            let a = std::hint::black_box(analyze(&machine, b, opts));
            if dump {
                let m: Vec<String> = a.insns.iter().map(|i| format!("{:.2}", i.m)).collect();
                cycles.push(format!(
                    "{:.4} [{}] {:.2} {}",
                    a.cycles_per_iteration,
                    m.join(" "),
                    a.bounds.dependency_chain,
                    a.bottleneck
                ));
            }
        }
        model_s.push(t.elapsed().as_secs_f64());
    }
    model_s.sort_by(f64::total_cmp);
    let t = Instant::now();
    for (a, b) in all.iter().step_by(step) {
        if let Ok(d) = decode(b, *a, false) {
            std::hint::black_box(analyze(&machine, &d, opts));
        }
    }
    let with_decode = t.elapsed().as_secs_f64();
    println!(
        "model only: {:.0} instructions/s (median of {}: {:.3} s; min {:.3}, max {:.3})",
        insns as f64 / model_s[model_s.len() / 2],
        model_s.len(),
        model_s[model_s.len() / 2],
        model_s[0],
        model_s[model_s.len() - 1]
    );
    println!(
        "decode + model: {:.0} instructions/s ({with_decode:.3} s)",
        insns as f64 / with_decode
    );
    if let Ok(path) = std::env::var("DCPI_MODEL_ASM") {
        let mut text = String::new();
        for (k, (_, b)) in blocks.iter().enumerate() {
            text += &format!("# LLVM-MCA-BEGIN b{k}\n");
            for d in b {
                text += &d.text;
                text.push('\n');
            }
            text += "# LLVM-MCA-END\n";
        }
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{path}: {e}"));
        println!("blocks written to {path} as llvm-mca regions");
    }
    if std::env::var_os("DCPI_MODEL_WHOLE").is_some() {
        let decoded: Vec<Vec<Decoded>> = all
            .iter()
            .filter_map(|(a, b)| decode(b, *a, false).ok())
            .collect();
        let n: usize = decoded.iter().map(|b| b.len()).sum();
        let t = Instant::now();
        for b in &decoded {
            std::hint::black_box(analyze(&machine, b, opts));
        }
        let s = t.elapsed().as_secs_f64();
        println!(
            "whole binary: {} blocks, {n} instructions in {s:.2} s ({:.0} instructions/s)",
            decoded.len(),
            n as f64 / s
        );
    }
    if std::env::var_os("DCPI_MODEL_ITERS").is_some() {
        iteration_shares(&machine, &blocks, opts);
    }
    if let Ok(path) = std::env::var("DCPI_MODEL_DUMP") {
        let text: String = blocks
            .iter()
            .zip(&cycles)
            .map(|((a, _), c)| format!("{a:#x} {c}\n"))
            .collect();
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{path}: {e}"));
        println!("per-block cycles written to {path}");
    }
    if let Ok(path) = std::env::var("DCPI_MODEL_DUMP_FULL") {
        let text: String = blocks
            .iter()
            .map(|(_, b)| serde_json::to_string(&analyze(&machine, b, opts)).expect("json") + "\n")
            .collect();
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{path}: {e}"));
        println!("per-block analyses written to {path}");
    }
}
