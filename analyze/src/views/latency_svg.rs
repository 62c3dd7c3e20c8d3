//! One SVG bar chart per operation: log2 buckets on x (labelled with each
//! bucket's latency), calls on a log y axis, peaks marked.

use super::latency_text::human_time;
use crate::latency::{LatencyReport, OpProfile};
use dcpi_collect::latency::histogram::bucket_start;
use std::fmt::Write;
use std::path::{Path, PathBuf};

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// SVG text of one operation's histogram.
pub fn op_svg(op: &OpProfile, resolution: u32, core_hz: f64) -> String {
    let (Some(&lo), Some(&hi)) = (op.buckets.keys().next(), op.buckets.keys().last()) else {
        return String::new();
    };
    let n = (hi - lo + 1) as f64;
    let (w, h, left, bottom, top) = (780.0, 380.0, 60.0, 70.0, 40.0);
    let bw = (w - left - 50.0) / n;
    let max = op.buckets.values().copied().max().unwrap_or(1) as f64;
    let y = |c: f64| {
        let frac = if c <= 0.0 {
            0.0
        } else {
            (c.ln_1p() / max.ln_1p()).min(1.0)
        };
        h - bottom - frac * (h - bottom - top)
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{left}" y="20" font-size="14">{}: {} calls, total {}</text>"#,
        escape(&op.operation),
        op.count,
        human_time(op.total_seconds)
    );
    for b in lo..=hi {
        let c = op.buckets.get(&b).copied().unwrap_or(0) as f64;
        let x = left + (b - lo) as f64 * bw;
        let peak = op.peaks.iter().any(|p| p.bucket == b);
        let yy = y(c);
        let _ = writeln!(
            s,
            r#"<rect x="{x:.1}" y="{yy:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{} calls</title></rect>"#,
            (bw - 2.0).max(1.0),
            h - bottom - yy,
            if peak { "#c0392b" } else { "#2e86c1" },
            c
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" transform="rotate(60 {:.1} {:.1})">{}</text>"#,
            x + bw / 2.0,
            h - bottom + 12.0,
            x + bw / 2.0,
            h - bottom + 12.0,
            human_time(bucket_start(b, resolution) / core_hz)
        );
    }
    let _ = writeln!(
        s,
        r#"<line x1="{left}" y1="{0}" x2="{1}" y2="{0}" stroke="black"/>"#,
        h - bottom,
        w - 50.0
    );
    let _ = writeln!(s, r#"<text x="10" y="{top}">calls (log)</text>"#);
    s.push_str("</svg>\n");
    s
}

/// Writes one SVG per operation into `dir`; returns the files written.
pub fn write_all(r: &LatencyReport, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut out = Vec::new();
    for op in &r.operations {
        let name: String = op
            .operation
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let path = dir.join(format!("{name}.svg"));
        std::fs::write(&path, op_svg(op, r.resolution, r.core_hz))?;
        out.push(path);
    }
    Ok(out)
}
