//! Core clock calibration with rdtsc alone.
//!
//! A chain of dependent `add reg,reg` instructions retires one add per core
//! cycle (see the crate docs for why not `add reg,imm`), so
//! timing N of them against both the TSC and CLOCK_MONOTONIC gives the core
//! clock (cycles per second), the TSC rate, and TSC ticks per core cycle.

use serde::Serialize;
use std::time::Instant;

/// Adds in one pass of the unrolled loop body.
pub const ADDS_PER_PASS: u64 = 500;

/// Result of one calibration.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct CoreClock {
    /// Core cycles per second (median over the repeats).
    pub core_hz: f64,
    /// TSC ticks per second.
    pub tsc_hz: f64,
    /// TSC ticks per core cycle.
    pub ticks_per_cycle: f64,
    /// Lowest and highest core clock seen among the repeats, a measure of drift.
    pub core_hz_min: f64,
    pub core_hz_max: f64,
}

#[cfg(target_arch = "x86_64")]
fn dependent_adds(passes: u64) {
    let mut acc: u64 = 0;
    let mut n = passes;
    // SAFETY: pure register arithmetic, no memory access.
    unsafe {
        std::arch::asm!(
            "2:",
            ".rept 500",
            "add {acc}, {acc}",
            ".endr",
            "dec {n}",
            "jnz 2b",
            acc = inout(reg) acc,
            n = inout(reg) n,
            options(nomem, nostack),
        );
    }
    std::hint::black_box((acc, n));
}

/// The time-stamp counter.
#[cfg(target_arch = "x86_64")]
pub fn rdtsc() -> u64 {
    // SAFETY: rdtsc is available on every x86-64 CPU.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// One timed run: (TSC ticks per core cycle, TSC Hz).
#[cfg(target_arch = "x86_64")]
fn measure_once(passes: u64) -> (f64, f64) {
    let t0 = Instant::now();
    let c0 = rdtsc();
    dependent_adds(passes);
    let c1 = rdtsc();
    let secs = t0.elapsed().as_secs_f64();
    let ticks = (c1 - c0) as f64;
    (ticks / (passes * ADDS_PER_PASS) as f64, ticks / secs)
}

/// TSC ticks per core cycle from one short run of `passes` × [`ADDS_PER_PASS`] dependent
/// adds, rdtsc alone. Being preempted or sharing the core only makes a run
/// slower, never faster, so the minimum over runs taken next to a
/// measurement is that measurement's clock.
#[cfg(target_arch = "x86_64")]
pub fn ticks_per_cycle_once(passes: u64) -> f64 {
    measure_once(passes.max(1)).0
}

/// Calibrates the core clock: 7 runs of about 3 ms each after a warm-up.
/// Ticks per cycle is the fastest run's (a disturbed run — preempted, or
/// its core shared with another tenant — only looks slower: the median of
/// seven disturbed runs once read 28 % slow on this host and made every
/// latency `dcpi calibrate` measured 28 % short); the TSC rate is the
/// median (it does not depend on being disturbed). Takes about 60 ms of
/// one core when it is already at speed, up to ~0.45 s when it was idle.
#[cfg(target_arch = "x86_64")]
pub fn calibrate() -> CoreClock {
    // Warm up so the core leaves any low-power state, and size the runs.
    let t0 = Instant::now();
    dependent_adds(20_000);
    let warm = t0.elapsed().as_secs_f64().max(1e-6);
    let passes = ((20_000.0 * 0.003 / warm) as u64).clamp(1_000, 2_000_000);
    // A core that was idle takes a while to reach its clock: measured on a
    // Zen 3 KVM guest, 2.56 GHz for the first ~0.2 s of load, then 3.1-3.2
    // (a run's start calibrated cold read 20 % slow). Keep the core busy
    // until ten runs in a row (~30 ms) bring nothing 0.5 % faster, at most
    // ~0.4 s.
    let warm_until = Instant::now() + std::time::Duration::from_millis(400);
    let (mut best, mut calm) = (f64::INFINITY, 0);
    while calm < 10 && Instant::now() < warm_until {
        let tpc = measure_once(passes).0;
        if tpc < best * 0.995 {
            calm = 0;
        } else {
            calm += 1;
        }
        best = best.min(tpc);
    }
    let runs: Vec<(f64, f64)> = (0..7).map(|_| measure_once(passes)).collect();
    let mut tsc: Vec<f64> = runs.iter().map(|r| r.1).collect();
    tsc.sort_by(f64::total_cmp);
    let tsc_hz = tsc[tsc.len() / 2];
    let hz = |tpc: f64| tsc_hz / tpc;
    let fastest = runs.iter().map(|r| r.0).fold(f64::INFINITY, f64::min);
    let slowest = runs.iter().map(|r| r.0).fold(0.0, f64::max);
    CoreClock {
        core_hz: hz(fastest),
        tsc_hz,
        ticks_per_cycle: fastest,
        core_hz_min: hz(slowest),
        core_hz_max: hz(fastest),
    }
}

/// Core cycles per second of work a dependent-add chain gets on this thread
/// as it runs now, by the wall clock: see [`chain_hz_by`].
#[cfg(target_arch = "x86_64")]
pub fn chain_hz(runs: usize, secs: f64) -> f64 {
    let t0 = Instant::now();
    chain_hz_by(runs, secs, || t0.elapsed().as_secs_f64())
}

/// Core cycles per second of work a dependent-add chain gets on this thread,
/// by the clock `now` (seconds): the fastest of `runs` runs of about `secs`
/// each (a disturbed run only looks slower). With the thread being sampled
/// and `now` the sampling timer's own count, this is the clock that turns
/// its samples into cycles: time the sampling takes (the interrupt, in a
/// virtual machine the exits it causes) is charged to the interrupted code
/// by a timer event, but does none of its work; time the thread is not
/// running is in neither.
#[cfg(target_arch = "x86_64")]
pub fn chain_hz_by(runs: usize, secs: f64, mut now: impl FnMut() -> f64) -> f64 {
    let t0 = now();
    dependent_adds(2_000);
    let warm = (now() - t0).max(1e-7);
    let passes = ((2_000.0 * secs / warm) as u64).clamp(100, 20_000_000);
    (0..runs.max(1))
        .map(|_| {
            let t = now();
            dependent_adds(passes);
            (passes * ADDS_PER_PASS) as f64 / (now() - t).max(1e-9)
        })
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_is_plausible() {
        let _g = crate::CPU0.lock().unwrap_or_else(|e| e.into_inner());
        let c = calibrate();
        eprintln!("{c:?}");
        // Any x86-64 core built this century runs between 0.5 and 7 GHz.
        assert!(c.core_hz > 5e8 && c.core_hz < 7e9, "{c:?}");
        assert!(c.tsc_hz > 1e8 && c.tsc_hz < 1e10, "{c:?}");
        assert!(c.core_hz_min <= c.core_hz && c.core_hz <= c.core_hz_max);
    }
}
