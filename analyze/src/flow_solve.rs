//! Frequencies consistent with flow conservation (DCPI §6.2): given noisy
//! per-block estimates with weights, find edge frequencies f ≥ 0 such that
//! every block's in-flow equals its out-flow, and block frequencies (in-flow)
//! come as close as possible to the estimates in weighted least squares.
//! Blocks without an estimate take their frequency from their neighbours;
//! an entry may carry an estimate of its own (how often callers call in).
//!
//! Conservation is a heavily weighted penalty row per block; the normal
//! equations (sparse, SPD thanks to a tiny ridge) are solved by sparse
//! Cholesky (nalgebra-sparse). Negative edge flows are clamped to zero and
//! the system solved again without them.

use nalgebra::DMatrix;
use nalgebra_sparse::factorization::CscCholesky;
use nalgebra_sparse::{CooMatrix, CscMatrix};

/// The flow network of one function.
#[derive(Debug, Clone, Default)]
pub struct FlowProblem {
    pub blocks: usize,
    pub edges: Vec<(usize, usize)>,
    /// Blocks control can enter from outside (function entry, blocks nothing reaches).
    pub entries: Vec<usize>,
    /// Blocks control can leave from.
    pub exits: Vec<usize>,
    /// Per block: (estimated frequency, its standard error) where an
    /// estimate exists.
    pub estimates: Vec<Option<(f64, f64)>>,
    /// Per entry (same order as `entries`): an estimate of the flow that
    /// comes in from outside there (a function's callers), if known.
    pub entry_estimates: Vec<Option<(f64, f64)>>,
}

/// Weight of conservation rows relative to the largest estimate weight.
const CONSERVATION: f64 = 1e5;
const RIDGE: f64 = 1e-9;

/// Solves for block frequencies. Returns None when nothing is estimated.
///
/// Dynamic stalls only ever add samples, so an estimate far *above* the
/// consistent solution is taken for a stalled block and loses weight
/// (iteratively reweighted, up to three rounds); one below it keeps its weight.
pub fn solve(p: &FlowProblem) -> Option<Vec<f64>> {
    let mut q = p.clone();
    let mut f = solve_weighted(&q)?;
    for _ in 0..3 {
        let mut changed = false;
        for (e, fb) in q.estimates.iter_mut().zip(&f) {
            if let Some((est, sd)) = *e {
                if est - fb > 3.0 * sd && *fb < est * 0.8 {
                    *e = Some((est, sd.max(est - fb) * 10.0));
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
        f = solve_weighted(&q)?;
    }
    Some(f)
}

fn solve_weighted(p: &FlowProblem) -> Option<Vec<f64>> {
    let all = || p.estimates.iter().chain(&p.entry_estimates).flatten();
    let scale = all().map(|e| e.0 + e.1).fold(0.0f64, f64::max);
    if scale <= 0.0 {
        return all().next().is_some().then(|| vec![0.0; p.blocks]);
    }
    // Weights 1/σ² in units of the largest estimate; σ has a floor so a
    // zero estimate does not pin its block infinitely hard.
    let weigh = |e: &Option<(f64, f64)>| {
        e.map(|(v, sd)| {
            let sigma = (sd / scale).max(1e-4);
            (v, 1.0 / (sigma * sigma))
        })
    };
    let weights: Vec<Option<(f64, f64)>> = p.estimates.iter().map(weigh).collect();
    let entry_weights: Vec<Option<(f64, f64)>> = p.entry_estimates.iter().map(weigh).collect();
    let wmax = weights
        .iter()
        .chain(&entry_weights)
        .flatten()
        .map(|e| e.1)
        .fold(0.0f64, f64::max)
        .max(1e-12);
    // Unknowns: real edges, then entry edges, then exit edges.
    let mut arcs: Vec<(Option<usize>, Option<usize>)> =
        p.edges.iter().map(|&(a, b)| (Some(a), Some(b))).collect();
    arcs.extend(p.entries.iter().map(|&b| (None, Some(b))));
    arcs.extend(p.exits.iter().map(|&b| (Some(b), None)));
    let mut active = vec![true; arcs.len()];
    let mut result = vec![0.0; p.blocks];
    for _round in 0..2 {
        let x = solve_once(p, &weights, &entry_weights, &arcs, &active, scale, wmax)?;
        let mut clamped = false;
        for (k, v) in x.iter().enumerate() {
            if active[k] && *v < -1e-9 {
                active[k] = false;
                clamped = true;
            }
        }
        result = vec![0.0; p.blocks];
        for (k, (_, to)) in arcs.iter().enumerate() {
            if let (true, Some(b)) = (active[k], to) {
                result[*b] += x[k].max(0.0) * scale;
            }
        }
        if !clamped {
            break;
        }
    }
    Some(result)
}

fn solve_once(
    p: &FlowProblem,
    weights: &[Option<(f64, f64)>],
    entry_weights: &[Option<(f64, f64)>],
    arcs: &[(Option<usize>, Option<usize>)],
    active: &[bool],
    scale: f64,
    wmax: f64,
) -> Option<Vec<f64>> {
    let m = arcs.len();
    let mut ins: Vec<Vec<usize>> = vec![Vec::new(); p.blocks];
    let mut outs: Vec<Vec<usize>> = vec![Vec::new(); p.blocks];
    for (k, (from, to)) in arcs.iter().enumerate() {
        if !active[k] {
            continue;
        }
        if let Some(f) = from {
            outs[*f].push(k);
        }
        if let Some(t) = to {
            ins[*t].push(k);
        }
    }
    // Unknowns renumbered (reverse Cuthill-McKee) so the Cholesky factor of
    // a large function stays narrow; nalgebra-sparse does no ordering itself.
    let perm = rcm_order(m, &ins, &outs);
    // Rows as (sparse coefficients, rhs, weight); accumulate AᵀWA and AᵀWb.
    let mut coo = CooMatrix::new(m, m);
    let mut rhs = vec![0.0; m];
    let mut add_row = |coef: &[(usize, f64)], b: f64, w: f64| {
        for &(i, ci) in coef {
            rhs[perm[i]] += w * ci * b;
            for &(j, cj) in coef {
                coo.push(perm[i], perm[j], w * ci * cj);
            }
        }
    };
    for b in 0..p.blocks {
        let mut row: Vec<(usize, f64)> = ins[b].iter().map(|&k| (k, 1.0)).collect();
        row.extend(outs[b].iter().map(|&k| (k, -1.0)));
        // A self-loop edge appears with +1 and -1: it cancels in conservation.
        merge(&mut row);
        if !row.is_empty() {
            add_row(&row, 0.0, CONSERVATION);
        }
        if let Some((est, w)) = weights[b] {
            let row: Vec<(usize, f64)> = ins[b].iter().map(|&k| (k, 1.0)).collect();
            if !row.is_empty() {
                add_row(&row, est / scale, w / wmax);
            }
        }
    }
    for (n, w) in entry_weights.iter().enumerate() {
        let k = p.edges.len() + n;
        if let (Some((est, w)), true) = (w, active[k]) {
            add_row(&[(k, 1.0)], est / scale, w / wmax);
        }
    }
    for (k, on) in active.iter().enumerate() {
        coo.push(perm[k], perm[k], if *on { RIDGE } else { 1.0 });
    }
    let csc = CscMatrix::from(&coo);
    let chol = CscCholesky::factor(&csc).ok()?;
    let x = chol.solve(&DMatrix::from_column_slice(m, 1, &rhs));
    Some((0..m).map(|k| x[(perm[k], 0)]).collect())
}

/// New position of each unknown: reverse Cuthill-McKee over "shares a block".
fn rcm_order(m: usize, ins: &[Vec<usize>], outs: &[Vec<usize>]) -> Vec<usize> {
    let mut blocks_of: Vec<Vec<usize>> = vec![Vec::new(); m];
    for (b, (i, o)) in ins.iter().zip(outs).enumerate() {
        for &k in i.iter().chain(o) {
            blocks_of[k].push(b);
        }
    }
    let degree = |k: usize| -> usize {
        blocks_of[k]
            .iter()
            .map(|&b| ins[b].len() + outs[b].len())
            .sum()
    };
    let mut seen = vec![false; m];
    let mut order = Vec::with_capacity(m);
    let mut starts: Vec<usize> = (0..m).collect();
    starts.sort_by_key(|&k| degree(k));
    for s in starts {
        if seen[s] {
            continue;
        }
        seen[s] = true;
        let mut queue = std::collections::VecDeque::from([s]);
        while let Some(k) = queue.pop_front() {
            order.push(k);
            let mut next: Vec<usize> = Vec::new();
            for &b in &blocks_of[k] {
                for &j in ins[b].iter().chain(&outs[b]) {
                    if !seen[j] {
                        seen[j] = true;
                        next.push(j);
                    }
                }
            }
            next.sort_by_key(|&j| degree(j));
            queue.extend(next);
        }
    }
    let mut perm = vec![0; m];
    for (pos, &k) in order.iter().rev().enumerate() {
        perm[k] = pos;
    }
    perm
}

fn merge(row: &mut Vec<(usize, f64)>) {
    row.sort_by_key(|r| r.0);
    let mut out: Vec<(usize, f64)> = Vec::with_capacity(row.len());
    for &(k, c) in row.iter() {
        match out.last_mut() {
            Some(last) if last.0 == k => last.1 += c,
            _ => out.push((k, c)),
        }
    }
    out.retain(|r| r.1 != 0.0);
    *row = out;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-3 * b.abs().max(1.0)
    }

    #[test]
    fn diamond_takes_the_missing_arm_from_conservation() {
        // 0 -> {1, 2} -> 3; block 2 has no estimate.
        let p = FlowProblem {
            blocks: 4,
            edges: vec![(0, 1), (0, 2), (1, 3), (2, 3)],
            entries: vec![0],
            exits: vec![3],
            estimates: vec![
                Some((100.0, 10.0)),
                Some((30.0, 3.0)),
                None,
                Some((100.0, 10.0)),
            ],
            entry_estimates: vec![None],
        };
        let f = solve(&p).unwrap();
        assert!(close(f[2], 70.0), "{f:?}");
        assert!(close(f[0], 100.0) && close(f[3], 100.0), "{f:?}");
    }

    #[test]
    fn loop_with_conflicting_estimates_is_weighted() {
        // entry 0 -> loop head 1 <-> body 2, exit from 1 to 3.
        let p = FlowProblem {
            blocks: 4,
            edges: vec![(0, 1), (1, 2), (2, 1), (1, 3)],
            entries: vec![0],
            exits: vec![3],
            // head and body must differ by the one entry; the body is noisy.
            estimates: vec![
                Some((1.0, 0.1)),
                Some((1001.0, 20.0)),
                Some((900.0, 270.0)),
                None,
            ],
            entry_estimates: vec![None],
        };
        let f = solve(&p).unwrap();
        assert!((f[1] - f[2] - 1.0).abs() < 0.5, "{f:?}");
        assert!(f[1] > 990.0, "the confident head wins: {f:?}");
        assert!(close(f[3], f[0]), "{f:?}");
    }

    #[test]
    fn a_stalled_block_above_its_neighbours_is_overruled() {
        // 0 -> 1 -> 2: block 1 stalled (its ratio says 5x), 0 and 2 agree.
        let p = FlowProblem {
            blocks: 3,
            edges: vec![(0, 1), (1, 2)],
            entries: vec![0],
            exits: vec![2],
            estimates: vec![
                Some((100.0, 10.0)),
                Some((500.0, 50.0)),
                Some((100.0, 10.0)),
            ],
            entry_estimates: vec![None],
        };
        let f = solve(&p).unwrap();
        assert!((f[1] - 100.0).abs() < 10.0, "{f:?}");
    }

    #[test]
    fn callers_overrule_a_stalled_callee() {
        // A one-block function: its ratio says 500 calls, its callers 100.
        let p = FlowProblem {
            blocks: 1,
            edges: vec![],
            entries: vec![0],
            exits: vec![0],
            estimates: vec![Some((500.0, 50.0))],
            entry_estimates: vec![Some((100.0, 15.0))],
        };
        let f = solve(&p).unwrap();
        assert!((f[0] - 100.0).abs() < 15.0, "{f:?}");
    }

    #[test]
    fn nothing_estimated_is_none() {
        let p = FlowProblem {
            blocks: 1,
            edges: vec![],
            entries: vec![0],
            exits: vec![0],
            estimates: vec![None],
            entry_estimates: vec![None],
        };
        assert!(solve(&p).is_none());
    }
}
