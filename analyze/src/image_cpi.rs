//! The CPI analysis of every function with samples in one image, in
//! parallel (rayon), most samples first; and of one function with its
//! callers' help. Both analyze each function on its own first, then again
//! with how often its callers call it where that is known
//! ([`crate::call_sites`]), so `cpi --func` and `cpi --all` agree.

use crate::call_sites::{
    calls_into, own_entry_estimate, single_block_callees, Caller, References, MAX_CALLERS,
};
use crate::cpi::{analyze_function, analyze_function_called, CpiReport};
use crate::disasm::Syntax;
use crate::error::Result;
use crate::frequency::{CallHints, Confidence};
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

/// How often `callers` (analyzed on their own) call `code`'s function, if
/// every way into it is one of their direct calls.
fn calls_by(
    code: &FunctionCode,
    callers: &[(&FunctionCode, &CpiReport)],
    refs: &References,
) -> Option<(f64, f64)> {
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
    calls_into(&code.function, &known, refs)
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
    let calls: Vec<Option<(f64, f64)>> = alone
        .par_iter()
        .map(|(code, _)| {
            let starts = caller_starts(&image, &refs, code.function.start)?;
            let callers: Vec<(&FunctionCode, &CpiReport)> = starts
                .iter()
                .filter_map(|s| by_start.get(s))
                .map(|&i| (&alone[i].0, &alone[i].1))
                .collect();
            calls_by(code, &callers, &refs)
        })
        .collect();
    let hints: Vec<CallHints> = alone
        .par_iter()
        .zip(calls)
        .map(|((code, _), calls)| CallHints {
            calls,
            blocks: callee_hints(code, &refs, |g| {
                by_start
                    .get(&g)
                    .and_then(|&i| own_entry_estimate(&alone[i].1))
            }),
        })
        .collect();
    let (code, reports): (Vec<FunctionCode>, Vec<CpiReport>) = alone
        .into_par_iter()
        .zip(hints)
        .map(|((code, rep), hints)| {
            if hints.calls.is_none() && hints.blocks.is_empty() {
                return (code, rep);
            }
            let rep = analyze_function_called(&code, machine, &hints);
            (code, rep)
        })
        .unzip();
    Ok(ImageCpi {
        reports,
        code,
        failures,
    })
}

/// Block hints from the callees each called from one block of `code`
/// only: the callee's own entry estimate over its call sites there.
fn callee_hints(
    code: &FunctionCode,
    refs: &References,
    entry_of: impl Fn(u64) -> Option<(f64, f64)>,
) -> Vec<(usize, f64, f64)> {
    single_block_callees(code, refs)
        .into_iter()
        .filter_map(|(g, b, n)| {
            let (f, sd) = entry_of(g)?;
            Some((b, f / n as f64, sd / n as f64))
        })
        .collect()
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
    let sampled: std::collections::HashSet<u64> = functions_with_samples(image, samples)
        .into_iter()
        .map(|(f, _)| f.start)
        .collect();
    let analyze_alone = |s: u64| {
        let f = image.symbols.function_at(s)?;
        let c = FunctionCode::load(image, samples, &f, syntax, None).ok()?;
        let r = analyze_function(&c, machine);
        Some((c, r))
    };
    let callees: Vec<(u64, Option<(f64, f64)>)> = single_block_callees(code, &refs)
        .par_iter()
        .filter(|(g, _, _)| sampled.contains(g))
        .map(|&(g, _, _)| {
            (
                g,
                analyze_alone(g).and_then(|(_, r)| own_entry_estimate(&r)),
            )
        })
        .collect();
    let blocks = callee_hints(code, &refs, |g| {
        callees.iter().find(|(s, _)| *s == g).and_then(|(_, e)| *e)
    });
    let with_blocks = |calls: Option<(f64, f64)>| {
        if calls.is_none() && blocks.is_empty() {
            return alone.clone();
        }
        let hints = CallHints {
            calls,
            blocks: blocks.clone(),
        };
        analyze_function_called(code, machine, &hints)
    };
    let Some(starts) = caller_starts(image, &refs, code.function.start) else {
        return with_blocks(None);
    };
    let others: Vec<(FunctionCode, CpiReport)> = starts
        .par_iter()
        .filter(|&&s| sampled.contains(&s) && s != code.function.start)
        .filter_map(|&s| analyze_alone(s))
        .collect();
    let mut callers: Vec<(&FunctionCode, &CpiReport)> =
        others.iter().map(|(c, r)| (c, r)).collect();
    if starts.contains(&code.function.start) {
        callers.push((code, &alone));
    }
    with_blocks(calls_by(code, &callers, &refs))
}
