//! How often a function is called, from its callers' frequencies.
//!
//! A small function's samples say little about how often it ran: its one
//! block is short, its call and return overlap with the caller, and its
//! cycles may be stalls. Its callers' blocks often know better. When every
//! way into a function is a direct call or tail jump from functions that
//! were analyzed, its entry frequency is the sum of the frequencies of the
//! blocks holding those calls; the frequency estimate then weighs that
//! against the function's own samples ([`crate::frequency::estimate`]).
//!
//! "Every way in" is checked on the image's bytes, not trusted: every
//! 4-byte window in executable segments read as a rel32 displacement
//! (calls, jumps, `lea sym(%rip)`), every aligned 8-byte value in loaded
//! data (pointers, PIE relocation addends) and, in non-PIE executables,
//! every 4-byte absolute immediate is counted as a reference to the
//! function it points at. A function is hinted only if its references
//! are exactly the direct calls found in the analyzed functions and it is
//! not exported (other images could call it). Stray byte patterns that
//! happen to point at a function only cost the hint, never a wrong one.
//!
//! The other direction too: when every call to a function comes from one
//! block of one caller, that block runs as often as the function is
//! entered divided by its call sites there, and the callee's own samples
//! estimate that ([`single_block_callees`]).
//!
//! Limits: one level (callers' own frequencies come from their samples,
//! not from their callers, and callees' from theirs); calls from other
//! images through the PLT are ruled out by the export check only.

use crate::cfg::Exit;
use crate::elf_symbols::FunctionRange;
use crate::frequency::Confidence;
use crate::function_code::FunctionCode;
use crate::image::ElfImage;
use object::{Object, ObjectSegment, ObjectSymbol, SegmentFlags};
use std::collections::{HashMap, HashSet};

/// Functions with more distinct callers than this get no hint: analyzing
/// every caller of a popular function would cost `dcpi cpi --func` its
/// speed.
pub const MAX_CALLERS: usize = 16;

/// References to each function start found in an image's bytes.
pub struct References {
    /// Function start -> (references counted, addresses of the rel32 ones).
    refs: HashMap<u64, (usize, Vec<u64>)>,
    exported: HashSet<u64>,
}

impl References {
    pub fn build(image: &ElfImage) -> Self {
        let starts: HashSet<u64> = image.symbols.functions().iter().map(|f| f.start).collect();
        let mut refs: HashMap<u64, (usize, Vec<u64>)> = HashMap::new();
        let mut exported = HashSet::new();
        let Ok(file) = object::File::parse(image.data()) else {
            return References { refs, exported };
        };
        let pie_or_lib = file.kind() != object::ObjectKind::Executable;
        for sym in file.dynamic_symbols() {
            if sym.is_definition() && sym.is_global() {
                exported.insert(sym.address());
            }
        }
        for seg in file.segments() {
            let Ok(bytes) = seg.data() else { continue };
            let va = seg.address();
            let exec = matches!(seg.flags(), SegmentFlags::Elf { p_flags } if p_flags & object::elf::PF_X != 0);
            if exec {
                for p in 0..bytes.len().saturating_sub(3) {
                    let w = [bytes[p], bytes[p + 1], bytes[p + 2], bytes[p + 3]];
                    let site = va + p as u64;
                    let rel = i32::from_le_bytes(w);
                    let target = (site + 4).wrapping_add(rel as i64 as u64);
                    // rel 0 is the zero displacement of padding no-ops
                    // (`nopl 0x0(%rax,%rax,1)`) just before a function.
                    if rel != 0 && starts.contains(&target) {
                        let e = refs.entry(target).or_default();
                        e.0 += 1;
                        e.1.push(site);
                    }
                    if !pie_or_lib {
                        let abs = u32::from_le_bytes(w) as u64;
                        if starts.contains(&abs) {
                            refs.entry(abs).or_default().0 += 1;
                        }
                    }
                }
            } else {
                let skip = (8 - (va % 8) as usize) % 8;
                for chunk in bytes.get(skip..).unwrap_or(&[]).chunks_exact(8) {
                    let v = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
                    if starts.contains(&v) {
                        refs.entry(v).or_default().0 += 1;
                    }
                }
            }
        }
        References { refs, exported }
    }

    /// Addresses of rel32 displacements pointing at `func` (a direct call
    /// is its address + 1).
    pub fn rel32_sites(&self, func: u64) -> &[u64] {
        self.refs.get(&func).map_or(&[], |r| &r.1)
    }

    fn count(&self, func: u64) -> usize {
        self.refs.get(&func).map_or(0, |r| r.0)
    }
}

/// Relative error of a block frequency of each confidence (the bounds of
/// [`Confidence`]'s classes).
fn relative_error(c: Confidence) -> f64 {
    match c {
        Confidence::High => 0.15,
        Confidence::Medium => 0.35,
        Confidence::Low => 1.0,
    }
}

/// One analyzed function as a caller: its code and its block frequencies.
pub struct Caller<'a> {
    pub code: &'a FunctionCode,
    pub freq: &'a [f64],
    pub confidence: &'a [Confidence],
}

/// How often `callee` is called (frequency, standard error), or None when
/// some way into it is not a direct call from `callers`.
pub fn calls_into(
    callee: &FunctionRange,
    callers: &[Caller],
    refs: &References,
) -> Option<(f64, f64)> {
    if refs.exported.contains(&callee.start) {
        return None;
    }
    let (mut sites, mut sum, mut var) = (0usize, 0.0f64, 0.0f64);
    for c in callers {
        let cfg = &c.code.cfg;
        for (b, blk) in cfg.blocks.iter().enumerate() {
            let calls = blk
                .calls
                .iter()
                .filter(|t| **t == Some(callee.start))
                .count();
            let tail = matches!(blk.exit, Some(Exit::TailCall(t)) if t == callee.start) as usize;
            let n = calls + tail;
            if n == 0 {
                continue;
            }
            sites += n;
            let f = c.freq.get(b).copied().unwrap_or(0.0);
            let sd = relative_error(c.confidence.get(b).copied().unwrap_or(Confidence::Low)) * f;
            sum += n as f64 * f;
            var += (n as f64 * sd).powi(2);
        }
    }
    // Every reference must be one of those calls.
    if sites == 0 || sites != refs.count(callee.start) || sum <= 0.0 {
        return None;
    }
    Some((sum, var.sqrt()))
}

/// Callees of `code` whose every reference is a direct call (or tail jump)
/// from one block of `code`: (callee start, block, call sites in it).
pub fn single_block_callees(code: &FunctionCode, refs: &References) -> Vec<(u64, usize, usize)> {
    let mut sites: HashMap<u64, Vec<usize>> = HashMap::new();
    for (b, blk) in code.cfg.blocks.iter().enumerate() {
        for t in blk.calls.iter().flatten() {
            sites.entry(*t).or_default().push(b);
        }
        if let Some(Exit::TailCall(t)) = blk.exit {
            sites.entry(t).or_default().push(b);
        }
    }
    let mut out: Vec<(u64, usize, usize)> = sites
        .into_iter()
        .filter(|(t, blocks)| {
            !refs.exported.contains(t)
                && *t != code.function.start
                && blocks.iter().all(|b| *b == blocks[0])
                && blocks.len() == refs.count(*t)
        })
        .map(|(t, blocks)| (t, blocks[0], blocks.len()))
        .collect();
    out.sort_unstable();
    out
}

/// How often a function is entered by its own samples alone: its entry
/// block's class estimate (frequency, standard error), when the class has
/// samples, is not only an upper bound and is at least medium confidence.
pub fn own_entry_estimate(rep: &crate::cpi::CpiReport) -> Option<(f64, f64)> {
    let entry = rep.blocks.first()?;
    let e = rep
        .class_estimates
        .iter()
        .find(|e| e.class == entry.class)?;
    (e.samples > 0.0 && !e.upper_bound && e.confidence >= Confidence::Medium)
        .then_some((e.freq, e.standard_error))
}
