//! The loop every reader of the per-CPU rings runs: wait for data (or the
//! next flush), read all rings, order the round by time, hand each record to
//! the consumer, flush periodically; on stop disable the events, drain, and
//! send the last flush. The sampling driver and the latency tracer differ
//! only in how they parse and what they do with a record.

use crate::perf_setup::set_enabled;
use perf_event::Sampler;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Parses one record body given its type and misc bits.
pub type Parser<'a, R> = Box<dyn Fn(u32, u16, &[u8]) -> Option<R> + 'a>;

/// What a ring reader does with its records.
pub trait RingConsumer {
    type Record;
    /// The rings to read and a parser (split so the parser can borrow state).
    fn rings_and_parser(&mut self) -> (&mut [Sampler], Parser<'_, Self::Record>);
    /// Every event fd (to disable them at stop).
    fn fds(&self) -> Vec<i32>;
    fn time(r: &Self::Record) -> u64;
    fn process(&mut self, r: Self::Record);
    fn malformed(&mut self);
    fn woke(&mut self) {}
    /// Work between rounds while running (period randomization).
    fn idle(&mut self) {}
    /// True when someone asked for a flush before the next periodic one.
    fn flush_due(&self) -> bool {
        false
    }
    fn flush(&mut self, last: bool);
}

/// Runs `c` until `stop`, flushing every `flush_interval`.
pub fn run<C: RingConsumer>(c: &mut C, stop: &AtomicBool, flush_interval: Duration) {
    let mut next_flush = Instant::now() + flush_interval;
    let mut round: Vec<C::Record> = Vec::with_capacity(4096);
    let mut pollfds: Vec<libc::pollfd> = c
        .rings_and_parser()
        .0
        .iter()
        .map(|r| libc::pollfd {
            fd: r.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    loop {
        let stopping = stop.load(Ordering::Acquire);
        if stopping {
            for fd in c.fds() {
                set_enabled(fd, false);
            }
        } else {
            let timeout = next_flush
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(if c.flush_due() { 0 } else { 50 }));
            // SAFETY: pollfds is a valid array of pollfd.
            let n = unsafe {
                libc::poll(
                    pollfds.as_mut_ptr(),
                    pollfds.len() as _,
                    timeout.as_millis() as i32,
                )
            };
            if n > 0 {
                c.woke();
            }
        }
        // Records stamped after this instant may still have predecessors that
        // are not yet visible in a ring read earlier in this round (a FORK on
        // one CPU, then the child's exec on another): they wait for the next
        // round. perf's ordered-events rounds do the same.
        let horizon = crate::driver::monotonic_ns();
        let mut got = 0usize;
        let mut bad = 0usize;
        {
            let (rings, parse) = c.rings_and_parser();
            for ring in rings.iter_mut() {
                while let Some(rec) = ring.next_record() {
                    got += 1;
                    let body = rec.to_contiguous();
                    match parse(rec.ty(), rec.misc(), &body) {
                        Some(r) => round.push(r),
                        None => bad += 1,
                    }
                }
            }
        }
        for _ in 0..bad {
            c.malformed();
        }
        round.sort_by_key(|r| C::time(r));
        let ready = if stopping {
            round.len()
        } else {
            round.partition_point(|r| C::time(r) <= horizon)
        };
        for r in round.drain(..ready) {
            c.process(r);
        }
        if got == 0 && !stopping && pollfds.iter().any(|p| p.revents & libc::POLLHUP != 0) {
            // The monitored tasks are gone; avoid spinning on POLLHUP.
            std::thread::sleep(Duration::from_millis(10));
        }
        if !stopping {
            c.idle();
        }
        if stopping || Instant::now() >= next_flush || c.flush_due() {
            c.flush(stopping);
            next_flush = Instant::now() + flush_interval;
            if stopping {
                return;
            }
        }
    }
}
