//! What sampling costs the code it samples, measured: the core clock a
//! dependent-add chain gets on this thread while the run's own events sample
//! it at the run's rate.
//!
//! A timer event (cpu-clock) charges every sample a whole period of the
//! sampled thread's time, but the interrupt that takes the sample — and in a
//! virtual machine the exits it causes — is part of that time and does none
//! of the thread's work. Measured on a KVM guest (AMD EPYC, 3.66 GHz): a
//! dependent-add chain sampled at 20 kHz ran at 2.76 GHz, 5 kHz 3.43 GHz,
//! 1 kHz 3.61 GHz — 12.5 µs per sample. The analyzer turns samples into
//! cycles with this clock, so frequencies are not 1.3× high on such hosts.
//!
//! Limits: the chain stands for the sampled code (a handler that also
//! evicts the program's cache lines costs it more than it costs the chain);
//! the probe samples user mode only, as the run does unless it includes the
//! kernel; it takes ~60 ms.

use crate::db::writer::EventConfig;
use perf_event::{Builder, SampleFlag};

/// Runs of the chain, and the length of each (about 200 samples each at 20 kHz).
const RUNS: usize = 5;
const RUN_SECONDS: f64 = 0.010;

/// Ring buffer of each probe event (the samples are never read).
const RING_BYTES: usize = 64 * 4096;

/// The chain's clock while `configs`' events sample this thread, or why it
/// could not be measured. Each distinct event opened once, at its period
/// or frequency, with a ring buffer as the run's.
pub fn sampled_core_hz(configs: &[EventConfig], include_kernel: bool) -> Result<f64, String> {
    let mut events = Vec::new();
    let mut seen = Vec::new();
    let mut timer = None;
    for c in configs {
        if seen.contains(&&c.used) {
            continue;
        }
        seen.push(&c.used);
        let mut b = Builder::new(crate::perf_setup::Encoded {
            type_: c.used.type_,
            config: c.used.config,
        });
        b.observe_self().any_cpu();
        b.sample(SampleFlag::IP | SampleFlag::TID | SampleFlag::TIME);
        match (c.period, c.frequency) {
            (_, Some(f)) => b.sample_frequency(f),
            (Some(p), _) => b.sample_period(p),
            _ => continue,
        };
        b.exclude_kernel(!include_kernel);
        b.exclude_hv(true);
        b.enabled(false);
        let counter = b
            .build()
            .map_err(|e| format!("opening {}: {e}", c.used.display_name()))?;
        let mut sampler = counter
            .sampled(RING_BYTES)
            .map_err(|e| format!("mapping its ring buffer: {e}"))?;
        sampler
            .enable()
            .map_err(|e| format!("enabling {}: {e}", c.used.display_name()))?;
        if timer.is_none() && c.used.unit == crate::event_spec::EventUnit::Nanoseconds {
            timer = Some(events.len());
        }
        events.push(sampler);
    }
    // The timer's own count is the clock its samples are charged in: it
    // runs while the thread does, sampling included, preemption not.
    let Some(timer) = timer else {
        return Err("no timer event (cpu-clock, task-clock) among the run's events".into());
    };
    let mut failed = None;
    let hz =
        dcpi_models::core_clock::chain_hz_by(RUNS, RUN_SECONDS, || match events[timer].read() {
            Ok(ns) => ns as f64 / 1e9,
            Err(e) => {
                failed.get_or_insert(e);
                0.0
            }
        });
    drop(events);
    match failed {
        Some(e) => Err(format!("reading the timer's count: {e}")),
        None => Ok(hz),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_spec::EventSpec;

    #[test]
    fn sampling_slows_the_chain_and_no_sampling_does_not() {
        let config = |hz: u64| EventConfig {
            requested: "cpu-clock".into(),
            used: EventSpec::cpu_clock(),
            period: None,
            frequency: Some(hz),
            period_jitter: 0.0,
            fallback_reason: None,
        };
        // Timed by the thread's own CPU time, as the sampled run is by its
        // timer's count: the wall clock also counts the time other tests
        // on a busy CI machine take the core (it once read 1.39 GHz there
        // against 2.21 sampled).
        let thread_seconds = || {
            let mut t = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: clock_gettime writes the timespec it is given.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
            t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
        };
        let plain = dcpi_models::core_clock::chain_hz_by(RUNS, RUN_SECONDS, thread_seconds);
        let sampled = sampled_core_hz(&[config(20_000)], false).expect("cpu-clock opens as root");
        eprintln!("chain {plain:.3e} Hz, sampled at 20 kHz {sampled:.3e} Hz");
        // Sampling never speeds code up; the fastest of five runs of a
        // busy host may still come out a little above the plain one.
        assert!(sampled < plain * 1.10, "{sampled} vs {plain}");
        // A sample costs far less than its 50 µs period.
        assert!(sampled > plain * 0.3, "{sampled} vs {plain}");
        assert!(sampled_core_hz(&[], false).is_err());
        // A count of events, not time: nothing to measure the clock with.
        let mut faults = config(1000);
        faults.used = crate::event_spec::parse_event("page-faults").unwrap();
        assert!(sampled_core_hz(&[faults], false).is_err());
    }
}
