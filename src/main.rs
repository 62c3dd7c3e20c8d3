//! dcpi — continuous profiling: where have all the cycles gone?
//!
//! A thin command line over the libraries: `dcpi-collect` samples into a
//! profile database, `dcpi-analyze` reads it back. Each subcommand lives in
//! its own module under `cli/`.

mod cli;

use clap::Parser;

/// mimalloc: the analyzer allocates and frees many small vectors per block
/// and per flow solve; glibc's malloc was a fifth of `cpi --func`'s time.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("dcpi: error: {}", message(&e));
            std::process::exit(2);
        }
    }
}

/// The error and its causes, skipping a cause whose text the message already holds.
fn message(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !out.contains(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
    }
    out
}
