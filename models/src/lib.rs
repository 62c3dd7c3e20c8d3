//! dcpi-models: what dcpi knows about machines.
//!
//! - Host facts stored with every run ([`host`]), the core-clock calibration
//!   that turns timer samples into cycles without a PMU ([`core_clock`]), and
//!   the host's characteristic times for latency profiles ([`host_times`]).
//! - Machine descriptions as data, one TOML file per microarchitecture in
//!   `models/machines/` ([`machine`]); instruction shapes from iced-x86
//!   ([`classify`]); the best-case pipeline model, a cycle-level simulation
//!   that gives cycles per iteration, per-instruction M_i under the timer skid
//!   rule and static stall reasons ([`schedule`]), run until its retirement
//!   repeats exactly.
//! - An rdtsc measurement harness for blocks ([`harness`]) and the host
//!   calibration built on it ([`calibrate`]).
//!
//! Limits: the model assumes every load hits L1 and every branch is
//! predicted (best case, as DCPI's). Taken branches limit the front end
//! only where measured (Zen 4: one a cycle); a call/ret pair's own cost
//! (about 4 cycles on Zen 4, measured) is not modeled. Its accuracy against the hosts is in
//! BENCHMARKS.md: Zen 3 3.1 % MAPE / Kendall's τ 0.908 on 276 blocks of
//! /usr/bin (llvm-mca-19 24.7 % / 0.706), Zen 4 2.9 % / 0.915 (llvm-mca
//! 26.7 % / 0.716; measured again in session 23, 274 blocks: 2.5 % /
//! 0.913, llvm-mca 28.0 % / 0.720) — 8.2 % / 0.843 and 6.6 % / 0.865 on blocks with indexed
//! addressing —, Golden Cove (Sapphire Rapids, 254 blocks) 4.9 % / 0.898
//! (llvm-mca 65.5 % / 0.459; Emerald Rapids' set 5.4 % / 0.897), short of
//! τ 0.9 there: Intel binds µops to ports at rename, which the model can
//! do (`ports_bound_at_rename`, uiCA's Ice Lake rule: 4.5 % / 0.902) but
//! leaves off for Golden Cove, as the analyzer's estimates got worse with
//! it; Zen 5 (the current host) 3.8 % / 0.919 on 272 blocks (llvm-mca-19
//! 42.2 % / 0.662), its divider, conversions and signed cmovs measured
//! with rdtsc (`datasets/models/divider.c`); Skylake and the generic
//! description are from vendor and published figures, unmeasured. Zen 5's
//! op cache feeding a loop (its first line over 12 ops, or 7-12 with the
//! loop reaching into the next line) and its 64-entry ALU scheduler are
//! modeled from rdtsc loops (`datasets/models/op_cache_lines.py`,
//! `scheduler_capacity.py`); not modeled: loops whose later lines, not
//! their first, hold over 12 ops (up to +30 %), matchers' `b64_encode`
//! loop (5.0-5.3 cycles measured, 3.95 modeled, cause not found),
//! single-precision divides and square roots (costed as double's), a
//! unit that is not pipelined given to the oldest ready µop (the model
//! gives it to the oldest in program order, ready or not). It models
//! ~0.65–0.9 M instructions per second of real basic blocks on one core
//! (`cargo bench -p dcpi-models --bench model_speed`: every block of
//! python3.11 in about a second, 20× llvm-mca-19 at 10 iterations), short
//! of the 1 M goal.
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
mod chain_cycle;
pub mod classify;
pub mod core_clock;
pub mod critical_path;
mod fetch_clock;
pub mod fpu_stack;
pub mod harness;
pub mod host;
pub mod host_times;
pub mod machine;
pub mod measurement_set;
mod rename_binding;
pub mod schedule;
mod scheduler_window;
mod simulate;

/// Tests that pin threads to CPU 0 and time them run one at a time.
#[cfg(test)]
pub(crate) static CPU0: std::sync::Mutex<()> = std::sync::Mutex::new(());
