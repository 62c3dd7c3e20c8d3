//! Where kernel samples go: the kernel image (offsets from `_text`, so they
//! survive KASLR) and its modules (offsets from the module base).

use std::fs;

/// A loaded module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Module {
    pub name: String,
    pub base: u64,
    pub size: u64,
    pub build_id: Option<String>,
}

/// The kernel's layout at the start of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelLayout {
    /// Address of `_text`, if /proc/kallsyms shows real addresses.
    pub text: Option<u64>,
    pub build_id: Option<String>,
    pub modules: Vec<Module>,
}

/// Lowest kernel address on x86-64.
pub const KERNEL_START: u64 = 0xffff_8000_0000_0000;

/// GNU build-id from a raw ELF notes blob (/sys/kernel/notes and friends).
pub fn build_id_from_notes(notes: &[u8]) -> Option<String> {
    let mut at = 0usize;
    let align = |n: usize| (n + 3) & !3;
    while at + 12 <= notes.len() {
        let rd = |o: usize| u32::from_ne_bytes(notes[o..o + 4].try_into().unwrap()) as usize;
        let (namesz, descsz, kind) = (rd(at), rd(at + 4), rd(at + 8));
        let name_at = at + 12;
        let desc_at = name_at + align(namesz);
        let end = desc_at + align(descsz);
        if end > notes.len() {
            return None;
        }
        if kind == 3 && notes.get(name_at..name_at + namesz) == Some(b"GNU\0") {
            return Some(hex(&notes[desc_at..desc_at + descsz]));
        }
        at = end;
    }
    None
}

/// Lower-case hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Parses /proc/modules.
pub fn parse_modules(text: &str) -> Vec<Module> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let size = f.get(1)?.parse().ok()?;
            let base = u64::from_str_radix(f.get(5)?.trim_start_matches("0x"), 16).ok()?;
            Some(Module {
                name: f[0].to_string(),
                base,
                size,
                build_id: None,
            })
        })
        .collect()
}

impl KernelLayout {
    /// Reads the running kernel's layout (addresses need root or kptr_restrict=0).
    pub fn read() -> Self {
        // Streamed: kallsyms is several MB and `_text` comes early.
        use std::io::BufRead;
        let text = fs::File::open("/proc/kallsyms").ok().and_then(|f| {
            std::io::BufReader::new(f)
                .lines()
                .map_while(|l| l.ok())
                .find_map(|l| {
                    let mut f = l.split_whitespace();
                    let addr = f.next()?;
                    let _kind = f.next()?;
                    (f.next()? == "_text").then(|| u64::from_str_radix(addr, 16).ok())?
                })
        });
        let text = text.filter(|&a| a != 0);
        let build_id = fs::read("/sys/kernel/notes")
            .ok()
            .and_then(|n| build_id_from_notes(&n));
        let mut modules = fs::read_to_string("/proc/modules")
            .map(|t| parse_modules(&t))
            .unwrap_or_default();
        modules.retain(|m| m.base != 0);
        for m in &mut modules {
            m.build_id = fs::read(format!("/sys/module/{}/notes/.note.gnu.build-id", m.name))
                .ok()
                .and_then(|n| build_id_from_notes(&n));
        }
        KernelLayout {
            text,
            build_id,
            modules,
        }
    }

    /// The module containing `pc`, if any.
    pub fn module_of(&self, pc: u64) -> Option<&Module> {
        self.modules
            .iter()
            .find(|m| pc >= m.base && pc < m.base + m.size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_notes_and_modules() {
        let mut n = Vec::new();
        // An unrelated note first, then the build-id.
        for v in [4u32, 4, 1] {
            n.extend_from_slice(&v.to_ne_bytes());
        }
        n.extend_from_slice(b"Xen\0\x01\x02\x03\x04");
        for v in [4u32, 3, 3] {
            n.extend_from_slice(&v.to_ne_bytes());
        }
        n.extend_from_slice(b"GNU\0\xab\xcd\xef\0");
        assert_eq!(build_id_from_notes(&n).as_deref(), Some("abcdef"));
        let m = parse_modules(
            "kvm 1105920 1 kvm_amd, Live 0xffffffffc0a00000\nx 10 0 - Live 0x0000000000000000\n",
        );
        assert_eq!(m[0].name, "kvm");
        assert_eq!(m[0].base, 0xffffffffc0a00000);
        assert_eq!(m[1].base, 0);
    }

    #[test]
    fn reads_the_running_kernel() {
        let k = KernelLayout::read();
        if unsafe { libc::geteuid() } == 0 {
            assert!(k.text.unwrap_or(0) >= KERNEL_START, "{k:?}");
        }
    }
}
