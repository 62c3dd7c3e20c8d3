//! `dcpi whatcg` (where have all the cycles gone) and `dcpi topstalls`
//! (instructions ranked by stall cycles), over one image, one function or
//! every profiled ELF image.

use super::function_args::{machine_for, SampleArgs};
use super::Format;
use clap::Args;
use dcpi_analyze::cpi::CpiReport;
use dcpi_analyze::function_code::FunctionCode;
use dcpi_analyze::function_lookup::locate;
use dcpi_analyze::image_cpi::analyze_image;
use dcpi_analyze::stall_summary::{render_topstalls, render_whatcg, summarize};

#[derive(Args, Debug)]
pub struct WhatcgArgs {
    /// Only this function (name or address).
    #[arg(long)]
    pub func: Option<String>,
    #[command(flatten)]
    pub samples: SampleArgs,
    /// Machine description (default: the profiled CPU's).
    #[arg(long)]
    pub cpu: Option<String>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct TopstallsArgs {
    /// Rows to show (0 = all).
    #[arg(long, short = 'n', default_value_t = 20)]
    pub limit: usize,
    /// Only this function (name or address).
    #[arg(long)]
    pub func: Option<String>,
    #[command(flatten)]
    pub samples: SampleArgs,
    /// Machine description (default: the profiled CPU's).
    #[arg(long)]
    pub cpu: Option<String>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Every analyzed function of the chosen images (or only the function
/// `func` names, found as `dcpi cpi --func` finds it: plain, mangled,
/// demangled or qualified name, a GCC clone's source name, an address),
/// and a scope label.
pub(super) fn gather(
    s: &SampleArgs,
    cpu: Option<&str>,
    func: Option<&str>,
) -> anyhow::Result<(String, Vec<(FunctionCode, CpiReport)>)> {
    let profile = s.open()?;
    let filter = s.filter();
    let machine = machine_for(cpu, &profile)?;
    let located = func
        .map(|f| locate(&profile, &filter, f, s.image.as_deref()))
        .transpose()?;
    let rows = match (&located, &s.image) {
        (Some(l), _) => vec![l.row.clone()],
        (None, Some(t)) => vec![profile.image_named(t, &filter)?],
        (None, None) => profile
            .images_with_samples(&filter)?
            .into_iter()
            .map(|(r, _)| r)
            .collect(),
    };
    let scope = match (&located, &s.image) {
        (Some(l), _) => format!("{} in {}", l.function.name, l.row.path),
        (None, Some(_)) => rows[0].path.clone(),
        (None, None) => format!("{} profiled ELF images", rows.len()),
    };
    let mut all = Vec::new();
    for row in rows {
        match analyze_image(&profile, &filter, &row, &machine, s.syntax()) {
            Ok(r) => {
                for f in &r.failures {
                    eprintln!("dcpi: {f}");
                }
                all.extend(r.code.into_iter().zip(r.reports));
            }
            Err(e) => eprintln!("dcpi: skipping {}: {e}", row.path),
        }
    }
    if let Some(l) = &located {
        all.retain(|(c, _)| c.function.start == l.function.start);
        if all.is_empty() {
            anyhow::bail!("no samples in {scope}");
        }
    }
    Ok((scope, all))
}

pub fn run_whatcg(a: WhatcgArgs) -> anyhow::Result<i32> {
    let (scope, all) = gather(&a.samples, a.cpu.as_deref(), a.func.as_deref())?;
    let pairs: Vec<(&FunctionCode, &CpiReport)> = all.iter().map(|(c, r)| (c, r)).collect();
    let (w, _) = summarize(&scope, &pairs);
    match a.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&w)?),
        Format::Text => print!("{}", render_whatcg(&w)),
    }
    Ok(0)
}

pub fn run_topstalls(a: TopstallsArgs) -> anyhow::Result<i32> {
    let (scope, all) = gather(&a.samples, a.cpu.as_deref(), a.func.as_deref())?;
    let pairs: Vec<(&FunctionCode, &CpiReport)> = all.iter().map(|(c, r)| (c, r)).collect();
    let (_, top) = summarize(&scope, &pairs);
    match a.format {
        Format::Json => {
            let n = if a.limit == 0 {
                top.len()
            } else {
                a.limit.min(top.len())
            };
            println!("{}", serde_json::to_string_pretty(&top[..n])?)
        }
        Format::Text => print!("{}", render_topstalls(&top, a.limit)),
    }
    Ok(0)
}
