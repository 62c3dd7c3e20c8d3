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
    /// The instruction: its ELF virtual address as objdump shows it (0x80484ba); default: the one with most stall cycles (as topstalls ranks them).
    #[arg(long)]
    pub insn: Option<String>,
    #[command(flatten)]
    pub samples: SampleArgs,
    /// Machine description (default: the profiled CPU's).
    #[arg(long)]
    pub cpu: Option<String>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

pub fn run(a: CulpritsArgs) -> anyhow::Result<i32> {
    let (args, insn) = match &a.insn {
        Some(i) => (a.samples.clone(), i.clone()),
        None => worst_stall(&a)?,
    };
    let text = if insn.starts_with("0x") {
        insn.clone()
    } else {
        format!("0x{insn}")
    };
    let addr = parse_address(&text).with_context(|| format!("'{insn}' is not a hex address"))?;
    let profile = args.open()?;
    let machine = machine_for(a.cpu.as_deref(), &profile)?;
    let (found, samples, code) = args.load_function(&profile, &text)?;
    let rep = analyze_with_callers(&found.image, &samples, &code, &machine, args.syntax());
    let c = explain(&code, &rep, addr)?;
    match a.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&c)?),
        Format::Text => print!("{}", render(&c)),
    }
    Ok(0)
}

/// For `culprits` asked about no instruction: the one with most stall
/// cycles over the profile (or `--image`), as `topstalls` ranks them, with
/// the arguments narrowed to its image; says which on stderr.
fn worst_stall(a: &CulpritsArgs) -> anyhow::Result<(SampleArgs, String)> {
    let (scope, all) = super::stalls::gather(&a.samples, a.cpu.as_deref(), None)?;
    let pairs: Vec<_> = all.iter().map(|(c, r)| (c, r)).collect();
    let (_, top) = dcpi_analyze::stall_summary::summarize(&scope, &pairs);
    let Some(worst) = top.first() else {
        anyhow::bail!("no instruction in {scope} has stall cycles: name one with --insn");
    };
    eprintln!(
        "dcpi culprits: no --insn given: the instruction with most stall cycles, {} {} in {} ({})",
        worst.addr, worst.instruction, worst.function, worst.image
    );
    let mut narrowed = a.samples.clone();
    narrowed.image = Some(worst.image.clone());
    Ok((narrowed, worst.addr.clone()))
}
