//! `dcpi culprits --insn ADDR`: why that instruction stalls.

use super::function_args::{machine_for, SampleArgs};
use super::Format;
use anyhow::Context;
use clap::Args;
use dcpi_analyze::culprits::{explain, render};
use dcpi_analyze::image::parse_address;
use dcpi_analyze::image_cpi::analyze_with_callers;

#[derive(Args, Debug)]
pub struct CulpritsArgs {
    /// The instruction: its ELF virtual address as objdump shows it (0x80484ba).
    #[arg(long)]
    pub insn: String,
    #[command(flatten)]
    pub samples: SampleArgs,
    /// Machine description (default: the profiled CPU's).
    #[arg(long)]
    pub cpu: Option<String>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

pub fn run(a: CulpritsArgs) -> anyhow::Result<i32> {
    let text = if a.insn.starts_with("0x") {
        a.insn.clone()
    } else {
        format!("0x{}", a.insn)
    };
    let addr =
        parse_address(&text).with_context(|| format!("'{}' is not a hex address", a.insn))?;
    let profile = a.samples.open()?;
    let machine = machine_for(a.cpu.as_deref(), &profile)?;
    let (found, samples, code) = a.samples.load_function(&profile, &text)?;
    let rep = analyze_with_callers(&found.image, &samples, &code, &machine, a.samples.syntax());
    let c = explain(&code, &rep, addr)?;
    match a.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&c)?),
        Format::Text => print!("{}", render(&c)),
    }
    Ok(0)
}
