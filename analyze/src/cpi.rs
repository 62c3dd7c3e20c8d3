//! dcpicalc: per-instruction frequency, cycles per instruction and stall
//! cycles of one function, from its samples, its CFG and the best-case
//! pipeline model (S = F·C).
//!
//! - Each block is modeled alone (as a loop when it branches to itself);
//!   the blocks on an innermost loop's hot path are also modeled together
//!   and share the path's cycles (`model_loop_paths`); a block's best-case
//!   cycles per execution feed the frequency estimate ([`crate::frequency`]).
//! - A core shared with a busy SMT sibling (the run's measured
//!   `core_share`, schema 7) slows throughput-bound code: a block's best
//!   case is at least its throughput bound over that share
//!   (`shared_core`); chain-bound blocks keep theirs until that passes
//!   them. Runs recorded before the probe (older files) are not corrected.
//! - Skid: on these hosts a timer sample lands on the instruction *after*
//!   the one the pipeline waits on (datasets/skid), so each instruction is
//!   charged the samples of the next one; samples on a block's first
//!   instruction go back to its predecessors' last instructions in
//!   proportion to their frequencies (to itself at the function's entry),
//!   a predecessor ending in an instruction done at rename (nop, zeroing
//!   idiom, eliminated move) keeping only a twentieth of its share; samples
//!   on a call's return address go to the callee's `ret` when the callee is
//!   analyzed with this function ([`crate::return_charges`]).
//! - Mispredicts: after a conditional or indirect branch, samples on the
//!   target and on the instruction after it may be the refetch (measured,
//!   datasets/skid: the refill lands one past the target; after a branch
//!   choosing between paths inside a loop body also on the one after that,
//!   unless the target starts with loads — inferred from msort's merge loop,
//!   not measured; once frequencies are known, a loop header's suspicion
//!   from its back edges is bounded by its entries × one refill). Those
//!   charges are kept for the
//!   views but the instructions they go to (the branch, the target) leave
//!   the frequency estimate, their best-case cycles with them.
//! - CPI_i = cycles charged to i / F_i; best_cpi is the model's cycles at the
//!   head of the window for i; static stall = best_cpi beyond the width's
//!   share (1/dispatch width), with the model's reasons; dynamic stall =
//!   CPI − best case (negative values, "gain", stay visible).

use crate::cfg::{Cfg, Exit};
use crate::frequency::{
    prepare, BlockObservation, ClassEstimate, Confidence, Frequencies, Guess, Prepared,
    EXIT_REFETCH_ERROR,
};
use crate::function_code::FunctionCode;
use crate::loop_totals::{
    between_bounds, dispatch_mispredicts, dispatch_total, header_frequency, impossible_entries,
    overfilled, LoopSamples, UNSEEN_EXIT_REFILL,
};
use dcpi_models::classify::shape;
use dcpi_models::critical_path::critical_path;
use dcpi_models::machine::Machine;
use dcpi_models::schedule::{analyze, Options, RepeatMode, Stall};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize)]
pub struct InsnRow {
    /// ELF virtual address, as objdump shows it.
    pub addr: String,
    #[serde(skip)]
    pub vaddr: u64,
    pub instruction: String,
    pub block: usize,
    /// Source file:line, where DWARF says.
    pub source: Option<String>,
    /// Samples that landed here, per event.
    pub samples: BTreeMap<String, u64>,
    /// Time-event samples charged to this instruction after the skid correction.
    pub charged_samples: f64,
    /// The part of `charged_samples` that may be a mispredict's refetch
    /// (landed just after a conditional or indirect branch).
    pub refetch_samples: f64,
    /// Estimated executions.
    pub freq: Option<f64>,
    /// `freq` is only a bound from above: every sample of the block's class
    /// may be a load stall, so the cycles may be dynamic stalls of fewer
    /// executions (cpi and the stalls then hold at that bound).
    pub freq_upper_bound: bool,
    pub confidence: Confidence,
    /// Cycles per execution, measured.
    pub cpi: Option<f64>,
    /// Cycles per execution in the best case (the model).
    pub best_cpi: f64,
    /// Best-case cycles beyond the width's share, with the model's reasons.
    pub static_stall: f64,
    /// Short codes of the static stall reasons (see the legend of the text view).
    pub static_marks: String,
    pub static_reasons: Vec<Stall>,
    /// CPI − best case, in cycles per execution.
    pub dynamic_stall: Option<f64>,
    /// Done at rename (eliminated move, zero idiom, nop): never the oldest
    /// for long, so the samples after it are charged further back.
    pub done_at_rename: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct BlockRow {
    pub index: usize,
    pub start: String,
    pub end: String,
    pub instructions: usize,
    pub freq: Option<f64>,
    /// See [`InsnRow::freq_upper_bound`].
    pub freq_upper_bound: bool,
    pub confidence: Confidence,
    /// Below high confidence: why, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence_why: Option<&'static str>,
    pub class: usize,
    /// Loops the block is in (indices into the function's loops), innermost last.
    pub loops: Vec<usize>,
    pub loop_header: bool,
    pub successors: Vec<usize>,
    pub exit: Option<Exit>,
    pub samples: u64,
    /// Samples at its start that may be a mispredict's refetch (they follow
    /// a branch that may mispredict into it): times the cycles a sample
    /// stands for, over the machine's `refetch_cycles`, at least the
    /// mispredicts into it.
    pub refetch_samples: f64,
    /// Best-case cycles per execution (the model).
    pub best_cycles: f64,
    /// Measured cycles per execution (charged cycles / freq).
    pub actual_cycles: Option<f64>,
    /// What bounds the block in the model.
    pub bottleneck: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub samples: BTreeMap<String, u64>,
    pub cycles: f64,
    pub best_case_cycles: f64,
    pub instructions_executed: f64,
    pub cpi: Option<f64>,
    pub best_cpi: Option<f64>,
    /// Share of the cycles that are dynamic stalls (actual − best case).
    pub dynamic_stall_share: Option<f64>,
    /// Share of the samples on instructions with at least medium confidence.
    pub confident_share: f64,
}

/// One loop of the function: how often it runs per entry and what a trip
/// costs.
#[derive(Debug, Clone, Serialize)]
pub struct LoopRow {
    /// Its header block (index into the blocks) and that block's address.
    pub header: usize,
    pub start: String,
    /// Its blocks, inner loops' included.
    pub blocks: Vec<usize>,
    /// Nesting depth: 1 for an outermost loop.
    pub depth: usize,
    /// Header runs per entry where the code states them
    /// ([`crate::trip_counts`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trips_stated: Option<u64>,
    /// The header's estimated runs (trips, the last exit test included).
    pub trips_total: Option<f64>,
    /// Estimated entries into the loop and trips per entry, where the
    /// blocks leading in go nowhere else (else the split of their flow is
    /// not in the block frequencies).
    pub entries: Option<f64>,
    pub trips_per_entry: Option<f64>,
    /// Cycles charged to the loop's instructions (inner loops' included),
    /// per trip.
    pub cycles_per_trip: Option<f64>,
    /// The header's confidence: the trips'.
    pub confidence: Confidence,
    /// The least of the header's and the entering blocks' confidence: the
    /// entries' and the trips per entry's.
    pub entries_confidence: Confidence,
}

#[derive(Debug, Clone, Serialize)]
pub struct CpiReport {
    pub image: String,
    pub function: String,
    pub start: String,
    pub end: String,
    pub machine: String,
    pub events: Vec<String>,
    pub time_event: Option<String>,
    pub cycles_per_sample: Option<f64>,
    pub summary: Summary,
    pub blocks: Vec<BlockRow>,
    pub loops: Vec<LoopRow>,
    pub class_estimates: Vec<ClassEstimate>,
    pub instructions: Vec<InsnRow>,
    pub warnings: Vec<String>,
    /// How often the callers call this function (their call sites' block
    /// frequencies summed), when every way in is a known direct call and
    /// its frequencies were solved with theirs.
    pub calls_from_callers: Option<f64>,
    /// The share of an idle core the sampled command had (the collector's
    /// throughput probe, schema 7), where the runs measured it.
    pub core_share: Option<f64>,
}

/// Below this share of an idle core (`EventInfo::core_share`) the views
/// say the core was shared.
pub(crate) const SHARED_CORE: f64 = 0.9;

/// A probe's share below this is not believed (a core that slow is not a
/// busy sibling: the probe itself was starved), and best cases stay.
const MIN_CORE_SHARE: f64 = 0.2;

/// A probe's share at or above this is taken for an idle core: quiet runs
/// here read 0.97-1.02, and on another host the probe's idle rate is the
/// model's for its loop, which may be off by a few percent. Over the ten
/// recorded sets 0.95 and 1.0 give the same accuracy (BENCHMARKS, session
/// 38).
const IDLE_CORE_SHARE: f64 = 0.95;

/// Best-case timing of one block.
struct BlockModel {
    cycles: f64,
    /// Cycles by throughput alone where the block runs outside loops (its
    /// chain may hide under the code around it); `cycles` elsewhere.
    low: f64,
    /// Its throughput bound (dispatch, ports, fetch, taken branches) over
    /// `cycles`: at most 1, 1 where nothing but throughput bounds it.
    throughput_share: f64,
    /// How much a shared core raised `cycles` ([`shared_core`]; 1: not).
    slowdown: f64,
    /// Its straight-line leaf callees ran inline, after their calls, in a
    /// loop path's model that shares its cycles ([`model_loop_paths`]);
    /// elsewhere a call and its return run back to back in the model.
    callees_inline: bool,
    /// A loop block whose last call reaches a straight-line leaf: the
    /// chain from the leaf's return value to the block's end (0: none).
    after_leaf: f64,
    /// A loop bound by a chain its iterations carry (its model's chain
    /// bound at its cycles, its throughput well below).
    carried: bool,
    head: Vec<f64>,
    stalls: Vec<Vec<Stall>>,
    bottleneck: String,
}

fn model_block(code: &FunctionCode, b: usize, machine: &Machine) -> BlockModel {
    let blk = &code.cfg.blocks[b];
    let insns = &code.cfg.insns[blk.insns.clone()];
    let n = insns.len();
    if insns.iter().any(crate::disasm::is_bad) {
        return BlockModel {
            cycles: 0.0,
            low: 0.0,
            throughput_share: 0.0,
            slowdown: 1.0,
            callees_inline: false,
            after_leaf: 0.0,
            carried: false,
            head: vec![0.0; n],
            stalls: vec![Vec::new(); n],
            bottleneck: "undecodable bytes".into(),
        };
    }
    let self_loop = code.cfg.successors(b).any(|e| e.to == b);
    let a = analyze(
        machine,
        insns,
        Options {
            mode: if self_loop {
                RepeatMode::Loop
            } else {
                RepeatMode::Unrolled
            },
            iterations: UNTIL_STEADY,
        },
    );
    let throughput = throughput_bound(&a.bounds);
    let mut m = BlockModel {
        cycles: a.cycles_per_iteration,
        low: a.cycles_per_iteration,
        throughput_share: if a.cycles_per_iteration > 0.0 {
            (throughput / a.cycles_per_iteration).min(1.0)
        } else {
            0.0
        },
        slowdown: 1.0,
        callees_inline: false,
        after_leaf: 0.0,
        carried: self_loop && chain_bound(&a),
        head: a.insns.iter().map(|t| t.head_cycles).collect(),
        stalls: a.insns.iter().map(|t| t.stalls.clone()).collect(),
        bottleneck: a.bottleneck,
    };
    if !code.cfg.loops_of[b].is_empty() {
        if let Some(k) = insns.iter().rposition(crate::disasm::is_call) {
            if inline_callee(code, &insns[k]).is_some() {
                let ret = [
                    iced_x86::Register::RAX as dcpi_models::classify::Reg,
                    iced_x86::Register::ZMM0 as dcpi_models::classify::Reg,
                ];
                m.after_leaf =
                    dcpi_models::critical_path::chain_from(machine, &insns[k + 1..], &ret);
            }
        }
    }
    if code.cfg.loops_of[b].is_empty() {
        // Run once between other code, its dependency chain is exposed.
        m.low = throughput.min(m.cycles);
        let chain = critical_path(machine, insns);
        if chain > m.cycles && m.cycles > 0.0 {
            let factor = chain / m.cycles;
            m.throughput_share /= factor;
            for h in &mut m.head {
                *h *= factor;
            }
            m.cycles = chain;
            m.bottleneck = format!("dependency chain of one pass ({chain:.0} cycles)");
        }
        if one_block_leaf(code) {
            // Called from a loop, a leaf runs no faster than its call and
            // return let it: the top of its range is at least that.
            m.low = m.low.max(machine.leaf_call_cycles().min(m.cycles));
        }
    }
    m
}

/// How a straight-line leaf runs where its callers never wait on its
/// result ([`crate::result_use`]): at its throughput, its dependency chain
/// hidden under the callers' older work (no branch decided by the result
/// holds the core until it is done). hashtab's `next_key` (its result
/// stored and passed to the next call) sits at a median 0.81 of the way
/// from its exposed chain to its throughput over the recorded sets
/// (0.35-0.98; Golden Cove 0.64, Zen 3 0.47), where msort's `compare`,
/// deciding merge's branch, sits at 0.18 and `hash`, a load's address, at
/// 0.25 (the lean of other straight blocks, `frequency::RANGE_LEAN`, is
/// 0.15). With `main`'s loops tied by their stated trip counts
/// (`FlowProblem::ties`) and call sites whose return addresses took their
/// samples held as floors (`ClassEstimate::returns_set_aside`), hashtab's
/// calls rest on one count: the 55 cells' mean |ln e| 0.163 -> 0.128,
/// scaled ±10 % 73.6 -> 79.7 % (leaning 0.85 / 0.8 / 0.7 of the way
/// instead of all of it: 0.124 / 0.130 / 0.141, before the floor left
/// upper bounds alone).
///
/// Whether `code` is such a leaf (one block, no call) called directly by
/// the functions analyzed with it, none of which waits on its result.
fn leaf_result_unwaited(code: &FunctionCode) -> bool {
    let (sites, deciding) = code.result_sites;
    sites > 0 && deciding == 0 && one_block_leaf(code)
}

/// Whether `code` is a straight-line leaf: one block, no call.
///
/// Its throughput (the top of its range as a straight block, or where it
/// runs when its callers never wait on it) is at least what a call's round
/// trip leaves on its own instructions, the machine's `leaf_call_cycles`:
/// on Zen 5 a call and its return add 3 cycles to a loop's trip
/// (`datasets/models/call_return.c`), 2.3 of them sampled on the leaf's
/// instructions past its entry (`datasets/skid/call-return-zen5.md`),
/// where the leaf's own dispatch and ports bound it at 1.0 (msort's
/// `compare`) or 1.4 (hashtab's `next_key`). Its estimates leaned towards
/// that top: msort's `compare` +19 %, every block of `merge` with it (the
/// Zen 5 sets' scale 0.81-0.84), hashtab's calls +64-74 %. Over the three
/// Zen 5 sets' 15 core cells mean |ln e| 0.250 -> 0.156, unscaled ±10 %
/// 33.3 -> 64.8 %, scaled 67.1 -> 71.1 % (the whole round trip's 3
/// cycles: 0.166 / 53.7 / 67.6 %, hashtab's calls then -16..-21 %). Not
/// set for the other machines: not measured there, and 3 cycles taken on
/// the Zen 4 sets cost hashtab 0.12 -> 0.19.
fn one_block_leaf(code: &FunctionCode) -> bool {
    code.cfg.blocks.len() == 1 && !code.cfg.insns.iter().any(crate::disasm::is_call)
}

/// Whether block `b` calls code its model does not run with it: through a
/// pointer, a callee that is not a straight-line leaf, or a leaf where no
/// loop path's model ran it inline and shared its cycles
/// (`callees_inline`). The model runs the block's own instructions back to
/// back; the core runs them around the callee's work, which may hide their
/// chain or hold them up (btree's `main` loop header, its division by a
/// constant waiting on `next_random`'s chain: 1.3-1.6x at "high" on six
/// sets, its own model of 5.9 cycles a trip blind to that chain).
fn calls_opaque(code: &FunctionCode, b: usize, callees_inline: bool) -> bool {
    let cfg = &code.cfg;
    cfg.insns[cfg.blocks[b].insns.clone()]
        .iter()
        .any(|d| crate::disasm::is_call(d) && (!callees_inline || inline_callee(code, d).is_none()))
}

/// The body of the straight-line leaf a direct call `d` reaches, which a
/// model may run inline after the call as the core runs it; None for any
/// other callee.
fn inline_callee<'c>(
    code: &'c FunctionCode,
    d: &dcpi_models::block::Decoded,
) -> Option<&'c Vec<dcpi_models::block::Decoded>> {
    crate::disasm::direct_target(d).and_then(|t| code.straight_callees.get(&t))
}

/// The iterations the analyzer asks of the model: none (`Options::iterations`
/// 0), so it stops at the exact steady state as `dcpi model` does (most
/// blocks within 10–20 iterations, and a chain-free block needs no second
/// run for its chain). Every block of a large function is modeled, so this
/// is most of `dcpi cpi`'s time: a fixed 12–100 iterations averaged over
/// their second half cost `cpi --func _PyEval_EvalFrameDefault` 62 ms of
/// modeling instead of 39 (session 24) for |ln e| within ±0.006 on every
/// recorded set.
const UNTIL_STEADY: usize = 0;

/// The hot path around a loop, from its header back to it: at each block
/// the successor inside the loop with the most samples. None if it does not
/// close within 16 blocks.
fn loop_path(code: &FunctionCode, body: &[usize], header: usize) -> Option<Vec<usize>> {
    let cfg = &code.cfg;
    let samples = |b: usize| -> u64 {
        cfg.blocks[b]
            .insns
            .clone()
            .map(|i| code.time_samples(i))
            .sum()
    };
    let mut path = vec![header];
    let mut cur = header;
    for _ in 0..16 {
        let succ: Vec<usize> = cfg
            .successors(cur)
            .map(|e| e.to)
            .filter(|t| body.binary_search(t).is_ok())
            .collect();
        let next = succ
            .iter()
            .copied()
            .filter(|t| !path.contains(t))
            .max_by_key(|&t| (samples(t), std::cmp::Reverse(t)));
        match next {
            Some(n) if !succ.contains(&header) || samples(n) > 0 => {
                path.push(n);
                cur = n;
            }
            _ if succ.contains(&header) => return Some(path),
            _ => return None,
        }
    }
    None
}

/// Fewest blocks of its loop a table dispatch must reach for
/// [`unsure_branches`] to take it for an interpreter's switch.
const DISPATCH_TARGETS: usize = 3;

/// Refetch suspects up to this share of an instruction's charged samples
/// are set aside alone, the instruction kept in its block's ratio
/// (`Analyzer::observe`). Dropping the instruction for any refetch at all
/// let one stray sample decide a block: codec's `rle_decode` run loop on
/// zen4-5k-c lost its `cmp` (1 refetch sample of 50, two thirds of the
/// block's best case) and read 3.4x its own samples' figure. The 45 tuning
/// cells 0.190 -> 0.186 (unscaled +-10 % 57.9 -> 58.3 %, scaled 71.6 ->
/// 72.3 %). Loads keep the old rule: letting them in too took btree 0.191
/// -> 0.424 (`insert_rec`'s `cmpl $0xf,(%rax)`, a miss after `find_child`,
/// counted its stall as runs).
const REFETCH_MINORITY: f64 = 0.5;

/// What may mispredict inside a loop, where a loop total can allow for it
/// ([`crate::loop_totals`]).
enum UnsureBranches {
    /// Only its exit and back edge: one mispredict per entry holds.
    LoopControl,
    /// Those, a dispatch through a table (an indirect jump to at least
    /// [`DISPATCH_TARGETS`] of the loop's blocks) and the switch's range
    /// check, or an if/else inside the body (a switch of two): a
    /// mispredict on any trip whose case differs from the last. The cases:
    /// the table's targets, the check's default arm, the if/else's arms;
    /// and whether a table jump is among them.
    Dispatch {
        cases: Vec<usize>,
        through_table: bool,
    },
}

/// The unsure branches of loop `l`; None where an indirect jump inside it
/// reaches too few of its blocks, or some outside it, to be a dispatch.
fn unsure_branches(cfg: &Cfg, l: &crate::cfg::Loop) -> Option<UnsureBranches> {
    let dispatches =
        |b: usize| cfg.last_insn(b).instr.flow_control() == iced_x86::FlowControl::IndirectBranch;
    let mut cases = Vec::new();
    let mut through_table = false;
    for &b in &l.body {
        let last = cfg.last_insn(b);
        if !crate::disasm::may_mispredict(last) {
            continue;
        }
        match last.instr.flow_control() {
            iced_x86::FlowControl::ConditionalBranch
                if cfg
                    .successors(b)
                    .any(|e| e.to == l.header || !l.contains(e.to)) => {}
            // A range check: one way the dispatch, the other a case.
            iced_x86::FlowControl::ConditionalBranch
                if cfg.successors(b).any(|e| dispatches(e.to)) =>
            {
                cases.extend(cfg.successors(b).map(|e| e.to).filter(|&t| !dispatches(t)));
            }
            // An if/else inside the body: its arms are the cases of a
            // switch of two (eventsim's heap `pop`: which child is smaller).
            iced_x86::FlowControl::ConditionalBranch
                if cfg
                    .successors(b)
                    .all(|e| l.contains(e.to) && e.to != l.header) =>
            {
                cases.extend(cfg.successors(b).map(|e| e.to));
            }
            iced_x86::FlowControl::IndirectBranch => {
                cases.extend(table_targets(cfg, l, b)?);
                through_table = true;
            }
            _ => return None,
        }
    }
    cases.sort_unstable();
    cases.dedup();
    Some(if cases.is_empty() {
        UnsureBranches::LoopControl
    } else {
        UnsureBranches::Dispatch {
            cases,
            through_table,
        }
    })
}

/// The targets of block `b`'s indirect jump where it dispatches inside
/// loop `l`: at least [`DISPATCH_TARGETS`] of them, all the loop's.
fn table_targets(cfg: &Cfg, l: &crate::cfg::Loop, b: usize) -> Option<Vec<usize>> {
    let mut to: Vec<usize> = cfg.successors(b).map(|e| e.to).collect();
    to.sort_unstable();
    to.dedup();
    (to.len() >= DISPATCH_TARGETS && to.iter().all(|&t| l.contains(t))).then_some(to)
}

/// Relative error of a table case's share of its dispatches read from the
/// refills counted at it ([`share_table_cases`]).
const CASE_SHARE_ERROR: f64 = 0.3;

/// How far apart the refills counted at a table's cases must be to say
/// the cases run unevenly: where they land within a case's code varies
/// from case to case (Golden Cove's interp, nine cases drawn evenly: the
/// counts put them at 0.65-1.31 of their runs, 1.4x apart; Zen 5's 1.3x),
/// so a spread under this leaves the even split the solve makes.
const CASE_SPREAD_EVIDENCE: f64 = 2.0;

/// The cases of each jump table in loop `l` (an indirect jump's targets)
/// that have no estimate of their own share the table's runs as the
/// refills counted at them say: a random stream of cases mispredicts into
/// case t on about the share (1 − s_t) of its runs, s_t its share of the
/// stream, so runs go as refills / (1 − s_t) (a stream the predictor
/// learns in part, as kernels' repeated interp codes, bends this:
/// datasets/skid/dispatch_learning.c). A ratio to the case with
/// the most, not an estimate: the table's total stays the rest of the
/// problem's to say (`freq` only sets the rows' scale). Only where the
/// counts are [`CASE_SPREAD_EVIDENCE`] apart; a case counted at zero is
/// left free. Without this the solve shares a table's runs out evenly
/// (bytecode's stream_vm: twelve cases, from 25 % of the stream down to
/// 1 %, each given 1/12).
fn share_table_cases(cfg: &Cfg, l: &crate::cfg::Loop, freq: &[f64], p: &mut Prepared) {
    for &b in &l.body {
        if cfg.last_insn(b).instr.flow_control() != iced_x86::FlowControl::IndirectBranch {
            continue;
        }
        let Some(mut to) = table_targets(cfg, l, b) else {
            continue;
        };
        share_default_arms(cfg, l, b, to.len(), freq, p);
        // A case with an estimate of its own keeps it to itself: tied to
        // the others it would carry its error to them all (Golden Cove's
        // interp: one case's 16 refetch samples took six down 10-35 %).
        to.retain(|&t| p.problem.estimates[t].is_none());
        if to.len() < 2 {
            continue;
        }
        let counted: Vec<f64> = to
            .iter()
            .map(|&t| {
                p.problem
                    .floors
                    .get(t)
                    .copied()
                    .flatten()
                    .map_or(0.0, |f| f.0)
            })
            .collect();
        let all: f64 = counted.iter().sum();
        let through: f64 = to.iter().map(|&t| freq[t]).sum();
        let (least, most) = counted
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(l, m), &c| (l.min(c), m.max(c)));
        if all <= 0.0 || through <= 0.0 || most < CASE_SPREAD_EVIDENCE * least {
            continue;
        }
        let runs: Vec<f64> = counted
            .iter()
            .map(|&c| c / (1.0 - (c / all).min(0.9)))
            .collect();
        let sum: f64 = runs.iter().sum();
        let Some(top) = (0..to.len()).max_by(|&i, &j| runs[i].total_cmp(&runs[j])) else {
            continue;
        };
        for (i, &t) in to.iter().enumerate().filter(|&(i, _)| i != top) {
            p.problem.shares.push(crate::flow_solve::Share {
                a: t,
                b: to[top],
                ratio: runs[i] / runs[top],
                level: through * runs[top] / sum,
                error: CASE_SHARE_ERROR,
            });
        }
        for &t in &to {
            p.guessed[t] = Some(Guess::CaseShare);
        }
    }
}

/// Relative error of a switch's default arm's runs taken as one table
/// case's ([`share_default_arms`]): a prior, not a measure.
const DEFAULT_ARM_ERROR: f64 = 0.5;

/// The default arm of the switch whose table jump ends block `dispatch`
/// (`cases` targets) in loop `l`: the other way out of a range check that
/// leads to the jump. Its code is a couple of instructions inside the
/// refetch window and its branch is often learned, so neither samples nor
/// counted refills say how often it runs; left to the solve, the ridge
/// gave it a share by the graph's shape alone (kernels' `interp`: 39 % of
/// the trips, true 24 %; bytecode's `stream_vm`: 250 M runs for 4.4 M).
/// It is tied, softly, to one case's share of the table's runs instead:
/// every way the switch goes alike, as the solve already splits the cases
/// where their refills do not say otherwise. Alone this moved the error
/// onto the loops' totals (70 recorded cells, scaled ±10 % 79.4 -> 77.8 %,
/// bytecode's mean |ln e| 0.315 -> 0.542); with the table's dearer
/// mispredicts (`Machine::table_mispredict_ratio`) 80.1 %, kernels 0.099
/// -> 0.094, bytecode's cells scaled 59-63 -> 86-89 % (its absolute level
/// worse: 0.375, stream_vm +29..+57 % throughout). interp's default arm
/// itself reads about half its runs (its 2/9 of the codes against one
/// case's 1/9). BENCHMARKS.md, session 71.
fn share_default_arms(
    cfg: &Cfg,
    l: &crate::cfg::Loop,
    dispatch: usize,
    cases: usize,
    freq: &[f64],
    p: &mut Prepared,
) {
    let n = cases as f64;
    for e in cfg.predecessors(dispatch) {
        if cfg.last_insn(e.from).instr.flow_control() != iced_x86::FlowControl::ConditionalBranch {
            continue;
        }
        for arm in cfg.successors(e.from).map(|x| x.to) {
            // The default's own code only: a `default: break` jumps to
            // the join every case reaches, which runs on every trip.
            if arm == dispatch
                || !l.contains(arm)
                || p.problem.estimates[arm].is_some()
                || cfg.predecessors(arm).any(|x| x.from != e.from)
            {
                continue;
            }
            p.problem.shares.push(crate::flow_solve::Share {
                a: arm,
                b: dispatch,
                ratio: 1.0 / n,
                level: freq[dispatch] / n,
                error: DEFAULT_ARM_ERROR,
            });
            p.guessed[arm] = Some(Guess::DefaultArm);
        }
    }
}

/// A loop's total and its header's own estimate further apart than this
/// factor: the header is a guess ([`Guess::LoopDisagrees`]). At 1.5
/// rle_decode's run loop on zen4-5k-a lost "high" at 0.97x of the truth;
/// at 2 "high" holds 26.2 % of the recorded sets' samples, 79.2 % of them
/// within ±10 % (25.5 % and 78.6 % at 1.5; 3 as 2).
const LOOP_DISAGREES: f64 = 2.0;

/// Entered (other than by a back edge) through a conditional or indirect
/// branch: its samples may include what follows a mispredict's refill.
fn after_unsure(cfg: &Cfg, b: usize) -> bool {
    cfg.predecessors(b).any(|e| {
        !cfg.is_back_edge(e.from, b) && crate::disasm::may_mispredict(cfg.last_insn(e.from))
    })
}

/// Instructions a refill covers past a mispredict's target before its
/// samples stop landing ([`in_refill_shadow`]).
const REFILL_SHADOW: usize = 4;

/// Arms that must join in a block for [`in_refill_shadow`] to see a
/// dispatch: an if/else's two arms are left to [`after_unsure`] alone.
const SHADOW_JOIN: usize = 3;

/// A join of at least [`SHADOW_JOIN`] short arms (at most
/// [`REFILL_SHADOW`] instructions each, entered after an unsure branch and
/// leaving by a jump or falling through), at least half of the arms that
/// meet there: a switch's cases meeting again (bytecode's stream_vm has
/// one case of five instructions among twelve). A mispredict into any arm
/// refills the arm and runs on
/// into the join, whose samples then hold the refill's aftermath as the
/// arm's do. kernels' interpreter on Zen: its loop latch, one or three
/// instructions past each mispredicted dispatch target, read +80..+217 %
/// at high confidence (the header with it); now low, as its cases are.
/// Mean |ln e| over the six sets unchanged (0.306); "high" within ±10 %
/// 73.8 -> 77.0 % of its samples. Through any short block (an if/else's
/// two arms too) codec's and msort's sound blocks lost "high": 0.312.
fn in_refill_shadow(cfg: &Cfg, b: usize) -> bool {
    let arms: Vec<usize> = cfg
        .predecessors(b)
        .map(|e| e.from)
        .filter(|&a| !cfg.is_padding(a) && !cfg.is_back_edge(a, b))
        .collect();
    let short = arms
        .iter()
        .filter(|&&a| {
            let arm = &cfg.blocks[a];
            after_unsure(cfg, a)
                && arm.insns.len() <= REFILL_SHADOW
                && !crate::disasm::may_mispredict(cfg.last_insn(a))
        })
        .count();
    short >= SHADOW_JOIN && 2 * short >= arms.len()
}

/// Whether refills land in block `b` about once per run that is not a
/// jump's: every predecessor leaves a loop `b` is not in through a
/// conditional branch, or jumps to it through a table (a dispatch, where
/// each entry that was not predicted costs one refill), or is a direct
/// jump (which never mispredicts, so refetch samples at `b` are the
/// exits'), at least one of them a mispredictable exit. codec's
/// `rle_encode` leaves its run loop into a block the run-of-255 path also
/// jumps to: without its refills counted, the 505 samples of the refill's
/// aftermath there said 56.8 M exits for 12.3 M (+293 % on every Zen 4
/// set).
fn refill_target(cfg: &Cfg, b: usize) -> bool {
    let preds: Vec<usize> = cfg
        .predecessors(b)
        .map(|e| e.from)
        .filter(|&p| !cfg.is_padding(p))
        .collect();
    let last = |p: usize| cfg.last_insn(p);
    let mispredicted_into = |p: usize| {
        crate::disasm::may_mispredict(last(p))
            && (cfg.leaves_loop(p, b)
                || last(p).instr.flow_control() == iced_x86::FlowControl::IndirectBranch)
    };
    preds.iter().any(|&p| mispredicted_into(p))
        && preds.iter().all(|&p| {
            mispredicted_into(p)
                || last(p).instr.flow_control() == iced_x86::FlowControl::UnconditionalBranch
        })
}

/// Where loop `l`'s entries are impossible (one refill each would take
/// more than all its cycles), the blocks it exits to whose estimates say
/// more runs than the refills counted in them (their floors) take the
/// counted refills instead: such an estimate rests on a refill's
/// aftermath, and the entries were guessed from it. codec's `rle_encode`
/// on Zen 4: its exit block's 505 clean samples past 977 of refetch said
/// 56.8 M runs (12.3 M true), 2.5x the refills its run loop's 2,104
/// samples could hold; its 10.6 M counted refills are -14 %, and the loop
/// gets its total back. Only where the entries cannot be (beyond
/// [`overfilled`]'s margin): eventsim's `push`, barely overfilled, leaves
/// its sift-up loop by a mostly predicted exit, and its refills say 6 M
/// of 80 M.
fn exits_at_their_refills(cfg: &Cfg, l: &crate::cfg::Loop, p: &mut Prepared) {
    for x in cfg.loop_exits(l) {
        let Some((n, _)) = p.problem.floors[x] else {
            continue;
        };
        for &b in &cfg.classes[cfg.class_of[x]] {
            if p.problem.estimates[b].is_some_and(|(e, _)| e > n) {
                p.problem.estimates[b] = Some((n, EXIT_REFETCH_ERROR * n));
                if let Some(u) = p.problem.upper.get_mut(b) {
                    *u = false;
                }
            }
        }
    }
}

/// Whether every way into block `b` (but back edges) is a short block
/// that loop `l` leaves into through a branch that may mispredict: the
/// refill after the loop's exit runs on into `b`, whose samples then hold
/// its aftermath (kernels' `isort`: the outer loop's latch, two and three
/// instructions past the inner loop's two exits).
fn in_exit_shadow(cfg: &Cfg, l: &crate::cfg::Loop, b: usize) -> bool {
    let mut arms = cfg
        .predecessors(b)
        .map(|e| e.from)
        .filter(|&a| !cfg.is_padding(a) && !cfg.is_back_edge(a, b))
        .peekable();
    arms.peek().is_some()
        && arms.all(|a| {
            !l.contains(a)
                && cfg.blocks[a].insns.len() <= REFILL_SHADOW
                && !crate::disasm::may_mispredict(cfg.last_insn(a))
                && cfg.predecessors(a).all(|e| {
                    cfg.is_padding(e.from)
                        || (l.contains(e.from)
                            && crate::disasm::may_mispredict(cfg.last_insn(e.from)))
                })
        })
}

/// The refills counted at loop `l`'s exits (the sum of their floors), if any.
fn exit_refills(cfg: &Cfg, l: &crate::cfg::Loop, p: &Prepared) -> Option<f64> {
    let counted: f64 = cfg
        .loop_exits(l)
        .into_iter()
        .filter_map(|x| p.problem.floors[x].map(|f| f.0))
        .sum();
    (counted > 0.0).then_some(counted)
}

/// Below this share of a loop's entries, the refills counted at its exits
/// say its exits were mostly predicted, not that the entries are wrong (a
/// guard: on the recorded sets the counted refills were 0.15-0.32 of the
/// entries they replaced; bmh_search's predicted exits 0.004).
const PREDICTED_EXITS: f64 = 0.1;

/// Below this share of a loop's impossible entries ([`impossible_entries`]),
/// the refills counted at its exits do not stand for its entries in its
/// total: its exits were mostly predicted, and the total at those few
/// refills is nearly all its cycles at its best case. msort's copy loops
/// (1.2 trips an entry, 0.2 M refills counted for 2.7 M true entries)
/// count 0.11-0.14 of theirs and went 3-4x where the middle of their
/// bounds is 1.4-1.8x; codec's rle_encode counts 0.22-0.32 of its own
/// (a mispredicted exit at every run's end).
const REFILLED_EXITS: f64 = 0.15;

/// The classes leading into loop `l` that hold a block in its exits'
/// shadow ([`in_exit_shadow`]) take the refills counted at its exits where
/// those are fewer than its `entries`: their estimates rest on the exits'
/// aftermath, and the entries were read off them. The entries then are
/// those refills (returned, for the loop's total). kernels' `isort`: its
/// outer latch's 33 clean samples on Zen 4 said 4.6 M runs (1.0 M true,
/// +448 %; overfilled, its inner loop's total between bounds at -58 %),
/// the refills at the inner loop's exits 0.81 M; now -19 % and -11 %, and
/// within -19..+20 % on the other Zen sets. The 45 tuning cells 0.198 ->
/// 0.193 (kernels only), search 0.386 -> 0.335 (its insertion sort).
/// Only through the shadow: an exit the predictor learned pays no refill,
/// and where the exit block itself was taken for the entries (msort's
/// copy loops, about a trip an entry; bmh_search's compare loop, 0.25 M
/// refills counted for 59 M entries) msort lost 0.006 on every set and
/// search's bmh_search went +105 % -> +409 %.
fn entries_at_exit_refills(
    cfg: &Cfg,
    l: &crate::cfg::Loop,
    p: &mut Prepared,
    entries: f64,
) -> Option<f64> {
    let counted =
        exit_refills(cfg, l, p).filter(|&c| c < entries && c >= PREDICTED_EXITS * entries)?;
    let mut shadowed = false;
    let entering: Vec<usize> = cfg
        .predecessors(l.header)
        .map(|e| e.from)
        .filter(|&b| !l.contains(b))
        .collect();
    for e in entering {
        let class = &cfg.classes[cfg.class_of[e]];
        if !class.iter().any(|&b| in_exit_shadow(cfg, l, b)) {
            continue;
        }
        shadowed = true;
        for &b in class {
            if p.problem.estimates[b].is_some_and(|(est, _)| est > counted) {
                p.problem.estimates[b] = Some((counted, EXIT_REFETCH_ERROR * counted));
                p.guess(b, Guess::ExitRefills);
            }
        }
    }
    shadowed.then_some(counted)
}

/// Loop `l`'s entries where the refills counted at its exits
/// ([`exit_refills`]) are more than the solved `entries`: a loop is left
/// once per entry, so every mispredicted exit counted is an entry. The
/// blocks leading only into the loop that have no estimate of their own
/// get the count as their floor, so the solve's entries agree with the
/// total's. A target that other mispredicted branches lead to counts
/// their refills too (codec's rle_decode latch, also its header's
/// zero-length-run branch's target, never taken there). Where the
/// blocks leading in are short and sampleless the solve leaves the
/// entries free: codec's rle_decode run loop took 3.8-4.7 M entries on
/// zen3 for 49 M (its exit's refills 47 M), charged a tenth of the
/// refills and read 1.29x at high; hashtab's `contains` probe loop 0.89x
/// on zen4 (1.2e7 entries solved, 1.67e7 refills counted at its two
/// exits, 1.57e7 true). 55 tuning cells: mean |ln e| 0.173 -> 0.163
/// (hashtab 0.382 -> 0.338, codec 0.086 -> 0.079), within ±10 % unscaled
/// 61.5 -> 62.3 %, "high" 78.9 -> 83.2 % of its samples; scaled 74.9 ->
/// 73.6 % (hashtab on zen4, zen4-5k-a, -f and -h 55-61 -> 28-31 %):
/// hashtab's contains blocks, now exact (1.00, 1.00, 1.02 on zen4), sit
/// 1.2x off the scale its leaves' low estimates (hash 0.72x, next_key
/// 0.66x, contains' entry 0.83x) fit. The held-out workloads
/// unchanged (textproc 0.256 -> 0.257).
fn entries_at_least_exit_refills(
    cfg: &Cfg,
    l: &crate::cfg::Loop,
    p: &mut Prepared,
    entries: f64,
) -> f64 {
    let Some(counted) = exit_refills(cfg, l, p).filter(|&c| c > entries) else {
        return entries;
    };
    for e in cfg.predecessors(l.header).filter(|e| !l.contains(e.from)) {
        if !cfg.successors(e.from).all(|s| s.to == l.header) {
            continue;
        }
        for &b in &cfg.classes[cfg.class_of[e.from]] {
            if p.problem.floors[b].is_none() && p.problem.estimates[b].is_none() {
                p.problem.floors[b] = Some((counted, EXIT_REFETCH_ERROR * counted));
            }
        }
    }
    counted
}

/// How often a case of loop `l`'s switch ran as one, at block frequencies
/// `freq`: its runs less those that came through another block of the
/// loop leading only to it. An `if` without an `else` has its join for
/// the other way, and the join also runs after the arm: counted whole,
/// numeric's BFS visited test (the arm 17 % of the trips) read as a coin
/// toss, 0.5 refills a trip that the 1.2e7 refills counted at its cases
/// could not bear out, so its edge loop had no total and fell to its
/// arm's count (-85 % on every set; now +89..+132 %: its samples are
/// mostly a missing load's, counted as trips). numeric 0.788 -> 0.528;
/// no other recorded workload moves.
fn runs_into_case(cfg: &Cfg, l: &crate::cfg::Loop, t: usize, freq: &[f64]) -> f64 {
    let through: f64 = cfg
        .predecessors(t)
        .filter(|e| {
            l.contains(e.from)
                && !cfg.is_back_edge(e.from, t)
                && cfg.successors(e.from).count() == 1
        })
        .map(|e| freq[e.from])
        .sum();
    (freq[t] - through).max(0.0)
}

/// Whether no other loop's header lies inside loop `l`.
fn is_innermost(cfg: &crate::cfg::Cfg, l: &crate::cfg::Loop) -> bool {
    cfg.loops
        .iter()
        .all(|o| std::ptr::eq(o, l) || l.body.binary_search(&o.header).is_err())
}

/// How many times loop `l` was entered at frequencies `freq`: what its
/// back edges do not bring to the header (their blocks may also leave, so
/// this can undercount), or at least what the single-way blocks outside
/// the loop feed it.
fn loop_entries(cfg: &crate::cfg::Cfg, l: &crate::cfg::Loop, freq: &[f64]) -> f64 {
    let h = l.header;
    let back: f64 = cfg
        .predecessors(h)
        .filter(|e| cfg.is_back_edge(e.from, h))
        .map(|e| freq[e.from])
        .sum();
    let fed: f64 = cfg
        .predecessors(h)
        .filter(|e| !l.contains(e.from) && cfg.successors(e.from).count() == 1)
        .map(|e| freq[e.from])
        .sum();
    (freq[h] - back).max(fed)
}

/// The flow into loop `l` from outside under block frequencies `freq`,
/// where every block leading in goes only into the loop (its frequency is
/// then that edge's flow) and the header is not the function's entry.
fn entries_into(cfg: &crate::cfg::Cfg, l: &crate::cfg::Loop, freq: &[f64]) -> Option<f64> {
    if l.header == 0 {
        return None;
    }
    let mut sum = 0.0;
    for e in cfg.predecessors(l.header).filter(|e| !l.contains(e.from)) {
        if cfg.is_padding(e.from) {
            continue;
        }
        if cfg.successors(e.from).any(|s| s.to != l.header) {
            return None;
        }
        sum += freq[e.from];
    }
    Some(sum)
}

/// How far a block's share of its loop path's cycles may move from the
/// share its own model gives it, as a factor either way (see
/// [`model_loop_paths`]). Mean |ln e| over the 45 recorded cells: 0.278
/// with the blocks' own shares; 0.269 at 1.5, 0.263 at 1.75 (msort 0.252
/// -> 0.227, btree 0.303 -> 0.252; textproc 0.421 -> 0.275 and numeric
/// 0.844 -> 0.788, better on every set; eventsim 0.298 -> 0.344, worse on
/// four of seven), 0.261 at 2 (but Golden Cove's hashtab loses its `contains`
/// probe block from ±10 %); without a bound btree's find_index loop took its
/// whole cycle on the load's compare: btree 0.57.
const PATH_SHARE_LIMIT: f64 = 1.75;

/// Blocks on an innermost loop's hot path are modeled together, as the
/// loop runs them (overlapping one block with the next), instead of alone.
fn model_loop_paths(code: &FunctionCode, machine: &Machine, models: &mut [BlockModel]) {
    let cfg = &code.cfg;
    let mut done = vec![false; cfg.blocks.len()];
    let mut loops: Vec<&crate::cfg::Loop> = cfg.loops.iter().collect();
    loops.sort_by_key(|l| l.body.len());
    for l in loops {
        // Only an innermost loop: a path through an inner loop's blocks
        // would rescale them as if they ran once per outer iteration (the
        // j loop around matmul's k loop took the k loop to 2.70 cycles
        // from its own 3.00, and its frequency 13% too high).
        if !is_innermost(cfg, l) {
            continue;
        }
        let Some(path) = loop_path(code, &l.body, l.header) else {
            continue;
        };
        if path.len() < 2 || path.iter().any(|&b| done[b]) {
            continue;
        }
        // The path's instructions, each straight-line leaf callee's body
        // after its call (as the core runs them); `own[k]`: instruction k
        // is the path's own, not a callee's. A call to anything else leaves
        // the path's cycles shared as the blocks' own models share them:
        // its model would run the call and return back to back.
        let mut insns: Vec<dcpi_models::block::Decoded> = Vec::new();
        let mut own: Vec<bool> = Vec::new();
        let mut opaque_call = false;
        for &b in &path {
            for d in &cfg.insns[cfg.blocks[b].insns.clone()] {
                insns.push(d.clone());
                own.push(true);
                if !crate::disasm::is_call(d) {
                    continue;
                }
                match inline_callee(code, d) {
                    Some(body) => {
                        insns.extend(body.iter().cloned());
                        own.extend(std::iter::repeat_n(false, body.len()));
                    }
                    _ => opaque_call = true,
                }
            }
        }
        if insns.len() > 400 || insns.iter().any(crate::disasm::is_bad) {
            continue;
        }
        let a = analyze(
            machine,
            &insns,
            Options {
                mode: RepeatMode::Loop,
                iterations: UNTIL_STEADY,
            },
        );
        // The path's cycles shared between its blocks as the path model
        // shares them (its cycles at the head of the window in each block:
        // a long-latency instruction's wait shows in the block that
        // consumes it), but within a factor of `PATH_SHARE_LIMIT` of the
        // share the blocks' own models give: per-instruction heads inside
        // a path are uneven, one block can hold all of them (btree's
        // find_index loop put its whole cycle on the load's compare and
        // none on the block its samples land in).
        let alone: f64 = path.iter().map(|&b| models[b].cycles).sum();
        // The path's own cycles: its instructions' heads, not its callees'
        // (theirs are the callees' samples).
        let own_heads: Vec<f64> = a
            .insns
            .iter()
            .zip(&own)
            .filter(|(_, &o)| o)
            .map(|(t, _)| t.head_cycles)
            .collect();
        let cycles: f64 = own_heads.iter().sum();
        if alone <= 0.0 || cycles <= 0.0 {
            continue;
        }
        let factor = cycles / alone;
        let limit = if opaque_call { 1.0 } else { PATH_SHARE_LIMIT };
        let mut heads = own_heads.iter();
        let shares: Vec<f64> = path
            .iter()
            .map(|&b| {
                let h: f64 = heads.by_ref().take(cfg.blocks[b].insns.len()).sum();
                let own = models[b].cycles * factor;
                h.clamp(own / limit, own * limit)
            })
            .collect();
        let total: f64 = shares.iter().sum();
        if total <= 0.0 {
            continue;
        }
        for (&b, share) in path.iter().zip(shares) {
            let m = &mut models[b];
            let factor = if m.cycles > 0.0 {
                share * cycles / total / m.cycles
            } else {
                factor
            };
            m.cycles *= factor;
            m.low *= factor;
            for h in &mut m.head {
                *h *= factor;
            }
            m.bottleneck = format!("{} (in loop path {path:?}: {})", m.bottleneck, a.bottleneck);
            m.callees_inline = !opaque_call;
            m.carried = chain_bound(&a);
            done[b] = true;
        }
    }
}

/// Why a block of a short loop bound by a carried chain is unsure.
const OVERLAPPING_ENTRIES: &str = "its loop carries a chain over few trips an entry: the next entry's trips may overlap them, and a trip take less than its chain";

/// A block's largest throughput bound: dispatch, ports, front end (bytes,
/// taken branches); its chain left out. Not its fetch lines (`Bounds::
/// fetch_lines`, which the model counts for a block ending in a taken jump
/// as if it came back to itself): taken in, no tuning cell moved and the
/// held-out workload's mean went 0.621 -> 0.632 (session 41).
fn throughput_bound(b: &dcpi_models::schedule::Bounds) -> f64 {
    b.dispatch
        .max(b.ports)
        .max(b.front_end)
        .max(b.taken_branches)
}

/// Whether a loop's model runs at a chain its iterations carry, its
/// throughput well below.
fn chain_bound(a: &dcpi_models::schedule::Analysis) -> bool {
    let cycles = a.cycles_per_iteration;
    cycles > 0.0
        && a.bounds.dependency_chain >= 0.9 * cycles
        && throughput_bound(&a.bounds) < 0.75 * cycles
}

/// A busy SMT sibling on the host takes `1 - share` of the core's issue
/// slots (`share`: the run's throughput probe, `EventInfo::core_share`):
/// a block's best case is at least its throughput bound over `share`. A
/// block bound by its chain keeps its cycles until the slowed throughput
/// passes them (latency-bound code runs at its usual speed beside the
/// sibling). A straight block's throughput figure (`low`, the top of its
/// range) stays: raised too, hashtab's leaves, already low, read lower
/// still (zen4-5k-e 0.411 -> 0.448, scaled +-10 % over all cells 72.6 ->
/// 71.8 %).
/// A leaf whose callers never wait on its result runs at its throughput
/// (`low`), its chain under their older work (`leaf_result_unwaited`).
/// Before [`shared_core`]: throughput-bound, it slows on a shared core as
/// loops do. hashtab's calls on the four busy-hour Zen 4 sets (core shares
/// 0.82-0.92) read 0.99-1.01x on three, 0.82x on zen4-5k-e (the busiest,
/// 1.00x unslowed); the 55 cells' unscaled ±10 % 65.4 % unslowed, 66.7 %
/// slowed.
fn at_throughput(m: &mut BlockModel) {
    let low = m.low;
    if low > 0.0 && low < m.cycles {
        let factor = low / m.cycles;
        for h in &mut m.head {
            *h *= factor;
        }
        m.cycles = low;
        m.throughput_share = 1.0;
        m.bottleneck = format!(
            "throughput ({low:.2} cycles): its callers never wait on its result, its chain runs under their work"
        );
    }
}

fn shared_core(models: &mut [BlockModel], share: f64) {
    for m in models {
        if m.cycles <= 0.0 {
            continue;
        }
        let slowed = m.cycles * m.throughput_share / share;
        let cycles = m.cycles.max(slowed);
        let factor = cycles / m.cycles;
        if m.low >= m.cycles {
            m.low = cycles;
        }
        m.throughput_share /= factor;
        m.slowdown *= factor;
        m.cycles = cycles;
        for h in &mut m.head {
            *h *= factor;
        }
    }
}

/// One-letter codes of static stall reasons.
pub fn stall_mark(s: &Stall) -> char {
    match s {
        Stall::Dependency {
            loop_carried: true, ..
        } => 'c',
        Stall::Dependency { .. } => 'd',
        Stall::StoreForward { .. } | Stall::StoreForwardFailed { .. } => 'm',
        Stall::PortContention { .. } => 'p',
        Stall::UnitBusy { .. } => 'u',
        Stall::DispatchWidth | Stall::VectorDispatch { .. } => 'w',
        Stall::RobFull | Stall::SchedulerFull { .. } => 'r',
        Stall::FrontEnd { .. }
        | Stall::TakenBranch { .. }
        | Stall::FetchLine { .. }
        | Stall::DenseCode { .. }
        | Stall::OpCache { .. } => 'f',
        Stall::RetireWidth { .. } => 't',
        Stall::StoreCommit { .. } | Stall::NarrowStoreCommit { .. } | Stall::MemoryWrite { .. } => {
            's'
        }
    }
}

/// Per instruction: whether it is a conditional branch macro-fused with the
/// compare before it (the pair is one µop: its samples belong to the compare).
fn fused_branches(code: &FunctionCode, machine: &Machine) -> Vec<bool> {
    let insns = &code.cfg.insns;
    let mut out = vec![false; insns.len()];
    if !machine.macro_fusion {
        return out;
    }
    let mut info = iced_x86::InstructionInfoFactory::new();
    for blk in &code.cfg.blocks {
        for i in blk.insns.start + 1..blk.insns.end {
            if insns[i].instr.flow_control() == iced_x86::FlowControl::ConditionalBranch
                && !crate::disasm::is_bad(&insns[i - 1])
                && shape(&insns[i - 1].instr, &mut info).fusible
            {
                out[i] = true;
            }
        }
    }
    out
}

/// How much of its share of a block's first samples a predecessor ending in
/// an instruction done at rename keeps: the oldest unretired instruction is
/// one the pipeline waits on, which such an instruction is only while the
/// front end starves (an outer loop's nop before an inner loop's header
/// took half of the header's samples and ran as often as the inner loop).
const INSTANT_WEIGHT: f64 = 0.05;

/// Per instruction: done at rename, nothing to wait for (a nop, a zeroing
/// idiom, an eliminated move). Direct jumps are left out although they wait
/// for nothing either: weighing them down cost btree most of its accuracy
/// (a jump's target is where a taken-branch fetch bubble shows).
fn done_at_rename(code: &FunctionCode, machine: &Machine) -> Vec<bool> {
    let mut info = iced_x86::InstructionInfoFactory::new();
    code.cfg
        .insns
        .iter()
        .map(|d| {
            if crate::disasm::is_bad(d) {
                return false;
            }
            let s = shape(&d.instr, &mut info);
            (s.class == "nop" && s.load.is_none() && s.store.is_none())
                || s.zero_idiom
                || machine.eliminates_move(&s)
        })
        .collect()
}

/// The skid correction: each instruction is charged the samples (and
/// cycles) that landed on the next one; a fused branch passes its charge to
/// its compare; a block's first samples go to its predecessors' last
/// instructions in proportion to their frequencies.
fn charge_responsible(
    code: &FunctionCode,
    block_of: &[usize],
    fused: &[bool],
    instant: &[bool],
    loads: &[bool],
    freq: Option<&[f64]>,
    refill_samples: Option<f64>,
) -> Charges {
    let cfg = &code.cfg;
    let ni = cfg.insns.len();
    let mut charged = vec![0.0f64; ni];
    let mut cycles = vec![0.0f64; ni];
    let mut external = vec![0.0f64; ni];
    let mut refetch = vec![0.0f64; ni];
    // Per block: refetch-suspect samples that landed in it.
    let mut refetch_in = vec![0.0f64; cfg.blocks.len()];
    // Per instruction: the part of its charge split to it from a later
    // block's first samples among several predecessors.
    let mut split = vec![0.0f64; ni];
    let unsure = |last: usize| crate::disasm::may_mispredict(&cfg.insns[last]);
    let reads_memory = |i: usize| crate::culprits::reads_memory(&cfg.insns[i]).is_some();
    let after_unsure_branch: Vec<bool> = (0..cfg.blocks.len())
        .map(|b| {
            cfg.predecessors(b)
                .any(|e| unsure(cfg.blocks[e.from].insns.end - 1))
        })
        .collect();
    // A loop's back edge mispredicts about once per time the loop is left,
    // so once frequencies are known, the refetch a header can owe to its
    // back edges is bounded: its entries times one refill. A one-cycle loop
    // whose samples all land one past its header (Zen 4, cpu-clock) is
    // then seen running, not refetching. Not when the header starts with a
    // load that can miss: the samples one past it are as likely its
    // consumer waiting (msort's copy loop: 451 samples on the store after
    // the load, twice its other instructions' share).
    let mut refetch_room: Vec<Option<f64>> = (0..cfg.blocks.len())
        .map(|b| {
            let f = freq?;
            let per = refill_samples?;
            if loads[cfg.blocks[b].insns.start] {
                return None;
            }
            let mut entries = f[b];
            for e in cfg.predecessors(b) {
                if cfg.is_back_edge(e.from, b) {
                    entries -= f[e.from];
                } else if unsure(cfg.blocks[e.from].insns.end - 1) {
                    return None;
                }
            }
            let back = cfg.predecessors(b).any(|e| cfg.is_back_edge(e.from, b));
            back.then_some(entries.max(0.0) * per)
        })
        .collect();
    // A mispredict's refetch lands one past the branch target
    // (datasets/skid): samples charged to a target (a block's first
    // instruction after a conditional or indirect branch) from the
    // instruction executed after it may be the branch's, not the target's.
    // After a data-dependent branch inside a loop (an if/else in its body,
    // not the loop's own back edge or exit, which mispredict about once per
    // loop) the refill is spread wider: one more instruction of the target
    // is suspect, unless it is a load (a load's samples are its own miss).
    let after_unsure_forward: Vec<bool> = (0..cfg.blocks.len())
        .map(|b| {
            cfg.predecessors(b).any(|e| {
                !cfg.is_back_edge(e.from, b)
                    && !cfg.leaves_loop(e.from, b)
                    && unsure(cfg.blocks[e.from].insns.end - 1)
            })
        })
        .collect();
    let refetch_landing = |to: usize| {
        let b = block_of[to];
        let start = cfg.blocks[b].insns.start;
        (to == start && after_unsure_branch[b])
            || (to == start + 1
                && to + 1 < cfg.blocks[b].insns.end
                && after_unsure_forward[b]
                && !reads_memory(start)
                && !reads_memory(start + 1))
    };
    let padding: Vec<bool> = (0..cfg.blocks.len()).map(|b| cfg.is_padding(b)).collect();
    let mut give = |to: usize, s: f64, c: f64| -> usize {
        let to = if fused[to] { to - 1 } else { to };
        charged[to] += s;
        cycles[to] += c;
        to
    };
    // Samples on a return address are the callee's (charged to its `ret`).
    for (i, &(s, c)) in code.from_returns.iter().enumerate() {
        if s > 0.0 {
            give(i, s, c);
        }
    }
    for i in 0..ni {
        let s = code.time_samples(i) as f64;
        let cyc = code.cycles[i];
        if s == 0.0 || code.return_site[i] {
            continue;
        }
        let b = block_of[i];
        if i > cfg.blocks[b].insns.start {
            // An instruction done at rename is never the oldest for long:
            // the one waiting is the nearest earlier one that is not.
            let start = cfg.blocks[b].insns.start;
            let mut resp = i - 1;
            while resp > start && instant[resp] {
                resp -= 1;
            }
            if instant[resp] {
                resp = i - 1;
            }
            let to = give(resp, s, cyc);
            if refetch_landing(resp) {
                let owed = match &mut refetch_room[b] {
                    Some(room) => {
                        let owed = s.min(*room);
                        *room -= owed;
                        owed
                    }
                    None => s,
                };
                external[to] += owed;
                refetch[to] += owed;
                refetch_in[b] += owed;
            }
            continue;
        }
        let preds: Vec<usize> = cfg
            .predecessors(b)
            .map(|e| e.from)
            .filter(|&p| !padding[p])
            .collect();
        let runs: Vec<f64> = preds.iter().map(|&p| freq.map_or(1.0, |f| f[p])).collect();
        let own_entry = freq.map_or(0.0, |f| (f[b] - runs.iter().sum::<f64>()).max(0.0));
        // The pipeline hardly waits on an instruction done at rename.
        let weights: Vec<f64> = preds
            .iter()
            .zip(&runs)
            .map(|(&p, r)| {
                let last = cfg.blocks[p].insns.end - 1;
                let last = if fused[last] { last - 1 } else { last };
                if instant[last] {
                    r * INSTANT_WEIGHT
                } else {
                    *r
                }
            })
            .collect();
        let whole = weights.iter().sum::<f64>() + own_entry;
        if preds.is_empty() || whole <= 0.0 {
            give(i, s, cyc);
            // Caused before the function was entered (the caller's call).
            external[i] += s;
            continue;
        }
        for (p, w) in preds.iter().zip(&weights) {
            let last = cfg.blocks[*p].insns.end - 1;
            let to = give(last, s * w / whole, cyc * w / whole);
            // After a conditional or indirect branch these samples may be a
            // mispredict's refetch (DCPI's rule): charged to the branch for
            // the views, left out of the frequency estimate. So may those
            // one past a one-instruction branch target.
            if unsure(last) || refetch_landing(last) {
                external[to] += s * w / whole;
                refetch[to] += s * w / whole;
                if unsure(last) {
                    refetch_in[b] += s * w / whole;
                }
            } else if preds.len() > 1 {
                split[to] += s * w / whole;
            }
        }
        if own_entry > 0.0 {
            give(i, s * own_entry / whole, cyc * own_entry / whole);
            external[i] += s * own_entry / whole;
        }
    }
    Charges {
        samples: charged,
        cycles,
        external,
        refetch,
        refetch_in,
        split,
        refetch_bounded: refetch_room.iter().map(|r| r.is_some()).collect(),
    }
}

/// Samples and cycles charged to each instruction; `external` is the part
/// that says nothing of its frequency: caused outside the function (samples
/// on its entry after a call) or possibly a mispredict's refetch.
struct Charges {
    samples: Vec<f64>,
    cycles: Vec<f64>,
    external: Vec<f64>,
    /// The part of `external` that may be a mispredict's refetch.
    refetch: Vec<f64>,
    /// Per block, the refetch-suspect samples that landed in it.
    refetch_in: Vec<f64>,
    /// Per instruction: charged from a later block's first samples split
    /// among several predecessors (by the frequencies being estimated).
    split: Vec<f64>,
    /// Per block: a loop header whose refetch from its back edges is
    /// bounded by its entries (whether the bound bit or not).
    refetch_bounded: Vec<bool>,
}

/// The share of a block's clean samples split to it from a successor
/// above which its estimate is a guess.
const GUESSED_SHARE: f64 = 0.9;

/// How far (a share of the larger) a block's frequency may move between
/// the two passes and still count as settled.
const UNSTABLE: f64 = 0.5;

/// Whether the samples an instruction causes land inside the function, so
/// its charge can be seen: not a call (its samples land in the callee, and
/// the callee's return lands on the instruction after it), not an
/// instruction that leaves the function.
fn observable(code: &FunctionCode) -> Vec<bool> {
    use crate::cfg::Exit;
    let mut v: Vec<bool> = code
        .cfg
        .insns
        .iter()
        .map(|d| !crate::disasm::is_bad(d) && !crate::disasm::is_call(d))
        .collect();
    for b in &code.cfg.blocks {
        if matches!(
            b.exit,
            Some(Exit::Return | Exit::TailCall(_) | Exit::NoReturnCall(_) | Exit::IndirectJump)
        ) {
            v[b.insns.end - 1] = false;
        }
    }
    v
}

/// The CPI analysis of a function on its own samples (without the
/// functions it is linked to: see [`crate::image_cpi`]).
pub fn analyze_function(code: &FunctionCode, machine: &Machine) -> CpiReport {
    let a = FunctionAnalysis::new(code, machine);
    let freqs = a.frequencies();
    a.report(freqs, None)
}

/// One function's analysis up to its frequencies: the blocks' best-case
/// models, what the skid correction needs, and the observations its samples
/// give; [`FunctionAnalysis::report`] turns frequencies into the report.
pub struct FunctionAnalysis<'a> {
    code: &'a FunctionCode,
    machine: &'a Machine,
    models: Vec<BlockModel>,
    block_of: Vec<usize>,
    fused: Vec<bool>,
    instant: Vec<bool>,
    seen: Vec<bool>,
    /// Loads that can miss: memory reads not from the stack (which stays in L1).
    loads: Vec<bool>,
    cps: Option<f64>,
    warnings: Vec<String>,
    /// Pass 1's frequencies, once computed.
    first: std::sync::OnceLock<Option<Vec<f64>>>,
}

impl<'a> FunctionAnalysis<'a> {
    pub fn new(code: &'a FunctionCode, machine: &'a Machine) -> Self {
        let cfg = &code.cfg;
        let nb = cfg.blocks.len();
        let ni = cfg.insns.len();
        let mut warnings = Vec::new();
        let mut models: Vec<BlockModel> = {
            use rayon::prelude::*;
            (0..nb)
                .into_par_iter()
                .map(|b| model_block(code, b, machine))
                .collect()
        };
        model_loop_paths(code, machine, &mut models);
        let time = code.time_event;
        // A busy SMT sibling on the host slows throughput-bound code per
        // cycle (the run's probe measured by how much); the best cases of
        // such blocks are taken at that share, or their frequencies read
        // high (the whole-recording scale of 0.75-0.9 on this project's
        // Zen 4 guest in busy hours). Latency-bound code keeps its own.
        let share = time
            .and_then(|t| code.events[t].core_share)
            .filter(|s| (MIN_CORE_SHARE..IDLE_CORE_SHARE).contains(s));
        if leaf_result_unwaited(code) {
            at_throughput(&mut models[0]);
        }
        if let Some(share) = share {
            shared_core(&mut models, share);
        }
        let cps = time.and_then(|t| code.events[t].cycles_per_sample);
        if time.is_none() {
            warnings.push(
                "no time event (cpu-clock, task-clock, cycles) was sampled: frequencies and CPI need one"
                    .into(),
            );
        } else if cps.is_none() {
            warnings.push("the run recorded no core clock: samples cannot become cycles".into());
        }
        if let Some(share) = share.filter(|s| *s < SHARED_CORE) {
            warnings.push(format!(
                "the command had {:.0} % of an idle core (a busy SMT sibling on the host, or a lower clock): best cases of throughput-bound blocks are taken at that share; what the sibling cost latency-bound code reads as dynamic stalls",
                100.0 * share
            ));
        }
        if code.misaligned_samples > 0 {
            warnings.push(format!(
                "{} samples fall inside {} but not on an instruction start (code that is not what the disassembly shows?)",
                code.misaligned_samples, code.function.name
            ));
        }
        let mut block_of = vec![0; ni];
        for (b, blk) in cfg.blocks.iter().enumerate() {
            for i in blk.insns.clone() {
                block_of[i] = b;
            }
        }
        // Loads that can miss: not from the stack, a fixed address or a
        // small static table (those stay in L1 while the code is hot).
        let loads = cfg
            .insns
            .iter()
            .zip(&code.resident_loads)
            .map(|(d, &resident)| {
                !resident
                    && crate::culprits::reads_memory(d)
                        .is_some_and(|base| base != iced_x86::Register::RSP)
            })
            .collect();
        FunctionAnalysis {
            code,
            machine,
            models,
            block_of,
            fused: fused_branches(code, machine),
            instant: done_at_rename(code, machine),
            seen: observable(code),
            loads,
            cps,
            warnings,
            first: std::sync::OnceLock::new(),
        }
    }

    pub fn code(&self) -> &FunctionCode {
        self.code
    }

    /// Best-case cycles a sample-less class must fill to say it ran
    /// rarely, on this machine ([`crate::frequency::zero_evidence_cycles`]).
    fn zero_evidence(&self) -> f64 {
        crate::frequency::zero_evidence_cycles(self.machine.dispatch_width)
    }

    /// Samples charged to the instructions responsible, splitting a block's
    /// first samples between its predecessors by `freq` (evenly without).
    fn charge(&self, freq: Option<&[f64]>) -> Charges {
        // Samples one mispredict's refill takes.
        let refill = self
            .cps
            .map(|cps| self.machine.mispredict_penalty as f64 / cps);
        charge_responsible(
            self.code,
            &self.block_of,
            &self.fused,
            &self.instant,
            &self.loads,
            freq,
            refill,
        )
    }

    /// What each block's charged samples say of its frequency. Samples that
    /// may be a mispredict's refetch say nothing about the instruction they
    /// are charged to: where they are most of its charge (or it is a load,
    /// whose other samples may be its own miss) its samples and its
    /// best-case cycles both stay out of its block's ratio; where they are
    /// a minority, only they do.
    fn observe(&self, ch: &Charges) -> Vec<BlockObservation> {
        let cfg = &self.code.cfg;
        // Any outside charge other than refetch (the caller's call, on a
        // function's entry) still takes the instruction out whole.
        let clear = |i: usize| {
            self.seen[i]
                && ch.external[i] - ch.refetch[i] <= 0.0
                && (ch.refetch[i] <= 0.0
                    || (!self.loads[i] && ch.refetch[i] <= REFETCH_MINORITY * ch.samples[i]))
        };
        // What a clear instruction's samples say of its own runs.
        let own = |i: usize| ch.samples[i] - ch.external[i];
        let leaf_unwaited = leaf_result_unwaited(self.code);
        (0..cfg.blocks.len())
            .map(|b| {
                let blk = &cfg.blocks[b];
                let first = blk.insns.start;
                let total: f64 = blk.insns.clone().filter(|&i| clear(i)).map(own).sum();
                let on_loads: f64 = blk
                    .insns
                    .clone()
                    .filter(|&i| clear(i) && self.loads[i])
                    .map(own)
                    .sum();
                let best_cycles: f64 = blk
                    .insns
                    .clone()
                    .filter(|&i| clear(i))
                    .map(|i| self.models[b].head.get(i - first).copied().unwrap_or(0.0))
                    .sum();
                let excluded: f64 = blk
                    .insns
                    .clone()
                    .map(|i| {
                        if clear(i) {
                            ch.external[i]
                        } else {
                            ch.samples[i]
                        }
                    })
                    .sum::<f64>();
                let returned: f64 = blk
                    .insns
                    .clone()
                    .filter(|&i| self.code.return_site[i])
                    .map(|i| self.code.time_samples(i) as f64)
                    .sum();
                let exit_target = refill_target(cfg, b);
                let refetch_cycles = self.machine.refetch_cycles() as f64;
                // An arm of a branch inside a loop body (every successor of
                // the branch stays in its loop, none is the back edge: an
                // if/else, not the loop's exit test, whose staying side
                // rarely mispredicts and whose refetch samples are the
                // loop's own) runs at least once per mispredict into it.
                // Not when it starts with a load: samples there may be a
                // miss, not a refill. msort's merge arms (compare's jg, half
                // mispredicted): the one with no clean evidence went from
                // -99 % to -39 % on Zen 4.
                let in_loop_arm = cfg.predecessors(b).any(|e| {
                    let last = cfg.last_insn(e.from);
                    !cfg.is_back_edge(e.from, b)
                        && !cfg.loops_of[e.from].is_empty()
                        && crate::disasm::may_mispredict(last)
                        && cfg.successors(e.from).all(|s| {
                            !cfg.leaves_loop(e.from, s.to) && !cfg.is_back_edge(e.from, s.to)
                        })
                }) && blk
                    .insns
                    .clone()
                    .take(2)
                    .all(|i| crate::culprits::reads_memory(&cfg.insns[i]).is_none())
                    // Nor a loop header: its refetch count takes in its
                    // own back edge's samples (no recorded block is both).
                    && !cfg.predecessors(b).any(|e| cfg.is_back_edge(e.from, b));
                let exits_if_mispredicted = match self.cps {
                    Some(cps)
                        if (exit_target || in_loop_arm)
                            && ch.refetch_in[b] >= 1.0
                            && refetch_cycles > 0.0 =>
                    {
                        Some(ch.refetch_in[b] * cps / refetch_cycles)
                    }
                    _ => None,
                };
                // Its clean evidence is (nearly) all a share of a
                // successor's first samples, split by the frequencies being
                // estimated: a guess (codec's never-run `0x1430` took half
                // of its successor's through its jmp and came out 71 M at
                // medium; interp's handlers took their shares of the loop
                // latch's beside a stray sample or two of their own).
                let split: f64 = blk
                    .insns
                    .clone()
                    .filter(|&i| clear(i))
                    .map(|i| ch.split[i].min(own(i)))
                    .sum();
                let guessed = total > 0.0 && split >= GUESSED_SHARE * total - 1e-9;
                // A loop block whose last call reaches a straight leaf its
                // model ran apart: the chain from the leaf's result to the
                // block's end runs exposed on every pass (the leaf's own
                // chain between two passes), and the block's model, which
                // runs call and return back to back, is only the top of
                // its range, as for a block outside loops. btree's `main`
                // loop header (divides `next_random`'s result by constants,
                // 9 cycles of mul/shr/imul/sub on it) read 1.05-1.45x on
                // the Zen 4 sets at its model's 5.9 cycles; now 0.76-1.08.
                let exposed = calls_opaque(self.code, b, self.models[b].callees_inline)
                    .then(|| {
                        // The clear instructions' part of the chain.
                        let all: f64 = self.models[b].head.iter().sum();
                        let part = if all > 0.0 { best_cycles / all } else { 1.0 };
                        self.models[b].after_leaf * self.models[b].slowdown.max(1.0) * part
                    })
                    .filter(|&c| c > best_cycles);
                BlockObservation {
                    samples: total,
                    excluded,
                    guessed,
                    exits_if_mispredicted,
                    after_unsure: after_unsure(cfg, b) || in_refill_shadow(cfg, b),
                    stall_suspect: total > 0.0 && on_loads > 0.5 * total,
                    straight: cfg.loops_of[b].is_empty() || exposed.is_some(),
                    calls_opaque: calls_opaque(self.code, b, self.models[b].callees_inline),
                    slowdown: self.models[b].slowdown,
                    result_unwaited: leaf_unwaited,
                    returned,
                    best_cycles: exposed.unwrap_or(best_cycles),
                    block_cycles: self.models[b].cycles,
                    best_cycles_low: if exposed.is_some() {
                        best_cycles
                    } else if self.models[b].cycles > 0.0 {
                        best_cycles * self.models[b].low / self.models[b].cycles
                    } else {
                        best_cycles
                    },
                }
            })
            .collect()
    }

    /// Frequencies from the function's own samples: pass 1 on
    /// the samples where they landed, pass 2 on the samples charged to the
    /// instructions responsible (which needs pass 1's frequencies to split a
    /// block's first samples between its predecessors). None without a
    /// time event or core clock.
    pub fn frequencies(&self) -> Option<Frequencies> {
        let c = self.cps?;
        let cfg = &self.code.cfg;
        let first = self.first_pass()?;
        let ch = self.charge(Some(first));
        let mut p = prepare(cfg, &self.observe(&ch), c, self.zero_evidence());
        self.add_loop_totals(&mut p, first, &ch.refetch_in);
        let (freq, spread) = crate::frequency::solve_alone(&p);
        let u = self.unstable(&freq, &ch);
        for (b, _) in u.iter().enumerate().filter(|(_, u)| **u) {
            p.guess(b, crate::frequency::Guess::Unstable);
        }
        crate::frequency::debug_dump(&self.code.function.name, &p, &freq);
        Some(crate::frequency::finish(p, freq, &spread))
    }

    /// Innermost loops none of whose blocks has an estimate of its own get
    /// one on their header from the loop's samples as a whole, net of a
    /// refill per entry ([`crate::loop_totals`]); `freq` says how often
    /// each was entered. An estimate that is itself a guess (resting on a
    /// refill's aftermath, on the few samples left once most were set
    /// aside) does not count as the loop's own: the loop's total is
    /// sounder. Mean |ln e| over the six recorded sets 0.320 -> 0.306, no
    /// cell worse (Zen 3 btree 0.228 -> 0.158, msort 0.302 -> 0.247);
    /// the held-out textproc 0.523 -> 0.405 (its word-scanning loop, a
    /// few trips an entry, had a header guessed 3.7x high from the 30 %
    /// of its samples not set aside).
    ///
    /// A loop around a switch ([`UnsureBranches::Dispatch`]) gets one too, its
    /// trips paying [`crate::loop_totals::dispatch_mispredicts`] refills
    /// each, where the refills counted at its cases bear that out
    /// ([`crate::loop_totals::dispatch_total`]).
    ///
    /// Where the header has an estimate of its own, the loop's total is a
    /// second measure of the same count, robust to how the blocks share
    /// the samples out: the two are weighed together, and where they are
    /// more than [`LOOP_DISAGREES`] apart the header's class is a guess.
    /// rle_decode's run loop read +177 % (Zen 3) and +260 % (zen4-5k-c) at
    /// high confidence from one block; now +76 / +68 %, low. Mean |ln e|
    /// 0.306 -> 0.299 (kernels 0.311 -> 0.297, codec 0.279 -> 0.254; kernels
    /// zen4-5k-b and codec zen4-5k-b 0.007 worse); "high" samples within
    /// ±10 % 77.0 -> 78.6 %, within ±25 % 79.3 -> 98.1 % (most of that
    /// matmul's whole-recording +30 % becoming +25 %).
    ///
    /// A loop entered straight from a branch that may mispredict also pays
    /// the refetch of its mispredicted entries, counted at its header
    /// (`refetch_in`, the refetch samples charged per block): hashtab's
    /// `insert` probe loop, entered when the first probe finds its slot
    /// taken. Only hashtab's cells moved (12 of 14 better, two +0.001):
    /// the 70 cells' mean 0.128 -> 0.126, scaled ±10 % 78.8 -> 79.2 %;
    /// no other workload, the held-out dynprog included, has such a loop.
    /// The loop itself stays between its bounds (+57..+138 %): its trips
    /// are 15 % of its cycles, the rest refills.
    fn add_loop_totals(&self, p: &mut Prepared, freq: &[f64], refetch_in: &[f64]) {
        let Some(cps) = self.cps else {
            return;
        };
        let cfg = &self.code.cfg;
        let refill = self.machine.mispredict_penalty as f64;
        for l in &cfg.loops {
            let observed = l
                .body
                .iter()
                .any(|&b| p.observed(b) && p.guessed[b].is_none());
            // What the loop runs must land in it, but for calls through a
            // pointer: nothing links those to their callees, so the loop's
            // total is all there is to say how often it calls (matchers'
            // Bloom filter probes, each trip calling a hash through a
            // table: +990 % from an upper bound on its load's block).
            if !is_innermost(cfg, l)
                || l.body.iter().any(|&b| {
                    cfg.blocks[b].insns.clone().any(|i| {
                        !self.seen[i]
                            && cfg.insns[i].instr.flow_control()
                                != iced_x86::FlowControl::IndirectCall
                    })
                })
            {
                continue;
            }
            let (dispatch, through_table) = match unsure_branches(cfg, l) {
                Some(UnsureBranches::LoopControl) => (None, false),
                Some(UnsureBranches::Dispatch {
                    cases,
                    through_table,
                }) => (Some(cases), through_table),
                None => continue,
            };
            let Some(path) = loop_path(self.code, &l.body, l.header) else {
                continue;
            };
            let mut trip: f64 = path.iter().map(|&b| self.models[b].cycles).sum();
            let mispredicts = dispatch.as_ref().map(|cases| {
                let runs: Vec<f64> = cases
                    .iter()
                    .map(|&t| runs_into_case(cfg, l, t, freq))
                    .collect();
                dispatch_mispredicts(&runs)
            });
            // A jump through a table resolves later than a branch: its
            // mispredicts cost the machine's measured ratio more.
            let per_mispredict = if through_table {
                refill * self.machine.table_mispredict_ratio
            } else {
                refill
            };
            trip += mispredicts.unwrap_or(0.0) * per_mispredict;
            let mut s = LoopSamples::default();
            for &b in &l.body {
                for i in cfg.blocks[b].insns.clone() {
                    if self.code.return_site[i] {
                        continue;
                    }
                    let n = self.code.time_samples(i) as f64;
                    if b == l.header && i == cfg.blocks[b].insns.start {
                        s.on_header += n;
                    } else {
                        s.inside += n;
                    }
                }
            }
            for b in (0..cfg.blocks.len()).filter(|&b| !l.contains(b)) {
                let mut preds = cfg
                    .predecessors(b)
                    .filter(|e| !cfg.is_padding(e.from))
                    .peekable();
                if preds.peek().is_some() && preds.all(|e| l.contains(e.from)) {
                    s.on_exits += self.code.time_samples(cfg.blocks[b].insns.start) as f64;
                }
            }
            let entries = loop_entries(cfg, l, freq);
            if std::env::var_os("DCPI_DEBUG_FREQ").is_some() {
                eprintln!(
                    "dcpi: loop at b{} of {}: {s:?}, entries {entries:.4e}, trip {trip:.2} cycles",
                    l.header, self.code.function.name
                );
            }
            // Entries read off the exits' aftermath: the refills counted
            // there instead; and never fewer than those refills.
            let entries = match dispatch {
                None => {
                    let read = entries_at_exit_refills(cfg, l, p, entries).unwrap_or(entries);
                    entries_at_least_exit_refills(cfg, l, p, read)
                }
                Some(_) => entries,
            };
            // Exits whose refills land out of sight (none counted past
            // them: they return to callers) leave only the branches'
            // resolution in the loop, half a refill an entry (btree's
            // find_index on every Zen 4 set, 0.70-0.88x between its bounds
            // at a whole refill; msort's merge loops).
            let unseen_exits = dispatch.is_none() && exit_refills(cfg, l, p).is_none();
            // Where the machine's description measured them, its figures
            // ([`Machine::loop_exit_cycles`]: Zen 5's exits leave less in
            // the loop, their refetch landing past them).
            let paid = match (
                unseen_exits,
                self.machine.loop_exit_cycles,
                self.machine.unseen_loop_exit_cycles,
            ) {
                (true, _, 0) => refill * UNSEEN_EXIT_REFILL,
                (true, _, c) | (false, c, _) if c > 0 => c as f64,
                _ => refill,
            };
            // Entered by a branch that may mispredict, the loop also holds
            // the refetch of each mispredicted entry: it lands on the
            // header. As many entries as the refills counted there say
            // (never more than all): hashtab's `insert`, whose first probe
            // decides whether to enter its probe loop, about 30 cycles an
            // entry on Zen 5 against 15 paid for the exit alone.
            let entered_unsure = dispatch.is_none()
                && cfg.predecessors(l.header).any(|e| {
                    !l.contains(e.from) && crate::disasm::may_mispredict(cfg.last_insn(e.from))
                });
            let refetch = self.machine.refetch_cycles() as f64;
            let paid = if entered_unsure && entries > 0.0 && refetch > 0.0 {
                let at_header = refetch_in[l.header] * cps / refetch;
                paid + refetch * (at_header / entries).min(1.0)
            } else {
                paid
            };
            let mut total = header_frequency(s, entries, trip, cps, paid);
            let mut between = false;
            // No room for trips at one refill an entry: the entries are
            // suspect (kernels' isort: its outer latch, two short blocks
            // past the inner loop's mispredicted exit, read 4.5x at high
            // confidence), whatever evidence the blocks leading in have.
            if total.is_none() && dispatch.is_none() && overfilled(s, entries, cps, paid) {
                for e in cfg.predecessors(l.header).filter(|e| !l.contains(e.from)) {
                    for &b in &cfg.classes[cfg.class_of[e.from]] {
                        p.guess(b, Guess::OverfillsLoop);
                    }
                }
                if impossible_entries(s, entries, cps, paid) {
                    exits_at_their_refills(cfg, l, p);
                    // The exits' refills are the entries then, for the
                    // total too (their blocks now say so): the entries
                    // that cannot be came from a solution resting on those
                    // exits' old estimates (codec's rle_encode, linked:
                    // 160 M entries, 44.7 M counted, 49 M true; its run
                    // loop between bounds at 0.85x, 0.96x from them).
                    let counted = exit_refills(cfg, l, p)
                        .filter(|&c| c < entries && c >= REFILLED_EXITS * entries);
                    if let Some(counted) = counted {
                        total = header_frequency(s, counted, trip, cps, paid);
                    }
                }
                // Nor is the loop left to conservation, which took it to a
                // trip an entry (btree's find_index on zen4-5k-b: -88 %, now
                // -43 %). The 45 cells 0.203 -> 0.198, search 0.425 ->
                // 0.386; at 0.35 / 0.65 of the log way up instead of the
                // middle: 0.208 / 0.193, search 0.337 / 0.409.
                if total.is_none() {
                    total = between_bounds(s, entries, trip, cps);
                    between = total.is_some();
                }
            }
            if dispatch.is_some() {
                share_table_cases(cfg, l, freq, p);
            }
            if let (Some(cases), Some(m), Some(e)) = (&dispatch, mispredicts, total) {
                let counted: f64 = cases
                    .iter()
                    .filter_map(|&t| p.problem.floors.get(t).copied().flatten())
                    .map(|f| f.0)
                    .sum();
                if std::env::var_os("DCPI_DEBUG_FREQ").is_some() {
                    eprintln!(
                        "dcpi: dispatch at b{}: {m:.2} mispredicts a trip, {counted:.4e} refills counted, {:.4e} trips",
                        l.header, e.0
                    );
                }
                total = dispatch_total(e, m, counted);
            }
            if let Some(e) = total {
                match p.problem.estimates[l.header] {
                    // Two measures of one count: weighed together, and
                    // neither trusted where they disagree.
                    Some((v, sd)) if observed => {
                        let (w1, w2) = (1.0 / (sd * sd), 1.0 / (e.1 * e.1));
                        let both = ((v * w1 + e.0 * w2) / (w1 + w2), (1.0 / (w1 + w2)).sqrt());
                        for &b in &cfg.classes[cfg.class_of[l.header]] {
                            p.problem.estimates[b] = Some(both);
                            if (v / e.0).ln().abs() > LOOP_DISAGREES.ln() {
                                p.guess(b, Guess::LoopDisagrees);
                            }
                        }
                    }
                    _ if observed => {}
                    _ => p.set_estimate(
                        l.header,
                        e,
                        match dispatch {
                            Some(_) => Guess::DispatchTotal,
                            None if between => Guess::LoopBetween,
                            None if unseen_exits => Guess::LoopUnseenExits,
                            None => Guess::LoopTotal,
                        },
                    ),
                }
            }
        }
    }

    /// Pass 1: frequencies from the samples where they landed.
    fn first_pass(&self) -> Option<&[f64]> {
        self.first
            .get_or_init(|| {
                let c = self.cps?;
                let landed = self.observe(&self.charge(None));
                // Frequencies only: pass 1's standard errors are never read.
                let p = prepare(&self.code.cfg, &landed, c, self.zero_evidence());
                Some(
                    crate::flow_solve::solve(&p.problem)
                        .unwrap_or_else(|| vec![0.0; p.problem.blocks]),
                )
            })
            .as_deref()
    }

    /// Blocks whose frequency `freq` (from samples charged by pass 1) is
    /// more than half away from pass 1's own: a split of a block's first
    /// samples feeding the estimate it was made by (interp's handlers).
    /// Not where pass 2 bounded a loop header's refetch by its entries:
    /// that move is meant.
    fn unstable(&self, freq: &[f64], ch: &Charges) -> Vec<bool> {
        let Some(first) = self.first_pass() else {
            return vec![false; freq.len()];
        };
        freq.iter()
            .zip(first)
            .zip(&ch.refetch_bounded)
            .map(|((a, b), bounded)| !bounded && (a - b).abs() > UNSTABLE * a.max(*b))
            .collect()
    }

    /// The function's frequency problem with its samples charged by `freq`
    /// (its frequencies alone), to be solved linked with other functions'.
    pub fn prepared(&self, freq: &[f64]) -> Option<Prepared> {
        let c = self.cps?;
        let ch = self.charge(Some(freq));
        let obs = self.observe(&ch);
        if std::env::var_os("DCPI_DEBUG_OBS").is_some() {
            for (b, o) in obs.iter().enumerate() {
                eprintln!("obs {} b{b}: {o:?}", self.code.function.name);
            }
        }
        let mut p = prepare(&self.code.cfg, &obs, c, self.zero_evidence());
        self.add_loop_totals(&mut p, freq, &ch.refetch_in);
        let u = self.unstable(freq, &ch);
        for (b, _) in u.iter().enumerate().filter(|(_, u)| **u) {
            p.guess(b, crate::frequency::Guess::Unstable);
        }
        Some(p)
    }

    /// Blocks of loops whose whole run, per entry, is shorter than one
    /// mispredict's refill at their best case: the refill after the exit
    /// (and the ramp up after entering) is a dynamic stall as large as the
    /// loop itself, and it lands in and around it, so the samples the
    /// estimate rests on are not its best case (codec's rle_decode inner
    /// loop, 8.5 one-cycle trips per entry: +46.5 % at "high").
    fn shorter_than_a_refill(&self, freq: &[f64]) -> Vec<bool> {
        let penalty = self.machine.mispredict_penalty as f64;
        self.short_loops(freq, |_| true, |b| self.models[b].cycles, penalty)
    }

    /// Blocks of innermost loops bound by a chain their trips carry, whose
    /// run per entry (trips x instructions) fits in the reorder buffer:
    /// the next entry's trips, their chain started afresh, overlap this
    /// one's, so a trip may take less than its chain and the samples say
    /// less than the model's best case implies. matchers' `hash_c` (an
    /// xor/imul chain of 4 cycles a trip, 8 trips a call, calls back to
    /// back) ran 2.45 cycles a trip and read 0.39x at "high".
    fn overlapping_entries(&self, freq: &[f64]) -> Vec<bool> {
        let cfg = &self.code.cfg;
        let keep = |l: &crate::cfg::Loop| is_innermost(cfg, l) && self.models[l.header].carried;
        let insns = |b: usize| cfg.blocks[b].insns.len() as f64;
        self.short_loops(freq, keep, insns, self.machine.rob_size as f64)
    }

    /// Blocks of the loops `keep` keeps whose run per entry, Σ frequency ×
    /// `per_run(block)` over the body by the loop's entries, is under
    /// `limit`.
    fn short_loops(
        &self,
        freq: &[f64],
        keep: impl Fn(&crate::cfg::Loop) -> bool,
        per_run: impl Fn(usize) -> f64,
        limit: f64,
    ) -> Vec<bool> {
        let cfg = &self.code.cfg;
        let mut short = vec![false; cfg.blocks.len()];
        for l in cfg.loops.iter().filter(|l| keep(l)) {
            let entries = loop_entries(cfg, l, freq);
            if entries <= 0.0 {
                continue;
            }
            let per_entry: f64 =
                l.body.iter().map(|&b| freq[b] * per_run(b)).sum::<f64>() / entries;
            if per_entry < limit {
                for &b in &l.body {
                    short[b] = true;
                }
            }
        }
        short
    }

    /// The report for frequencies `freqs` (None: samples and the model
    /// only); `calls` is how often the callers call the function, if known.
    pub fn report(&self, freqs: Option<Frequencies>, calls: Option<f64>) -> CpiReport {
        let freqs = freqs.map(|mut f| {
            for (c, short) in f
                .confidence
                .iter_mut()
                .zip(self.shorter_than_a_refill(&f.freq))
            {
                if short {
                    *c = Confidence::Low;
                }
            }
            let overlap = self.overlapping_entries(&f.freq);
            for (b, _) in overlap.iter().enumerate().filter(|(_, o)| **o) {
                if f.confidence[b] > Confidence::Low {
                    f.confidence[b] = Confidence::Low;
                    f.why[b] = Some(OVERLAPPING_ENTRIES);
                }
            }
            f
        });
        let code = self.code;
        let machine = self.machine;
        let cfg = &code.cfg;
        let nb = cfg.blocks.len();
        let ni = cfg.insns.len();
        let models = &self.models;
        let ch = self.charge(freqs.as_ref().map(|f| &f.freq[..]));
        let obs = self.observe(&ch);
        let (charged, charged_cycles, refetch, refetch_in) =
            (ch.samples, ch.cycles, ch.refetch, ch.refetch_in);
        let time = code.time_event;
        let cps = self.cps;
        let warnings = self.warnings.clone();

        let width = machine.dispatch_width.max(1) as f64;
        let mut instructions = Vec::with_capacity(ni);
        for (b, blk) in cfg.blocks.iter().enumerate() {
            for (k, i) in blk.insns.clone().enumerate() {
                let d = &cfg.insns[i];
                let best = models[b].head.get(k).copied().unwrap_or(0.0);
                let f = freqs.as_ref().map(|f| f.freq[b]);
                let conf = freqs.as_ref().map_or(Confidence::Low, |f| f.confidence[b]);
                let bound = freqs.as_ref().is_some_and(|f| f.upper_bound[b]);
                let cpi = f.filter(|f| *f > 0.0).map(|f| charged_cycles[i] / f);
                let reasons = models[b].stalls.get(k).cloned().unwrap_or_default();
                let static_stall = (best - 1.0 / width).max(0.0);
                let mut marks: Vec<char> = if static_stall > 0.0 {
                    reasons.iter().map(stall_mark).collect()
                } else {
                    Vec::new()
                };
                marks.sort();
                marks.dedup();
                instructions.push(InsnRow {
                    addr: format!("{:#x}", d.addr),
                    vaddr: d.addr,
                    instruction: d.text.clone(),
                    block: b,
                    source: code.lines[i]
                        .as_ref()
                        .map(|(f, l)| format!("{}:{l}", f.rsplit('/').next().unwrap_or(f))),
                    samples: code.samples_by_event(i),
                    charged_samples: charged[i],
                    refetch_samples: refetch[i],
                    freq: f,
                    freq_upper_bound: bound,
                    confidence: conf,
                    cpi,
                    best_cpi: best,
                    static_stall,
                    static_marks: marks.into_iter().collect(),
                    static_reasons: reasons,
                    dynamic_stall: cpi.map(|c| c - best),
                    done_at_rename: self.instant[i],
                });
            }
        }

        let header_of: Vec<bool> = (0..nb)
            .map(|b| cfg.loops.iter().any(|l| l.header == b))
            .collect();
        let blocks: Vec<BlockRow> = cfg
            .blocks
            .iter()
            .enumerate()
            .map(|(b, blk)| {
                let f = freqs.as_ref().map(|f| f.freq[b]);
                let cyc: f64 = blk.insns.clone().map(|i| charged_cycles[i]).sum();
                BlockRow {
                    index: b,
                    start: format!("{:#x}", blk.start),
                    end: format!("{:#x}", blk.end),
                    instructions: blk.insns.len(),
                    freq: f,
                    freq_upper_bound: freqs.as_ref().is_some_and(|f| f.upper_bound[b]),
                    confidence: freqs.as_ref().map_or(Confidence::Low, |f| f.confidence[b]),
                    confidence_why: match &freqs {
                        Some(f) => f.why[b],
                        None => Some("no time samples or no core clock: no estimate"),
                    },
                    class: cfg.class_of[b],
                    loops: cfg.loops_of[b].clone(),
                    loop_header: header_of[b],
                    successors: cfg.successors(b).map(|e| e.to).collect(),
                    exit: blk.exit,
                    samples: obs[b].samples as u64,
                    refetch_samples: refetch_in[b],
                    best_cycles: models[b].cycles,
                    actual_cycles: f.filter(|f| *f > 0.0).map(|f| cyc / f),
                    bottleneck: models[b].bottleneck.clone(),
                }
            })
            .collect();

        let loops = cfg
            .loops
            .iter()
            .enumerate()
            .map(|(li, l)| {
                let h = l.header;
                let freq = freqs.as_ref().map(|f| f.freq.as_slice());
                let total = freq.map(|f| f[h]);
                let entries = freq.and_then(|f| entries_into(cfg, l, f));
                let cycles: f64 = l
                    .body
                    .iter()
                    .flat_map(|&b| cfg.blocks[b].insns.clone())
                    .map(|i| charged_cycles[i])
                    .sum();
                LoopRow {
                    header: h,
                    start: format!("{:#x}", cfg.blocks[h].start),
                    blocks: l.body.clone(),
                    depth: cfg.loops_of[h]
                        .iter()
                        .position(|&k| k == li)
                        .map_or(1, |d| d + 1),
                    trips_stated: l.trips,
                    trips_total: total,
                    entries,
                    trips_per_entry: total.zip(entries).filter(|e| e.1 > 0.0).map(|(t, e)| t / e),
                    cycles_per_trip: total.filter(|t| *t > 0.0).map(|t| cycles / t),
                    confidence: freqs.as_ref().map_or(Confidence::Low, |f| f.confidence[h]),
                    entries_confidence: freqs.as_ref().map_or(Confidence::Low, |f| {
                        cfg.predecessors(h)
                            .filter(|e| !l.contains(e.from))
                            .map(|e| f.confidence[e.from])
                            .fold(f.confidence[h], Confidence::min)
                    }),
                }
            })
            .collect();
        let totals = code.total_samples();
        let cycles: f64 = code.cycles.iter().sum();
        let (mut best_total, mut executed) = (0.0, 0.0);
        if let Some(f) = &freqs {
            for (b, m) in models.iter().enumerate() {
                best_total += f.freq[b] * m.cycles;
                executed += f.freq[b] * cfg.blocks[b].insns.len() as f64;
            }
        }
        // Shares of the samples charged to the function's instructions
        // (a callee's include those landing on its callers' return
        // addresses: its own samples alone made compare's share 143 %).
        let time_total: f64 = instructions.iter().map(|r| r.charged_samples).sum();
        let confident: f64 = instructions
            .iter()
            .filter(|r| r.confidence >= Confidence::Medium)
            .map(|r| r.charged_samples)
            .sum();
        let summary = Summary {
            samples: code
                .events
                .iter()
                .zip(&totals)
                .map(|(e, n)| (e.name.clone(), *n))
                .collect(),
            cycles,
            best_case_cycles: best_total,
            instructions_executed: executed,
            cpi: (executed > 0.0).then(|| cycles / executed),
            best_cpi: (executed > 0.0).then(|| best_total / executed),
            dynamic_stall_share: (cycles > 0.0 && freqs.is_some())
                .then(|| ((cycles - best_total) / cycles).max(0.0)),
            // `+ 0.0`: an empty f64 sum is -0.0, which views print as "-0".
            confident_share: if time_total > 0.0 {
                confident / time_total + 0.0
            } else {
                0.0
            },
        };
        CpiReport {
            image: code.image_path.clone(),
            function: code.function.name.clone(),
            start: format!("{:#x}", code.function.start),
            end: format!("{:#x}", code.function.end),
            machine: machine.name.clone(),
            events: code.events.iter().map(|e| e.name.clone()).collect(),
            time_event: time.map(|t| code.events[t].name.clone()),
            cycles_per_sample: cps,
            summary,
            blocks,
            loops,
            class_estimates: freqs.map(|f| f.classes).unwrap_or_default(),
            instructions,
            warnings,
            calls_from_callers: calls,
            core_share: time.and_then(|t| code.events[t].core_share),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(cycles: f64, throughput: f64, low: f64) -> BlockModel {
        BlockModel {
            cycles,
            low,
            throughput_share: throughput / cycles,
            slowdown: 1.0,
            callees_inline: false,
            after_leaf: 0.0,
            carried: false,
            head: vec![cycles / 2.0; 2],
            stalls: vec![Vec::new(); 2],
            bottleneck: String::new(),
        }
    }

    #[test]
    fn a_shared_core_slows_throughput_bound_blocks_only() {
        // At its port bound (2 cycles), a chain-bound loop (4 cycles, ports
        // 2), and a straight block (chain 6, throughput 1.5).
        let mut m = vec![
            model(2.0, 2.0, 2.0),
            model(4.0, 2.0, 4.0),
            model(6.0, 1.5, 1.5),
        ];
        shared_core(&mut m, 0.8);
        assert!((m[0].cycles - 2.5).abs() < 1e-12);
        assert!((m[0].low - 2.5).abs() < 1e-12);
        assert!((m[0].head.iter().sum::<f64>() - 2.5).abs() < 1e-12);
        assert_eq!(m[1].cycles, 4.0, "the chain still bounds it");
        assert_eq!((m[2].cycles, m[2].low), (6.0, 1.5));
        // A busier sibling: the slowed ports pass the chain.
        shared_core(&mut m[1..2], 0.4);
        assert!((m[1].cycles - 5.0).abs() < 1e-12);
        assert!((m[1].head.iter().sum::<f64>() - 5.0).abs() < 1e-12);
    }
}
