//! Why an instruction stalls (DCPI's culprit analysis, first cut): the
//! static reasons the pipeline model gives, and the dynamic candidates that
//! DCPI's rules leave standing, each with its evidence and a min-max share
//! of the stall cycles. Rules, for the instruction the samples are charged
//! to (the one before where they landed):
//! - D-cache / DTLB miss: it reads memory, or an input comes from a load
//!   earlier in its block (named);
//! - branch mispredict: it is a conditional or indirect branch (or the
//!   compare fused with one), or the first instruction on a path out of
//!   one (the refetch after a mispredict starts there: DCPI's rule); not a
//!   loop's back edge (predicted but at the exit, whose path keeps it);
//! - I-cache / ITLB miss: the next instruction starts a fetch block (new
//!   64-byte line) or is a taken-branch target, or it is the function's
//!   entry (samples on the entry are the caller's call waiting to fetch it);
//! - store buffer / memory ordering: it writes memory (a non-temporal
//!   store's lines go to memory: named), is a fence or locked;
//! - divider busy: a divide or square root (data-dependent latency);
//! - store-forwarding failure: an earlier store through the same address
//!   registers (in the block, or the previous iteration of a one-block
//!   loop) overlaps what it loads without containing it; rules D-cache out.
//! - a shared core: the run's probe measured less than 90 % of an idle
//!   core (a busy SMT sibling on the host); throughput-bound best cases
//!   already take that share in, and what is left of it may be any
//!   instruction's, up to (1 − share) of its cycles.
//!
//! When the frequency is only an upper bound (every sample of the block's
//! class may be a load stall) shares are of all the instruction's cycles:
//! static reasons 0..their part at the bound, dynamic candidates up to all.
//!
//! Extra sampled events (cache, branch or TLB misses) on the instruction or
//! where its samples land confirm a candidate; an event the run sampled
//! with none here rules one out.

use crate::cpi::{CpiReport, InsnRow};
use crate::error::{AnalyzeError, Result};
use crate::function_code::FunctionCode;
use dcpi_models::schedule::Stall;
use iced_x86::{FlowControl, Mnemonic, OpAccess, Register};
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct Culprit {
    /// Short code — static (the model): dep, fwd, fwdfail, port, unit,
    /// width, rob, frontend, taken, fetchline, retire, commit, memwrite; dynamic:
    /// dcache, icache, mispredict, store, divider, smt, unexplained.
    pub code: String,
    pub name: String,
    /// "static" (the model) or "dynamic" (ruled in by the rules).
    pub kind: String,
    pub evidence: String,
    /// Stall cycles per execution it may explain: [min, max].
    pub cycles: [f64; 2],
    /// Share of the instruction's stall cycles: [min, max].
    pub share: [f64; 2],
}

#[derive(Debug, Clone, Serialize)]
pub struct RuledOut {
    pub code: String,
    pub why: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Skid {
    /// Where the samples charged to this instruction landed.
    pub landed_at: Vec<(String, f64)>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CulpritReport {
    pub image: String,
    pub function: String,
    pub addr: String,
    pub instruction: String,
    pub source: Option<String>,
    pub row: InsnRow,
    pub skid: Skid,
    /// Stall cycles per execution (static + dynamic, dynamic only if positive).
    pub stall_cycles: f64,
    /// Total dynamic stall cycles over the run (per execution × frequency).
    pub dynamic_cycles_total: Option<f64>,
    pub culprits: Vec<Culprit>,
    pub ruled_out: Vec<RuledOut>,
    /// What `share` is a share of: "stall cycles", or "all its cycles" when
    /// the frequency is only an upper bound (then any cycle may be a stall).
    pub share_of: String,
    /// Why the shares are ranges, when the frequency is unknown.
    pub frequency_note: Option<String>,
}

fn static_culprit(s: &Stall) -> (String, String, String) {
    match s {
        Stall::Dependency {
            register,
            producer_text,
            latency,
            loop_carried,
            ..
        } => (
            "dep".into(),
            if *loop_carried {
                "loop-carried dependency".into()
            } else {
                "register dependency".into()
            },
            format!("waits for {register} from `{producer_text}` (latency {latency})"),
        ),
        Stall::StoreForward { latency, .. } => (
            "fwd".into(),
            "store-to-load forwarding".into(),
            format!("its load takes a store's data (latency {latency})"),
        ),
        Stall::StoreForwardFailed { cycles, .. } => (
            "fwd-fail".into(),
            "failed store-to-load forwarding".into(),
            format!(
                "its load reads bytes a narrower store in flight wrote and others: \
                 it waits for that store to commit ({cycles} cycles after it retires)"
            ),
        ),
        Stall::PortContention { ports } => (
            "port".into(),
            "port contention".into(),
            format!("inputs ready, ports {} busy", ports.join(",")),
        ),
        Stall::UnitBusy { unit } => (
            "unit".into(),
            "functional unit busy".into(),
            format!("unpipelined {unit} still busy"),
        ),
        Stall::DispatchWidth => (
            "width".into(),
            "dispatch width".into(),
            "the front end dispatched its limit that cycle".into(),
        ),
        Stall::VectorDispatch { per_cycle } => (
            "width".into(),
            "vector dispatch width".into(),
            format!("{per_cycle} slots a cycle for instructions on vector registers used up"),
        ),
        Stall::RobFull => (
            "rob".into(),
            "reorder buffer full".into(),
            "dispatch waited for a ROB entry".into(),
        ),
        Stall::SchedulerFull { entries } => (
            "scheduler".into(),
            "ALU scheduler full".into(),
            format!("dispatch waited for an entry: {entries} ALU µops waiting for their inputs"),
        ),
        Stall::FrontEnd { bytes_per_cycle } => (
            "frontend".into(),
            "fetch/decode bytes".into(),
            format!("{bytes_per_cycle} bytes per cycle used up"),
        ),
        Stall::TakenBranch { per_cycle } => (
            "taken".into(),
            "taken branches".into(),
            format!("fetched after a taken branch ({per_cycle} a cycle)"),
        ),
        Stall::FetchLine { line_bytes } => (
            "fetchline".into(),
            "fetch lines".into(),
            format!("fetched from the next {line_bytes}-byte line: one line a cycle"),
        ),
        Stall::DenseCode { width, bytes } => (
            "dense".into(),
            "dense code".into(),
            format!(
                "{width} instructions dispatched that cycle, and one more would have spanned fewer than {bytes} bytes"
            ),
        ),
        Stall::OpCache {
            entry_ops,
            line_entries,
        } => (
            "opcache".into(),
            "op cache".into(),
            format!(
                "the loop comes from the op cache the slow way (its first line holds more than {} ops, or over {entry_ops} with the loop reaching into the next line): a line a cycle, {line_entries} entries of {entry_ops} ops a fetch",
                entry_ops * line_entries
            ),
        ),
        Stall::RetireWidth { per_cycle } => (
            "retire".into(),
            "retire width".into(),
            format!("done, but {per_cycle} instructions had retired that cycle"),
        ),
        Stall::StoreCommit { per_cycle } => (
            "commit".into(),
            "store commit".into(),
            format!("a store to another cache line: {per_cycle} line(s) commit a cycle"),
        ),
        Stall::NarrowStoreCommit { cycles } => (
            "commit".into(),
            "narrow store commit".into(),
            format!(
                "a byte or word store to a line other stores wrote moments before holds commit {cycles} cycles"
            ),
        ),
        Stall::MemoryWrite {
            full_line,
            partial_line,
        } => (
            "memwrite".into(),
            "memory write".into(),
            format!(
                "a non-temporal store opening a line while the memory still writes two its stream filled: {full_line} cycles a full line, {partial_line} a partial one"
            ),
        ),
    }
}

/// The base register of the memory `d` reads, if it reads memory (lea does not).
pub fn reads_memory(d: &dcpi_models::block::Decoded) -> Option<Register> {
    mem_ref(d, true).map(|m| m.0)
}

fn writes_memory(d: &dcpi_models::block::Decoded) -> bool {
    mem_ref(d, false).is_some()
}

/// A memory operand: base, index, scale, displacement, size in bytes.
type MemRef = (Register, Register, u32, i64, usize);

fn mem_ref(d: &dcpi_models::block::Decoded, read: bool) -> Option<MemRef> {
    if d.instr.mnemonic() == Mnemonic::Lea || crate::disasm::is_bad(d) {
        return None;
    }
    let mut f = iced_x86::InstructionInfoFactory::new();
    f.info(&d.instr)
        .used_memory()
        .iter()
        .find(|m| {
            let r = matches!(
                m.access(),
                OpAccess::Read | OpAccess::CondRead | OpAccess::ReadWrite | OpAccess::ReadCondWrite
            );
            let w = matches!(
                m.access(),
                OpAccess::Write
                    | OpAccess::CondWrite
                    | OpAccess::ReadWrite
                    | OpAccess::ReadCondWrite
            );
            if read {
                r
            } else {
                w
            }
        })
        .map(|m| {
            (
                m.base(),
                m.index(),
                m.scale(),
                m.displacement() as i64,
                m.memory_size().size(),
            )
        })
}

/// A store-forwarding failure by construction: an earlier store in the
/// block, or in the loop's previous iteration (the block branches to
/// itself), writes part of what `i` loads through the same address
/// registers, but not all of it — the load cannot take its data from the
/// store buffer and waits until the store is written (Intel/AMD optimization
/// manuals: a load must be contained in one older store to forward).
fn forwarding_failure(code: &FunctionCode, i: usize) -> Option<usize> {
    let cfg = &code.cfg;
    let (lb, li, ls, ld, lsize) = mem_ref(&cfg.insns[i], true)?;
    let b = cfg.block_at(cfg.insns[i].addr)?;
    let blk = &cfg.blocks[b];
    let self_loop = cfg.successors(b).any(|e| e.to == b);
    let order: Vec<usize> = (blk.insns.start..i)
        .rev()
        .chain(if self_loop {
            (i + 1..blk.insns.end).rev().collect()
        } else {
            Vec::new()
        })
        .collect();
    for j in order {
        let Some((sb, si, ss, sd, ssize)) = mem_ref(&cfg.insns[j], false) else {
            continue;
        };
        if (sb, si, ss) != (lb, li, ls) || ssize == 0 || lsize == 0 {
            continue;
        }
        let (l0, l1) = (ld, ld + lsize as i64);
        let (s0, s1) = (sd, sd + ssize as i64);
        let overlaps = l0 < s1 && s0 < l1;
        let contained = s0 <= l0 && l1 <= s1;
        if overlaps {
            return (!contained).then_some(j);
        }
    }
    None
}

/// The load earlier in the block that produces one of `i`'s inputs.
fn feeding_load(code: &FunctionCode, i: usize) -> Option<usize> {
    let cfg = &code.cfg;
    let b = cfg.block_at(cfg.insns[i].addr)?;
    let start = cfg.blocks[b].insns.start;
    let mut f = iced_x86::InstructionInfoFactory::new();
    let inputs: Vec<Register> = f
        .info(&cfg.insns[i].instr)
        .used_registers()
        .iter()
        .filter(|r| {
            matches!(
                r.access(),
                OpAccess::Read | OpAccess::ReadWrite | OpAccess::CondRead
            )
        })
        .map(|r| r.register().full_register())
        .collect();
    for j in (start..i).rev() {
        let info = f.info(&cfg.insns[j].instr);
        let writes: Vec<Register> = info
            .used_registers()
            .iter()
            .filter(|r| {
                matches!(
                    r.access(),
                    OpAccess::Write | OpAccess::ReadWrite | OpAccess::CondWrite
                )
            })
            .map(|r| r.register().full_register())
            .collect();
        if writes.iter().any(|w| inputs.contains(w)) {
            return reads_memory(&cfg.insns[j]).map(|_| j);
        }
    }
    None
}

/// Events that confirm or rule out a dynamic culprit, by name fragment.
const EVENT_HINTS: [(&str, &[&str]); 3] = [
    (
        "dcache",
        &[
            "cache-misses",
            "l1-dcache",
            "llc-load",
            "dtlb",
            "cache-references",
        ],
    ),
    ("mispredict", &["branch-misses"]),
    ("icache", &["l1-icache", "itlb"]),
];

pub fn explain(code: &FunctionCode, rep: &CpiReport, addr: u64) -> Result<CulpritReport> {
    let cfg = &code.cfg;
    let i = cfg
        .insns
        .iter()
        .position(|d| d.addr == addr)
        .ok_or_else(|| {
            // The nearest instruction starts, and the function by its start
            // address (a C++ name is neither short nor shell-safe).
            let before = cfg.insns.iter().rev().find(|d| d.addr < addr);
            let after = cfg.insns.iter().find(|d| d.addr > addr);
            let near: Vec<String> = [before, after]
                .into_iter()
                .flatten()
                .map(|d| format!("{:#x}", d.addr))
                .collect();
            AnalyzeError::Usage(format!(
                "{addr:#x} is inside {} but not at an instruction start (nearest: {}); \
                 `dcpi list --func {}` shows them",
                rep.function,
                near.join(", "),
                rep.start
            ))
        })?;
    let row = rep.instructions[i].clone();
    let d = &cfg.insns[i];
    let mut culprits = Vec::new();
    let mut ruled_out = Vec::new();

    // Static reasons from the model.
    let statics: Vec<&Stall> = row.static_reasons.iter().collect();
    let st = row.static_stall;
    if st > 0.0 {
        let n = statics.len();
        for (k, s) in statics.iter().enumerate() {
            let (code_, name, evidence) = static_culprit(s);
            // Most frequent first: the first reason is the likely one.
            let lo = if n == 1 || k == 0 { st } else { 0.0 };
            let st = if k == 0 { st } else { st / 2.0 };
            culprits.push(Culprit {
                code: code_,
                name,
                kind: "static".into(),
                evidence,
                cycles: [lo, st],
                share: [0.0, 0.0],
            });
        }
    }

    // Dynamic candidates by rule.
    let dynamic = row.dynamic_stall.unwrap_or(0.0).max(0.0);
    let mut candidates: Vec<(String, String, String)> = Vec::new();
    if let Some(base) = reads_memory(d) {
        let note = if base == Register::RSP {
            " (a stack slot: usually an L1 hit)"
        } else {
            ""
        };
        candidates.push((
            "dcache".into(),
            "D-cache or DTLB miss".into(),
            format!("it loads from memory{note}"),
        ));
    } else if let Some(j) = feeding_load(code, i) {
        candidates.push((
            "dcache".into(),
            "D-cache or DTLB miss".into(),
            format!(
                "an input comes from the load `{}` at {:#x}",
                cfg.insns[j].text, cfg.insns[j].addr
            ),
        ));
    } else {
        ruled_out.push(RuledOut {
            code: "dcache".into(),
            why: "no operand comes from a load in its block".into(),
        });
    }
    if let Some(j) = forwarding_failure(code, i) {
        candidates.push((
            "fwdfail".into(),
            "store-forwarding failure".into(),
            format!(
                "it loads bytes the store `{}` at {:#x} wrote only in part: no forwarding, it waits for the store to reach the cache",
                cfg.insns[j].text, cfg.insns[j].addr
            ),
        ));
        candidates.retain(|c| c.0 != "dcache");
        ruled_out.push(RuledOut {
            code: "dcache".into(),
            why: "the bytes it loads were just stored: the line is in L1".into(),
        });
    }
    let is_branch = |k: usize| crate::disasm::may_mispredict(&cfg.insns[k]);
    let fused_next = i + 1 < cfg.insns.len()
        && is_branch(i + 1)
        && cfg.block_at(cfg.insns[i + 1].addr) == cfg.block_at(d.addr);
    let branch_at = if fused_next { i + 1 } else { i };
    let at_branch = is_branch(i) || fused_next;
    if at_branch && is_loop_latch(code, branch_at) {
        ruled_out.push(RuledOut {
            code: "mispredict".into(),
            why: "a loop's back-edge branch: predicted but at the loop's exit".into(),
        });
    } else if at_branch {
        candidates.push((
            "mispredict".into(),
            "branch mispredict".into(),
            "a conditional or indirect branch: the refetch after a mispredict lands on its target"
                .into(),
        ));
    } else if let Some(j) = branch_into(code, i) {
        candidates.push((
            "mispredict".into(),
            "branch mispredict".into(),
            format!(
                "it starts a path out of the branch `{}` at {:#x}: after a mispredict the refetch starts here and its samples land one past it",
                cfg.insns[j].text, cfg.insns[j].addr
            ),
        ));
    } else {
        ruled_out.push(RuledOut {
            code: "mispredict".into(),
            why: "not a conditional or indirect branch, nor the first instruction after one".into(),
        });
    }
    let next_addr = d.addr + d.instr.len() as u64;
    let next_block_start = cfg.blocks.iter().any(|b| b.start == next_addr);
    let taken_target = cfg.edges.iter().any(|e| {
        cfg.blocks[e.to].start == next_addr && e.kind != crate::cfg::EdgeKind::FallThrough
    }) || matches!(
        d.instr.flow_control(),
        FlowControl::UnconditionalBranch
            | FlowControl::IndirectBranch
            | FlowControl::Return
            | FlowControl::Call
            | FlowControl::IndirectCall
    );
    let entry = d.addr == cfg.start;
    if entry || next_addr / 64 != d.addr / 64 || (next_block_start && taken_target) {
        candidates.push((
            "icache".into(),
            "I-cache or ITLB miss".into(),
            if entry {
                "the function's entry: samples that land on it are its caller's call waiting for this line to be fetched (its next instruction's are its own)".into()
            } else if next_addr / 64 != d.addr / 64 {
                format!(
                    "the next instruction starts a new 64-byte fetch line ({:#x})",
                    next_addr & !63
                )
            } else {
                "the next instruction is a taken-branch target".into()
            },
        ));
    } else {
        ruled_out.push(RuledOut {
            code: "icache".into(),
            why: "the next instruction is in the same fetch line and not a branch target".into(),
        });
    }
    let locked =
        d.instr.has_lock_prefix() || (d.instr.mnemonic() == Mnemonic::Xchg && writes_memory(d));
    let fence = matches!(
        d.instr.mnemonic(),
        Mnemonic::Mfence | Mnemonic::Lfence | Mnemonic::Sfence
    );
    if writes_memory(d) || locked || fence {
        candidates.push((
            "store".into(),
            "store buffer / memory ordering".into(),
            if locked {
                "a locked read-modify-write".into()
            } else if fence {
                "a fence".into()
            } else if dcpi_models::classify::is_nontemporal_store(&d.instr) {
                "a non-temporal store: its lines are written to memory past the caches (Zen 5 host: 4.6-7.5 cycles a full line streaming, 9-10 a partial one, 110-560 a line written again in flight)".into()
            } else {
                "it writes memory".into()
            },
        ));
    }
    if matches!(
        d.instr.mnemonic(),
        Mnemonic::Div
            | Mnemonic::Idiv
            | Mnemonic::Sqrtsd
            | Mnemonic::Sqrtss
            | Mnemonic::Divsd
            | Mnemonic::Divss
            | Mnemonic::Sqrtpd
            | Mnemonic::Sqrtps
            | Mnemonic::Divpd
            | Mnemonic::Divps
    ) {
        candidates.push((
            "divider".into(),
            "divider busy".into(),
            "a divide or square root: its latency depends on the data".into(),
        ));
    }

    // Extra events: confirm or rule out.
    let landed_on = |k: usize, ev: usize| -> u64 {
        code.counts.get(k).map_or(0, |c| c[ev]) + code.counts.get(k + 1).map_or(0, |c| c[ev])
    };
    let mut confirmed: Vec<String> = Vec::new();
    for (kind, frags) in EVENT_HINTS {
        for (ev, info) in code.events.iter().enumerate() {
            let lname = info.name.to_ascii_lowercase();
            if !frags.iter().any(|f| lname.contains(f)) {
                continue;
            }
            let n = landed_on(i, ev);
            if n > 0 {
                if let Some(c) = candidates.iter_mut().find(|c| c.0 == kind) {
                    c.2.push_str(&format!("; confirmed by {n} {} samples here", info.name));
                    confirmed.push(kind.to_string());
                }
            } else if candidates.iter().any(|c| c.0 == kind) {
                candidates.retain(|c| c.0 != kind);
                ruled_out.push(RuledOut {
                    code: kind.to_string(),
                    why: format!("{} was sampled but has no samples here", info.name),
                });
            }
        }
    }
    // Samples that landed where a mispredict's refetch lands make it the
    // likelier candidate when they are most of the charge.
    if let Some(k) = candidates.iter().position(|c| c.0 == "mispredict") {
        if row.refetch_samples > 0.5 * row.charged_samples {
            let mut c = candidates.remove(k);
            c.2.push_str(&format!(
                "; {:.0} of its {:.0} samples landed where a refetch lands",
                row.refetch_samples, row.charged_samples
            ));
            candidates.insert(0, c);
        }
    }
    // A busy sibling on the host: up to its share of the cycles, beside
    // whatever the rules name.
    let sibling = rep
        .core_share
        .filter(|s| *s < crate::cpi::SHARED_CORE)
        .map(|share| {
            let most = (1.0 - share) * row.cpi.unwrap_or(0.0);
            (share, most.min(dynamic.max(0.0)))
        });
    // Below an upper-bound frequency the rules' candidates apply even when
    // the bound leaves no excess.
    if dynamic > 0.0 || row.freq_upper_bound {
        let n = candidates.len();
        let sibling_most = sibling.map_or(0.0, |s| s.1);
        if let Some((share, most)) = sibling {
            culprits.push(Culprit {
                code: "smt".into(),
                name: "a shared core (busy SMT sibling)".into(),
                kind: "dynamic".into(),
                evidence: format!(
                    "the run had {:.0} % of an idle core (the collector's throughput probe); beyond what throughput-bound best cases take in, the sibling may cost any instruction cycles",
                    100.0 * share
                ),
                cycles: [0.0, most],
                share: [0.0, 0.0],
            });
        }
        if n == 0 {
            culprits.push(Culprit {
                code: "unexplained".into(),
                name: "unexplained stall".into(),
                kind: "dynamic".into(),
                evidence: "no rule applies to this instruction".into(),
                cycles: [(dynamic - sibling_most).max(0.0), dynamic],
                share: [0.0, 0.0],
            });
        }
        for (c, name, evidence) in candidates {
            let sure = n == 1 || confirmed.contains(&c);
            culprits.push(Culprit {
                code: c,
                name,
                kind: "dynamic".into(),
                evidence,
                cycles: [
                    if sure && n == 1 {
                        (dynamic - sibling_most).max(0.0)
                    } else {
                        0.0
                    },
                    dynamic,
                ],
                share: [0.0, 0.0],
            });
        }
    }
    let stall = st + dynamic;
    for c in &mut culprits {
        if stall > 0.0 {
            c.share = [c.cycles[0] / stall, c.cycles[1] / stall];
        }
    }
    let mut share_of = "stall cycles".to_string();
    let mut frequency_note = None;
    if let (true, Some(f), Some(cpi)) = (row.freq_upper_bound, row.freq, row.cpi) {
        // The frequency is a bound from above: at the bound the model's
        // static reasons explain their part; at any lower frequency the
        // remaining cycles are dynamic stalls, all of them in the limit. So
        // static culprits range from nothing to their part at the bound and
        // dynamic ones up to every cycle of the instruction.
        share_of = "all its cycles".into();
        frequency_note = Some(format!(
            "frequency unknown: every sample of this block's class may be a load stall, so {} executions is the most it can have run (if every load hit L1); fewer executions leave more of its cycles to dynamic stalls",
            crate::views::cpi_text::si(f)
        ));
        let dynamic_candidates = culprits
            .iter()
            .filter(|c| c.kind == "dynamic" && c.code != "smt")
            .count();
        // The sibling's part is at most its share of every cycle.
        let sibling_part = sibling.map_or(0.0, |(share, _)| 1.0 - share);
        for c in &mut culprits {
            if c.kind == "static" {
                // At most all of them (a block's samples may sit on its
                // neighbour, leaving this one below its best case).
                c.share = [0.0, (c.cycles[1] / cpi).min(1.0)];
            } else if c.code == "smt" {
                c.share = [0.0, sibling_part];
            } else {
                let lo = if dynamic_candidates == 1 {
                    (dynamic / cpi - sibling_part).max(0.0)
                } else {
                    0.0
                };
                c.share = [lo, 1.0];
            }
        }
    }
    culprits.sort_by(|a, b| b.share[1].total_cmp(&a.share[1]));

    // Skid: where the charged samples landed.
    let mut landed_at = Vec::new();
    if let Some(t) = code.time_event {
        // A compare fused with its branch is charged what lands after the branch.
        let src = if fused_next { i + 1 } else { i };
        let src_addr = cfg.insns[src].addr;
        let after = src_addr + cfg.insns[src].instr.len() as u64;
        if src + 1 < cfg.insns.len() && cfg.block_at(after) == cfg.block_at(src_addr) {
            // And past instructions done at rename, which are never the
            // oldest for long (the charge skips back over them).
            let mut k = src + 1;
            while k < cfg.insns.len() && cfg.block_at(cfg.insns[k].addr) == cfg.block_at(src_addr) {
                landed_at.push((
                    format!("{:#x}", cfg.insns[k].addr),
                    code.counts[k][t] as f64,
                ));
                if !rep.instructions[k].done_at_rename {
                    break;
                }
                k += 1;
            }
        } else {
            for e in cfg
                .edges
                .iter()
                .filter(|e| Some(e.from) == cfg.block_at(src_addr))
            {
                let first = cfg.blocks[e.to].insns.start;
                landed_at.push((
                    format!("{:#x}", cfg.insns[first].addr),
                    code.counts[first][t] as f64,
                ));
            }
        }
    }
    Ok(CulpritReport {
        image: rep.image.clone(),
        function: rep.function.clone(),
        addr: format!("{addr:#x}"),
        instruction: d.text.clone(),
        source: row.source.clone(),
        dynamic_cycles_total: row.freq.map(|f| f * dynamic),
        row,
        skid: Skid { landed_at },
        stall_cycles: stall,
        culprits,
        ruled_out,
        share_of,
        frequency_note,
    })
}

pub fn render(r: &CulpritReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let row = &r.row;
    let _ = writeln!(
        out,
        "{} {}  in {} ({})",
        r.addr, r.instruction, r.function, r.image
    );
    if let Some(s) = &r.source {
        let _ = writeln!(out, "source    {s}");
    }
    let samples: Vec<String> = row
        .samples
        .iter()
        .map(|(e, n)| format!("{e} {n}"))
        .collect();
    let _ = writeln!(
        out,
        "samples   landed here: {}; charged here after skid: {:.0}",
        if samples.is_empty() {
            "none".to_string()
        } else {
            samples.join(", ")
        },
        row.charged_samples
    );
    if !r.skid.landed_at.is_empty() {
        let l: Vec<String> = r
            .skid
            .landed_at
            .iter()
            .map(|(a, n)| format!("{n:.0} at {a}"))
            .collect();
        let _ = writeln!(
            out,
            "skid      samples it causes land after it (past instructions done at rename, into successors): {}",
            l.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "freq      {}{} ({})   cpi {}   best case {:.2}   static stall {:.2}   dynamic stall {}",
        if row.freq_upper_bound { "<=" } else { "" },
        row.freq.map_or("-".into(), crate::views::cpi_text::si),
        row.confidence.as_str(),
        row.cpi
            .filter(|_| crate::views::cpi_text::ran(row.freq))
            .map_or("-".into(), |c| format!("{c:.2}")),
        row.best_cpi,
        row.static_stall,
        row.dynamic_stall
            .filter(|_| crate::views::cpi_text::ran(row.freq))
            .map_or("-".into(), |c| format!("{c:+.2}"))
    );
    if let Some(t) = r.dynamic_cycles_total {
        let _ = writeln!(
            out,
            "          {} dynamic stall cycles over the run",
            crate::views::cpi_text::si(t.max(0.0))
        );
    }
    if let Some(n) = &r.frequency_note {
        let _ = writeln!(out, "note      {n}");
    }
    let _ = writeln!(out);
    if r.culprits.is_empty() {
        let _ = writeln!(out, "no stall cycles to explain");
    } else {
        let _ = writeln!(
            out,
            "{:>13}  {:<8} {:<12} culprit — evidence   (shares of {})",
            "share", "kind", "code", r.share_of
        );
        for c in &r.culprits {
            // A range that rounds to one figure prints as that figure
            // ("0%", not "0-0%").
            let (lo, hi) = (
                format!("{:.0}", 100.0 * c.share[0]),
                format!("{:.0}", 100.0 * c.share[1]),
            );
            let share = if lo == hi {
                format!("{hi}%")
            } else {
                format!("{lo}-{hi}%")
            };
            let _ = writeln!(
                out,
                "{share:>13}  {:<8} {:<12} {} — {}",
                c.kind, c.code, c.name, c.evidence
            );
        }
    }
    for o in &r.ruled_out {
        let _ = writeln!(out, "{:>13}  ruled out {:<12} {}", "", o.code, o.why);
    }
    out
}

/// The conditional or indirect branch that instruction `i` is the first
/// instruction after, on either of its paths (the first found). A loop's
/// back edge does not count: it is predicted but at the loop's exit, which
/// takes the other path.
fn branch_into(code: &FunctionCode, i: usize) -> Option<usize> {
    let cfg = &code.cfg;
    let b = cfg.block_at(cfg.insns[i].addr)?;
    if cfg.blocks[b].insns.start != i {
        return None;
    }
    cfg.predecessors(b)
        .filter(|e| !cfg.dominates(b, e.from))
        .map(|e| cfg.blocks[e.from].insns.end - 1)
        .find(|&last| crate::disasm::may_mispredict(&cfg.insns[last]))
}

/// Whether instruction `k` is a conditional branch closing a loop (one of
/// its edges goes back to a block dominating it).
fn is_loop_latch(code: &FunctionCode, k: usize) -> bool {
    let cfg = &code.cfg;
    if cfg.insns[k].instr.flow_control() != FlowControl::ConditionalBranch {
        return false;
    }
    cfg.block_at(cfg.insns[k].addr).is_some_and(|p| {
        cfg.blocks[p].insns.end - 1 == k && cfg.successors(p).any(|e| cfg.dominates(e.to, p))
    })
}
