//! DCPI's accuracy measure against exact execution counts (callgrind): the
//! share of samples, sample-weighted over instructions, whose estimated
//! frequency is within ±5 %, ±10 % and ±25 % of the true count — with one
//! global scale factor fitted (the sample-weighted median of true/estimated)
//! and without — for dcpi's estimate and for the naive estimator that takes
//! every instruction to cost one cycle (F = samples × cycles per sample).
//! Beside those shares, which jump as an estimate crosses a tolerance, the
//! sample-weighted mean |ln(estimate / truth)|, each term capped at ln 4
//! (an estimate of zero, or on an instruction that never ran, counts the
//! cap): a measure that moves with every estimate, for telling a change
//! that improves estimates from one that moves a few across an edge.

use crate::cpi::CpiReport;
use crate::frequency::Confidence;
use serde::Serialize;
use std::collections::BTreeMap;

pub const TOLERANCES: [f64; 3] = [0.05, 0.10, 0.25];

#[derive(Debug, Clone, Serialize)]
pub struct EstimatorAccuracy {
    pub estimator: String,
    /// Scale fitted: estimates are multiplied by it.
    pub scale: f64,
    /// Share of samples within each tolerance, unscaled.
    pub within: Vec<f64>,
    /// Share of samples within each tolerance, scale fitted.
    pub within_scaled: Vec<f64>,
    /// Sample-weighted mean |ln(estimate / truth)|, capped at
    /// [`LOG_ERROR_CAP`] per instruction, unscaled.
    pub mean_log_error: f64,
}

/// The most one instruction's |ln(estimate / truth)| counts: a factor of 4.
pub const LOG_ERROR_CAP: f64 = std::f64::consts::LN_2 * 2.0;

#[derive(Debug, Clone, Serialize)]
pub struct Accuracy {
    pub tolerances: Vec<f64>,
    pub instructions: usize,
    pub samples: f64,
    /// Samples on instructions callgrind never saw run.
    pub samples_on_unexecuted: f64,
    /// Share of samples on instructions with at least medium confidence.
    pub confident_share: f64,
    pub estimators: Vec<EstimatorAccuracy>,
    /// The same for dcpi, over medium-or-better instructions only.
    pub dcpi_confident: Option<EstimatorAccuracy>,
    /// The same for dcpi per confidence level (high, medium, low, those
    /// with samples): whether the levels mean what they say.
    pub by_confidence: Vec<LevelAccuracy>,
}

/// dcpi's accuracy over the instructions at one confidence level.
#[derive(Debug, Clone, Serialize)]
pub struct LevelAccuracy {
    pub confidence: Confidence,
    /// The level's share of the samples.
    pub share: f64,
    #[serde(flatten)]
    pub accuracy: EstimatorAccuracy,
}

struct Point {
    weight: f64,
    truth: f64,
    est: f64,
}

fn weighted_median(mut v: Vec<(f64, f64)>) -> f64 {
    v.retain(|(x, w)| x.is_finite() && *w > 0.0);
    if v.is_empty() {
        return 1.0;
    }
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let half = v.iter().map(|x| x.1).sum::<f64>() / 2.0;
    let mut acc = 0.0;
    for (x, w) in &v {
        acc += w;
        if acc >= half {
            return *x;
        }
    }
    v.last().map_or(1.0, |x| x.0)
}

fn score(name: &str, pts: &[Point]) -> EstimatorAccuracy {
    let total: f64 = pts.iter().map(|p| p.weight).sum::<f64>().max(1e-12);
    let scale = weighted_median(
        pts.iter()
            .filter(|p| p.est > 0.0 && p.truth > 0.0)
            .map(|p| (p.truth / p.est, p.weight))
            .collect(),
    );
    let share = |k: f64, tol: f64| {
        pts.iter()
            .filter(|p| p.truth > 0.0 && ((p.est * k - p.truth) / p.truth).abs() <= tol)
            .map(|p| p.weight)
            .sum::<f64>()
            .max(0.0)
            / total
    };
    let log_error = |p: &Point| match (p.est > 0.0, p.truth > 0.0) {
        (true, true) => (p.est / p.truth).ln().abs().min(LOG_ERROR_CAP),
        (false, false) => 0.0,
        _ => LOG_ERROR_CAP,
    };
    EstimatorAccuracy {
        estimator: name.to_string(),
        scale,
        within: TOLERANCES.iter().map(|t| share(1.0, *t)).collect(),
        within_scaled: TOLERANCES.iter().map(|t| share(scale, *t)).collect(),
        mean_log_error: pts.iter().map(|p| p.weight * log_error(p)).sum::<f64>() / total,
    }
}

/// Compares the reports of one image with its true counts (by ELF address).
pub fn compare(reports: &[CpiReport], truth: &BTreeMap<u64, u64>) -> Accuracy {
    let mut dcpi = Vec::new();
    let mut dcpi_conf = Vec::new();
    let mut levels: [Vec<Point>; 3] = Default::default();
    let mut naive = Vec::new();
    let mut unexecuted = 0.0;
    for r in reports {
        let Some(ev) = &r.time_event else { continue };
        let cps = r.cycles_per_sample.unwrap_or(1.0);
        for i in &r.instructions {
            let s = i.samples.get(ev).copied().unwrap_or(0) as f64;
            if s == 0.0 {
                continue;
            }
            let t = truth.get(&i.vaddr).copied().unwrap_or(0) as f64;
            if t == 0.0 {
                unexecuted += s;
            }
            let est = i.freq.unwrap_or(0.0);
            dcpi.push(Point {
                weight: s,
                truth: t,
                est,
            });
            levels[i.confidence as usize].push(Point {
                weight: s,
                truth: t,
                est,
            });
            if i.confidence >= Confidence::Medium {
                dcpi_conf.push(Point {
                    weight: s,
                    truth: t,
                    est,
                });
            }
            naive.push(Point {
                weight: s,
                truth: t,
                est: s * cps,
            });
        }
    }
    let samples: f64 = dcpi.iter().map(|p| p.weight).sum();
    let confident: f64 = dcpi_conf.iter().map(|p| p.weight).sum();
    Accuracy {
        tolerances: TOLERANCES.to_vec(),
        instructions: dcpi.len(),
        samples,
        samples_on_unexecuted: unexecuted,
        confident_share: if samples > 0.0 {
            confident / samples
        } else {
            0.0
        },
        estimators: vec![score("dcpi", &dcpi), score("naive", &naive)],
        dcpi_confident: (!dcpi_conf.is_empty()).then(|| score("dcpi (medium+)", &dcpi_conf)),
        by_confidence: [Confidence::High, Confidence::Medium, Confidence::Low]
            .into_iter()
            .filter(|&c| !levels[c as usize].is_empty())
            .map(|c| {
                let pts = &levels[c as usize];
                let w: f64 = pts.iter().map(|p| p.weight).sum();
                LevelAccuracy {
                    confidence: c,
                    share: if samples > 0.0 { w / samples } else { 0.0 },
                    accuracy: score(&format!("dcpi ({})", c.as_str()), pts),
                }
            })
            .collect(),
    }
}

pub fn render(a: &Accuracy, image: &str) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{image}: {} sampled instructions, {} samples ({:.1}% on instructions callgrind never ran), {:.0}% at >= medium confidence",
        a.instructions,
        a.samples,
        100.0 * a.samples_on_unexecuted / a.samples.max(1.0),
        100.0 * a.confident_share
    );
    let _ = writeln!(
        out,
        "{:<16} {:>8}   {:>6} {:>6} {:>6}   {:>6} {:>6} {:>6}   {:>7}",
        "estimator", "scale", "±5%", "±10%", "±25%", "±5%s", "±10%s", "±25%s", "|ln e|"
    );
    for e in a.estimators.iter().chain(a.dcpi_confident.iter()) {
        let _ = writeln!(
            out,
            "{:<16} {:>8.3}   {:>6.1} {:>6.1} {:>6.1}   {:>6.1} {:>6.1} {:>6.1}   {:>7.3}",
            e.estimator,
            e.scale,
            100.0 * e.within[0],
            100.0 * e.within[1],
            100.0 * e.within[2],
            100.0 * e.within_scaled[0],
            100.0 * e.within_scaled[1],
            100.0 * e.within_scaled[2],
            e.mean_log_error
        );
    }
    for level in &a.by_confidence {
        let (e, share) = (&level.accuracy, level.share);
        let _ = writeln!(
            out,
            "{:<16} {:>7.0}%   {:>6.1} {:>6.1} {:>6.1}   {:>6} {:>6} {:>6}   {:>7.3}",
            e.estimator,
            100.0 * share,
            100.0 * e.within[0],
            100.0 * e.within[1],
            100.0 * e.within[2],
            "",
            "",
            "",
            e.mean_log_error
        );
    }
    let _ = writeln!(
        out,
        "(shares of samples; the 's' columns use the fitted global scale; |ln e|: mean |ln(estimate/true)|, capped at ln 4;"
    );
    let _ = writeln!(
        out,
        " per confidence level, its share of the samples in the scale column and its unscaled shares)"
    );
    out
}
