//! Text rendering of the CPI analysis (dcpicalc's listing): per block a
//! header with its frequency and best/actual cycles, per instruction its
//! samples, frequency, confidence, CPI, best case, static marks and dynamic
//! stall cycles. Estimates below the chosen confidence print as `-`.

use crate::cpi::{CpiReport, InsnRow};
use crate::frequency::Confidence;
use std::fmt::Write;

/// 1.23G, 456M, 7.89K, 12.
pub fn si(v: f64) -> String {
    let a = v.abs();
    if a >= 1e12 {
        format!("{:.2}T", v / 1e12)
    } else if a >= 1e9 {
        format!("{:.2}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}K", v / 1e3)
    } else if a >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// A frequency, with `<=` when it is only a bound from above.
fn bounded(f: f64, upper: bool) -> String {
    if upper {
        format!("<={}", si(f))
    } else {
        si(f)
    }
}

fn opt(v: Option<f64>, shown: bool, f: impl Fn(f64) -> String) -> String {
    match (v, shown) {
        (Some(x), true) => f(x),
        _ => "-".into(),
    }
}

pub const LEGEND: &str = "static stall marks: d register dependency, c loop-carried chain, \
m store forwarding, p port contention, u unit busy (divider), w dispatch width, r ROB or scheduler full, \
f front end, t retire width, s store commit";

/// Cycles per execution are only worth printing for code estimated to
/// have run at least once: a loop whose trip count no sample informs can
/// come out at 1e-4 runs, and its samples' cycles over that print as a CPI
/// of 1e12 (the report keeps the number: its culprits' shares rest on it).
pub fn ran(freq: Option<f64>) -> bool {
    freq.is_some_and(|f| f >= 1.0)
}

fn insn_line(out: &mut String, r: &InsnRow, time_event: Option<&str>, min: Confidence) {
    let shown = r.confidence >= min;
    let per_run = shown && ran(r.freq);
    let samples = time_event
        .and_then(|e| r.samples.get(e))
        .copied()
        .unwrap_or(0);
    let _ = writeln!(
        out,
        "{:>10} {:>8} {:>8} {:>6} {:>7} {:>6} {:>4} {:>7}  {}",
        r.addr.trim_start_matches("0x"),
        samples,
        opt(r.freq, shown, |f| bounded(f, r.freq_upper_bound)),
        r.confidence.as_str(),
        opt(r.cpi, per_run, |c| format!("{c:.2}")),
        format!("{:.2}", r.best_cpi),
        if r.static_marks.is_empty() {
            "".to_string()
        } else {
            r.static_marks.clone()
        },
        opt(r.dynamic_stall, per_run, |c| format!("{c:+.2}")),
        r.instruction
    );
}

/// Per loop: trips per entry (stated by its code, estimated), trips in
/// all, cycles a trip; estimates below `min` confidence print as -.
fn loops_section(out: &mut String, rep: &CpiReport, min: Confidence) {
    if rep.loops.is_empty() {
        return;
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "loops     per entry: trips its code states / estimated; trips in all; cycles a trip"
    );
    for l in &rep.loops {
        let shown = l.confidence >= min;
        let stated = l.trips_stated.map_or("-".to_string(), |n| n.to_string());
        let _ = writeln!(
            out,
            "  block {} [{}] depth {}: {} / {}; {}; {} ({})",
            l.header,
            l.start,
            l.depth,
            stated,
            opt(l.trips_per_entry, l.entries_confidence >= min, si),
            opt(l.trips_total, shown, si),
            opt(l.cycles_per_trip, shown, |c| if c < 1000.0 {
                format!("{c:.2}")
            } else {
                si(c)
            }),
            l.confidence.as_str()
        );
    }
}

pub fn render(rep: &CpiReport, min: Confidence) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "image     {}", rep.image);
    let loops = rep.blocks.iter().filter(|b| b.loop_header).count();
    let _ = writeln!(
        out,
        "function  {} [{}-{}]: {} instructions, {} blocks, {} loops; model {}",
        rep.function,
        rep.start,
        rep.end,
        rep.instructions.len(),
        rep.blocks.len(),
        loops,
        rep.machine
    );
    let time = rep.time_event.as_deref();
    let samples_of = |e: &str| rep.summary.samples.get(e).copied().unwrap_or(0);
    match (time, rep.cycles_per_sample) {
        (Some(t), Some(cps)) => {
            let _ = writeln!(
                out,
                "event     {t}: {} samples, one sample = {} cycles",
                samples_of(t),
                si(cps)
            );
        }
        (Some(t), None) => {
            let _ = writeln!(out, "event     {t}: {} samples", samples_of(t));
        }
        _ => {}
    }
    let others: Vec<String> = rep
        .summary
        .samples
        .iter()
        .filter(|(e, _)| Some(e.as_str()) != time)
        .map(|(e, n)| format!("{e} {n}"))
        .collect();
    if !others.is_empty() {
        let _ = writeln!(out, "also      {}", others.join(", "));
    }
    let s = &rep.summary;
    if let (Some(cpi), Some(best)) = (s.cpi, s.best_cpi) {
        let _ = writeln!(
            out,
            "summary   {} cycles, best case {}; {} instructions executed; CPI {cpi:.2} (best case {best:.2}); dynamic stalls {:.1}% of cycles; {:.0}% of samples at medium or high confidence",
            si(s.cycles),
            si(s.best_case_cycles),
            si(s.instructions_executed),
            100.0 * s.dynamic_stall_share.unwrap_or(0.0),
            // `+ 0.0` turns a negative zero (an empty f64 sum is -0.0) into 0
            (100.0 * s.confident_share).max(0.0) + 0.0,
        );
    }
    if let Some(calls) = rep.calls_from_callers {
        // The entry block's confidence is the call count's: a guess where
        // it is low (matmul's entry, run 8000 times, solved at 5.5).
        let sure = rep
            .blocks
            .first()
            .is_none_or(|b| b.confidence >= Confidence::Medium);
        let _ = writeln!(
            out,
            "callers   call it {} times (solved with them{})",
            si(calls),
            if sure { "" } else { "; low confidence" }
        );
    }
    for w in &rep.warnings {
        let _ = writeln!(out, "warning   {w}");
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:>10} {:>8} {:>8} {:>6} {:>7} {:>6} {:>4} {:>7}  instruction",
        "addr", "samples", "freq", "conf", "cpi", "best", "stat", "dyn"
    );
    let mut rows = rep.instructions.iter().peekable();
    for b in &rep.blocks {
        let shown = b.confidence >= min;
        let mut tags = Vec::new();
        if b.loop_header {
            tags.push("loop head".to_string());
        }
        let stated = rep.loops.iter().find(|l| l.header == b.index);
        if let Some(n) = stated.and_then(|l| l.trips_stated) {
            tags.push(format!("{n} runs an entry (its code says)"));
        }
        if !b.loops.is_empty() {
            tags.push(format!("depth {}", b.loops.len()));
        }
        if b.freq_upper_bound {
            // Not a strict bound: an out-of-order core can hide a block's
            // latency under other work, so it takes fewer cycles a run than
            // its best case (session 63: lzfind's chain walk ran 596 M
            // times under a bound of 431 M; benches/upper_bounds.py).
            tags.push(
                "frequency at most this unless its latency hides under other work \
                 (all samples may be load stalls)"
                    .into(),
            );
        } else if let Some(why) = b.confidence_why {
            tags.push(format!("{}: {why}", b.confidence.as_str()));
        }
        if let Some(e) = &b.exit {
            tags.push(exit_text(e));
        }
        let _ = writeln!(
            out,
            "── block {} [{}] freq {} ({}), best {:.2} cycles, actual {} cycles{}",
            b.index,
            b.start,
            opt(b.freq, shown, |f| bounded(f, b.freq_upper_bound)),
            b.confidence.as_str(),
            b.best_cycles,
            opt(b.actual_cycles, shown && ran(b.freq), |c| format!("{c:.2}")),
            if tags.is_empty() {
                String::new()
            } else {
                format!(", {}", tags.join(", "))
            }
        );
        while let Some(r) = rows.peek() {
            if r.block != b.index {
                break;
            }
            insn_line(&mut out, r, time, min);
            rows.next();
        }
    }
    loops_section(&mut out, rep, min);
    let _ = writeln!(out);
    let _ = writeln!(out, "{LEGEND}");
    let _ = writeln!(
        out,
        "cpi/dyn: cycles per execution measured and beyond the best case; estimates below {} confidence print as -",
        min.as_str()
    );
    // Real code often has no estimate at the default level (xz's match
    // finder, a Python interpreter's GC): say where the numbers went.
    let sampled = rep.instructions.iter().filter(|r| r.charged_samples > 0.0);
    let (all, hidden) = sampled.fold((0, 0), |(a, h), r| {
        (a + 1, h + usize::from(r.confidence < min))
    });
    if hidden > 0 && min > Confidence::Low {
        let _ = writeln!(
            out,
            "hidden:  {hidden} of the {all} instructions with samples are estimated below {} confidence; \
             `--confidence low` prints them, each block saying why",
            min.as_str()
        );
    }
    out
}

/// How a block leaves its function, in words (`tail call to 0x1020`).
fn exit_text(e: &crate::cfg::Exit) -> String {
    use crate::cfg::Exit;
    match e {
        Exit::Return => "return".into(),
        Exit::TailCall(t) => format!("tail call to {t:#x}"),
        Exit::NoReturnCall(t) => format!("call to {t:#x}, which does not return"),
        Exit::IndirectJump => "indirect jump, targets unknown".into(),
        Exit::Trap => "trap".into(),
        Exit::FallsOff => "runs off the end of the function".into(),
    }
}
