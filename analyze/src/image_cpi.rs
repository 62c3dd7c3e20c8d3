//! The CPI analysis of every function with samples in one image, in
//! parallel (rayon), most samples first; and of one function with its
//! callers' help. Both analyze each function on its own first, then again
//! with how often its callers call it where that is known
//! ([`crate::call_sites`]), so `cpi --func` and `cpi --all` agree.

use crate::call_sites::{calls_into, Caller, References, MAX_CALLERS};
use crate::cpi::{analyze_function, analyze_function_called, CpiReport};
use crate::disasm::Syntax;
use crate::error::Result;
use crate::frequency::Confidence;
use crate::function_code::FunctionCode;
use crate::function_lookup::{functions_with_samples, open_image};
use crate::image::ElfImage;
use crate::samples::{ImageSamples, Profile, SampleFilter};
use dcpi_collect::db::reader::ImageRow;
use dcpi_models::machine::Machine;
use rayon::prelude::*;

pub struct ImageCpi {
    pub reports: Vec<CpiReport>,
    /// The analyzed code of each report (same order), for culprits.
    pub code: Vec<FunctionCode>,
    /// Functions that could not be analyzed, with why.
    pub failures: Vec<String>,
}

/// Block frequencies and confidences of a report (None without a time event).
fn block_freqs(rep: &CpiReport) -> Option<(Vec<f64>, Vec<Confidence>)> {
    let freq: Option<Vec<f64>> = rep.blocks.iter().map(|b| b.freq).collect();
    Some((freq?, rep.blocks.iter().map(|b| b.confidence).collect()))
}

/// `code` analyzed again if `callers` (analyzed on their own) say how often
/// they call it.
fn with_callers(
    code: &FunctionCode,
    alone: CpiReport,
    callers: &[(&FunctionCode, &CpiReport)],
    refs: &References,
    machine: &Machine,
) -> CpiReport {
    let freqs: Vec<Option<(Vec<f64>, Vec<Confidence>)>> =
        callers.iter().map(|(_, r)| block_freqs(r)).collect();
    let known: Vec<Caller> = callers
        .iter()
        .zip(&freqs)
        .filter_map(|((c, _), f)| {
            f.as_ref().map(|(freq, confidence)| Caller {
                code: c,
                freq,
                confidence,
            })
        })
        .collect();
    match calls_into(&code.function, &known, refs) {
        Some(calls) => analyze_function_called(code, machine, Some(calls)),
        None => alone,
    }
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
    let results: Vec<std::result::Result<(FunctionCode, CpiReport), String>> = funcs
        .par_iter()
        .map(|(f, _)| {
            FunctionCode::load(&image, &samples, f, syntax, None)
                .map(|code| {
                    let rep = analyze_function(&code, machine);
                    (code, rep)
                })
                .map_err(|e| format!("{}: {e}", f.name))
        })
        .collect();
    let mut alone = Vec::new();
    let mut failures = Vec::new();
    for r in results {
        match r {
            Ok(x) => alone.push(x),
            Err(e) => failures.push(e),
        }
    }
    let refs = References::build(&image);
    let by_start: std::collections::HashMap<u64, usize> = alone
        .iter()
        .enumerate()
        .map(|(i, (c, _))| (c.function.start, i))
        .collect();
    let reports: Vec<CpiReport> = alone
        .par_iter()
        .map(|(code, rep)| {
            let callers: Option<Vec<(&FunctionCode, &CpiReport)>> =
                caller_starts(&image, &refs, code.function.start).map(|starts| {
                    starts
                        .iter()
                        .filter_map(|s| by_start.get(s))
                        .map(|&i| (&alone[i].0, &alone[i].1))
                        .collect()
                });
            match callers {
                Some(c) if !c.is_empty() => with_callers(code, rep.clone(), &c, &refs, machine),
                _ => rep.clone(),
            }
        })
        .collect();
    Ok(ImageCpi {
        reports,
        code: alone.into_iter().map(|(c, _)| c).collect(),
        failures,
    })
}

/// Start addresses of the functions whose bytes point at `func` with a
/// rel32 displacement; None if there are more than [`MAX_CALLERS`].
fn caller_starts(image: &ElfImage, refs: &References, func: u64) -> Option<Vec<u64>> {
    let mut starts: Vec<u64> = refs
        .rel32_sites(func)
        .iter()
        .filter_map(|&site| image.symbols.function_at(site).map(|f| f.start))
        .collect();
    starts.sort_unstable();
    starts.dedup();
    (starts.len() <= MAX_CALLERS).then_some(starts)
}

/// One function's CPI analysis, with its callers' help where they tell how
/// often they call it (the same result `analyze_image` gives for it).
pub fn analyze_with_callers(
    image: &ElfImage,
    samples: &ImageSamples,
    code: &FunctionCode,
    machine: &Machine,
    syntax: Syntax,
) -> CpiReport {
    let alone = analyze_function(code, machine);
    if alone.cycles_per_sample.is_none() {
        return alone;
    }
    let refs = References::build(image);
    let Some(starts) = caller_starts(image, &refs, code.function.start) else {
        return alone;
    };
    let sampled: std::collections::HashSet<u64> = functions_with_samples(image, samples)
        .into_iter()
        .map(|(f, _)| f.start)
        .collect();
    let others: Vec<(FunctionCode, CpiReport)> = starts
        .par_iter()
        .filter(|&&s| sampled.contains(&s) && s != code.function.start)
        .filter_map(|&s| {
            let f = image.symbols.function_at(s)?;
            let c = FunctionCode::load(image, samples, &f, syntax, None).ok()?;
            let r = analyze_function(&c, machine);
            Some((c, r))
        })
        .collect();
    let mut callers: Vec<(&FunctionCode, &CpiReport)> =
        others.iter().map(|(c, r)| (c, r)).collect();
    if starts.contains(&code.function.start) {
        callers.push((code, &alone));
    }
    if callers.is_empty() {
        return alone;
    }
    let again = alone.clone();
    with_callers(code, again, &callers, &refs, machine)
}
