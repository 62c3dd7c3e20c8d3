//! Identifying the images samples fall in.
//!
//! An ELF image is identified by its GNU build-id (from the MMAP2 record when
//! the kernel supplies it, else read from the file), else by path + size +
//! mtime. `[vdso]`, anonymous and JIT regions go to the `[unknown]` image,
//! kept apart per process by the count's process key (offset = raw address).
//! Kernel samples go to `[kernel.kallsyms]` or to a module.

use crate::db::writer::NewImage;
use crate::kernel::{hex, KernelLayout, KERNEL_START};
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;

/// Index of an image in the registry (stable for a run).
pub type ImageSlot = u32;

/// Images seen in a run; new ones are queued for the next flush.
pub struct ImageRegistry {
    images: Vec<NewImage>,
    by_identity: HashMap<String, ImageSlot>,
    /// (path, inode) → slot, so a file is read once.
    by_file: HashMap<(String, u64), Option<ImageSlot>>,
    pending: Vec<ImageSlot>,
    kernel: KernelLayout,
}

/// True for mappings that are not files dcpi can read code from.
pub fn is_unknown_region(path: &str) -> bool {
    !path.starts_with('/')
        || path.starts_with("/memfd:")
        || path.starts_with("//anon")
        || path.ends_with(" (deleted)")
        || path.starts_with("/tmp/perf-")
}

/// Build-id of an ELF file, as hex.
/// GNU build-id of the ELF file at `path`, reading only its headers and
/// notes (not the whole file: binaries with debug info run to hundreds of MB,
/// and the collector's memory is bounded).
pub fn elf_file_build_id(path: &str) -> Option<String> {
    use object::Object;
    let f = std::fs::File::open(path).ok()?;
    let cache = object::ReadCache::new(f);
    let file = object::File::parse(&cache).ok()?;
    file.build_id().ok().flatten().map(hex)
}

impl ImageRegistry {
    pub fn new(kernel: KernelLayout) -> Self {
        ImageRegistry {
            images: Vec::new(),
            by_identity: HashMap::new(),
            by_file: HashMap::new(),
            pending: Vec::new(),
            kernel,
        }
    }

    pub fn kernel(&self) -> &KernelLayout {
        &self.kernel
    }

    fn intern(&mut self, img: NewImage) -> ImageSlot {
        if let Some(&s) = self.by_identity.get(&img.identity) {
            return s;
        }
        let slot = self.images.len() as ImageSlot;
        self.by_identity.insert(img.identity.clone(), slot);
        self.images.push(img);
        self.pending.push(slot);
        slot
    }

    /// The shared `[unknown]` image.
    pub fn unknown(&mut self) -> ImageSlot {
        self.intern(NewImage {
            identity: "unknown".into(),
            kind: "unknown".into(),
            path: "[unknown]".into(),
            build_id: None,
            size: None,
            mtime: None,
            offset_kind: "absolute".into(),
        })
    }

    /// The image of a file mapping, or `None` for an unknown region.
    pub fn file(&mut self, path: &str, inode: u64, build_id: Option<&[u8]>) -> Option<ImageSlot> {
        if is_unknown_region(path) {
            return None;
        }
        let key = (path.to_string(), inode);
        if let Some(&cached) = self.by_file.get(&key) {
            if build_id.is_none() || cached.is_some() {
                return cached;
            }
        }
        let meta = std::fs::metadata(path).ok();
        let size = meta.as_ref().map(|m| m.len());
        let mtime = meta.as_ref().map(|m| m.mtime());
        let build_id = match build_id {
            Some(b) if !b.is_empty() => Some(hex(b)),
            _ => elf_file_build_id(path),
        };
        let identity = match &build_id {
            Some(b) => format!("build-id:{b}"),
            None => format!("file:{path}:{}:{}", size.unwrap_or(0), mtime.unwrap_or(0)),
        };
        let slot = self.intern(NewImage {
            identity,
            kind: "elf".into(),
            path: path.to_string(),
            build_id,
            size,
            mtime,
            offset_kind: "file".into(),
        });
        self.by_file.insert(key, Some(slot));
        Some(slot)
    }

    /// The image and offset of a kernel address.
    pub fn kernel_address(&mut self, pc: u64) -> (ImageSlot, u64) {
        if let Some(m) = self.kernel.module_of(pc).cloned() {
            let slot = self.intern(NewImage {
                identity: format!(
                    "module:{}:{}",
                    m.name,
                    m.build_id.clone().unwrap_or_default()
                ),
                kind: "module".into(),
                path: format!("[{}]", m.name),
                build_id: m.build_id.clone(),
                size: Some(m.size),
                mtime: None,
                offset_kind: "module".into(),
            });
            return (slot, pc - m.base);
        }
        match self.kernel.text {
            Some(text) if pc >= text => {
                let bid = self.kernel.build_id.clone();
                let slot = self.intern(NewImage {
                    identity: format!("kernel:{}", bid.clone().unwrap_or_default()),
                    kind: "kernel".into(),
                    path: "[kernel.kallsyms]".into(),
                    build_id: bid,
                    size: None,
                    mtime: None,
                    offset_kind: "kernel_text".into(),
                });
                (slot, pc - text)
            }
            _ => {
                let slot = self.intern(NewImage {
                    identity: "kernel-unknown".into(),
                    kind: "kernel".into(),
                    path: "[kernel.unknown]".into(),
                    build_id: None,
                    size: None,
                    mtime: None,
                    offset_kind: "absolute".into(),
                });
                (slot, pc)
            }
        }
    }

    /// Whether an address is in the kernel half of the address space.
    pub fn is_kernel_address(pc: u64) -> bool {
        pc >= KERNEL_START
    }

    /// Images registered since the last call, for the next flush.
    pub fn take_pending(&mut self) -> Vec<(ImageSlot, NewImage)> {
        std::mem::take(&mut self.pending)
            .into_iter()
            .map(|s| (s, self.images[s as usize].clone()))
            .collect()
    }

    pub fn len(&self) -> usize {
        self.images.len()
    }

    pub fn is_empty(&self) -> bool {
        self.images.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifies_files_by_build_id_once() {
        let mut r = ImageRegistry::new(KernelLayout::default());
        let exe = std::env::current_exe().unwrap();
        let p = exe.to_str().unwrap();
        let a = r.file(p, 1, None).unwrap();
        let b = r.file(p, 1, None).unwrap();
        assert_eq!(a, b);
        let pending = r.take_pending();
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].1.kind, "elf");
        // Rust test binaries carry a GNU build-id on Linux.
        assert!(
            pending[0].1.identity.starts_with("build-id:"),
            "{:?}",
            pending[0].1
        );
        assert!(r.take_pending().is_empty());
    }

    #[test]
    fn supplied_build_id_wins_and_unknown_regions_are_unknown() {
        let mut r = ImageRegistry::new(KernelLayout::default());
        let s = r
            .file("/nonexistent/lib.so", 5, Some(&[0xde, 0xad]))
            .unwrap();
        assert_eq!(r.take_pending()[0].1.identity, "build-id:dead");
        assert_eq!(r.file("/nonexistent/lib.so", 5, None), Some(s));
        let missing = r.file("/nonexistent/other.so", 6, None).unwrap();
        assert!(r.take_pending()[0]
            .1
            .identity
            .starts_with("file:/nonexistent/other.so"));
        assert_ne!(missing, s);
        for p in ["[vdso]", "", "//anon", "/memfd:jit (deleted)", "[anon:v8]"] {
            assert_eq!(r.file(p, 0, None), None, "{p}");
        }
    }

    #[test]
    fn kernel_addresses_go_to_kernel_or_module() {
        let layout = KernelLayout {
            text: Some(0xffff_ffff_8100_0000),
            build_id: Some("aa".into()),
            modules: vec![crate::kernel::Module {
                name: "kvm".into(),
                base: 0xffff_ffff_c000_0000,
                size: 0x1000,
                build_id: None,
            }],
        };
        let mut r = ImageRegistry::new(layout);
        let (k, off) = r.kernel_address(0xffff_ffff_8100_0123);
        assert_eq!(off, 0x123);
        let (m, moff) = r.kernel_address(0xffff_ffff_c000_0010);
        assert_eq!(moff, 0x10);
        assert_ne!(k, m);
        let names: Vec<String> = r.take_pending().into_iter().map(|(_, i)| i.path).collect();
        assert_eq!(names, vec!["[kernel.kallsyms]", "[kvm]"]);
    }
}
