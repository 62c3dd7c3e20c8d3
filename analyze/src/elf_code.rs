//! Code bytes of an ELF image by virtual address range or function name.

use crate::demangle::demangle;
use crate::error::{AnalyzeError, Result};
use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};

/// The image's bytes for [start, end) (ELF virtual addresses).
pub fn bytes_in_range(path: &str, start: u64, end: u64) -> Result<Vec<u8>> {
    let err = |detail: String| AnalyzeError::Image {
        path: path.into(),
        detail,
    };
    let data = std::fs::read(path).map_err(|e| err(e.to_string()))?;
    let file = object::File::parse(&*data).map_err(|e| err(format!("not an ELF file: {e}")))?;
    if end <= start {
        return Err(AnalyzeError::Usage(format!(
            "empty range {start:#x}-{end:#x}"
        )));
    }
    for seg in file.segments() {
        let (off, size) = seg.file_range();
        let va = seg.address();
        if start >= va && end <= va + size {
            let from = (off + start - va) as usize;
            return Ok(data[from..from + (end - start) as usize].to_vec());
        }
    }
    Err(err(format!(
        "{start:#x}-{end:#x} is not inside one loaded segment"
    )))
}

/// (start, size) of a function named plainly, mangled or demangled.
pub fn function_range(path: &str, name: &str) -> Result<(u64, u64)> {
    let err = |detail: String| AnalyzeError::Image {
        path: path.into(),
        detail,
    };
    let data = std::fs::read(path).map_err(|e| err(e.to_string()))?;
    let file = object::File::parse(&*data).map_err(|e| err(format!("not an ELF file: {e}")))?;
    let mut names = Vec::new();
    for s in file.symbols().chain(file.dynamic_symbols()) {
        if s.kind() != SymbolKind::Text || s.address() == 0 {
            continue;
        }
        let Ok(raw) = s.name() else { continue };
        if raw == name || demangle(raw) == name {
            if s.size() == 0 {
                return Err(err(format!(
                    "{name} has no size in the symbol table; use --range"
                )));
            }
            return Ok((s.address(), s.size()));
        }
        names.push(demangle(raw));
    }
    names.sort_by_key(|n| strsim(n, name));
    Err(AnalyzeError::Usage(format!(
        "no function '{name}' in {path}; closest: {}",
        names.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
    )))
}

/// A cheap distance for "closest names": differing length plus mismatched prefix.
fn strsim(a: &str, b: &str) -> usize {
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    a.len().abs_diff(b.len()) + (a.len().min(b.len()) - common) + if a.contains(b) { 0 } else { 5 }
}
