//! Procedures of an ELF image: from .symtab, else the .symtab of its
//! separate debug file (by build-id or .gnu_debuglink: a stripped
//! library's `-dbg` package), else .dynsym with Prospect's bracketing
//! (`recv->recvfrom` for a hit between two exported symbols), else
//! .eh_frame FDE ranges; PLT entries named `func@plt`. Addresses are ELF
//! virtual addresses, as objdump shows them.
//!
//! In a stripped library (.dynsym only) the unexported functions between
//! the exported ones take their extents from .eh_frame too, named
//! `fn_<address>` (xz's LZMA encoder: 99 % of its samples in liblzma's
//! internal functions, which a bracket `a->b` lumped into one range that
//! `dcpi cpi` could not analyze). Code in a gap that no FDE covers keeps
//! the bracket name.
//!
//! Limits: a function without an FDE (hand-written assembly, code built
//! with `-fno-asynchronous-unwind-tables`) is not split out; a compiler's
//! split-off cold part (`f.cold`) has an FDE of its own and is its own
//! `fn_<address>`.

use crate::demangle::{demangle, is_mangled};
use crate::error::{AnalyzeError, Result};
use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, ObjectSymbolTable, SymbolKind};

/// Where the procedure names came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SymbolSource {
    Symtab,
    /// The .symtab of the image's separate debug file.
    DebugFile,
    Dynsym,
    EhFrame,
    None,
}

#[derive(Debug, Clone)]
struct Func {
    start: u64,
    /// 0 = unknown size.
    size: u64,
    name: String,
    /// Named by a symbol (not `fn_<address>` from an FDE).
    named: bool,
}

/// A function's extent, for disassembly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionRange {
    /// Demangled name (`func@plt` for PLT entries).
    pub name: String,
    /// The name as in the symbol table.
    pub raw_name: String,
    pub start: u64,
    /// Exclusive end: start + size, or the next symbol's start when unsized.
    pub end: u64,
}

/// A procedure an address fell in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Procedure {
    pub name: String,
    /// Start address (for bracketed hits, the lower symbol's).
    pub start: u64,
    /// The name is a symbol's (not a bracket `a->b` or an FDE's `fn_<address>`).
    pub named: bool,
}

#[derive(Debug)]
struct PltSection {
    start: u64,
    end: u64,
    /// Entries before the first real one (PLT0 in .plt).
    skip: u64,
}

/// Symbols of one ELF image.
#[derive(Debug)]
pub struct ElfSymbols {
    pub build_id: Option<String>,
    pub source: SymbolSource,
    /// (file offset, file size, vaddr) of each PT_LOAD.
    segments: Vec<(u64, u64, u64)>,
    /// (start, end) of each section of code, sorted: an unsized function
    /// ends at its section's end at the latest (`_fini` does not run on
    /// into .got).
    code: Vec<(u64, u64)>,
    funcs: Vec<Func>,
    plt: Vec<PltSection>,
    plt_names: Vec<String>,
    /// (start, size) of each sized data object (.symtab, else .dynsym),
    /// sorted by start.
    objects: Vec<(u64, u64)>,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn functions<'d>(syms: impl Iterator<Item = object::Symbol<'d, 'd>>) -> Vec<Func> {
    let mut v: Vec<(Func, bool)> = syms
        .filter(|s| s.kind() == SymbolKind::Text && s.is_definition() && s.address() != 0)
        .filter_map(|s| {
            let f = Func {
                start: s.address(),
                size: s.size(),
                name: s.name().ok()?.to_string(),
                named: true,
            };
            Some((f, s.is_global()))
        })
        .collect();
    // Several names for one address (a debug file's .symtab holds glibc's
    // `malloc`, `__libc_malloc`, `__GI___libc_malloc`): the sized one, then
    // the global, then the plainest (fewest leading underscores, not an
    // internal `__GI_` alias, shortest) — the name a user calls it by.
    let plain = |n: &str| {
        (
            n.starts_with("__GI_"),
            n.len() - n.trim_start_matches('_').len(),
            n.len(),
        )
    };
    v.sort_by(|(a, ga), (b, gb)| {
        a.start
            .cmp(&b.start)
            .then(b.size.cmp(&a.size))
            .then(gb.cmp(ga))
            .then_with(|| plain(&a.name).cmp(&plain(&b.name)))
    });
    v.dedup_by_key(|(f, _)| f.start);
    v.into_iter().map(|(f, _)| f).collect()
}

/// A demangled name without its argument list (`ns::f(int)` -> `ns::f`).
pub fn base_name(name: &str) -> &str {
    name.split('(').next().unwrap_or(name)
}

/// (start, size) of each sized data object, sorted.
fn data_objects<'d>(syms: impl Iterator<Item = object::Symbol<'d, 'd>>) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = syms
        .filter(|s| s.kind() == SymbolKind::Data && s.is_definition() && s.size() > 0)
        .map(|s| (s.address(), s.size()))
        .collect();
    v.sort_unstable();
    v
}

/// The exported functions `exported` (sorted by start) and, in the gaps
/// between their extents, the FDE functions `unwound` (sorted) that start
/// there, cut short where an exported function starts.
fn with_unexported(exported: Vec<Func>, unwound: Vec<Func>) -> Vec<Func> {
    let covered = |a: u64| {
        let k = exported.partition_point(|f| f.start <= a);
        k > 0 && {
            let f = &exported[k - 1];
            f.start == a || a < f.start + f.size
        }
    };
    let mut out: Vec<Func> = unwound.into_iter().filter(|u| !covered(u.start)).collect();
    for u in &mut out {
        let k = exported.partition_point(|f| f.start <= u.start);
        if let Some(next) = exported.get(k) {
            if u.size == 0 || u.start + u.size > next.start {
                u.size = next.start - u.start;
            }
        }
    }
    out.extend(exported);
    out.sort_by_key(|f| f.start);
    out
}

fn eh_frame_functions(file: &object::File) -> Vec<Func> {
    use gimli::{BaseAddresses, CieOrFde, EhFrame, LittleEndian, UnwindSection};
    let Some(sec) = file.section_by_name(".eh_frame") else {
        return Vec::new();
    };
    let Ok(data) = sec.data() else {
        return Vec::new();
    };
    let eh = EhFrame::new(data, LittleEndian);
    let mut bases = BaseAddresses::default().set_eh_frame(sec.address());
    if let Some(text) = file.section_by_name(".text") {
        bases = bases.set_text(text.address());
    }
    if let Some(hdr) = file.section_by_name(".eh_frame_hdr") {
        bases = bases.set_eh_frame_hdr(hdr.address());
    }
    let mut out = Vec::new();
    let mut entries = eh.entries(&bases);
    while let Ok(Some(entry)) = entries.next() {
        if let CieOrFde::Fde(partial) = entry {
            if let Ok(fde) = partial.parse(EhFrame::cie_from_offset) {
                let start = fde.initial_address();
                out.push(Func {
                    start,
                    size: fde.len(),
                    name: format!("fn_{start:x}"),
                    named: false,
                });
            }
        }
    }
    out.sort_by_key(|f| f.start);
    out.dedup_by_key(|f| f.start);
    out
}

/// `func@plt` names in .rela.plt order.
fn plt_names(file: &object::File) -> Vec<String> {
    let Some(rela) = file.section_by_name(".rela.plt") else {
        return Vec::new();
    };
    let Ok(data) = rela.data() else {
        return Vec::new();
    };
    let dynsyms = file.dynamic_symbol_table();
    data.chunks_exact(24)
        .map(|r| {
            let info = u64::from_le_bytes(r[8..16].try_into().unwrap());
            let idx = (info >> 32) as usize;
            let name = dynsyms
                .as_ref()
                .and_then(|t| t.symbol_by_index(object::SymbolIndex(idx)).ok())
                .and_then(|s| {
                    s.name()
                        .ok()
                        .map(|n| n.split('@').next().unwrap_or(n).to_string())
                })
                .unwrap_or_else(|| format!("plt{idx}"));
            format!("{}@plt", demangle(&name))
        })
        .collect()
}

impl ElfSymbols {
    /// Reads an image from disk.
    pub fn load(path: &str) -> Result<Self> {
        let err = |detail: String| AnalyzeError::Image {
            path: path.to_string(),
            detail,
        };
        let data = std::fs::read(path).map_err(|e| err(e.to_string()))?;
        Self::parse_at(path, &data).map_err(err)
    }

    /// Parses the image at `path` whose bytes are `data`; without a
    /// .symtab of its own (a stripped library), takes the one of its
    /// separate debug file when one is installed and its build-id agrees
    /// (libc's internal `__memmove_avx_unaligned_erms` rather than the
    /// bracket `__nss_database_lookup->__libc_freeres`).
    pub fn parse_at(path: &str, data: &[u8]) -> std::result::Result<Self, String> {
        let mut syms = Self::parse(data)?;
        if syms.source != SymbolSource::Symtab {
            if let Some(debug) = crate::source_lines::find_debug_file(path, data) {
                syms.take_debug_symbols(&debug);
            }
        }
        Ok(syms)
    }

    /// Functions and data objects from the debug file at `debug`, if it
    /// has them and belongs to this image.
    fn take_debug_symbols(&mut self, debug: &std::path::Path) {
        let Some(bytes) = debug
            .to_str()
            .and_then(|p| crate::image::FileBytes::open(p).ok())
        else {
            return;
        };
        let Ok(file) = object::File::parse(bytes.bytes()) else {
            return;
        };
        let theirs = file.build_id().ok().flatten().map(hex);
        if let (Some(a), Some(b)) = (theirs.as_deref(), self.build_id.as_deref()) {
            if a != b {
                return;
            }
        }
        let Some(table) = file.symbol_table() else {
            return;
        };
        let funcs = functions(table.symbols());
        if funcs.is_empty() {
            return;
        }
        self.funcs = funcs;
        self.objects = data_objects(table.symbols());
        self.source = SymbolSource::DebugFile;
    }

    /// Parses an image in memory.
    pub fn parse(data: &[u8]) -> std::result::Result<Self, String> {
        let file = object::File::parse(data).map_err(|e| format!("not an ELF file: {e}"))?;
        let build_id = file.build_id().ok().flatten().map(hex);
        let mut code: Vec<(u64, u64)> = file
            .sections()
            .filter(|s| s.kind() == object::SectionKind::Text && s.size() > 0)
            .map(|s| (s.address(), s.address() + s.size()))
            .collect();
        code.sort_unstable();
        let segments = file
            .segments()
            .map(|s| {
                let (off, size) = s.file_range();
                (off, size, s.address())
            })
            .collect();
        let mut source = SymbolSource::Symtab;
        let mut funcs = file
            .symbol_table()
            .map(|t| functions(t.symbols()))
            .unwrap_or_default();
        if funcs.is_empty() {
            source = SymbolSource::Dynsym;
            funcs = file
                .dynamic_symbol_table()
                .map(|t| functions(t.symbols()))
                .unwrap_or_default();
        }
        if funcs.is_empty() {
            source = SymbolSource::EhFrame;
            funcs = eh_frame_functions(&file);
        } else if source == SymbolSource::Dynsym {
            funcs = with_unexported(funcs, eh_frame_functions(&file));
        }
        if funcs.is_empty() {
            source = SymbolSource::None;
        }
        let mut plt = Vec::new();
        for (name, skip) in [(".plt", 1), (".plt.sec", 0)] {
            if let Some(s) = file.section_by_name(name) {
                plt.push(PltSection {
                    start: s.address(),
                    end: s.address() + s.size(),
                    skip,
                });
            }
        }
        // With .plt.sec present, .plt holds only the lazy-binding stubs.
        if plt.len() == 2 {
            plt.remove(0);
        }
        let objects = file
            .symbol_table()
            .or_else(|| file.dynamic_symbol_table())
            .map(|t| data_objects(t.symbols()))
            .unwrap_or_default();
        Ok(ElfSymbols {
            build_id,
            source,
            segments,
            code,
            funcs,
            plt,
            plt_names: plt_names(&file),
            objects,
        })
    }

    /// The size of the data object holding `vaddr`, if a symbol says.
    pub fn data_object_size(&self, vaddr: u64) -> Option<u64> {
        let k = self.objects.partition_point(|&(start, _)| start <= vaddr);
        let (start, size) = *self.objects.get(k.checked_sub(1)?)?;
        (vaddr < start + size).then_some(size)
    }

    /// ELF virtual address of a file offset (through the PT_LOAD segments).
    pub fn vaddr_of_offset(&self, off: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|(o, s, _)| off >= *o && off < o + s)
            .map(|(o, _, v)| off - o + v)
    }

    fn text_end(&self) -> u64 {
        self.segments
            .iter()
            .map(|(_, size, va)| va + size)
            .max()
            .unwrap_or(0)
    }

    /// Where an unsized function starting at `start` ends at the latest:
    /// its code section's end, else `text_end`.
    fn code_end(&self, start: u64, text_end: u64) -> u64 {
        let k = self.code.partition_point(|&(s, _)| s <= start);
        match k.checked_sub(1).map(|k| self.code[k]) {
            Some((_, end)) if start < end => end,
            _ => text_end,
        }
    }

    fn range_of(&self, i: usize, text_end: u64) -> FunctionRange {
        let f = &self.funcs[i];
        FunctionRange {
            name: demangle(&f.name),
            raw_name: f.name.clone(),
            start: f.start,
            end: if f.size > 0 {
                f.start + f.size
            } else {
                let limit = self.code_end(f.start, text_end);
                self.funcs.get(i + 1).map_or(limit, |n| n.start.min(limit))
            },
        }
    }

    /// The functions called `query`, from the tightest way of naming that
    /// finds any: the symbol-table name, the demangled name or that without
    /// its argument list; else the qualified name a C++ or Rust user types
    /// (`app::churn` for `long app::churn<app::Rec>(...)`, see
    /// [`crate::qualified_name`]); else its trailing components (`churn`).
    /// Several where the loosest match is shared (template instances,
    /// `[clone .isra.0]` copies): the caller asks which. Only mangled names
    /// are demangled (a C library's 10 K symbols are compared as they are).
    pub fn functions_named(&self, query: &str) -> Vec<FunctionRange> {
        use crate::qualified_name::{qualified_instance, qualified_name, without_clone_suffix};
        let end = self.text_end();
        let exact: Vec<usize> = (0..self.funcs.len())
            .filter(|&i| {
                let raw = &self.funcs[i].name;
                raw == query
                    || (is_mangled(raw) && {
                        let d = demangle(raw);
                        d == query || base_name(&d) == query
                    })
            })
            .collect();
        if let Some(&i) = exact.first() {
            return vec![self.range_of(i, end)];
        }
        if query.ends_with("@plt") {
            return self.plt_entry(query).into_iter().collect();
        }
        // GCC's clones of a C function (`match_len.constprop.0`): the
        // name as written in the source finds them; a split-off `.cold`
        // part only when it is all there is.
        let clones: Vec<usize> = (0..self.funcs.len())
            .filter(|&i| {
                let raw = &self.funcs[i].name;
                !is_mangled(raw) && raw.len() > query.len() && without_clone_suffix(raw) == query
            })
            .collect();
        let hot: Vec<usize> = clones
            .iter()
            .copied()
            .filter(|&i| !self.funcs[i].name.ends_with(".cold"))
            .collect();
        let clones = if hot.is_empty() { clones } else { hot };
        if !clones.is_empty() {
            return clones.into_iter().map(|i| self.range_of(i, end)).collect();
        }
        let want = qualified_name(query);
        if want.is_empty() {
            return Vec::new();
        }
        let suffix = format!("::{want}");
        let qualified: Vec<(usize, String)> = (0..self.funcs.len())
            .filter(|&i| is_mangled(&self.funcs[i].name))
            .map(|i| (i, qualified_name(&demangle(&self.funcs[i].name))))
            .collect();
        let mut whole: Vec<usize> = qualified
            .iter()
            .filter(|(_, q)| *q == want)
            .map(|(i, _)| *i)
            .collect();
        // A query naming its template arguments picks that instance.
        if whole.len() > 1 && query.contains('<') {
            let instance = qualified_instance(query);
            let one: Vec<usize> = whole
                .iter()
                .copied()
                .filter(|&i| qualified_instance(&demangle(&self.funcs[i].name)) == instance)
                .collect();
            if !one.is_empty() {
                whole = one;
            }
        }
        let picked = if whole.is_empty() {
            qualified
                .iter()
                .filter(|(_, q)| q.ends_with(&suffix))
                .map(|(i, _)| *i)
                .collect()
        } else {
            whole
        };
        picked.into_iter().map(|i| self.range_of(i, end)).collect()
    }

    /// The PLT entry `name` (`memcmp@plt`, as [`Self::procedure`] names
    /// it): its 16 bytes.
    fn plt_entry(&self, name: &str) -> Option<FunctionRange> {
        let k = self.plt_names.iter().position(|n| n == name)? as u64;
        self.plt.iter().find_map(|p| {
            let start = p.start + (k + p.skip) * 16;
            (start + 16 <= p.end).then(|| FunctionRange {
                name: name.to_string(),
                raw_name: name.to_string(),
                start,
                end: start + 16,
            })
        })
    }

    /// Every function with a known extent (PLT entries excluded), by address.
    pub fn functions(&self) -> Vec<FunctionRange> {
        let end = self.text_end();
        (0..self.funcs.len())
            .map(|i| self.range_of(i, end))
            .collect()
    }

    /// The function whose extent holds `vaddr` (a PLT entry gets its 16 bytes).
    pub fn function_at(&self, vaddr: u64) -> Option<FunctionRange> {
        for p in &self.plt {
            if vaddr >= p.start && vaddr < p.end {
                let proc = self.procedure(vaddr)?;
                return Some(FunctionRange {
                    raw_name: proc.name.clone(),
                    name: proc.name,
                    start: proc.start,
                    end: proc.start + 16,
                });
            }
        }
        let i = self.funcs.partition_point(|f| f.start <= vaddr);
        let f = self.range_of(i.checked_sub(1)?, self.text_end());
        (vaddr < f.end).then_some(f)
    }

    /// The name objdump would print for a branch or call target: `name` or
    /// `name+0x10`; a C++ or Rust function by its qualified name
    /// (`std::__introsort_loop+0x40`, not its 300-character instance).
    pub fn label(&self, vaddr: u64) -> Option<String> {
        let p = self.function_at(vaddr)?;
        let short = is_mangled(&p.raw_name)
            .then(|| crate::qualified_name::qualified_name(&p.name))
            .filter(|q| !q.is_empty());
        let name = short.unwrap_or(p.name);
        Some(if p.start == vaddr {
            name
        } else {
            format!("{}+{:#x}", name, vaddr - p.start)
        })
    }

    /// The procedure containing `vaddr`.
    pub fn procedure(&self, vaddr: u64) -> Option<Procedure> {
        for p in &self.plt {
            if vaddr >= p.start && vaddr < p.end {
                let idx = ((vaddr - p.start) / 16).checked_sub(p.skip);
                let name = idx
                    .and_then(|i| self.plt_names.get(i as usize).cloned())
                    .unwrap_or_else(|| "[plt]".to_string());
                return Some(Procedure {
                    name,
                    start: p.start + (vaddr - p.start) / 16 * 16,
                    named: true,
                });
            }
        }
        let i = self.funcs.partition_point(|f| f.start <= vaddr);
        if i == 0 {
            return None;
        }
        let f = &self.funcs[i - 1];
        let next = self.funcs.get(i);
        let inside = if f.size > 0 {
            vaddr < f.start + f.size
        } else {
            vaddr < self.code_end(f.start, u64::MAX) && next.is_none_or(|n| vaddr < n.start)
        };
        if inside {
            return Some(Procedure {
                name: demangle(&f.name),
                start: f.start,
                named: f.named,
            });
        }
        match self.source {
            // Prospect's bracketing: an unexported function between two exported ones.
            SymbolSource::Dynsym => Some(Procedure {
                name: match next {
                    Some(n) => format!("{}->{}", demangle(&f.name), demangle(&n.name)),
                    None => format!("{}->", demangle(&f.name)),
                },
                start: f.start,
                named: false,
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn func(start: u64, size: u64, name: &str, named: bool) -> Func {
        Func {
            start,
            size,
            name: name.to_string(),
            named,
        }
    }

    #[test]
    fn fdes_fill_only_the_gaps_between_exported_functions() {
        let exported = vec![func(0x100, 0x20, "a", true), func(0x200, 0, "b", true)];
        let unwound = vec![
            // a's own FDE, one inside a, one in the gap running into b,
            // one after b's start (b is unsized: it runs to the next).
            func(0x100, 0x20, "fn_100", false),
            func(0x110, 0x8, "fn_110", false),
            func(0x140, 0x1000, "fn_140", false),
            func(0x280, 0x10, "fn_280", false),
        ];
        let got: Vec<(u64, u64, String)> = with_unexported(exported, unwound)
            .into_iter()
            .map(|f| (f.start, f.size, f.name))
            .collect();
        assert_eq!(
            got,
            vec![
                (0x100, 0x20, "a".to_string()),
                (0x140, 0xc0, "fn_140".to_string()),
                (0x200, 0, "b".to_string()),
                (0x280, 0x10, "fn_280".to_string()),
            ]
        );
    }

    #[test]
    fn symbolizes_this_test_binary() {
        let exe = std::env::current_exe().unwrap();
        let syms = ElfSymbols::load(exe.to_str().unwrap()).unwrap();
        assert_eq!(syms.source, SymbolSource::Symtab);
        let addr = symbolizes_this_test_binary as *const () as u64;
        // Translate our runtime address to an ELF vaddr via /proc/self/maps.
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let exe_s = exe.to_str().unwrap();
        let line = maps
            .lines()
            .filter(|l| l.ends_with(exe_s))
            .find(|l| {
                let r = l.split_whitespace().next().unwrap();
                let (s, e) = r.split_once('-').unwrap();
                let (s, e) = (
                    u64::from_str_radix(s, 16).unwrap(),
                    u64::from_str_radix(e, 16).unwrap(),
                );
                addr >= s && addr < e
            })
            .unwrap();
        let f: Vec<&str> = line.split_whitespace().collect();
        let start = u64::from_str_radix(f[0].split('-').next().unwrap(), 16).unwrap();
        let off = u64::from_str_radix(f[2], 16).unwrap();
        let vaddr = syms.vaddr_of_offset(addr - start + off).unwrap();
        let p = syms.procedure(vaddr).unwrap();
        assert!(p.name.ends_with("symbolizes_this_test_binary"), "{p:?}");
    }
}
