//! Where have all the cycles gone (dcpiwhatcg) and the most stalled
//! instructions (dcpitopstalls), from the CPI analysis and the culprits of
//! every sampled instruction.
//!
//! Each instruction's cycles (its charged samples × cycles per sample) split
//! into execution (best case without its static stalls), static stalls by
//! the model's reasons, and dynamic stalls (measured beyond the best case)
//! by culprit: a culprit the rules leave alone takes the cycles; several
//! share them as a min-max range, and the part no single culprit can claim
//! is counted as "ambiguous". Dynamic stalls are taken per block: the
//! model concentrates a block's best-case cycles on few instructions where
//! the hardware spreads its samples, so an instruction's excess counts only
//! in proportion to its block's net excess. A block sampled below its best
//! case (the model predicted more) adds to the unexplained gain, outside
//! the 100 %. Where a frequency is only an upper bound (every sample may be
//! a load stall), execution and static stalls range from 0 to their part at
//! the bound, dynamic culprits up to every cycle, and the minimums are made
//! whole by a "frequency unknown" line. The net sampling error is binomial
//! over the tallied samples; nothing here corrects for a biased estimator.

use crate::cpi::CpiReport;
use crate::culprits::explain;
use crate::function_code::FunctionCode;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize)]
pub struct Category {
    pub code: String,
    pub name: String,
    pub kind: String,
    pub cycles: [f64; 2],
    pub percent: [f64; 2],
}

#[derive(Debug, Clone, Serialize)]
pub struct WhatCg {
    pub scope: String,
    pub cycles: f64,
    pub instructions: usize,
    pub categories: Vec<Category>,
    /// Cycles the model expected beyond what was sampled.
    pub unexplained_gain: f64,
    /// Time-event samples behind the categories, and all in scope (the
    /// rest lie on instructions without a frequency estimate).
    pub samples_tallied: f64,
    pub samples_in_scope: f64,
    /// Net sampling error: the largest 95 % interval half-width of any
    /// category's percentage from sampling alone (binomial over the
    /// tallied samples), in percentage points.
    pub sampling_error: f64,
    /// The stall category that may explain the most cycles (largest upper
    /// end; static or dynamic, not execution or the ambiguous remainders).
    pub leading: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StalledInsn {
    pub image: String,
    pub function: String,
    pub addr: String,
    pub instruction: String,
    pub samples: f64,
    pub freq: Option<f64>,
    pub confidence: String,
    /// Stall cycles over the run (static + dynamic).
    pub stall_cycles: f64,
    pub cpi: Option<f64>,
    pub best_cpi: f64,
    /// Culprit codes with their max share, most likely first.
    pub culprits: Vec<(String, f64)>,
}

#[derive(Default)]
struct Acc {
    by: BTreeMap<(String, String, String), [f64; 2]>,
    total: f64,
    samples: f64,
    all_samples: f64,
    gain: f64,
    n: usize,
}

impl Acc {
    fn add(&mut self, code: &str, name: &str, kind: &str, lo: f64, hi: f64) {
        let e = self
            .by
            .entry((code.to_string(), name.to_string(), kind.to_string()))
            .or_insert([0.0, 0.0]);
        e[0] += lo;
        e[1] += hi;
    }
}

/// Both views over the given functions.
pub fn summarize(scope: &str, funcs: &[(&FunctionCode, &CpiReport)]) -> (WhatCg, Vec<StalledInsn>) {
    let mut acc = Acc::default();
    let mut top = Vec::new();
    for (code, rep) in funcs {
        let Some(cps) = rep.cycles_per_sample else {
            continue;
        };
        // Per block: the model places best-case cycles on few instructions
        // while the hardware spreads samples, so an instruction's excess
        // over its best case only counts as a dynamic stall in proportion
        // to the block's net excess.
        let mut net: BTreeMap<usize, (f64, f64, f64)> = BTreeMap::new(); // cycles, best, positive excess
        for row in &rep.instructions {
            if let Some(f) = row.freq {
                let cyc = row.charged_samples * cps;
                let e = net.entry(row.block).or_default();
                e.0 += cyc;
                e.1 += row.best_cpi * f;
                e.2 += (cyc - row.best_cpi * f).max(0.0);
            }
        }
        for (c, b, _) in net.values() {
            acc.gain += (b - c).max(0.0);
        }
        for row in &rep.instructions {
            acc.all_samples += row.charged_samples.max(0.0);
            let (Some(f), true) = (row.freq, row.charged_samples > 0.0) else {
                continue;
            };
            let cycles = row.charged_samples * cps;
            acc.total += cycles;
            acc.samples += row.charged_samples;
            acc.n += 1;
            let (bc, bb, bpos) = net[&row.block];
            let excess = (cycles - row.best_cpi * f).max(0.0);
            let dynamic = if bpos > 0.0 {
                excess * (bc - bb).max(0.0) / bpos
            } else {
                0.0
            };
            let rest = cycles - dynamic;
            let static_part = (row.static_stall * f).min(rest);
            // With only an upper bound on the frequency, execution and static
            // stalls hold at the bound and shrink to nothing below it; what
            // they leave may all be dynamic.
            let bound = row.freq_upper_bound;
            let floor = |x: f64| if bound { 0.0 } else { x };
            acc.add(
                "exec",
                "execution (best case)",
                "execution",
                floor(rest - static_part),
                rest - static_part,
            );
            if bound {
                acc.add(
                    "freq?",
                    "frequency unknown: best case or load stalls",
                    "unknown",
                    rest,
                    rest,
                );
            }
            let dyn_max = if bound { cycles } else { dynamic };
            let Ok(c) = explain(code, rep, row.vaddr) else {
                continue;
            };
            let statics: Vec<_> = c.culprits.iter().filter(|x| x.kind == "static").collect();
            if static_part > 0.0 {
                if statics.is_empty() {
                    acc.add(
                        "static",
                        "static stall (unattributed)",
                        "static",
                        floor(static_part),
                        static_part,
                    );
                }
                // The model lists reasons most frequent first: the first
                // takes the cycles (an even split let a minor dispatch
                // stall claim half of a divide chain).
                if let Some(s) = statics.first() {
                    acc.add(&s.code, &s.name, "static", floor(static_part), static_part);
                }
            }
            let dyns: Vec<_> = c.culprits.iter().filter(|x| x.kind == "dynamic").collect();
            if dyn_max > 0.0 {
                if dyns.len() == 1 {
                    acc.add(&dyns[0].code, &dyns[0].name, "dynamic", dynamic, dyn_max);
                } else {
                    for d in &dyns {
                        acc.add(&d.code, &d.name, "dynamic", 0.0, dyn_max);
                    }
                    acc.add(
                        "ambiguous",
                        "dynamic, culprit ambiguous",
                        "dynamic",
                        dynamic,
                        dynamic,
                    );
                }
            }
            top.push(StalledInsn {
                image: rep.image.clone(),
                function: rep.function.clone(),
                addr: row.addr.clone(),
                instruction: row.instruction.clone(),
                samples: row.charged_samples,
                freq: row.freq,
                confidence: row.confidence.as_str().to_string(),
                stall_cycles: static_part + dynamic,
                cpi: row.cpi,
                best_cpi: row.best_cpi,
                culprits: c
                    .culprits
                    .iter()
                    .filter(|x| x.share[1] > 0.0)
                    .map(|x| (x.code.clone(), x.share[1]))
                    .collect(),
            });
        }
    }
    top.sort_by(|a, b| b.stall_cycles.total_cmp(&a.stall_cycles));
    let total = acc.total.max(1e-12);
    let mut categories: Vec<Category> = acc
        .by
        .into_iter()
        .map(|((code, name, kind), c)| Category {
            percent: [100.0 * c[0] / total, 100.0 * c[1] / total],
            code,
            name,
            kind,
            cycles: c,
        })
        .collect();
    let rank = |k: &str| match k {
        "execution" => 0,
        "static" => 1,
        "dynamic" => 2,
        _ => 3,
    };
    categories.sort_by(|a, b| {
        rank(&a.kind)
            .cmp(&rank(&b.kind))
            .then(b.cycles[1].total_cmp(&a.cycles[1]))
    });
    let n = acc.samples.max(1.0);
    let sampling_error = categories
        .iter()
        .map(|c| {
            let p = (c.percent[1] / 100.0).clamp(0.0, 1.0);
            200.0 * (p * (1.0 - p) / n).sqrt()
        })
        .fold(0.0, f64::max);
    let leading = categories
        .iter()
        .filter(|c| {
            matches!(c.kind.as_str(), "static" | "dynamic")
                && !matches!(c.code.as_str(), "ambiguous" | "unexplained")
        })
        .max_by(|a, b| a.cycles[1].total_cmp(&b.cycles[1]))
        .map(|c| c.code.clone());
    (
        WhatCg {
            scope: scope.to_string(),
            cycles: acc.total,
            instructions: acc.n,
            categories,
            unexplained_gain: acc.gain,
            samples_tallied: acc.samples,
            samples_in_scope: acc.all_samples,
            sampling_error,
            leading,
        },
        top,
    )
}

pub fn render_whatcg(w: &WhatCg) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Where have all the cycles gone: {} ({} cycles over {} sampled instructions)",
        w.scope,
        crate::views::cpi_text::si(w.cycles),
        w.instructions
    );
    let mut last_kind = String::new();
    for c in &w.categories {
        if c.kind != last_kind {
            let _ = writeln!(out, "  {}", c.kind);
            last_kind = c.kind.clone();
        }
        let pct = if (c.percent[0] - c.percent[1]).abs() < 0.05 {
            format!("{:.1}%", c.percent[1])
        } else {
            format!("{:.1}-{:.1}%", c.percent[0], c.percent[1])
        };
        let _ = writeln!(out, "    {pct:>12}  {:<11} {}", c.code, c.name);
    }
    let _ = writeln!(
        out,
        "  minimums (single values) add up to 100%; ranges say how much a culprit may explain\n  unexplained gain (the model expected more cycles than sampled): {:.1}% extra",
        100.0 * w.unexplained_gain / w.cycles.max(1e-12)
    );
    let _ = writeln!(
        out,
        "  tallied {:.0} of {:.0} samples in scope ({:.1}%); net sampling error ±{:.1} percentage points (95%)",
        w.samples_tallied,
        w.samples_in_scope,
        100.0 * w.samples_tallied / w.samples_in_scope.max(1e-12),
        w.sampling_error
    );
    if let Some(l) = &w.leading {
        if let Some(c) = w.categories.iter().find(|c| &c.code == l) {
            let _ = writeln!(
                out,
                "  most cycles may go to: {} ({}, up to {:.1}%)",
                c.name, c.code, c.percent[1]
            );
        }
    }
    out
}

/// Text of `dcpi topstalls`; CPI prints as `-` where the frequency is of
/// low confidence (the JSON keeps it).
pub fn render_topstalls(rows: &[StalledInsn], limit: usize) -> String {
    use std::fmt::Write;
    let shown = &rows[..rows.len().min(if limit == 0 { usize::MAX } else { limit })];
    let culprits: Vec<String> = shown
        .iter()
        .map(|r| {
            r.culprits
                .iter()
                .take(3)
                .map(|(c, s)| format!("{c}:{:.0}%", 100.0 * s))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    // As wide as the widest shown (three culprits can take 40 characters),
    // so the columns after it stay in line.
    let width = culprits.iter().map(|c| c.len()).max().unwrap_or(0).max(26);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>10} {:>8} {:>7} {:>6}  {:<width$} {:<20} {:>10}  instruction",
        "stall cyc", "cpi", "best", "conf", "culprits", "function", "addr"
    );
    for (r, culprits) in shown.iter().zip(&culprits) {
        let _ = writeln!(
            out,
            "{:>10} {:>8} {:>7.2} {:>6}  {:<width$} {:<20} {:>10}  {}",
            crate::views::cpi_text::si(r.stall_cycles),
            // As in `dcpi cpi`: a low-confidence frequency makes its CPI
            // noise (a loop seen 5 M times too rarely reads as CPI 5 M).
            r.cpi
                .filter(|_| r.confidence != "low")
                .map_or("-".into(), |c| format!("{c:.2}")),
            r.best_cpi,
            r.confidence,
            culprits,
            r.function.chars().take(20).collect::<String>(),
            r.addr.trim_start_matches("0x"),
            r.instruction
        );
    }
    out
}
