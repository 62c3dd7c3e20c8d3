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
    report_internal_errors();
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

/// A panic is a bug of ours, not the user's input: say so in one line, where
/// it happened and what to send, instead of Rust's "thread 'main' panicked"
/// and a backtrace (kept with `RUST_BACKTRACE` set).
fn report_internal_errors() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::env::var_os("RUST_BACKTRACE").is_some() {
            default(info);
            return;
        }
        let what = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("a panic");
        let place = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!(
            "dcpi: internal error (a bug in dcpi, not in your input): {what}{place}\n\
             dcpi: please report it with the command line; RUST_BACKTRACE=1 shows where it came from"
        );
    }));
}
