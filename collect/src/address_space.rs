//! The daemon's view of process address spaces: per instance serial, the
//! executable mappings, turning (instance, pc) into (image, offset).
//!
//! A new mapping replaces any older one it overlaps (as the kernel's mmap with
//! MAP_FIXED does). Limit: the hash table aggregates away sample times, so a
//! sample taken before an address range was unmapped and remapped within the
//! same instance resolves against the newer mapping.

use crate::images::ImageSlot;
use std::collections::HashMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub pgoff: u64,
    /// `None` for an unknown region ([vdso], anonymous, JIT).
    pub image: Option<ImageSlot>,
}

/// Where a pc resolved to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolved {
    /// A file image and the file offset.
    Image(ImageSlot, u64),
    /// A known mapping that is not a file, or no mapping at all.
    Unknown,
}

#[derive(Debug, Default)]
pub struct AddressSpaces {
    spaces: HashMap<u32, Vec<Mapping>>,
}

impl AddressSpaces {
    /// Adds a mapping to an instance.
    pub fn map(&mut self, serial: u32, m: Mapping) {
        let v = self.spaces.entry(serial).or_default();
        let mut kept: Vec<Mapping> = Vec::with_capacity(v.len() + 2);
        for old in v.drain(..) {
            if old.end <= m.start || old.start >= m.end {
                kept.push(old);
                continue;
            }
            // Keep the parts of the old mapping outside the new one.
            if old.start < m.start {
                kept.push(Mapping {
                    end: m.start,
                    ..old
                });
            }
            if old.end > m.end {
                kept.push(Mapping {
                    start: m.end,
                    pgoff: old.pgoff + (m.end - old.start),
                    ..old
                });
            }
        }
        kept.push(m);
        kept.sort_by_key(|x| x.start);
        *v = kept;
    }

    /// A forked child starts with its parent's mappings.
    pub fn inherit(&mut self, child: u32, parent: u32) {
        if let Some(p) = self.spaces.get(&parent).cloned() {
            self.spaces.insert(child, p);
        }
    }

    pub fn forget(&mut self, serial: u32) {
        self.spaces.remove(&serial);
    }

    pub fn resolve(&self, serial: u32, pc: u64) -> Resolved {
        let Some(v) = self.spaces.get(&serial) else {
            return Resolved::Unknown;
        };
        let i = v.partition_point(|m| m.start <= pc);
        if i == 0 {
            return Resolved::Unknown;
        }
        let m = &v[i - 1];
        match (pc < m.end, m.image) {
            (true, Some(img)) => Resolved::Image(img, pc - m.start + m.pgoff),
            _ => Resolved::Unknown,
        }
    }

    /// Instances with an address space.
    pub fn len(&self) -> usize {
        self.spaces.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spaces.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pie_and_shared_library_offsets() {
        let mut a = AddressSpaces::default();
        // A PIE's text segment at file offset 0x1000, libc's at 0x28000.
        a.map(
            1,
            Mapping {
                start: 0x5555_5555_5000,
                end: 0x5555_5555_6000,
                pgoff: 0x1000,
                image: Some(0),
            },
        );
        a.map(
            1,
            Mapping {
                start: 0x7fff_f7c2_8000,
                end: 0x7fff_f7dbd000,
                pgoff: 0x28000,
                image: Some(1),
            },
        );
        a.map(
            1,
            Mapping {
                start: 0x7fff_f7fc_1000,
                end: 0x7fff_f7fc_3000,
                pgoff: 0,
                image: None,
            },
        );
        assert_eq!(a.resolve(1, 0x5555_5555_5139), Resolved::Image(0, 0x1139));
        assert_eq!(a.resolve(1, 0x7fff_f7c2_9000), Resolved::Image(1, 0x29000));
        assert_eq!(a.resolve(1, 0x7fff_f7fc_1010), Resolved::Unknown, "vdso");
        assert_eq!(a.resolve(1, 0x1000), Resolved::Unknown, "unmapped");
        assert_eq!(
            a.resolve(2, 0x5555_5555_5139),
            Resolved::Unknown,
            "other instance"
        );
    }

    #[test]
    fn fork_inherits_and_overlap_replaces() {
        let mut a = AddressSpaces::default();
        a.map(
            1,
            Mapping {
                start: 0x1000,
                end: 0x4000,
                pgoff: 0,
                image: Some(0),
            },
        );
        a.inherit(2, 1);
        assert_eq!(a.resolve(2, 0x1100), Resolved::Image(0, 0x100));
        // The child maps something over the middle; the parent is unaffected.
        a.map(
            2,
            Mapping {
                start: 0x2000,
                end: 0x3000,
                pgoff: 0x500,
                image: Some(7),
            },
        );
        assert_eq!(a.resolve(2, 0x2010), Resolved::Image(7, 0x510));
        assert_eq!(
            a.resolve(2, 0x3010),
            Resolved::Image(0, 0x2010),
            "tail keeps its file offset"
        );
        assert_eq!(a.resolve(1, 0x2010), Resolved::Image(0, 0x1010));
        a.forget(2);
        assert_eq!(a.resolve(2, 0x1100), Resolved::Unknown);
    }
}
