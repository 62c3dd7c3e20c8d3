//! One ELF image opened for instruction-level analysis: its bytes by
//! virtual address, its functions, and the identity check against the
//! profile (an image whose build-id changed since profiling is refused).

use crate::elf_symbols::{ElfSymbols, FunctionRange};
use crate::error::{AnalyzeError, Result};
use object::{Object, ObjectSegment};

pub struct ElfImage {
    pub path: String,
    data: FileBytes,
    /// (file offset, file size, vaddr) of each PT_LOAD.
    segments: Vec<(u64, u64, u64)>,
    pub symbols: ElfSymbols,
    /// Answers of [`crate::function_code::callee_never_returns`] by
    /// (address, depth): a big function calls hundreds of functions, each
    /// answer costs a disassembly, and linked functions share callees.
    pub(crate) noreturn: std::sync::Mutex<std::collections::HashMap<(u64, u32), bool>>,
    /// The general registers the function at an address may change, by
    /// (address, depth) ([`crate::function_code::callee_clobbers`]).
    pub(crate) clobbers: std::sync::Mutex<std::collections::HashMap<(u64, u32), u16>>,
}

/// A file's bytes: mapped (a 23 MB library is read in pieces as the
/// analysis touches them, not all at once), or read when it cannot be
/// mapped (an empty file, a file system without mmap).
pub(crate) enum FileBytes {
    Mapped(memmap2::Mmap),
    Read(Vec<u8>),
}

impl FileBytes {
    pub(crate) fn open(path: &str) -> std::io::Result<Self> {
        let file = std::fs::File::open(path)?;
        // Safety: the mapping is read-only and private to this process; an
        // image rewritten in place while it is analyzed can fault (SIGBUS),
        // as with any tool that maps binaries (perf, gdb). Its build-id is
        // checked first thing after.
        match unsafe { memmap2::Mmap::map(&file) } {
            Ok(m) => Ok(FileBytes::Mapped(m)),
            Err(_) => std::fs::read(path).map(FileBytes::Read),
        }
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            FileBytes::Mapped(m) => m,
            FileBytes::Read(v) => v,
        }
    }
}

impl ElfImage {
    /// Opens `path`; `want_build_id` is the build-id the profile recorded.
    pub fn open(path: &str, want_build_id: Option<&str>) -> Result<Self> {
        let err = |detail: String| AnalyzeError::Image {
            path: path.to_string(),
            detail,
        };
        let data = FileBytes::open(path).map_err(|e| {
            err(format!(
                "{e} (the image must be at the path it was profiled from, or a copy under \
                 --symfs DIR, as DIR/that/path or DIR/its-name)"
            ))
        })?;
        let symbols = ElfSymbols::parse_at(path, data.bytes()).map_err(err)?;
        if let (Some(want), Some(have)) = (want_build_id, symbols.build_id.as_deref()) {
            if want != have {
                return Err(err(format!(
                    "its build-id is now {have} but the profile was taken of {want}: the binary \
                     changed since profiling, so its instructions no longer match the samples; \
                     profile it again"
                )));
            }
        }
        let file =
            object::File::parse(data.bytes()).map_err(|e| err(format!("not an ELF file: {e}")))?;
        let segments = file
            .segments()
            .map(|s| {
                let (off, size) = s.file_range();
                (off, size, s.address())
            })
            .collect();
        Ok(ElfImage {
            path: path.to_string(),
            data,
            segments,
            symbols,
            noreturn: Default::default(),
            clobbers: Default::default(),
        })
    }

    /// The raw file contents.
    pub fn data(&self) -> &[u8] {
        self.data.bytes()
    }

    /// Bytes at [vaddr, vaddr+len) if one loaded segment holds them all
    /// (and the file does: a truncated image answers None, not a panic).
    pub fn bytes(&self, vaddr: u64, len: usize) -> Option<&[u8]> {
        self.segments.iter().find_map(|&(off, size, va)| {
            if vaddr < va || vaddr + len as u64 > va + size {
                return None;
            }
            let from = (off + vaddr - va) as usize;
            self.data.bytes().get(from..from + len)
        })
    }

    /// File offset of a virtual address (how the profile stores ELF samples).
    pub fn offset_of_vaddr(&self, vaddr: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|&&(_, size, va)| vaddr >= va && vaddr < va + size)
            .map(|&(off, _, va)| vaddr - va + off)
    }

    /// Virtual address of a file offset.
    pub fn vaddr_of_offset(&self, off: u64) -> Option<u64> {
        self.symbols.vaddr_of_offset(off)
    }

    /// A function named plainly, mangled or demangled, by its qualified
    /// name (`app::churn`), or by an address inside it (`0x401136`). An
    /// unknown name lists the closest ones; a name several functions share
    /// lists them.
    pub fn find_function(&self, query: &str) -> Result<FunctionRange> {
        let mut found = self.functions_matching(query);
        if found.len() > 1 {
            return Err(AnalyzeError::Usage(several_functions(
                query, &self.path, &found,
            )));
        }
        if let Some(f) = found.pop() {
            return Ok(f);
        }
        if let Some(addr) = parse_address(query) {
            return Err(AnalyzeError::Usage(format!(
                "no function of {} holds {addr:#x}",
                self.path
            )));
        }
        let funcs = self.symbols.functions();
        Err(AnalyzeError::Usage(format!(
            "no function '{query}' in {}; closest: {}",
            self.path,
            closest(funcs.iter().map(|f| f.name.as_str()), query).join(", ")
        )))
    }

    /// The functions `query` names (an address: the one holding it), none
    /// if it names none; see [`ElfSymbols::functions_named`].
    ///
    /// [`ElfSymbols::functions_named`]: crate::elf_symbols::ElfSymbols::functions_named
    pub fn functions_matching(&self, query: &str) -> Vec<FunctionRange> {
        match parse_address(query) {
            Some(addr) => self.symbols.function_at(addr).into_iter().collect(),
            None => self.symbols.functions_named(query),
        }
    }
}

/// The message for a name that several functions of `image` answer to.
pub fn several_functions(query: &str, image: &str, found: &[FunctionRange]) -> String {
    const SHOWN: usize = 8;
    let mut list: Vec<String> = found
        .iter()
        .take(SHOWN)
        .map(|f| format!("\n  {:#x}  {}", f.start, f.name))
        .collect();
    if found.len() > SHOWN {
        list.push(format!("\n  ... and {} more", found.len() - SHOWN));
    }
    format!(
        "'{query}' names {} functions in {image}; give one by its address (--func 0x...) or its full name:{}",
        found.len(),
        list.concat()
    )
}

/// `0x401136` or `401136h`-free hex with a 0x prefix.
pub fn parse_address(s: &str) -> Option<u64> {
    let h = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    u64::from_str_radix(h, 16).ok()
}

use crate::elf_symbols::base_name;

/// The five names closest to `query` (edit distance, substrings first).
pub fn closest<'a>(names: impl Iterator<Item = &'a str>, query: &str) -> Vec<String> {
    let mut scored: Vec<(usize, &str)> = names
        .map(|n| {
            // C++ names by what a user types (`app::churn`, not `long
            // app::churn<app::Rec>(...)`), else without their arguments.
            let q = crate::qualified_name::qualified_name(n);
            let d = edit_distance(&q, query).min(edit_distance(base_name(n), query));
            (if n.contains(query) { d / 4 } else { d }, n)
        })
        .collect();
    scored.sort();
    scored.dedup_by_key(|x| x.1);
    scored
        .into_iter()
        .take(5)
        .map(|(_, n)| n.to_string())
        .collect()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_names_rank_typos_and_substrings_first() {
        let names = ["find_index", "find_child", "insert_rec", "main", "lookup"];
        let c = closest(names.iter().copied(), "find_indx");
        assert_eq!(c[0], "find_index");
        let c = closest(names.iter().copied(), "insert");
        assert_eq!(c[0], "insert_rec");
        assert_eq!(parse_address("0x401136"), Some(0x401136));
        assert_eq!(parse_address("main"), None);
    }
}
