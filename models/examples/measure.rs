//! Measures blocks on the host with the BHive-style harness and prints the
//! measured cycles per copy beside the host model's prediction; a tool for
//! checking a machine description against the machine.
//!
//! Run: cargo run --release -p dcpi-models --example measure -- HEX [HEX...]
//! (each HEX one block, bytes separated by spaces or not).
//!
//! `DCPI_MEASURE_MODEL_ONLY=1` skips the measurement and prints the model's
//! cycles alone, e.g. to compare two machine descriptions over a saved
//! BHive set (`datasets/models/bhive-*.tsv`); `DCPI_MACHINE=NAME|FILE.toml`
//! models with another description than the host's;
//! `DCPI_MEASURE_ITERATIONS=N` runs the model N iterations (the second half
//! measured) instead of stopping at its first steady state.

use dcpi_models::block::{decode, parse_hex};
use dcpi_models::harness::{measurable_indexed, measure};
use dcpi_models::machine::Machine;
use dcpi_models::schedule::{analyze, Options, RepeatMode};

fn main() {
    // DCPI_MACHINE=NAME|FILE.toml models with another description.
    let machine = Machine::from_env_or_host().unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let model_only = std::env::var_os("DCPI_MEASURE_MODEL_ONLY").is_some();
    for arg in std::env::args().skip(1) {
        let bytes = match parse_hex(&arg) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("{arg}: {e}");
                continue;
            }
        };
        let block = match decode(&bytes, 0, false) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("{arg}: {e}");
                continue;
            }
        };
        let instructions: Vec<_> = block.iter().map(|d| d.instr).collect();
        if let Some(why) = measurable_indexed(&instructions) {
            eprintln!("{arg}: not measurable: {why}");
            continue;
        }
        let measured = if model_only {
            None
        } else {
            measure(&bytes, instructions.len(), 0).map(|m| m.cycles)
        };
        let options = Options {
            mode: RepeatMode::Unrolled,
            iterations: std::env::var("DCPI_MEASURE_ITERATIONS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0),
        };
        let model = analyze(&machine, &block, options).cycles_per_iteration;
        println!(
            "{arg}\tmeasured {}\tmodel {:.4}",
            measured.map_or("-".into(), |c| format!("{c:.4}")),
            model
        );
    }
}
