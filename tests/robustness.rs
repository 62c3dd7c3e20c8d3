//! Bad input gets a clear error and loses nothing: signals, kill -9, bad
//! events, unwritable and corrupt databases, missing commands; plus the
//! attach and system-wide modes.

mod common;

use common::*;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn wait_for_samples(db: &std::path::Path, timeout: Duration) {
    let t = Instant::now();
    while t.elapsed() < timeout {
        if db.exists() {
            if let Ok(c) = rusqlite::Connection::open(db) {
                let n: i64 = c
                    .query_row("SELECT count(*) FROM counts", [], |r| r.get(0))
                    .unwrap_or(0);
                if n > 0 {
                    return;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no flush reached {} in {timeout:?}", db.display());
}

#[test]
fn sigint_stops_drains_commits_and_passes_the_childs_status() {
    let _g = live();
    let dir = tempdir();
    let db = dir.path().join("int.db");
    let mut child = dcpi()
        .args(["collect", "-F", "2000", "--flush-interval", "0.2", "-o"])
        .arg(&db)
        .args(["--", &workload("loop"), "100000000000"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_samples(&db, Duration::from_secs(20));
    // WAL: a reader works while the collector writes.
    let during = prof_json(&db, &[]);
    assert!(during["system"]["samples"][0].as_u64().unwrap() > 0);
    std::thread::sleep(Duration::from_millis(300));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    // Only dcpi got SIGINT; it stopped the workload with SIGTERM (128 + 15).
    assert_eq!(status.code(), Some(143));
    assert_eq!(scalar(&db, "SELECT interrupted FROM runs"), 1);
    assert_eq!(scalar(&db, "SELECT complete FROM runs"), 1);
    assert_eq!(scalar(&db, "SELECT exit_status FROM runs"), 143);
    let samples = scalar(
        &db,
        "SELECT value FROM collector_stats WHERE name = 'samples'",
    );
    let stored = scalar(&db, "SELECT sum(count) FROM counts");
    assert_eq!(samples, stored, "every sample drained into the database");
    assert!(stored > 100);
}

#[test]
fn kill_9_leaves_a_readable_database_with_completed_flushes() {
    let _g = live();
    let dir = tempdir();
    let db = dir.path().join("k9.db");
    let mut child = dcpi()
        .args(["collect", "-F", "2000", "--flush-interval", "0.2", "-o"])
        .arg(&db)
        .args(["--", &workload("loop"), "100000000000"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_samples(&db, Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(500));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let workload_pid = scalar(&db, "SELECT target_pid FROM runs");
    unsafe { libc::kill(workload_pid as i32, libc::SIGKILL) };
    let r = prof_json(&db, &[]);
    assert!(
        r["system"]["samples"][0].as_u64().unwrap() > 50,
        "{}",
        r["system"]
    );
    let procs = image_procedures(&r, "loop");
    assert_eq!(procs[0].0, "main");
    assert!(r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("did not finish cleanly")));
    // A later collect into the same file still works.
    let out = collect(&db, &["--", "true"]);
    assert_success(&out);
    assert_eq!(scalar(&db, "SELECT count(*) FROM runs"), 2);
}

#[test]
fn unknown_event_lists_the_valid_ones() {
    let dir = tempdir();
    let db = dir.path().join("e.db");
    let out = collect(&db, &["-e", "cycles,bogus-event", "--", "true"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown event 'bogus-event'") && err.contains("L1-dcache-load-misses"),
        "{err}"
    );
    assert!(!db.exists(), "nothing was started");
}

#[test]
fn unwritable_database_path_fails_before_the_command_runs() {
    let dir = tempdir();
    let marker = dir.path().join("ran");
    let out = dcpi()
        .args(["collect", "-o", "/nonexistent-dir/x.db", "--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot write the profile database") && err.contains("-o PATH"),
        "{err}"
    );
    assert!(!marker.exists());
}

#[test]
fn corrupt_or_foreign_database_is_refused_clearly() {
    let dir = tempdir();
    let db = dir.path().join("bad.db");
    let junk = b"this is not sqlite at all, just some text that is long enough".to_vec();
    std::fs::write(&db, &junk).unwrap();
    let out = dcpi().args(["prof", "--db"]).arg(&db).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a dcpi profile database"));
    let out = collect(&db, &["--", "true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a dcpi profile database"));
    assert_eq!(std::fs::read(&db).unwrap(), junk, "the file is left alone");
    let out = dcpi()
        .args(["prof", "--db"])
        .arg(dir.path().join("missing.db"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("dcpi collect -o"));
}

#[test]
fn missing_command_is_reported() {
    let dir = tempdir();
    let db = dir.path().join("m.db");
    let out = collect(&db, &["--", "/no/such/cmd"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot start /no/such/cmd") && err.contains("No such file"),
        "{err}"
    );
}

#[test]
fn attach_to_a_running_process() {
    let _g = live();
    let dir = tempdir();
    let db = dir.path().join("pid.db");
    let mut target = std::process::Command::new(workload("loop"))
        .arg("100000000000")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let out = collect(
        &db,
        &[
            "-F",
            "2000",
            "--pid",
            &target.id().to_string(),
            "--duration",
            "1",
        ],
    );
    target.kill().unwrap();
    target.wait().unwrap();
    assert_success(&out);
    let r = prof_json(&db, &[]);
    let procs = image_procedures(&r, "loop");
    assert_eq!(
        procs.first().map(|p| p.0.as_str()),
        Some("main"),
        "{procs:?}"
    );
    assert_eq!(
        scalar(
            &db,
            "SELECT count(*) FROM processes WHERE comm = 'loop' AND cause = 'seeded'"
        ),
        1
    );
}

#[test]
fn system_wide_sees_the_command_and_other_processes() {
    let _g = live();
    let dir = tempdir();
    let db = dir.path().join("sys.db");
    let out = collect(
        &db,
        &[
            "-F",
            "1000",
            "--system-wide",
            "--",
            &workload("loop"),
            "1500000000",
        ],
    );
    assert_success(&out);
    let r = prof_json(&db, &["--comm", "loop"]);
    let procs = image_procedures(&r, "loop");
    assert_eq!(
        procs.first().map(|p| p.0.as_str()),
        Some("main"),
        "{procs:?}"
    );
    // Processes that already ran were seeded from /proc.
    assert!(scalar(&db, "SELECT count(*) FROM processes WHERE cause = 'seeded'") > 5);
    assert_eq!(scalar(&db, "SELECT mode = 'system-wide' FROM runs"), 1);
}

#[test]
fn refused_perf_event_open_prints_paranoid_and_the_fix() {
    // Needs root to drop to an unprivileged user, and a kernel that refuses
    // unprivileged system-wide sampling (perf_event_paranoid >= 1).
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().parse().unwrap_or(2))
        .unwrap_or(2);
    let setpriv = std::path::Path::new("/usr/bin/setpriv");
    if unsafe { libc::geteuid() } != 0 || paranoid < 1 || !setpriv.exists() {
        eprintln!("skipped: needs root, setpriv and perf_event_paranoid >= 1");
        return;
    }
    let dir = tempdir();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let db = dir.path().join("p.db");
    let out = std::process::Command::new(setpriv)
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            env!("CARGO_BIN_EXE_dcpi"),
            "collect",
            "-a",
            "-d",
            "0.2",
            "-o",
        ])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("perf_event_paranoid is {paranoid}"))
            && err.contains("sysctl -w kernel.perf_event_paranoid="),
        "{err}"
    );
}

/// A profile database another user may not write beside (a copy in a
/// read-only directory, no -wal next to it) is still read; one this user
/// may not read at all says so rather than "corrupt".
#[test]
fn a_database_in_a_read_only_directory_is_read_and_an_unreadable_one_says_why() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let dir = tempdir();
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let db = ro.join("codec.db");
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/analyzer/codec.db"),
        &db,
    )
    .unwrap();
    let mode = |p: &std::path::Path, m: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
    };
    mode(dir.path(), 0o755);
    mode(&db, 0o644);
    mode(&ro, 0o555);
    // As root, permissions do not bind: run as nobody then.
    let prof = || {
        let mut c = dcpi();
        c.args(["prof", "--view", "images", "--db"]).arg(&db);
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            c.uid(65534).gid(65534);
        }
        c.output().unwrap()
    };
    let out = prof();
    assert_success(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("codec"));
    mode(&db, 0o000);
    let out = prof();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("cannot read the profile database"), "{err}");
    assert!(!err.contains("corrupt"), "{err}");
    mode(&ro, 0o755);
}
