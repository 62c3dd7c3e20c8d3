//! `dcpi model` end to end: known answers on the bundled machine
//! descriptions, the JSON contract, inputs from hex, assembly and ELF images.

mod common;

use common::*;
use serde_json::Value;

fn model(args: &[&str]) -> Value {
    let out = dcpi()
        .args(["model", "--format", "json"])
        .args(args)
        .output()
        .unwrap();
    assert_success(&out);
    serde_json::from_slice(&out.stdout).unwrap()
}

fn cpi(v: &Value) -> f64 {
    v["cycles_per_iteration"].as_f64().unwrap()
}

/// Every stall's kind over the block's instructions, in order.
fn stall_kinds(v: &Value) -> Vec<&str> {
    v["insns"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|i| i["stalls"].as_array().unwrap().iter())
        .filter_map(|s| s["kind"].as_str())
        .collect()
}

#[test]
fn json_contract_and_known_answers() {
    let _g = live(); // calibrate times the host: nothing else may run meanwhile
    let v = model(&["--hex", "48 0f af c3", "--cpu", "zen5"]);
    assert!((cpi(&v) - 3.0).abs() < 0.1, "{v}");
    // How the figures were measured: an imul chain settles.
    let sim = &v["simulation"];
    assert_eq!(sim["steady"], true, "{v}");
    assert!(sim["measured"].as_u64().unwrap() <= sim["iterations"].as_u64().unwrap());
    let i = &v["insns"][0];
    for field in [
        "addr",
        "text",
        "class",
        "ports",
        "latency",
        "uops",
        "m",
        "head_cycles",
        "stalls",
        "dispatch",
        "retire",
    ] {
        assert!(!i[field].is_null(), "missing {field}: {i}");
    }
    assert_eq!(i["text"], "imul %rbx,%rax");
    assert_eq!(i["latency"], 3);
    assert_eq!(v["bottleneck"], "dependency chain");
    assert!(!v["timeline"].as_array().unwrap().is_empty());
    let intel = model(&["--hex", "48 0f af c3", "--cpu", "zen5", "--intel"]);
    assert_eq!(intel["insns"][0]["text"], "imul rax,rbx");
}

#[test]
fn vector_reasons_reach_the_json_and_the_text() {
    // Six pxor zero idioms: Zen 5 dispatches six instructions on vector
    // registers a cycle (measured, session 65): 1.00 cycles a copy, and
    // the reason is named.
    let six = "66 0f ef db 66 0f ef ed 66 0f ef f6 66 0f ef ff 66 45 0f ef c0 66 45 0f ef c9";
    let v = model(&["--hex", six, "--cpu", "zen5"]);
    assert!((cpi(&v) - 1.0).abs() < 0.01, "{v}");
    let kinds = stall_kinds(&v);
    assert!(kinds.contains(&"vector_dispatch"), "{kinds:?}");
    // A legacy SSE write after a 256-bit instruction: the note says why.
    let out = dcpi()
        .args(["model", "--cpu", "zen5", "--hex"])
        .arg("c4 e3 5d 38 e0 01 66 41 0f 6f 2b c5 d1 fe ed")
        .output()
        .unwrap();
    assert_success(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("upper halves dirty"), "{text}");
    assert!(text.contains("dep %xmm5 from [1]"), "{text}");
}

#[test]
fn non_temporal_streams_name_the_memory_in_the_json_and_the_text() {
    // Two vmovntdq a line, the pointer moving a line a trip: Zen 5 writes
    // a line every 6 cycles (measured 6.0-7.5, session 66).
    let hex = "c5 fd e7 07 c5 fd e7 47 20 48 83 c7 40";
    let v = model(&["--hex", hex, "--cpu", "zen5", "--loop"]);
    assert!((cpi(&v) - 6.0).abs() < 0.01, "{v}");
    assert_eq!(v["bottleneck"], "memory writes (non-temporal stores)");
    assert!(
        (v["bounds"]["memory_writes"].as_f64().unwrap() - 6.0).abs() < 0.01,
        "{v}"
    );
    let kinds = stall_kinds(&v);
    assert!(kinds.contains(&"memory_write"), "{kinds:?}");
    let out = dcpi()
        .args(["model", "--cpu", "zen5", "--loop", "--hex", hex])
        .output()
        .unwrap();
    assert_success(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("memory writes 6.00"), "{text}");
    assert!(
        text.contains("non-temporal store: its lines go to memory"),
        "{text}"
    );
}

#[test]
fn blocks_from_assembly_and_from_an_image() {
    let _g = live(); // calibrate times the host: nothing else may run meanwhile
    let dir = tempdir();
    let asm = dir.path().join("b.s");
    std::fs::write(
        &asm,
        "loop:\n add %rbx, %rax\n imul %rax, %rcx\n dec %rdx\n jnz loop\n",
    )
    .unwrap();
    let v = model(&[
        "--asm",
        asm.to_str().unwrap(),
        "--loop",
        "--cpu",
        "golden-cove",
    ]);
    assert_eq!(v["instructions"], 4);
    assert!((cpi(&v) - 3.0).abs() < 0.1, "imul chain through rcx: {v}");
    // The same loop in Intel syntax (llvm-mca's usual input), with --intel.
    let intel = dir.path().join("i.s");
    std::fs::write(
        &intel,
        "loop:\n add rax, rbx\n imul rcx, rax\n dec rdx\n jnz loop\n",
    )
    .unwrap();
    let path = intel.to_str().unwrap();
    let vi = model(&["--asm", path, "--intel", "--loop", "--cpu", "golden-cove"]);
    assert_eq!(vi["insns"][1]["text"], "imul rcx,rax");
    assert_eq!(vi["cycles_per_iteration"], v["cycles_per_iteration"]);
    let at_t = dcpi().args(["model", "--asm", path]).output().unwrap();
    let err = String::from_utf8_lossy(&at_t.stderr);
    assert!(
        !at_t.status.success() && err.contains("give --intel"),
        "{err}"
    );
    // The whole main of SLEEPY's loop benchmark, by name.
    let v = model(&[
        "--image",
        &workload("loop"),
        "--func",
        "main",
        "--cpu",
        "golden-cove",
    ]);
    assert!(v["instructions"].as_u64().unwrap() > 5);
    let first = v["insns"][0]["addr"].as_u64().unwrap();
    assert!(first > 0x1000, "ELF virtual addresses: {first:#x}");
    // Stripped, its symbols in a separate debug file (.gnu_debuglink):
    // main by name again, the same code.
    let split = model(&[
        "--image",
        &workload("loop-debuglink"),
        "--func",
        "main",
        "--cpu",
        "golden-cove",
    ]);
    assert_eq!(split["insns"][0]["addr"], v["insns"][0]["addr"], "{split}");
    assert_eq!(split["instructions"], v["instructions"]);
}

#[test]
fn bad_input_is_a_clear_error() {
    let _g = live(); // calibrate times the host: nothing else may run meanwhile
    for (args, msg) in [
        (vec!["--hex", "48 01 zz"], "not hex"),
        (
            vec!["--hex", "48 01 d8 06"],
            "cannot decode the bytes at offset 3",
        ),
        (
            vec!["--hex", "48 01 d8", "--cpu", "pentium"],
            "no machine description 'pentium'",
        ),
        (
            vec!["--image", "/bin/true", "--func", "no_such_function_xyz"],
            "no function 'no_such_function_xyz'",
        ),
    ] {
        let out = dcpi().arg("model").args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(msg), "{args:?}: {err}");
    }
}

#[test]
fn calibrate_measures_the_host_and_writes_a_description() {
    let _g = live();
    let dir = tempdir();
    let out_file = dir.path().join("cal.toml");
    let out = dcpi()
        .args(["calibrate", "--format", "json", "--write"])
        .arg(&out_file)
        .output()
        .unwrap();
    assert_success(&out);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let class = |name: &str| {
        v["classes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["class"] == name)
            .unwrap()
            .clone()
    };
    // Latency-bound chains are robust to a busy sibling thread. The clock
    // each chain is converted with is the fastest add chain timed among its
    // own repeats (a disturbed clock run once read 28 % slow and gave
    // alu 0.99, imul 2.35 in CI); a clock error would still scale both
    // alike, so their ratio is the robust fact.
    let alu = class("alu")["measured_latency"].as_f64().unwrap();
    let imul = class("imul")["measured_latency"].as_f64().unwrap();
    assert!((0.6..1.6).contains(&alu), "{alu}");
    assert!((imul / alu - 3.0).abs() < 0.5, "alu {alu}, imul {imul}");
    // Mechanism probes name a field or class of the description and carry both
    // figures; a chain through add with a zero idiom before it is 1 cycle
    // or 3 whatever the core, never less than the add.
    let mechanisms = v["mechanisms"].as_array().unwrap();
    assert!(mechanisms.len() >= 10, "{mechanisms:?}");
    let toml = std::fs::read_to_string(&out_file).unwrap();
    for m in mechanisms {
        let field = m["field"].as_str().unwrap();
        // A field of its own or a class (written as a table).
        assert!(
            toml.contains(&format!("{field} =")) || toml.contains(&format!("[classes.{field}]")),
            "{field}"
        );
        assert!(m["model_cycles"].as_f64().unwrap() > 0.0, "{m}");
    }
    let zero = mechanisms
        .iter()
        .find(|m| m["field"] == "zero_idioms")
        .unwrap();
    let measured = zero["measured_cycles"].as_f64().unwrap() / alu;
    assert!((0.8..3.5).contains(&measured), "{zero}");
    // The written description is usable by `dcpi model`.
    let m = model(&["--hex", "48 0f af c3", "--cpu", out_file.to_str().unwrap()]);
    assert!(m["machine"].as_str().unwrap().ends_with("-calibrated"));
}

/// Text output of a fixed block on a fixed machine, compared with the file in
/// tests/snapshots (the model is deterministic). After an intended change:
/// UPDATE_SNAPSHOTS=1 cargo test --test model, and review the diff.
#[test]
fn text_report_snapshot() {
    let _g = live(); // calibrate times the host: nothing else may run meanwhile
    let out = dcpi()
        .args([
            "model",
            "--hex",
            "48 0f af c3 48 01 c1 48 8b 17 48 01 d6 48 ff c9 75 ef",
            "--loop",
            "--cpu",
            "golden-cove",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots/model_loop_golden_cove.txt");
    let got = String::from_utf8(out.stdout).unwrap();
    if std::env::var("UPDATE_SNAPSHOTS").is_ok() {
        std::fs::write(&path, &got).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        got, want,
        "dcpi model output changed; if intended, UPDATE_SNAPSHOTS=1 and review the diff"
    );
}
