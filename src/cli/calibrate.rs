//! `dcpi calibrate`: measure the host's instruction latencies and throughputs
//! and a few mechanisms (memory renaming, store forwarding, nop fusion, ...)
//! with rdtsc, show where the machine description disagrees, and optionally
//! write a calibrated description (latencies, and the memory's cycles a line of
//! non-temporal stores) for `dcpi model --cpu FILE`.

use super::Format;
use anyhow::Context;
use clap::Args;
use dcpi_models::calibrate::calibrate;
use dcpi_models::machine::Machine;
use std::fmt::Write;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Description to compare with (default: the host's).
    #[arg(long)]
    pub cpu: Option<String>,
    /// CPU to measure on.
    #[arg(long = "on-cpu", default_value_t = 0)]
    pub on_cpu: usize,
    /// Write a description with the measured latencies (and non-temporal
    /// stores' cycles a line) to FILE (.toml).
    #[arg(long)]
    pub write: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// The collector's core-share probe loop: cycles a trip on an idle core,
/// measured here and as the collector takes it.
#[derive(serde::Serialize)]
struct CoreProbeCheck {
    measured_cycles: Option<f64>,
    /// What the collector divides by: the description's measured figure,
    /// else the model's.
    description_cycles: Option<f64>,
    model_cycles: Option<f64>,
}

impl CoreProbeCheck {
    /// Off by more than 3 %: every run's core share would be off as much.
    fn disagrees(&self) -> bool {
        matches!((self.measured_cycles, self.description_cycles),
            (Some(m), Some(d)) if (m - d).abs() > 0.03 * d)
    }
}

#[derive(serde::Serialize)]
struct CalibrationOut<'a> {
    #[serde(flatten)]
    calibration: &'a dcpi_models::calibrate::Calibration,
    core_probe: &'a CoreProbeCheck,
}

fn opt(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.2}")).unwrap_or_else(|| "-".into())
}

pub fn run(a: CalibrateArgs) -> anyhow::Result<i32> {
    let machine = match &a.cpu {
        Some(n) => Machine::by_name(n)?,
        None => Machine::host(),
    };
    let cal = calibrate(&machine, a.on_cpu);
    if let Some(path) = &a.write {
        let host = dcpi_models::host::read();
        let m = cal.apply(
            &machine,
            &format!("{} ({})", host.hostname, host.cpu_model_name),
        );
        std::fs::write(path, m.to_toml()).with_context(|| format!("writing {}", path.display()))?;
        eprintln!(
            "dcpi: calibrated description written to {} (use: dcpi model --cpu {})",
            path.display(),
            path.display()
        );
    }
    // The collector's core-share probe loop, timed here beside what the
    // collector divides its readings by.
    let probe = CoreProbeCheck {
        description_cycles: dcpi_collect::core_share::idle_cycles_per_pass(&machine),
        model_cycles: dcpi_collect::core_share::model_cycles_per_pass(&machine),
        measured_cycles: dcpi_collect::core_share::measure_cycles_per_pass(
            a.on_cpu as u32,
            cal.ticks_per_cycle,
            200,
        ),
    };
    match a.format {
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&CalibrationOut {
                calibration: &cal,
                core_probe: &probe,
            })?
        ),
        Format::Text => {
            let mut out = String::new();
            let _ = writeln!(
                out,
                "Machine description: {}; TSC ticks per core cycle: {:.3}",
                cal.machine, cal.ticks_per_cycle
            );
            let _ = writeln!(
                out,
                "{:<16} {:>9} {:>9} {:>12} {:>12}  ",
                "class", "latency", "measured", "recip. tput", "measured"
            );
            for c in &cal.classes {
                let _ = writeln!(
                    out,
                    "{:<16} {:>9} {:>9} {:>12.2} {:>12}  {}",
                    c.class,
                    c.model_latency,
                    opt(c.measured_latency),
                    c.model_rthroughput,
                    opt(c.measured_rthroughput),
                    if c.disagrees { "<- disagrees" } else { "" }
                );
            }
            let _ = writeln!(out);
            let _ = writeln!(
                out,
                "{:<27} {:>7} {:>9}  block (cycles per copy)",
                "mechanism (field)", "model", "measured"
            );
            for m in &cal.mechanisms {
                let _ = writeln!(
                    out,
                    "{:<27} {:>7.2} {:>9}  {}{}",
                    m.field,
                    m.model_cycles,
                    opt(m.measured_cycles),
                    m.block,
                    if m.disagrees { "  <- disagrees" } else { "" }
                );
            }
            let _ = writeln!(out);
            let _ = writeln!(
                out,
                "core-share probe (core_probe_cycles): {} cycles a trip measured on an idle core, {} used by the collector (the model's {}){}",
                opt(probe.measured_cycles),
                opt(probe.description_cycles),
                opt(probe.model_cycles),
                if probe.disagrees() { "  <- disagrees" } else { "" }
            );
            print!("{out}");
        }
    }
    Ok(0)
}
