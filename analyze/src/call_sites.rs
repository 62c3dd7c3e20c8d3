//! Which functions of an image can be called only by the direct calls the
//! analysis sees: the references to each function found in the image's
//! bytes. [`crate::linked_functions`] ties such a function's entry
//! frequency to its call sites.
//!
//! "Every way in" is checked on the image's bytes, not trusted: every
//! 4-byte window in executable segments read as a rel32 displacement
//! (calls, jumps, `lea sym(%rip)`; inside a function's extent only where
//! the bytes before it make it an operand), every aligned 8-byte value in loaded
//! data (pointers, PIE relocation addends) and, in non-PIE executables,
//! every 4-byte absolute immediate is counted as a reference to the
//! function it points at. A function is linked only if its references
//! are exactly the direct calls found in the analyzed functions and it is
//! not exported (other images could call it). Stray byte patterns that
//! happen to point at a function only cost the link, never a wrong one.
//!
//! Limits: calls from other images through the PLT are ruled out by the
//! export check only.

use crate::image::ElfImage;
use object::{Object, ObjectSegment, ObjectSymbol, SegmentFlags};
use std::collections::{HashMap, HashSet};

/// Functions with more distinct callers than this are not followed to
/// their callers by `dcpi cpi --func`: analyzing every caller of a popular
/// function would cost it its speed.
pub const MAX_CALLERS: usize = 16;

/// References to each function start found in an image's bytes.
pub struct References {
    /// Function start -> (references counted, addresses of the rel32 and short-jump ones).
    refs: HashMap<u64, (usize, Vec<u64>)>,
    exported: HashSet<u64>,
}

/// Function starts as a bit per address between the lowest and the
/// highest: every 4-byte window of the code is looked up, and a range
/// check and one bit beat hashing (libpython's 23 MB: 45 ms -> 10). Starts
/// spread over more than [`StartSet::MAX_SPAN`] addresses (no real image)
/// fall back to a sorted list.
enum StartSet {
    Bits { lo: u64, bits: Vec<u64> },
    Sorted(Vec<u64>),
}

impl StartSet {
    const MAX_SPAN: u64 = 1 << 28;

    fn new(starts: impl Iterator<Item = u64> + Clone) -> Self {
        let lo = starts.clone().min().unwrap_or(0);
        let hi = starts.clone().max().unwrap_or(0);
        if hi - lo > Self::MAX_SPAN {
            let mut v: Vec<u64> = starts.collect();
            v.sort_unstable();
            return StartSet::Sorted(v);
        }
        let mut bits = vec![0u64; ((hi - lo) / 64 + 1) as usize];
        for s in starts {
            let k = s - lo;
            bits[(k / 64) as usize] |= 1 << (k % 64);
        }
        StartSet::Bits { lo, bits }
    }

    fn contains(&self, a: u64) -> bool {
        match self {
            StartSet::Bits { lo, bits } => {
                let k = a.wrapping_sub(*lo);
                bits.get((k / 64) as usize)
                    .is_some_and(|w| w & (1 << (k % 64)) != 0)
            }
            StartSet::Sorted(v) => v.binary_search(&a).is_ok(),
        }
    }
}

/// Function extents (start, end), sorted by start: where the bytes are
/// instructions.
struct Extents(Vec<(u64, u64)>);

impl Extents {
    fn new(ranges: impl Iterator<Item = (u64, u64)>) -> Self {
        let mut v: Vec<(u64, u64)> = ranges.filter(|r| r.1 > r.0).collect();
        v.sort_unstable();
        Extents(v)
    }

    /// The extent of the last function starting at or before `a`, if it
    /// holds `a` (where extents nest, an outer one may be missed: a window
    /// then counts as outside code, which can only cost a link).
    fn containing(&self, a: u64) -> Option<(u64, u64)> {
        let i = self.0.partition_point(|r| r.0 <= a).checked_sub(1)?;
        (a < self.0[i].1).then_some(self.0[i])
    }
}

/// Whether the four bytes at `p` can be a rel32 operand by the bytes
/// before them: a `call`/`jmp` (e8/e9) or `jcc` (0f 80-8f) displacement,
/// or a RIP-relative memory operand's (its ModRM, mod 00 r/m 101, comes
/// right before the displacement). In code every real reference is one of
/// these; a displacement or immediate that happens to point at a function
/// is mostly not (btree's `movups %xmm4,0x90(%rbp)`: its `90 00 00 00`
/// read as a rel32 lands on `insert_rec`, which then was not linked to its
/// two tail jumps, and its loop was solved entered 11x too often).
fn rel32_operand(bytes: &[u8], p: usize) -> bool {
    let before = |k: usize| p.checked_sub(k).map(|i| bytes[i]);
    matches!(before(1), Some(0xe8 | 0xe9))
        || before(1).is_some_and(|b| b & 0xc7 == 0x05)
        || (before(2) == Some(0x0f) && before(1).is_some_and(|b| (0x80..=0x8f).contains(&b)))
}

/// The function a short jump at `p` (a `jmp`/`jcc` rel8: a tail jump to
/// a function laid out right after, matchers' `jmp matchstar`) reaches, if
/// an instruction really starts there: the containing function is decoded
/// from its start to `p` (only for the rare byte pairs that point at a
/// function start, so the cost stays with them).
fn rel8_reference(
    bytes: &[u8],
    p: usize,
    va: u64,
    starts: &StartSet,
    code: &Extents,
) -> Option<u64> {
    let op = bytes[p];
    if !(op == 0xeb || (0x70..=0x7f).contains(&op)) {
        return None;
    }
    let site = va + p as u64;
    let target = (site + 2).wrapping_add(*bytes.get(p + 1)? as i8 as i64 as u64);
    if !starts.contains(target) {
        return None;
    }
    let (start, end) = code.containing(site)?;
    let from = usize::try_from(start.checked_sub(va)?).ok()?;
    let end = usize::try_from(end - va).ok()?.min(bytes.len());
    let mut d = iced_x86::Decoder::with_ip(
        64,
        bytes.get(from..end)?,
        start,
        iced_x86::DecoderOptions::NONE,
    );
    while d.can_decode() && d.ip() < site {
        let _ = d.decode();
    }
    if d.ip() != site {
        return None;
    }
    let i = d.decode();
    (i.near_branch_target() == target).then_some(target)
}

impl References {
    pub fn build(image: &ElfImage) -> Self {
        let functions = image.symbols.functions();
        let starts = StartSet::new(functions.iter().map(|f| f.start));
        let code = Extents::new(functions.iter().map(|f| (f.start, f.end)));
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
                    // Inside a function's code a real reference is an
                    // instruction's operand (see [`rel32_operand`]).
                    if rel != 0
                        && starts.contains(target)
                        && (rel32_operand(bytes, p) || code.containing(site).is_none())
                    {
                        let e = refs.entry(target).or_default();
                        e.0 += 1;
                        e.1.push(site);
                    }
                    if let Some(target) = rel8_reference(bytes, p, va, &starts, &code) {
                        let e = refs.entry(target).or_default();
                        e.0 += 1;
                        e.1.push(site);
                    }
                    if !pie_or_lib {
                        let abs = u32::from_le_bytes(w) as u64;
                        if starts.contains(abs) {
                            refs.entry(abs).or_default().0 += 1;
                        }
                    }
                }
            } else {
                let skip = (8 - (va % 8) as usize) % 8;
                for chunk in bytes.get(skip..).unwrap_or(&[]).chunks_exact(8) {
                    let v = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
                    if starts.contains(v) {
                        refs.entry(v).or_default().0 += 1;
                    }
                }
            }
        }
        References { refs, exported }
    }

    /// Where the references to `func` are: rel32 displacements (a direct
    /// call is its address + 1) and short jumps' opcodes.
    pub fn reference_sites(&self, func: u64) -> &[u64] {
        self.refs.get(&func).map_or(&[], |r| &r.1)
    }

    /// References counted to `func` (calls, jumps, pointers).
    pub fn count(&self, func: u64) -> usize {
        self.refs.get(&func).map_or(0, |r| r.0)
    }

    /// Whether other images can call `func` (a defined dynamic symbol).
    pub fn is_exported(&self, func: u64) -> bool {
        self.exported.contains(&func)
    }
}

#[cfg(test)]
mod tests {
    use super::{rel32_operand, References, StartSet};
    use crate::image::ElfImage;

    #[test]
    fn a_rel32_is_an_operand_only_after_a_branch_opcode_or_a_rip_relative_modrm() {
        // call, jmp, je rel32; lea and cmpl through %rip.
        for code in [
            &[0xe8u8, 1, 2, 3, 4][..],
            &[0xe9, 1, 2, 3, 4],
            &[0x0f, 0x84, 1, 2, 3, 4],
            &[0x48, 0x8d, 0x05, 1, 2, 3, 4],
            &[0x83, 0x3d, 1, 2, 3, 4, 0x0f],
        ] {
            let at = code.iter().position(|&b| b == 1).unwrap();
            assert!(rel32_operand(code, at), "{code:02x?}");
        }
        // `movups %xmm4,0x90(%rbp)`: a displacement off a register.
        let movups = [0x0f, 0x11, 0xa5, 0x90, 0, 0, 0];
        assert!(!rel32_operand(&movups, 3));
        assert!(!rel32_operand(&movups, 0));
    }

    #[test]
    fn a_displacement_that_points_at_a_function_is_no_reference() {
        // btree's split_child copies keys with `movups %xmm4,0x90(%rbp)` at
        // 0x1419: its displacement read as a rel32 lands on insert_rec
        // (0x14b0), whose only references are insert's two tail jumps.
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../datasets/analyzer/btree");
        let image = ElfImage::open(path, None).expect("the recorded btree binary");
        let start = |name: &str| {
            let f = image.symbols.functions();
            f.iter().find(|f| f.name == name).expect(name).start
        };
        let refs = References::build(&image);
        assert_eq!(refs.count(start("insert_rec")), 2);
        assert_eq!(refs.count(start("find_index")), 3);
    }

    #[test]
    fn a_short_tail_jump_is_a_reference() {
        // matchers' matchhere ends in `jmp matchstar` (eb 47 at 0x1587):
        // matchstar's only way in, which a count of rel32s alone missed.
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../datasets/analyzer/matchers");
        let image = ElfImage::open(path, None).expect("the recorded matchers binary");
        let f = image.symbols.functions();
        let matchstar = f.iter().find(|f| f.name == "matchstar").expect("matchstar");
        let refs = References::build(&image);
        assert_eq!(refs.count(matchstar.start), 1);
        assert_eq!(refs.reference_sites(matchstar.start), &[0x1587]);
    }

    #[test]
    fn start_sets_answer_alike_as_bits_and_as_a_sorted_list() {
        let near = [0x1000u64, 0x1001, 0x1040, 0x2fff, 0x3000];
        let bits = StartSet::new(near.iter().copied());
        assert!(matches!(bits, StartSet::Bits { .. }));
        // Spread over more than MAX_SPAN addresses: a sorted list.
        let far = [0x1000u64, 0x1040, 0x7fff_ffff_0000];
        let sorted = StartSet::new(far.iter().copied());
        assert!(matches!(sorted, StartSet::Sorted(_)));
        for a in [
            0u64,
            0xfff,
            0x1000,
            0x1001,
            0x1002,
            0x103f,
            0x1040,
            0x3000,
            0x3001,
            u64::MAX,
        ] {
            assert_eq!(bits.contains(a), near.contains(&a), "bits {a:#x}");
            assert_eq!(sorted.contains(a), far.contains(&a), "sorted {a:#x}");
        }
        assert!(sorted.contains(0x7fff_ffff_0000));
        // No starts at all: nothing is one.
        let none = StartSet::new(std::iter::empty());
        assert!(!none.contains(0) && !none.contains(0x1000));
    }
}
