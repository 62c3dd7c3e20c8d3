//! Event names as users type them (`-e cycles,cache-misses:pp,r01c2`) and
//! what they mean to perf_event_open.

use crate::error::CollectError;
use serde::Serialize;

// perf_event_attr.type values (linux/perf_event.h).
pub const TYPE_HARDWARE: u32 = 0;
pub const TYPE_SOFTWARE: u32 = 1;
pub const TYPE_HW_CACHE: u32 = 3;
pub const TYPE_RAW: u32 = 4;

/// Software config values.
pub const SW_CPU_CLOCK: u64 = 0;
pub const SW_TASK_CLOCK: u64 = 1;
pub const SW_PAGE_FAULTS: u64 = 2;

/// What one sample of an event stands for, used to extrapolate time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventUnit {
    /// The period counts core cycles.
    Cycles,
    /// The period counts nanoseconds of a timer (cpu-clock, task-clock).
    Nanoseconds,
    /// The period counts occurrences of something (misses, faults, instructions).
    Events,
}

impl EventUnit {
    pub fn as_str(self) -> &'static str {
        match self {
            EventUnit::Cycles => "cycles",
            EventUnit::Nanoseconds => "ns",
            EventUnit::Events => "events",
        }
    }
}

/// A parsed event: name, kernel encoding and precise level.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventSpec {
    /// Canonical name (`cycles`, `r01c2`, ...), without the `:p` suffix.
    pub name: String,
    pub type_: u32,
    pub config: u64,
    /// 0 = arbitrary skid, 1 = `:p`, 2 = `:pp`, 3 = `:ppp`.
    pub precise: u8,
    pub unit: EventUnit,
}

impl EventSpec {
    /// Whether the event needs a hardware PMU.
    pub fn is_hardware(&self) -> bool {
        matches!(self.type_, TYPE_HARDWARE | TYPE_HW_CACHE | TYPE_RAW)
    }

    /// Name with its precise suffix, as the user would type it.
    pub fn display_name(&self) -> String {
        if self.precise == 0 {
            self.name.clone()
        } else {
            format!("{}:{}", self.name, "p".repeat(self.precise as usize))
        }
    }

    /// The fallback used when no PMU is exposed.
    pub fn cpu_clock() -> EventSpec {
        EventSpec {
            name: "cpu-clock".into(),
            type_: TYPE_SOFTWARE,
            config: SW_CPU_CLOCK,
            precise: 0,
            unit: EventUnit::Nanoseconds,
        }
    }
}

/// Hardware cache event encoding: id | (op << 8) | (result << 16).
const fn cache(id: u64, op: u64, result: u64) -> u64 {
    id | (op << 8) | (result << 16)
}
const L1D: u64 = 0;
const L1I: u64 = 1;
const DTLB: u64 = 3;
const ITLB: u64 = 4;
const OP_READ: u64 = 0;
const MISS: u64 = 1;

/// Every named event dcpi accepts: (name, type, config, unit).
pub const KNOWN_EVENTS: &[(&str, u32, u64, EventUnit)] = &[
    ("cycles", TYPE_HARDWARE, 0, EventUnit::Cycles),
    ("instructions", TYPE_HARDWARE, 1, EventUnit::Events),
    ("cache-references", TYPE_HARDWARE, 2, EventUnit::Events),
    ("cache-misses", TYPE_HARDWARE, 3, EventUnit::Events),
    ("branches", TYPE_HARDWARE, 4, EventUnit::Events),
    ("branch-misses", TYPE_HARDWARE, 5, EventUnit::Events),
    (
        "stalled-cycles-frontend",
        TYPE_HARDWARE,
        7,
        EventUnit::Cycles,
    ),
    (
        "stalled-cycles-backend",
        TYPE_HARDWARE,
        8,
        EventUnit::Cycles,
    ),
    (
        "L1-dcache-load-misses",
        TYPE_HW_CACHE,
        cache(L1D, OP_READ, MISS),
        EventUnit::Events,
    ),
    (
        "L1-icache-load-misses",
        TYPE_HW_CACHE,
        cache(L1I, OP_READ, MISS),
        EventUnit::Events,
    ),
    (
        "dTLB-load-misses",
        TYPE_HW_CACHE,
        cache(DTLB, OP_READ, MISS),
        EventUnit::Events,
    ),
    (
        "iTLB-load-misses",
        TYPE_HW_CACHE,
        cache(ITLB, OP_READ, MISS),
        EventUnit::Events,
    ),
    (
        "cpu-clock",
        TYPE_SOFTWARE,
        SW_CPU_CLOCK,
        EventUnit::Nanoseconds,
    ),
    (
        "task-clock",
        TYPE_SOFTWARE,
        SW_TASK_CLOCK,
        EventUnit::Nanoseconds,
    ),
    (
        "page-faults",
        TYPE_SOFTWARE,
        SW_PAGE_FAULTS,
        EventUnit::Events,
    ),
];

/// Aliases perf also accepts.
const ALIASES: &[(&str, &str)] = &[
    ("cpu-cycles", "cycles"),
    ("faults", "page-faults"),
    ("idle-cycles-frontend", "stalled-cycles-frontend"),
    ("idle-cycles-backend", "stalled-cycles-backend"),
];

/// The list printed when a name is not recognised.
pub fn valid_names() -> String {
    let mut names: Vec<&str> = KNOWN_EVENTS.iter().map(|e| e.0).collect();
    names.push("rNNNN (raw PMU code, hex)");
    names.join(", ")
}

/// Parses one event, e.g. `cycles`, `cache-misses:pp`, `r01c2:p`.
pub fn parse_event(text: &str) -> Result<EventSpec, CollectError> {
    let unknown = || CollectError::UnknownEvent {
        name: text.to_string(),
        valid: valid_names(),
    };
    let (base, modifier) = match text.split_once(':') {
        Some((b, m)) => (b, m),
        None => (text, ""),
    };
    if !modifier.chars().all(|c| c == 'p') || modifier.len() > 3 {
        return Err(unknown());
    }
    let precise = modifier.len() as u8;
    let base = ALIASES
        .iter()
        .find(|(alias, _)| alias.eq_ignore_ascii_case(base))
        .map(|(_, real)| *real)
        .unwrap_or(base);
    if let Some((name, type_, config, unit)) =
        KNOWN_EVENTS.iter().find(|e| e.0.eq_ignore_ascii_case(base))
    {
        if precise > 0 && *type_ == TYPE_SOFTWARE {
            return Err(CollectError::BadEventModifier {
                name: text.to_string(),
                why: "software events have no skid to reduce; drop the :p".into(),
            });
        }
        return Ok(EventSpec {
            name: (*name).to_string(),
            type_: *type_,
            config: *config,
            precise,
            unit: *unit,
        });
    }
    if let Some(hex) = base.strip_prefix('r') {
        if !hex.is_empty() && hex.len() <= 16 {
            if let Ok(config) = u64::from_str_radix(hex, 16) {
                return Ok(EventSpec {
                    name: format!("r{hex}").to_lowercase(),
                    type_: TYPE_RAW,
                    config,
                    precise,
                    unit: EventUnit::Events,
                });
            }
        }
    }
    Err(unknown())
}

/// Parses a comma-separated list; duplicates are an error.
pub fn parse_event_list(text: &str) -> Result<Vec<EventSpec>, CollectError> {
    let mut out: Vec<EventSpec> = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let spec = parse_event(part)?;
        if out.iter().any(|e| e.name == spec.name) {
            return Err(CollectError::BadEventModifier {
                name: part.to_string(),
                why: "event listed twice".into(),
            });
        }
        out.push(spec);
    }
    if out.is_empty() {
        return Err(CollectError::UnknownEvent {
            name: text.to_string(),
            valid: valid_names(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_modifiers_and_raw_codes() {
        let e = parse_event("cycles").unwrap();
        assert_eq!((e.type_, e.config, e.precise), (TYPE_HARDWARE, 0, 0));
        let e = parse_event("cache-misses:pp").unwrap();
        assert_eq!((e.config, e.precise), (3, 2));
        assert_eq!(e.display_name(), "cache-misses:pp");
        let e = parse_event("r01C2:p").unwrap();
        assert_eq!(
            (e.type_, e.config, e.precise, e.name.as_str()),
            (TYPE_RAW, 0x1c2, 1, "r01c2")
        );
        let e = parse_event("L1-dcache-load-misses").unwrap();
        assert_eq!((e.type_, e.config), (TYPE_HW_CACHE, 0x10000));
        let e = parse_event("iTLB-load-misses").unwrap();
        assert_eq!(e.config, 4 | (1 << 16));
        assert_eq!(parse_event("cpu-cycles").unwrap().name, "cycles");
    }

    #[test]
    fn unknown_event_lists_valid_ones() {
        let err = parse_event("cyclez").unwrap_err().to_string();
        assert!(
            err.contains("cyclez") && err.contains("branch-misses") && err.contains("rNNNN"),
            "{err}"
        );
        assert!(parse_event("rXYZ").is_err());
        assert!(parse_event("cycles:q").is_err());
        assert!(parse_event("cpu-clock:p").is_err());
    }

    #[test]
    fn lists_reject_duplicates() {
        assert_eq!(parse_event_list("cycles, instructions").unwrap().len(), 2);
        assert!(parse_event_list("cycles,cycles").is_err());
        assert!(parse_event_list("").is_err());
    }
}
