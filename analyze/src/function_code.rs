//! One function ready for instruction-level views: its instructions
//! (disassembled from the profiled image), CFG, source lines and the samples
//! that landed on each instruction. `dcpi list` shows this as it is; the
//! CPI analysis ([`crate::cpi`]) adds frequencies and cycles.

use crate::cfg::{is_noreturn_name, Cfg, ImageAccess};
use crate::disasm::{disassemble, Syntax};
use crate::elf_symbols::FunctionRange;
use crate::error::{AnalyzeError, Result};
use crate::image::ElfImage;
use crate::register_values::CALLER_SAVED;
use crate::samples::{EventInfo, ImageSamples};
use crate::source_lines::SourceLines;
use dcpi_models::block::Decoded;
use iced_x86::FlowControl;
use std::collections::HashMap;

#[derive(Clone)]
pub struct FunctionCode {
    pub image_path: String,
    pub function: FunctionRange,
    pub cfg: Cfg,
    pub events: Vec<EventInfo>,
    pub time_event: Option<usize>,
    /// Per instruction: counts per event.
    pub counts: Vec<Vec<u64>>,
    /// Per instruction: cycles its time-event samples stand for.
    pub cycles: Vec<f64>,
    /// Per instruction: (file, line).
    pub lines: Vec<Option<(String, u32)>>,
    /// Samples inside the function's extent but not at an instruction start.
    pub misaligned_samples: u64,
    /// Per instruction: it reads memory that stays in L1 while hot
    /// ([`crate::resident_loads`]).
    pub resident_loads: Vec<bool>,
    /// Per instruction: the return address of a direct call to a function
    /// analyzed with this one; its samples are that function's return's
    /// ([`crate::return_charges`]).
    pub return_site: Vec<bool>,
    /// Per instruction (a `ret`): samples and cycles charged to it from
    /// return addresses in its callers.
    pub from_returns: Vec<(f64, f64)>,
    /// The bodies of the straight-line leaf functions this one calls
    /// directly, by entry address ([`straight_leaf`]): a loop path's model
    /// runs them where the calls are.
    pub straight_callees: HashMap<u64, Vec<Decoded>>,
    /// Direct calls into this function from the functions analyzed with
    /// it, and how many of them have their result decide a branch soon
    /// after ([`crate::result_use`]).
    pub result_sites: (u32, u32),
}

/// Most instructions of a callee modeled inside its caller's loop path.
const STRAIGHT_LEAF_MAX: usize = 32;

/// The instructions of the function starting at `addr` when it is a
/// straight-line leaf: no branch or call before its `ret`, at most
/// `STRAIGHT_LEAF_MAX` (32) instructions (msort's `compare`, hashtab's `hash`;
/// not a PLT stub, whose first instruction is a jump).
pub fn straight_leaf(image: &ElfImage, addr: u64) -> Option<Vec<Decoded>> {
    let f = image.symbols.function_at(addr)?;
    if f.start != addr || f.end <= addr {
        return None;
    }
    let len = ((f.end - addr) as usize).min(STRAIGHT_LEAF_MAX * 15);
    let bytes = image.bytes(addr, len)?;
    // Decoded bare first: most callees branch early, and formatting every
    // instruction of the window was most of this test's cost.
    let mut dec = iced_x86::Decoder::with_ip(64, bytes, addr, iced_x86::DecoderOptions::NONE);
    let mut count = 0;
    while dec.can_decode() && count < STRAIGHT_LEAF_MAX {
        let i = dec.decode();
        count += 1;
        match i.flow_control() {
            _ if i.is_invalid() => return None,
            FlowControl::Next => {}
            FlowControl::Return => {
                let end = dec.position();
                return Some(disassemble(&bytes[..end], addr, Syntax::Att, &|_| None));
            }
            _ => return None,
        }
    }
    None
}

/// The CFG of a function of `image`: branch targets labeled objdump-style
/// when `labels`, callees that never return inferred `depth` calls deep.
/// None when its bytes are not inside one loaded segment.
pub fn function_cfg(
    image: &ElfImage,
    f: &FunctionRange,
    syntax: Syntax,
    labels: bool,
    depth: u32,
) -> Option<Cfg> {
    let bytes = image.bytes(f.start, (f.end - f.start) as usize)?;
    let label = |a: u64| if labels { image.symbols.label(a) } else { None };
    let insns = disassemble(bytes, f.start, syntax, &label);
    let read = |a: u64, n: usize| image.bytes(a, n).map(|b| b.to_vec());
    let noreturn = |a: u64| callee_never_returns(image, a, depth);
    let clobbers = |d: &Decoded| match crate::disasm::direct_target(d) {
        Some(t) => callee_clobbers(image, t, depth),
        None => CALLER_SAVED,
    };
    Some(Cfg::build(
        insns,
        f.start,
        f.end,
        &ImageAccess {
            read: &read,
            is_noreturn: &noreturn,
            clobbers: &clobbers,
        },
    ))
}

/// Most bytes of a callee read for what it writes.
const CLOBBERS_MAX_BYTES: u64 = 4096;

/// The caller-saved general registers ([`CALLER_SAVED`]) the function at
/// `addr` of `image` may change, as a mask over
/// [`crate::register_values::gpr_index`]: those its instructions write, and
/// those its direct callees and tail calls do, `depth` calls deep. All of
/// them for a PLT entry (another image's code, interposable), an indirect
/// call or jump, a function over `CLOBBERS_MAX_BYTES` (4 KiB), or past `depth`.
/// Compilers keep values in caller-saved registers across calls to code
/// they compiled and know leaves them alone (gcc's IPA register
/// allocation): hashtab's `main` keeps its array pointer in %r8 across its
/// calls to `contains` and `next_key`.
pub fn callee_clobbers(image: &ElfImage, addr: u64, depth: u32) -> u16 {
    remembered(&image.clobbers, (addr, depth), || {
        clobbers_of(image, addr, depth)
    })
}

/// `key`'s answer in `cache`, worked out by `work` the first time. The
/// cache is not held while working it out: the answer recurses into
/// callees, whose answers go to the same cache.
fn remembered<V: Copy>(
    cache: &std::sync::Mutex<HashMap<(u64, u32), V>>,
    key: (u64, u32),
    work: impl FnOnce() -> V,
) -> V {
    let lock = || cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&v) = lock().get(&key) {
        return v;
    }
    let v = work();
    lock().insert(key, v);
    v
}

fn clobbers_of(image: &ElfImage, addr: u64, depth: u32) -> u16 {
    let Some(p) = image.symbols.procedure(addr) else {
        return CALLER_SAVED;
    };
    let Some(f) = image.symbols.function_at(addr) else {
        return CALLER_SAVED;
    };
    if depth == 0 || p.start != addr || f.start != addr || p.name.ends_with("@plt") {
        return CALLER_SAVED;
    }
    if f.end <= f.start || f.end - f.start > CLOBBERS_MAX_BYTES {
        return CALLER_SAVED;
    }
    let Some(bytes) = image.bytes(f.start, (f.end - f.start) as usize) else {
        return CALLER_SAVED;
    };
    let mut dec = iced_x86::Decoder::with_ip(64, bytes, f.start, iced_x86::DecoderOptions::NONE);
    let mut info = iced_x86::InstructionInfoFactory::new();
    let mut mask = 0u16;
    while dec.can_decode() && mask != CALLER_SAVED {
        let i = dec.decode();
        if i.is_invalid() {
            return CALLER_SAVED;
        }
        mask |= crate::register_values::written_gprs(&mut info, &i) & CALLER_SAVED;
        let outside = |t: u64| t < f.start || t >= f.end;
        mask |= match i.flow_control() {
            FlowControl::Call => callee_clobbers(image, i.near_branch_target(), depth - 1),
            FlowControl::IndirectCall | FlowControl::IndirectBranch => CALLER_SAVED,
            FlowControl::UnconditionalBranch | FlowControl::ConditionalBranch
                if outside(i.near_branch_target()) =>
            {
                callee_clobbers(image, i.near_branch_target(), depth - 1)
            }
            _ => 0,
        };
    }
    mask
}

/// Whether the function at `addr` never returns: by name (exit, abort, ...),
/// or because no path through it leaves other than by such a call or a trap
/// (gcc's own inference, e.g. a `fail()` that calls exit). Looks `depth`
/// calls deep.
pub fn callee_never_returns(image: &ElfImage, addr: u64, depth: u32) -> bool {
    remembered(&image.noreturn, (addr, depth), || {
        never_returns(image, addr, depth)
    })
}

fn never_returns(image: &ElfImage, addr: u64, depth: u32) -> bool {
    let Some(p) = image.symbols.procedure(addr) else {
        return false;
    };
    if p.start != addr {
        return false;
    }
    if is_noreturn_name(&p.name) {
        return true;
    }
    if depth == 0 || p.name.ends_with("@plt") {
        return false;
    }
    let Some(f) = image.symbols.function_at(addr) else {
        return false;
    };
    if f.end - f.start > 4096 {
        return false;
    }
    let Some(cfg) = function_cfg(image, &f, Syntax::Att, false, depth - 1) else {
        return false;
    };
    let exits: Vec<_> = (0..cfg.blocks.len())
        .filter(|&b| cfg.reachable(b))
        .filter_map(|b| cfg.blocks[b].exit)
        .collect();
    !exits.is_empty()
        && exits.iter().all(|e| {
            matches!(
                e,
                crate::cfg::Exit::NoReturnCall(_) | crate::cfg::Exit::Trap
            )
        })
}

impl FunctionCode {
    pub fn load(
        image: &ElfImage,
        samples: &ImageSamples,
        function: &FunctionRange,
        syntax: Syntax,
        lines: Option<&SourceLines>,
    ) -> Result<Self> {
        let cfg =
            function_cfg(image, function, syntax, true, 2).ok_or_else(|| AnalyzeError::Image {
                path: image.path.clone(),
                detail: format!(
                    "{} [{:#x}-{:#x}] is not inside one loaded segment",
                    function.name, function.start, function.end
                ),
            })?;
        let nev = samples.events.len();
        let mut counts = vec![vec![0u64; nev]; cfg.insns.len()];
        let mut cycles = vec![0.0; cfg.insns.len()];
        let mut misaligned = 0;
        if let (Some(lo), Some(hi)) = (
            image.offset_of_vaddr(function.start),
            image.offset_of_vaddr(function.end - 1),
        ) {
            for (&off, s) in samples.by_offset.range(lo..=hi) {
                let Some(va) = image.vaddr_of_offset(off) else {
                    continue;
                };
                match cfg.insns.binary_search_by_key(&va, |d| d.addr) {
                    Ok(i) => {
                        for (c, n) in counts[i].iter_mut().zip(&s.counts) {
                            *c += n;
                        }
                        cycles[i] += s.cycles;
                    }
                    Err(_) => misaligned += s.counts.iter().sum::<u64>(),
                }
            }
        }
        let lines = cfg
            .insns
            .iter()
            .map(|d| lines.and_then(|l| l.line(d.addr)))
            .collect();
        let mut straight_callees = HashMap::new();
        for d in &cfg.insns {
            if d.instr.flow_control() != FlowControl::Call {
                continue;
            }
            let Some(target) = crate::disasm::direct_target(d) else {
                continue;
            };
            if let std::collections::hash_map::Entry::Vacant(e) = straight_callees.entry(target) {
                if let Some(body) = straight_leaf(image, target) {
                    e.insert(body);
                }
            }
        }
        Ok(FunctionCode {
            image_path: image.path.clone(),
            function: function.clone(),
            events: samples.events.clone(),
            time_event: samples.time_event,
            counts,
            cycles,
            lines,
            misaligned_samples: misaligned,
            resident_loads: crate::resident_loads::resident_loads(&cfg.insns, &image.symbols),
            return_site: vec![false; cfg.insns.len()],
            from_returns: vec![(0.0, 0.0); cfg.insns.len()],
            straight_callees,
            result_sites: (0, 0),
            cfg,
        })
    }

    /// Samples of the time event at instruction `i`.
    /// Samples of instruction `i` per event name, events without any left out.
    pub fn samples_by_event(&self, i: usize) -> std::collections::BTreeMap<String, u64> {
        self.events
            .iter()
            .zip(&self.counts[i])
            .filter(|(_, n)| **n > 0)
            .map(|(e, n)| (e.name.clone(), *n))
            .collect()
    }

    pub fn time_samples(&self, i: usize) -> u64 {
        self.time_event.map_or(0, |t| self.counts[i][t])
    }

    pub fn total_samples(&self) -> Vec<u64> {
        let mut t = vec![0; self.events.len()];
        for c in &self.counts {
            for (a, b) in t.iter_mut().zip(c) {
                *a += b;
            }
        }
        t
    }
}
