//! The analyzer on recorded datasets (datasets/analyzer: binaries, their
//! dcpi profiles and callgrind's exact counts), so these tests are
//! deterministic; one live test checks the whole path on a fresh profile.

mod common;

use common::{assert_success, dcpi, live, tempdir, workload};
use dcpi_analyze::cfg::{Cfg, Exit};
use dcpi_analyze::disasm::Syntax;
use dcpi_analyze::image::ElfImage;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("datasets/analyzer")
}

fn run(args: &[&str]) -> (bool, String, String) {
    let out = dcpi()
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn recorded(view: &str, name: &str, extra: &[&str]) -> (bool, String, String) {
    let db = format!("datasets/analyzer/{name}.db");
    let mut args = vec![view, "--db", &db, "--symfs", "datasets/analyzer"];
    args.extend_from_slice(extra);
    run(&args)
}

fn cfg_of(image: &ElfImage, func: &str) -> Cfg {
    let f = image.find_function(func).unwrap();
    dcpi_analyze::function_code::function_cfg(image, &f, Syntax::Att, true, 2).unwrap()
}

/// Hand-checked shapes of datasets/workloads/kernels.c compiled by gcc -O2.
#[test]
fn cfg_shapes_of_known_functions() {
    let image = ElfImage::open(data().join("kernels").to_str().unwrap(), None).unwrap();
    // The interpreter's switch: `cmpb $6; ja default` bounds a 7-entry table.
    let interp = cfg_of(&image, "interp");
    assert_eq!(interp.jump_tables.len(), 1, "{:?}", interp.jump_tables);
    let jt = &interp.jump_tables[0];
    assert!(jt.bounded);
    assert_eq!(jt.targets.len(), 7, "{jt:?}");
    assert!(jt
        .targets
        .iter()
        .all(|t| *t >= interp.start && *t < interp.end));
    assert!(!interp
        .blocks
        .iter()
        .any(|b| b.exit == Some(Exit::IndirectJump)));
    assert_eq!(interp.loops.len(), 1);
    // Every case block is reached from the table and returns to the loop.
    let header = interp.loops[0].header;
    for t in &jt.targets {
        let b = interp.block_at(*t).unwrap();
        assert!(
            interp.loops_of[b].contains(&0),
            "case at {t:#x} outside the loop"
        );
        assert!(interp.dominates(header, b));
    }

    // bytecode's stack_vm: the table's `lea` sits before the loop, after
    // another rip-relative `lea` (of the global `mem`): eleven cases.
    let bytecode = ElfImage::open(data().join("bytecode").to_str().unwrap(), None).unwrap();
    let vm = cfg_of(&bytecode, "stack_vm");
    assert_eq!(vm.jump_tables.len(), 1, "{:?}", vm.jump_tables);
    assert!(vm.jump_tables[0].bounded);
    assert_eq!(vm.jump_tables[0].targets.len(), 11);
    assert_eq!(vm.loops.len(), 1);

    // matmul: three nested loops; the j-loop's header and latch are one class.
    let mm = cfg_of(&image, "matmul");
    assert_eq!(mm.loops.len(), 3);
    assert!(mm.loops_of.iter().any(|l| l.len() == 3));
    let depth2: Vec<usize> = (0..mm.blocks.len())
        .filter(|&b| mm.loops_of[b].len() == 2)
        .collect();
    assert!(
        depth2.iter().any(|&a| depth2
            .iter()
            .any(|&b| a != b && mm.class_of[a] == mm.class_of[b])),
        "classes {:?} loops {:?}",
        mm.class_of,
        mm.loops_of
    );

    // checked: the call to branchy became a tail call; fail() never returns
    // (it calls exit), which dcpi infers from fail's own CFG.
    let fail_at = image.find_function("fail").unwrap().start;
    assert!(dcpi_analyze::function_code::callee_never_returns(
        &image, fail_at, 2
    ));
    assert!(!dcpi_analyze::function_code::callee_never_returns(
        &image,
        branchy_at(&image),
        2
    ));
    let branchy = image.find_function("branchy").unwrap().start;
    let checked = cfg_of(&image, "checked");
    assert!(
        checked
            .blocks
            .iter()
            .any(|b| b.exit == Some(Exit::TailCall(branchy))),
        "{:?}",
        checked.blocks
    );
    // fail: exit() never returns, so its block ends there.
    let fail = cfg_of(&image, "fail");
    assert!(
        fail.blocks
            .iter()
            .any(|b| matches!(b.exit, Some(Exit::NoReturnCall(_)))),
        "{:?}",
        fail.blocks
    );
    // Post-dominators: in matmul the function's last block post-dominates the entry.
    let exits: Vec<usize> = (0..mm.blocks.len())
        .filter(|&b| mm.blocks[b].exit == Some(Exit::Return))
        .collect();
    assert_eq!(exits.len(), 1);
    assert_eq!(mm.class_of[0], mm.class_of[exits[0]]);
}

fn branchy_at(image: &ElfImage) -> u64 {
    image.find_function("branchy").unwrap().start
}

fn snapshot(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var("UPDATE_SNAPSHOTS").is_ok() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        want == actual,
        "{name} changed; if intended, UPDATE_SNAPSHOTS=1 cargo test --test analyzer and review the diff\n--- actual ---\n{actual}"
    );
}

/// `dcpi list` and `dcpi cpi` on the recorded kernels profile (AT&T and Intel).
#[test]
fn list_and_cpi_snapshots() {
    let (ok, out, err) = recorded("list", "kernels", &["--func", "interp"]);
    assert!(ok, "{err}");
    snapshot("list_interp.txt", &out);
    let (ok, out, err) = recorded("cpi", "kernels", &["--func", "matmul"]);
    assert!(ok, "{err}");
    snapshot("cpi_matmul.txt", &out);
    let (ok, out, err) = recorded("cpi", "btree", &["--func", "find_index", "--intel"]);
    assert!(ok, "{err}");
    snapshot("cpi_find_index_intel.txt", &out);
}

#[test]
fn views_asked_about_no_function_show_the_hottest_one() {
    // codec on zen5-5k-a: crc32 holds 53.5 % of the samples.
    for view in ["cpi", "list"] {
        let (ok, out, err) = recorded(view, "zen5-5k-a/codec", &[]);
        assert!(ok, "{view}: {err}");
        assert!(
            err.contains("no --func given: the function with most samples, crc32 in codec"),
            "{view}: {err}"
        );
        assert!(out.contains("function  crc32 [0x1370-"), "{view}: {out}");
    }
    // Within --image, and as JSON.
    let (ok, out, err) = recorded(
        "cpi",
        "zen5-5k-a/codec",
        &["--image", "codec", "--format", "json"],
    );
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["function"], "crc32");
    // culprits without --insn: the instruction topstalls ranks first.
    let (ok, top, err) = recorded(
        "topstalls",
        "zen5-5k-a/codec",
        &["-n", "1", "--format", "json"],
    );
    assert!(ok, "{err}");
    let top: Value = serde_json::from_str(&top).unwrap();
    let addr = top[0]["addr"].as_str().unwrap().to_string();
    let (ok, out, err) = recorded("culprits", "zen5-5k-a/codec", &[]);
    assert!(ok, "{err}");
    assert!(
        err.contains(&format!(
            "no --insn given: the instruction with most stall cycles, {addr}"
        )),
        "{err}"
    );
    assert!(out.starts_with(&addr), "{out}");
}

#[test]
fn cpi_json_has_the_documented_fields() {
    let (ok, out, err) = recorded("cpi", "kernels", &["--func", "matmul", "--format", "json"]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v["image"].as_str().unwrap().ends_with("kernels"));
    assert_eq!(v["function"], "matmul");
    let insns = v["instructions"].as_array().unwrap();
    assert!(insns.len() > 20);
    for i in insns {
        for k in [
            "addr",
            "samples",
            "freq",
            "confidence",
            "cpi",
            "best_cpi",
            "static_stall",
            "dynamic_stall",
        ] {
            assert!(i.get(k).is_some(), "{k} missing in {i}");
        }
        assert!(i["addr"].as_str().unwrap().starts_with("0x"));
    }
    // The hottest instruction sits in the inner loop, with high confidence.
    let hot = insns
        .iter()
        .max_by_key(|i| i["samples"]["cpu-clock"].as_u64().unwrap_or(0))
        .unwrap();
    assert_eq!(hot["confidence"], "high");
    let f = hot["freq"].as_f64().unwrap();
    // gcc vectorizes the k loop 4 ints at a time: 8000 x 64 x 64 x 16 =
    // 524,288,000 executions (callgrind); within a factor 1.6 unscaled.
    assert!(f > 524_288_000.0 / 1.6 && f < 524_288_000.0 * 1.6, "{f}");
    // Every block below high confidence says why; a high one says nothing.
    for b in v["blocks"].as_array().unwrap() {
        let why = b.get("confidence_why").and_then(|w| w.as_str());
        assert_eq!(why.is_none(), b["confidence"] == "high", "{b}");
    }
}

fn accuracy(name: &str) -> Value {
    accuracy_of("", name)
}

/// `dcpi accuracy` on workload `name`'s recording in `set` ("" for the
/// Golden Cove set, else a host directory with its slash, "zen3/").
fn accuracy_of(set: &str, name: &str) -> Value {
    let db = format!("datasets/analyzer/{set}{name}.db");
    let cg = format!("datasets/analyzer/{name}.callgrind");
    let (ok, out, err) = run(&[
        "accuracy",
        "--db",
        &db,
        "--callgrind",
        &cg,
        "--symfs",
        "datasets/analyzer",
        "--image",
        name,
        "--format",
        "json",
    ]);
    assert!(ok, "{err}");
    serde_json::from_str(&out).unwrap()
}

fn within(v: &Value, estimator: usize, scaled: bool, tol: usize) -> f64 {
    let key = if scaled { "within_scaled" } else { "within" };
    v["estimators"][estimator][key][tol].as_f64().unwrap()
}

/// The five workloads the accuracy measure is taken over (the others
/// recorded beside them are kept out of its mean: `benches/accuracy_sets.py`).
const TUNING_WORKLOADS: [&str; 5] = ["kernels", "btree", "hashtab", "codec", "msort"];

/// Floors on the recorded runs (BENCHMARKS.md has the figures): regression
/// guards a little under today's shares of one recording each (the
/// issue's targets are over every recording: see
/// `the_issues_targets_hold_over_every_recording`). Scaled ±10 % share of
/// samples, and unscaled for all but btree, whose unscaled share swings between 0 and
/// 0.36 with small changes of how sure blocks outside loops are (its
/// find_index sits near the 10 % edge). codec's scaled share sits on a
/// threshold (0.61 unscaled, 0.50–0.61 scaled as the model's best cases
/// move by a few percent: exact steady states moved one of rle_encode's
/// blocks from 0.80 to 0.83 cycles and the fitted scale with it).
/// hashtab's unscaled share rests on `hash` (15 % of its samples, -6 % or
/// -15 %): which instruction of that port-bound block the model's ROB head
/// waits on moved when issue became one pass in program order (0.36 ->
/// 0.15; scaled 0.57 -> 0.61). msort's merge loop has no clean block of
/// its own: its frequency is the linked solve's compromise between
/// `compare`'s estimate (+31 %) and the loop's upper bound (-32 %), which
/// landed at +8 % until guessed blocks stopped counting as evidence and
/// lands at +18 % since (unscaled 0.90 -> 0.06; scaled 0.92; the
/// sample-weighted mean |log error| over all fifteen recordings fell
/// 0.453 -> 0.395 with that change, see BENCHMARKS.md).
/// hashtab's scaled share sits on such an edge too: counted refills as
/// estimates (session 30) moved `hash` +33 -> +38 % and `contains`' entry
/// +45 -> +53 % (mean |ln e| 0.411 -> 0.413), and the fitted scale took
/// the scaled share 0.53 -> 0.30; straight estimates leaning up their
/// range (frequency.rs RANGE_LEAN) took it to 0.61 (|ln e| 0.275). The
/// same session, ranged estimates stopped rising to upper bounds alone:
/// msort's loop now follows `compare` on the Zen 4 sets (unscaled 1-16 %
/// -> 64-97 %); on this one it was at 0.96 already. Session 31 (a loop
/// whose entries overfill it takes the middle of its bounds; few samples
/// left of many set aside no longer estimate): btree 0.68 scaled, 0.77
/// unscaled, hashtab 0.61 unscaled, so their floors rose to 0.5 / 0.4 and
/// 0.4. Session 45 (a leaf nothing waits on runs at its throughput, main's
/// loops tied by their stated trip counts) rests hashtab's calls on one
/// count: right on the Zen 4 sets (see the next test), 1.3x here, where
/// `next_key`'s truth sat 0.64 of the way to its throughput rather than
/// the Zen 4 sets' 0.81 (unscaled 0.61 -> 0.05, scaled 0.55, |ln e| 0.26
/// -> 0.38): its unscaled floor here is gone, the Zen 4 sets' hold it.
/// The mean |ln error| (smooth where the shares jump) has a ceiling a
/// little above today's, and is under half the naive estimator's.
#[test]
fn accuracy_floors_against_callgrind() {
    for (name, floor, unscaled, over_naive, log_ceiling) in [
        ("kernels", 0.6, 0.6, 2.0, 0.25),
        ("codec", 0.45, 0.55, 2.0, 0.3),
        ("msort", 0.85, 0.8, 2.0, 0.25),
        ("btree", 0.5, 0.4, 1.5, 0.3),
        ("hashtab", 0.45, 0.0, 2.0, 0.45),
    ] {
        let v = accuracy(name);
        assert_eq!(v["estimators"][0]["estimator"], "dcpi");
        let ours = within(&v, 0, true, 1);
        assert!(ours >= floor, "{name}: {ours} < {floor}: {v}");
        assert!(ours > over_naive * within(&v, 1, true, 1), "{name}: {v}");
        let raw = within(&v, 0, false, 1);
        assert!(raw >= unscaled, "{name} unscaled: {raw} < {unscaled}: {v}");
        let log_error = |e: usize| v["estimators"][e]["mean_log_error"].as_f64().unwrap();
        assert!(log_error(0) <= log_ceiling, "{name} |ln e|: {v}");
        assert!(
            log_error(0) < 0.5 * log_error(1),
            "{name} |ln e| vs naive: {v}"
        );
        // "high" means what it says: where there is any, nearly all of it
        // within 25 % of the truth (kernels 0.99, codec and msort 1.0).
        let levels = v["by_confidence"].as_array().unwrap();
        if let Some(high) = levels.iter().find(|l| l["confidence"] == "high") {
            let within_25 = high["within"][2].as_f64().unwrap();
            assert!(within_25 >= 0.9, "{name} high confidence: {v}");
        }
    }
}

/// hashtab on the host's own recordings (Zen 4): its calls rest on one
/// count (see `a_leafs_callers_loops_rest_on_one_count`), and most of its
/// samples are within 10 % of the truth with and without the fitted
/// scale. Session 44: unscaled 0.24-0.59, scaled 0.30-0.59 on these five;
/// session 45: 0.89-0.93 and 0.81-0.93 (zen4-5k-e, the busy hour's, 0.24 /
/// 0.66: see `a_leafs_callers_loops_rest_on_one_count`).
#[test]
fn hashtab_is_counted_on_the_host_recordings() {
    for set in [
        "zen4/",
        "zen4-5k-a/",
        "zen4-5k-c/",
        "zen4-5k-d/",
        "zen4-5k-h/",
    ] {
        let v = accuracy_of(set, "hashtab");
        let scaled = within(&v, 0, true, 1);
        let unscaled = within(&v, 0, false, 1);
        assert!(
            scaled >= 0.75 && unscaled >= 0.75,
            "{set}: {scaled} / {unscaled}: {v}"
        );
    }
}

/// The mean |ln error| over every recorded set (Golden Cove, Zen 3, seven
/// Zen 4 recordings; `benches/accuracy_sets.py`): a guard on the whole, as
/// one recording of one workload moves with its noise (btree 0.17-0.56 on
/// Zen 4). Session 24: 0.348 over all, the worst set 0.393; session 25:
/// 0.299, the worst set 0.347; session 27 (nine sets): 0.305 -> 0.278, the
/// worst set (zen4-5k-e, a busy hour) 0.357 -> 0.335; session 45: 0.128,
/// the worst set (Zen 3) 0.238.
#[test]
fn accuracy_over_every_recorded_set() {
    let sets = [
        "",
        "zen3/",
        "zen4/",
        "zen4-5k-a/",
        "zen4-5k-b/",
        "zen4-5k-c/",
        "zen4-5k-d/",
        "zen4-5k-e/",
        "zen4-5k-f/",
    ];
    let names = TUNING_WORKLOADS;
    let mut all = 0.0;
    for set in sets {
        let mut sum = 0.0;
        for name in names {
            let v = accuracy_of(set, name);
            sum += v["estimators"][0]["mean_log_error"].as_f64().unwrap();
        }
        let mean = sum / names.len() as f64;
        assert!(mean <= 0.3, "set {set}: mean |ln e| {mean}");
        all += mean / sets.len() as f64;
    }
    assert!(all <= 0.15, "mean |ln e| over every set {all}");
}

/// Issue 4's targets as `benches/accuracy_sets.py --shares` measures them:
/// over every recorded set holding the five tuning workloads (fourteen:
/// Golden Cove, Zen 3, nine Zen 4 and three Zen 5 recordings), the mean
/// of the cells' shares of samples within ±10 % of callgrind's counts is
/// at least 80 % with one scale fitted per cell and 60 % without. Session
/// 71: 80.1 % and 69.7 % — the scaled one a tenth of a point over the
/// line, so a change that costs any of it fails here and says so.
#[test]
fn the_issues_targets_hold_over_every_recording() {
    let names = TUNING_WORKLOADS;
    let mut sets = vec![String::new()];
    let mut dirs: Vec<String> = std::fs::read_dir("datasets/analyzer")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|d| {
            names
                .iter()
                .all(|n| std::path::Path::new(&format!("datasets/analyzer/{d}/{n}.db")).exists())
        })
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 13, "{dirs:?}");
    sets.extend(dirs.into_iter().map(|d| format!("{d}/")));
    let (mut scaled, mut unscaled, mut cells) = (0.0, 0.0, 0.0);
    for set in &sets {
        for name in names {
            let v = accuracy_of(set, name);
            scaled += within(&v, 0, true, 1);
            unscaled += within(&v, 0, false, 1);
            cells += 1.0;
        }
    }
    let (scaled, unscaled) = (scaled / cells, unscaled / cells);
    assert!(scaled >= 0.80, "scaled ±10 % over {cells} cells: {scaled}");
    assert!(
        unscaled >= 0.60,
        "unscaled ±10 % over {cells} cells: {unscaled}"
    );
}

/// The three Zen 5 recordings (session 49, the host's own; core shares
/// 0.98-1.03): the analyzer's weakest sets, mean |ln error| 0.272 / 0.238 /
/// 0.255 over the five workloads (hashtab's calls +64..+74 %, msort's
/// merge +19..+23 %, kernels' interp +20..+76 %: rules shaped on Zen 4
/// that lean on the wider core's throughput). A guard against losing more.
#[test]
fn accuracy_on_the_zen5_recordings() {
    let names = TUNING_WORKLOADS;
    for set in ["zen5-5k-a/", "zen5-5k-b/", "zen5-5k-c/"] {
        let mean = names
            .iter()
            .map(|name| {
                accuracy_of(set, name)["estimators"][0]["mean_log_error"]
                    .as_f64()
                    .unwrap()
            })
            .sum::<f64>()
            / names.len() as f64;
        assert!(mean <= 0.22, "set {set}: mean |ln e| {mean}");
    }
}

/// On an eight-wide core a sample-less (or nearly) block says it rarely ran
/// only if it fills enough dispatch slots, not cycles (session 67):
/// textproc's `intern` new-word block (20 instructions around a `memcpy`
/// call, 3.0 best-case cycles on Zen 5, 1 sample, 0.1 M true runs of 42 M
/// calls) had no estimate at the six-wide machines' 4 cycles, and the
/// solve sent 36 M calls through it. Now about its one sample's worth.
#[test]
fn a_short_block_on_a_wide_core_still_says_it_rarely_ran() {
    for set in ["zen5-5k-a", "zen5-5k-b", "zen5-5k-c"] {
        let v = set_cpi(set, "textproc", "intern");
        let calls = block_at(&v, "0x14f0")["freq"].as_f64().unwrap();
        let new_word = block_at(&v, "0x1586")["freq"].as_f64().unwrap();
        assert!(
            new_word < 0.05 * calls,
            "{set}: new-word block {new_word} of {calls} calls"
        );
    }
}

/// A loop entered straight from a branch that may mispredict holds each
/// mispredicted entry's refetch (session 67): hashtab `insert`'s probe
/// loop, entered when the first probe finds its slot taken, read 2.6-2.9x
/// on the Zen 5 recordings charged the exit's refill alone; with the
/// refills counted at its header charged too, 2.2-2.4x (still between its
/// bounds: its trips are 15 % of its cycles, the rest refills).
#[test]
fn a_loop_entered_by_a_mispredicting_branch_pays_its_refetch() {
    // 9.375 M header runs a run of the workload (callgrind).
    for (set, f) in zen5_block_over_truth("hashtab", "insert", "0x12f3", 9.375e6) {
        assert!((1.0..2.5).contains(&f), "{set}: {f}x");
    }
}

/// What a mispredicted loop exit leaves in the loop is the machine's own
/// measured figure where its description gives one (session 67: Zen 5's
/// exits leave 5 cycles where their refill lands out of sight, against
/// half its 15-cycle penalty on the older rule): btree's `find_index`
/// loop, whose exits return, read 0.63-0.75x on the Zen 5 recordings and
/// reads 0.85-1.14x.
#[test]
fn a_loop_exit_leaves_the_machines_measured_share_in_the_loop() {
    // 101.7 M header runs a run of the workload (callgrind).
    for (set, f) in zen5_block_over_truth("btree", "find_index", "0x146b", 101.675e6) {
        assert!((0.8..1.25).contains(&f), "{set}: {f}x");
    }
}

/// On each Zen 5 recording, the frequency of `func`'s block at `start` in
/// workload `name` over its true count (`per_run` a run, callgrind's).
fn zen5_block_over_truth(
    name: &str,
    func: &str,
    start: &str,
    per_run: f64,
) -> Vec<(&'static str, f64)> {
    ["zen5-5k-a", "zen5-5k-b", "zen5-5k-c"]
        .into_iter()
        .map(|set| {
            let v = set_cpi(set, name, func);
            (set, freq_over(&v, start, per_run * runs_in(set, name)))
        })
        .collect()
}

/// lzfind (session 63): a hash-chain match finder whose table, chain and
/// candidate reads miss to DRAM, the code between them running in their
/// shadow — xz's encoder made small. The analyzer's weakest ground: mean
/// |ln e| 0.463 / 0.481 / 0.485 on the three recordings (naive 0.86),
/// scaled ±10 % 66-71 %; blocks whose latency the core hides under the
/// misses take fewer samples than their best case (benches/upper_bounds.py).
/// A guard against losing more, and against falling to the naive estimate.
#[test]
fn accuracy_on_code_in_the_shadow_of_misses() {
    for set in ["zen5-5k-a/", "zen5-5k-b/", "zen5-5k-c/"] {
        let v = accuracy_of(set, "lzfind");
        let ours = v["estimators"][0]["mean_log_error"].as_f64().unwrap();
        let naive = v["estimators"][1]["mean_log_error"].as_f64().unwrap();
        assert_eq!(v["estimators"][1]["estimator"], "naive");
        assert!(ours <= 0.55, "set {set}: mean |ln e| {ours}");
        assert!(
            ours < naive * 0.75,
            "set {set}: {ours} against naive {naive}"
        );
        assert!(within(&v, 0, true, 1) >= 0.6, "set {set}: {v}");
    }
}

/// A leaf called from a loop runs no faster than a call's round trip lets
/// it: on Zen 5 its top was its dispatch bound (1.0 cycle for msort's
/// `compare`, six instructions) and its estimate leaned +19-24 % high on
/// the three recordings, every block of `merge` with it; with the round
/// trip's sampled share (`leaf_call_cycles`, 2.3) it reads 1.05-1.08x.
/// Truth: 98.2 M calls a run (callgrind), four runs.
#[test]
fn a_leafs_top_is_a_calls_round_trip() {
    for set in ["zen5-5k-a", "zen5-5k-b", "zen5-5k-c"] {
        let r = runs_cpi(set, "msort", "compare");
        let x = r.over("0x1360", 98.18e6);
        assert!(x > 0.9 && x < 1.12, "{set}: compare at {x:.3}x its calls");
    }
}

/// A loop path's model runs a straight-line leaf callee where its call is
/// (msort's `compare`, hashtab's `hash`), and only such a callee: one with
/// a branch (btree's `find_index`) or a PLT stub stays opaque.
#[test]
fn straight_leaf_callees_are_found() {
    use dcpi_analyze::function_code::straight_leaf;
    let at = |name: &str, func: &str| {
        let image = ElfImage::open(data().join(name).to_str().unwrap(), None).unwrap();
        let start = image.find_function(func).unwrap().start;
        straight_leaf(&image, start)
    };
    let compare = at("msort", "compare").expect("compare is a straight leaf");
    assert!(compare.len() <= 12, "{compare:?}");
    assert!(
        compare.last().unwrap().text.starts_with("ret"),
        "{compare:?}"
    );
    assert!(at("hashtab", "hash").is_some());
    assert!(at("btree", "find_index").is_none());
    let hashtab = ElfImage::open(data().join("hashtab").to_str().unwrap(), None).unwrap();
    let plt = cfg_of(&hashtab, "main")
        .insns
        .iter()
        .find(|d| d.text.contains("memset@plt"))
        .map(|d| d.instr.near_branch_target())
        .expect("main calls memset");
    assert!(straight_leaf(&hashtab, plt).is_none());
}

/// A profile of four runs of one command (the Zen 3 set): the truth is
/// callgrind's counts times four, or the unscaled estimates would all read
/// four times high.
#[test]
fn accuracy_counts_every_run_of_the_command() {
    let (ok, out, err) = run(&[
        "accuracy",
        "--db",
        "datasets/analyzer/zen3/codec.db",
        "--callgrind",
        "datasets/analyzer/codec.callgrind",
        "--symfs",
        "datasets/analyzer",
        "--image",
        "codec",
        "--format",
        "json",
    ]);
    assert!(ok, "{err}");
    assert!(err.contains("4 processes ran"), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    // The fitted scale is near 1 (4.0 would be 0.25): codec's CRC loop is
    // estimated within a few percent on this recording.
    let scale = v["estimators"][0]["scale"].as_f64().unwrap();
    assert!(scale > 0.6 && scale < 1.6, "{scale}: {v}");
}

/// `dcpi cpi --func FUNC` on the msort recording of host set `set`.
fn msort_cpi(set: &str, func: &str) -> Value {
    set_cpi(set, "msort", func)
}

/// `dcpi cpi --func FUNC` of recorded workload `name` in host set `set`.
fn set_cpi(set: &str, name: &str, func: &str) -> Value {
    let db = format!("datasets/analyzer/{set}/{name}.db");
    let args = [
        "--symfs",
        "datasets/analyzer",
        "--image",
        name,
        "--func",
        func,
    ];
    cpi_json(&db, &args)
}

/// Runs of the workload `name` recorded in host set `set` (callgrind's
/// counts are one run's).
fn runs_in(set: &str, name: &str) -> f64 {
    let db = data().join(set).join(format!("{name}.db"));
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.query_row("SELECT count(*) FROM runs", [], |r| r.get::<_, i64>(0))
        .unwrap() as f64
}

/// `dcpi cpi --func FUNC` of recorded workload `name` in host set `set`,
/// beside the runs the recording holds (callgrind's counts are one run's).
struct RunsCpi {
    v: Value,
    runs: f64,
}

impl RunsCpi {
    /// The frequency of the block at `start` over its true count, `per_run`
    /// in one run.
    fn over(&self, start: &str, per_run: f64) -> f64 {
        freq_over(&self.v, start, self.runs * per_run)
    }
}

fn runs_cpi(set: &str, name: &str, func: &str) -> RunsCpi {
    RunsCpi {
        v: set_cpi(set, name, func),
        runs: runs_in(set, name),
    }
}

/// The block of a `cpi` report that starts at `start`.
fn block_at<'a>(v: &'a Value, start: &str) -> &'a Value {
    v["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["start"] == start)
        .unwrap_or_else(|| panic!("{}: no block at {start}", v["function"]))
}

/// The frequency of the block starting at `start` over the true count `truth`.
fn freq_over(v: &Value, start: &str, truth: f64) -> f64 {
    block_at(v, start)["freq"].as_f64().unwrap_or(0.0) / truth
}

/// A recursion's call tree keeps its frequency in the linked solve. On the
/// Zen 4 recordings (four runs each) the first solve ran `main`'s
/// unestimated loop backwards and msort's return arm negative; pinning
/// that arm left msort's recursion only zero (7 calls for 48 M, merge's
/// entries with it) until pinned arcs the objective wants back were freed
/// (flow_solve's active set). Truth: 2 × 200000 − 1 calls a sort, 30
/// sorts, four runs.
#[test]
fn a_recursion_keeps_its_calls() {
    let truth = 4.0 * 30.0 * 399_999.0;
    for set in ["zen4-5k-a", "zen4-5k-b", "zen4-5k-c"] {
        let v = msort_cpi(set, "msort");
        let entry = v["blocks"][0]["freq"].as_f64().unwrap_or(0.0);
        assert!(
            entry > 0.5 * truth && entry < 2.0 * truth,
            "{set}: msort entered {entry} times for {truth}"
        );
    }
}

/// msort's merge loop branches on `compare` to one of two arms, half the
/// time mispredicted. On Zen 4 the arm at 0x13a0 has no clean sample (the
/// refill lands past its first instruction, the rest is the store's hold
/// after it) and solved to zero beside 2100 refetch samples; the refills
/// count its runs from below (a mispredict into it is a run of it).
/// Truth: 49.6 M runs a profiled process (callgrind), four processes.
#[test]
fn an_arm_of_a_mispredicting_branch_keeps_its_refills() {
    let truth = 4.0 * 49.6e6;
    for set in ["zen4-5k-a", "zen4-5k-b", "zen4-5k-c"] {
        let v = msort_cpi(set, "merge");
        let f = block_at(&v, "0x13a0")["freq"].as_f64().unwrap_or(0.0);
        assert!(f > 0.4 * truth && f < 2.0 * truth, "{set}: {f} for {truth}");
    }
}

/// Both arms of merge's compare-and-take branch (taken half the time at
/// random, so mispredicted on about half the runs) hold mostly a refill
/// and a store held behind it; the arm estimated from that aftermath came
/// out +129..+131 % while the other sat at its refills' floor, -39 %.
/// The loop calls `compare`, whose samples count it instead
/// (frequency::loop_calls_out), so the arms split it as they ran. Truth per
/// run: 49.6 M and 48.6 M; four runs.
#[test]
fn a_loop_that_calls_out_is_not_counted_from_its_arms_aftermath() {
    for set in ["zen4-5k-a", "zen4-5k-b", "zen4-5k-c"] {
        let v = msort_cpi(set, "merge");
        for (arm, truth) in [("0x13a0", 49.6e6), ("0x13d0", 48.6e6)] {
            let ratio = freq_over(&v, arm, 4.0 * truth);
            assert!(
                ratio > 0.67 && ratio < 1.5,
                "{set}: arm {arm} at {ratio:.2}x"
            );
        }
    }
}

/// merge's copy-back loop (load, store, add, cmp, jg; 105.6 M trips a run)
/// had only a guess of its own, from the few samples left once its
/// refills were set aside, and that guess kept it from its loop total:
/// 0.29-0.44x on the Zen 4 recordings. A guess is not the loop's own
/// estimate (cpi.rs add_loop_totals); four runs.
#[test]
fn a_guess_does_not_keep_a_loop_from_its_total() {
    for set in ["zen4-5k-a", "zen4-5k-b", "zen4-5k-c"] {
        let v = msort_cpi(set, "merge");
        let ratio = freq_over(&v, "0x1470", 4.0 * 105.6e6);
        assert!(ratio > 0.5 && ratio < 2.0, "{set}: {ratio:.2}x");
    }
}

/// kernels' interpreter: its loop latch joins the switch's short cases,
/// so a mispredicted dispatch's refill runs on into it. On Zen 4 the latch
/// and the header (one class) read 2.2-3.2x at high confidence; they are
/// the refill's aftermath, low like the cases (cpi.rs in_refill_shadow).
#[test]
fn a_join_of_mispredicted_cases_is_not_high_confidence() {
    for set in ["zen4-5k-a", "zen4-5k-b", "zen4-5k-c"] {
        let v = set_cpi(set, "kernels", "interp");
        for start in ["0x1600", "0x1628"] {
            let conf = &block_at(&v, start)["confidence"];
            assert_eq!(conf, "low", "{set}: block at {start}");
        }
    }
}

/// codec's rle_decode run loop (runs of 1-16 bytes): one sample on its
/// header's first instruction, charged to the back edge as a refetch,
/// left its block's estimate on the store's M alone and read 2.8x (Zen 3)
/// and 3.6x (zen4-5k-c) at high confidence. The loop's total weighs in
/// (cpi.rs add_loop_totals): where the two disagree it is a guess, and
/// where it is high it holds. Truth 104.9 M trips a run, four runs.
#[test]
fn a_loop_total_checks_its_headers_estimate() {
    for set in ["zen3", "zen4-5k-a", "zen4-5k-b", "zen4-5k-c"] {
        let v = runs_cpi(set, "codec", "rle_decode");
        let ratio = v.over("0x1480", 104.8576e6);
        assert!(ratio > 0.5 && ratio < 2.0, "{set}: {ratio:.2}x");
        if block_at(&v.v, "0x1480")["confidence"] == "high" {
            assert!(ratio > 0.75 && ratio < 1.33, "{set}: {ratio:.2}x at high");
        }
    }
}

/// codec's `rle_encode`: its run loop (header 0x13f6) is entered once per
/// run, 12.3 M times a run of the program, and leaves by a mispredict at
/// every run's end. The linked solve's first answer took the exit block's
/// raw samples (mostly the refill's) for 3x the entries, which one refill
/// each cannot fit in the loop: the exits then take their counted refills,
/// and the loop's total takes them for its entries too (it was the middle
/// of its bounds at the impossible entries: 0.85x on zen4-5k-a). Truth
/// 104.9 M trips a run (one run on zen4, four on the 5k sets).
#[test]
fn impossible_entries_give_way_to_the_exits_refills_in_the_loops_total() {
    for set in ["zen4", "zen4-5k-a", "zen4-5k-b", "zen4-5k-c", "zen4-5k-d"] {
        let v = runs_cpi(set, "codec", "rle_encode");
        let ratio = v.over("0x13f6", 104.8572e6);
        assert!(ratio > 0.88 && ratio < 1.12, "{set}: {ratio:.2}x");
    }
}

/// btree's `find_index`: its scan loop's two exits return to its callers,
/// so no refill is counted past them and one whole refill per entry (13
/// cycles on Zen 4) leaves no room for its trips; between its bounds it
/// read 0.70-0.88x on all nine Zen 4 sets. Half a refill per entry (the
/// exit's resolution, what its exact bytes measure in a loop of random
/// trip counts) puts it nearer on the whole, though each set still
/// carries its callers' error in the entries. Truth: 101.67 M header
/// runs a run (0x146b).
#[test]
fn a_loop_whose_exit_refills_land_out_of_sight_pays_half_a_refill_an_entry() {
    let mut sum = 0.0;
    let sets = [
        "zen4",
        "zen4-5k-a",
        "zen4-5k-b",
        "zen4-5k-c",
        "zen4-5k-d",
        "zen4-5k-e",
        "zen4-5k-f",
        "zen4-5k-g",
        "zen4-5k-h",
    ];
    for set in sets {
        let v = runs_cpi(set, "btree", "find_index");
        let ratio = v.over("0x146b", 101.67e6);
        assert!(ratio > 0.55 && ratio < 1.5, "{set}: {ratio:.2}x");
        sum += ratio.ln().abs();
    }
    let mean = sum / sets.len() as f64;
    assert!(mean < 0.22, "mean |ln e| {mean:.3} (0.244 between bounds)");
}

/// eventsim's heap `pop`: its sift-down loop chooses the smaller child by
/// an if/else that mispredicts about every other trip, and every block of
/// the loop stalls; their estimates read +50..+97 % until the loop's total
/// charged the if/else's refills as a two-case switch's. Truth: 367.1 M
/// trips (91.8 M on zen4, one run); 0x1439 is the loop's header.
#[test]
fn an_if_else_in_a_loop_pays_its_mispredicts() {
    for (set, truth) in [
        ("zen4", 91.786e6),
        ("zen4-5k-b", 367.14e6),
        ("zen4-5k-d", 367.14e6),
        ("zen4-5k-f", 367.14e6),
    ] {
        let v = set_cpi(set, "eventsim", "pop");
        let ratio = freq_over(&v, "0x1439", truth);
        assert!(ratio > 0.8 && ratio < 1.25, "{set}: {ratio:.2}x");
    }
}

/// kernels' isort: its outer loop's latch 0x15bd, two short blocks past
/// the inner loop's mispredicted exit, reads 4.5-20x the truth (1.02 M
/// runs, x4 on the 5k sets) — at high confidence on zen4. One refill for
/// each of those entries would take more than all of the inner loop's
/// samples: the estimate is a guess (low confidence), and says why. Since
/// session 32 the why is the exits' counted refills, which it now takes
/// ([`a_loop_entered_past_its_exits_refills_takes_them_for_its_entries`]).
#[test]
fn entries_that_overfill_their_loop_are_a_guess() {
    for set in ["zen4", "zen4-5k-b", "zen4-5k-c"] {
        let v = set_cpi(set, "kernels", "isort");
        let b = block_at(&v, "0x15bd");
        assert_eq!(b["confidence"], "low", "{set}: {b}");
    }
    let (ok, out, err) = run(&[
        "cpi",
        "--db",
        "datasets/analyzer/zen4/kernels.db",
        "--symfs",
        "datasets/analyzer",
        "--image",
        "kernels",
        "--func",
        "isort",
    ]);
    assert!(ok, "{err}");
    assert!(
        out.contains("its runs are the refills counted there"),
        "{out}"
    );
}

/// codec's `rle_encode`: the block its run loop exits to (0x13fb, also
/// the run-of-255 path's jump target) holds the exit's refill and its
/// aftermath; on Zen 4 its clean samples said 4.6x the 12.3 M runs and
/// the run loop's total gave up. Its refills are counted there now, and
/// where one refill per entry could not fit in the loop's samples the
/// count stands in for the estimate (cpi.rs exits_at_their_refills). On
/// Golden Cove its estimate, 6 % under the counted refills, was dropped
/// for them and the run loop solved to no trips at all; the count is an
/// estimate there now (frequency.rs prepare). Truth: 12.3 M exits, 104.9
/// M loop headers a run; one run on zen4 and ".", four on the 5k sets.
#[test]
fn an_exit_block_counts_its_loop_exits_by_their_refills() {
    for set in [".", "zen4", "zen4-5k-a", "zen4-5k-c"] {
        let v = runs_cpi(set, "codec", "rle_encode");
        let exits = v.over("0x13fb", 12.295e6);
        let trips = v.over("0x13f6", 104.86e6);
        assert!(exits > 0.75 && exits < 1.33, "{set}: exits at {exits:.2}x");
        assert!(trips > 0.67 && trips < 1.5, "{set}: trips at {trips:.2}x");
    }
}

/// codec's `rle_decode`: its outer loop's latch (0x1497) is the target of
/// the run loop's mispredicted exit, and every sample in it is set aside
/// as the refill's; its header (0x1478), three instructions on, has only
/// samples on a load's consumer, a bound from above. That bound said 5.3e8
/// runs for 4.9e7 (10-11x on these sets); the class now takes the refills
/// counted at the latch. Truth 12.3 M runs a run of the program, four runs.
#[test]
fn a_bound_beside_a_block_of_refills_takes_the_refills() {
    for set in ["zen3", "zen4-5k-g", "zen4-5k-h"] {
        let v = runs_cpi(set, "codec", "rle_decode");
        for start in ["0x1478", "0x1497"] {
            let ratio = v.over(start, 12.2952e6);
            assert!(ratio > 0.8 && ratio < 1.25, "{set} {start}: {ratio:.2}x");
        }
    }
}

/// A loop is left once per entry: the refills counted at its exits are
/// entries. hashtab's `contains` probe loop (header 0x1343, 54.8 M runs a
/// run) read 0.89x on zen4 with 1.2e7 entries solved where its exits
/// counted 1.67e7 refills (1.57e7 true); codec's `rle_decode` run loop
/// took 3.8 M entries on zen3 for 49 M (its exit's refills 47 M) and read
/// 1.29x at high. Both now near their truth, and the block leading into
/// the run loop (0x147f) with them.
#[test]
fn a_loop_is_entered_at_least_as_often_as_its_exits_refills_say() {
    for set in ["zen4", "zen4-5k-a", "zen4-5k-b", "zen4-5k-c", "zen4-5k-h"] {
        let v = runs_cpi(set, "hashtab", "contains");
        let ratio = v.over("0x1343", 54.828861e6);
        assert!(ratio > 0.93 && ratio < 1.07, "{set}: {ratio:.2}x");
    }
    let v = runs_cpi("zen3", "codec", "rle_decode");
    let entries = v.over("0x147f", 12.2952e6);
    assert!(entries > 0.8 && entries < 1.25, "entries at {entries:.2}x");
    let trips = v.over("0x1480", 104.8576e6);
    assert!(trips > 0.9 && trips < 1.2, "trips at {trips:.2}x");
}

/// hashtab's calls rest on one count. `main` inserts 20,000 keys a round,
/// then looks up 40,000, and its code says so: both loops state 20,000
/// trips and are entered from the same class, so the solve ties them.
/// `next_key`'s result is only stored and passed on (nothing waits on it:
/// it runs at its throughput), and the insert loop's own 10-20 samples,
/// most of its samples having gone to its callees' returns, are a floor.
/// Before, the insert loop read 0.49x on Zen 4 (pinned by those few
/// samples) and the lookup loop 0.83x. Truth: 12 M iterations of each a run.
/// (zen4-5k-e, recorded in a busy hour at 0.82 of a core, reads 0.82x:
/// `next_key` at its throughput slows as throughput-bound code does, which
/// the three other busy sets bear out and this one does not.)
#[test]
fn a_leafs_callers_loops_rest_on_one_count() {
    for set in ["zen4", "zen4-5k-a", "zen4-5k-c", "zen4-5k-g", "zen4-5k-h"] {
        let v = runs_cpi(set, "hashtab", "main");
        let inserts = v.over("0x10c0", 12e6);
        let lookups = v.over("0x10e0", 12e6);
        assert!(
            (inserts / lookups - 1.0).abs() < 1e-3,
            "{set}: {inserts:.3}x vs {lookups:.3}x"
        );
        assert!(
            inserts > 0.85 && inserts < 1.2,
            "{set}: inserts at {inserts:.2}x"
        );
        let v = runs_cpi(set, "hashtab", "next_key");
        let calls = v.over("0x1250", 24e6);
        assert!(
            calls > 0.85 && calls < 1.2,
            "{set}: next_key at {calls:.2}x"
        );
    }
}

/// hashtab's `hash`, a leaf of one straight block called from its
/// callers' probe loops, reads -30 % on every Zen 4 set: its chain hides
/// partly under its callers' stalls, and how much is a guess. Its solved
/// spread alone made it medium once it stopped rising to those loops'
/// upper bounds; a block outside loops stays low and says why.
#[test]
fn a_block_outside_loops_is_low_confidence() {
    for set in ["zen4", "zen4-5k-b"] {
        let v = set_cpi(set, "hashtab", "hash");
        let b = block_at(&v, "0x1290");
        assert_eq!(b["confidence"], "low", "{set}: {b}");
        let why = b["confidence_why"].as_str().unwrap_or("");
        assert!(why.contains("outside loops"), "{set}: {why}");
    }
}

/// `dcpi prof --symfs DIR` and `dcpi report --symfs DIR` find images that
/// moved (as cpi and list do):
/// the recordings name /work/main/datasets/analyzer/..., which a clone
/// elsewhere does not have; a wrong binary under the root is refused by
/// build-id rather than misread.
#[test]
fn prof_finds_moved_images_under_symfs() {
    let procs = |out: &str| -> Vec<String> {
        let v: Value = serde_json::from_str(out).unwrap();
        v["procedures"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["procedure"].as_str().unwrap().to_string())
            .collect()
    };
    let (ok, out, err) = recorded("prof", "msort", &["--format", "json"]);
    assert!(ok, "{err}");
    let names = procs(&out);
    assert!(names.iter().take(2).any(|n| n == "merge"), "{names:?}");
    let dir = tempdir();
    std::fs::copy(data().join("kernels"), dir.path().join("msort")).unwrap();
    let db = "datasets/analyzer/msort.db";
    let root = dir.path().to_str().unwrap();
    let (ok, out, err) = run(&["prof", "--db", db, "--symfs", root, "--format", "json"]);
    assert!(ok, "{err}");
    assert!(!procs(&out).iter().any(|n| n == "merge"), "{out}");
    let warning = format!("{root}/msort: build-id is now");
    assert!(out.contains(&warning), "{out}");
    // So does `dcpi report` (Prospect's per-process profiles).
    let (ok, out, err) = run(&["report", "--db", db, "--symfs", "datasets/analyzer"]);
    assert!(ok, "{err}");
    assert!(out.contains("u:merge"), "{out}");
}

/// Block `start` of `func`'s `cpi --format json` on recording `name`.
fn cpi_block(name: &str, func: &str, start: &str) -> Value {
    let (ok, out, err) = recorded(
        "cpi",
        name,
        &["--func", func, "--image", name, "--format", "json"],
    );
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    block_at(&v, start).clone()
}

/// Estimates that rest on a guess say so: codec's `0x1430` (rle_encode's
/// run-of-255 path) never runs and has no samples, but takes a share of
/// its successor's first samples through its jmp; interp's dispatch loop
/// feeds itself through the split of its latch's first samples (72 % too
/// high). Neither may claim more than low confidence.
#[test]
fn guessed_frequencies_are_low_confidence() {
    let conf = |name: &str, func: &str, start: &str| -> String {
        cpi_block(name, func, start)["confidence"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(conf("codec", "rle_encode", "0x1430"), "low");
    // rle_encode's inner loop: every sample in it a refetch suspect, its
    // trip count unobserved (11.7 M for 92.6-104.9 M); it was "medium".
    for start in ["0x13e0", "0x13e9", "0x13f6"] {
        assert_eq!(conf("codec", "rle_encode", start), "low", "{start}");
    }
    assert_eq!(conf("kernels", "interp", "0x1600"), "low");
    // rle_decode's inner loop: 8.5 one-cycle trips per entry, less than
    // one mispredict's refill (+46.5 %; it was "high").
    assert_eq!(conf("codec", "rle_decode", "0x1480"), "low");
    // While matmul's inner loop, right within 1 %, stays high.
    assert_eq!(conf("kernels", "matmul", "0x1508"), "high");
}

/// The handlers of interp's dispatch (`jmp *%rdi` through a jump table,
/// each handler 3.3-3.8 M runs) take nearly all their samples as the
/// refill after a mispredicted dispatch. Those refills count them from
/// below (samples / the mispredict penalty): each handler comes out
/// between 0.5 and 1.3 times its true count — before, five of them
/// solved to zero beside 280-370 samples each, and one fed on its share
/// of the loop latch's samples to 13 times its count. (1.2 until session
/// 71: the switch's default arm, taken since as one case's share where
/// the solve gave it 39 % of the trips, leaves this Golden Cove
/// recording's handlers 1.09-1.23x.)
#[test]
fn dispatch_targets_are_counted_by_their_refills() {
    for (start, truth) in [
        ("0x1618", 3.592e6),
        ("0x1638", 3.776e6),
        ("0x1640", 3.408e6),
        ("0x1650", 3.320e6),
        ("0x1660", 3.800e6),
        ("0x1670", 3.664e6),
        ("0x1680", 3.464e6),
    ] {
        let b = cpi_block("kernels", "interp", start);
        let f = b["freq"].as_f64().unwrap_or(0.0);
        assert!(
            (0.5 * truth..1.3 * truth).contains(&f),
            "{start}: {f} for {truth}"
        );
        assert_eq!(b["confidence"], "low", "{start}");
    }
}

/// A loop around a switch pays a refill on each trip whose case differs
/// from the last one's: kernels' interp (nine cases in a random order)
/// from its samples as a whole with 0.86 of a refill a trip. Before, its
/// header read 0.52x and its dispatch 0.67x of the truth (the handlers'
/// refill counts, which see part of each refill, were all it had).
/// bytecode's stream_vm loop latch, a join of twelve cases one of which
/// is five instructions long, read 4.2x at high confidence: it holds the
/// refills' aftermath, as interp's latch does, and is low now.
#[test]
fn a_dispatch_loop_pays_its_mispredicts() {
    for (start, truth, within) in [
        ("0x1600", 32.768e6, 0.75..1.6),
        ("0x1607", 25.024e6, 0.8..1.25),
    ] {
        let b = cpi_block("kernels", "interp", start);
        let f = b["freq"].as_f64().unwrap_or(0.0);
        assert!(within.contains(&(f / truth)), "{start}: {f} for {truth}");
        assert_eq!(b["confidence"], "low", "{start}");
    }
    let report = set_cpi("zen4-5k-f", "bytecode", "stream_vm");
    assert_eq!(block_at(&report, "0x14a8")["confidence"], "low");
}

/// A switch's default arm (the far side of its range check) runs as
/// often as one of its table's cases, a prior stated as such: nothing
/// measures it. The solve's ridge had given it a share by the graph's
/// shape alone: bytecode's stream_vm default arm (4.4 M runs) read 250 M
/// on zen4-5k-f, kernels' interp's (7.7 M) 17.5 M on the Golden Cove
/// recording; now 43 M and 4.2 M.
#[test]
fn a_switchs_default_arm_runs_as_one_case() {
    for (report, dispatch, arm, cases) in [
        (
            set_cpi("zen4-5k-f", "bytecode", "stream_vm"),
            "0x148b",
            "0x154f",
            11.0,
        ),
        (set_cpi(".", "kernels", "interp"), "0x1607", "0x1685", 7.0),
    ] {
        let f = |start: &str| block_at(&report, start)["freq"].as_f64().unwrap_or(0.0);
        let share = f(arm) / (f(dispatch) / cases);
        assert!(
            (0.8..1.25).contains(&share),
            "{arm}: {share} of one case's runs"
        );
        let why = block_at(&report, arm)["confidence_why"]
            .as_str()
            .unwrap_or("");
        assert!(why.contains("default arm"), "{arm}: {why}");
    }
}

/// A jump table's cases share its runs as the refills counted at them
/// say: bytecode's stream_vm draws case 0 about eight times as often as
/// case 6 and thirty times as often as case 10 (callgrind: 82.8 M, 10.4 M,
/// 2.7 M runs); its twelve cases were each given a twelfth before.
#[test]
fn a_jump_tables_cases_share_its_runs_as_their_refills_say() {
    for set in ["zen4-5k-f", "zen5-5k-a"] {
        let report = set_cpi(set, "bytecode", "stream_vm");
        let f = |start: &str| block_at(&report, start)["freq"].as_f64().unwrap_or(0.0);
        let (case0, case2, case6, case10) = (f("0x1510"), f("0x1530"), f("0x14d0"), f("0x1518"));
        assert!(case0 > 0.0, "{set}: case 0 has no estimate");
        assert!(
            (3.5..16.0).contains(&(case0 / case6)),
            "{set}: case 0 / case 6 = {case0} / {case6}"
        );
        assert!(
            case0 > case2 && case2 > case6 && case6 > case10,
            "{set}: {case0} {case2} {case6} {case10}"
        );
        let why = block_at(&report, "0x1510")["confidence_why"]
            .as_str()
            .unwrap_or("");
        assert!(why.contains("jump table's case"), "{set}: {why}");
    }
}

/// A sample lands after the instruction the pipeline waited on; after a
/// call's return address that one is the callee's `ret`, not the call:
/// msort's 291 samples on the `test` after `call compare` are charged to
/// compare's `ret`, none to the call, by `cpi --func` as by `--all`.
#[test]
fn samples_after_a_call_are_the_callees_return() {
    let charged = |func: &str, addr: &str, all: bool| -> (f64, u64) {
        let mut args = vec!["--image", "msort", "--format", "json"];
        if all {
            args.push("--all");
        } else {
            args.extend_from_slice(&["--func", func]);
        }
        let (ok, out, err) = recorded("cpi", "msort", &args);
        assert!(ok, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        let reports = if all {
            v["functions"].as_array().unwrap().clone()
        } else {
            vec![v]
        };
        let report = reports.iter().find(|r| r["function"] == func).unwrap();
        let row = report["instructions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["addr"] == addr)
            .unwrap_or_else(|| panic!("{func}: no instruction at {addr}"))
            .clone();
        (
            row["charged_samples"].as_f64().unwrap(),
            row["samples"]["cpu-clock"].as_u64().unwrap_or(0),
        )
    };
    for all in [false, true] {
        let (_, after_call) = charged("merge", "0x13cc", all);
        assert!(after_call > 100, "{after_call}");
        let (ret, _) = charged("compare", "0x136f", all);
        assert!(
            (ret - after_call as f64).abs() < 0.5,
            "{ret} vs {after_call}"
        );
        let (call, _) = charged("merge", "0x13c7", all);
        assert!(call < 0.5, "{call}");
    }
}

/// codec's CRC loop loads from a 1 KiB static table (set once with a
/// rip-relative lea): it stays in L1, so the samples on the load and after
/// it are evidence, not load-stall suspects; the loop's frequency is no
/// longer an upper bound only, and within 10 % of callgrind's 129.4 M.
#[test]
fn small_table_loads_are_evidence() {
    let b = cpi_block("codec", "crc32", "0x1388");
    assert_ne!(b["confidence"], "low", "{b}");
    assert_eq!(b["freq_upper_bound"], false, "{b}");
    let f = b["freq"].as_f64().unwrap();
    assert!((f / 129_448_000.0 - 1.0).abs() < 0.10, "{f}");
}

#[test]
fn functions_by_address_and_mistyped_names() {
    let (ok, out, err) = recorded("list", "kernels", &["--func", "0x1600", "--format", "json"]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["function"], "interp");
    let (ok, _, err) = recorded("cpi", "kernels", &["--func", "matmull"]);
    assert!(!ok);
    assert!(
        err.contains("no function 'matmull'") && err.contains("matmul"),
        "{err}"
    );
    let (ok, _, err) = run(&["cpi", "--db", "/nonexistent/x.db", "--func", "main"]);
    assert!(!ok);
    assert!(err.contains("no profile database"), "{err}");
}

/// A binary that changed since profiling is refused, not misread.
#[test]
fn changed_binary_is_refused() {
    let dir = tempdir();
    std::fs::copy(data().join("btree"), dir.path().join("kernels")).unwrap();
    let (ok, _, err) = run(&[
        "cpi",
        "--db",
        "datasets/analyzer/kernels.db",
        "--symfs",
        dir.path().to_str().unwrap(),
        "--func",
        "matmul",
    ]);
    assert!(!ok);
    assert!(err.contains("changed since profiling"), "{err}");
}

/// Profiles a bundled workload into DIR/NAME.db; returns the database path.
fn live_collect(dir: &Path, name: &str, arg: &str) -> String {
    let db = dir.join(format!("{name}.db"));
    let exe = workload(name);
    let out = common::collect(&db, &["-F", "5000", "--", &exe, arg]);
    assert_success(&out);
    db.to_str().unwrap().to_string()
}

/// `dcpi cpi --db DB ARGS --format json`, asserting success.
fn cpi_json(db: &str, args: &[&str]) -> Value {
    let mut all = vec!["cpi", "--db", db];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let (ok, out, err) = run(&all);
    assert!(ok, "{err}");
    serde_json::from_str(&out).unwrap()
}

/// Live: profile SLEEPY's loop and find its hot loop with a confident frequency.
#[test]
fn live_profile_to_cpi() {
    let _g = live();
    let dir = tempdir();
    let db = live_collect(dir.path(), "loop", "300000000");
    let v = cpi_json(&db, &["--func", "main"]);
    let blocks = v["blocks"].as_array().unwrap();
    let hot = blocks
        .iter()
        .max_by_key(|b| b["samples"].as_u64().unwrap())
        .unwrap();
    assert!(hot["loop_header"].as_bool().unwrap(), "{hot}");
    assert_ne!(hot["confidence"], "low", "{hot}");
    let f = hot["freq"].as_f64().unwrap();
    assert!(f > 3e7, "{f}");
}

/// Live: a shared library's function from a stripped PIE, and a stripped
/// executable whose functions come from .eh_frame (named fn_<addr>).
#[test]
fn live_shared_library_and_stripped_executable() {
    let _g = live();
    let dir = tempdir();
    let db = live_collect(dir.path(), "uselib", "200000000");
    let v = cpi_json(&db, &["--func", "work_hot"]);
    assert!(
        v["image"].as_str().unwrap().ends_with("libwork.so"),
        "{}",
        v["image"]
    );
    assert!(v["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|b| b["loop_header"].as_bool().unwrap() && b["confidence"] != "low"));

    let db = live_collect(dir.path(), "loop-stripped", "200000000");
    let v = cpi_json(&db, &["--all", "--image", "loop-stripped"]);
    let top = &v["functions"][0];
    assert!(
        top["function"].as_str().unwrap().starts_with("fn_"),
        "{top}"
    );
    let (ok, out, err) = run(&[
        "list",
        "--db",
        &db,
        "--image",
        "loop-stripped",
        "--func",
        top["start"].as_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("── block 0"), "{out}");
}

/// A stripped shared library's unexported functions are split out by
/// their FDEs and named `fn_<address>`; the exported ones keep their names
/// and extents.
#[test]
fn stripped_library_names_its_hidden_functions_by_their_fdes() {
    use dcpi_analyze::elf_symbols::{ElfSymbols, SymbolSource};
    use object::{Object, ObjectSymbol};
    let dir = common::workloads();
    let full = std::fs::read(dir.join("libhidden.so")).unwrap();
    let full = object::File::parse(&*full).unwrap();
    let at = |name: &str| {
        full.symbols()
            .find(|s| s.name() == Ok(name))
            .map(|s| (s.address(), s.size()))
            .unwrap_or_else(|| panic!("{name} in libhidden.so"))
    };
    let syms = ElfSymbols::load(dir.join("libhidden-stripped.so").to_str().unwrap()).unwrap();
    assert_eq!(syms.source, SymbolSource::Dynsym);
    for hidden in ["hidden_sum", "hidden_twice"] {
        let (start, size) = at(hidden);
        let p = syms.procedure(start + 2).unwrap();
        assert_eq!(p.name, format!("fn_{start:x}"), "{hidden}");
        assert!(!p.named);
        let f = syms.function_at(start + 2).unwrap();
        assert_eq!((f.start, f.end), (start, start + size), "{hidden}");
    }
    let (start, size) = at("exported_entry");
    let p = syms.procedure(start).unwrap();
    assert_eq!(p.name, "exported_entry");
    assert!(p.named);
    assert_eq!(syms.functions_named("exported_entry")[0].end, start + size);
    let (hidden, _) = at("hidden_sum");
    let named = &syms.functions_named(&format!("fn_{hidden:x}"))[0];
    assert_eq!(named.start, hidden);
}

/// A C function GCC cloned (lzfind's `match_len.constprop.0`) is found
/// by the name in its source, as perf users type it.
#[test]
fn gcc_clones_are_found_by_their_source_names() {
    let image = ElfImage::open(data().join("lzfind").to_str().unwrap(), None).unwrap();
    let f = image.find_function("match_len").unwrap();
    assert_eq!(f.name, "match_len.constprop.0");
    assert_eq!(
        image.find_function("match_len.constprop.0").unwrap().start,
        f.start
    );
    let (ok, out, err) = recorded("list", "zen5-5k-a/lzfind", &["--func", "match_len"]);
    assert!(ok, "{err}");
    assert!(out.contains("function  match_len.constprop.0"), "{out}");
}

/// C++ functions are found by the name a user types: qualified without
/// return type, template arguments or parameters, or by their last
/// components; a name two template instances share lists both.
#[test]
fn cxx_functions_are_found_by_their_qualified_names() {
    let path = workload("cxxnames");
    let image = ElfImage::open(&path, None).unwrap();
    let name = |q: &str| image.find_function(q).map(|f| f.name);
    assert_eq!(name("app::Rec::size").unwrap(), "app::Rec::size()");
    assert_eq!(name("Rec::size").unwrap(), "app::Rec::size()");
    assert_eq!(name("size").unwrap(), "app::Rec::size()");
    assert_eq!(
        name("app::churn<long>").unwrap(),
        "long app::churn<long>(long&)"
    );
    assert_eq!(
        name("long app::churn<int>(long&)").unwrap(),
        "long app::churn<int>(long&)"
    );
    assert_eq!(
        name("_ZN3app5churnIiEElRl").unwrap(),
        "long app::churn<int>(long&)"
    );
    for shared in ["app::churn", "churn"] {
        let e = name(shared).unwrap_err().to_string();
        assert!(e.contains("names 2 functions"), "{e}");
        assert!(
            e.contains("app::churn<int>") && e.contains("app::churn<long>"),
            "{e}"
        );
    }
    let e = name("app::chrun").unwrap_err().to_string();
    assert!(e.contains("closest"), "{e}");
}

/// A PLT entry is found by the name `dcpi prof` gives it (`work_hot@plt`).
#[test]
fn plt_entries_are_found_by_their_prof_names() {
    let image = ElfImage::open(&workload("uselib"), None).unwrap();
    let f = image.find_function("work_hot@plt").unwrap();
    assert_eq!(f.end - f.start, 16, "{f:?}");
    let p = image.symbols.procedure(f.start).unwrap();
    assert_eq!(p.name, "work_hot@plt");
    let bytes = image.bytes(f.start, 16).unwrap();
    // endbr64 then a bnd/plain indirect jmp, or the jmp itself.
    assert!(bytes.windows(2).any(|w| w == [0xff, 0x25]), "{bytes:02x?}");
}

fn culprits_json(name: &str, addr: &str) -> Value {
    let (ok, out, err) = recorded("culprits", name, &["--insn", addr, "--format", "json"]);
    assert!(ok, "{err}");
    serde_json::from_str(&out).unwrap()
}

fn address_of(image: &str, func: &str, pick: impl Fn(&str) -> bool) -> String {
    let image = ElfImage::open(data().join(image).to_str().unwrap(), None).unwrap();
    let cfg = cfg_of(&image, func);
    let d = cfg.insns.iter().find(|d| pick(&d.text)).unwrap();
    format!("{:#x}", d.addr)
}

/// A run beside a busy SMT sibling (btree on zen4-5k-e: 80 % of an idle
/// core by the collector's probe) names the shared core among a stall's
/// culprits, up to the sibling's share of the instruction's cycles, after
/// the D-cache miss; a run without the probe (the Golden Cove set) does
/// not.
#[test]
fn a_shared_core_is_a_culprit_up_to_its_share() {
    let load = address_of("btree", "find_index", |t| t.starts_with("mov (%rdi),"));
    let is_smt = |c: &&Value| c["code"] == "smt";
    let c = culprits_json("zen4-5k-e/btree", &load);
    let culprits = c["culprits"].as_array().unwrap();
    assert_eq!(culprits[0]["code"], "dcache", "{c}");
    let smt = culprits.iter().find(is_smt).expect("a shared-core culprit");
    assert_eq!(smt["kind"], "dynamic");
    let most = smt["share"][1].as_f64().unwrap();
    assert!(most > 0.1 && most < 0.3, "{smt}");
    let c = culprits_json("btree", &load);
    assert!(
        !c["culprits"].as_array().unwrap().iter().any(|x| is_smt(&x)),
        "{c}"
    );
}

/// Culprits on the recorded profiles: btree's node-key load misses the
/// D-cache; the interpreter's dispatch jump mispredicts.
#[test]
fn culprits_of_known_stalls() {
    let load = address_of("btree", "find_index", |t| t.starts_with("mov (%rdi),"));
    let c = culprits_json("btree", &load);
    assert_eq!(c["function"], "find_index");
    let top = &c["culprits"][0];
    assert_eq!(top["code"], "dcache", "{c}");
    assert_eq!(top["kind"], "dynamic");
    assert!(top["share"][1].as_f64().unwrap() > 0.9, "{c}");
    assert!(c["ruled_out"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["code"] == "mispredict"));

    let jump = address_of("kernels", "interp", |t| t.starts_with("jmp *"));
    let c = culprits_json("kernels", &jump);
    let codes: Vec<&str> = c["culprits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes[0], "mispredict", "{c}");
    assert_eq!(c["skid"]["landed_at"].as_array().unwrap().len(), 7, "{c}");
    // Not an instruction start.
    let inside = format!("{:#x}", u64::from_str_radix(&jump[2..], 16).unwrap() + 1);
    let (ok, _, err) = recorded("culprits", "kernels", &["--insn", &inside]);
    assert!(!ok && err.contains("not at an instruction start"), "{err}");
    assert!(err.contains(&format!("nearest: {jump}")), "{err}");
}

/// whatcg: btree's dynamic stalls are first of all D-cache misses; matmul's
/// cycles are nearly all best case and static (its data stay in L1);
/// the minimums add up to 100 %. topstalls ranks instructions with culprits.
#[test]
fn whatcg_and_topstalls_on_recorded_profiles() {
    let (ok, out, err) = recorded("whatcg", "btree", &["--image", "btree", "--format", "json"]);
    assert!(ok, "{err}");
    let w: Value = serde_json::from_str(&out).unwrap();
    let cats = w["categories"].as_array().unwrap();
    // The leading culprit (the one that may explain most cycles), not the
    // first dynamic row: "ambiguous" is not a culprit and may rank above it.
    assert_eq!(w["leading"], "dcache", "{w}");
    let dcache = cats.iter().find(|c| c["code"] == "dcache").unwrap();
    assert!(dcache["percent"][1].as_f64().unwrap() > 40.0, "{w}");
    let min_sum: f64 = cats.iter().map(|c| c["percent"][0].as_f64().unwrap()).sum();
    assert!((min_sum - 100.0).abs() < 0.5, "{min_sum}");

    let (ok, out, err) = recorded(
        "whatcg",
        "kernels",
        &["--func", "matmul", "--format", "json"],
    );
    assert!(ok, "{err}");
    let w: Value = serde_json::from_str(&out).unwrap();
    let not_dynamic: f64 = w["categories"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kind"] != "dynamic")
        .map(|c| c["percent"][0].as_f64().unwrap())
        .sum();
    assert!(not_dynamic > 90.0, "{w}");

    let (ok, out, err) = recorded("topstalls", "btree", &["-n", "5", "--format", "json"]);
    assert!(ok, "{err}");
    let t: Value = serde_json::from_str(&out).unwrap();
    let rows = t.as_array().unwrap();
    assert_eq!(rows.len(), 5);
    assert!(rows[0]["stall_cycles"].as_f64().unwrap() >= rows[4]["stall_cycles"].as_f64().unwrap());
    assert!(!rows[0]["culprits"].as_array().unwrap().is_empty());

    // One function, named as cpi names it: topstalls --func keeps its
    // rows only; whatcg --func takes a GCC clone's source name.
    let (ok, out, err) = recorded(
        "topstalls",
        "kernels",
        &["--func", "matmul", "-n", "0", "--format", "json"],
    );
    assert!(ok, "{err}");
    let t: Value = serde_json::from_str(&out).unwrap();
    let rows = t.as_array().unwrap();
    assert!(!rows.is_empty(), "{t}");
    assert!(rows.iter().all(|r| r["function"] == "matmul"), "{t}");
    let (ok, out, err) = recorded("whatcg", "zen5-5k-a/lzfind", &["--func", "match_len"]);
    assert!(ok, "{err}");
    assert!(out.contains("match_len.constprop.0 in"), "{out}");
    let (ok, _, err) = recorded("topstalls", "kernels", &["--func", "no_such_function"]);
    assert!(
        !ok && err.contains("no function 'no_such_function'"),
        "{err}"
    );
}

/// Known answers (datasets/workloads/culprits.c): chains of dependent
/// divides and of dependent multiplies stall on the loop-carried
/// dependency through the divider / the multiplier.
#[test]
fn divide_and_multiply_chain_culprits() {
    for (func, mnemonic) in [("divchain", "div "), ("mulchain", "imul ")] {
        let (ok, out, err) = recorded("whatcg", "culprits", &["--func", func, "--format", "json"]);
        assert!(ok, "{err}");
        let w: Value = serde_json::from_str(&out).unwrap();
        let top = w["categories"]
            .as_array()
            .unwrap()
            .iter()
            .max_by(|a, b| {
                a["percent"][0]
                    .as_f64()
                    .unwrap()
                    .total_cmp(&b["percent"][0].as_f64().unwrap())
            })
            .unwrap();
        assert_eq!(top["code"], "dep", "{func}: {w}");
        assert!(top["percent"][0].as_f64().unwrap() > 50.0, "{func}: {w}");
        let insn = address_of("culprits", func, |t| t.starts_with(mnemonic));
        let c = culprits_json("culprits", &insn);
        assert_eq!(c["culprits"][0]["code"], "dep", "{func}: {c}");
        assert!(
            c["culprits"][0]["name"]
                .as_str()
                .unwrap()
                .contains("loop-carried"),
            "{func}: {c}"
        );
    }
}

/// Known answer: the same loop over random bytes mispredicts its
/// data-dependent branch; over sorted bytes it does not. Without a PMU the
/// evidence is where the samples land: one past the branch's targets (the
/// refetch) for random bytes, after the byte load for sorted ones. whatcg
/// leads with mispredict for the first and not for the second, and the
/// hottest stalled instruction of branch_random has mispredict first.
#[test]
fn random_branch_mispredicts_sorted_does_not() {
    let leading = |func: &str| {
        let (ok, out, err) = recorded("whatcg", "culprits", &["--func", func, "--format", "json"]);
        assert!(ok, "{err}");
        let w: Value = serde_json::from_str(&out).unwrap();
        w["leading"].as_str().unwrap().to_string()
    };
    assert_eq!(leading("branch_random"), "mispredict");
    assert_ne!(leading("branch_sorted"), "mispredict");
    let (ok, out, err) = recorded("topstalls", "culprits", &["-n", "0", "--format", "json"]);
    assert!(ok, "{err}");
    let rows: Value = serde_json::from_str(&out).unwrap();
    let hottest = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["function"] == "branch_random")
        .unwrap();
    assert_eq!(hottest["culprits"][0][0], "mispredict", "{hottest}");
}

/// Known answer: a random pointer chase over 64 MiB stalls on D-cache/DTLB
/// misses. Every sample of its loop sits on the chasing load, so the loop's
/// frequency is only an upper bound (what it would be if every load hit
/// L1); the chain's static dependency can explain the cycles only at that
/// bound, the misses at any frequency below it. So the load's first culprit
/// is dcache and whatcg names dcache as the category that may explain the
/// most, with the frequency-unknown remainder keeping minimums at 100 %.
#[test]
fn pointer_chase_culprit() {
    let (ok, out, err) = recorded(
        "whatcg",
        "culprits",
        &["--func", "chase", "--format", "json"],
    );
    assert!(ok, "{err}");
    let w: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(w["leading"], "dcache", "{w}");
    let minimums: f64 = w["categories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["percent"][0].as_f64().unwrap())
        .sum();
    assert!((minimums - 100.0).abs() < 1.0, "{w}");
    assert!(w["sampling_error"].as_f64().unwrap() < 2.0, "{w}");
    let load = address_of("culprits", "chase", |t| t.starts_with("mov (%rdi,%rdx,8)"));
    let c = culprits_json("culprits", &load);
    assert_eq!(c["row"]["freq_upper_bound"], true, "{c}");
    assert_eq!(c["culprits"][0]["code"], "dcache", "{c}");
    assert_eq!(c["culprits"][0]["share"][1].as_f64().unwrap(), 1.0, "{c}");
    assert_eq!(c["share_of"], "all its cycles", "{c}");
}

/// Known answer: a 4-byte store then an 8-byte load of the same address
/// cannot forward (the load is not contained in the store) and waits for
/// the store to commit. The load's culprit is the forwarding failure naming
/// the store, D-cache ruled out, and whatcg's leading category is it.
#[test]
fn store_forwarding_failure_culprit() {
    let (ok, out, err) = recorded(
        "whatcg",
        "culprits",
        &["--func", "forward", "--format", "json"],
    );
    assert!(ok, "{err}");
    let w: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(w["leading"], "fwdfail", "{w}");
    let load = address_of("culprits", "forward", |t| t.starts_with("mov (%rdi),%rax"));
    let c = culprits_json("culprits", &load);
    assert_eq!(c["culprits"][0]["code"], "fwdfail", "{c}");
    assert!(
        c["culprits"][0]["evidence"]
            .as_str()
            .unwrap()
            .contains("mov %eax,(%rdi)"),
        "{c}"
    );
    assert!(
        c["ruled_out"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["code"] == "dcache"),
        "{c}"
    );
}

/// A report piped into a reader that stops early (`dcpi cpi ... | head`)
/// ends quietly: no panic about a broken pipe.
#[test]
fn report_into_a_closed_pipe_ends_quietly() {
    use std::io::Read;
    let mut child = dcpi()
        .args(["cpi", "--all", "--db", "datasets/analyzer/kernels.db"])
        // JSON: 150 KB, more than a pipe holds, so a write must fail.
        .args([
            "--symfs",
            "datasets/analyzer",
            "--image",
            "kernels",
            "--format",
            "json",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // stdout is closed here; the rest of the report meets a broken pipe.
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    child.wait().unwrap();
    // (A panic reads "internal error" through dcpi's panic hook.)
    assert!(
        !err.contains("panicked") && !err.contains("internal error"),
        "{err}"
    );
}

/// Known answer (datasets/workloads/icache.c): 4096 functions called in an
/// order striding over 1 MiB of code miss the I-cache on nearly every
/// call; the same calls to 4 functions do not. Samples pile up on the
/// functions' entries (the calls wait for the lines), so whatcg leads with
/// icache for the wide sweep (process icache#1), the hottest stalled
/// instruction's first culprit is icache, and the narrow control
/// (icache#2) has next to no I-cache stall.
#[test]
fn code_footprint_beyond_the_icache() {
    let whatcg = |appid: &str| {
        let (ok, out, err) = recorded("whatcg", "icache", &["--appid", appid, "--format", "json"]);
        assert!(ok, "{err}");
        serde_json::from_str::<Value>(&out).unwrap()
    };
    let icache_max = |w: &Value| {
        w["categories"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["code"] == "icache")
            .map(|c| c["percent"][1].as_f64().unwrap())
            .sum::<f64>()
    };
    let wide = whatcg("icache#1");
    assert_eq!(wide["leading"], "icache", "{wide}");
    assert!(icache_max(&wide) > 15.0, "{wide}");
    let narrow = whatcg("icache#2");
    assert_ne!(narrow["leading"], "icache", "{narrow}");
    assert!(icache_max(&narrow) < 5.0, "{narrow}");
    let (ok, out, err) = recorded(
        "topstalls",
        "icache",
        &["--appid", "icache#1", "-n", "1", "--format", "json"],
    );
    assert!(ok, "{err}");
    let rows: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rows[0]["culprits"][0][0], "icache", "{rows}");
}

/// Extra sampled events confirm or rule out a dynamic candidate. No PMU
/// here, so the profile is the recorded culprits one with a synthetic
/// `branch-misses` event added: samples one past branch_random's taken
/// target (where a refetch lands), none in branch_sorted. The target's
/// mispredict candidate is confirmed; branch_sorted's is ruled out.
#[test]
fn extra_events_confirm_or_rule_out_culprits() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("culprits.db");
    std::fs::copy(data().join("culprits.db"), &db).unwrap();
    // One past the taken target `add $1,%rax`: the compare after it.
    let landing = address_of("culprits", "branch_random", |t| {
        t.starts_with("cmp %rsi,%rax")
    });
    let landing = u64::from_str_radix(landing.trim_start_matches("0x"), 16).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(&format!(
        "INSERT INTO events (id, run_id, position, requested, used, type, config, precise, unit, period, samples, total_period)
             VALUES (2, 1, 1, 'branch-misses', 'branch-misses', 0, 5, 0, 'events', 10000, 300, 3000000);
         INSERT INTO counts (epoch_id, process_id, image_id, offset, event_id, count)
             SELECT epoch_id, process_id, image_id, offset, 2, 300 FROM counts
             WHERE event_id = 1 AND image_id = 1 AND offset = {landing} LIMIT 1;"
    ))
    .unwrap();
    drop(conn);
    let culprits = |addr: &str| {
        let db = db.to_str().unwrap();
        let (ok, out, err) = run(&[
            "culprits",
            "--db",
            db,
            "--symfs",
            "datasets/analyzer",
            "--image",
            "culprits",
            "--insn",
            addr,
            "--format",
            "json",
        ]);
        assert!(ok, "{err}");
        serde_json::from_str::<Value>(&out).unwrap()
    };
    let target = address_of("culprits", "branch_random", |t| {
        t.starts_with("add $1,%rax")
    });
    let c = culprits(&target);
    let mispredict = c["culprits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["code"] == "mispredict")
        .unwrap_or_else(|| panic!("{c}"));
    assert!(
        mispredict["evidence"]
            .as_str()
            .unwrap()
            .contains("confirmed by 300 branch-misses"),
        "{c}"
    );
    let sorted_test = address_of("culprits", "branch_sorted", |t| t.starts_with("test "));
    let c = culprits(&sorted_test);
    assert!(
        c["ruled_out"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["code"] == "mispredict"
                && r["why"]
                    .as_str()
                    .unwrap()
                    .contains("branch-misses was sampled")),
        "{c}"
    );
}

/// matchers' `bloom_has`: a loop calling a hash through a table of
/// pointers, left by an early-out exit (7.5 M of 9.6 M calls) whose
/// refills are counted. The exit solved to zero under a weak estimate
/// above its floor, and the loop (no direct call to link to its callees)
/// rose to an upper bound at +990 %; now the floor holds and the loop
/// takes its total from its samples.
#[test]
fn a_loop_calling_through_pointers_takes_its_total_and_keeps_its_exit() {
    for set in ["zen4", "zen4-5k-a", "zen4-5k-d"] {
        let v = runs_cpi(set, "matchers", "bloom_has");
        let exits = v.over("0x1980", 7.5292e6);
        let trips = v.over("0x194f", 18.809e6);
        assert!(
            exits > 0.5 && exits < 2.0,
            "{set}: early exits at {exits:.2}x"
        );
        assert!(trips > 0.5 && trips < 3.0, "{set}: trips at {trips:.2}x");
    }
}

/// btree's `find_index` on zen4-5k-b: its callers' links raise its entries
/// to where one refill each would take more than all its loop's cycles
/// (its exit, about five trips an entry, is partly predicted). The loop
/// then went to conservation, which left it at a trip an entry (-88 %);
/// then its trips took the middle of what the loop's cycles allow (0.79x);
/// now its cycles less half a refill an entry (0.63x under those entries:
/// see [`a_loop_whose_exit_refills_land_out_of_sight_pays_half_a_refill_an_entry`]).
#[test]
fn an_overfilled_loop_keeps_its_trips() {
    let v = set_cpi("zen4-5k-b", "btree", "find_index");
    let trips = freq_over(&v, "0x146b", 4.0 * 101.67e6);
    assert!(trips > 0.5 && trips < 2.0, "header at {trips:.2}x");
    let b = block_at(&v, "0x146b");
    let why = b["confidence_why"].as_str().unwrap_or("");
    assert!(why.contains("exit's resolution per entry"), "{why}");
}

/// kernels' `isort`: the outer loop's latch sits two and three
/// instructions past the inner loop's two exits, and its samples are the
/// exits' refill aftermath (4.6 M runs read for 1.0 M on Zen 4, the inner
/// loop's total -58 % between bounds). The refills counted at the exits
/// now give the entries, and the inner loop its total.
#[test]
fn a_loop_entered_past_its_exits_refills_takes_them_for_its_entries() {
    for set in ["zen4", "zen4-5k-a", "zen4-5k-b"] {
        let v = runs_cpi(set, "kernels", "isort");
        let outer = v.over("0x15bd", 1.016e6);
        let inner = v.over("0x15ad", 33.503e6);
        assert!(
            outer > 0.7 && outer < 1.4,
            "{set}: outer loop at {outer:.2}x"
        );
        assert!(
            inner > 0.7 && inner < 1.4,
            "{set}: inner loop at {inner:.2}x"
        );
    }
}

/// numeric's BFS: the edge loop's visited test is an `if` without an
/// `else` (17 % of the trips take the arm; the join is the other way and
/// also runs after the arm). Counted by block, the join made the test a
/// coin toss, whose refills the counted ones could not bear out: the loop
/// had no total and fell to its arm's count (-85 % on every set). By the
/// runs through the branch it keeps its total (its samples mostly a
/// missing load's, counted as trips: from above).
#[test]
fn an_if_without_else_is_counted_by_its_ways_not_its_blocks() {
    for set in ["zen4", "zen4-5k-a", "zen4-5k-f"] {
        let v = runs_cpi(set, "numeric", "bfs");
        let trips = v.over("0x1810", 191.45e6);
        assert!(
            trips > 0.6 && trips < 3.0,
            "{set}: edge loop at {trips:.2}x"
        );
    }
}

/// codec's `rle_encode` ends each run with its inner loop's exit, taken
/// after a data-dependent number of matching bytes: nearly every exit
/// mispredicts, and the run-end block's refetch samples count the runs.
/// On Zen 4 a mispredict leaves ~12 cycles of samples at its target
/// (`refetch_cycles`; the recorded exits read 10.9-12.8 a run against
/// callgrind, `benches/refetch_cycles.py`), not the 13-cycle penalty:
/// counted by the penalty the runs read -14..-15 % on every Zen 4 set.
/// Truth: 12.3 M runs a process (callgrind).
#[test]
fn a_mispredicted_exit_is_counted_by_its_refetch_cycles() {
    for set in ["zen4", "zen4-5k-a", "zen4-5k-c"] {
        let v = runs_cpi(set, "codec", "rle_encode");
        let ends = v.over("0x13fb", 12.295e6);
        assert!(ends > 0.9 && ends < 1.1, "{set}: run ends at {ends:.3}x");
    }
}

/// kernels' `matmul` inner loop runs at its port bound, the kind of code a
/// busy SMT sibling on the host slows most. Recorded beside one (core
/// shares 0.60-0.98 on zen4-5k-e, 0.80-1.00 on -f) it read 1.28x and 1.15x
/// its truth until best cases were taken at the run's measured share;
/// on the quiet -g it must stay where it was. Truth: 524.3 M trips a run.
#[test]
fn a_shared_core_slows_throughput_bound_loops_not_their_counts() {
    for set in ["zen4-5k-e", "zen4-5k-f", "zen4-5k-g"] {
        let v = set_cpi(set, "kernels", "matmul");
        let trips = freq_over(&v, "0x1508", 4.0 * 524.288e6);
        assert!(
            trips > 0.9 && trips < 1.1,
            "{set}: matmul's inner loop at {trips:.3}x"
        );
    }
}

/// A class's estimate is one measure, though each block of the class
/// carries it into the solve: matmul's j loop (its header and its latch
/// past the k loop, one class, 20-45 samples, 0.50-0.80x of its truth on
/// the 5 kHz sets) read "high" because the least squares' posterior took
/// its two copies for two measures (an error over sqrt(2)).
#[test]
fn a_class_estimate_shared_by_its_blocks_is_one_measure() {
    for set in [
        "zen4-5k-a",
        "zen4-5k-b",
        "zen4-5k-c",
        "zen4-5k-d",
        "zen4-5k-e",
        "zen4-5k-f",
        "zen4-5k-g",
    ] {
        let v = set_cpi(set, "kernels", "matmul");
        for start in ["0x14f8", "0x1550"] {
            let b = block_at(&v, start);
            assert_ne!(b["confidence"], "high", "{set}: matmul's j loop {b}");
        }
    }
}

/// A block calling a straight-line leaf is modeled with the call and its
/// return back to back unless a loop path's model ran the leaf inline:
/// btree's `main` loop header divides `next_random`'s result by a
/// constant, waits on the leaf's chain, and read 1.3-1.6x at "high" on
/// six sets from a model blind to that chain. It weighs, and is as sure,
/// as a block calling opaque code, and says why; its best case is the
/// chain from the leaf's result (9 cycles of mul/shr/imul/sub), its own
/// model (5.9) the top of its range: 12 M runs read 0.89-1.08x, not
/// 1.17-1.45x.
#[test]
fn a_block_calling_a_leaf_its_model_runs_apart_is_unsure() {
    for set in [
        "zen4-5k-a",
        "zen4-5k-b",
        "zen4-5k-e",
        "zen4-5k-f",
        "zen4-5k-g",
        "zen4-5k-h",
    ] {
        let v = set_cpi(set, "btree", "main");
        let b = block_at(&v, "0x111e");
        assert_ne!(b["confidence"], "high", "{set}: {b}");
        let why = b["confidence_why"].as_str().unwrap_or_default();
        assert!(
            why.contains("calls code") || why.contains("after a leaf it calls"),
            "{set}: {b}"
        );
        // 3 M trips a run, four runs.
        let r = freq_over(&v, "0x111e", 12.0e6);
        assert!((0.8..1.15).contains(&r), "{set}: {r:.2} of the truth");
    }
}

/// A loop bound by a chain its trips carry, run a few trips an entry
/// (trips x instructions within the reorder buffer), overlaps the next
/// entry's trips, their chain started afresh: a trip may take less than
/// its chain, and an estimate at the chain reads low however many samples
/// it has. matchers' `hash_c` (xor/imul, 8 trips a call) read 0.37-0.48x
/// and dynprog's `format_base` digit loop (a division chain) 0.39-0.49x,
/// both at "high", on every Zen 4 set.
#[test]
fn a_short_loop_carrying_a_chain_is_unsure() {
    for set in ["zen4", "zen4-5k-a", "zen4-5k-e"] {
        for (name, func, start) in [
            ("matchers", "hash_c", "0x1680"),
            ("dynprog", "format_base", "0x184d"),
        ] {
            let v = set_cpi(set, name, func);
            let b = block_at(&v, start);
            assert_eq!(b["confidence"], "low", "{set} {func}: {b}");
            let why = b["confidence_why"].as_str().unwrap_or_default();
            assert!(why.contains("few trips an entry"), "{set} {func}: {b}");
        }
    }
}

/// Loops whose code states their trip count, hand-checked against the C
/// sources and callgrind's counts (every one of the 39 such loops of the
/// recorded workloads is exact there). hashtab's `main` keeps its array
/// pointers in %r8 and %r9 across its calls to `next_key`, `insert` and
/// `contains`, which write neither (gcc's IPA register allocation): both
/// of its loops over 20,000 keys are counted. A probe loop that runs to an
/// empty slot, and the rounds loop whose bound comes from argv, are not.
#[test]
fn loops_that_state_their_trip_count() {
    use dcpi_analyze::function_code::callee_clobbers;
    use dcpi_analyze::register_values::CALLER_SAVED;
    let trips = |name: &str, func: &str| -> Vec<Option<u64>> {
        let image = ElfImage::open(data().join(name).to_str().unwrap(), None).unwrap();
        let cfg = cfg_of(&image, func);
        let mut loops: Vec<_> = cfg.loops.iter().map(|l| (l.header, l.trips)).collect();
        loops.sort();
        loops.into_iter().map(|l| l.1).collect()
    };
    assert_eq!(
        trips("hashtab", "main"),
        vec![None, Some(20000), Some(20000)]
    );
    assert_eq!(trips("hashtab", "insert"), vec![None]);
    assert_eq!(trips("hashtab", "contains"), vec![None]);
    // for (step = 0; step < 200000; step++) inside the rounds loop; the
    // heap of 8191 entries built and checked; 48 entities.
    let eventsim = trips("eventsim", "main");
    let stated: Vec<u64> = eventsim.iter().flatten().copied().collect();
    assert_eq!(stated, vec![8191, 48, 200000, 8191], "{eventsim:?}");
    assert!(eventsim.contains(&None), "the rounds loop: {eventsim:?}");
    // matmul's i loop and its j loop (four columns a pass: 16); the k
    // loop's bound is a pointer set from the row's, not a constant.
    assert_eq!(trips("kernels", "matmul"), vec![Some(64), Some(16), None]);

    let image = ElfImage::open(data().join("hashtab").to_str().unwrap(), None).unwrap();
    let at = |func: &str| image.find_function(func).unwrap().start;
    let r8_r9 = 0b11 << 8;
    assert_eq!(callee_clobbers(&image, at("next_key"), 2) & r8_r9, 0);
    assert_eq!(callee_clobbers(&image, at("contains"), 2) & r8_r9, 0);
    let memset = cfg_of(&image, "main")
        .insns
        .iter()
        .find(|d| d.text.contains("memset@plt"))
        .map(|d| d.instr.near_branch_target())
        .expect("main calls memset");
    assert_eq!(callee_clobbers(&image, memset, 2), CALLER_SAVED);

    // `dcpi cpi` shows them, in text and JSON.
    let (ok, out, err) = recorded("cpi", "hashtab", &["--func", "main", "--format", "json"]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    // Three loops, the inner two stated, each with its header's trips.
    let loops = v["loops"].as_array().unwrap();
    assert_eq!(loops.len(), 3, "{out}");
    assert_eq!(
        loops.iter().filter(|l| l["trips_stated"] == 20000).count(),
        2,
        "{out}"
    );
    assert!(loops
        .iter()
        .all(|l| l["depth"].as_u64().unwrap() >= 1 && l["trips_total"].is_number()));
    let (ok, out, err) = recorded("cpi", "hashtab", &["--func", "main", "--confidence", "low"]);
    assert!(ok, "{err}");
    assert_eq!(
        out.matches("20000 runs an entry (its code says)").count(),
        2,
        "{out}"
    );
}
