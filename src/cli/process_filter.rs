//! The options that choose whose samples count — processes by pid, command
//! name or instance, and epochs — shared by every view that reads samples.

use clap::Args;
use dcpi_analyze::samples::SampleFilter;

#[derive(Args, Debug, Clone)]
pub struct ProcessFilterArgs {
    /// Only processes with this pid.
    #[arg(long)]
    pub pid: Option<i64>,
    /// Only processes with this command name.
    #[arg(long)]
    pub comm: Option<String>,
    /// Only this process instance, as COMM#N (the Processes section of `dcpi prof` lists them).
    #[arg(long)]
    pub appid: Option<String>,
    /// Only these epochs (comma-separated ids).
    #[arg(long, value_delimiter = ',')]
    pub epoch: Option<Vec<i64>>,
}

impl ProcessFilterArgs {
    pub fn filter(&self) -> SampleFilter {
        SampleFilter {
            pid: self.pid,
            comm: self.comm.clone(),
            appid: self.appid.clone(),
            epochs: self.epoch.clone(),
        }
    }
}
