//! What /proc says about processes that already run (attach, system-wide):
//! the kernel sends no MMAP records for them, so their maps are read here.

use std::fs;

/// One executable mapping from /proc/PID/maps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcMap {
    pub start: u64,
    pub end: u64,
    pub pgoff: u64,
    pub inode: u64,
    pub path: String,
}

/// Parses the executable lines of a maps file.
pub fn parse_maps(text: &str) -> Vec<ProcMap> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let (Some(range), Some(perms), Some(off), Some(_dev), Some(ino)) =
            (f.next(), f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        if perms.as_bytes().get(2) != Some(&b'x') {
            continue;
        }
        let path = f.collect::<Vec<_>>().join(" ");
        let Some((s, e)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end), Ok(pgoff)) = (
            u64::from_str_radix(s, 16),
            u64::from_str_radix(e, 16),
            u64::from_str_radix(off, 16),
        ) else {
            continue;
        };
        out.push(ProcMap {
            start,
            end,
            pgoff,
            inode: ino.parse().unwrap_or(0),
            path,
        });
    }
    out
}

/// Executable mappings of a live process (empty if it is gone).
pub fn maps(pid: u32) -> Vec<ProcMap> {
    fs::read_to_string(format!("/proc/{pid}/maps"))
        .map(|t| parse_maps(&t))
        .unwrap_or_default()
}

/// Command name (as in COMM records).
pub fn comm(pid: u32) -> Option<String> {
    fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim_end().to_string())
}

/// Command line, arguments separated by spaces.
pub fn cmdline(pid: u32) -> Option<String> {
    let raw = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let parts: Vec<String> = raw
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// Parent pid from /proc/PID/stat.
pub fn ppid(pid: u32) -> Option<u32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// Thread ids of a process.
pub fn threads(pid: u32) -> Vec<u32> {
    fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Every process id now.
pub fn all_pids() -> Vec<u32> {
    let mut pids: Vec<u32> = fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    pids.sort_unstable();
    pids
}

/// The CPU `pid` last ran on (`/proc/PID/stat`'s 39th field).
pub fn last_cpu(pid: u32) -> Option<u32> {
    parse_last_cpu(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

fn parse_last_cpu(stat: &str) -> Option<u32> {
    // The command name may hold spaces and parentheses: fields count from
    // after its last ')', where the third field (the state) begins.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(39 - 3)?.parse().ok()
}

/// Time the hypervisor has taken from all of this guest's CPUs since boot
/// (`/proc/stat`'s steal column), in seconds; None where the kernel does
/// not report it.
pub fn steal_seconds() -> Option<f64> {
    let text = fs::read_to_string("/proc/stat").ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    parse_steal(&text, if hz > 0 { hz as f64 } else { 100.0 })
}

/// The steal column of `/proc/stat`'s all-CPU line, in seconds.
fn parse_steal(text: &str, ticks_per_second: f64) -> Option<f64> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    // cpu user nice system idle iowait irq softirq steal ...
    let steal: u64 = line.split_whitespace().nth(8)?.parse().ok()?;
    Some(steal as f64 / ticks_per_second)
}

/// kernel.perf_event_paranoid as text (for error messages).
pub fn perf_event_paranoid() -> String {
    fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_only_executable_maps() {
        let text = "\
55d4c8a00000-55d4c8a02000 r--p 00000000 fe:01 1234 /usr/bin/loop
55d4c8a02000-55d4c8a03000 r-xp 00002000 fe:01 1234 /usr/bin/loop
7ffd1b3f0000-7ffd1b3f2000 r-xp 00000000 00:00 0 [vdso]
7f0000000000-7f0000001000 rwxp 00000000 00:00 0
7f1000000000-7f1000010000 r-xp 00028000 fe:01 99 /usr/lib/my lib.so
";
        let m = parse_maps(text);
        assert_eq!(m.len(), 4);
        assert_eq!(
            (m[0].start, m[0].end, m[0].pgoff),
            (0x55d4c8a02000, 0x55d4c8a03000, 0x2000)
        );
        assert_eq!(m[1].path, "[vdso]");
        assert_eq!(m[2].path, "");
        assert_eq!(m[3].path, "/usr/lib/my lib.so");
    }

    #[test]
    fn the_last_cpu_is_the_39th_field() {
        let stat = "4242 (a (weird) name) R 1 4242 4242 0 -1 4194304 100 0 0 0 5 1 0 0 20 0 1 0 \
                    123 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
        assert_eq!(parse_last_cpu(stat), Some(1));
        assert_eq!(parse_last_cpu("garbage"), None);
        let me = last_cpu(std::process::id()).unwrap();
        // SAFETY: sysconf has no preconditions.
        let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
        assert!((me as i64) < cpus.max(1), "{me} of {cpus}");
    }

    #[test]
    fn steal_is_the_eighth_column_of_the_cpu_line() {
        let text = "cpu  2143314 0 200514 1468799 12411 0 8144 2525 0 0\n\
                    cpu0 1053230 0 93304 763587 2738 0 3431 1247 0 0\n";
        assert_eq!(parse_steal(text, 100.0), Some(25.25));
        assert_eq!(parse_steal("intr 1 2 3\n", 100.0), None);
        // An old kernel's shorter line has no steal column.
        assert_eq!(parse_steal("cpu  1 2 3 4\n", 100.0), None);
        assert!(steal_seconds().is_some_and(|s| s >= 0.0));
    }

    #[test]
    fn reads_this_process() {
        let me = std::process::id();
        assert!(comm(me).is_some());
        assert!(ppid(me).is_some());
        assert!(!maps(me).is_empty());
        assert!(threads(me).contains(&me));
        assert!(all_pids().contains(&me));
    }
}
