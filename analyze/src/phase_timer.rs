//! Where an analysis spends its time: with `DCPI_TIMING` set in the
//! environment, each [`phase`] prints its label and the seconds since the
//! previous one (or since the first) to stderr. Silent otherwise, and then
//! costs one environment look-up per process.

use std::sync::{Mutex, OnceLock};
use std::time::Instant;

fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("DCPI_TIMING").is_some())
}

/// Marks the end of a phase named `label`.
pub fn phase(label: &str) {
    if !enabled() {
        return;
    }
    static LAST: Mutex<Option<Instant>> = Mutex::new(None);
    let now = Instant::now();
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    let since = last.map_or(0.0, |t| now.duration_since(t).as_secs_f64());
    eprintln!("timing {label:<32} {:8.1} ms", 1e3 * since);
    *last = Some(now);
}
