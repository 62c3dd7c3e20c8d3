//! Frequencies consistent with flow conservation (DCPI §6.2): given noisy
//! per-block estimates with weights, find edge frequencies f ≥ 0 such that
//! every block's in-flow equals its out-flow, and block frequencies (in-flow)
//! come as close as possible to the estimates in weighted least squares.
//! Blocks without an estimate take their frequency from their neighbours;
//! an entry may carry an estimate of its own (how often callers call in).
//! Two blocks may also be held to a ratio, softly (`shares`: a jump
//! table's cases as the refills counted at them say), which splits flow
//! without setting how much there is.
//!
//! Conservation is a heavily weighted penalty row per block; the normal
//! equations (sparse, SPD thanks to a tiny ridge) are solved by sparse
//! Cholesky (nalgebra-sparse, which does no ordering itself) after an
//! approximate-minimum-degree renumbering (the `amd` crate) over every row
//! (links included), with iterative refinement against the rows' own
//! residual. A row over many unknowns (a dispatch block's hundreds of
//! predecessors) enters as a chain of three-term rows through partial
//! sums — the same least squares without its dense clique in the normal
//! matrix (see `Chain`). Rows are
//! weighted from the ridge (1e-9) to conservation (1e3, relative to the
//! strongest estimate): at 1e5 the flows only the ridge decides came out
//! percents apart between elimination orders (msort 21 %), refinement or
//! not. The ordering and symbolic factorization depend on the network
//! only, and are reused by every solve of it. Flows are kept non-negative
//! by an active set: arcs a solve drives negative are pinned to zero and
//! the system solved again; once nothing new is pinned, pinned arcs the
//! objective's gradient wants back are freed. An entry nothing informs
//! leans weakly towards zero, and so does a block without an estimate that
//! no sample landed in or was charged to.
//!
//! Limits: the ridge still decides flows no row pins down (a cycle with
//! no estimate on it). The active set is not a full non-negative least
//! squares: all negatives are pinned and all wanted arcs freed at once (no
//! line search), within a work budget (`ACTIVE_SET_WORK` arcs × rounds,
//! 2-8 rounds): a problem of thousands of arcs gets two rounds, and what is
//! still negative then is clamped in the answer.

use nalgebra::DMatrix;
use nalgebra_sparse::factorization::{CscCholesky, CscSymbolicCholesky};
use nalgebra_sparse::pattern::SparsityPattern;

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
    /// Per block: how high its frequency may plausibly be above its
    /// estimate (a block outside loops whose best case lies between its
    /// throughput and its exposed dependency chain); a solution up to there
    /// does not count against the estimate. Empty: none.
    pub ranges: Vec<Option<f64>>,
    /// Per block: a least frequency (value, standard error) from evidence
    /// that can only undercount, weighed in only where the solution falls
    /// below it. Empty: none.
    pub floors: Vec<Option<(f64, f64)>>,
    /// Per block: no sample landed in it or was charged to it. Where it
    /// has no estimate either, it leans weakly towards zero (like an
    /// unknown entry), so a split nothing else decides goes to the code
    /// that was seen running rather than half and half. Empty: none.
    pub unsampled: Vec<bool>,
    /// Per block: its estimate is only a bound from above (every sample in
    /// its class may be a load's stall). Empty: none.
    pub upper: Vec<bool>,
    /// Pairs of blocks the code says run equally often (the headers of two
    /// loops whose code states the same trip count, entered from blocks
    /// that run equally often: hashtab's `main` inserts and looks up
    /// 20,000 keys a round), held as hard as conservation. Empty: none.
    pub ties: Vec<(usize, usize)>,
    /// Ratios between blocks' frequencies the samples say, softly (the
    /// cases of a jump table, as the refills counted at them share out).
    /// Empty: none.
    pub shares: Vec<Share>,
}

/// Block `a` runs `ratio` times as often as block `b`, to a relative error
/// `error`, `b` running about `level` times: a row `f_a − ratio · f_b ≈ 0`
/// weighed as an estimate of `a` that far off would be. A ratio pins no
/// total: it shares out what the rest of the problem sends through.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Share {
    pub a: usize,
    pub b: usize,
    pub ratio: f64,
    pub level: f64,
    pub error: f64,
}

/// How often a function is called, tied to its call sites: the flow into
/// entry `entry` (an index into its `entries`) of part `callee` equals the
/// sum over `sites` of (part, block, calls in that block) of calls × the
/// block's frequency. Every way into the callee must be one of the sites.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    pub callee: usize,
    pub entry: usize,
    pub sites: Vec<(usize, usize, f64)>,
}

/// Weight of conservation rows relative to the largest estimate weight.
const CONSERVATION: f64 = 1e3;
const RIDGE: f64 = 1e-9;
/// A flow this far below zero (in units of the part's largest estimate) is
/// rounding, not a wrong sign (rows are weighted from 1e-9 to 1e3).
const NEGLIGIBLE: f64 = 1e-6;
const REFINEMENTS: usize = 5;
/// Solves at most per least squares: pinning negative arcs, freeing those
/// the objective wants back (see [`solve_weighted`]).
const ACTIVE_SET_ROUNDS: usize = 8;
/// Arcs times rounds a least squares may spend on its active set (at
/// least two rounds: one pinning, one after it, as before the active set).
/// An interpreter's three thousand arcs pin hundreds more each round
/// without settling; a call tree's hundred settle in a few.
const ACTIVE_SET_WORK: usize = 6000;
/// A pinned arc is freed when its gradient is below minus this (rows are
/// weighted from 1e-9 to 1e3, flows in units of the part's largest
/// estimate: rounding stays far below it).
const REACTIVATE: f64 = 1e-6;
/// Most (blocks × nonzeros of the factor) spent on standard errors.
const SPREAD_BUDGET: usize = 30_000_000;
/// Weight (in units of a part's scale, 1/σ²) of the lean of an unknown entry towards zero.
const ENTRY_PRIOR: f64 = 1.0;

/// Solves for block frequencies. Returns None when nothing is estimated.
///
/// Dynamic stalls only ever add samples, so an estimate far *above* the
/// consistent solution is taken for a stalled block and loses weight
/// (iteratively reweighted, up to three rounds); one below it keeps its weight.
pub fn solve(p: &FlowProblem) -> Option<Vec<f64>> {
    solve_linked(std::slice::from_ref(p), &[]).map(|mut v| v.remove(0))
}

/// Block frequencies of every part with their standard errors.
#[derive(Debug, Clone)]
pub struct Solution {
    pub freq: Vec<Vec<f64>>,
    /// Per block, the standard error of its solved frequency under the
    /// estimates' own errors (the posterior of the least squares, taken
    /// as independent errors); None where the system was too large to
    /// afford it or the block's flow was clamped away.
    pub spread: Vec<Vec<Option<f64>>>,
}

/// [`solve_linked`], with each block's standard error.
pub fn solve_with_spread(parts: &[FlowProblem], links: &[Link]) -> Option<Solution> {
    let f = solve_reweighted(parts, links)?;
    // Standard errors of the final solution only (one solve per block).
    let spread = f.spread();
    Some(Solution {
        freq: f.freq,
        spread,
    })
}

/// The least squares, reweighted where estimates sit far above the
/// solution, ranges give way and floors are crossed.
fn solve_reweighted(parts: &[FlowProblem], links: &[Link]) -> Option<Weighted> {
    // Reweighting changes values, never the network: one pattern for all.
    let normal = {
        let (arcs, first_entry) = arcs_of(parts);
        normal_pattern(arcs.len(), pattern_rows(parts, links, &first_entry, &arcs))
    };
    let mut q: Vec<FlowProblem> = parts.to_vec();
    // Floors alone (every sample a refill's aftermath: branchy's arms):
    // they are all that says the code ran, so they are the estimates.
    if q.iter().all(|p| p.estimates.iter().all(Option::is_none)) {
        for p in &mut q {
            for (e, f) in p.estimates.iter_mut().zip(&p.floors) {
                *e = *f;
            }
        }
    }
    let mut f = solve_weighted(&q, links, &normal)?;
    let only_bounded = pulled_up_by_bounds(&q, links, &normal, &f.freq);
    for _ in 0..3 {
        let mut changed = false;
        for (k, (p, fp)) in q.iter_mut().zip(&f.freq).enumerate() {
            let ranges = p.ranges.clone();
            let floors = p.floors.clone();
            for (b, (e, fb)) in p.estimates.iter_mut().zip(fp).enumerate() {
                if let Some((est, sd)) = *e {
                    // A floor taken in: above the solution is its nature.
                    if floors.get(b).copied().flatten() == Some((est, sd)) {
                        continue;
                    }
                    // Within its plausible range above: the estimate gives way,
                    // unless only bounds from above pull the solution there
                    // (and the estimate is more than a guess).
                    if let Some(Some(hi)) = ranges.get(b) {
                        let wide = *hi - est;
                        let held =
                            sd < est && only_bounded.as_ref().is_some_and(|w| w[k][b] <= est);
                        if *fb > est && *fb <= *hi && sd < wide && !held {
                            *e = Some((est, wide));
                            changed = true;
                            continue;
                        }
                    }
                    let above = est - fb > 3.0 * sd && *fb < est * 0.8;
                    if above {
                        *e = Some((est, sd.max(est - fb) * 10.0));
                        changed = true;
                    }
                }
            }
            // Floors the solution fell below are weighed in from now on.
            // So are they where the block's own estimate says more than
            // the floor but less surely: a weak estimate above cannot
            // hold the solution below what was counted (matchers'
            // bloom_has: its early-out exit, 6.3 M refills counted, solved
            // to zero under an estimate of 116 M +- 174 M).
            for (b, floor) in floors.iter().enumerate() {
                let Some((least, sd)) = *floor else { continue };
                let weaker = |e: (f64, f64)| e.0 > least && e.1 > sd;
                if p.estimates[b].is_none_or(weaker) && fp[b] < least - sd {
                    p.estimates[b] = Some((least, sd));
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
        f = solve_weighted(&q, links, &normal)?;
    }
    Some(f)
}

/// Where a ranged estimate sits below the first solution `freq` and some
/// estimates are only bounds from above: the solution without those
/// bounds, to tell whether anything but them pulls the ranged estimate up.
/// A straight block's estimate (its best case the exposed chain) gives way
/// up to its plausible top when the solution says so; an upper bound (a
/// loop block whose samples may all be load stalls) is no such word.
/// msort's `compare` (-17 %, top 2.7x) rose to merge's upper-bound loop
/// header (+58 %) and took the loop to +15..+30 % on every Zen 4 set.
/// None where there is nothing to tell apart.
fn pulled_up_by_bounds(
    q: &[FlowProblem],
    links: &[Link],
    normal: &NormalPattern,
    freq: &[Vec<f64>],
) -> Option<Vec<Vec<f64>>> {
    let ranged_below = q.iter().zip(freq).any(|(p, fp)| {
        p.ranges
            .iter()
            .enumerate()
            .any(|(b, r)| r.is_some() && p.estimates[b].is_some_and(|(est, _)| fp[b] > est))
    });
    let bounded = q.iter().any(|p| p.upper.iter().any(|&u| u));
    if !ranged_below || !bounded {
        return None;
    }
    let mut without: Vec<FlowProblem> = q.to_vec();
    for p in &mut without {
        for (e, &u) in p.estimates.iter_mut().zip(&p.upper) {
            if u {
                *e = None;
            }
        }
    }
    solve_weighted(&without, links, normal).map(|w| w.freq)
}

/// Solves several functions' problems at once, their call sites tied to
/// their callees' entries by `links` (one weighted least squares, so a
/// function with good samples lends its frequency to callers and callees
/// without them). None when nothing is estimated anywhere; a part with
/// nothing estimated and no link to one that has comes back zero.
pub fn solve_linked(parts: &[FlowProblem], links: &[Link]) -> Option<Vec<Vec<f64>>> {
    solve_reweighted(parts, links).map(|s| s.freq)
}

/// The unit a part's weights are counted in: its largest estimate plus
/// that estimate's error, among estimates that say how often a block ran.
/// Bounds from above (`upper`: every sample may be a load's stall) count
/// only where there is nothing else: kernels' `interp` has its jump
/// block's bound at 2.8e9 beside a loop total of 1.6e8, and in units of
/// the bound every weight the part's scale sets (its unknown entries'
/// and unsampled blocks' lean, the floor on an error) shrank 300-fold.
/// 70 recorded cells: mean |ln e| 0.133 -> 0.132, unscaled ±10 % 67.8 ->
/// 68.3 %, scaled 77.8 -> 77.9 %; bytecode 0.639 -> 0.550 (session 57).
fn part_scale(p: &FlowProblem) -> f64 {
    let largest = |firm_only: bool| {
        p.estimates
            .iter()
            .enumerate()
            .filter(|&(b, _)| !(firm_only && p.upper.get(b).copied().unwrap_or(false)))
            .filter_map(|(_, e)| *e)
            .filter(|e| e.0 > 0.0)
            .map(|e| e.0 + e.1)
            .fold(0.0f64, f64::max)
    };
    match largest(true) {
        firm if firm > 0.0 => firm,
        _ => largest(false),
    }
}

/// The unknowns: per part its real edges, then its entry edges, then its
/// exit edges; and where each part's entry edges start.
fn arcs_of(parts: &[FlowProblem]) -> (Vec<Arc>, Vec<usize>) {
    let mut arcs: Vec<Arc> = Vec::new();
    let mut first_entry = Vec::with_capacity(parts.len());
    for (k, p) in parts.iter().enumerate() {
        arcs.extend(p.edges.iter().map(|&(a, b)| Arc {
            part: k,
            from: Some(a),
            to: Some(b),
        }));
        first_entry.push(arcs.len());
        arcs.extend(p.entries.iter().map(|&b| Arc {
            part: k,
            from: None,
            to: Some(b),
        }));
        arcs.extend(p.exits.iter().map(|&b| Arc {
            part: k,
            from: Some(b),
            to: None,
        }));
    }
    (arcs, first_entry)
}

/// Per block (numbered across parts from each part's `base`), its in- and
/// out-arcs among those `keep` keeps.
struct BlockArcs {
    base: Vec<usize>,
    ins: Vec<Vec<usize>>,
    outs: Vec<Vec<usize>>,
}

fn block_arcs(parts: &[FlowProblem], arcs: &[Arc], keep: impl Fn(usize) -> bool) -> BlockArcs {
    let mut base = Vec::with_capacity(parts.len());
    let mut nb = 0;
    for p in parts {
        base.push(nb);
        nb += p.blocks;
    }
    let mut ins: Vec<Vec<usize>> = vec![Vec::new(); nb];
    let mut outs: Vec<Vec<usize>> = vec![Vec::new(); nb];
    for (k, a) in arcs.iter().enumerate().filter(|&(k, _)| keep(k)) {
        if let Some(f) = a.from {
            outs[base[a.part] + f].push(k);
        }
        if let Some(t) = a.to {
            ins[base[a.part] + t].push(k);
        }
    }
    BlockArcs { base, ins, outs }
}

/// One unknown: an arc of a part (a real edge, an entry or an exit).
#[derive(Clone, Copy)]
struct Arc {
    part: usize,
    from: Option<usize>,
    to: Option<usize>,
}

fn solve_weighted(
    parts: &[FlowProblem],
    links: &[Link],
    normal: &NormalPattern,
) -> Option<Weighted> {
    let all =
        |p: &'_ FlowProblem| -> Vec<(f64, f64)> { p.estimates.iter().flatten().copied().collect() };
    if parts.iter().all(|p| all(p).is_empty()) {
        return None;
    }
    // Each part in units of its own largest estimate, so weights 1/σ² are
    // relative errors squared, comparable between parts; σ has a floor so
    // a zero estimate does not pin its block infinitely hard. Zero
    // estimates (blocks no sample landed in) set no scale: a part with
    // only those has nothing of its own. They made hashtab's `main` a part
    // of scale 5e4, its unsampled insert loop leaning to zero at that
    // error, which held `insert`'s 12 M calls at 7 K against the refills
    // counted at its exit (Zen 4: -100 %, now -40 %).
    let scales: Vec<f64> = parts.iter().map(part_scale).collect();
    if scales.iter().all(|s| *s <= 0.0) {
        return Some(Weighted {
            freq: parts.iter().map(|p| vec![0.0; p.blocks]).collect(),
            factored: None,
            scales,
        });
    }
    // A part with nothing of its own takes the largest scale of all: it is
    // only reached through links (or not at all).
    let top = scales.iter().copied().fold(0.0f64, f64::max);
    let scales: Vec<f64> = scales
        .into_iter()
        .map(|s| if s > 0.0 { s } else { top })
        .collect();
    let weigh = |e: &Option<(f64, f64)>, scale: f64| {
        e.map(|(v, sd)| {
            let sigma = (sd / scale).max(1e-4);
            (v / scale, 1.0 / (sigma * sigma))
        })
    };
    let mut weights: Vec<Vec<Option<(f64, f64)>>> = parts
        .iter()
        .zip(&scales)
        .map(|(p, &s)| p.estimates.iter().map(|e| weigh(e, s)).collect())
        .collect();
    // An entry nothing says anything of (no estimate, no call site linked
    // to it) leans weakly towards zero, at one standard error of the
    // part's whole scale: a loop then takes the flow round its back edge
    // rather than through the code before and after it. Without this the
    // tiny ridge shares a hot loop's frequency evenly over its back edge
    // and every arc of the path into it (a loop run once, in main, came
    // out entered 55M times). So does a block no sample was seen in
    // (`FlowProblem::unsampled`).
    for (k, p) in parts.iter().enumerate() {
        let unlinked_entries = p
            .entries
            .iter()
            .enumerate()
            .filter(|&(j, _)| !links.iter().any(|l| l.callee == k && l.entry == j))
            .map(|(_, &b)| b);
        let unsampled = (0..p.blocks).filter(|&b| p.unsampled.get(b) == Some(&true));
        for b in unlinked_entries.chain(unsampled) {
            weights[k][b].get_or_insert((0.0, ENTRY_PRIOR));
        }
    }
    let wmax = weights
        .iter()
        .flatten()
        .flatten()
        .map(|e| e.1)
        .fold(0.0f64, f64::max)
        .max(1e-12);
    let (arcs, first_entry) = arcs_of(parts);
    let rows = Rows {
        weights: &weights,
        scales: &scales,
        first_entry: &first_entry,
        wmax,
    };
    let mut active = vec![true; arcs.len()];
    let mut result: Vec<Vec<f64>> = Vec::new();
    let mut factored = None;
    // Flows are not negative: arcs a solve drives below zero are pinned to
    // it and the rest solved again; a pinned arc the objective would rather
    // see flow (its gradient is negative at the solution) is freed again
    // (an active-set method, after Lawson and Hanson). Pinning alone, as
    // rounds 0 and 1 once did, could strand a whole call tree at zero:
    // msort's return path came out negative once the solve had borrowed
    // flow from main's call sites, and with it pinned, msort's recursion
    // (entries = twice the recursive block's runs, as many as the block
    // itself) had zero as its only solution: 7 calls for 48 M.
    let rounds = (ACTIVE_SET_WORK / arcs.len().max(1)).clamp(2, ACTIVE_SET_ROUNDS);
    for round in 0..rounds {
        let (x, f) = solve_once(parts, links, &rows, &arcs, &active, normal)?;
        factored = Some(f);
        let mut changed = false;
        for (k, v) in x.iter().enumerate() {
            if active[k] && *v < -NEGLIGIBLE {
                active[k] = false;
                changed = true;
            }
        }
        if !changed && active.iter().any(|a| !a) && round + 1 < rounds {
            // Every pinned arc the objective wants back.
            let g = gradient(parts, links, &rows, &arcs, &x);
            for k in 0..arcs.len() {
                if !active[k] && g[k] < -REACTIVATE {
                    active[k] = true;
                    changed = true;
                }
            }
        }
        result = parts.iter().map(|p| vec![0.0; p.blocks]).collect();
        // A pinned arc solved at zero; one pinned just now was below it.
        for (k, a) in arcs.iter().enumerate() {
            if let Some(b) = a.to {
                result[a.part][b] += x[k].max(0.0) * scales[a.part];
            }
        }
        if !changed {
            break;
        }
    }
    Some(Weighted {
        freq: result,
        factored,
        scales,
    })
}

/// A solution with what its standard errors need: the last factor.
struct Weighted {
    freq: Vec<Vec<f64>>,
    factored: Option<Factored>,
    scales: Vec<f64>,
}

/// The Cholesky factor of AᵀWA (unknowns renumbered by `perm`) and, per
/// block numbered across parts, its active in-arcs.
struct Factored {
    chol: CscCholesky<f64>,
    perm: Vec<usize>,
    ins: Vec<Vec<usize>>,
    wmax: f64,
}

impl Weighted {
    /// Posterior standard error of each block's frequency: cᵀ (AᵀWA)⁻¹ c
    /// for c its in-arcs, the weights being 1/σ² over wmax; one solve per
    /// block with the factor, skipped where that would cost more than
    /// SPREAD_BUDGET.
    fn spread(&self) -> Vec<Vec<Option<f64>>> {
        let per_block: Option<Vec<Option<f64>>> = self.factored.as_ref().and_then(|f| {
            let m = f.perm.len();
            let work = f.ins.len().saturating_mul(f.chol.l().nnz());
            (work <= SPREAD_BUDGET).then(|| {
                f.ins
                    .iter()
                    .map(|arcs| {
                        let c: Vec<usize> = arcs.iter().map(|&k| f.perm[k]).collect();
                        if c.is_empty() {
                            return None;
                        }
                        let mut e = DMatrix::zeros(m, 1);
                        for &k in &c {
                            e[(k, 0)] = 1.0;
                        }
                        let z = f.chol.solve(&e);
                        let var: f64 = c.iter().map(|&k| z[(k, 0)]).sum::<f64>() / f.wmax;
                        (var >= 0.0).then(|| var.sqrt())
                    })
                    .collect()
            })
        });
        let mut g = 0;
        self.freq
            .iter()
            .zip(&self.scales)
            .map(|(blocks, scale)| {
                (0..blocks.len())
                    .map(|_| {
                        g += 1;
                        per_block.as_ref().and_then(|v| v[g - 1]).map(|s| s * scale)
                    })
                    .collect()
            })
            .collect()
    }
}

/// One weighted least-squares row: sum of coef × arc flow ≈ rhs.
struct Row {
    coef: Vec<(usize, f64)>,
    rhs: f64,
    weight: f64,
}

/// What the rows are built from, besides the network.
struct Rows<'a> {
    weights: &'a [Vec<Option<(f64, f64)>>],
    scales: &'a [f64],
    first_entry: &'a [usize],
    wmax: f64,
}

/// The rows of the least squares over the arcs `keep` keeps (the others
/// pinned at zero), each with its key: per block its conservation (in-flow
/// minus out-flow, as hard as [`CONSERVATION`]) and its estimate (in-flow
/// against it); per link the callee's entry flow minus its call sites'
/// frequencies (in the callee's units), as hard as conservation. Also each
/// block's kept in-arcs (blocks numbered across parts).
fn least_squares_rows(
    parts: &[FlowProblem],
    links: &[Link],
    r: &Rows,
    arcs: &[Arc],
    keep: impl Fn(usize) -> bool,
) -> (Vec<Vec<usize>>, Vec<(RowKey, Row)>) {
    let BlockArcs { base, ins, outs } = block_arcs(parts, arcs, &keep);
    let mut rows: Vec<(RowKey, Row)> = Vec::new();
    for (k, p) in parts.iter().enumerate() {
        for b in 0..p.blocks {
            let g = base[k] + b;
            // A self-loop edge appears with +1 and -1: it cancels in conservation.
            if let Some(row) = balance_row(&ins[g], &outs[g]) {
                rows.push((RowKey::Conservation(g), row));
            }
            if let Some((est, w)) = r.weights[k][b] {
                let row: Vec<(usize, f64)> = ins[g].iter().map(|&a| (a, 1.0)).collect();
                if !row.is_empty() {
                    let row = Row {
                        coef: row,
                        rhs: est,
                        weight: w / r.wmax,
                    };
                    rows.push((RowKey::Estimate(g), row));
                }
            }
        }
    }
    for (k, l) in links.iter().enumerate() {
        let a = r.first_entry[l.callee] + l.entry;
        let mut row: Vec<(usize, f64)> = if keep(a) { vec![(a, 1.0)] } else { vec![] };
        for &(part, b, n) in &l.sites {
            let ratio = n * r.scales[part] / r.scales[l.callee];
            row.extend(ins[base[part] + b].iter().map(|&k| (k, -ratio)));
        }
        merge(&mut row);
        if !row.is_empty() {
            let row = Row {
                coef: row,
                rhs: 0.0,
                weight: CONSERVATION,
            };
            rows.push((RowKey::Link(k), row));
        }
    }
    for (t, (a, b)) in ties_of(parts, &base).enumerate() {
        if let Some(row) = balance_row(&ins[a], &ins[b]) {
            rows.push((RowKey::Tie(t), row));
        }
    }
    for (t, (k, sh)) in shares_of(parts).enumerate() {
        let (a, b) = (base[k] + sh.a, base[k] + sh.b);
        let mut coef: Vec<(usize, f64)> = ins[a].iter().map(|&x| (x, 1.0)).collect();
        coef.extend(ins[b].iter().map(|&x| (x, -sh.ratio)));
        merge(&mut coef);
        let sd = sh.error * sh.ratio * sh.level / r.scales[k];
        if !coef.is_empty() && sd > 0.0 {
            let row = Row {
                coef,
                rhs: 0.0,
                weight: 1.0 / (sd * sd) / r.wmax,
            };
            rows.push((RowKey::Share(t), row));
        }
    }
    (ins, rows)
}

/// The flows of arcs `plus` less those of arcs `minus`, zero, as hard as
/// conservation; None where nothing is left once they cancel.
fn balance_row(plus: &[usize], minus: &[usize]) -> Option<Row> {
    let mut coef: Vec<(usize, f64)> = plus.iter().map(|&a| (a, 1.0)).collect();
    coef.extend(minus.iter().map(|&a| (a, -1.0)));
    merge(&mut coef);
    (!coef.is_empty()).then_some(Row {
        coef,
        rhs: 0.0,
        weight: CONSERVATION,
    })
}

/// Every part's shares ([`FlowProblem::shares`]) with their part.
fn shares_of(parts: &[FlowProblem]) -> impl Iterator<Item = (usize, &Share)> + '_ {
    parts
        .iter()
        .enumerate()
        .flat_map(|(k, p)| p.shares.iter().map(move |sh| (k, sh)))
}

/// Every part's ties ([`FlowProblem::ties`]) as blocks numbered across parts.
fn ties_of<'a>(
    parts: &'a [FlowProblem],
    base: &'a [usize],
) -> impl Iterator<Item = (usize, usize)> + 'a {
    parts
        .iter()
        .zip(base)
        .flat_map(|(p, &first)| p.ties.iter().map(move |&(a, b)| (first + a, first + b)))
}

fn solve_once(
    parts: &[FlowProblem],
    links: &[Link],
    r: &Rows,
    arcs: &[Arc],
    active: &[bool],
    normal: &NormalPattern,
) -> Option<(Vec<f64>, Factored)> {
    let m = arcs.len();
    let n = normal.unknowns();
    // Rows as (sparse coefficients, rhs, weight), each with its chain if long.
    let chain_of = |key: RowKey| normal.chains.binary_search_by_key(&key, |c| c.0).ok();
    let (ins, rows) = least_squares_rows(parts, links, r, arcs, |k| active[k]);
    let rows: Vec<(Row, Option<usize>)> = rows
        .into_iter()
        .map(|(key, row)| (row, chain_of(key)))
        .collect();
    let perm = &normal.perm;
    // Accumulate AᵀWA and AᵀWb into the pattern's slots, long rows as
    // their chains.
    let mut values = vec![0.0; normal.pattern.nnz()];
    let mut rhs = vec![0.0; n];
    let (offsets, minor) = (
        normal.pattern.major_offsets(),
        normal.pattern.minor_indices(),
    );
    // A row's unknowns renumbered and sorted: each column of its clique is
    // then searched forward from the last entry found, not from its start.
    // Every slot gets one term per row, rows in the same order: the same sums.
    let mut sorted: Vec<(usize, f64)> = Vec::new();
    let mut add = |row: &Row| {
        let w = row.weight;
        sorted.clear();
        sorted.extend(row.coef.iter().map(|&(j, c)| (perm[j], c)));
        sorted.sort_unstable_by_key(|e| e.0);
        for &(pj, cj) in &sorted {
            rhs[pj] += w * cj * row.rhs;
            let column = &minor[offsets[pj]..offsets[pj + 1]];
            let mut at = 0;
            for &(pi, ci) in &sorted {
                at += column[at..].partition_point(|&x| x < pi);
                debug_assert_eq!(column[at], pi, "entry in the pattern");
                values[offsets[pj] + at] += w * ci * cj;
            }
        }
    };
    let mut chained = vec![false; normal.chains.len()];
    let mut chain_rows: Vec<Row> = Vec::new();
    for (row, chain) in &rows {
        match *chain {
            Some(c) => {
                chained[c] = true;
                chain_rows.clear();
                normal.chains[c].1.rows(row, &mut chain_rows);
                chain_rows.iter().for_each(&mut add);
            }
            None => add(row),
        }
    }
    // The diagonal: the ridge on arcs (a clamped arc pinned to zero).
    let diagonal: Vec<f64> = active
        .iter()
        .map(|&on| if on { RIDGE } else { 1.0 })
        .collect();
    for (k, d) in diagonal.iter().enumerate() {
        values[normal.slot(perm[k], perm[k])] += d;
    }
    // A chain no row of this solve uses: its partial sums are zero.
    for (c, (_, chain)) in normal.chains.iter().enumerate() {
        if !chained[c] {
            for s in chain.first_sum..chain.first_sum + chain.unknowns.len() - 1 {
                values[normal.slot(perm[s], perm[s])] += 1.0;
            }
        }
    }
    let chol = CscCholesky::factor_numerical(normal.symbolic.clone(), &values).ok()?;
    // The normal equations' condition is about 1e12 (weights from the
    // ridge to conservation): a plain solve keeps ~4 digits; iterative
    // refinement with the same factor recovers more. The residual is the
    // whole rows' (AᵀW(b − Ax) − ridge·x over the arcs): the partial sums
    // drop out of it, and a correction solved with zero on them is the
    // whole rows' own (the arcs' block of the inverse is the inverse of
    // their Schur complement, the whole rows' normal matrix). Refining
    // against the chains' residual instead left flows only the ridge
    // decides percents apart.
    let mut x = chol.solve(&DMatrix::from_column_slice(n, 1, &rhs));
    let mut residual = DMatrix::zeros(n, 1);
    for _ in 0..REFINEMENTS {
        for k in 0..m {
            residual[(perm[k], 0)] = -diagonal[k] * x[(perm[k], 0)];
        }
        for (row, _) in &rows {
            let ax: f64 = row.coef.iter().map(|&(j, c)| c * x[(perm[j], 0)]).sum();
            let wr = row.weight * (row.rhs - ax);
            for &(j, c) in &row.coef {
                residual[(perm[j], 0)] += c * wr;
            }
        }
        x += chol.solve(&residual);
    }
    let x = (0..m).map(|k| x[(perm[k], 0)]).collect();
    Some((
        x,
        Factored {
            chol,
            perm: normal.perm.clone(),
            ins,
            wmax: r.wmax,
        },
    ))
}

/// The objective's gradient (up to a factor 2) at arc flows `x`, over
/// every arc, pinned or not: per arc, Σ over the rows it appears in of
/// weight × coefficient × residual — the rows of [`solve_once`] with every
/// arc kept, each pinned arc at zero in `x`.
fn gradient(parts: &[FlowProblem], links: &[Link], r: &Rows, arcs: &[Arc], x: &[f64]) -> Vec<f64> {
    let (_, rows) = least_squares_rows(parts, links, r, arcs, |_| true);
    let mut grad = vec![0.0; arcs.len()];
    for (_, row) in &rows {
        let residual: f64 = row.coef.iter().map(|&(j, c)| c * x[j]).sum::<f64>() - row.rhs;
        for &(j, c) in &row.coef {
            grad[j] += row.weight * c * residual;
        }
    }
    grad
}

/// Which row of the least squares: a block's conservation or its
/// estimate (blocks numbered across parts), a link, or a tie (numbered
/// across parts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum RowKey {
    Conservation(usize),
    Estimate(usize),
    Link(usize),
    Tie(usize),
    Share(usize),
}

/// Which unknowns can share a row, whatever the weights and whichever
/// arcs a round clamps (a clamped arc keeps its place, with zeros): per
/// block its in- and out-arcs (conservation) and its in-arcs (its estimate,
/// should it have one), per link the callee's entry and the sites'
/// in-arcs, per tie or share both blocks' in-arcs. The normal matrix's pattern is built from these rows (see
/// [`NormalPattern`]), so every solve of the same network (reweighting
/// rounds, pass 1 and pass 2) shares one ordering and one symbolic
/// factorization. Sorted by key.
fn pattern_rows(
    parts: &[FlowProblem],
    links: &[Link],
    first_entry: &[usize],
    arcs: &[Arc],
) -> Vec<(RowKey, Vec<usize>)> {
    let BlockArcs { base, ins, outs } = block_arcs(parts, arcs, |_| true);
    let mut rows: Vec<(RowKey, Vec<usize>)> = Vec::new();
    for (g, (i, o)) in ins.iter().zip(&outs).enumerate() {
        rows.push((
            RowKey::Conservation(g),
            i.iter().chain(o).copied().collect(),
        ));
        rows.push((RowKey::Estimate(g), i.clone()));
    }
    for (k, l) in links.iter().enumerate() {
        let mut row = vec![first_entry[l.callee] + l.entry];
        for &(part, b, _) in &l.sites {
            row.extend(&ins[base[part] + b]);
        }
        rows.push((RowKey::Link(k), row));
    }
    for (t, (a, b)) in ties_of(parts, &base).enumerate() {
        rows.push((
            RowKey::Tie(t),
            ins[a].iter().chain(&ins[b]).copied().collect(),
        ));
    }
    for (t, (k, sh)) in shares_of(parts).enumerate() {
        let (a, b) = (base[k] + sh.a, base[k] + sh.b);
        rows.push((
            RowKey::Share(t),
            ins[a].iter().chain(&ins[b]).copied().collect(),
        ));
    }
    for (_, row) in &mut rows {
        row.sort_unstable();
        row.dedup();
    }
    rows.retain(|r| !r.1.is_empty());
    rows.sort_unstable_by_key(|r| r.0);
    rows
}

/// A row over more than this many unknowns is solved as a chain of
/// three-term rows through partial sums (see [`Chain`]).
const CHAIN_OVER: usize = 16;

/// A long row `Σ c_j x_j ≈ rhs` (weight w) written as k rows through k − 1
/// new unknowns, the partial sums s_j: `c_1 x_1 − s_1`, `s_{j−1} + c_j x_j −
/// s_j`, …, `s_{k−1} + c_k x_k − rhs`, each weighted k·w. Their residuals
/// add up to the long row's, and the partial sums appear nowhere else, so
/// at the minimum over them the residual is spread evenly (k·w·(v/k)² each)
/// and the k rows cost exactly w·v²: the same least squares. But the
/// normal matrix no longer holds the long row's dense clique (an
/// interpreter's dispatch block with 204 predecessors: 42 K entries, most
/// of the Cholesky factor).
#[derive(Debug)]
struct Chain {
    /// The long row's unknowns, sorted (a chain row per unknown, in this order).
    unknowns: Vec<usize>,
    /// The first partial sum's unknown (the others follow).
    first_sum: usize,
}

impl Chain {
    /// Unknowns of chain row `j`: the row's j-th unknown and the partial
    /// sums before and after it.
    fn row_unknowns(&self, j: usize) -> Vec<usize> {
        let mut u = vec![self.unknowns[j]];
        if j > 0 {
            u.push(self.first_sum + j - 1);
        }
        if j + 1 < self.unknowns.len() {
            u.push(self.first_sum + j);
        }
        u
    }

    /// `row` (its unknowns among the chain's) as the chain's rows.
    fn rows(&self, row: &Row, out: &mut Vec<Row>) {
        let k = self.unknowns.len();
        let weight = row.weight * k as f64;
        let mut c = vec![0.0; k];
        for &(u, coef) in &row.coef {
            let j = self
                .unknowns
                .binary_search(&u)
                .expect("a row's unknowns are its pattern row's");
            c[j] = coef;
        }
        for (j, &cj) in c.iter().enumerate() {
            let mut coef = Vec::with_capacity(3);
            if cj != 0.0 {
                coef.push((self.unknowns[j], cj));
            }
            if j > 0 {
                coef.push((self.first_sum + j - 1, 1.0));
            }
            if j + 1 < k {
                coef.push((self.first_sum + j, -1.0));
            }
            out.push(Row {
                coef,
                rhs: if j + 1 == k { row.rhs } else { 0.0 },
                weight,
            });
        }
    }
}

/// The normal matrix's shape for one network: its rows (long ones as
/// chains), the unknowns' order (arcs, then the chains' partial sums), the
/// (full, symmetric) sparsity pattern in that order and its symbolic
/// Cholesky factorization.
struct NormalPattern {
    /// Arcs: the unknowns the caller knows of.
    m: usize,
    rows: Vec<(RowKey, Vec<usize>)>,
    /// The long rows' chains, sorted by key.
    chains: Vec<(RowKey, Chain)>,
    perm: Vec<usize>,
    pattern: SparsityPattern,
    symbolic: CscSymbolicCholesky,
}

impl NormalPattern {
    fn new(m: usize, rows: Vec<(RowKey, Vec<usize>)>) -> Self {
        let mut unknowns = m;
        let mut chains = Vec::new();
        let mut cliques: Vec<Vec<usize>> = Vec::new();
        for (key, row) in &rows {
            #[cfg(test)]
            let long = row.len() > tests::CHAIN_OVER_IN_TEST.with(|c| c.get());
            #[cfg(not(test))]
            let long = row.len() > CHAIN_OVER;
            if !long {
                cliques.push(row.clone());
                continue;
            }
            let chain = Chain {
                unknowns: row.clone(),
                first_sum: unknowns,
            };
            unknowns += row.len() - 1;
            cliques.extend((0..row.len()).map(|j| chain.row_unknowns(j)));
            chains.push((*key, chain));
        }
        // Which unknowns share a row (the diagonal included), unnumbered.
        let mut adjacent: Vec<Vec<usize>> = (0..unknowns).map(|k| vec![k]).collect();
        for row in &cliques {
            for &j in row {
                adjacent[j].extend(row);
            }
        }
        for a in &mut adjacent {
            a.sort_unstable();
            a.dedup();
        }
        let perm = fill_reducing_order(&adjacent);
        let mut cols: Vec<Vec<usize>> = vec![Vec::new(); unknowns];
        for (j, a) in adjacent.iter().enumerate() {
            cols[perm[j]] = a.iter().map(|&i| perm[i]).collect();
        }
        let mut offsets = Vec::with_capacity(unknowns + 1);
        let mut indices = Vec::new();
        offsets.push(0);
        for mut c in cols {
            c.sort_unstable();
            indices.extend(c);
            offsets.push(indices.len());
        }
        let pattern =
            SparsityPattern::try_from_offsets_and_indices(unknowns, unknowns, offsets, indices)
                .expect("sorted, in range");
        let symbolic = CscSymbolicCholesky::factor(pattern.clone());
        NormalPattern {
            m,
            rows,
            chains,
            perm,
            pattern,
            symbolic,
        }
    }

    /// Arcs and partial sums.
    fn unknowns(&self) -> usize {
        self.perm.len()
    }

    /// Index into the values of entry (row `i`, column `j`), both renumbered.
    fn slot(&self, j: usize, i: usize) -> usize {
        let (a, b) = (
            self.pattern.major_offsets()[j],
            self.pattern.major_offsets()[j + 1],
        );
        let k = self.pattern.minor_indices()[a..b]
            .binary_search(&i)
            .expect("entry in the pattern");
        a + k
    }
}

thread_local! {
    /// The last few networks' normal patterns (pass 1 and pass 2 of the
    /// function a thread works on share one).
    static NORMALS: std::cell::RefCell<Vec<std::rc::Rc<NormalPattern>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The normal pattern of `rows`, from the thread's cache when it was seen.
fn normal_pattern(m: usize, rows: Vec<(RowKey, Vec<usize>)>) -> std::rc::Rc<NormalPattern> {
    const KEEP: usize = 4;
    NORMALS.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(k) = cache.iter().position(|n| n.m == m && n.rows == rows) {
            let n = cache.remove(k);
            cache.push(n.clone());
            return n;
        }
        let n = std::rc::Rc::new(NormalPattern::new(m, rows));
        if cache.len() >= KEEP {
            cache.remove(0);
        }
        cache.push(n.clone());
        n
    })
}

/// New position of each unknown: approximate minimum degree (the `amd`
/// crate, SuiteSparse's AMD in Rust) over "shares a row". A block with
/// hundreds of predecessors (an interpreter's dispatch) makes a dense
/// clique; reverse Cuthill-McKee, which only narrows the band, left a
/// factor of 81 K nonzeros for _PyEval_EvalFrameDefault's 77 K.
fn fill_reducing_order(adjacent: &[Vec<usize>]) -> Vec<usize> {
    let m = adjacent.len();
    let mut ap = Vec::with_capacity(m + 1);
    let mut ai = Vec::new();
    ap.push(0);
    for a in adjacent {
        ai.extend(a);
        ap.push(ai.len());
    }
    let perm: Vec<usize> = match amd::order(m, &ap, &ai, &amd::Control::default()) {
        Ok((_, inverse, _)) => inverse,
        // Only for an invalid pattern, which this is not: the given order
        // is correct, only slower.
        Err(_) => (0..m).collect(),
    };
    #[cfg(test)]
    if tests::REVERSED_ORDER.with(|r| r.get()) {
        return perm.iter().map(|p| m - 1 - p).collect();
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

    thread_local! {
        /// Eliminates the unknowns in the opposite order: the answer must
        /// not change.
        pub(super) static REVERSED_ORDER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        /// Rows longer than this are chained (CHAIN_OVER unless a test says).
        pub(super) static CHAIN_OVER_IN_TEST: std::cell::Cell<usize> = const { std::cell::Cell::new(CHAIN_OVER) };
    }

    #[test]
    fn chained_rows_give_the_answer_of_the_whole_rows() {
        chained_rows_agree(40, 2);
        chained_rows_agree(600, CHAIN_OVER);
    }

    /// A dispatch block with `handlers` handlers, each back to it, a few
    /// estimated (to different precisions), one handler calling a second
    /// function linked to it: solved with every row whole, then with every
    /// row over `over` unknowns chained.
    fn chained_rows_agree(handlers: usize, over: usize) {
        let n = 2 + handlers;
        let mut edges = vec![(0, 1)];
        let mut estimates = vec![None; n];
        estimates[0] = Some((10.0, 1.0));
        estimates[1] = Some((1e6, 1e4));
        for h in 0..handlers {
            let b = 2 + h;
            edges.extend([(1, b), (b, 1)]);
            if h % 3 == 0 {
                let sd = if h % 2 == 0 { 1e3 } else { 3e5 };
                estimates[b] = Some((1e6 / handlers as f64 * (1.0 + h as f64 / 20.0), sd));
            }
        }
        let caller = FlowProblem {
            blocks: n,
            edges,
            entries: vec![0],
            exits: vec![1],
            estimates,
            ranges: vec![],
            floors: vec![],
            unsampled: vec![],
            upper: vec![],
            ties: vec![],
            shares: vec![],
        };
        let callee = FlowProblem {
            blocks: 2,
            edges: vec![(0, 1)],
            entries: vec![0],
            exits: vec![1],
            estimates: vec![None, Some((5e4, 5e3))],
            ranges: vec![],
            floors: vec![],
            unsampled: vec![],
            upper: vec![],
            ties: vec![],
            shares: vec![],
        };
        let parts = [caller, callee];
        let links = [Link {
            callee: 1,
            entry: 0,
            sites: vec![(0, 7, 1.0)],
        }];
        let whole = {
            CHAIN_OVER_IN_TEST.with(|c| c.set(usize::MAX));
            NORMALS.with(|c| c.borrow_mut().clear());
            solve_with_spread(&parts, &links).unwrap()
        };
        let chained = {
            CHAIN_OVER_IN_TEST.with(|c| c.set(over));
            NORMALS.with(|c| c.borrow_mut().clear());
            solve_with_spread(&parts, &links).unwrap()
        };
        CHAIN_OVER_IN_TEST.with(|c| c.set(CHAIN_OVER));
        NORMALS.with(|c| c.borrow_mut().clear());
        for (p, (w, c)) in whole.freq.iter().zip(&chained.freq).enumerate() {
            for (b, (x, y)) in w.iter().zip(c).enumerate() {
                assert!(
                    (x - y).abs() <= 1e-9 * x.abs().max(1.0),
                    "part {p} block {b}: {x} whole, {y} chained"
                );
            }
        }
        for (w, c) in whole
            .spread
            .iter()
            .flatten()
            .zip(chained.spread.iter().flatten())
        {
            // Over SPREAD_BUDGET (600 handlers) there are none to compare.
            let (Some(x), Some(y)) = (*w, *c) else {
                continue;
            };
            // A handler only the ridge splits off has a standard error
            // larger than all the flow: "unknown" either way.
            let unknown = x > 1e6 && y > 1e6;
            assert!(
                unknown || (x - y).abs() <= 1e-3 * x.max(1.0),
                "spread {x} whole, {y} chained"
            );
        }
        // The handlers share the dispatch's flow; the linked callee's
        // entry is its site's frequency.
        let handlers_flow: f64 = whole.freq[0][2..].iter().sum();
        assert!(close(handlers_flow, whole.freq[0][1]));
        assert!(close(whole.freq[1][0], whole.freq[0][7]));
    }

    #[test]
    fn the_answer_does_not_hang_on_the_elimination_order() {
        // A chain of 40 diamonds, every other one with an arm estimated
        // (to 1 % or to 300 %), the rest split by the ridge alone; a
        // self-loop on every fifth join. With conservation at 1e5 the
        // two orders disagreed by percents on such flows (msort: 21 %).
        let n = 1 + 3 * 40;
        let mut edges = Vec::new();
        let mut estimates = vec![None; n];
        estimates[0] = Some((1e6, 1e4));
        for d in 0..40 {
            let (top, a, b, join) = (3 * d, 3 * d + 1, 3 * d + 2, 3 * d + 3);
            edges.extend([(top, a), (top, b), (a, join), (b, join)]);
            if d % 2 == 0 {
                let sd = if d % 4 == 0 { 3e3 } else { 9e5 };
                estimates[a] = Some((3e5 + 1e4 * d as f64, sd));
            }
            if d % 5 == 0 {
                edges.push((join, join));
                estimates[join] = Some((4e6, 4e6));
            }
        }
        let p = FlowProblem {
            blocks: n,
            edges,
            entries: vec![0],
            exits: vec![n - 1],
            estimates,
            ranges: vec![],
            floors: vec![],
            unsampled: vec![],
            upper: vec![],
            ties: vec![],
            shares: vec![],
        };
        let forward = solve(&p).unwrap();
        REVERSED_ORDER.with(|r| r.set(true));
        NORMALS.with(|c| c.borrow_mut().clear());
        let backward = solve(&p).unwrap();
        REVERSED_ORDER.with(|r| r.set(false));
        for (b, (x, y)) in forward.iter().zip(&backward).enumerate() {
            assert!(
                (x - y).abs() <= 1e-3 * x.abs().max(y.abs()).max(1.0),
                "block {b}: {x} vs {y}"
            );
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-3 * b.abs().max(1.0)
    }

    /// 0 -> {1, 2} -> 3, entered at 0 and left at 3, 100 ± 10 at both
    /// ends, the arms' estimates as given.
    fn diamond(arms: [Option<(f64, f64)>; 2]) -> FlowProblem {
        FlowProblem {
            blocks: 4,
            edges: vec![(0, 1), (0, 2), (1, 3), (2, 3)],
            entries: vec![0],
            exits: vec![3],
            estimates: vec![Some((100.0, 10.0)), arms[0], arms[1], Some((100.0, 10.0))],
            ranges: vec![],
            floors: vec![],
            unsampled: vec![],
            upper: vec![],
            ties: vec![],
            shares: vec![],
        }
    }

    #[test]
    fn diamond_takes_the_missing_arm_from_conservation() {
        // Block 2 has no estimate.
        let f = solve(&diamond([Some((30.0, 3.0)), None])).unwrap();
        assert!(close(f[2], 70.0), "{f:?}");
        assert!(close(f[0], 100.0) && close(f[3], 100.0), "{f:?}");
    }

    #[test]
    fn a_tie_holds_as_hard_as_conservation() {
        // The arms run equally often by the code. Without the tie arm 2
        // takes what arm 1's estimate of 30 leaves (70); with it both are
        // one figure, where arm 1's estimate and the ends' 100 meet (the
        // least squares at 38.4 each: ends 2·x against 100 ± 10, the arm x
        // against 30 ± 3).
        let p = FlowProblem {
            ties: vec![(1, 2)],
            shares: vec![],
            ..diamond([Some((30.0, 3.0)), None])
        };
        let f = solve(&p).unwrap();
        assert!(close(f[1], f[2]), "{f:?}");
        assert!((f[1] - 38.4).abs() < 0.5, "{f:?}");
        assert!(close(f[0], f[1] + f[2]), "{f:?}");
    }

    #[test]
    fn a_floor_counts_only_below_it() {
        // Neither arm estimated: the ridge splits 50/50.
        let floored = |floor: (f64, f64)| FlowProblem {
            floors: vec![None, None, Some(floor), None],
            ..diamond([None, None])
        };
        let f = solve(&floored((80.0, 8.0))).unwrap();
        assert!(
            (f[2] - 80.0).abs() < 2.0 && (f[1] - 20.0).abs() < 2.0,
            "{f:?}"
        );
        // A floor the solution is above already changes nothing.
        let f = solve(&floored((20.0, 5.0))).unwrap();
        assert!(
            (f[2] - 50.0).abs() < 1.0 && (f[1] - 50.0).abs() < 1.0,
            "{f:?}"
        );
    }

    #[test]
    fn a_floor_holds_under_a_weak_estimate_above_it() {
        // Arm 1 sure at 90, arm 2 only guessed at 400 +- 600: the sure
        // arm takes nearly all 100, arm 2 falls below the 30 counted.
        let p = FlowProblem {
            floors: vec![None, None, Some((30.0, 5.0)), None],
            ..diamond([Some((90.0, 5.0)), Some((400.0, 600.0))])
        };
        let f = solve(&p).unwrap();
        assert!(f[2] > 25.0, "{f:?}");
        // A floor whose own error reaches the solution changes nothing.
        let p = FlowProblem {
            floors: vec![None, None, Some((30.0, 50.0)), None],
            ..diamond([Some((90.0, 5.0)), Some((400.0, 600.0))])
        };
        let g = solve(&p).unwrap();
        assert!(g[2] < 25.0, "{g:?}");
    }

    #[test]
    fn floors_alone_are_the_evidence() {
        // Nothing estimated, both arms only floored (every sample of the
        // function a refill's): about the floors (within their standard
        // errors: the unknown entry leans towards zero), not nothing.
        let p = FlowProblem {
            estimates: vec![None; 4],
            floors: vec![None, Some((30.0, 18.0)), Some((20.0, 12.0)), None],
            ..diamond([None, None])
        };
        let f = solve(&p).expect("floors are evidence");
        assert!(f[1] > 30.0 - 18.0 && f[2] > 20.0 - 12.0, "{f:?}");
        assert!(close(f[0], f[1] + f[2]) && close(f[3], f[0]), "{f:?}");
    }

    #[test]
    fn an_unsampled_arm_gives_way_to_the_seen_one() {
        // Neither arm estimated, arm 2 never sampled: the split goes to
        // arm 1 instead of half and half.
        let p = FlowProblem {
            unsampled: vec![false, false, true, false],
            upper: vec![],
            ties: vec![],
            shares: vec![],
            ..diamond([None, None])
        };
        let f = solve(&p).unwrap();
        assert!(f[1] > 95.0 && f[2] < 5.0, "{f:?}");
        // An estimate on the arm wins over the lean.
        let mut q = p.clone();
        q.estimates[2] = Some((40.0, 4.0));
        let f = solve(&q).unwrap();
        assert!((f[2] - 40.0).abs() < 2.0, "{f:?}");
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
            ranges: vec![],
            floors: vec![],
            unsampled: vec![],
            upper: vec![],
            ties: vec![],
            shares: vec![],
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
            ranges: vec![],
            floors: vec![],
            unsampled: vec![],
            upper: vec![],
            ties: vec![],
            shares: vec![],
        };
        let f = solve(&p).unwrap();
        assert!((f[1] - 100.0).abs() < 10.0, "{f:?}");
    }

    /// A caller's loop (entry 0 -> loop block 1 calling the callee,
    /// back to itself, exit from 1) and a one-block callee.
    fn caller_and_callee(caller: Vec<Option<(f64, f64)>>, callee: (f64, f64)) -> Vec<FlowProblem> {
        vec![
            FlowProblem {
                blocks: 2,
                edges: vec![(0, 1), (1, 1)],
                entries: vec![0],
                exits: vec![1],
                estimates: caller,
                ranges: vec![],
                floors: vec![],
                unsampled: vec![],
                upper: vec![],
                ties: vec![],
                shares: vec![],
            },
            FlowProblem {
                blocks: 1,
                edges: vec![],
                entries: vec![0],
                exits: vec![0],
                estimates: vec![Some(callee)],
                ranges: vec![],
                floors: vec![],
                unsampled: vec![],
                upper: vec![],
                ties: vec![],
                shares: vec![],
            },
        ]
    }

    fn call_from_loop() -> Vec<Link> {
        vec![Link {
            callee: 1,
            entry: 0,
            sites: vec![(0, 1, 2.0)],
        }]
    }

    #[test]
    fn a_callee_gives_its_frequency_to_the_calling_loop() {
        // The loop has no estimate of its own; its callee, called twice per
        // iteration, ran 1000 times: the loop block ran 500 times.
        let parts = caller_and_callee(vec![Some((1.0, 0.2)), None], (1000.0, 100.0));
        let f = solve_linked(&parts, &call_from_loop()).unwrap();
        assert!(close(f[0][1], 500.0), "{f:?}");
        assert!(close(f[1][0], 1000.0), "{f:?}");
        // Alone, the loop would have run once.
        let alone = solve(&parts[0]).unwrap();
        assert!(close(alone[1], 1.0), "{alone:?}");
    }

    #[test]
    fn a_caller_with_only_zero_estimates_does_not_pin_its_unsampled_loop() {
        // hashtab's `main`: its entry block had no samples (an estimate of
        // zero at one sample's worth) and its calling loop none either
        // (unsampled, leaning towards zero). The callee says 1e7 calls:
        // the caller's loop must carry them, not hold them at zero at the
        // scale of its zero estimate.
        let mut parts = caller_and_callee(vec![Some((0.0, 5e4)), None], (1e7, 1e6));
        parts[0].unsampled = vec![false, true];
        let f = solve_linked(&parts, &call_from_loop()).unwrap();
        assert!(f[1][0] > 0.8e7, "{f:?}");
        assert!(f[0][1] > 0.4e7, "{f:?}");
    }

    #[test]
    fn a_ranged_estimate_does_not_rise_to_upper_bounds_alone() {
        // msort's shape: a caller's loop block whose samples may all be
        // load stalls (an upper bound: 775 iterations of two calls), a
        // callee whose chain may hide (600 calls, plausibly up to 2000).
        let with = |caller: (f64, f64), upper: bool| {
            let mut parts = caller_and_callee(vec![Some((1.0, 0.2)), Some(caller)], (600.0, 200.0));
            parts[0].upper = if upper { vec![false, true] } else { vec![] };
            parts[1].ranges = vec![Some(2000.0)];
            solve_linked(&parts, &call_from_loop()).unwrap()
        };
        let f = with((775.0, 775.0), true);
        assert!(f[1][0] < 800.0, "held near its own estimate: {f:?}");
        // A sound estimate of the loop lifts it within its range.
        let f = with((775.0, 50.0), false);
        assert!(f[1][0] > 1400.0, "rises to its caller: {f:?}");
    }

    #[test]
    fn a_share_splits_what_the_rest_sends_through_without_pinning_it() {
        // Nothing says how the diamond's 100 runs split: the ridge halves
        // them. Arm 1 three times arm 2 splits them 75 / 25, and the total
        // stays the ends' 100 whatever level the ratio was read at.
        let p = diamond([None, None]);
        let f = solve(&p).unwrap();
        assert!(close(f[1], 50.0), "{f:?}");
        for level in [25.0, 1000.0] {
            let mut p = diamond([None, None]);
            p.shares = vec![Share {
                a: 1,
                b: 2,
                ratio: 3.0,
                level,
                error: 0.3,
            }];
            let f = solve(&p).unwrap();
            assert!((f[1] - 75.0).abs() < 1.0, "{level}: {f:?}");
            assert!((f[2] - 25.0).abs() < 1.0, "{level}: {f:?}");
        }
    }

    #[test]
    fn an_upper_bound_sets_a_parts_scale_only_without_firmer_estimates() {
        // kernels' interp: its jump block bounded at 2.8e9, its loop
        // total 1.6e8 +- 5e7.
        let mut parts =
            caller_and_callee(vec![Some((1.6e8, 5e7)), Some((2.8e9, 2.8e9))], (1.0, 0.1));
        parts[0].upper = vec![false, true];
        assert_eq!(part_scale(&parts[0]), 2.1e8);
        parts[0].upper = vec![false, false];
        assert_eq!(part_scale(&parts[0]), 5.6e9);
        parts[0].estimates[0] = None;
        parts[0].upper = vec![false, true];
        assert_eq!(part_scale(&parts[0]), 5.6e9, "the bound is all there is");
    }

    #[test]
    fn callers_overrule_a_stalled_callee() {
        // The callee's ratio says 5000 calls (stalls), the caller's loop 500
        // iterations of two calls each.
        let parts = caller_and_callee(vec![Some((1.0, 0.2)), Some((500.0, 50.0))], (5000.0, 500.0));
        let f = solve_linked(&parts, &call_from_loop()).unwrap();
        assert!((f[1][0] - 1000.0).abs() < 150.0, "{f:?}");
        assert!((f[0][1] - 500.0).abs() < 75.0, "{f:?}");
    }

    #[test]
    fn a_low_estimate_gives_way_within_its_range() {
        // The callee (outside loops) says 600 calls but could be up to 2000
        // if its chain hid under the caller; the caller's loop says 500
        // iterations of two calls.
        let mut parts =
            caller_and_callee(vec![Some((1.0, 0.2)), Some((500.0, 50.0))], (600.0, 60.0));
        let f = solve_linked(&parts, &call_from_loop()).unwrap();
        assert!(f[1][0] < 800.0, "without a range the two meet: {f:?}");
        parts[1].ranges = vec![Some(2000.0)];
        let f = solve_linked(&parts, &call_from_loop()).unwrap();
        assert!((f[1][0] - 1000.0).abs() < 100.0, "{f:?}");
    }

    /// msort's shape: `main` (part 0) calls a recursive sort (part 1) from
    /// b1, a loop nothing estimates (b1 → b1); the sort's b0 tests the
    /// size, b1 calls itself twice, b2 returns. Its entries are main's
    /// calls and twice b1's runs.
    fn recursion(
        main_runs: (f64, f64),
        sort: [Option<(f64, f64)>; 3],
    ) -> (Vec<FlowProblem>, Vec<Link>) {
        let part = |blocks, edges, exits: Vec<usize>, estimates| FlowProblem {
            blocks,
            edges,
            entries: vec![0],
            exits,
            estimates,
            ranges: vec![],
            floors: vec![],
            unsampled: vec![],
            upper: vec![],
            ties: vec![],
            shares: vec![],
        };
        let main = part(
            2,
            vec![(0, 1), (1, 1)],
            vec![1],
            vec![Some(main_runs), None],
        );
        let sort = part(3, vec![(0, 1), (0, 2)], vec![1, 2], sort.to_vec());
        let links = vec![Link {
            callee: 1,
            entry: 0,
            sites: vec![(1, 1, 2.0), (0, 1, 1.0)],
        }];
        (vec![main, sort], links)
    }

    #[test]
    fn a_recursion_is_not_stranded_at_zero() {
        // The sort's estimates (entries 10, recursive block 12) disagree
        // with its recursion (entries = 2 × 12 + main's calls): the first
        // solve borrows from main's calls (its loop runs backwards, nothing
        // says otherwise) and runs the return arm negative too. Pinning both left the recursion only zero (entries
        // = the recursive block's runs = twice them); the return arm is
        // freed again and the sort keeps its entries' estimate (the
        // recursive block's, far above the solution, gives way).
        let (parts, links) = recursion((0.0, 0.5), [Some((10.0, 1.0)), Some((12.0, 1.0)), None]);
        let f = solve_linked(&parts, &links).unwrap();
        assert!((f[1][0] - 10.0).abs() < 0.5, "{f:?}");
        assert!((f[1][1] - 5.0).abs() < 0.25, "{f:?}");
        assert!((f[1][2] - 5.0).abs() < 0.25, "{f:?}");
    }

    #[test]
    fn the_gradient_is_the_objectives() {
        // Finite differences of the weighted squares at an arbitrary point.
        let (parts, links) = recursion(
            (1.0, 0.5),
            [Some((10.0, 1.0)), Some((12.0, 2.0)), Some((3.0, 1.0))],
        );
        let (arcs, first_entry) = arcs_of(&parts);
        let weights: Vec<Vec<Option<(f64, f64)>>> = parts
            .iter()
            .map(|p| {
                p.estimates
                    .iter()
                    .map(|e| e.map(|(v, sd)| (v, 1.0 / (sd * sd))))
                    .collect()
            })
            .collect();
        let scales = vec![1.0; parts.len()];
        let rows = Rows {
            weights: &weights,
            scales: &scales,
            first_entry: &first_entry,
            wmax: 1.0,
        };
        let objective = |x: &[f64]| {
            let BlockArcs { base, ins, outs } = block_arcs(&parts, &arcs, |_| true);
            let flow = |l: &[usize]| l.iter().map(|&k| x[k]).sum::<f64>();
            let mut j = 0.0;
            for (k, part) in weights.iter().enumerate() {
                for (b, estimate) in part.iter().enumerate() {
                    let g = base[k] + b;
                    j += CONSERVATION * (flow(&ins[g]) - flow(&outs[g])).powi(2);
                    if let Some((est, w)) = estimate {
                        j += w * (flow(&ins[g]) - est).powi(2);
                    }
                }
            }
            for l in &links {
                let mut r = x[first_entry[l.callee] + l.entry];
                for &(part, b, n) in &l.sites {
                    r -= n * flow(&ins[base[part] + b]);
                }
                j += CONSERVATION * r * r;
            }
            j / 2.0
        };
        let x: Vec<f64> = (0..arcs.len()).map(|k| 0.3 + 0.7 * k as f64).collect();
        let g = gradient(&parts, &links, &rows, &arcs, &x);
        for k in 0..arcs.len() {
            let (mut up, mut down) = (x.clone(), x.clone());
            up[k] += 1e-4;
            down[k] -= 1e-4;
            let numeric = (objective(&up) - objective(&down)) / 2e-4;
            assert!(
                (numeric - g[k]).abs() <= 1e-4 * numeric.abs().max(1.0),
                "arc {k}: {numeric} vs {}",
                g[k]
            );
        }
    }

    #[test]
    fn nothing_estimated_is_none() {
        let p = FlowProblem {
            blocks: 1,
            edges: vec![],
            entries: vec![0],
            exits: vec![0],
            estimates: vec![None],
            ranges: vec![],
            floors: vec![],
            unsampled: vec![],
            upper: vec![],
            ties: vec![],
            shares: vec![],
        };
        assert!(solve(&p).is_none());
    }
}
