//! Tracepoint ids from tracefs, mounting it when needed (as perf does).

use crate::error::{CollectError, Result};
use std::path::Path;

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
