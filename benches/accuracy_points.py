#!/usr/bin/env python3
"""Where the target measure loses its points: the share of samples within
±10 % of callgrind's count once one global scale is fitted per cell (the
sample-weighted median of true/estimated, as `dcpi accuracy` fits it),
averaged over every cell of the five tuning workloads on every recorded
set (55 cells; the "over all cells: scaled ±10" figure of
accuracy_sets.py --shares). Each function (or block, with --blocks) is
charged the points its samples outside ±10 % cost the mean, in all and
per set (with --blocks: the block's scaled error on each set instead),
largest first.

A block whose samples are few but whose error sits in every set is a
mechanism; one that loses on one or two sets is that recording's noise
(BENCHMARKS.md, session 24: recordings of one binary differ more than
most changes do).

Usage: benches/accuracy_points.py [--blocks] [--top N] [DCPI]"""
import math
import os
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
sys.path.insert(0, os.path.join(ROOT, "benches"))
from freq_blocks import recorded_cells  # noqa: E402

NAMES = ["kernels", "btree", "hashtab", "codec", "msort"]
args = sys.argv[1:]
by_block, top = False, 25
while args and args[0].startswith("--"):
    if args[0] == "--blocks":
        by_block, args = True, args[1:]
    elif args[0] == "--top":
        top, args = int(args[1]), args[2:]
    else:
        sys.exit(__doc__)
dcpi = args[0] if args else os.path.join(ROOT, "target/release/dcpi")
data = os.path.join(ROOT, "datasets/analyzer")


def weighted_median(pairs):
    pairs = sorted(pairs)
    half, acc = sum(w for _, w in pairs) / 2, 0.0
    for x, w in pairs:
        acc += w
        if acc >= half:
            return x
    return 1.0


cells = list(recorded_cells(dcpi, NAMES, data))
lost = defaultdict(lambda: defaultdict(float))
error = defaultdict(dict)
means = []
for name, s, functions, truth in cells:
    rows = []
    for f in functions:
        ev = f.get("time_event") or "cpu-clock"
        for i in f["instructions"]:
            n = i["samples"].get(ev, 0)
            if n:
                key = (name, f["function"], i["block"] if by_block else None)
                rows.append((key, n, i["freq"] or 0.0, truth.get(int(i["addr"], 16), 0)))
    total = sum(r[1] for r in rows) or 1
    scale = weighted_median([(t / e, n) for _, n, e, t in rows if t > 0 and e > 0])
    inside = 0
    for key, n, e, t in rows:
        if t > 0 and abs(e * scale / t - 1) <= 0.10:
            inside += n
        else:
            lost[key][s] += 100 * n / total / len(cells)
        if t > 0 and e > 0:
            error[key].setdefault(s, 100 * (e * scale / t - 1))
    means.append(100 * inside / total)
sets = sorted({s for _, s, _, _ in cells})
print(f"{len(cells)} cells: scaled ±10 % {sum(means) / len(means):.1f} % of the samples")
what = "scaled error %" if by_block else "points"
print(f"points  where  ({what} per set: " + " ".join(sets) + ")")
for key, per in sorted(lost.items(), key=lambda kv: -sum(kv[1].values()))[:top]:
    name, fn, b = key
    where = f"{name}/{fn}" + (f" block {b}" if b is not None else "")
    if by_block:
        errs = " ".join(f"{error[key][s]:+.0f}" if s in error[key] else "-" for s in sets)
    else:
        errs = " ".join(f"{per[s]:.2f}" for s in sets)
    print(f"  {sum(per.values()):5.2f}  {where}  ({errs})")
