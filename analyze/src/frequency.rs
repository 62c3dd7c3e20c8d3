//! Execution frequencies from samples (DCPI §6.1-6.2, S = F·C).
//!
//! Per frequency-equivalence class, each block gives a ratio
//! samples × cycles-per-sample / best-case cycles — its frequency if it ran
//! without dynamic stalls, more if it stalled. Blocks on out-of-order x86
//! share their samples unevenly between instructions (throughput-bound code
//! spreads them, the model cannot say how), so ratios are taken per block,
//! not per instruction. The estimate is the sample-weighted ratio of the
//! cluster of smallest ratios: blocks whose Poisson interval reaches below
//! the tightest upper bound in the class, widened by the model's error.
//! Estimates then go through flow conservation ([`crate::flow_solve`]) so
//! classes with few samples take their frequency from their neighbours.
//!
//! Confidence follows the relative error of an estimate:
//! sqrt(1/samples + model_error²): high ≤ 15 %, medium ≤ 35 %, else low;
//! blocks whose frequency came from conservation alone are low.

use crate::cfg::Cfg;
use crate::flow_solve::{solve, FlowProblem};
use serde::Serialize;

/// Relative error of the best-case model on a block (BHive MAPE on the host).
pub const MODEL_ERROR: f64 = 0.12;

/// A class with no samples says its frequency is below about one sample's
/// worth only if its blocks take this many best-case cycles: out-of-order
/// retirement leaves short blocks without samples however often they run
/// (their instructions retire in bulk beside a slower one), so a short
/// sample-less class gets no estimate and takes its frequency from flow
/// conservation instead of pinning it to zero.
pub const ZERO_EVIDENCE_CYCLES: f64 = 4.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    Low,
    Medium,
    High,
}

impl Confidence {
    fn from_relative_error(rel: f64) -> Self {
        if rel <= 0.15 {
            Confidence::High
        } else if rel <= 0.35 {
            Confidence::Medium
        } else {
            Confidence::Low
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::Low => "low",
            Confidence::Medium => "medium",
            Confidence::High => "high",
        }
    }
}

/// What a block offers the estimator.
#[derive(Debug, Clone, Copy, Default)]
pub struct BlockObservation {
    /// Samples of the time event that landed in the block.
    pub samples: f64,
    /// Best-case cycles of one execution (the model's cycles per iteration).
    pub best_cycles: f64,
    /// Most of its samples are charged to loads (likely cache misses), so its
    /// ratio is probably inflated by dynamic stalls.
    pub stall_suspect: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct ClassEstimate {
    pub class: usize,
    pub freq: f64,
    pub relative_error: f64,
    pub standard_error: f64,
    pub confidence: Confidence,
    /// Blocks whose ratios made the estimate.
    pub blocks: Vec<usize>,
    pub samples: f64,
    /// Every sampled block of the class may be stalled on loads: the
    /// frequency is what it would be if they all hit L1, a bound from above
    /// rather than an estimate (DCPI's classes with no clean instruction).
    pub upper_bound: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Frequencies {
    /// Per block.
    pub freq: Vec<f64>,
    pub confidence: Vec<Confidence>,
    /// Per block: its frequency is only a bound from above (its class's
    /// estimate was, and conservation left it there).
    pub upper_bound: Vec<bool>,
    pub classes: Vec<ClassEstimate>,
}

impl ClassEstimate {
    /// A class known only from a callee's samples.
    fn from_callee(class: usize, block: usize, f: f64, sd: f64) -> Self {
        let rel = sd / f.max(1e-9);
        ClassEstimate {
            class,
            freq: f,
            relative_error: rel,
            standard_error: sd,
            confidence: Confidence::from_relative_error(rel),
            blocks: vec![block],
            samples: 0.0,
            upper_bound: false,
        }
    }

    /// Weighs in a callee's estimate by inverse variance. An upper bound
    /// (every sample may be a stall) gives way to it when below, and so
    /// does "no samples" (short blocks go unsampled however often they run).
    fn combine_with(&mut self, f: f64, sd: f64) {
        if self.upper_bound || self.samples <= 0.0 {
            if self.upper_bound && f > self.freq * 1.25 {
                return;
            }
            self.freq = f;
            self.standard_error = sd;
        } else {
            let (w1, w2) = (self.standard_error.powi(-2), sd.powi(-2));
            self.freq = (self.freq * w1 + f * w2) / (w1 + w2);
            self.standard_error = (w1 + w2).sqrt().recip();
        }
        self.upper_bound = false;
        self.relative_error = self.standard_error / self.freq.max(1e-9);
        self.confidence = Confidence::from_relative_error(self.relative_error);
    }
}

/// Poisson bounds (about two standard deviations) on a count.
fn count_bounds(s: f64) -> (f64, f64) {
    let sd = (s + 1.0).sqrt();
    ((s - 2.0 * sd).max(0.0), s + 2.0 * sd + 1.0)
}

/// The estimate of one class from its blocks' observations.
pub fn estimate_class(
    class: usize,
    blocks: &[usize],
    obs: &[BlockObservation],
    cycles_per_sample: f64,
) -> Option<ClassEstimate> {
    let usable: Vec<usize> = blocks
        .iter()
        .copied()
        .filter(|&b| obs[b].best_cycles > 0.05)
        .collect();
    if usable.is_empty() {
        return None;
    }
    if usable.iter().all(|&b| obs[b].samples <= 0.0) {
        // No samples: the frequency is small, about one sample's worth at most.
        let c: f64 = usable.iter().map(|&b| obs[b].best_cycles).sum();
        if c < ZERO_EVIDENCE_CYCLES {
            return None;
        }
        return Some(ClassEstimate {
            class,
            freq: 0.0,
            relative_error: f64::INFINITY,
            standard_error: 1.5 * cycles_per_sample / c,
            confidence: Confidence::Low,
            blocks: usable,
            samples: 0.0,
            upper_bound: false,
        });
    }
    // Suspects only count when the class has nothing better.
    let clean: Vec<usize> = usable
        .iter()
        .copied()
        .filter(|&b| !obs[b].stall_suspect && obs[b].samples > 0.0)
        .collect();
    let only_suspects = clean.is_empty();
    let usable = if only_suspects { usable } else { clean };
    let ratio = |b: usize, s: f64| s * cycles_per_sample / obs[b].best_cycles;
    let upper = usable
        .iter()
        .map(|&b| ratio(b, count_bounds(obs[b].samples).1))
        .fold(f64::INFINITY, f64::min);
    let reach = upper * (1.0 + 2.0 * MODEL_ERROR);
    let cluster: Vec<usize> = usable
        .iter()
        .copied()
        .filter(|&b| ratio(b, count_bounds(obs[b].samples).0) <= reach)
        .collect();
    let s: f64 = cluster.iter().map(|&b| obs[b].samples).sum();
    let c: f64 = cluster.iter().map(|&b| obs[b].best_cycles).sum();
    if c <= 0.0 {
        return None;
    }
    let mut rel = (1.0 / s.max(0.5) + MODEL_ERROR * MODEL_ERROR).sqrt();
    if only_suspects {
        // An upper bound more than an estimate.
        rel = rel.max(1.0);
    }
    Some(ClassEstimate {
        class,
        freq: s * cycles_per_sample / c,
        relative_error: rel,
        standard_error: rel * s * cycles_per_sample / c,
        confidence: Confidence::from_relative_error(rel),
        blocks: cluster,
        samples: s,
        upper_bound: only_suspects,
    })
}

/// What a function's neighbours in the call graph say about its
/// frequencies (see [`crate::call_sites`]).
#[derive(Debug, Clone, Default)]
pub struct CallHints {
    /// How often its callers call it (frequency, standard error).
    pub calls: Option<(f64, f64)>,
    /// Per block: (block, frequency, standard error) from a callee whose
    /// every call comes from that block, by the callee's own samples.
    pub blocks: Vec<(usize, f64, f64)>,
}

/// Frequencies of every block of a function, with its neighbours' hints.
pub fn estimate(
    cfg: &Cfg,
    obs: &[BlockObservation],
    cycles_per_sample: f64,
    hints: &CallHints,
) -> Frequencies {
    let calls = hints.calls;
    let n = cfg.blocks.len();
    let mut classes: Vec<ClassEstimate> = cfg
        .classes
        .iter()
        .enumerate()
        .filter_map(|(c, blocks)| estimate_class(c, blocks, obs, cycles_per_sample))
        .collect();
    for &(b, f, sd) in &hints.blocks {
        let class = cfg.class_of[b];
        match classes.iter_mut().find(|e| e.class == class) {
            Some(e) => e.combine_with(f, sd),
            None => classes.push(ClassEstimate::from_callee(class, b, f, sd)),
        }
    }
    let mut estimates = vec![None; n];
    let mut confidence = vec![Confidence::Low; n];
    let mut bounded = vec![false; n];
    for e in &classes {
        for &b in &cfg.classes[e.class] {
            estimates[b] = Some((e.freq, e.standard_error));
            confidence[b] = e.confidence;
            bounded[b] = e.upper_bound;
        }
    }
    // Padding never runs: no entry, no edges, frequency zero.
    let padding: Vec<bool> = (0..n).map(|b| cfg.is_padding(b)).collect();
    let edges: Vec<(usize, usize)> = cfg
        .edges
        .iter()
        .filter(|e| !padding[e.from])
        .map(|e| (e.from, e.to))
        .collect();
    let mut has_pred = vec![false; n];
    for &(_, to) in &edges {
        has_pred[to] = true;
    }
    for (b, _) in padding.iter().enumerate().filter(|(_, p)| **p) {
        estimates[b] = None;
    }
    let entries: Vec<usize> = (0..n)
        .filter(|&b| b == 0 || (!has_pred[b] && !padding[b]))
        .collect();
    let problem = FlowProblem {
        blocks: n,
        edges,
        entry_estimates: entries
            .iter()
            .map(|&b| if b == 0 { calls } else { None })
            .collect(),
        entries,
        exits: (0..n).filter(|&b| cfg.blocks[b].exit.is_some()).collect(),
        estimates: estimates.clone(),
    };
    let freq = solve(&problem).unwrap_or_else(|| vec![0.0; n]);
    // A block whose solved frequency strays far from its own class estimate
    // loses confidence: conservation disagreed with its samples.
    for b in 0..n {
        if let Some((est, sd)) = estimates[b] {
            let off = (freq[b] - est).abs();
            if off > 3.0 * sd {
                confidence[b] = confidence[b].min(Confidence::Medium);
            }
            if off > est.max(sd) {
                confidence[b] = Confidence::Low;
            }
        }
    }
    // A bound stays a bound where conservation kept the block near it.
    let upper_bound = (0..n)
        .map(|b| bounded[b] && estimates[b].is_some_and(|(est, _)| freq[b] > 0.5 * est))
        .collect();
    Frequencies {
        freq,
        confidence,
        upper_bound,
        classes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(s: f64, c: f64) -> BlockObservation {
        BlockObservation {
            samples: s,
            best_cycles: c,
            stall_suspect: false,
        }
    }

    #[test]
    fn a_class_of_load_stalled_blocks_is_low_confidence() {
        let mut o = obs(5000.0, 1.0);
        o.stall_suspect = true;
        let e = estimate_class(0, &[0], &[o], 2.0).unwrap();
        assert_eq!(e.confidence, Confidence::Low);
        assert!(e.upper_bound);
        // Beside a clean block, the suspect is left out.
        let e = estimate_class(0, &[0, 1], &[o, obs(100.0, 1.0)], 2.0).unwrap();
        assert_eq!(e.blocks, vec![1]);
        assert!(!e.upper_bound);
    }

    #[test]
    fn stalled_block_is_left_out_of_the_cluster() {
        // Three blocks run 1000 times; block 2 stalls (3x its best case).
        let o = [obs(1000.0, 2.0), obs(1500.0, 3.0), obs(6000.0, 4.0)];
        let e = estimate_class(0, &[0, 1, 2], &o, 2.0).unwrap();
        assert_eq!(e.blocks, vec![0, 1]);
        assert!((e.freq - 1000.0).abs() < 1.0, "{e:?}");
        assert_eq!(e.confidence, Confidence::High);
    }

    #[test]
    fn a_callee_estimate_weighs_in_or_replaces_no_evidence() {
        let mut e = estimate_class(0, &[0], &[obs(400.0, 2.0)], 2.0).unwrap();
        let (f0, sd0) = (e.freq, e.standard_error);
        e.combine_with(2.0 * f0, sd0);
        assert!((e.freq - 1.5 * f0).abs() < 1e-6 * f0, "{e:?}");
        assert!(e.standard_error < sd0);
        // A sample-less class says nothing a callee's samples cannot overrule.
        let mut z = estimate_class(0, &[0], &[obs(0.0, 8.0)], 2.0).unwrap();
        z.combine_with(500.0, 50.0);
        assert_eq!(z.freq, 500.0);
        assert_eq!(z.confidence, Confidence::High);
    }

    #[test]
    fn few_samples_are_low_confidence() {
        let o = [obs(2.0, 2.0)];
        let e = estimate_class(0, &[0], &o, 2.0).unwrap();
        assert_eq!(e.confidence, Confidence::Low);
        // No samples on a short block: no evidence either way.
        assert!(estimate_class(0, &[0], &[obs(0.0, 2.0)], 2.0).is_none());
        let zero = estimate_class(0, &[0], &[obs(0.0, 8.0)], 2.0).unwrap();
        assert_eq!(zero.freq, 0.0);
        assert!(zero.standard_error > 0.0);
    }
}
