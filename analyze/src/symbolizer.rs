//! Names for (image, offset) pairs from the database: ELF images through
//! [`ElfSymbols`] (refusing an image whose build-id no longer matches),
//! kernel images through [`KernelSymbols`], unknown regions (anonymous
//! executable memory) through their process's JIT map ([`JitMap`]) where
//! it has one, else as `[unknown]`.

use crate::elf_symbols::{ElfSymbols, SymbolSource};
use crate::jit_map::JitMap;
use crate::kernel_symbols::KernelSymbols;
use dcpi_collect::db::reader::ImageRow;
use std::collections::HashMap;

#[derive(Default)]
pub struct Symbolizer {
    elf: HashMap<i64, Option<ElfSymbols>>,
    kernel: Option<KernelSymbols>,
    warnings: Vec<String>,
    /// Where to look for images first (`--symfs`).
    symfs: Option<std::path::PathBuf>,
    /// Images whose bracketed names have been explained.
    bracketed: std::collections::HashSet<i64>,
    /// Per pid, its JIT map (in `/tmp`, perf's place), if it has one.
    jit: HashMap<i64, Option<JitMap>>,
}

impl Symbolizer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Looks for images under `root` first (ROOT/recorded/path, then
    /// ROOT/basename), as `--symfs` does for the other reports.
    pub fn with_symfs(root: Option<std::path::PathBuf>) -> Self {
        Symbolizer {
            symfs: root,
            ..Self::default()
        }
    }

    fn elf(&mut self, img: &ImageRow) -> Option<&ElfSymbols> {
        if !self.elf.contains_key(&img.id) {
            let path = crate::function_lookup::under_symfs(self.symfs.as_deref(), &img.path)
                .unwrap_or_else(|| img.path.clone());
            let loaded = match ElfSymbols::load(&path) {
                Ok(s) => match (&img.build_id, &s.build_id) {
                    (Some(want), Some(have)) if want != have => {
                        self.warnings.push(format!(
                            "{path}: build-id is now {have}, the profile was taken of {want}; \
                             its samples are shown by offset only (the binary changed since profiling)"
                        ));
                        None
                    }
                    _ => Some(s),
                },
                Err(e) => {
                    self.warnings.push(format!(
                        "{e}; its samples are shown by offset only (if the binary moved, \
                         give --symfs DIR)"
                    ));
                    None
                }
            };
            self.elf.insert(img.id, loaded);
        }
        self.elf.get(&img.id).and_then(|s| s.as_ref())
    }

    /// (procedure name, start vaddr) of an offset in an image.
    pub fn procedure(&mut self, img: &ImageRow, offset: u64) -> (String, Option<u64>) {
        match img.kind.as_str() {
            "elf" => {
                let Some(syms) = self.elf(img) else {
                    return (format!("[{}+{offset:#x}]", basename(&img.path)), None);
                };
                match syms.vaddr_of_offset(offset) {
                    Some(v) => match syms.procedure(v) {
                        Some(p) => {
                            if syms.source == SymbolSource::Dynsym && !p.named {
                                let hint = bracket_hint(&img.path, syms.build_id.as_deref());
                                if self.bracketed.insert(img.id) {
                                    self.warnings.push(hint);
                                }
                            }
                            (p.name, Some(p.start))
                        }
                        None => (format!("[{}+{v:#x}]", basename(&img.path)), None),
                    },
                    None => (format!("[{}+off {offset:#x}]", basename(&img.path)), None),
                }
            }
            "kernel" | "module" => {
                if self.kernel.is_none() {
                    let k = KernelSymbols::read();
                    if let (Some(want), Some(have)) = (&img.build_id, &k.build_id) {
                        if img.kind == "kernel" && want != have {
                            self.warnings.push(format!(
                                "the running kernel (build-id {have}) is not the profiled one ({want}); kernel names may be wrong"
                            ));
                        }
                    }
                    self.kernel = Some(k);
                }
                let k = self.kernel.as_ref().expect("set above");
                match k.procedure(&img.path, offset) {
                    Some((name, _)) => (name.to_string(), None),
                    None => (format!("{}+{offset:#x}", img.path), None),
                }
            }
            _ => ("[unknown]".to_string(), None),
        }
    }

    /// [`Self::procedure`] for a sample of process `pid`: in an unknown
    /// region (offset = the raw address), the name its JIT map gives.
    pub fn procedure_of_process(
        &mut self,
        img: &ImageRow,
        offset: u64,
        pid: i64,
    ) -> (String, Option<u64>) {
        if img.kind != "unknown" {
            return self.procedure(img, offset);
        }
        let dir = std::path::PathBuf::from("/tmp");
        let warnings = &mut self.warnings;
        let map = self.jit.entry(pid).or_insert_with(|| {
            let map = JitMap::load(&dir, pid).filter(|m| !m.is_empty());
            if let Some(m) = &map {
                warnings.push(format!(
                    "names in [unknown] for pid {pid} from {}/perf-{pid}.map ({} JIT symbols, read now as perf report does: a reused pid gives wrong names)",
                    dir.display(),
                    m.len()
                ));
            }
            map
        });
        match map.as_ref().and_then(|m| m.lookup(offset)) {
            Some((name, start)) => (name.to_string(), Some(start)),
            None => self.procedure(img, offset),
        }
    }

    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }
}

/// Why a stripped image's names read `a->b`, and how to get real ones.
fn bracket_hint(path: &str, build_id: Option<&str>) -> String {
    let debug = match build_id {
        Some(id) if id.len() > 2 => format!(
            "/usr/lib/debug/.build-id/{}/{}.debug was not found",
            &id[..2],
            &id[2..]
        ),
        _ => "no debug file was found".to_string(),
    };
    format!(
        "{path} has no symbol table ({debug}): its unexported functions are named \
         `fn_<address>` by their .eh_frame extents (a name `a->b` is code between the \
         exported symbols a and b that none covers); install its debug symbols (Debian: the \
         library's -dbg or -dbgsym package) for the real names"
    )
}

fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::bracket_hint;

    #[test]
    fn bracketed_names_say_where_the_debug_file_was_looked_for() {
        let h = bracket_hint("/usr/lib/libc.so.6", Some("93ac61ec"));
        assert!(
            h.contains("/usr/lib/debug/.build-id/93/ac61ec.debug was not found"),
            "{h}"
        );
        assert!(h.contains("`a->b`") && h.contains("-dbgsym"), "{h}");
        assert!(bracket_hint("/x.so", None).contains("no debug file was found"));
    }
}
