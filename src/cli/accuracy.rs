//! `dcpi accuracy`: how close dcpi's frequency estimates come to exact
//! execution counts from callgrind (DCPI's accuracy measure), beside the
//! naive estimator.

use super::function_args::{machine_for, SampleArgs};
use super::Format;
use anyhow::{bail, Context};
use clap::Args;
use dcpi_analyze::accuracy::{compare, render};
use dcpi_analyze::callgrind;
use dcpi_analyze::image_cpi::analyze_image;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct AccuracyArgs {
    /// callgrind output of the same program and input (`valgrind --tool=callgrind --dump-instr=yes`).
    #[arg(long)]
    pub callgrind: PathBuf,
    #[command(flatten)]
    pub samples: SampleArgs,
    /// Machine description (default: the profiled CPU's).
    #[arg(long)]
    pub cpu: Option<String>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

pub fn run(a: AccuracyArgs) -> anyhow::Result<i32> {
    let text = std::fs::read_to_string(&a.callgrind)
        .with_context(|| format!("cannot read {}", a.callgrind.display()))?;
    let truth = callgrind::parse(&text)?;
    let profile = a.samples.open()?;
    let filter = a.samples.filter();
    let machine = machine_for(a.cpu.as_deref(), &profile)?;
    let row = match &a.samples.image {
        Some(t) => profile.image_named(t, &filter)?,
        None => match profile.images_with_samples(&filter)?.first() {
            Some((r, _)) => r.clone(),
            None => bail!("no ELF image has samples"),
        },
    };
    let Some(counts) = truth.get(&row.path).or_else(|| {
        // The same file under another path (moved, or --symfs): match the basename.
        let base = row.path.rsplit('/').next()?;
        let mut same = truth
            .iter()
            .filter(|(k, _)| k.rsplit('/').next() == Some(base));
        let first = same.next()?;
        same.next().is_none().then_some(first.1)
    }) else {
        bail!(
            "{} has no counts for {} (objects in it: {})",
            a.callgrind.display(),
            row.path,
            truth.keys().cloned().collect::<Vec<_>>().join(", ")
        );
    };
    // callgrind counts one execution; a profile may hold several runs of
    // the same command (more samples than one short run gives): their
    // estimates add up, so must the truth.
    let executions = profile.processes_with_samples(&row, &filter)?.max(1) as u64;
    let counts: std::collections::BTreeMap<u64, u64> = if executions > 1 {
        eprintln!(
            "dcpi: {executions} processes ran {} in this profile: callgrind's counts × {executions}",
            row.path
        );
        counts.iter().map(|(&k, &v)| (k, v * executions)).collect()
    } else {
        counts.clone()
    };
    let result = analyze_image(&profile, &filter, &row, &machine, a.samples.syntax())?;
    let acc = compare(&result.reports, &counts);
    match a.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&acc)?),
        Format::Text => print!("{}", render(&acc, &row.path)),
    }
    Ok(0)
}
