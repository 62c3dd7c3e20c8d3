//! Tracepoint ids from tracefs, mounting it when needed (as perf does).

use crate::error::{CollectError, Result};
use perf_event::events::Event;
use perf_event_open_sys::bindings::perf_event_attr;
use std::path::Path;

const TYPE_TRACEPOINT: u32 = 2;

/// A tracepoint as a perf event, by its tracefs id.
pub struct Tracepoint(pub u64);

impl Event for Tracepoint {
    fn update_attrs(self, attr: &mut perf_event_attr) {
        attr.type_ = TYPE_TRACEPOINT;
        attr.config = self.0;
    }
}

const MOUNTS: &[&str] = &["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

fn find_root() -> Option<&'static str> {
    MOUNTS
        .iter()
        .copied()
        .find(|m| Path::new(m).join("events").is_dir())
}

/// The tracefs root, mounting tracefs on /sys/kernel/tracing if no mount is found.
pub fn root() -> Result<&'static str> {
    if let Some(r) = find_root() {
        return Ok(r);
    }
    let target = std::ffi::CString::new(MOUNTS[0]).expect("no NUL");
    let fstype = std::ffi::CString::new("tracefs").expect("no NUL");
    let src = std::ffi::CString::new("nodev").expect("no NUL");
    // SAFETY: valid C strings; mount(2) has no other preconditions.
    let rc = unsafe {
        libc::mount(
            src.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(CollectError::PerfSetup {
            what: "tracefs is not mounted and mounting it failed (run as root, or: mount -t tracefs nodev /sys/kernel/tracing)".into(),
            source: std::io::Error::last_os_error(),
        });
    }
    find_root()
        .ok_or_else(|| CollectError::Usage("tracefs mounted but has no events directory".into()))
}

/// The id of tracepoint `group:name` (e.g. `raw_syscalls:sys_enter`).
pub fn tracepoint_id(group: &str, name: &str) -> Result<u64> {
    let path = Path::new(root()?)
        .join("events")
        .join(group)
        .join(name)
        .join("id");
    let text = std::fs::read_to_string(&path).map_err(|source| CollectError::Io {
        what: format!("reading tracepoint {group}:{name} ({})", path.display()),
        source,
    })?;
    text.trim()
        .parse()
        .map_err(|_| CollectError::Usage(format!("bad tracepoint id in {}", path.display())))
}

/// Offset of `field` in the raw data of tracepoint `group:name` (its format file).
pub fn field_offset(group: &str, name: &str, field: &str) -> Result<usize> {
    let path = Path::new(root()?)
        .join("events")
        .join(group)
        .join(name)
        .join("format");
    let text = std::fs::read_to_string(&path).map_err(|source| CollectError::Io {
        what: format!(
            "reading tracepoint format {group}:{name} ({})",
            path.display()
        ),
        source,
    })?;
    parse_field_offset(&text, field).ok_or_else(|| {
        CollectError::Usage(format!(
            "tracepoint {group}:{name} has no field '{field}' ({})",
            path.display()
        ))
    })
}

/// The offset of `field` in a tracefs format text.
pub fn parse_field_offset(format: &str, field: &str) -> Option<usize> {
    format.lines().find_map(|l| {
        let decl = l.trim().strip_prefix("field:")?.split(';').next()?;
        let fname = decl.rsplit([' ', '*']).next()?;
        let fname = fname.split('[').next()?;
        if fname != field {
            return None;
        }
        let off = l.split("offset:").nth(1)?.split(';').next()?;
        off.trim().parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_field_offsets() {
        let f = "name: sched_waking\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:void * work;\toffset:32;\tsize:8;\tsigned:0;\n";
        assert_eq!(parse_field_offset(f, "pid"), Some(24));
        assert_eq!(parse_field_offset(f, "comm"), Some(8));
        assert_eq!(parse_field_offset(f, "work"), Some(32));
        assert_eq!(parse_field_offset(f, "prio"), None);
    }
}
