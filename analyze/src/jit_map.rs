//! perf's JIT symbol maps: `/tmp/perf-PID.map`, one `START SIZE name` line
//! (hexadecimal, no `0x` needed) per piece of generated code, as Node
//! (`--perf-basic-prof`), the JVM's perf-map-agent, Python 3.12+ (`-X
//! perf`), LuaJIT and others write them. Samples in anonymous executable
//! memory (the `[unknown]` image, kept per process at their raw address)
//! take their procedure names from the map of their process.
//!
//! Limits: read when the profile is analyzed, as `perf report` does, so the
//! map must still be there and the PID not reused by another JIT since
//! (nothing in the map says which process wrote it). Code the JIT moved or
//! freed keeps the last name written for its address range.

use std::path::Path;

/// One process's map: (start, end, name), sorted by start.
#[derive(Debug, Default)]
pub struct JitMap {
    entries: Vec<(u64, u64, String)>,
}

impl JitMap {
    /// The map of process `pid` in `dir` (`/tmp` for perf's), if there is one.
    pub fn load(dir: &Path, pid: i64) -> Option<JitMap> {
        let text = std::fs::read_to_string(dir.join(format!("perf-{pid}.map"))).ok()?;
        Some(JitMap::parse(&text))
    }

    /// Parses a map's text; lines that are not `START SIZE name` are skipped.
    pub fn parse(text: &str) -> JitMap {
        let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
        let mut entries: Vec<(u64, u64, String)> = text
            .lines()
            .filter_map(|line| {
                let mut parts = line.trim().splitn(3, char::is_whitespace);
                let start = hex(parts.next()?)?;
                let size = hex(parts.next()?.trim())?;
                let name = parts.next()?.trim();
                (size > 0 && !name.is_empty()).then(|| (start, start + size, name.to_string()))
            })
            .collect();
        // The last line written for a start wins (code regenerated in place).
        entries.reverse();
        entries.sort_by_key(|e| e.0);
        entries.dedup_by_key(|e| e.0);
        JitMap { entries }
    }

    /// The (name, start) of the code holding `addr`.
    pub fn lookup(&self, addr: u64) -> Option<(&str, u64)> {
        let k = self.entries.partition_point(|e| e.0 <= addr);
        let (start, end, name) = self.entries.get(k.checked_sub(1)?)?;
        (addr < *end).then_some((name.as_str(), *start))
    }

    /// The names in the map.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.2.as_str())
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_addresses_from_a_perf_map() {
        let m = JitMap::parse(
            "7f0000001000 40 LazyCompile:*fib /app.js:1\n\
             not a line\n\
             0x7f0000002000 0x10 py::f:/x.py\n\
             7f0000001000 20 regenerated\n",
        );
        assert_eq!(m.len(), 2);
        assert_eq!(
            m.lookup(0x7f0000001010),
            Some(("regenerated", 0x7f0000001000))
        );
        assert_eq!(
            m.lookup(0x7f0000001020),
            None,
            "past the regenerated code's end"
        );
        assert_eq!(
            m.lookup(0x7f000000200f),
            Some(("py::f:/x.py", 0x7f0000002000))
        );
        assert_eq!(m.lookup(0x7f0000002010), None);
        assert_eq!(m.lookup(0x1000), None);
    }
}
