//! The CPI analysis of every function with samples in one image, in
//! parallel (rayon), most samples first.

use crate::cpi::{analyze_function, CpiReport};
use crate::disasm::Syntax;
use crate::error::Result;
use crate::function_code::FunctionCode;
use crate::function_lookup::{functions_with_samples, open_image};
use crate::samples::{Profile, SampleFilter};
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
    let mut out = ImageCpi {
        reports: Vec::new(),
        code: Vec::new(),
        failures: Vec::new(),
    };
    for r in results {
        match r {
            Ok((code, rep)) => {
                out.code.push(code);
                out.reports.push(rep);
            }
            Err(e) => out.failures.push(e),
        }
    }
    Ok(out)
}
