//! Continuous mode's controls: how `dcpi flush`, `dcpi epoch`, `dcpi stop`
//! and `dcpi status` reach a running daemon.
//!
//! In the daemon process, [`Controls`] is shared by the driver (which starts
//! a flush on request), the daemon (which writes it, opens a new epoch when
//! asked and publishes [`LiveStatus`]) and the control server (a Unix socket
//! answering one line per request). Requests are plain lines (`status`,
//! `flush`, `epoch`, `stop`); answers are one line of JSON.
//!
//! Files of a daemon live in its run directory (`/run/dcpi` by default,
//! `$DCPI_RUN_DIR` or `--run-dir` to choose): `dcpi.sock`, `dcpi.pid` and
//! `dcpi.log`. One daemon per run directory.

use crate::error::{CollectError, Result};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// What the daemon last published (after each flush).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LiveStatus {
    pub run_id: i64,
    pub epoch_id: i64,
    /// Epochs opened by this daemon (the first included).
    pub epochs: u64,
    pub flushes: u64,
    /// The highest flush request written.
    pub flushed_request: u64,
    /// Unix time of the last flush, seconds.
    pub last_flush_unix: f64,
    /// Collector statistics as stored in `collector_stats`.
    pub stats: Vec<(String, u64)>,
    /// Early flushes forced by the memory bound.
    pub bound_flushes: u64,
    /// Processes the daemon is tracking now.
    pub live_processes: u64,
    /// The most processes it tracked at once since it started.
    pub peak_processes: u64,
    /// The error that stopped the daemon, if any.
    pub error: Option<String>,
}

impl LiveStatus {
    /// A collector statistic by its `collector_stats` name (0 if absent).
    pub fn stat(&self, name: &str) -> u64 {
        self.stats
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| *v)
            .unwrap_or(0)
    }
}

/// Shared between the driver, the daemon and the control server.
#[derive(Debug, Default)]
pub struct Controls {
    flush_requested: AtomicU64,
    epoch_requested: AtomicU64,
    flush_started: AtomicU64,
    status: Mutex<LiveStatus>,
    published: Condvar,
    pub stop: AtomicBool,
}

/// What the driver takes at a flush it starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlushMarker {
    /// The request this flush serves (0 = periodic).
    pub request: u64,
    /// Open a new epoch after writing it.
    pub new_epoch: bool,
}

impl Controls {
    pub fn new() -> Arc<Self> {
        Arc::new(Controls::default())
    }

    /// Asks for a flush (and a new epoch after it); returns the request number.
    pub fn request_flush(&self, new_epoch: bool) -> u64 {
        let n = self.flush_requested.fetch_add(1, Ordering::AcqRel) + 1;
        if new_epoch {
            self.epoch_requested.fetch_max(n, Ordering::AcqRel);
        }
        n
    }

    /// True when a requested flush has not been started yet (the driver polls this).
    pub fn flush_due(&self) -> bool {
        self.flush_requested.load(Ordering::Acquire) > self.flush_started.load(Ordering::Acquire)
    }

    /// The driver starts a flush: which requests it serves.
    pub fn start_flush(&self) -> FlushMarker {
        let request = self.flush_requested.load(Ordering::Acquire);
        let before = self.flush_started.swap(request, Ordering::AcqRel);
        let epoch = self.epoch_requested.load(Ordering::Acquire);
        FlushMarker {
            request,
            new_epoch: epoch > before && epoch <= request,
        }
    }

    /// The daemon publishes after writing a flush.
    pub fn publish(&self, update: impl FnOnce(&mut LiveStatus)) {
        let mut s = self.status.lock().unwrap_or_else(|p| p.into_inner());
        update(&mut s);
        self.published.notify_all();
    }

    pub fn status(&self) -> LiveStatus {
        self.status
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Waits until request `n` is written (or `timeout`, or the daemon failed).
    pub fn wait_flushed(&self, n: u64, timeout: Duration) -> Option<LiveStatus> {
        let deadline = Instant::now() + timeout;
        let mut s = self.status.lock().unwrap_or_else(|p| p.into_inner());
        while s.flushed_request < n && s.error.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            s = self
                .published
                .wait_timeout(s, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        Some(s.clone())
    }
}

/// The files of a daemon.
#[derive(Debug, Clone)]
pub struct RunDir {
    pub dir: PathBuf,
}

impl RunDir {
    /// `explicit`, else `$DCPI_RUN_DIR`, else `/run/dcpi` (root) or `$XDG_RUNTIME_DIR/dcpi`.
    pub fn resolve(explicit: Option<&Path>) -> Self {
        let dir = explicit
            .map(Path::to_path_buf)
            .or_else(|| std::env::var_os("DCPI_RUN_DIR").map(PathBuf::from))
            .unwrap_or_else(|| {
                // SAFETY: geteuid has no preconditions.
                if unsafe { libc::geteuid() } == 0 {
                    PathBuf::from("/run/dcpi")
                } else {
                    std::env::var_os("XDG_RUNTIME_DIR")
                        .map(|d| PathBuf::from(d).join("dcpi"))
                        .unwrap_or_else(|| {
                            std::env::temp_dir()
                                .join(format!("dcpi-{}", unsafe { libc::geteuid() }))
                        })
                }
            });
        RunDir { dir }
    }
    pub fn socket(&self) -> PathBuf {
        self.dir.join("dcpi.sock")
    }
    pub fn pid_file(&self) -> PathBuf {
        self.dir.join("dcpi.pid")
    }
    pub fn log(&self) -> PathBuf {
        self.dir.join("dcpi.log")
    }

    /// The pid of a live daemon of this directory, if any.
    pub fn running_pid(&self) -> Option<u32> {
        let pid: u32 = std::fs::read_to_string(self.pid_file())
            .ok()?
            .trim()
            .parse()
            .ok()?;
        // SAFETY: signal 0 only checks existence.
        let alive = unsafe { libc::kill(pid as i32, 0) } == 0;
        let is_dcpi = std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .map(|c| c.trim() == "dcpi")
            .unwrap_or(false);
        // A killed daemon nobody reaped yet (a zombie) is not running.
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                s.rsplit(')')
                    .next()
                    .map(|r| r.trim_start().starts_with('Z'))
            })
            .unwrap_or(true);
        (alive && is_dcpi && !zombie).then_some(pid)
    }
}

/// One request to a running daemon; the answer line, parsed.
pub fn request(run: &RunDir, what: &str, timeout: Duration) -> Result<serde_json::Value> {
    let sock = run.socket();
    let mut s = UnixStream::connect(&sock).map_err(|source| {
        if run.running_pid().is_none() {
            CollectError::Usage(format!(
                "no dcpi daemon is running (no live daemon for {}); start one with: dcpi start",
                run.dir.display()
            ))
        } else {
            CollectError::Io {
                what: format!("connecting to the daemon at {}", sock.display()),
                source,
            }
        }
    })?;
    let io = |source| CollectError::Io {
        what: format!("talking to the daemon at {}", sock.display()),
        source,
    };
    s.set_read_timeout(Some(timeout)).map_err(io)?;
    writeln!(s, "{what}").map_err(io)?;
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).map_err(io)?;
    if line.is_empty() {
        return Err(CollectError::Usage(
            "the daemon closed the connection without answering; see its log".into(),
        ));
    }
    let v: serde_json::Value = serde_json::from_str(&line)
        .map_err(|e| CollectError::Usage(format!("bad answer from the daemon ({e}): {line}")))?;
    if let Some(err) = v.get("error").and_then(|e| e.as_str()) {
        return Err(CollectError::Usage(format!("the daemon says: {err}")));
    }
    Ok(v)
}

/// Answers requests on the run directory's socket until `controls.stop`.
/// `status_extra` adds what only the caller knows (events, memory, CPU use).
pub fn serve(
    listener: UnixListener,
    controls: Arc<Controls>,
    status_extra: impl Fn(&LiveStatus) -> serde_json::Value + Send + 'static,
) {
    for conn in listener.incoming() {
        let Ok(mut conn) = conn else { continue };
        let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
        let mut line = String::new();
        if BufReader::new(&conn).read_line(&mut line).is_err() {
            continue;
        }
        let answer = match line.trim() {
            "status" => status_extra(&controls.status()),
            "flush" | "epoch" => {
                let epoch = line.trim() == "epoch";
                let n = controls.request_flush(epoch);
                match controls.wait_flushed(n, Duration::from_secs(60)) {
                    Some(s) if s.error.is_none() => serde_json::json!({
                        "flushed": true, "epoch_id": s.epoch_id, "epochs": s.epochs,
                        "flushes": s.flushes,
                    }),
                    Some(s) => serde_json::json!({ "error": s.error }),
                    None => serde_json::json!({ "error": "the flush did not finish within 60 s" }),
                }
            }
            "stop" => {
                controls.stop.store(true, Ordering::Release);
                serde_json::json!({ "stopping": true, "pid": std::process::id() })
            }
            other => serde_json::json!({ "error": format!("unknown request '{other}'") }),
        };
        let _ = writeln!(conn, "{answer}");
        if controls.stop.load(Ordering::Acquire) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flush_requests_and_epochs_are_served_once() {
        let c = Controls::new();
        assert!(!c.flush_due());
        assert_eq!(c.start_flush(), FlushMarker::default());
        let a = c.request_flush(false);
        let b = c.request_flush(true);
        assert!(c.flush_due());
        let m = c.start_flush();
        assert_eq!(m.request, b);
        assert!(m.new_epoch);
        assert!(!c.flush_due());
        // A periodic flush afterwards opens no second epoch.
        assert!(!c.start_flush().new_epoch);
        c.publish(|s| s.flushed_request = m.request);
        assert!(c.wait_flushed(a, Duration::from_millis(10)).is_some());
        assert!(c.wait_flushed(b + 1, Duration::from_millis(10)).is_none());
    }

    #[test]
    fn serves_requests_over_the_socket() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::resolve(Some(dir.path()));
        let listener = UnixListener::bind(run.socket()).unwrap();
        std::fs::write(run.pid_file(), std::process::id().to_string()).unwrap();
        let c = Controls::new();
        let c2 = c.clone();
        let server = std::thread::spawn(move || {
            serve(
                listener,
                c2,
                |s| serde_json::json!({ "flushes": s.flushes }),
            )
        });
        // A stand-in daemon that writes every requested flush.
        let c3 = c.clone();
        let writer = std::thread::spawn(move || {
            while !c3.stop.load(Ordering::Acquire) {
                if c3.flush_due() {
                    let m = c3.start_flush();
                    c3.publish(|s| {
                        s.flushes += 1;
                        s.flushed_request = m.request;
                        if m.new_epoch {
                            s.epochs += 1;
                        }
                    });
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        let t = Duration::from_secs(5);
        assert_eq!(request(&run, "status", t).unwrap()["flushes"], 0);
        assert_eq!(request(&run, "flush", t).unwrap()["flushes"], 1);
        assert_eq!(request(&run, "epoch", t).unwrap()["epochs"], 1);
        let e = request(&run, "bogus", t).unwrap_err().to_string();
        assert!(e.contains("unknown request"), "{e}");
        assert_eq!(request(&run, "stop", t).unwrap()["stopping"], true);
        server.join().unwrap();
        writer.join().unwrap();
    }
}
