//! `dcpi prof`: where the samples are.

use super::process_filter::ProcessFilterArgs;
use super::Format;
use clap::{Args, ValueEnum};
use dcpi_analyze::prof::{build, ProfQuery, SortKey};
use dcpi_analyze::views::prof_text::{render_sections, Sections};
use std::path::PathBuf;

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Sort {
    Samples,
    Name,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum View {
    All,
    Stats,
    Images,
    Procedures,
    Processes,
    Applications,
}

#[derive(Args, Debug)]
pub struct ProfArgs {
    /// Profile database to read.
    #[arg(long = "db", short = 'i', default_value = "dcpi.db")]
    pub db: PathBuf,
    /// Only images whose path contains this text.
    #[arg(long)]
    pub image: Option<String>,
    #[command(flatten)]
    pub processes: ProcessFilterArgs,
    /// Only this event (name as requested or as sampled).
    #[arg(long, short = 'e')]
    pub event: Option<String>,
    /// Sections to show.
    #[arg(long, value_enum, default_value_t = View::All)]
    pub view: View,
    #[arg(long, value_enum, default_value_t = Sort::Samples)]
    pub sort: Sort,
    /// Rows per section (0 = all).
    #[arg(long, short = 'n', default_value_t = 30)]
    pub limit: usize,
    /// Hide rows under this percentage of the samples.
    #[arg(long = "min-percent", default_value_t = 0.0)]
    pub min_percent: f64,
    /// Look for images under DIR first (DIR/recorded/path, then
    /// DIR/basename), for a profile whose binaries moved.
    #[arg(long)]
    pub symfs: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

pub fn run(a: ProfArgs) -> anyhow::Result<i32> {
    let q = ProfQuery {
        image: a.image,
        filter: a.processes.filter(),
        event: a.event,
        sort: match a.sort {
            Sort::Samples => SortKey::Samples,
            Sort::Name => SortKey::Name,
        },
        limit: a.limit,
        min_percent: a.min_percent,
        symfs: a.symfs,
    };
    let report = build(&a.db, &q)?;
    match a.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        Format::Text => {
            let all = a.view == View::All;
            let s = Sections {
                stats: all || a.view == View::Stats,
                images: all || a.view == View::Images,
                procedures: all || a.view == View::Procedures,
                processes: all || a.view == View::Processes,
                groups: all || a.view == View::Applications,
            };
            print!("{}", render_sections(&report, s));
        }
    }
    Ok(0)
}
