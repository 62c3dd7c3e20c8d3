//! `dcpi cpi`: dcpicalc — frequency, CPI and stall cycles per instruction
//! of one function, or of every function with samples in an image (`--all`,
//! in parallel).

use super::function_args::{machine_for, MinConfidence, SampleArgs};
use super::Format;
use anyhow::bail;
use clap::Args;
use dcpi_analyze::cpi::CpiReport;
use dcpi_analyze::image_cpi::{analyze_image, analyze_with_callers};
use dcpi_analyze::views::cpi_text;

#[derive(Args, Debug)]
pub struct CpiArgs {
    /// Function: plain, mangled or demangled name, qualified name (app::churn), or an address inside it (0x...); default: the function with most samples.
    #[arg(long, conflicts_with = "all")]
    pub func: Option<String>,
    /// Every function with samples in the image (--image, default: the image with most samples).
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub samples: SampleArgs,
    /// Machine description (golden-cove, zen5, zen4, zen3, skylake, generic or a .toml); default: the profiled CPU's.
    #[arg(long)]
    pub cpu: Option<String>,
    /// Show estimates of at least this confidence.
    #[arg(long, value_enum, default_value_t = MinConfidence::Medium)]
    pub confidence: MinConfidence,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

#[derive(serde::Serialize)]
struct ImageCpiJson {
    image: String,
    functions: Vec<CpiReport>,
}

pub fn run(a: CpiArgs) -> anyhow::Result<i32> {
    dcpi_analyze::phase_timer::phase("start");
    let profile = a.samples.open()?;
    let filter = a.samples.filter();
    let machine = machine_for(a.cpu.as_deref(), &profile)?;
    let syntax = a.samples.syntax();
    if !a.all {
        let (args, func) = a.samples.function_or_hottest(a.func.as_deref(), "cpi")?;
        let (found, samples, code) = args.load_function(&profile, &func)?;
        let rep = analyze_with_callers(&found.image, &samples, &code, &machine, syntax);
        match a.format {
            Format::Json => println!("{}", serde_json::to_string_pretty(&rep)?),
            Format::Text => print!("{}", cpi_text::render(&rep, a.confidence.into())),
        }
        dcpi_analyze::phase_timer::phase("render and print");
        return Ok(0);
    }
    let rows = profile.images_with_samples(&filter)?;
    let row = match &a.samples.image {
        Some(text) => profile.image_named(text, &filter)?,
        None => match rows.first() {
            Some((r, _)) => r.clone(),
            None => bail!("no ELF image has samples in {}", a.samples.db.display()),
        },
    };
    let result = analyze_image(&profile, &filter, &row, &machine, syntax)?;
    for f in &result.failures {
        eprintln!("dcpi cpi: {f}");
    }
    let out = result.reports;
    match a.format {
        Format::Json => println!(
            "{}",
            serde_json::to_string(&ImageCpiJson {
                image: row.path.clone(),
                functions: out,
            })?
        ),
        Format::Text => {
            println!("image {}: {} functions with samples", row.path, out.len());
            println!(
                "{:>10} {:>8} {:>8} {:>8} {:>7}  function",
                "samples", "cpi", "best", "dyn%", "conf%"
            );
            for r in &out {
                let n: u64 = r.summary.samples.values().sum();
                println!(
                    "{:>10} {:>8} {:>8} {:>8} {:>7.0}  {}",
                    n,
                    r.summary.cpi.map_or("-".into(), |c| format!("{c:.2}")),
                    r.summary.best_cpi.map_or("-".into(), |c| format!("{c:.2}")),
                    r.summary
                        .dynamic_stall_share
                        .map_or("-".into(), |c| format!("{:.1}", 100.0 * c)),
                    100.0 * r.summary.confident_share,
                    r.function
                );
            }
            for r in &out {
                println!();
                print!("{}", cpi_text::render(r, a.confidence.into()));
            }
        }
    }
    Ok(0)
}
