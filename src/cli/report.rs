//! `dcpi report`: Prospect's report of a run or some of its epochs.

use super::Format;
use clap::Args;
use dcpi_analyze::report::{build, ReportQuery};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Profile database to read.
    #[arg(long = "db", short = 'i', default_value = "dcpi.db")]
    pub db: PathBuf,
    /// Run to report (default: the last).
    #[arg(long)]
    pub run: Option<i64>,
    /// Only these epochs of the run (comma-separated ids).
    #[arg(long, value_delimiter = ',')]
    pub epoch: Option<Vec<i64>>,
    /// Event to report (default: the run's first).
    #[arg(long, short = 'e')]
    pub event: Option<String>,
    /// Processes under this percentage of the hits are summed in one line.
    #[arg(long, default_value_t = 1.0)]
    pub threshold: f64,
    /// Per-process profiles for this many of the busiest processes.
    #[arg(long, default_value_t = 5)]
    pub profiles: usize,
    /// Rows per profile.
    #[arg(long, short = 'n', default_value_t = 12)]
    pub rows: usize,
    /// Look for images under DIR first (DIR/recorded/path, then
    /// DIR/basename), for a profile whose binaries moved.
    #[arg(long)]
    pub symfs: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

pub fn run(a: ReportArgs) -> anyhow::Result<i32> {
    let q = ReportQuery {
        run: a.run,
        epochs: a.epoch,
        event: a.event,
        threshold_percent: a.threshold,
        profiles: a.profiles,
        rows: a.rows,
        symfs: a.symfs,
    };
    let r = build(&a.db, &q)?;
    match a.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&r)?),
        Format::Text => print!("{}", dcpi_analyze::views::report_text::render(&r)),
    }
    Ok(0)
}
