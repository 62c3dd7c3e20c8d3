//! Command-line parsing and dispatch.

mod accuracy;
mod calibrate;
mod collect;
mod continuous;
mod cpi;
mod culprits;
mod function_args;
mod latency;
mod list;
mod model;
mod process_filter;
mod prof;
mod report;
mod signals;
mod stalls;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(
    name = "dcpi",
    version,
    about = "Continuous profiling: where have all the cycles gone?"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Output format of every view.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    #[default]
    Text,
    Json,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Profile a command (or a process, or the whole system) into a profile database.
    Collect(collect::CollectArgs),
    /// Where the samples are: images, procedures, processes, statistics of run.
    Prof(prof::ProfArgs),
    /// Annotated disassembly of a function with its samples and source lines.
    List(list::ListArgs),
    /// Per-instruction frequency, CPI and stall cycles of a function (dcpicalc).
    Cpi(cpi::CpiArgs),
    /// Why an instruction stalls: static and dynamic culprits with evidence.
    Culprits(culprits::CulpritsArgs),
    /// Where have all the cycles gone: execution, static and dynamic stalls by culprit.
    Whatcg(stalls::WhatcgArgs),
    /// Instructions ranked by stall cycles, with culprits.
    Topstalls(stalls::TopstallsArgs),
    /// Frequency estimates against exact counts from callgrind (DCPI's accuracy measure).
    Accuracy(accuracy::AccuracyArgs),
    /// Measure the host's instruction latencies/throughputs with rdtsc; compare with the model.
    Calibrate(calibrate::CalibrateArgs),
    /// Best-case pipeline model of a block: cycles per iteration, bottleneck, stalls, timeline.
    Model(model::ModelArgs),
    /// Prospect's report: statistics of run, processes' user and system time, per-process and kernel profiles.
    Report(report::ReportArgs),
    /// Start continuous system-wide profiling in the background (a daemon).
    Start(continuous::StartArgs),
    /// Stop the daemon after a final flush.
    Stop(continuous::ControlArgs),
    /// Make the daemon write what it holds now.
    Flush(continuous::ControlArgs),
    /// Flush and start a new epoch (analysis can pick epochs with --epoch).
    Epoch(continuous::ControlArgs),
    /// The daemon's events, rates, samples, epochs, losses, hash tables, memory and CPU use.
    Status(continuous::ControlArgs),
    /// The daemon process `dcpi start` launches.
    #[command(hide = true)]
    DaemonRun(continuous::StartArgs),
    /// OSprof latency profiles of system calls: capture (`-- CMD`), `show`, `compare`.
    Latency(latency::LatencyArgs),
}

/// Runs a parsed command line; returns the process exit code.
pub fn run(cli: Cli) -> anyhow::Result<i32> {
    if cli.command.only_reads() {
        // A report piped into `head` ends quietly when the reader goes
        // away, as other Unix tools do (Rust ignores SIGPIPE, so printing
        // would panic). Commands that sample keep ignoring it: their
        // samples must reach the database whatever happens to stdout.
        // SAFETY: restoring a signal's default disposition at start-up,
        // before any thread exists.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    match cli.command {
        Command::Collect(a) => collect::run(a),
        Command::Prof(a) => prof::run(a),
        Command::Latency(a) => latency::run(a),
        Command::Report(a) => report::run(a),
        Command::Start(a) => continuous::start(a),
        Command::Stop(a) => continuous::stop(a),
        Command::Flush(a) => continuous::flush(a, false),
        Command::Epoch(a) => continuous::flush(a, true),
        Command::Status(a) => continuous::status(a),
        Command::DaemonRun(a) => continuous::daemon_run(a),
        Command::List(a) => list::run(a),
        Command::Cpi(a) => cpi::run(a),
        Command::Accuracy(a) => accuracy::run(a),
        Command::Culprits(a) => culprits::run(a),
        Command::Whatcg(a) => stalls::run_whatcg(a),
        Command::Topstalls(a) => stalls::run_topstalls(a),
        Command::Model(a) => model::run(a),
        Command::Calibrate(a) => calibrate::run(a),
    }
}

impl Command {
    /// Whether the command only reads (a report or a model): nothing is
    /// lost if it dies with its reader.
    fn only_reads(&self) -> bool {
        matches!(
            self,
            Command::Prof(_)
                | Command::Report(_)
                | Command::List(_)
                | Command::Cpi(_)
                | Command::Accuracy(_)
                | Command::Culprits(_)
                | Command::Whatcg(_)
                | Command::Topstalls(_)
                | Command::Model(_)
        )
    }
}

/// What to profile, from the flags `collect` and `latency` share.
pub fn mode_from(
    system_wide: bool,
    pid: Option<u32>,
    command: &[String],
) -> anyhow::Result<dcpi_collect::session::Mode> {
    use dcpi_collect::session::Mode;
    if system_wide {
        return Ok(Mode::SystemWide(
            (!command.is_empty()).then(|| command.to_vec()),
        ));
    }
    if let Some(pid) = pid {
        if !command.is_empty() {
            anyhow::bail!("--pid attaches to a running process; give no command after --");
        }
        return Ok(Mode::Pid(pid));
    }
    if command.is_empty() {
        anyhow::bail!(
            "nothing to profile: give a command after --, or --pid PID, or --system-wide"
        );
    }
    Ok(Mode::Command(command.to_vec()))
}
