//! Source lines of instructions from DWARF (addr2line), looking in the image
//! itself, then in a separate debug file found by build-id
//! (`/usr/lib/debug/.build-id/ab/cdef….debug`) or by `.gnu_debuglink`
//! (next to the image, in its `.debug/`, under `/usr/lib/debug/`), as gdb does.
//! The debuglink CRC is not checked; the build-id path is preferred.

use object::{Object, ObjectSection};
use std::path::{Path, PathBuf};

pub struct SourceLines {
    loader: Option<addr2line::Loader>,
    /// Where the DWARF came from.
    pub debug_file: Option<PathBuf>,
}

fn has_dwarf(data: &[u8]) -> bool {
    object::File::parse(data)
        .ok()
        .and_then(|f| f.section_by_name(".debug_line").map(|s| s.size() > 0))
        .unwrap_or(false)
}

/// The separate debug file of an image, if one is installed.
pub fn find_debug_file(path: &str, data: &[u8]) -> Option<PathBuf> {
    let file = object::File::parse(data).ok()?;
    if let Ok(Some(id)) = file.build_id() {
        if id.len() > 1 {
            let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
            let p = PathBuf::from(format!(
                "/usr/lib/debug/.build-id/{}/{}.debug",
                &hex[..2],
                &hex[2..]
            ));
            if p.exists() {
                return Some(p);
            }
        }
    }
    if let Ok(Some((name, _crc))) = file.gnu_debuglink() {
        let name = String::from_utf8_lossy(name).to_string();
        let dir = Path::new(path).parent().unwrap_or(Path::new("/"));
        let rel = dir.strip_prefix("/").unwrap_or(dir);
        for cand in [
            dir.join(&name),
            dir.join(".debug").join(&name),
            Path::new("/usr/lib/debug").join(rel).join(&name),
        ] {
            if cand.exists() && cand != Path::new(path) {
                return Some(cand);
            }
        }
    }
    None
}

impl SourceLines {
    /// Opens the DWARF of the image at `path` whose bytes are `data`.
    pub fn open(path: &str, data: &[u8]) -> Self {
        let debug_file = if has_dwarf(data) {
            Some(PathBuf::from(path))
        } else {
            find_debug_file(path, data)
        };
        let loader = debug_file
            .as_ref()
            .and_then(|p| addr2line::Loader::new(p).ok());
        SourceLines { loader, debug_file }
    }

    pub fn available(&self) -> bool {
        self.loader.is_some()
    }

    /// (file, line) of an ELF virtual address.
    pub fn line(&self, vaddr: u64) -> Option<(String, u32)> {
        let loc = self.loader.as_ref()?.find_location(vaddr).ok()??;
        Some((loc.file?.to_string(), loc.line?))
    }
}

/// Text of one line of a source file, if it can be read.
#[derive(Default)]
pub struct SourceCache {
    files: std::collections::HashMap<String, Option<Vec<String>>>,
}

impl SourceCache {
    pub fn text(&mut self, file: &str, line: u32) -> Option<&str> {
        let lines = self.files.entry(file.to_string()).or_insert_with(|| {
            std::fs::read_to_string(file)
                .ok()
                .map(|t| t.lines().map(str::to_string).collect())
        });
        lines
            .as_ref()?
            .get((line as usize).checked_sub(1)?)
            .map(|s| s.as_str())
    }
}
