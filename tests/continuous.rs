//! Continuous mode and Prospect's report, end to end (root, no PMU needed):
//! start/status/flush/epoch/stop, a kill -9 of the daemon, a fork/exec storm,
//! a loopback workload whose receive processing is charged to the receiver,
//! and reading the database while the daemon writes it.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

fn ctl(run_dir: &Path, args: &[&str]) -> Output {
    dcpi()
        .args(args)
        .arg("--run-dir")
        .arg(run_dir)
        .output()
        .unwrap()
}

fn ok(o: Output) -> String {
    assert!(
        o.status.success(),
        "failed: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn start(run_dir: &Path, db: &Path, extra: &[&str]) {
    let o = dcpi()
        .arg("start")
        .arg("--run-dir")
        .arg(run_dir)
        .arg("--db")
        .arg(db)
        .args(extra)
        .output()
        .unwrap();
    ok(o);
}

fn status(run_dir: &Path) -> Value {
    serde_json::from_str(&ok(ctl(run_dir, &["status", "--format", "json"]))).unwrap()
}

fn report(db: &Path, extra: &[&str]) -> Value {
    let o = dcpi()
        .args(["report", "--format", "json", "--db"])
        .arg(db)
        .args(extra)
        .output()
        .unwrap();
    serde_json::from_str(&ok(o)).unwrap()
}

#[test]
fn start_status_flush_epoch_stop() {
    let _g = live();
    let dir = tempdir();
    let (run, db) = (dir.path().join("run"), dir.path().join("c.db"));
    start(&run, &db, &["--flush-interval", "30", "-F", "1000"]);
    // One daemon per run directory.
    let again = dcpi()
        .arg("start")
        .arg("--run-dir")
        .arg(&run)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already running"));

    ok(std::process::Command::new(workload("loop"))
        .arg("300000000")
        .output()
        .unwrap());
    ok(ctl(&run, &["flush"]));
    let s = status(&run);
    assert!(s["samples"].as_u64().unwrap() > 0, "{s}");
    assert_eq!(s["epochs"], 1);
    for field in [
        "events",
        "memory",
        "cpu",
        "hash",
        "lost_records",
        "kernel_links",
    ] {
        assert!(!s[field].is_null(), "status lacks {field}: {s}");
    }
    let mem = &s["memory"];
    assert!(
        mem["resident_kib"].as_u64().unwrap() <= mem["bound_kib"].as_u64().unwrap(),
        "memory above its bound: {mem}"
    );
    // The text view says the same.
    let text = ok(ctl(&run, &["status"]));
    assert!(
        text.contains("epochs") && text.contains("own CPU"),
        "{text}"
    );

    // While the daemon writes, the database can be read.
    let r = report(&db, &[]);
    assert_eq!(r["statistics"]["complete"], false);

    let e = ok(ctl(&run, &["epoch"]));
    assert!(e.contains("epoch"), "{e}");
    ok(std::process::Command::new(workload("loop"))
        .arg("200000000")
        .output()
        .unwrap());
    ok(ctl(&run, &["stop"]));
    assert!(
        !ctl(&run, &["status"]).status.success(),
        "stopped daemon still answers"
    );
    let epochs = scalar(&db, "SELECT count(*) FROM epochs");
    assert_eq!(epochs, 2);
    assert_eq!(scalar(&db, "SELECT complete FROM runs"), 1);
    assert_eq!(scalar(&db, "SELECT mode = 'continuous' FROM runs"), 1);
    // Both epochs hold the loop's samples; each can be reported alone.
    for epoch in ["1", "2"] {
        let r = report(&db, &["--epoch", epoch]);
        let loops: u64 = r["processes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["appid"].as_str().unwrap().starts_with("loop#"))
            .map(|p| p["user_hits"].as_u64().unwrap())
            .sum();
        assert!(loops > 10, "epoch {epoch}: {r}");
    }
    // Stopped: the control commands say so.
    let o = ctl(&run, &["flush"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("no dcpi daemon is running"));
}

#[test]
fn kill_9_loses_at_most_the_last_flush_interval() {
    let _g = live();
    let dir = tempdir();
    let (run, db) = (dir.path().join("run"), dir.path().join("k.db"));
    start(&run, &db, &["--flush-interval", "1"]);
    ok(std::process::Command::new(workload("loop"))
        .arg("400000000")
        .output()
        .unwrap());
    std::thread::sleep(Duration::from_millis(2500));
    let pid: i32 = std::fs::read_to_string(run.join("dcpi.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    unsafe { libc::kill(pid, libc::SIGKILL) };
    std::thread::sleep(Duration::from_millis(300));
    let loop_hits = scalar(
        &db,
        "SELECT coalesce(sum(user_samples), 0) FROM processes WHERE comm = 'loop'",
    );
    assert!(loop_hits > 50, "the loop's samples were lost: {loop_hits}");
    let r = report(&db, &[]);
    assert_eq!(r["statistics"]["complete"], false);
    assert!(r["warnings"].to_string().contains("not complete"), "{r}");
    // A stale pid file does not block the next daemon.
    start(&run, &db, &["--flush-interval", "1"]);
    ok(ctl(&run, &["stop"]));
    assert_eq!(scalar(&db, "SELECT count(*) FROM runs"), 2);
}

#[test]
fn fork_exec_storm_is_fully_accounted() {
    let _g = live();
    let dir = tempdir();
    let (run, db) = (dir.path().join("run"), dir.path().join("s.db"));
    start(&run, &db, &["--flush-interval", "2"]);
    let n = 400;
    ok(std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "i=0; while [ $i -lt {n} ]; do /bin/true; i=$((i+1)); done"
        ))
        .output()
        .unwrap());
    ok(ctl(&run, &["flush"]));
    let s = status(&run);
    ok(ctl(&run, &["stop"]));
    let trues = scalar(&db, "SELECT count(*) FROM processes WHERE comm = 'true'");
    assert_eq!(trues, n, "every short-lived process has its instance");
    let distinct = scalar(
        &db,
        "SELECT count(DISTINCT instance) FROM processes WHERE comm = 'true'",
    );
    assert_eq!(distinct, n);
    // Late samples of exiting processes create no stray instances, and the
    // daemon does not keep state for processes that are gone.
    let unknown = scalar(
        &db,
        "SELECT count(*) FROM processes WHERE cause = 'unknown'",
    );
    assert!(unknown < 20, "{unknown} unknown instances");
    let running = std::fs::read_dir("/proc")
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .parse::<u32>()
                .is_ok()
        })
        .count() as u64;
    let live = s["live_processes"].as_u64().unwrap();
    assert!(
        live <= running + 50,
        "daemon tracks {live} processes, {running} exist"
    );
    let mem = &s["memory"];
    assert!(
        mem["resident_kib"].as_u64().unwrap() <= mem["bound_kib"].as_u64().unwrap(),
        "{mem}"
    );
}

#[test]
fn loopback_receive_work_is_charged_to_the_receiver() {
    let _g = live();
    let dir = tempdir();
    let db = dir.path().join("n.db");
    let o = collect(
        &db,
        &[
            "-a",
            "--kernel-links",
            "-F",
            "2000",
            "--",
            &workload("netpair"),
            "3",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = report(&db, &["--threshold", "0", "--profiles", "50"]);
    let procs = r["processes"].as_array().unwrap();
    let by_cause = |cause: &str| -> i64 {
        scalar(
            &db,
            &format!("SELECT id FROM processes WHERE comm = 'netpair' AND cause = '{cause}'"),
        )
    };
    let appid = |id: i64| {
        let c = sqlite(&db);
        c.query_row(
            "SELECT comm || '#' || instance FROM processes WHERE id = ?1",
            [id],
            |r| r.get::<_, String>(0),
        )
        .unwrap()
    };
    let sender = appid(by_cause("exec"));
    let receiver = appid(by_cause("fork"));
    let line = |a: &str| {
        procs
            .iter()
            .find(|p| p["appid"] == a)
            .unwrap_or_else(|| panic!("{a} missing: {r}"))
    };
    let (s, rc) = (line(&sender), line(&receiver));
    // Both are system-call bound: their kernel time is under them.
    assert!(
        s["system_hits"].as_u64().unwrap() > s["user_hits"].as_u64().unwrap(),
        "{s}"
    );
    assert!(
        rc["system_hits"].as_u64().unwrap() > rc["user_hits"].as_u64().unwrap(),
        "{rc}"
    );
    // The receive processing done in the sender's system calls goes to the receiver.
    assert!(s["charged_out"].as_u64().unwrap() > 20, "{s}");
    assert!(rc["charged_in"].as_u64().unwrap() > 20, "{rc}");
    let net_rx = r["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["link"] == "softirq NET_RX")
        .map(|l| l["hits"].as_u64().unwrap())
        .unwrap_or(0);
    assert!(net_rx > 20, "{}", r["links"]);
    // The seamless profile of the receiver lists kernel rows with their link.
    let prof = r["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["appid"] == receiver.as_str())
        .unwrap();
    let rows = prof["rows"].as_array().unwrap();
    let pid = rc["pid"].as_i64().unwrap();
    assert!(rows.iter().any(|row| row["label"]
        .as_str()
        .unwrap()
        .starts_with(&format!("{pid}k:"))));
    assert!(
        rows.iter().any(|row| row["link"] == "softirq NET_RX"),
        "{prof}"
    );
    // Text view: the same report in Prospect's form.
    let text = ok(dcpi().args(["report", "--db"]).arg(&db).output().unwrap());
    for want in [
        "Statistics of run",
        "Extrapolated summary",
        "Global kernel profile",
        "timer-driven",
    ] {
        assert!(text.contains(want), "{want}: {text}");
    }
}

#[test]
fn report_errors_are_clear() {
    let dir = tempdir();
    let db = dir.path().join("none.db");
    let o = dcpi().args(["report", "--db"]).arg(&db).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("does not exist"));
    let run = dir.path().join("run");
    for cmd in ["status", "flush", "epoch", "stop"] {
        let o = ctl(&run, &[cmd]);
        assert!(!o.status.success());
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("no dcpi daemon is running"),
            "{cmd}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
