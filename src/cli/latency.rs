//! `dcpi latency`: capture OSprof latency profiles, show and compare them.

use super::{signals, Format};
use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use dcpi_analyze::latency::{compare, load, Selector};
use dcpi_analyze::views::{latency_svg, latency_text};
use dcpi_collect::latency::{capture, LatencyConfig};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct LatencyArgs {
    #[command(subcommand)]
    pub action: Option<Action>,
    #[command(flatten)]
    pub capture: CaptureArgs,
}

#[derive(Subcommand, Debug)]
pub enum Action {
    /// Per operation: histogram, count, total latency, peaks.
    Show(ShowArgs),
    /// Rank operations by how differently they behave in two profile sets.
    Compare(CompareArgs),
}

#[derive(Args, Debug)]
pub struct CaptureArgs {
    /// Profile database to write.
    #[arg(
        short = 'o',
        long = "output",
        visible_alias = "db",
        default_value = "dcpi.db"
    )]
    pub output: PathBuf,
    /// Every process on every CPU.
    #[arg(short = 'a', long = "system-wide", conflicts_with = "pid")]
    pub system_wide: bool,
    /// Attach to a running process.
    #[arg(short = 'p', long)]
    pub pid: Option<u32>,
    /// Stop after this many seconds.
    #[arg(short = 'd', long)]
    pub duration: Option<f64>,
    /// Buckets per power of two (OSprof's r).
    #[arg(long, default_value_t = 1)]
    pub resolution: u32,
    /// Keep a new set of buckets every SECONDS.
    #[arg(long)]
    pub interval: Option<f64>,
    /// Do not record scheduler wait after preemption.
    #[arg(long = "no-sched")]
    pub no_sched: bool,
    /// Skip measuring the host's context switch, tick and quantum.
    #[arg(long = "no-calibrate")]
    pub no_calibrate: bool,
    #[arg(short, long)]
    pub quiet: bool,
    /// The command to profile, after `--`.
    #[arg(last = true)]
    pub command: Vec<String>,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// What to show: [DB:]key=value,... with keys run, epoch, set, pid, comm, appid, interval.
    #[arg(default_value = "")]
    pub selector: String,
    /// Profile database (when the selector names none).
    #[arg(long, short = 'i', default_value = "dcpi.db")]
    pub db: PathBuf,
    /// Only this operation.
    #[arg(long)]
    pub op: Option<String>,
    /// Show every operation's histogram, not only the selected ones.
    #[arg(long)]
    pub all: bool,
    /// Write one SVG plot per operation into DIR.
    #[arg(long)]
    pub svg: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// First set: [DB:]key=value,...
    pub a: String,
    /// Second set: [DB:]key=value,...
    pub b: String,
    #[arg(long, short = 'i', default_value = "dcpi.db")]
    pub db: PathBuf,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

pub fn run(a: LatencyArgs) -> anyhow::Result<i32> {
    match a.action {
        Some(Action::Show(s)) => show(s),
        Some(Action::Compare(c)) => compare_cmd(c),
        None => record(a.capture),
    }
}

fn record(a: CaptureArgs) -> anyhow::Result<i32> {
    let mode = super::mode_from(a.system_wide, a.pid, &a.command)?;
    if !(1..=8).contains(&a.resolution) {
        bail!("--resolution must be between 1 and 8");
    }
    let secs = |s: f64, what: &str| -> anyhow::Result<Duration> {
        if !(s.is_finite() && s > 0.0) {
            bail!("{what} must be a positive number of seconds");
        }
        Ok(Duration::from_secs_f64(s))
    };
    let config = LatencyConfig {
        db_path: a.output.clone(),
        mode,
        duration: a.duration.map(|d| secs(d, "--duration")).transpose()?,
        resolution: a.resolution,
        interval: a.interval.map(|d| secs(d, "--interval")).transpose()?,
        ring_bytes: 4 << 20,
        sched_layer: !a.no_sched,
        calibrate_host: !a.no_calibrate,
    };
    signals::install();
    let out = capture(&config, &signals::STOP)
        .with_context(|| format!("capturing latencies into {}", a.output.display()))?;
    if !a.quiet {
        eprintln!(
            "dcpi: {} calls in {:.2} s{} written to {} (run {}, latency set {}){}",
            out.calls,
            out.duration.as_secs_f64(),
            if out.lost > 0 {
                format!(", {} records lost", out.lost)
            } else {
                String::new()
            },
            a.output.display(),
            out.run_id,
            out.set_id,
            if out.interrupted { "; interrupted" } else { "" }
        );
    }
    Ok(out
        .exit_code
        .unwrap_or(if out.interrupted { 130 } else { 0 }))
}

fn show(a: ShowArgs) -> anyhow::Result<i32> {
    let sel = Selector::parse(&a.selector, &a.db)?;
    let mut report = load(&sel)?;
    if let Some(op) = &a.op {
        report.operations.retain(|o| &o.operation == op);
        if report.operations.is_empty() {
            bail!("no operation '{op}' in {}", sel.describe());
        }
        report.selected = vec![op.clone()];
    }
    if let Some(dir) = &a.svg {
        let files = latency_svg::write_all(&report, dir)
            .with_context(|| format!("writing SVG plots into {}", dir.display()))?;
        eprintln!(
            "dcpi: {} SVG plots written to {}",
            files.len(),
            dir.display()
        );
    }
    match a.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        Format::Text => print!("{}", latency_text::render(&report, a.all)),
    }
    Ok(0)
}

fn compare_cmd(a: CompareArgs) -> anyhow::Result<i32> {
    let ra = load(&Selector::parse(&a.a, &a.db)?)?;
    let rb = load(&Selector::parse(&a.b, &a.db)?)?;
    let c = compare(&ra, &rb)?;
    match a.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&c)?),
        Format::Text => print!("{}", latency_text::render_comparison(&c)),
    }
    Ok(0)
}
