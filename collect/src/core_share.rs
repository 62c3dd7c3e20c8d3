//! How much of its core the profiled command had: a throughput probe run on
//! the command's CPU through the run.
//!
//! On a virtual machine the vCPU's sibling hyperthread on the host may be
//! busy with another tenant; the command then gets part of the core's issue
//! slots and its code runs slower per cycle than the pipeline model's best
//! case, at the clock the calibrations read (a dependent chain barely
//! notices the sibling). Measured on this project's Zen 4 guest: runs of
//! one `./kernels` took 0.55-0.75 s while a dependent-add clock probe read
//! 3.35-3.47 GHz, and a probe of independent adds read 8.9-12.4 adds/ns,
//! wall × rate constant within ±4 % (BENCHMARKS, session 26).
//!
//! Every [`INTERVAL`] the probe thread moves to the CPU the command last ran
//! on (the guest scheduler then runs the probe instead of the command for
//! ~0.1 ms: the command's timer samples pause with it) and times
//! [`PASSES`] trips of eight independent adds with rdtsc, the better of two.
//! The share is the mean rate over the idle core's rate, which the pipeline
//! model of the host gives (`dcpi model --loop` of the same loop: 2.25
//! cycles a trip on Zen 4, measured 3.56 adds a cycle on an idle core) at
//! the calibrated clock: 1 on an idle core at full clock, ~0.5 with the
//! sibling as busy.
//!
//! Limits: command and pid modes (one target's CPU); it costs the command
//! ~0.1 ms of every 25 (with the two context switches, 0.15-0.4 % of its
//! time); it measures what the sibling leaves to a
//! throughput-bound loop, not to the command's own code (a latency-bound
//! command loses less).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Time between probes.
pub const INTERVAL: Duration = Duration::from_millis(25);

/// Loop trips of one probe (~0.05 ms at 3.5 GHz on an idle core).
pub const PASSES: u64 = 20_000;

/// Adds in one trip of the probe loop.
pub const ADDS_PER_PASS: f64 = 8.0;

/// The probe loop's code (what [`probe_once`] runs), for the pipeline model:
/// `add $1` to rax, rcx, rdx, rsi twice, `dec %rdi; jne` back.
pub const LOOP_BYTES: &str =
    "4883c0014883c1014883c2014883c6014883c0014883c1014883c2014883c60148ffcf75de";

/// TSC ticks one probe of `passes` trips took.
#[cfg(target_arch = "x86_64")]
pub fn probe_once(passes: u64) -> u64 {
    let (mut a, mut b, mut c, mut d) = (0u64, 0u64, 0u64, 0u64);
    let mut n = passes.max(1);
    let t0 = dcpi_models::core_clock::rdtsc();
    // SAFETY: pure register arithmetic, no memory access.
    unsafe {
        std::arch::asm!(
            "2:",
            "add {a}, 1",
            "add {b}, 1",
            "add {c}, 1",
            "add {d}, 1",
            "add {a}, 1",
            "add {b}, 1",
            "add {c}, 1",
            "add {d}, 1",
            "dec {n}",
            "jnz 2b",
            a = inout(reg) a,
            b = inout(reg) b,
            c = inout(reg) c,
            d = inout(reg) d,
            n = inout(reg) n,
            options(nomem, nostack),
        );
    }
    let t1 = dcpi_models::core_clock::rdtsc();
    std::hint::black_box((a, b, c, d, n));
    t1.saturating_sub(t0).max(1)
}

/// Adds per TSC tick, the better of two probes (an interrupt in one only
/// makes it slower).
fn rate() -> f64 {
    let best = probe_once(PASSES).min(probe_once(PASSES));
    ADDS_PER_PASS * PASSES as f64 / best as f64
}

/// Pins the calling thread to `cpu`.
fn pin(cpu: u32) -> bool {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes
    // inside it; sched_setaffinity reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// The probe thread, running until [`CoreShareProbe::finish`].
pub struct CoreShareProbe {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<Option<f64>>,
}

impl CoreShareProbe {
    /// Starts probing the CPU `pid` runs on every [`INTERVAL`].
    pub fn start(pid: u32) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("dcpi-core-probe".into())
            .spawn(move || {
                let (mut sum, mut n) = (0.0, 0u32);
                while !flag.load(Ordering::Acquire) {
                    std::thread::sleep(INTERVAL);
                    let Some(cpu) = crate::procfs::last_cpu(pid) else {
                        break; // gone
                    };
                    if flag.load(Ordering::Acquire) || !pin(cpu) {
                        continue;
                    }
                    sum += rate();
                    n += 1;
                }
                (n > 0).then(|| sum / n as f64)
            })?;
        Ok(CoreShareProbe { stop, handle })
    }

    /// Stops the probe: the mean rate, adds per TSC tick (None: no probe ran).
    pub fn finish(self) -> Option<f64> {
        self.stop.store(true, Ordering::Release);
        self.handle.join().ok().flatten()
    }
}

/// The idle core's probe rate, adds per TSC tick: [`idle_cycles_per_pass`]
/// on `machine`, at `clock` (the run's calibrated, fastest clock). A run's
/// share is its mean rate over this.
pub fn idle_rate(
    machine: &dcpi_models::machine::Machine,
    clock: &dcpi_models::core_clock::CoreClock,
) -> Option<f64> {
    let cycles = idle_cycles_per_pass(machine)?;
    (clock.ticks_per_cycle > 0.0).then(|| ADDS_PER_PASS / cycles / clock.ticks_per_cycle)
}

/// Cycles per trip of the probe loop on an idle core of `machine`: the
/// description's measured figure (`core_probe_cycles`, Zen 5), else the
/// pipeline model's.
pub fn idle_cycles_per_pass(machine: &dcpi_models::machine::Machine) -> Option<f64> {
    match machine.core_probe_cycles {
        c if c > 0.0 => Some(c),
        _ => model_cycles_per_pass(machine),
    }
}

/// Cycles per trip of the probe loop measured here, pinned to `cpu`: the
/// best of `tries` probes at `ticks_per_cycle` (`dcpi calibrate`'s figure
/// for [`dcpi_models::machine::Machine::core_probe_cycles`]). None when
/// the thread cannot be pinned or the clock is unknown.
#[cfg(target_arch = "x86_64")]
pub fn measure_cycles_per_pass(cpu: u32, ticks_per_cycle: f64, tries: u32) -> Option<f64> {
    if ticks_per_cycle <= 0.0 || !pin(cpu) {
        return None;
    }
    let best = (0..tries.max(1)).map(|_| probe_once(PASSES)).min()?;
    Some(best as f64 / ticks_per_cycle / PASSES as f64)
}

/// Cycles per trip of the probe loop on `machine`, by the pipeline model.
pub fn model_cycles_per_pass(machine: &dcpi_models::machine::Machine) -> Option<f64> {
    use dcpi_models::block::{decode, parse_hex};
    use dcpi_models::schedule::{analyze, Options, RepeatMode};
    let bytes = parse_hex(LOOP_BYTES).ok()?;
    let block = decode(&bytes, 0, false).ok()?;
    let a = analyze(
        machine,
        &block,
        Options {
            mode: RepeatMode::Loop,
            iterations: 0,
        },
    );
    (a.cycles_per_iteration > 0.0).then_some(a.cycles_per_iteration)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_loop_is_the_code_the_model_is_given() {
        // The same instructions the asm above spells out.
        let bytes = dcpi_models::block::parse_hex(LOOP_BYTES).unwrap();
        let block = dcpi_models::block::decode(&bytes, 0, false).unwrap();
        let texts: Vec<&str> = block.iter().map(|d| d.text.as_str()).collect();
        assert_eq!(texts.len(), 10);
        assert!(
            texts[..8].iter().all(|t| t.starts_with("add $1,%r")),
            "{texts:?}"
        );
        assert_eq!(texts[8], "dec %rdi");
        assert!(texts[9].starts_with("jne"), "{texts:?}");
        // Zen 4: four ALUs take the eight adds and the dec (the branch
        // beside them): 2.25 cycles a trip, as measured on an idle core.
        let zen4 = dcpi_models::machine::Machine::by_name("zen4").unwrap();
        let c = model_cycles_per_pass(&zen4).unwrap();
        assert!((c - 2.25).abs() < 0.01, "{c}");
    }

    #[test]
    fn a_measured_idle_figure_overrides_the_model() {
        // Zen 5: the model says 2.00 cycles a trip, an idle core runs 2.21.
        // (Once the model runs this loop as measured, the description's
        // figure can go, and this assertion with it.)
        let zen5 = dcpi_models::machine::Machine::by_name("zen5").unwrap();
        let model = model_cycles_per_pass(&zen5).unwrap();
        assert!((model - 2.0).abs() < 0.01, "{model}");
        assert_eq!(idle_cycles_per_pass(&zen5), Some(2.21));
        let zen4 = dcpi_models::machine::Machine::by_name("zen4").unwrap();
        assert_eq!(idle_cycles_per_pass(&zen4), model_cycles_per_pass(&zen4));
    }

    #[test]
    fn the_idle_rate_is_the_models_adds_a_tick() {
        let clock = dcpi_models::core_clock::CoreClock {
            core_hz: 3.5e9,
            tsc_hz: 2.45e9,
            ticks_per_cycle: 0.7,
            core_hz_min: 3.5e9,
            core_hz_max: 3.5e9,
        };
        // Zen 4: 8 adds / 2.25 cycles / 0.7 ticks a cycle = 5.08 a tick.
        let zen4 = dcpi_models::machine::Machine::by_name("zen4").unwrap();
        let idle = idle_rate(&zen4, &clock).unwrap();
        assert!((idle - 8.0 / 2.25 / 0.7).abs() < 1e-3, "{idle}");
        let stopped = dcpi_models::core_clock::CoreClock {
            ticks_per_cycle: 0.0,
            ..clock
        };
        assert_eq!(idle_rate(&zen4, &stopped), None);
    }

    #[test]
    fn a_probe_takes_time_and_runs_near_the_model_on_this_host() {
        // A robust fact only (the host may be busy): some ticks, and no
        // more than ten times the model's adds a tick on any x86 core.
        let t = probe_once(PASSES);
        assert!(t > 0);
        let r = rate();
        assert!(r > 0.0 && r < 40.0, "{r}");
    }
}
