//! Starting the profiled command the way perf does: fork, hold the child on
//! a pipe while the events are opened on its pid, then let it `execvp`.
//! (`std::process::Command` cannot do this: spawn waits for the exec.)

use crate::error::{CollectError, Result};
use std::ffi::CString;

/// A forked child waiting for [`HeldChild::release`] before it execs.
#[derive(Debug)]
pub struct HeldChild {
    pub pid: u32,
    go_write: i32,
    err_read: i32,
    command: String,
}

fn pipe(cloexec: bool) -> std::io::Result<(i32, i32)> {
    let mut fds = [0i32; 2];
    let flags = if cloexec { libc::O_CLOEXEC } else { 0 };
    // SAFETY: fds has room for two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), flags) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
}

/// Forks a child that will run `argv` once released.
pub fn spawn_held(argv: &[String]) -> Result<HeldChild> {
    let command = argv.join(" ");
    let spawn_err = |source| CollectError::Spawn {
        command: command.clone(),
        source,
    };
    if argv.is_empty() {
        return Err(CollectError::Usage("no command given after --".into()));
    }
    let cargs: Vec<CString> = argv
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| CollectError::Usage("a command argument contains a NUL byte".into()))?;
    let mut ptrs: Vec<*const libc::c_char> = cargs.iter().map(|c| c.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    let (go_read, go_write) = pipe(true).map_err(spawn_err)?;
    let (err_read, err_write) = pipe(true).map_err(spawn_err)?;
    // SAFETY: the child only calls async-signal-safe functions before exec.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(spawn_err(std::io::Error::last_os_error()));
    }
    if pid == 0 {
        // Child: wait for the go byte (or EOF if the parent died), then exec.
        unsafe {
            libc::close(go_write);
            libc::close(err_read);
            let mut b = 0u8;
            let n = libc::read(go_read, &mut b as *mut u8 as *mut libc::c_void, 1);
            if n != 1 {
                libc::_exit(127);
            }
            libc::close(go_read);
            libc::execvp(ptrs[0], ptrs.as_ptr());
            let errno = *libc::__errno_location();
            libc::write(err_write, &errno as *const i32 as *const libc::c_void, 4);
            libc::_exit(127);
        }
    }
    // SAFETY: closing the child's ends in the parent.
    unsafe {
        libc::close(go_read);
        libc::close(err_write);
    }
    Ok(HeldChild {
        pid: pid as u32,
        go_write,
        err_read,
        command,
    })
}

impl HeldChild {
    /// Lets the child exec; fails if the exec failed (command not found, ...).
    pub fn release(mut self) -> Result<u32> {
        let b = 1u8;
        // SAFETY: valid fds owned by self.
        unsafe {
            libc::write(self.go_write, &b as *const u8 as *const libc::c_void, 1);
            libc::close(self.go_write);
        }
        self.go_write = -1;
        let mut errno = 0i32;
        let n = unsafe {
            libc::read(
                self.err_read,
                &mut errno as *mut i32 as *mut libc::c_void,
                4,
            )
        };
        unsafe { libc::close(self.err_read) };
        self.err_read = -1;
        if n == 4 {
            let mut status = 0;
            unsafe { libc::waitpid(self.pid as i32, &mut status, 0) };
            return Err(CollectError::Spawn {
                command: self.command.clone(),
                source: std::io::Error::from_raw_os_error(errno),
            });
        }
        Ok(self.pid)
    }

    /// Kills the held child (setup failed before it could run).
    pub fn abandon(mut self) {
        unsafe {
            libc::close(self.go_write);
            libc::close(self.err_read);
            libc::kill(self.pid as i32, libc::SIGKILL);
            let mut status = 0;
            libc::waitpid(self.pid as i32, &mut status, 0);
        }
        self.go_write = -1;
        self.err_read = -1;
    }
}

/// A child that ended: its exit code (as [`exit_code`]) and its time on a
/// CPU, user and system, with its own reaped children's (`wait4`'s
/// resource usage; a guest kernel that accounts steal leaves it out).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reaped {
    pub exit_code: i32,
    pub cpu_s: f64,
}

/// Reaps `pid` if it has ended (waits for it when `block`); None while it
/// runs, or when it is not our child (any more).
pub fn reap(pid: u32, block: bool) -> Option<Reaped> {
    let mut status = 0;
    // SAFETY: wait4 fills the status and the rusage we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let flags = if block { 0 } else { libc::WNOHANG };
    let r = unsafe { libc::wait4(pid as i32, &mut status, flags, &mut ru) };
    if r != pid as i32 {
        return None;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(Reaped {
        exit_code: exit_code(status),
        cpu_s: secs(ru.ru_utime) + secs(ru.ru_stime),
    })
}

/// How a waited-for child ended, as a shell exit code (128 + signal).
pub fn exit_code(status: i32) -> i32 {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    }
}

/// How a shell exit code above 128 reads as the signal that ended the
/// process (`killed by SIGSEGV`), for the common signals; None for an
/// ordinary exit code (a process may also exit with 139 itself: the
/// code alone cannot tell, as in a shell).
pub fn killed_by(code: i64) -> Option<String> {
    const NAMES: [&str; 16] = [
        "", "SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE",
        "SIGKILL", "SIGUSR1", "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGTERM",
    ];
    let signal = code.checked_sub(128).filter(|s| (1..=64).contains(s))?;
    Some(match NAMES.get(signal as usize) {
        Some(name) => format!("killed by {name}"),
        None => format!("killed by signal {signal}"),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn shell_codes_above_128_name_their_signal() {
        use super::killed_by;
        assert_eq!(killed_by(139).as_deref(), Some("killed by SIGSEGV"));
        assert_eq!(killed_by(134).as_deref(), Some("killed by SIGABRT"));
        assert_eq!(killed_by(128 + 34).as_deref(), Some("killed by signal 34"));
        assert_eq!(killed_by(0), None);
        assert_eq!(killed_by(1), None);
        assert_eq!(killed_by(128), None);
        assert_eq!(killed_by(255), None);
    }

    use super::*;

    #[test]
    fn a_reaped_child_gives_its_time_on_a_cpu() {
        // A shell that spins ~0.2 s of CPU, then exits 3.
        let c = spawn_held(&[
            "sh".into(),
            "-c".into(),
            "i=0; while [ $i -lt 40000 ]; do i=$((i+1)); done; exit 3".into(),
        ])
        .unwrap();
        let pid = c.release().unwrap();
        let r = reap(pid, true).expect("our child");
        assert_eq!(r.exit_code, 3);
        assert!(r.cpu_s > 0.0, "{r:?}");
        // Reaped once: not ours any more.
        assert_eq!(reap(pid, false), None);
    }

    #[test]
    fn runs_after_release_with_its_exit_status() {
        let c = spawn_held(&["sh".into(), "-c".into(), "exit 7".into()]).unwrap();
        let pid = c.release().unwrap();
        let mut status = 0;
        unsafe { libc::waitpid(pid as i32, &mut status, 0) };
        assert_eq!(exit_code(status), 7);
    }

    #[test]
    fn missing_command_is_a_clear_error() {
        let c = spawn_held(&["/no/such/program".into()]).unwrap();
        let err = c.release().unwrap_err().to_string();
        assert!(
            err.contains("/no/such/program") && err.contains("No such file"),
            "{err}"
        );
    }

    #[test]
    fn abandoned_child_never_runs() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let c = spawn_held(&["touch".into(), marker.to_str().unwrap().into()]).unwrap();
        c.abandon();
        assert!(!marker.exists());
    }
}
