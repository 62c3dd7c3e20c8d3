//! The CPI analysis of every function with samples in one image, in
//! parallel (rayon), most samples first; and of one function with the
//! functions linked to it. Functions tied by calls are solved together
//! ([`crate::linked_functions`]), so `cpi --func` and `cpi --all` agree
//! (to a few parts in 10⁵, the solver's rounding, while the linked group is
//! at most [`MAX_LINKED`] functions and no function in it has more than
//! [`MAX_CALLERS`] callers).

use crate::call_sites::{References, MAX_CALLERS};
use crate::cfg::Exit;
use crate::cpi::{CpiReport, FunctionAnalysis};
use crate::disasm::Syntax;
use crate::error::Result;
use crate::function_code::FunctionCode;
use crate::function_lookup::{functions_with_samples, open_image};
use crate::image::ElfImage;
use crate::linked_functions::reports;
use crate::phase_timer::phase;
use crate::samples::{ImageSamples, Profile, SampleFilter};
use dcpi_collect::db::reader::ImageRow;
use dcpi_models::machine::Machine;
use rayon::prelude::*;
use std::collections::{HashSet, VecDeque};

/// Functions `cpi --func` loads to solve one function with the functions
/// linked to it (callers, callees, their callers...): enough for a program's
/// call graph around a hot function, bounded for a library's.
pub const MAX_LINKED: usize = 64;

pub struct ImageCpi {
    pub reports: Vec<CpiReport>,
    /// The analyzed code of each report (same order), for culprits.
    pub code: Vec<FunctionCode>,
    /// Functions that could not be analyzed, with why.
    pub failures: Vec<String>,
}

pub fn analyze_image(
    profile: &Profile,
    filter: &SampleFilter,
    row: &ImageRow,
    machine: &Machine,
    syntax: Syntax,
) -> Result<ImageCpi> {
    let image = open_image(profile, row)?;
    let samples = profile.image_samples(row, filter)?;
    let funcs = functions_with_samples(&image, &samples);
    let results: Vec<std::result::Result<FunctionCode, String>> = funcs
        .par_iter()
        .map(|(f, _)| {
            FunctionCode::load(&image, &samples, f, syntax, None)
                .map_err(|e| format!("{}: {e}", f.name))
        })
        .collect();
    let mut code = Vec::new();
    let mut failures = Vec::new();
    for r in results {
        match r {
            Ok(x) => code.push(x),
            Err(e) => failures.push(e),
        }
    }
    crate::return_charges::charge_returns(&mut code);
    crate::result_use::count_result_sites(&mut code);
    let refs = References::build(&image);
    let members: Vec<&FunctionCode> = code.iter().collect();
    let reports = solve(&members, machine, &refs, None)
        .into_iter()
        .map(|r| r.expect("every report was asked for"))
        .collect();
    Ok(ImageCpi {
        reports,
        code,
        failures,
    })
}

/// Each member analyzed on its own samples, then linked members together.
fn solve(
    members: &[&FunctionCode],
    machine: &Machine,
    refs: &References,
    only: Option<usize>,
) -> Vec<Option<CpiReport>> {
    let analyses: Vec<FunctionAnalysis> = members
        .par_iter()
        .map(|c| FunctionAnalysis::new(c, machine))
        .collect();
    phase("model blocks");
    let alone = analyses.par_iter().map(|a| a.frequencies()).collect();
    phase("frequencies alone");
    let out = reports(&analyses, members, alone, refs, only);
    phase("linked solve and reports");
    out
}

/// Start addresses of the functions whose bytes point at `func` with a
/// rel32 displacement or a short jump; None if there are more than
/// [`MAX_CALLERS`].
fn caller_starts(image: &ElfImage, refs: &References, func: u64) -> Option<Vec<u64>> {
    let mut starts: Vec<u64> = refs
        .reference_sites(func)
        .iter()
        .filter_map(|&site| image.symbols.function_at(site).map(|f| f.start))
        .collect();
    starts.sort_unstable();
    starts.dedup();
    (starts.len() <= MAX_CALLERS).then_some(starts)
}

/// Direct call and tail jump targets of a function.
fn callees(code: &FunctionCode) -> Vec<u64> {
    let mut out: Vec<u64> = code
        .cfg
        .blocks
        .iter()
        .flat_map(|b| {
            let tail = match b.exit {
                Some(Exit::TailCall(t)) => Some(t),
                _ => None,
            };
            b.calls.iter().flatten().copied().chain(tail)
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// One function's CPI analysis, solved with the functions linked to it
/// (the result `analyze_image` gives for it, see the module's limits).
pub fn analyze_with_callers(
    image: &ElfImage,
    samples: &ImageSamples,
    code: &FunctionCode,
    machine: &Machine,
    syntax: Syntax,
) -> CpiReport {
    let refs = References::build(image);
    phase("call references");
    let sampled: HashSet<u64> = functions_with_samples(image, samples)
        .into_iter()
        .map(|(f, _)| f.start)
        .collect();
    // Breadth first over callers and callees with samples that links may tie.
    let mut seen: HashSet<u64> = HashSet::from([code.function.start]);
    let mut others: Vec<FunctionCode> = Vec::new();
    let mut queue: VecDeque<u64> = VecDeque::from([code.function.start]);
    while let Some(s) = queue.pop_front() {
        let around: Vec<u64> = {
            let c = if s == code.function.start {
                code
            } else {
                match others.iter().find(|o| o.function.start == s) {
                    Some(c) => c,
                    None => continue,
                }
            };
            // Only what can be linked: an exported function is tied to
            // neither its callers nor, as a callee, to this one.
            let mut v: Vec<u64> = callees(c)
                .into_iter()
                .filter(|t| !refs.is_exported(*t))
                .collect();
            if !refs.is_exported(s) {
                v.extend(caller_starts(image, &refs, s).unwrap_or_default());
            }
            v
        };
        for t in around {
            if others.len() + 1 >= MAX_LINKED {
                break;
            }
            if !sampled.contains(&t) || !seen.insert(t) {
                continue;
            }
            let Some(f) = image.symbols.function_at(t) else {
                continue;
            };
            if let Ok(c) = FunctionCode::load(image, samples, &f, syntax, None) {
                others.push(c);
                queue.push_back(t);
            }
        }
    }
    let mut all: Vec<FunctionCode> = std::iter::once(code.clone()).chain(others).collect();
    crate::return_charges::charge_returns(&mut all);
    crate::result_use::count_result_sites(&mut all);
    let members: Vec<&FunctionCode> = all.iter().collect();
    phase("load linked functions");
    solve(&members, machine, &refs, Some(0))
        .into_iter()
        .next()
        .flatten()
        .expect("the function's own report was asked for")
}
