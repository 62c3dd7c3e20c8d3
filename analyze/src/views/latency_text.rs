//! Terminal rendering of latency profiles: per operation a histogram with a
//! log2 x-axis labelled by each bucket's latency, and comparisons.

use crate::latency::{Comparison, LatencyReport, OpProfile};
use dcpi_collect::latency::histogram::bucket_start;
use std::fmt::Write;

/// Human form of a duration in seconds.
pub fn human_time(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2}s")
    } else if s >= 1e-3 {
        format!("{:.1}ms", s * 1e3)
    } else if s >= 1e-6 {
        format!("{:.1}µs", s * 1e6)
    } else {
        format!("{:.0}ns", s * 1e9)
    }
}

fn bucket_label(b: i32, r: u32) -> String {
    if r == 1 {
        format!("2^{b}")
    } else {
        format!("2^{:.1}", b as f64 / r as f64)
    }
}

/// One operation's histogram.
pub fn render_op(out: &mut String, op: &OpProfile, r: u32, core_hz: f64) {
    let mean = if op.count > 0 {
        op.total_seconds / op.count as f64
    } else {
        0.0
    };
    let peaks: Vec<String> = op
        .peaks
        .iter()
        .map(|p| {
            let label = p
                .label
                .as_ref()
                .map(|l| format!(", ≈ {l}"))
                .unwrap_or_default();
            format!(
                "{} ({}{label})",
                bucket_label(p.bucket, r),
                human_time(p.seconds)
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "{}: {} calls, total {} ({:.1}% of all latency), mean {}, {} peak{}: {}",
        op.operation,
        op.count,
        human_time(op.total_seconds),
        op.percent,
        human_time(mean),
        op.peaks.len(),
        if op.peaks.len() == 1 { "" } else { "s" },
        peaks.join(", ")
    );
    let max = op.buckets.values().copied().max().unwrap_or(1).max(1);
    let (Some(&lo), Some(&hi)) = (op.buckets.keys().next(), op.buckets.keys().last()) else {
        return;
    };
    for b in lo..=hi {
        let n = op.buckets.get(&b).copied().unwrap_or(0);
        let width = if n == 0 {
            0
        } else {
            ((n as f64 / max as f64) * 50.0).ceil() as usize
        };
        let _ = writeln!(
            out,
            "  {:>7} {:>8} |{:<50} {n}",
            bucket_label(b, r),
            human_time(bucket_start(b, r) / core_hz),
            "#".repeat(width)
        );
    }
}

/// The whole report; `all` shows every operation, else OSprof's selection.
pub fn render(r: &LatencyReport, all: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Latency profile of {} (sets {:?}): {} calls paired, {} unpaired, {} lost; resolution {} bucket{} per power of two, core clock {:.3} GHz",
        r.selector,
        r.sets,
        r.calls,
        r.unpaired,
        r.lost,
        r.resolution,
        if r.resolution == 1 { "" } else { "s" },
        r.core_hz / 1e9
    );
    if !r.host_times.is_empty() {
        let t: Vec<String> = r
            .host_times
            .iter()
            .map(|(n, c)| format!("{n} {}", human_time(c / r.core_hz)))
            .collect();
        let _ = writeln!(out, "Host characteristic times: {}", t.join(", "));
    }
    let _ = writeln!(
        out,
        "\n{:<24} {:>10} {:>12} {:>7} {:>11}  peaks",
        "operation", "calls", "total", "%", "mean"
    );
    for o in &r.operations {
        let mean = if o.count > 0 {
            o.total_seconds / o.count as f64
        } else {
            0.0
        };
        let _ = writeln!(
            out,
            "{:<24} {:>10} {:>12} {:>7.2} {:>11}  {}{}",
            o.operation,
            o.count,
            human_time(o.total_seconds),
            o.percent,
            human_time(mean),
            o.peaks.len(),
            if r.selected.contains(&o.operation) {
                "  *"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(
        out,
        "(* selected: the operations that contribute most latency)\n"
    );
    for o in r
        .operations
        .iter()
        .filter(|o| all || r.selected.contains(&o.operation))
    {
        render_op(&mut out, o, r.resolution, r.core_hz);
        out.push('\n');
    }
    out
}

/// A comparison table.
pub fn render_comparison(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "A: {}\nB: {}\n", c.a, c.b);
    let _ = writeln!(
        out,
        "{:<24} {:>9} {:>9} {:>7} {:>7} {:>9} {:>9}  {:<12} {:<12} significant",
        "operation",
        "calls A",
        "calls B",
        "EMD",
        "chi2",
        "Δlatency",
        "Δcount",
        "peaks A",
        "peaks B"
    );
    for d in &c.operations {
        let pk = |v: &[i32]| {
            v.iter()
                .map(|b| b.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        let _ = writeln!(
            out,
            "{:<24} {:>9} {:>9} {:>7.2} {:>7.3} {:>8.0}% {:>8.0}%  {:<12} {:<12} {}",
            d.operation,
            d.count_a,
            d.count_b,
            d.emd,
            d.chi_square,
            d.latency_diff * 100.0,
            d.count_diff * 100.0,
            pk(&d.peaks_a),
            pk(&d.peaks_b),
            if d.significant { "yes" } else { "" }
        );
    }
    if !c.only_in_a.is_empty() {
        let _ = writeln!(out, "only in A: {}", c.only_in_a.join(", "));
    }
    if !c.only_in_b.is_empty() {
        let _ = writeln!(out, "only in B: {}", c.only_in_b.join(", "));
    }
    out
}
