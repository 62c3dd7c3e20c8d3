//! dcpi-models: what dcpi knows about the machine it runs on.
//!
//! Today this crate holds the host facts the collector stores with every run
//! (CPU vendor/family/model from CPUID, kernel, core count) and the core-clock
//! calibration that lets analysis turn timer samples (cpu-clock, in
//! nanoseconds) into core cycles when no hardware PMU is exposed.
//!
//! The pipeline models (machine descriptions, best-case block schedules, skid
//! models) described in ARCHITECTURE.md will live here too; they do not exist
//! yet.
//!
//! Limits: x86-64 Linux only. The clock calibration assumes a dependent
//! `add reg,reg` chain retires one add per core cycle (true on every x86 core
//! since the P6). It must not be `add reg,imm`: Golden Cove-class Intel cores
//! fold immediate adds at rename and run such a chain at 3-4 adds per cycle
//! (measured here: a "12 GHz" clock on a 3 GHz Xeon). It also assumes the core
//! clock is steady over a few milliseconds; it drifts between ~3.6 and
//! ~3.85 GHz on those hosts, so the collector calibrates at the start and at
//! the end of a run and stores both.
//!
//! ```no_run
//! let clock = dcpi_models::core_clock::calibrate();
//! println!("core clock {:.3} GHz", clock.core_hz / 1e9);
//! ```

pub mod block;
pub mod calibrate;
pub mod classify;
pub mod core_clock;
pub mod harness;
pub mod host;
pub mod host_times;
pub mod machine;
pub mod schedule;

/// Tests that pin threads to CPU 0 and time them run one at a time.
#[cfg(test)]
pub(crate) static CPU0: std::sync::Mutex<()> = std::sync::Mutex::new(());
