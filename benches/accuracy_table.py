#!/usr/bin/env python3
"""The BENCHMARKS.md accuracy table: runs `dcpi accuracy` on every recorded
workload in datasets/analyzer and prints one markdown row per estimator
(dcpi, dcpi at medium+ confidence, naive), then the means of unscaled ±10,
scaled ±10 and scaled ±25 for the dcpi estimator, and of its mean
|ln(estimate/true)| (capped at ln 4: the measure that moves with every
estimate, where the shares jump as one crosses a tolerance).

Usage: benches/accuracy_table.py [--set HOST] [DCPI]   (default target/release/dcpi)

--set HOST reads the profiles datasets/analyzer/record_profiles.sh took of
the same binaries on another host (datasets/analyzer/HOST/NAME.db); the
model is the one of the CPU each profile recorded.
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
args = sys.argv[1:]
PROFILES = ""
if args[:1] == ["--set"]:
    PROFILES, args = args[1], args[2:]
DCPI = args[0] if args else os.path.join(ROOT, "target/release/dcpi")
NAMES = ["kernels", "btree", "hashtab", "codec", "msort"]


def pct(v):
    return f"{100 * v:.1f}"


def row(first, label, e):
    cells = [first, label] + [pct(x) for x in e["within"] + e["within_scaled"]] + [f"{e['scale']:.3f}", f"{e['mean_log_error']:.3f}"]
    return "| " + " | ".join(cells) + " |"


means = [0.0, 0.0, 0.0, 0.0]
# Per confidence level: its share of the samples, and the samples within
# ±10 and ±25 % (unscaled), each workload weighted alike.
levels = {}
for name in NAMES:
    data = os.path.join(ROOT, "datasets/analyzer")
    db = os.path.join(data, PROFILES, f"{name}.db")
    out = subprocess.run(
        [DCPI, "accuracy", "--db", db, "--callgrind", f"{data}/{name}.callgrind",
         "--symfs", data, "--image", name, "--format", "json"],
        check=True, capture_output=True, text=True,
    ).stdout
    d = json.loads(out)
    dcpi = next(e for e in d["estimators"] if e["estimator"] == "dcpi")
    naive = next(e for e in d["estimators"] if e["estimator"] == "naive")
    samples = d["samples"]
    print(row(f"{name} ({samples / 1000:.1f} K samples)", "dcpi", dcpi))
    if d.get("dcpi_confident"):
        share = 100 * d["confident_share"]
        print(row("", f"dcpi, medium+ ({share:.0f} % of samples)", d["dcpi_confident"]))
    print(row("", "naive", naive))
    for e in d.get("by_confidence", []):
        share = e["share"]
        lv = levels.setdefault(e["estimator"], [0.0, 0.0, 0.0])
        lv[0] += share / len(NAMES)
        lv[1] += share * e["within"][1] / len(NAMES)
        lv[2] += share * e["within"][2] / len(NAMES)
    means = [m + v for m, v in zip(means, [dcpi["within"][1], dcpi["within_scaled"][1], dcpi["within_scaled"][2], dcpi["mean_log_error"]])]
print()
print("means (dcpi): unscaled ±10 %s, scaled ±10 %s, scaled ±25 %s, |ln e| %.3f" % (tuple(pct(m / len(NAMES)) for m in means[:3]) + (means[3] / len(NAMES),)))
for name in ["dcpi (high)", "dcpi (medium)", "dcpi (low)"]:
    if name in levels:
        share, w10, w25 = levels[name]
        print("%s: %s %% of the samples, %s %% of them within ±10, %s %% within ±25 (unscaled)"
              % (name, pct(share), pct(w10 / share) if share else "-", pct(w25 / share) if share else "-"))
