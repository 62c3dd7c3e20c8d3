#!/usr/bin/env python3
"""Where the 70 recorded cells lose their scaled ±10 % share: per block, the
samples whose estimate, times its cell's fitted scale (the sample-weighted
median of true/estimated, as `dcpi accuracy` fits it), misses callgrind's
count by more than 10 %, as points of the mean over all cells (the figure
accuracy_sets.py prints as "scaled ±10"). Largest first: the blocks a change
must move to reach the 80 % target.

Usage: benches/scaled_losses.py [--top N] [DCPI]
(the five workloads in the means, every recorded set; target/release/dcpi)"""
import json
import os
import subprocess
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "datasets/analyzer")
NAMES = ["kernels", "btree", "hashtab", "codec", "msort"]
sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
sys.path.insert(0, os.path.join(ROOT, "benches"))
from freq_blocks import profile_runs, truth_counts  # noqa: E402


def weighted_median(pairs):
    """The value at half the weight of (value, weight) pairs."""
    pairs = sorted(pairs)
    half, seen = sum(w for _, w in pairs) / 2, 0.0
    for v, w in pairs:
        seen += w
        if seen >= half:
            return v
    return 1.0


def cell_rows(dcpi, name, db, truth):
    """(samples, true count, estimate, function, block) per sampled
    instruction of one cell."""
    out = subprocess.run(
        [dcpi, "cpi", "--all", "--db", db, "--symfs", DATA, "--image", name, "--format", "json"],
        check=True, capture_output=True, text=True,
    ).stdout
    runs = profile_runs(db, os.path.join(DATA, name))
    rows = []
    for f in json.loads(out)["functions"]:
        ev = f.get("time_event") or "cpu-clock"
        for i in f["instructions"]:
            s = i["samples"].get(ev, 0)
            if s:
                t = truth.get(int(i["addr"], 16), 0) * runs
                rows.append((s, t, i["freq"] or 0.0, f["function"], i["block"]))
    return rows


def main():
    args, top = sys.argv[1:], 25
    if args[:1] == ["--top"]:
        top, args = int(args[1]), args[2:]
    if args and args[0].startswith("-"):
        sys.exit(__doc__)
    dcpi = args[0] if args else os.path.join(ROOT, "target/release/dcpi")
    sets = ["."] + sorted(d for d in os.listdir(DATA) if os.path.isdir(os.path.join(DATA, d)))
    lost, shares = defaultdict(float), []
    for name in NAMES:
        truth = truth_counts(os.path.join(DATA, f"{name}.callgrind"), os.path.join(DATA, name))
        for s in sets:
            db = os.path.join(DATA, s, f"{name}.db")
            if not os.path.exists(db):
                continue
            rows = cell_rows(dcpi, name, db, truth)
            scale = weighted_median([(t / e, n) for n, t, e, _, _ in rows if t > 0 and e > 0])
            total = sum(n for n, *_ in rows)
            within = 0.0
            for n, t, e, fn, b in rows:
                if t > 0 and abs(e * scale - t) <= 0.1 * t:
                    within += n
                else:
                    lost[(name, fn, b)] += n / total
            shares.append(within / total)
    cells = len(shares)
    print(f"{cells} cells: scaled ±10 % {100 * sum(shares) / cells:.1f} % (points lost per block below)")
    for (name, fn, b), v in sorted(lost.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {100 * v / cells:5.2f}  {name} {fn} block {b}")


if __name__ == "__main__":
    main()
