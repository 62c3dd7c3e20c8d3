//! Analyzes one block N times: the cost of a single analysis, for
//! callgrind (what a block of a given shape costs, fixed parts included,
//! where `model_speed` averages over a binary's blocks).
//!
//! Run: cargo build --release -p dcpi-models --example fixed_cost, then
//! valgrind --tool=callgrind --toggle-collect='dcpi_models::schedule::analyze*'
//! target/release/examples/fixed_cost HEX N [CPU], twice at two N: the
//! difference of the counts over the difference of N is one analysis
//! (the first also pays one-time tables). CPU defaults to golden-cove,
//! the description `model_speed` uses.

use dcpi_models::block::{decode, parse_hex};
use dcpi_models::machine::Machine;
use dcpi_models::schedule::{analyze, Options, RepeatMode};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(hex), Some(n)) = (
        args.first(),
        args.get(1).and_then(|n| n.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: fixed_cost HEX N [CPU]");
        std::process::exit(2);
    };
    let cpu = args.get(2).map_or("golden-cove", |s| s.as_str());
    let machine = Machine::by_name(cpu).unwrap_or_else(|e| panic!("{cpu}: {e}"));
    let bytes = parse_hex(hex).unwrap_or_else(|e| panic!("{hex}: {e}"));
    let block = decode(&bytes, 0x1000, false).unwrap_or_else(|e| panic!("{hex}: {e}"));
    let opts = Options {
        mode: RepeatMode::Unrolled,
        iterations: 0,
    };
    for _ in 0..n {
        std::hint::black_box(analyze(&machine, &block, opts));
    }
}
