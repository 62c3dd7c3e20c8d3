//! dcpi — continuous profiling: where have all the cycles gone?
//!
//! A thin command line over the libraries: `dcpi-collect` samples into a
//! profile database, `dcpi-analyze` reads it back. Each subcommand lives in
//! its own module under `cli/`.

mod cli;

use clap::Parser;

fn main() {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("dcpi: error: {e:#}");
            std::process::exit(2);
        }
    }
}
