//! Kernel and module procedures from /proc/kallsyms, with addresses turned
//! into the offsets the collector stores (from `_text`, or from a module's
//! base), so they survive KASLR. Needs root (or kptr_restrict=0) for real
//! addresses; without them every kernel sample stays `[kernel.kallsyms]+off`.

use std::collections::HashMap;

/// Sorted (offset, name) per kernel image path (`[kernel.kallsyms]`, `[kvm]`).
#[derive(Debug, Default)]
pub struct KernelSymbols {
    images: HashMap<String, Vec<(u64, String)>>,
    /// Build-id of the running kernel.
    pub build_id: Option<String>,
}

impl KernelSymbols {
    /// Parses kallsyms and modules text.
    pub fn parse(kallsyms: &str, modules: &str) -> Self {
        let bases: HashMap<&str, u64> = modules
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                Some((
                    *f.first()?,
                    u64::from_str_radix(f.get(5)?.trim_start_matches("0x"), 16).ok()?,
                ))
            })
            .collect();
        let mut text = None;
        let mut raw: Vec<(u64, &str, Option<&str>)> = Vec::new();
        for l in kallsyms.lines() {
            let mut f = l.split_whitespace();
            let (Some(a), Some(kind), Some(name)) = (f.next(), f.next(), f.next()) else {
                continue;
            };
            if !matches!(kind, "t" | "T" | "w" | "W") {
                continue;
            }
            let Ok(addr) = u64::from_str_radix(a, 16) else {
                continue;
            };
            if addr == 0 {
                continue;
            }
            let module = f.next().map(|m| m.trim_matches(|c| c == '[' || c == ']'));
            if module.is_none() && name == "_text" {
                text = Some(addr);
            }
            raw.push((addr, name, module));
        }
        let mut images: HashMap<String, Vec<(u64, String)>> = HashMap::new();
        for (addr, name, module) in raw {
            let (image, base) = match module {
                None => ("[kernel.kallsyms]".to_string(), text),
                Some(m) => (format!("[{m}]"), bases.get(m).copied()),
            };
            let Some(base) = base.filter(|&b| addr >= b) else {
                continue;
            };
            images
                .entry(image)
                .or_default()
                .push((addr - base, name.to_string()));
        }
        for v in images.values_mut() {
            v.sort();
            v.dedup_by_key(|e| e.0);
        }
        KernelSymbols {
            images,
            build_id: None,
        }
    }

    /// Reads the running kernel's symbols.
    pub fn read() -> Self {
        let k = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
        let m = std::fs::read_to_string("/proc/modules").unwrap_or_default();
        let mut s = Self::parse(&k, &m);
        s.build_id = std::fs::read("/sys/kernel/notes")
            .ok()
            .and_then(|n| dcpi_collect::kernel::build_id_from_notes(&n));
        s
    }

    /// The kernel image (`[kernel.kallsyms]`, `[kvm]`) with a function
    /// called `name`, if any.
    pub fn image_of(&self, name: &str) -> Option<&str> {
        let mut images: Vec<&String> = self.images.keys().collect();
        images.sort();
        images
            .into_iter()
            .find(|i| self.images[*i].iter().any(|(_, n)| n == name))
            .map(|i| i.as_str())
    }

    /// Procedure and its start offset for an offset in a kernel image.
    pub fn procedure(&self, image: &str, offset: u64) -> Option<(&str, u64)> {
        let v = self.images.get(image)?;
        let i = v.partition_point(|e| e.0 <= offset);
        (i > 0).then(|| (v[i - 1].1.as_str(), v[i - 1].0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_from_text_and_module_base() {
        let k = "ffffffff81000000 T _text\nffffffff81000100 T do_syscall_64\nffffffff81000200 t helper\n\
                 ffffffff81000300 D some_data\nffffffffc0001000 t kvm_fn\t[kvm]\n";
        let m = "kvm 4096 0 - Live 0xffffffffc0000000\n";
        let s = KernelSymbols::parse(k, m);
        assert_eq!(
            s.procedure("[kernel.kallsyms]", 0x150),
            Some(("do_syscall_64", 0x100))
        );
        assert_eq!(
            s.procedure("[kernel.kallsyms]", 0x350),
            Some(("helper", 0x200)),
            "data symbols skipped"
        );
        assert_eq!(s.procedure("[kvm]", 0x1008), Some(("kvm_fn", 0x1000)));
        assert_eq!(s.procedure("[nope]", 0), None);
        assert_eq!(s.image_of("kvm_fn"), Some("[kvm]"));
        assert_eq!(s.image_of("helper"), Some("[kernel.kallsyms]"));
        assert_eq!(s.image_of("nope"), None);
    }
}
