//! Characteristic times of the host that show up as peaks in latency
//! profiles (OSprof §3.3): a context switch, the timer tick, and the
//! scheduler's time slice. Measured, not assumed; each in core cycles.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostTimes {
    /// One switch between two threads on one CPU (pipe ping-pong / 2).
    pub context_switch: f64,
    /// Period of the timer interrupt seen by a busy CPU.
    pub timer_tick: Option<f64>,
    /// Median run length of one of two CPU-bound threads sharing a CPU.
    pub sched_slice: Option<f64>,
}

impl HostTimes {
    pub fn as_pairs(&self) -> Vec<(String, f64)> {
        let mut v = vec![("context switch".to_string(), self.context_switch)];
        if let Some(t) = self.timer_tick {
            v.push(("timer tick".into(), t));
        }
        if let Some(t) = self.sched_slice {
            v.push(("scheduling quantum".into(), t));
        }
        v
    }
}

fn pin_to_cpu0() {
    // SAFETY: cpu_set_t is plain data; sched_setaffinity on the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    Some(v[v.len() / 2])
}

/// Pipe ping-pong between two threads pinned to CPU 0: ns per switch.
fn context_switch_ns(rounds: u32) -> f64 {
    let mut a = [0i32; 2];
    let mut b = [0i32; 2];
    // SAFETY: arrays of two fds.
    unsafe {
        libc::pipe(a.as_mut_ptr());
        libc::pipe(b.as_mut_ptr());
    }
    let (a_r, a_w, b_r, b_w) = (a[0], a[1], b[0], b[1]);
    let peer = std::thread::spawn(move || {
        pin_to_cpu0();
        let mut byte = 0u8;
        for _ in 0..rounds {
            unsafe {
                libc::read(a_r, &mut byte as *mut u8 as *mut libc::c_void, 1);
                libc::write(b_w, &byte as *const u8 as *const libc::c_void, 1);
            }
        }
    });
    let me = std::thread::spawn(move || {
        pin_to_cpu0();
        let mut byte = 1u8;
        let t0 = Instant::now();
        for _ in 0..rounds {
            unsafe {
                libc::write(a_w, &byte as *const u8 as *const libc::c_void, 1);
                libc::read(b_r, &mut byte as *mut u8 as *mut libc::c_void, 1);
            }
        }
        t0.elapsed().as_nanos() as f64 / (2.0 * rounds as f64)
    });
    let ns = me.join().unwrap_or(0.0);
    let _ = peer.join();
    for fd in [a_r, a_w, b_r, b_w] {
        unsafe { libc::close(fd) };
    }
    ns
}

/// Gaps (interruptions) seen by a thread spinning on the clock for `span`:
/// (start ns, length ns) of every gap above `min_gap_ns`.
fn gaps(span: Duration, min_gap_ns: u64, stop: Option<&AtomicBool>) -> Vec<(u64, u64)> {
    let t0 = Instant::now();
    let mut last = 0u64;
    let mut out = Vec::new();
    loop {
        let now = t0.elapsed().as_nanos() as u64;
        if now - last > min_gap_ns {
            out.push((last, now - last));
        }
        last = now;
        if now > span.as_nanos() as u64 || stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            return out;
        }
    }
}

/// Measures the host's characteristic times (about 0.5 s).
pub fn measure(core_hz: f64) -> HostTimes {
    let to_cycles = |ns: f64| ns * core_hz / 1e9;
    let cs = context_switch_ns(20_000);

    // Timer tick: the most common distance between short interruptions of a
    // spinning thread.
    let tick = {
        let g = std::thread::spawn(|| {
            pin_to_cpu0();
            gaps(Duration::from_millis(200), 700, None)
        })
        .join()
        .unwrap_or_default();
        let mut d: Vec<f64> = g
            .windows(2)
            .filter(|w| w[0].1 < 50_000 && w[1].1 < 50_000)
            .map(|w| (w[1].0 - w[0].0) as f64)
            .filter(|&x| x > 100_000.0)
            .collect();
        median(&mut d)
    };

    // Time slice: two spinning threads on CPU 0; a gap longer than a tick's
    // interruption is the other thread running.
    let slice = {
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let other = std::thread::spawn(move || {
            pin_to_cpu0();
            gaps(Duration::from_millis(400), 1_000_000_000, Some(&s2));
        });
        let g = std::thread::spawn(|| {
            pin_to_cpu0();
            gaps(Duration::from_millis(300), 100_000, None)
        })
        .join()
        .unwrap_or_default();
        stop.store(true, Ordering::Relaxed);
        let _ = other.join();
        let mut runs: Vec<f64> = g.iter().map(|x| x.1 as f64).collect();
        median(&mut runs)
    };
    HostTimes {
        context_switch: to_cycles(cs),
        timer_tick: tick.map(to_cycles),
        sched_slice: slice.map(to_cycles),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn characteristic_times_are_plausible() {
        let _g = crate::CPU0.lock().unwrap_or_else(|e| e.into_inner());
        let t = super::measure(3e9);
        // A context switch costs between 0.3 µs and 100 µs anywhere.
        assert!(t.context_switch > 1e3 && t.context_switch < 3e5, "{t:?}");
        if let Some(s) = t.sched_slice {
            assert!(s > 3e4, "{t:?}");
        }
    }
}
