//! The driver's view of processes: which process instance (appid) a pid is
//! *now*, in time order of the perf records.
//!
//! SLEEPY's rule: a process instance is (command name, instance number) and a
//! reused PID never merges two processes. Here every fork of a new process and
//! every exec starts a new instance with a fresh serial; the serial, not the
//! pid, is what samples are keyed by in the hash tables. The daemon turns
//! serials into database rows and appids.

use crate::fast_hash::FastHash;
use crate::procfs;
use crate::records::{Mmap, Task};
use std::collections::HashMap;

/// Why an instance exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartCause {
    /// The command dcpi started.
    Root,
    Fork,
    Exec,
    /// Already running when sampling began (read from /proc).
    Seeded,
    /// First seen in a sample with no FORK/COMM record (e.g. a record was lost).
    Unknown,
}

impl StartCause {
    pub fn as_str(self) -> &'static str {
        match self {
            StartCause::Root => "root",
            StartCause::Fork => "fork",
            StartCause::Exec => "exec",
            StartCause::Seeded => "seeded",
            StartCause::Unknown => "unknown",
        }
    }
}

/// A new process instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceStart {
    pub serial: u32,
    pub pid: u32,
    pub comm: String,
    pub parent: Option<u32>,
    pub exec_from: Option<u32>,
    /// Copy this instance's mappings (fork).
    pub inherit_maps: Option<u32>,
    pub cause: StartCause,
    pub cmdline: Option<String>,
    pub time: u64,
}

/// What the driver tells the daemon about processes, in record order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcEvent {
    Start(InstanceStart),
    Map {
        serial: u32,
        start: u64,
        len: u64,
        pgoff: u64,
        path: String,
        inode: u64,
        build_id: Option<Vec<u8>>,
    },
    /// The root command's first exec renames its pre-registered instance.
    Rename {
        serial: u32,
        comm: String,
        cmdline: Option<String>,
    },
    Exit {
        serial: u32,
        time: u64,
    },
}

#[derive(Debug, Clone, Copy)]
struct Tracked {
    serial: u32,
    parent: Option<u32>,
    awaiting_exec: bool,
    /// Command name now (a fork copies its parent's, as the kernel does).
    comm: [u8; 16],
}

fn comm_bytes(s: &str) -> [u8; 16] {
    let mut b = [0u8; 16];
    let n = s.len().min(15);
    b[..n].copy_from_slice(&s.as_bytes()[..n]);
    b
}

fn comm_str(b: &[u8; 16]) -> String {
    let n = b.iter().position(|&c| c == 0).unwrap_or(16);
    String::from_utf8_lossy(&b[..n]).into_owned()
}

/// pid → current instance.
#[derive(Debug, Default)]
pub struct ProcessTracker {
    by_pid: HashMap<u32, Tracked, FastHash>,
    next_serial: u32,
    /// Records older than this describe what /proc seeding already saw.
    seed_time: u64,
    /// Instances started.
    pub started: u64,
    /// pid → (instance, exit time) of processes that exited: a process
    /// still takes a few samples in do_exit after its EXIT record, and
    /// they belong to it, not to a new unknown instance.
    exited: HashMap<u32, (u32, u64), FastHash>,
}

/// How long samples of an exited pid are still its own (ns).
const EXIT_GRACE_NS: u64 = 1_000_000_000;

impl ProcessTracker {
    pub fn new() -> Self {
        ProcessTracker {
            next_serial: 1,
            ..Default::default()
        }
    }

    fn start(&mut self, mut start: InstanceStart, out: &mut Vec<ProcEvent>) -> u32 {
        let serial = self.next_serial;
        start.serial = serial;
        self.next_serial += 1;
        self.started += 1;
        self.exited.remove(&start.pid);
        self.by_pid.insert(
            start.pid,
            Tracked {
                serial,
                parent: start.parent,
                awaiting_exec: false,
                comm: comm_bytes(&start.comm),
            },
        );
        out.push(ProcEvent::Start(start));
        serial
    }

    /// The command dcpi forked and holds before its exec.
    pub fn register_root(
        &mut self,
        pid: u32,
        comm: &str,
        cmdline: &str,
        out: &mut Vec<ProcEvent>,
    ) -> u32 {
        let s = self.start(
            InstanceStart {
                serial: 0,
                pid,
                comm: comm.to_string(),
                parent: None,
                exec_from: None,
                inherit_maps: None,
                cause: StartCause::Root,
                cmdline: Some(cmdline.to_string()),
                time: 0,
            },
            out,
        );
        if let Some(t) = self.by_pid.get_mut(&pid) {
            t.awaiting_exec = true;
        }
        s
    }

    /// Registers a running process from /proc, with its executable maps.
    pub fn seed(&mut self, pid: u32, time: u64, out: &mut Vec<ProcEvent>) -> u32 {
        let parent = procfs::ppid(pid)
            .and_then(|pp| self.by_pid.get(&pp))
            .map(|t| t.serial);
        let (comm, cause) = match pid {
            0 => ("swapper".to_string(), StartCause::Seeded),
            _ => (
                procfs::comm(pid).unwrap_or_else(|| format!("[pid {pid}]")),
                StartCause::Seeded,
            ),
        };
        let serial = self.start(
            InstanceStart {
                serial: 0,
                pid,
                comm,
                parent,
                exec_from: None,
                inherit_maps: None,
                cause,
                cmdline: procfs::cmdline(pid),
                time,
            },
            out,
        );
        for m in procfs::maps(pid) {
            out.push(ProcEvent::Map {
                serial,
                start: m.start,
                len: m.end - m.start,
                pgoff: m.pgoff,
                path: m.path,
                inode: m.inode,
                build_id: None,
            });
        }
        serial
    }

    /// Seeds every given pid (parents first, so parent links resolve).
    pub fn seed_all(&mut self, pids: &[u32], time: u64, out: &mut Vec<ProcEvent>) {
        self.seed_time = self.seed_time.max(time);
        let mut sorted = pids.to_vec();
        sorted.sort_unstable();
        for pid in sorted {
            if !self.by_pid.contains_key(&pid) {
                self.seed(pid, time, out);
            }
        }
    }

    /// The instance a sample of `pid` belongs to, creating one if unseen.
    #[inline]
    pub fn instance_of(&mut self, pid: u32, time: u64, out: &mut Vec<ProcEvent>) -> u32 {
        if let Some(t) = self.by_pid.get(&pid) {
            return t.serial;
        }
        if let Some(&(serial, _)) = self.exited.get(&pid) {
            return serial;
        }
        let serial = self.seed(pid, time, out);
        if let Some(ProcEvent::Start(InstanceStart { cause, .. })) = out.iter_mut().rev().find(
            |e| matches!(e, ProcEvent::Start(InstanceStart { serial: s, .. }) if *s == serial),
        ) {
            if pid != 0 {
                *cause = StartCause::Unknown;
            }
        }
        serial
    }

    pub fn on_fork(&mut self, time: u64, task: Task, out: &mut Vec<ProcEvent>) {
        if task.pid == task.ppid {
            return; // a new thread, same process
        }
        if time < self.seed_time && self.by_pid.contains_key(&task.pid) {
            return; // seeding already saw it
        }
        let parent_info = self.by_pid.get(&task.ppid).copied();
        let parent = parent_info.map(|t| t.serial);
        let comm = match parent_info {
            Some(p) => comm_str(&p.comm),
            None => procfs::comm(task.ppid).unwrap_or_else(|| format!("[pid {}]", task.pid)),
        };
        self.start(
            InstanceStart {
                serial: 0,
                pid: task.pid,
                comm,
                parent,
                exec_from: None,
                inherit_maps: parent,
                cause: StartCause::Fork,
                cmdline: None,
                time,
            },
            out,
        );
    }

    pub fn on_comm(
        &mut self,
        time: u64,
        pid: u32,
        comm: &str,
        exec: bool,
        out: &mut Vec<ProcEvent>,
    ) {
        if !exec {
            return; // thread names and prctl renames keep the appid
        }
        let cmdline = procfs::cmdline(pid);
        match self.by_pid.get(&pid).copied() {
            Some(t) if t.awaiting_exec => {
                if let Some(tr) = self.by_pid.get_mut(&pid) {
                    tr.awaiting_exec = false;
                    tr.comm = comm_bytes(comm);
                }
                out.push(ProcEvent::Rename {
                    serial: t.serial,
                    comm: comm.to_string(),
                    cmdline,
                });
            }
            Some(t) => {
                out.push(ProcEvent::Exit {
                    serial: t.serial,
                    time,
                });
                self.start(
                    InstanceStart {
                        serial: 0,
                        pid,
                        comm: comm.to_string(),
                        parent: t.parent,
                        exec_from: Some(t.serial),
                        inherit_maps: None,
                        cause: StartCause::Exec,
                        cmdline,
                        time,
                    },
                    out,
                );
            }
            None => {
                self.start(
                    InstanceStart {
                        serial: 0,
                        pid,
                        comm: comm.to_string(),
                        parent: None,
                        exec_from: None,
                        inherit_maps: None,
                        cause: StartCause::Exec,
                        cmdline,
                        time,
                    },
                    out,
                );
            }
        }
    }

    pub fn on_mmap(&mut self, time: u64, map: Mmap, out: &mut Vec<ProcEvent>) {
        let serial = self.instance_of(map.pid, time, out);
        out.push(ProcEvent::Map {
            serial,
            start: map.addr,
            len: map.len,
            pgoff: map.pgoff,
            inode: map.dev_ino.map(|d| d.2).unwrap_or(0),
            path: map.filename,
            build_id: map.build_id,
        });
    }

    pub fn on_exit(&mut self, time: u64, task: Task, out: &mut Vec<ProcEvent>) {
        if task.pid != task.tid {
            return; // a thread ended
        }
        if let Some(t) = self.by_pid.remove(&task.pid) {
            if self.exited.len() >= 4096 {
                self.exited
                    .retain(|_, (_, at)| time.saturating_sub(*at) < EXIT_GRACE_NS);
            }
            self.exited.insert(task.pid, (t.serial, time));
            out.push(ProcEvent::Exit {
                serial: t.serial,
                time,
            });
        }
    }

    /// Whether a pid is currently known.
    pub fn knows(&self, pid: u32) -> bool {
        self.by_pid.contains_key(&pid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serial_of(e: &ProcEvent) -> u32 {
        match e {
            ProcEvent::Start(InstanceStart { serial, .. }) => *serial,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn samples_after_exit_stay_with_the_exited_instance() {
        let mut t = ProcessTracker::new();
        let mut out = Vec::new();
        let task = Task {
            pid: 4_100_000,
            ppid: 1,
            tid: 4_100_000,
            ptid: 1,
        };
        t.on_fork(10, task, &mut out);
        let serial = t.instance_of(task.pid, 11, &mut out);
        t.on_exit(12, task, &mut out);
        out.clear();
        assert_eq!(t.instance_of(task.pid, 13, &mut out), serial);
        assert!(out.is_empty(), "no unknown instance: {out:?}");
        // The pid reused by a new fork is a new instance.
        t.on_fork(20, task, &mut out);
        assert_ne!(t.instance_of(task.pid, 21, &mut out), serial);
    }

    #[test]
    fn pid_reuse_and_exec_start_new_instances() {
        let mut t = ProcessTracker::new();
        let mut out = Vec::new();
        let root = t.register_root(4_000_000, "dcpi", "loop 1", &mut out);
        t.on_comm(1, 4_000_000, "loop", true, &mut out);
        assert!(matches!(&out[1], ProcEvent::Rename { comm, .. } if comm == "loop"));
        assert_eq!(
            t.instance_of(4_000_000, 2, &mut out),
            root,
            "root keeps its instance over its first exec"
        );

        // fork → child instance inheriting maps; exec → another instance.
        out.clear();
        t.on_fork(
            3,
            Task {
                pid: 4_000_001,
                ppid: 4_000_000,
                tid: 4_000_001,
                ptid: 4_000_000,
            },
            &mut out,
        );
        let child = serial_of(&out[0]);
        assert!(
            matches!(&out[0], ProcEvent::Start(InstanceStart { inherit_maps: Some(p), parent: Some(q), .. }) if *p == root && *q == root)
        );
        t.on_comm(4, 4_000_001, "true", true, &mut out);
        assert!(matches!(&out[1], ProcEvent::Exit { serial, .. } if *serial == child));
        let execd = serial_of(&out[2]);
        assert!(
            matches!(&out[2], ProcEvent::Start(InstanceStart { exec_from: Some(c), cause: StartCause::Exec, .. }) if *c == child)
        );
        assert_ne!(execd, child);

        // exit, then the same pid is reused by a new fork: a new instance.
        out.clear();
        t.on_exit(
            5,
            Task {
                pid: 4_000_001,
                ppid: 4_000_000,
                tid: 4_000_001,
                ptid: 4_000_000,
            },
            &mut out,
        );
        assert!(!t.knows(4_000_001));
        t.on_fork(
            6,
            Task {
                pid: 4_000_001,
                ppid: 4_000_000,
                tid: 4_000_001,
                ptid: 4_000_000,
            },
            &mut out,
        );
        let reused = serial_of(&out[1]);
        assert!(reused != execd && reused != child);
    }

    #[test]
    fn threads_do_not_make_instances() {
        let mut t = ProcessTracker::new();
        let mut out = Vec::new();
        let root = t.register_root(4_100_000, "app", "app", &mut out);
        out.clear();
        t.on_fork(
            1,
            Task {
                pid: 4_100_000,
                ppid: 4_100_000,
                tid: 4_100_001,
                ptid: 4_100_000,
            },
            &mut out,
        );
        t.on_exit(
            2,
            Task {
                pid: 4_100_000,
                ppid: 4_100_000,
                tid: 4_100_001,
                ptid: 4_100_000,
            },
            &mut out,
        );
        t.on_comm(3, 4_100_000, "worker", false, &mut out);
        assert!(out.is_empty(), "{out:?}");
        assert_eq!(t.instance_of(4_100_000, 4, &mut out), root);
    }

    #[test]
    fn unseen_pid_in_a_sample_gets_an_unknown_instance() {
        let mut t = ProcessTracker::new();
        let mut out = Vec::new();
        let s = t.instance_of(std::process::id(), 1, &mut out);
        assert!(matches!(
            &out[0],
            ProcEvent::Start(InstanceStart {
                cause: StartCause::Unknown,
                ..
            })
        ));
        assert!(out
            .iter()
            .any(|e| matches!(e, ProcEvent::Map { serial, .. } if *serial == s)));
    }
}
