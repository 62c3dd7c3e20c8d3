//! Flags shared by the instruction-level views (`list`, `cpi`, ...): which
//! database, which samples, which function.

use clap::{Args, ValueEnum};
use dcpi_analyze::disasm::Syntax;
use dcpi_analyze::frequency::Confidence;
use dcpi_analyze::function_code::FunctionCode;
use dcpi_analyze::function_lookup::{locate, Located};
use dcpi_analyze::phase_timer::phase;
use dcpi_analyze::samples::{ImageSamples, Profile, SampleFilter};
use dcpi_analyze::source_lines::SourceLines;
use dcpi_models::machine::Machine;
use std::path::PathBuf;

use super::process_filter::ProcessFilterArgs;

#[derive(Args, Debug, Clone)]
pub struct SampleArgs {
    /// Profile database to read.
    #[arg(long = "db", short = 'i', default_value = "dcpi.db")]
    pub db: PathBuf,
    /// Image: its path, basename, or a unique part of its path.
    #[arg(long)]
    pub image: Option<String>,
    #[command(flatten)]
    pub processes: ProcessFilterArgs,
    /// Intel syntax instead of AT&T.
    #[arg(long)]
    pub intel: bool,
    /// Look for images under this directory first (DIR/recorded/path, then DIR/basename).
    #[arg(long)]
    pub symfs: Option<PathBuf>,
}

impl SampleArgs {
    pub fn filter(&self) -> SampleFilter {
        self.processes.filter()
    }

    pub fn syntax(&self) -> Syntax {
        if self.intel {
            Syntax::Intel
        } else {
            Syntax::Att
        }
    }

    /// The function `query` names (name or address) with its samples and
    /// source lines, as the instruction-level views read it.
    pub fn load_function(
        &self,
        profile: &Profile,
        query: &str,
    ) -> anyhow::Result<(Located, ImageSamples, FunctionCode)> {
        let filter = self.filter();
        phase("open profile, pick machine");
        let found = locate(profile, &filter, query, self.image.as_deref())?;
        phase("locate function (open image)");
        let samples = profile.image_samples(&found.row, &filter)?;
        phase("read samples");
        let lines = SourceLines::open(&found.image.path, found.image.data());
        phase("open source lines");
        let code = FunctionCode::load(
            &found.image,
            &samples,
            &found.function,
            self.syntax(),
            Some(&lines),
        )?;
        phase("load function code");
        Ok((found, samples, code))
    }

    /// The arguments and function query a view works on: `func` as given,
    /// else the function with most samples ([`Self::hottest_function`]),
    /// which `view` then names on stderr.
    pub fn function_or_hottest(
        &self,
        func: Option<&str>,
        view: &str,
    ) -> anyhow::Result<(SampleArgs, String)> {
        match func {
            Some(f) => Ok((self.clone(), f.to_string())),
            None => {
                let (args, query, said) = self.hottest_function()?;
                eprintln!("dcpi {view}: {said}");
                Ok((args, query))
            }
        }
    }

    /// For a view asked about no function: the function with most samples
    /// (in `--image` if given) among the ELF images the profile names, as
    /// these arguments narrowed to its image, the query `load_function`
    /// takes (its start address) and a line saying what was picked.
    fn hottest_function(&self) -> anyhow::Result<(SampleArgs, String, String)> {
        use dcpi_analyze::prof::{build, ProfQuery};
        if let Some(text) = &self.image {
            // An image no sample names gets the message that lists them.
            self.open()?.image_named(text, &self.filter())?;
        }
        let q = ProfQuery {
            image: self.image.clone(),
            filter: self.filter(),
            symfs: self.symfs.clone(),
            ..ProfQuery::default()
        };
        let report = build(&self.db, &q)?;
        for p in &report.procedures {
            let (Some(start), Some(img)) = (
                p.start,
                report
                    .images
                    .iter()
                    .find(|i| i.image == p.image && !i.path.starts_with('[')),
            ) else {
                continue;
            };
            let mut narrowed = self.clone();
            narrowed.image = Some(img.path.clone());
            let said = format!(
                "no --func given: the function with most samples, {} in {} ({:.1} % of the samples)",
                p.procedure, p.image, p.percent
            );
            return Ok((narrowed, format!("{start:#x}"), said));
        }
        anyhow::bail!(
            "no function of an ELF image has samples in {}{}: name one with --func",
            self.db.display(),
            self.image
                .as_ref()
                .map_or(String::new(), |i| format!(" (within --image {i})"))
        )
    }

    pub fn open(&self) -> anyhow::Result<Profile> {
        if !self.db.exists() {
            anyhow::bail!(
                "no profile database at {} (run `dcpi collect -o {} -- CMD` first, or give --db)",
                self.db.display(),
                self.db.display()
            );
        }
        let mut p = Profile::open(&self.db)?;
        p.symfs = self.symfs.clone();
        Ok(p)
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum MinConfidence {
    Low,
    Medium,
    High,
}

impl From<MinConfidence> for Confidence {
    fn from(c: MinConfidence) -> Self {
        match c {
            MinConfidence::Low => Confidence::Low,
            MinConfidence::Medium => Confidence::Medium,
            MinConfidence::High => Confidence::High,
        }
    }
}

/// The machine description: --cpu, else the profiled CPU's, else the host's.
pub fn machine_for(cpu: Option<&str>, profile: &Profile) -> anyhow::Result<Machine> {
    if let Some(name) = cpu {
        return Ok(Machine::by_name(name)?);
    }
    if let Some(r) = profile.runs.last() {
        if let (Some(v), Some(f), Some(m)) = (&r.cpu_vendor, r.cpu_family, r.cpu_model) {
            let features: Vec<String> = (r.cpu_features.as_deref().unwrap_or(""))
                .split_whitespace()
                .map(str::to_string)
                .collect();
            return Ok(Machine::for_cpu(v, f as u32, m as u32, &features));
        }
    }
    Ok(Machine::host())
}
