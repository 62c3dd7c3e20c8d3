#!/usr/bin/env python3
"""Where a block's best-case cycles sit (M, as `dcpi cpi` reports it per
instruction: best_cpi) against where its charged samples are, over every
block with at least 50 clean samples (charged less refetch suspects) of
the fifteen recorded profiles: the sample-weighted total variation
distance between the two shares (0: M is where the samples are; 1:
disjoint), for blocks outside loops (straight) and in loops apart.

It judges the M_i definition alone, independent of the estimator: a
placement closer to the samples is not by itself a better estimate (the
estimator sums M over the clean instructions only; see BENCHMARKS.md,
session 23). Usage: benches/m_placement.py [DCPI] [-v]   (-v: each
straight block with its two shares)
"""
import json, os, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
args = [a for a in sys.argv[1:] if a != "-v"]
VERBOSE = "-v" in sys.argv
DCPI = args[0] if args else os.path.join(ROOT, "target/release/dcpi")
DATA = os.path.join(ROOT, "datasets/analyzer")
totals = {"straight": [0.0, 0.0], "loop": [0.0, 0.0]}
for host in ["", "zen4", "zen3"]:
    for name in ["kernels", "btree", "hashtab", "codec", "msort"]:
        db = os.path.join(DATA, host, f"{name}.db")
        d = json.loads(subprocess.check_output(
            [DCPI, "cpi", "--db", db, "--symfs", DATA, "--image", name, "--all", "--format", "json"],
            stderr=subprocess.DEVNULL))
        for f in d["functions"]:
            by_block = {}
            for i in f["instructions"]:
                by_block.setdefault(i["block"], []).append(i)
            for b in f["blocks"]:
                ins = by_block.get(b["index"], [])
                clean = [max(0.0, i["charged_samples"] - i["refetch_samples"]) for i in ins]
                m = [i["best_cpi"] or 0.0 for i in ins]
                s, mm = sum(clean), sum(m)
                if s < 50 or mm <= 0 or len(ins) < 2:
                    continue
                tvd = sum(abs(c / s - x / mm) for c, x in zip(clean, m)) / 2
                kind = "loop" if b["loops"] else "straight"
                totals[kind][0] += s
                totals[kind][1] += s * tvd
                if VERBOSE and kind == "straight":
                    print(host or "golden-cove", name, f["function"], f"b{b['index']}", round(s), f"{tvd:.2f}",
                          [round(c / s, 2) for c in clean], [round(x / mm, 2) for x in m])
for kind, (w, t) in totals.items():
    print(f"{kind} blocks: {w:.0f} clean samples, weighted distance {t / max(w, 1):.3f}")
