//! Facts about the host stored with every run: CPU identity and kernel.

use serde::Serialize;

/// What the collector records about the machine a profile came from.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct HostFacts {
    pub hostname: String,
    pub kernel: String,
    pub cpu_vendor: String,
    /// Display family (base + extended, as AMD and Intel define it).
    pub cpu_family: u32,
    /// Display model (base + extended model).
    pub cpu_model: u32,
    pub cpu_stepping: u32,
    pub cpu_model_name: String,
    /// CPUID features that tell microarchitectures apart when a hypervisor
    /// reports a model number the descriptions do not list (see
    /// [`cpu_features`]).
    pub cpu_features: Vec<String>,
    pub online_cpus: u32,
}

#[cfg(target_arch = "x86_64")]
fn cpuid_identity() -> (String, u32, u32, u32) {
    use core::arch::x86_64::__cpuid;
    // cpuid leaves 0 and 1 exist on every x86-64 CPU.
    let (l0, l1) = (__cpuid(0), __cpuid(1));
    let mut vendor = Vec::with_capacity(12);
    for r in [l0.ebx, l0.edx, l0.ecx] {
        vendor.extend_from_slice(&r.to_le_bytes());
    }
    let vendor = String::from_utf8_lossy(&vendor).into_owned();
    let eax = l1.eax;
    let base_family = (eax >> 8) & 0xf;
    let ext_family = (eax >> 20) & 0xff;
    let base_model = (eax >> 4) & 0xf;
    let ext_model = (eax >> 16) & 0xf;
    let family = if base_family == 0xf {
        base_family + ext_family
    } else {
        base_family
    };
    let model = if base_family == 0xf || base_family == 0x6 {
        (ext_model << 4) | base_model
    } else {
        base_model
    };
    (vendor, family, model, eax & 0xf)
}

/// The CPUID leaf 7 features [`crate::machine::Machine::for_cpu`] can tell
/// microarchitectures apart by, as Linux names them in /proc/cpuinfo.
/// Under KVM the model number is what the hypervisor chose (a Sapphire
/// Rapids guest here reported family 6 model 0xa7, a Rocket Lake number),
/// while these bits are the real core's.
#[cfg(target_arch = "x86_64")]
pub fn cpu_features() -> Vec<String> {
    use core::arch::x86_64::{__cpuid, __cpuid_count};
    if __cpuid(0).eax < 7 {
        return Vec::new();
    }
    let l7 = __cpuid_count(7, 0);
    let named: [(&str, u32, u32); 7] = [
        ("avx2", l7.ebx, 5),
        ("avx512f", l7.ebx, 16),
        ("avx512_vbmi2", l7.ecx, 6),
        ("serialize", l7.edx, 14),
        ("hybrid", l7.edx, 15),
        ("avx512_fp16", l7.edx, 23),
        ("amx_tile", l7.edx, 24),
    ];
    named
        .iter()
        .filter(|(_, reg, bit)| reg & (1 << bit) != 0)
        .map(|(name, _, _)| name.to_string())
        .collect()
}

fn model_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_default()
}

fn uname() -> (String, String) {
    // SAFETY: utsname is plain old data; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return (String::new(), String::new());
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    (
        field(&u.nodename),
        format!("{} {}", field(&u.sysname), field(&u.release)),
    )
}

/// Whether this runs under a hypervisor (CPUID leaf 1, ECX bit 31, which
/// every x86 hypervisor sets for its guests).
#[cfg(target_arch = "x86_64")]
pub fn is_virtual_machine() -> bool {
    let r = std::arch::x86_64::__cpuid(1);
    r.ecx & (1 << 31) != 0
}

/// Number of CPUs online now.
pub fn online_cpus() -> u32 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    n.max(1) as u32
}

/// Reads the host facts.
#[cfg(target_arch = "x86_64")]
pub fn read() -> HostFacts {
    let (cpu_vendor, cpu_family, cpu_model, cpu_stepping) = cpuid_identity();
    let (hostname, kernel) = uname();
    HostFacts {
        hostname,
        kernel,
        cpu_vendor,
        cpu_family,
        cpu_model,
        cpu_stepping,
        cpu_model_name: model_name(),
        cpu_features: cpu_features(),
        online_cpus: online_cpus(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_cpuid_and_kernel() {
        let h = super::read();
        assert_eq!(h.cpu_vendor.len(), 12);
        assert!(h.cpu_family >= 6, "{h:?}");
        assert!(h.kernel.starts_with("Linux "), "{h:?}");
        assert!(h.online_cpus >= 1);
    }
}
