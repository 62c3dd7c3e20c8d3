//! Helpers for the end-to-end tests: build the workloads in `datasets/`,
//! run the `dcpi` binary, read its JSON.

#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard, OnceLock};

pub fn dcpi() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dcpi"))
}

/// Fails the test with the command's stderr unless it exited 0.
pub fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Compiles the workloads once per test binary; returns their directory.
pub fn workloads() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let out = root()
            .join("target")
            .join("workloads")
            .join(format!("{}", std::process::id()));
        std::fs::create_dir_all(&out).unwrap();
        let src = root().join("datasets").join("workloads");
        let cc = |args: &[&str]| run_tool("gcc", &src, args);
        cc(&[
            "-O1",
            "-pthread",
            "-o",
            out.join("flock").to_str().unwrap(),
            "flock.c",
        ]);
        cc(&[
            "-O1",
            "-o",
            out.join("netpair").to_str().unwrap(),
            "netpair.c",
        ]);
        for w in ["loop", "call", "btree", "cxxnames", "jit"] {
            cc(&[
                "-O1",
                "-g",
                "-o",
                out.join(w).to_str().unwrap(),
                &format!("{w}.c"),
            ]);
        }
        cc(&[
            "-O1",
            "-g",
            "-shared",
            "-fPIC",
            "-o",
            out.join("libwork.so").to_str().unwrap(),
            "libwork.c",
        ]);
        cc(&[
            "-O1",
            "-shared",
            "-fPIC",
            "-o",
            out.join("libhidden.so").to_str().unwrap(),
            "libhidden.c",
        ]);
        std::fs::copy(out.join("libhidden.so"), out.join("libhidden-stripped.so")).unwrap();
        cc(&[
            "-O1",
            "-pie",
            "-fPIE",
            "-o",
            out.join("uselib").to_str().unwrap(),
            "uselib.c",
            &format!("-L{}", out.display()),
            "-lwork",
            &format!("-Wl,-rpath,{}", out.display()),
        ]);
        std::fs::copy(out.join("loop"), out.join("loop-stripped")).unwrap();
        std::fs::copy(out.join("loop"), out.join("loop-debuglink")).unwrap();
        for stripped in [
            "uselib",
            "loop-stripped",
            "loop-debuglink",
            "libhidden-stripped.so",
        ] {
            run_tool("strip", &out, &[stripped]);
        }
        // A stripped binary whose symbols and DWARF are in a separate
        // debug file next to it, named by .gnu_debuglink (as a -dbg
        // package ships them).
        run_tool(
            "objcopy",
            &out,
            &["--only-keep-debug", "loop", "loop.debug"],
        );
        run_tool(
            "objcopy",
            &out,
            &["--add-gnu-debuglink=loop.debug", "loop-debuglink"],
        );
        out
    })
}

/// Runs a build tool (gcc, strip, objcopy) in `dir`; it must succeed.
fn run_tool(tool: &str, dir: &Path, args: &[&str]) {
    let st = Command::new(tool)
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap_or_else(|e| panic!("{tool} is needed for the tests: {e}"));
    assert!(st.success(), "{tool} {args:?}");
}

pub fn workload(name: &str) -> String {
    workloads().join(name).to_str().unwrap().to_string()
}

pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// Runs `dcpi collect -o DB ARGS`, asserting nothing about its status.
pub fn collect(db: &Path, args: &[&str]) -> Output {
    dcpi()
        .arg("collect")
        .arg("-o")
        .arg(db)
        .args(args)
        .output()
        .unwrap()
}

/// `dcpi prof --format json` of a database.
pub fn prof_json(db: &Path, extra: &[&str]) -> Value {
    let out = dcpi()
        .args(["prof", "--format", "json", "--limit", "0", "--db"])
        .arg(db)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "prof failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Samples of the first event column per procedure name (summed over images).
pub fn procedure_samples(report: &Value) -> Vec<(String, String, u64)> {
    report["procedures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["procedure"].as_str().unwrap().to_string(),
                p["image"].as_str().unwrap().to_string(),
                p["samples"][0].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Samples in procedures of one image.
pub fn image_procedures(report: &Value, image: &str) -> Vec<(String, u64)> {
    procedure_samples(report)
        .into_iter()
        .filter(|(_, i, _)| i == image)
        .map(|(p, _, n)| (p, n))
        .collect()
}

pub fn sqlite(db: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(db).unwrap()
}

pub fn scalar(db: &Path, sql: &str) -> i64 {
    sqlite(db).query_row(sql, [], |r| r.get(0)).unwrap()
}

static LIVE: Mutex<()> = Mutex::new(());

/// Live-sampling tests run one at a time so they do not steal each other's CPU.
pub fn live() -> MutexGuard<'static, ()> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}
