//! Samples after a call belong to the callee's return.
//!
//! A timer sample lands on the instruction retired after the one the
//! pipeline waits on (the skid rule, datasets/skid). The instruction
//! retired before a call's return address is not the call but the callee's
//! `ret`, so samples landing on a return address are the callee's: msort's
//! merge loop took 1380 samples on the `test` after `call compare` (Zen 4),
//! which the per-function rule charged to the `call` — 1.8 cycles of each
//! of compare's 98 M calls counted in its caller instead.
//!
//! [`charge_returns`] moves them, among functions analyzed together: a
//! direct call whose target starts one of them marks its return address
//! (its samples leave the caller's charges) and gives the samples to the
//! target's `ret` instructions, evenly when it has several.
//!
//! Limits: only direct calls to functions in the set (an indirect call, or
//! a callee in another image or without samples, keeps today's rule); a
//! return address that is also a jump target keeps its samples too (they
//! may be the jump's); samples landing on a callee's first instruction
//! still stay there.

use crate::cfg::EdgeKind;
use crate::function_code::FunctionCode;
use iced_x86::FlowControl;
use std::collections::HashMap;

/// The direct calls among `codes`: (caller, index of the call instruction
/// in its code, callee), each an index into `codes`.
pub fn direct_calls(codes: &[FunctionCode]) -> Vec<(usize, usize, usize)> {
    let by_start: HashMap<u64, usize> = codes
        .iter()
        .enumerate()
        .map(|(k, c)| (c.function.start, k))
        .collect();
    let mut out = Vec::new();
    for (caller, code) in codes.iter().enumerate() {
        for (i, d) in code.cfg.insns.iter().enumerate() {
            if d.instr.flow_control() != FlowControl::Call || crate::disasm::is_bad(d) {
                continue;
            }
            if let Some(&callee) = by_start.get(&d.instr.near_branch_target()) {
                out.push((caller, i, callee));
            }
        }
    }
    out
}

/// Marks return addresses of calls into `codes` and charges their samples
/// to the callees' returns (see the module docs).
pub fn charge_returns(codes: &mut [FunctionCode]) {
    // Per caller: (return address's index, callee).
    let mut sites: Vec<Vec<(usize, usize)>> = vec![Vec::new(); codes.len()];
    for (caller, i, callee) in direct_calls(codes) {
        if i + 1 < codes[caller].cfg.insns.len() {
            sites[caller].push((i + 1, callee));
        }
    }
    // (callee, samples, cycles), gathered before any is changed.
    let mut moves: Vec<(usize, f64, f64)> = Vec::new();
    for (code, sites) in codes.iter_mut().zip(sites) {
        let targets: Vec<bool> = branch_targets(code);
        for (after, callee) in sites {
            if targets[after] {
                continue;
            }
            code.return_site[after] = true;
            let s = code.time_samples(after) as f64;
            if s > 0.0 {
                moves.push((callee, s, code.cycles[after]));
            }
        }
    }
    for (callee, s, c) in moves {
        let code = &mut codes[callee];
        let rets: Vec<usize> = (0..code.cfg.insns.len())
            .filter(|&i| code.cfg.insns[i].instr.flow_control() == FlowControl::Return)
            .collect();
        if rets.is_empty() {
            continue;
        }
        let k = rets.len() as f64;
        for r in rets {
            code.from_returns[r].0 += s / k;
            code.from_returns[r].1 += c / k;
        }
    }
}

/// Per instruction: some branch of the function jumps to it (an edge into
/// its block that is not a fall-through).
fn branch_targets(code: &FunctionCode) -> Vec<bool> {
    let cfg = &code.cfg;
    let mut out = vec![false; cfg.insns.len()];
    for b in 0..cfg.blocks.len() {
        let is_target = cfg.predecessors(b).any(|e| e.kind != EdgeKind::FallThrough);
        if is_target {
            out[cfg.blocks[b].insns.start] = true;
        }
    }
    out
}
