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
//! blocks whose frequency came from conservation alone are low. The model
//! error is 12 % in loops and at least 35 % (and half a cycle per
//! execution) for blocks outside loops, whose best case lies somewhere
//! between their throughput and their exposed dependency chain, depending
//! on how the code around them overlaps them; the frequency their
//! throughput would give is kept as the top of a plausible range that the
//! solve may reach without counting it against the estimate.

use crate::cfg::Cfg;
use crate::flow_solve::{solve_with_spread, FlowProblem};
use serde::Serialize;

/// How far a straight block's estimate leans from its exposed-chain
/// figure towards its throughput top (`freq_high`), in log terms: over the
/// 133 straight classes of the recorded sets with 50 samples or more the
/// truth sits at a median 0.27 of that way (quartiles -0.26 and 0.45):
/// the chain is partly hidden under the code around it. With ranged
/// estimates no longer rising to upper bounds alone (flow_solve.rs
/// `pulled_up_by_bounds`) the 45 tuning cells' mean |ln e| went 0.241 ->
/// 0.214 at 0.1, 0.211 at 0.15, 0.214 at 0.2, 0.221 at 0.27.
pub const RANGE_LEAN: f64 = 0.15;

/// Relative error of the best-case model on a block (BHive MAPE on the host).
pub const MODEL_ERROR: f64 = 0.12;

/// Relative error of the best case of a block that runs outside loops: how
/// much of its dependency chain the surrounding code hides is unknown
/// (recorded workloads: such blocks' estimates were off by 30-90% at
/// "high" confidence).
pub const STRAIGHT_MODEL_ERROR: f64 = 0.35;

/// Relative error of an estimate resting only on blocks entered after a
/// branch that may mispredict: what follows a refill is not the model's
/// best case (Zen 4: a store just past the target holds the pipeline 3.6
/// cycles per mispredict, datasets/skid spreadstore), by 1.5-4x on the
/// recorded workloads (msort's merge arms, rle_encode's block after its
/// run loop). Such an estimate was already low confidence; with this it
/// also weighs as little in the solve, so a sounder neighbour decides (the
/// arm's +176 % had pulled msort's `compare` to +37 % at "high"). Mean
/// |ln e| over the six recorded sets 0.382 -> 0.375, every set as good or
/// better; 0.35 and 0.5 did nothing, 2.0 was worse (0.385).
pub const AFTER_UNSURE_ERROR: f64 = 1.0;

/// Relative error of an estimate resting on the few samples left in its
/// blocks once more than twice as many were set aside (a refill's, a
/// caller's): already a guess for confidence ([`Guess::MostlySetAside`]),
/// it now also weighs as one in the solve. Neutral on the six recorded
/// sets (mean |ln e| 0.299); the two workloads no rule was tuned on
/// moved: eventsim 0.327 -> 0.301, textproc 0.414 -> 0.394. (btree's
/// `find_index` entry is one: 107 samples left of some 3500, it says
/// 14.6 M for about 60 M, at ±36 % before.)
pub const MOSTLY_SET_ASIDE_ERROR: f64 = 1.0;

/// A class with no samples says its frequency is below about one sample's
/// worth only if its blocks fill this many dispatch slots at their best
/// case (best-case cycles times the machine's dispatch width,
/// [`zero_evidence_cycles`]): out-of-order retirement leaves short blocks
/// without samples however often they run (their instructions retire in
/// bulk beside a slower one), so a short sample-less class gets no
/// estimate and takes its frequency from flow conservation instead of
/// pinning it to zero. Tuned as 4 cycles on the six-wide Zen 4 and Golden
/// Cove; counted in slots so that a wider machine's shorter best case for
/// the same code does not drop it: on Zen 5 (eight wide) textproc's
/// `intern` lost its new-word block (20 instructions around a `memcpy`
/// call, 3.0 cycles, 1 sample, 0.1 M true runs) and the solve sent 36 M
/// of 42 M calls through it (-67 % on the chain walk beside it); at 3
/// cycles textproc's three Zen 5 cells went 0.682/0.731/0.724 ->
/// 0.562/0.580/0.522; the 70 cells' mean stayed 0.128 (three Zen 5 cells
/// ±0.001), scaled ±10 % 78.7 -> 78.8 %; held-out dynprog 0.587 -> 0.588.
pub const ZERO_EVIDENCE_SLOTS: f64 = 24.0;

/// [`ZERO_EVIDENCE_SLOTS`] in best-case cycles on a machine dispatching
/// `dispatch_width` µops a cycle (4 on a six-wide machine, 3 on Zen 5).
pub fn zero_evidence_cycles(dispatch_width: u32) -> f64 {
    ZERO_EVIDENCE_SLOTS / f64::from(dispatch_width.max(1))
}

/// The same holds for a few samples: a class whose clean samples are fewer
/// than this over less than [`zero_evidence_cycles`] of best case gets no
/// estimate. One sample on a fused `cmp`/`jle` holding a cycle of M said
/// 126 K runs for 49.6 M (Zen 4 msort's merge loop), and with a relative
/// error of 1 on so small a figure its standard error was tiny: it pinned
/// half the loop to zero. (Ten samples alone leave a relative error of
/// 1/√10, low confidence at best.)
pub const FEW_SAMPLES: f64 = 10.0;

/// Below this many clean samples, left once more than twice as many were
/// set aside (a caller's, a refill's), a class gets no estimate whatever
/// its best case: a guess at a relative error of 1 on so small a figure
/// has a tiny standard error and pins its neighbours. matchers'
/// `matchhere` entry kept 1 of 1254 samples (40 K for 124 M calls);
/// btree's `lookup` latch on Zen 4 kept 10 of 93 (4.3 M for 12.9 M) and
/// held the lookup loop at -64 % (now +5 %). At 10 (FEW_SAMPLES) the 45
/// tuning cells' mean was 0.211, at 15 0.203 (unscaled +-10 % 51.6 ->
/// 54.2 %, scaled 67.5 -> 68.6 %; btree zen4 0.491 -> 0.119, kernels up to
/// +0.022 on one set, msort up to +0.007; textproc 0.272 -> 0.269,
/// held-out dynprog unchanged), at
/// 20-30 0.204-0.205 with textproc 0.275-0.351 (one set +0.44 at 30).
pub const SET_ASIDE_FEW: f64 = 15.0;

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

/// Why a block's frequency rests on a guess (and its confidence is low).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guess {
    /// Its clean samples are a share of a successor's first samples,
    /// split by the frequencies being estimated.
    SplitShare,
    /// Its class's estimate rests only on blocks entered after a branch
    /// that may mispredict ([`ClassEstimate::after_unsure`]).
    AfterMispredict,
    /// No block of its loop has an estimate of its own.
    LoopUnobserved,
    /// Its loop's trip count comes from the loop's samples as a whole, net
    /// of a refill per entry ([`crate::loop_totals`]).
    LoopTotal,
    /// As [`Guess::LoopTotal`] for a loop around a switch's dispatch,
    /// each trip also paying a mispredict as often as its cases change.
    DispatchTotal,
    /// It is a case of a jump table, its share of the table's runs read
    /// from the refills counted at it and at the other cases.
    CaseShare,
    /// It is a switch's default arm (past its range check), taken to run
    /// as often as one of the table's cases: nothing measures it.
    DefaultArm,
    /// Its own estimate and its loop's total disagree by more than a
    /// factor of two.
    LoopDisagrees,
    /// It moved by more than half between the pass on raw samples and the
    /// pass on samples split by that first answer.
    Unstable,
    /// Most of the samples of the blocks its class's estimate rests on
    /// were set aside (refetch suspects, a caller's): the estimate stands
    /// on the rest.
    MostlySetAside,
    /// It leads into a loop more often than the loop's samples allow at
    /// one refill an entry ([`crate::loop_totals::overfilled`]: no room
    /// left for trips).
    OverfillsLoop,
    /// Its loop's trip count lies between one trip per entry and all the
    /// loop's cycles at its best case, the refills its exits cost unknown
    /// ([`crate::loop_totals::between_bounds`]).
    LoopBetween,
    /// Its loop's trip count is from the loop's samples less what a
    /// mispredicted exit's resolution leaves in the loop per entry (half a
    /// refill, [`crate::loop_totals::UNSEEN_EXIT_REFILL`], or the machine's
    /// measured figure): its exits' refills land where no sample of the
    /// loop sees them.
    LoopUnseenExits,
    /// It runs just past a loop's exits, whose refills its samples hold:
    /// its runs are the refills counted there (at least as many exits
    /// mispredicted).
    ExitRefills,
}

impl Guess {
    pub fn as_str(self) -> &'static str {
        match self {
            Guess::SplitShare => "its samples are a share of a successor's, split by the estimates",
            Guess::AfterMispredict => {
                "its samples follow a branch that may mispredict (the refill's aftermath)"
            }
            Guess::LoopUnobserved => "no block of its loop has an estimate of its own",
            Guess::LoopTotal => {
                "its loop's trip count is from the loop's samples less a mispredicted exit per entry"
            }
            Guess::DispatchTotal => {
                "its loop's trip count is from the loop's samples, a trip paying a dispatch mispredict as often as its cases change"
            }
            Guess::CaseShare => {
                "it is a jump table's case: its share of the table's runs is the share of the refills counted at the cases"
            }
            Guess::DefaultArm => {
                "it is a switch's default arm, taken to run as often as one of the table's cases: nothing measures it"
            }
            Guess::LoopDisagrees => {
                "its own samples and its loop's samples as a whole disagree by more than 2x"
            }
            Guess::LoopUnseenExits => {
                "its loop's trip count is from the loop's samples less a mispredicted exit's resolution per entry: its exits' refills land out of its sight"
            }
            Guess::LoopBetween => {
                "its loop's trip count is a guess between one trip per entry and all its cycles at its best case"
            }
            Guess::Unstable => "it moved by more than half between the two passes",
            Guess::MostlySetAside => {
                "most of its samples were set aside as a refill's or a caller's: the estimate rests on the rest"
            }
            Guess::ExitRefills => {
                "it runs as often as a block just past a loop's exits, whose samples hold the exits' refills: its runs are the refills counted there"
            }
            Guess::OverfillsLoop => {
                "it enters a loop more often than the loop's samples allow at one refill an entry"
            }
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
    /// Best-case cycles by throughput alone (dispatch, ports, front end):
    /// for a block outside loops, how fast it can run when the code around
    /// it hides its dependency chain; for a loop block whose chain waits on
    /// a leaf it calls, its own steady-state model. Else `best_cycles`.
    pub best_cycles_low: f64,
    /// The model's cycles for the whole block, its instructions whose
    /// samples were set aside included (0: unknown).
    pub block_cycles: f64,
    /// Most of its samples are charged to loads (likely cache misses), so its
    /// ratio is probably inflated by dynamic stalls.
    pub stall_suspect: bool,
    /// Runs outside any loop, or in a loop after a leaf it calls whose
    /// result its chain waits for: its best case depends on how it
    /// overlaps the code around it, which the model does not see.
    pub straight: bool,
    /// Calls code its model does not run with it (through a pointer, or a
    /// callee that is not a straight-line leaf): its best case is as
    /// uncertain as a straight block's, for the same reason.
    pub calls_opaque: bool,
    /// Samples charged to the block but left out of `samples` (a refetch's
    /// or a caller's): not a clean measure, yet proof that it ran.
    pub excluded: f64,
    /// All of `samples` is a share of a successor's first samples split
    /// among several predecessors by the frequencies being estimated.
    pub guessed: bool,
    /// For a block mispredicts land in (a loop exit's target, an indirect
    /// jump's, an arm of a branch inside a loop body): the mispredicts into
    /// it, the refetch samples that landed in it over one refill's worth —
    /// how many times the loop was left, if each exit mispredicted once.
    /// Predicted entries leave no refetch: a least frequency, not an
    /// estimate.
    pub exits_if_mispredicted: Option<f64>,
    /// Entered through a conditional or indirect branch other than a back
    /// edge, or a join of short arms that are (a switch's cases meeting):
    /// its samples may include what follows a mispredict's refill.
    pub after_unsure: bool,
    /// How much a shared core raised `best_cycles` (the run's core share,
    /// `crate::cpi`'s `shared_core`): 1 (or 0, unset) where it did not.
    /// The model's own error stays what it was on an idle core.
    pub slowdown: f64,
    /// A straight-line leaf whose callers never wait on its result
    /// ([`crate::result_use`]): its best case (`best_cycles`) is already
    /// its throughput (`cpi::at_throughput`); this says why it is unsure.
    pub result_unwaited: bool,
    /// Samples on the block's return addresses, charged to the callees'
    /// returns ([`crate::return_charges`]).
    pub returned: f64,
}

/// Relative error of a least frequency from refetch samples (the refill
/// is the machine's mispredict penalty, give or take).
pub const EXIT_REFETCH_ERROR: f64 = 0.6;

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
    /// The frequency the samples would give if the class's blocks ran at
    /// their throughput (blocks outside loops only): a plausible top.
    /// `freq` leans [`RANGE_LEAN`] of the (log) way towards it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub freq_high: Option<f64>,
    /// Only a least frequency (a loop exit's refetch): weighed in where
    /// conservation would put the block below it.
    pub floor: bool,
    /// Every block it rests on is entered through a branch that may
    /// mispredict (not a back edge): its samples may hold what follows a
    /// refill, the chain run exposed after it (codec's `rle_encode` after
    /// its inner loop's exit: 5.8 cycles a run where the best case is
    /// 1.24, +356 % at "high"). Its blocks are never above low confidence.
    pub after_unsure: bool,
    /// More than twice its samples were set aside in the blocks it rests
    /// on ([`Guess::MostlySetAside`]).
    pub mostly_set_aside: bool,
    /// Every block it rests on calls code its model does not run inline
    /// (`BlockObservation::calls_opaque`): weighed as a straight block's.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub calls_out: bool,
    /// More than twice its clean samples landed on its return addresses
    /// and went to its callees: what is left undercounts, a floor. Not for
    /// an upper bound (`upper_bound`: its samples may all be load stalls),
    /// which says nothing from below: btree's `lookup` loop (1.46e8 for
    /// 5.4e7) held as a floor took the 55 cells' scaled share 79.6 -> 78.3 %.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub returns_set_aside: bool,
    /// Every block it rests on is a leaf whose callers never wait on its
    /// result (`BlockObservation::result_unwaited`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub result_unwaited: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Frequencies {
    /// Per block.
    pub freq: Vec<f64>,
    pub confidence: Vec<Confidence>,
    /// Per block: its frequency is only a bound from above (its class's
    /// estimate was, and conservation left it there).
    pub upper_bound: Vec<bool>,
    /// Per block below high confidence: why, in words.
    pub why: Vec<Option<&'static str>>,
    pub classes: Vec<ClassEstimate>,
}

/// Poisson bounds (about two standard deviations) on a count.
fn count_bounds(s: f64) -> (f64, f64) {
    let sd = (s + 1.0).sqrt();
    ((s - 2.0 * sd).max(0.0), s + 2.0 * sd + 1.0)
}

/// The least share of a block's best case (`BlockObservation::block_cycles`)
/// its clean instructions must hold for its samples to make an estimate.
/// kernels' `interp` dispatch block (`movzbl; movslq; add; jmp *`, the
/// jump's samples a refill's): its clean part's best case is 0 of 0.70,
/// or 0.06 of 0.74 under a model that delays the `add` a little (session
/// 61's back-to-back ALU experiment), and at 0.06 its 422 samples made
/// an upper bound of 5.2e9 +- 5.2e9 that alone decided the split between
/// the dispatch and the switch's default (b20 6.9e7 -> 2.4e6, true 3.1e7),
/// kernels' Zen 5 cells 0.103/0.104/0.088 -> 0.188/0.181/0.166. At a tenth
/// that model leaves them 0.103/0.103/0.087; the 70 cells and the extra
/// workloads are the same as without the rule (0.2: 0.128 -> 0.134).
const USABLE_SHARE: f64 = 0.1;

/// The estimate of one class from its blocks' observations.
pub fn estimate_class(
    class: usize,
    blocks: &[usize],
    obs: &[BlockObservation],
    cycles_per_sample: f64,
    zero_evidence: f64,
) -> Option<ClassEstimate> {
    let usable: Vec<usize> = blocks
        .iter()
        .copied()
        // A guess is no evidence: a block whose clean samples are its share
        // of a successor's first samples, split by the frequencies being
        // estimated, feeds on itself (interp's handlers beside their
        // counted refills; btree's find_index entry, which took all 683 of
        // its loop header's while the loop, not yet estimated, ran zero
        // times, came out 303 M for 19.6 M runs, and the solve clamped the
        // loop's back edge to make room for it).
        //
        // Nor is a block whose clean instructions hold under a tenth of
        // its best case ([`USABLE_SHARE`]): its ratio is a sliver's.
        .filter(|&b| {
            obs[b].best_cycles > 0.05
                && obs[b].best_cycles >= USABLE_SHARE * obs[b].block_cycles
                && !obs[b].guessed
        })
        .collect();
    if usable.is_empty() {
        return exit_floor(class, blocks, obs);
    }
    if usable.iter().all(|&b| obs[b].samples <= 0.0) {
        if usable.iter().any(|&b| obs[b].excluded >= 1.0) {
            // Its samples are all someone else's: it ran. How often is
            // unknown; at least as often as a loop exit's refetch says.
            return exit_floor(class, blocks, obs);
        }
        // No samples: the frequency is small, about one sample's worth at most.
        let c: f64 = usable.iter().map(|&b| obs[b].best_cycles).sum();
        if c < zero_evidence {
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
            freq_high: None,
            floor: false,
            after_unsure: false,
            mostly_set_aside: false,
            calls_out: false,
            returns_set_aside: false,
            result_unwaited: false,
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
    let set_aside: f64 = cluster.iter().map(|&b| obs[b].excluded).sum();
    let mostly_set_aside = set_aside > 2.0 * s;
    // Nor does a class whose few clean samples are what is left once more
    // than twice as many were set aside (a caller's, a refill's): with a
    // relative error of 1 on so small a figure its standard error is
    // tiny. matchers' `matchhere` entry kept 1 sample of 1254 (the rest
    // its callers' skid onto its first load): 40 K for 124 M calls, and it
    // pinned its callers' loops through the linked solve.
    if (s < FEW_SAMPLES && c < zero_evidence) || (s < SET_ASIDE_FEW && mostly_set_aside) {
        return exit_floor(class, blocks, obs);
    }
    let straight = cluster.iter().all(|&b| obs[b].straight);
    let after_unsure = cluster.iter().all(|&b| obs[b].after_unsure);
    let c_low: f64 = cluster.iter().map(|&b| obs[b].best_cycles_low).sum();
    let freq_high = (straight && c_low > 0.0 && c_low < c).then(|| s * cycles_per_sample / c_low);
    // A block calling opaque code runs its own instructions around the
    // callee's work, which the model does not see: its estimate weighs as
    // a straight block's in the solve. The 45 tuning cells' mean stayed
    // 0.211 (unscaled +-10 % 50.5 -> 51.6 %, scaled 68.3 -> 67.5 %),
    // eventsim 0.259 -> 0.230 (six sets of seven better: its `push` and
    // `pop` loops beside `handle`'s calls), matchers 0.982 -> 0.973, the
    // held-out dynprog 0.680 -> 0.649. Also taking its chain as exposed
    // and its throughput as a top, as a straight block's, cost btree on
    // Golden Cove and Zen 3 +0.36 (find_index's loop total collapsed
    // under entries its callers' ranged blocks raised).
    let calls_out = cluster.iter().all(|&b| obs[b].calls_opaque);
    let model_error = if straight || calls_out {
        // Half a cycle of the idle core's best case.
        let idle: f64 = cluster
            .iter()
            .map(|&b| obs[b].best_cycles / obs[b].slowdown.max(1.0))
            .sum();
        STRAIGHT_MODEL_ERROR.max(0.5 / idle)
    } else {
        MODEL_ERROR
    };
    let mut rel = (1.0 / s.max(0.5) + model_error * model_error).sqrt();
    if after_unsure {
        rel = rel.max(AFTER_UNSURE_ERROR);
    }
    if mostly_set_aside {
        rel = rel.max(MOSTLY_SET_ASIDE_ERROR);
    }
    if only_suspects {
        // An upper bound more than an estimate.
        rel = rel.max(1.0);
    }
    let result_unwaited = cluster.iter().all(|&b| obs[b].result_unwaited);
    let returns_set_aside =
        !only_suspects && cluster.iter().map(|&b| obs[b].returned).sum::<f64>() > 2.0 * s;
    let mut freq = s * cycles_per_sample / c;
    if let Some(top) = freq_high.filter(|_| !only_suspects && !after_unsure) {
        freq *= (top / freq).powf(RANGE_LEAN);
    }
    Some(ClassEstimate {
        class,
        freq,
        relative_error: rel,
        standard_error: rel * freq,
        confidence: Confidence::from_relative_error(rel),
        blocks: cluster,
        samples: s,
        upper_bound: only_suspects,
        freq_high,
        floor: false,
        after_unsure,
        mostly_set_aside,
        calls_out,
        returns_set_aside,
        result_unwaited,
    })
}

/// A class whose only samples are the refill after a loop's exit: at
/// least as many runs as mispredicted exits.
fn exit_floor(class: usize, blocks: &[usize], obs: &[BlockObservation]) -> Option<ClassEstimate> {
    if blocks.iter().any(|&b| obs[b].samples > 0.0) {
        return None;
    }
    refetch_floor(class, blocks, obs)
}

/// At least as many runs as the refills that landed in the class's
/// mispredict targets say, whatever else its samples say: a dispatch
/// target's own samples may be only a share of its successor's
/// (interp's handlers, each ending in a jump back to the loop).
fn refetch_floor(
    class: usize,
    blocks: &[usize],
    obs: &[BlockObservation],
) -> Option<ClassEstimate> {
    let exits: Vec<(usize, f64)> = blocks
        .iter()
        .filter_map(|&b| obs[b].exits_if_mispredicted.map(|n| (b, n)))
        .filter(|e| e.1 > 0.0)
        .collect();
    if exits.is_empty() {
        return None;
    }
    let n = exits.iter().map(|e| e.1).sum::<f64>() / exits.len() as f64;
    Some(ClassEstimate {
        class,
        freq: n,
        relative_error: EXIT_REFETCH_ERROR,
        standard_error: EXIT_REFETCH_ERROR * n,
        confidence: Confidence::Low,
        blocks: exits.iter().map(|e| e.0).collect(),
        samples: 0.0,
        upper_bound: false,
        freq_high: None,
        floor: true,
        after_unsure: false,
        mostly_set_aside: false,
        calls_out: false,
        returns_set_aside: false,
        result_unwaited: false,
    })
}

/// A function's frequency problem before it is solved: its flow network
/// with its class estimates on the blocks.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub problem: FlowProblem,
    classes: Vec<ClassEstimate>,
    confidence: Vec<Confidence>,
    /// Per block: its class estimate is only a bound from above (every
    /// sample may be a load's stall), for the views and culprits. Unlike
    /// `problem.upper` (what the solve treats as a bound), a loop total
    /// set on such a header ([`Prepared::set_estimate`]) leaves it set: the
    /// total counts the loop's load stalls as trips, a bound too (the
    /// pointer chase's culprit is the D-cache only while its frequency is
    /// one; unified with `problem.upper` in session 31, the known answer
    /// `pointer_chase_culprit` named the chain instead).
    bounded: Vec<bool>,
    /// Per block: why its frequency rests on a guess ([`Guess`]), if it
    /// does: never above low confidence.
    pub guessed: Vec<Option<Guess>>,
    /// Per block: its frequency class (see [`shared_estimate_spread`]).
    class_of: Vec<usize>,
}

impl Prepared {
    /// Whether block `b` has an estimate of its own (not only a bound).
    pub fn observed(&self, b: usize) -> bool {
        self.problem.estimates[b].is_some() && !self.bounded[b]
    }

    /// Gives block `b` an estimate its class did not (its loop's total,
    /// [`crate::loop_totals`]): evidence for the solve, still a guess for
    /// confidence.
    pub fn set_estimate(&mut self, b: usize, estimate: (f64, f64), why: Guess) {
        self.problem.estimates[b] = Some(estimate);
        if let Some(u) = self.problem.upper.get_mut(b) {
            *u = false;
        }
        self.guessed[b] = Some(why);
    }

    /// Marks block `b` a guess for `why`, unless it already is one.
    pub fn guess(&mut self, b: usize, why: Guess) {
        self.guessed[b].get_or_insert(why);
    }
}

/// A prepared problem solved on its own: frequencies and standard errors
/// (zeros and none when nothing is estimated).
pub fn solve_alone(p: &Prepared) -> (Vec<f64>, Vec<Option<f64>>) {
    match solve_with_spread(std::slice::from_ref(&p.problem), &[]) {
        Some(mut s) => (s.freq.remove(0), s.spread.remove(0)),
        None => (vec![0.0; p.problem.blocks], vec![]),
    }
}

/// Whether the innermost loop around block `b` calls a function from a
/// block outside `b`'s class: the callee's entries are tied to that call
/// site, so its samples, not the mispredict's aftermath in the loop's arms,
/// can give the loop its count. An arm's estimate resting only on what
/// follows a refill then gives way to the refills counted in it. msort's
/// merge: both arms of its 50 % mispredicting compare-and-take branch take
/// a refill and a store held behind it on most runs; the arm estimated from
/// that aftermath said +129..+176 %, pulling the loop and `compare` (its
/// estimate -14 %) up to +44 %. Mean |ln e| over the six recorded sets
/// 0.348 -> 0.320 (msort 0.445 -> 0.302, every other cell unchanged); the
/// same without the call (branchy's arms, matmul's middle loop, with
/// nothing else to count them) lost 0.02-0.05 there.
fn loop_calls_out(cfg: &Cfg, b: usize) -> bool {
    let class = cfg.class_of[b];
    cfg.loops_of[b].last().is_some_and(|&l| {
        cfg.loops[l]
            .body
            .iter()
            .any(|&o| cfg.class_of[o] != class && !cfg.blocks[o].calls.is_empty())
    })
}

/// Whether every sample of block `o` was set aside as a mispredict's
/// refill (at a block mispredicts land in, which counts them): nothing
/// of its own says it ran more often than that.
///
/// A class whose estimate is only a bound from above (its clean samples
/// all on loads that may miss) and which holds such a block has no
/// measure of its runs but the refills: the bound's samples sit a few
/// instructions past the refill, in its aftermath. codec's `rle_decode`:
/// the outer loop's latch (target of the run loop's mispredicted exit,
/// all 917 samples refetch) and its header three instructions on (431 on
/// `cmpb $0,(%rdi)`'s consumer) read 5.3e8 runs as a bound for 4.9e7 on
/// zen3, zen4-5k-g and -h; the refills count 4.7-5.1e7. One sample on
/// the latch's fused `jne` decided it before (zen4-5k-a: its `cmp` kept
/// clean, its zero samples a bound of 2e6, the class left to the floor).
/// The 55 tuning cells' mean |ln e| 0.181 -> 0.173, within ±10 % 60.9 ->
/// 61.5 % unscaled, 74.1 -> 74.9 % scaled ("high" 80.1 -> 78.9 %: the
/// run loop, its total now agreeing with its header, is high at
/// 1.12-1.15x, its output's store misses unseen); the held-out workloads
/// the same but numeric 0.501 -> 0.476 (bfs). Where the bound's own block
/// holds the refills and clean samples too (eventsim's `pop`, whose
/// sift-down arm's bound is right: 3.64e8 for 3.67e8, its floor 2.6e7),
/// the bound stays: taking every bounded class with a floor to the floor
/// took eventsim 0.182 -> 0.260.
fn only_refills(o: &BlockObservation) -> bool {
    o.samples <= 0.0 && o.excluded > 0.0 && o.exits_if_mispredicted.is_some()
}

/// Headers of loops that run equally often by their code: the same stated
/// trip count ([`crate::cfg::Loop::trips`]), each entered by one edge from
/// outside, from blocks of one frequency class (so entered equally often).
fn stated_ties(cfg: &Cfg) -> Vec<(usize, usize)> {
    let entered_from = |l: &crate::cfg::Loop| {
        let mut from = cfg.predecessors(l.header).filter(|e| !l.contains(e.from));
        match (from.next(), from.next()) {
            (Some(e), None) => Some(cfg.class_of[e.from]),
            _ => None,
        }
    };
    let counted: Vec<(usize, u64, usize)> = cfg
        .loops
        .iter()
        .filter_map(|l| Some((l.header, l.trips?, entered_from(l)?)))
        .collect();
    let mut ties = Vec::new();
    for (k, &(h, trips, class)) in counted.iter().enumerate() {
        // Each to the first of its kind: one tie per loop beyond it.
        if let Some(&(first, _, _)) = counted[..k]
            .iter()
            .find(|&&(_, t, c)| t == trips && c == class)
        {
            ties.push((first, h));
        }
    }
    ties
}

/// The class estimates of a function, on its flow network.
pub fn prepare(
    cfg: &Cfg,
    obs: &[BlockObservation],
    cycles_per_sample: f64,
    zero_evidence: f64,
) -> Prepared {
    let n = cfg.blocks.len();
    let classes: Vec<ClassEstimate> = cfg
        .classes
        .iter()
        .enumerate()
        .filter_map(|(c, blocks)| estimate_class(c, blocks, obs, cycles_per_sample, zero_evidence))
        .collect();
    let mut estimates = vec![None; n];
    let mut ranges = vec![None; n];
    let mut confidence = vec![Confidence::Low; n];
    let mut bounded = vec![false; n];
    let mut floors = vec![None; n];
    for e in &classes {
        if e.floor {
            // Its floor is set with every class's below.
            continue;
        }
        for &b in &cfg.classes[e.class] {
            if e.returns_set_aside {
                // What its return addresses' samples left undercounts.
                floors[b] = Some((e.freq, e.standard_error));
                continue;
            }
            estimates[b] = Some((e.freq, e.standard_error));
            ranges[b] = e.freq_high;
            confidence[b] = e.confidence;
            bounded[b] = e.upper_bound;
        }
    }
    for (c, blocks) in cfg.classes.iter().enumerate() {
        if let Some(f) = refetch_floor(c, blocks, obs) {
            let after_unsure = classes.iter().any(|e| e.class == c && e.after_unsure);
            let bound_beside_refills = classes.iter().any(|e| e.class == c && e.upper_bound)
                && blocks.iter().any(|&b| only_refills(&obs[b]));
            for &b in blocks {
                floors[b] = Some((f.freq, f.standard_error));
                // An estimate below the refills counted in the block is
                // contradicted by them (a few samples of its own beside
                // hundreds of refetch: interp's first handler): the block
                // ran about as often as they say, an estimate at their
                // count. Dropped, it left the solve only a floor, and a
                // loop behind it free: codec's `rle_encode` on Golden
                // Cove, its exit block's estimate 6 % under its refills,
                // had its run loop solved at no trips at all. The
                // held-out `search` 0.490 -> 0.426. One resting on a
                // refill's aftermath gives way to them entirely where a
                // call anchors its loop ([`loop_calls_out`]). So does a
                // class that has only a bound from above where one of its
                // blocks holds nothing but refills
                // ([`only_refills`]).
                let yields = (after_unsure && loop_calls_out(cfg, b)) || bound_beside_refills;
                if yields {
                    estimates[b] = None;
                } else if estimates[b].is_some_and(|(e, _)| e < f.freq) {
                    estimates[b] = Some((f.freq, f.standard_error));
                    confidence[b] = Confidence::Low;
                } else {
                    continue;
                }
                ranges[b] = None;
                bounded[b] = false;
            }
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
    // Two loops each with evidence of its own keep it: a tie between them
    // only averages their biases (matchers' `bloom_add` and `bloom_has`
    // loops in `main`, 0.24x and 0.70x by their call sites' samples: tied,
    // both 0.37x, and `bloom_has`' early exit 0.84x -> 0.46x). It carries
    // what one loop's code and callees say to a loop with nothing of its
    // own (hashtab's `main`, whose lookup loop has no estimate and whose
    // insert loop has only a floor).
    let ties: Vec<(usize, usize)> = stated_ties(cfg)
        .into_iter()
        .filter(|&(a, b)| estimates[a].is_none() || estimates[b].is_none())
        .collect();
    let problem = FlowProblem {
        blocks: n,
        edges,
        entries,
        exits: (0..n).filter(|&b| cfg.blocks[b].exit.is_some()).collect(),
        estimates,
        ranges,
        floors,
        unsampled: obs.iter().map(|o| o.samples + o.excluded < 0.5).collect(),
        upper: bounded.clone(),
        ties,
        shares: vec![],
    };
    // A loop none of whose blocks has an estimate of its own (every sample
    // in it a refetch suspect: codec's rle_encode inner loop) has its trip
    // count decided by its neighbours and the ridge, not observed: its
    // blocks are guesses however narrow the posterior (an arc clamped to
    // zero counts there as known).
    let mut guessed: Vec<Option<Guess>> = obs
        .iter()
        .map(|o| o.guessed.then_some(Guess::SplitShare))
        .collect();
    for e in classes.iter().filter(|e| e.after_unsure) {
        for &b in &cfg.classes[e.class] {
            guessed[b].get_or_insert(Guess::AfterMispredict);
        }
    }
    for e in classes.iter().filter(|e| e.mostly_set_aside) {
        for &b in &cfg.classes[e.class] {
            guessed[b].get_or_insert(Guess::MostlySetAside);
        }
    }
    let observed = |b: usize| problem.estimates[b].is_some() && !bounded[b];
    for l in &cfg.loops {
        if !l.body.iter().any(|&b| observed(b)) {
            for &b in &l.body {
                guessed[b].get_or_insert(Guess::LoopUnobserved);
            }
        }
    }
    Prepared {
        problem,
        classes,
        confidence,
        bounded,
        guessed,
        class_of: cfg.class_of.clone(),
    }
}

/// Why a block whose estimate rests on blocks that call out is unsure.
const CALLS_OUT: &str =
    "it calls code its model runs back to back with the return: how much of its work the callee hides or holds up is a guess";

/// Why a block whose chain runs exposed (outside loops, or after a leaf
/// it calls) is low confidence whatever its samples.
pub const HIDDEN_CHAIN: &str =
    "its dependency chain runs exposed (outside loops, or after a leaf it calls): how much of it the code around it hides is a guess";

/// Why a call site whose samples went mostly to its callees' returns
/// ([`ClassEstimate::returns_set_aside`]) is low confidence.
const RETURNED: &str =
    "most of its samples landed after its calls and went to the callees' returns: what is left is only a floor";

/// Why a leaf whose callers never wait on its result
/// ([`ClassEstimate::result_unwaited`]) is unsure.
const UNWAITED: &str =
    "its callers never wait on its result: taken at its throughput, its chain hidden under their work (how much it hides is a guess)";

/// Why a block's frequency is low confidence when it rests on its floor.
pub const AT_ITS_REFILLS: &str =
    "no estimate of its own: at least one run per mispredict into it, counted by its refills (a floor)";

/// With `DCPI_DEBUG_FREQ` set, prints a function's frequency problem and
/// its solution on stderr, a line per block: the class estimate (± its
/// standard error), the plausible top, the floor, whether it is only an
/// upper bound or a guess, and the solved frequency — what decided a
/// block's frequency, for whoever diagnoses an estimate.
pub fn debug_dump(function: &str, p: &Prepared, freq: &[f64]) {
    if std::env::var_os("DCPI_DEBUG_FREQ").is_none() {
        return;
    }
    let f = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.4e}"));
    eprintln!("dcpi: frequencies of {function}:");
    for b in 0..p.problem.blocks {
        let (est, sd) = p.problem.estimates[b].map_or((None, None), |(e, s)| (Some(e), Some(s)));
        // The samples of the class estimate this block is part of.
        let from = p
            .classes
            .iter()
            .find(|e| !e.floor && e.blocks.contains(&b))
            .map_or(String::new(), |e| format!(" ({:.0} samples)", e.samples));
        eprintln!(
            "  b{b:<4} estimate {}{from} ± {}  top {}  floor {}{}{}  solved {}",
            f(est),
            f(sd),
            f(p.problem.ranges.get(b).copied().flatten()),
            f(p.problem.floors.get(b).copied().flatten().map(|x| x.0)),
            if p.bounded[b] { "  upper bound" } else { "" },
            if p.guessed[b].is_some() {
                "  guessed"
            } else {
                ""
            },
            f(freq.get(b).copied()),
        );
    }
}

/// Per block: how many blocks of its class carry the very same estimate
/// (0 where it has none): each class estimate is given to every block of
/// its class, and the least squares takes each copy for a measure.
fn estimate_copies(estimates: &[Option<(f64, f64)>], class_of: &[usize]) -> Vec<usize> {
    let key = |b: usize| {
        let (e, class) = (estimates[b]?, class_of.get(b)?);
        Some((*class, e.0.to_bits(), e.1.to_bits()))
    };
    let mut count = std::collections::HashMap::new();
    for b in 0..estimates.len() {
        if let Some(k) = key(b) {
            *count.entry(k).or_insert(0usize) += 1;
        }
    }
    (0..estimates.len())
        .map(|b| key(b).map_or(0, |k| count[&k]))
        .collect()
}

/// A block's standard error `sd` from the solve, for its confidence, where
/// its class estimate (own error `own`) was given to `copies` blocks of
/// the class: the least squares weighed that one measure `copies` times,
/// so the posterior of a block resting on it alone is its error over
/// sqrt(copies) (matmul's j loop, two blocks of 44 samples: +-14 %,
/// "high", at -47 %). Taken back up by sqrt(copies), but never above the
/// estimate's own error (the rest of the solve may know more). The
/// solve's frequencies keep the k-fold weights: one weight per class
/// instead moved the 55 recorded cells' mean |ln e| 0.183 -> 0.184,
/// scaled +-10 % 72.0 -> 71.1 %.
fn shared_estimate_spread(sd: f64, own: f64, copies: usize) -> f64 {
    if copies <= 1 {
        return sd;
    }
    sd.max((sd * (copies as f64).sqrt()).min(own))
}

/// Frequencies from a solution of a prepared problem (alone or linked with
/// other functions'). A block's confidence is its solved frequency's
/// relative standard error (`spread`: the least squares' posterior, so a
/// block without samples of its own is as sure as the neighbours and
/// callers conservation ties it to), a class estimate that is only an
/// upper bound caps it at its own, and a block whose solution strays far
/// from its own class estimate loses it.
pub fn finish(p: Prepared, freq: Vec<f64>, spread: &[Option<f64>]) -> Frequencies {
    let Prepared {
        problem,
        classes,
        mut confidence,
        bounded,
        guessed,
        class_of,
    } = p;
    let estimates = problem.estimates;
    let floors = problem.floors;
    let n = freq.len();
    let copies = estimate_copies(&estimates, &class_of);
    for b in 0..n {
        if let Some(Some(sd)) = spread.get(b) {
            if freq[b] > 0.0 && !bounded[b] {
                let own = estimates[b].map_or(*sd, |e| e.1);
                let sd = shared_estimate_spread(*sd, own, copies[b]);
                confidence[b] = Confidence::from_relative_error(sd / freq[b]);
            }
        }
    }
    let mut why: Vec<Option<&'static str>> = guessed.iter().map(|g| g.map(Guess::as_str)).collect();
    // A block with no estimate that the solve left at its refills' count
    // says so: that is what decided it (msort's merge arm).
    for b in 0..n {
        if let Some(Some((least, _))) = floors.get(b) {
            if estimates[b].is_none() && freq[b] <= 1.1 * least {
                confidence[b] = Confidence::Low;
                why[b] = Some(AT_ITS_REFILLS);
            }
        }
    }
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
            if off > 3.0 * sd || off > est.max(sd) {
                why[b].get_or_insert("flow conservation disagrees with its own samples");
            }
        }
    }
    for (c, u) in confidence.iter_mut().zip(&guessed) {
        if u.is_some() {
            *c = Confidence::Low;
        }
    }
    // A block outside loops with a plausible range above its estimate:
    // how much of its chain the code around it hides is a guess (the
    // estimate leans `RANGE_LEAN` of the way), whatever the solve's
    // spread says. Where such blocks stopped rising to upper bounds they
    // came out medium: hashtab's `hash` at -30 % and `next_key` at -43 % on
    // every Zen 4 set, medium's share within ±10 % 42 % (8.3 % of the
    // samples) where it had been 46 % of 1.1 %.
    let mut returned = vec![false; n];
    let mut unwaited = vec![false; n];
    for e in &classes {
        for &b in &e.blocks {
            returned[b] |= e.returns_set_aside;
            unwaited[b] |= e.result_unwaited;
        }
    }
    for b in 0..n {
        if problem.ranges.get(b).is_some_and(|r| r.is_some()) && confidence[b] > Confidence::Low {
            confidence[b] = Confidence::Low;
            why[b].get_or_insert(HIDDEN_CHAIN);
        }
        // Likewise a leaf taken at its throughput because nothing waits on it.
        if unwaited[b] && confidence[b] > Confidence::Low {
            confidence[b] = Confidence::Low;
            why[b].get_or_insert(UNWAITED);
        }
    }
    let mut calls_out = vec![false; n];
    for e in classes.iter().filter(|e| e.calls_out && !e.floor) {
        for &b in &e.blocks {
            calls_out[b] = true;
        }
    }
    for b in 0..n {
        if confidence[b] == Confidence::High {
            why[b] = None;
            continue;
        }
        why[b].get_or_insert(if bounded[b] {
            "its samples may all be load stalls: an upper bound"
        } else if returned[b] {
            RETURNED
        } else if unwaited[b] {
            UNWAITED
        } else if estimates[b].is_none() {
            "no estimate of its own: from the flow around it"
        } else if calls_out[b] {
            CALLS_OUT
        } else {
            "few samples, or a best case the model is less sure of"
        });
    }
    // A bound stays a bound where conservation kept the block near it.
    let upper_bound = (0..n)
        .map(|b| bounded[b] && estimates[b].is_some_and(|(est, _)| freq[b] > 0.5 * est))
        .collect();
    Frequencies {
        freq,
        confidence,
        upper_bound,
        why,
        classes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The zero-evidence threshold of a six-wide machine (4 cycles).
    const ZE: f64 = 4.0;

    #[test]
    fn zero_evidence_is_counted_in_dispatch_slots() {
        assert_eq!(zero_evidence_cycles(6), ZE);
        assert_eq!(zero_evidence_cycles(8), 3.0);
        // Zen 5's intern new-word block: 1 sample over 3.0 cycles is an
        // estimate there, not at a six-wide machine's threshold.
        let o = obs(1.0, 3.0);
        assert!(estimate_class(0, &[0], &[o], 2.0, ZE).is_none());
        assert!(estimate_class(0, &[0], &[o], 2.0, zero_evidence_cycles(8)).is_some());
    }

    #[test]
    fn a_shared_class_estimate_counts_once_for_confidence() {
        let e = Some((100.0, 19.0));
        let estimates = [e, e, None, Some((50.0, 10.0)), Some((100.0, 19.0))];
        let class_of = [0, 0, 1, 2, 3];
        assert_eq!(estimate_copies(&estimates, &class_of), vec![2, 2, 0, 1, 1]);
        // Two copies: the solve's 19 / sqrt(2) back to 19.
        let sd = shared_estimate_spread(19.0 / 2f64.sqrt(), 19.0, 2);
        assert!((sd - 19.0).abs() < 1e-9, "{sd}");
        // Narrower than that: the rest of the solve knew more, kept in part.
        let sd = shared_estimate_spread(5.0, 19.0, 2);
        assert!((sd - 5.0 * 2f64.sqrt()).abs() < 1e-9, "{sd}");
        // Alone with its estimate: as solved.
        assert_eq!(shared_estimate_spread(7.0, 10.0, 1), 7.0);
    }

    fn obs(s: f64, c: f64) -> BlockObservation {
        BlockObservation {
            samples: s,
            best_cycles: c,
            best_cycles_low: c,
            block_cycles: c,
            stall_suspect: false,
            straight: false,
            calls_opaque: false,
            excluded: 0.0,
            guessed: false,
            exits_if_mispredicted: None,
            after_unsure: false,
            slowdown: 1.0,
            result_unwaited: false,
            returned: 0.0,
        }
    }

    #[test]
    fn a_block_whose_clean_part_is_a_sliver_of_its_best_case_makes_no_estimate() {
        // interp's dispatch block: 422 clean samples on instructions whose
        // best case is 0.06 of the block's 0.74.
        let mut o = obs(422.0, 0.06);
        o.block_cycles = 0.74;
        assert!(estimate_class(0, &[0], &[o], 2.0, ZE).is_none());
        o.block_cycles = 0.5;
        let e = estimate_class(0, &[0], &[o], 2.0, ZE).expect("an estimate");
        assert!((e.freq - 422.0 * 2.0 / 0.06).abs() < 1e-6 * e.freq);
    }

    #[test]
    fn a_loop_exit_with_only_refetch_samples_is_a_floor() {
        let mut o = obs(0.0, 0.0);
        o.excluded = 30.0;
        assert!(estimate_class(0, &[0], &[o], 2.0, ZE).is_none());
        o.exits_if_mispredicted = Some(1000.0);
        let e = estimate_class(0, &[0], &[o], 2.0, ZE).unwrap();
        assert!(e.floor && e.freq == 1000.0 && e.confidence == Confidence::Low);
        // Clean samples of its own win.
        let mut own = obs(50.0, 1.0);
        own.exits_if_mispredicted = Some(1000.0);
        assert!(!estimate_class(0, &[0], &[own], 2.0, ZE).unwrap().floor);
    }

    #[test]
    fn a_guess_is_no_estimate() {
        // A dispatch target: its only clean samples a share of its
        // successor's, split by the frequencies being estimated.
        let mut o = obs(90.0, 0.5);
        o.guessed = true;
        assert!(estimate_class(0, &[0], &[o], 2.0, ZE).is_none());
        // Beside counted refills, those are a floor.
        o.exits_if_mispredicted = Some(1000.0);
        assert!(estimate_class(0, &[0], &[o], 2.0, ZE).is_none());
        let floor = refetch_floor(0, &[0], &[o]).unwrap();
        assert!(floor.floor && floor.freq == 1000.0);
    }

    #[test]
    fn a_class_of_load_stalled_blocks_is_low_confidence() {
        let mut o = obs(5000.0, 1.0);
        o.stall_suspect = true;
        let e = estimate_class(0, &[0], &[o], 2.0, ZE).unwrap();
        assert_eq!(e.confidence, Confidence::Low);
        assert!(e.upper_bound);
        // Beside a clean block, the suspect is left out.
        let e = estimate_class(0, &[0, 1], &[o, obs(100.0, 1.0)], 2.0, ZE).unwrap();
        assert_eq!(e.blocks, vec![1]);
        assert!(!e.upper_bound);
    }

    #[test]
    fn stalled_block_is_left_out_of_the_cluster() {
        // Three blocks run 1000 times; block 2 stalls (3x its best case).
        let o = [obs(1000.0, 2.0), obs(1500.0, 3.0), obs(6000.0, 4.0)];
        let e = estimate_class(0, &[0, 1, 2], &o, 2.0, ZE).unwrap();
        assert_eq!(e.blocks, vec![0, 1]);
        assert!((e.freq - 1000.0).abs() < 1.0, "{e:?}");
        assert_eq!(e.confidence, Confidence::High);
    }

    #[test]
    fn blocks_outside_loops_are_less_sure_and_may_run_faster() {
        let mut o = obs(10000.0, 4.0);
        let looped = estimate_class(0, &[0], &[o], 2.0, ZE).unwrap();
        o.straight = true;
        o.best_cycles_low = 1.0;
        let straight = estimate_class(0, &[0], &[o], 2.0, ZE).unwrap();
        assert_eq!(looped.confidence, Confidence::High);
        assert!(straight.relative_error >= STRAIGHT_MODEL_ERROR);
        // A loop block calling opaque code: as uncertain, but no range.
        let mut calling = obs(400.0, 2.0);
        calling.calls_opaque = true;
        let calling = estimate_class(0, &[0], &[calling], 2.0, ZE).unwrap();
        assert!(calling.relative_error >= STRAIGHT_MODEL_ERROR);
        assert_eq!(calling.freq_high, None);
        // Its top: the samples at its throughput, 4x the chain's figure;
        // the estimate leans part of the way there (RANGE_LEAN).
        assert_eq!(straight.freq_high, Some(4.0 * looped.freq));
        let lean = (straight.freq / looped.freq).ln() / 4f64.ln();
        assert!((lean - RANGE_LEAN).abs() < 1e-9, "{lean}");
        assert_eq!(looped.freq_high, None);
    }

    #[test]
    fn an_estimate_resting_only_on_blocks_after_unsure_branches_says_so() {
        let mut after = obs(400.0, 1.0);
        after.after_unsure = true;
        let e = estimate_class(0, &[0], &[after], 2.0, ZE).unwrap();
        // 400 samples would be high; after a refill it is a weak guess.
        assert!(e.after_unsure && e.confidence == Confidence::Low);
        assert!(e.relative_error >= AFTER_UNSURE_ERROR);
        // One block of the cluster entered otherwise is enough.
        let e = estimate_class(0, &[0, 1], &[after, obs(400.0, 1.0)], 2.0, ZE).unwrap();
        assert!(!e.after_unsure);
    }

    #[test]
    fn an_estimate_on_what_is_left_after_most_was_set_aside_says_so() {
        let mut o = obs(100.0, 1.0);
        o.excluded = 250.0;
        assert!(
            estimate_class(0, &[0], &[o], 2.0, ZE)
                .unwrap()
                .mostly_set_aside
        );
        o.excluded = 150.0;
        assert!(
            !estimate_class(0, &[0], &[o], 2.0, ZE)
                .unwrap()
                .mostly_set_aside
        );
    }

    #[test]
    fn few_samples_are_low_confidence() {
        let o = [obs(2.0, 5.0)];
        let e = estimate_class(0, &[0], &o, 2.0, ZE).unwrap();
        assert_eq!(e.confidence, Confidence::Low);
        // A few samples on a short block: no more evidence than none.
        assert!(estimate_class(0, &[0], &[obs(2.0, 2.0)], 2.0, ZE).is_none());
        assert!(estimate_class(0, &[0], &[obs(12.0, 2.0)], 2.0, ZE).is_some());
        // No samples on a short block: no evidence either way.
        assert!(estimate_class(0, &[0], &[obs(0.0, 2.0)], 2.0, ZE).is_none());
        let zero = estimate_class(0, &[0], &[obs(0.0, 8.0)], 2.0, ZE).unwrap();
        assert_eq!(zero.freq, 0.0);
        assert!(zero.standard_error > 0.0);
        // Samples there, all of them a refetch's or a caller's: it ran.
        let mut refetched = obs(0.0, 8.0);
        refetched.excluded = 40.0;
        assert!(estimate_class(0, &[0], &[refetched], 2.0, ZE).is_none());
        // A few samples left of many set aside, on a long block: none.
        let mut left = obs(1.0, 5.0);
        left.excluded = 1253.0;
        assert!(estimate_class(0, &[0], &[left], 2.0, ZE).is_none());
        left.samples = 12.0;
        assert!(estimate_class(0, &[0], &[left], 2.0, ZE).is_none());
        left.samples = 20.0;
        assert!(
            estimate_class(0, &[0], &[left], 2.0, ZE)
                .unwrap()
                .mostly_set_aside
        );
    }
}
