#!/usr/bin/env python3
"""Where issue 4's measure loses its samples: over the 70 tuning cells (the
five workloads of accuracy_sets.py on every recorded set), each block's
share of a cell's samples on instructions whose estimate, times the cell's
fitted scale (`dcpi accuracy`'s), misses callgrind's count by more than
±10 %, averaged over the cells: the points of "scaled ±10 %" that block
costs. Prints the cells' mean scaled ±10 % (as accuracy_sets.py --shares),
then the blocks losing most, each with its scaled error per set (".", the
Golden Cove recordings, first, then the host directories in order).

A block near the line on many sets is where a small, systematic change
pays; one far off on a few is noise or a mechanism of its own.

`--zen5 FILE` analyzes the Zen 5 sets with another machine description
(`--cpu FILE`), so a description's figure is tried without a rebuild.

Usage: benches/accuracy_losses.py [--top N] [--zen5 FILE.toml] [DCPI]
"""
import concurrent.futures
import json
import os
import sqlite3
import subprocess
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benches"))
import accuracy_sets  # noqa: E402
import freq_blocks  # noqa: E402

DATA = accuracy_sets.DATA


def cell(dcpi, zen5, truth, name, s):
    """(samples, lost samples by (function, block), scaled error by block,
    the cell's scaled ±10 share) of one workload on one set."""
    db = os.path.join(DATA, s, f"{name}.db")
    cpu = ["--cpu", zen5] if zen5 and s.startswith("zen5") else []
    runs = sqlite3.connect(f"file:{db}?mode=ro", uri=True).execute(
        "select count(*) from runs").fetchone()[0]
    acc = json.loads(subprocess.run(
        [dcpi, "accuracy", "--callgrind", os.path.join(DATA, f"{name}.callgrind"), "--db", db,
         "--symfs", DATA, "--image", name, "--format", "json"] + cpu,
        check=True, capture_output=True, text=True).stdout)
    ours = acc["estimators"][0]
    scale = ours["scale"]
    out = json.loads(subprocess.run(
        [dcpi, "cpi", "--all", "--db", db, "--symfs", DATA, "--image", name,
         "--format", "json", "--confidence", "low"] + cpu,
        check=True, capture_output=True, text=True).stdout)
    total, lost, errors = 0.0, defaultdict(float), {}
    for f in out["functions"]:
        for i in f["instructions"]:
            n = sum(i["samples"].values())
            total += n
            true = truth.get(int(i["addr"], 16), 0) * runs
            est = (i["freq"] or 0.0) * scale
            key = (f["function"], i["block"])
            if true > 0:
                errors[key] = est / true - 1
            if n and (true <= 0 or abs(est / true - 1) > 0.1):
                lost[key] += n
    return total, lost, errors, ours["within_scaled"][1]


def main():
    args = sys.argv[1:]
    top, zen5 = 30, None
    while args and args[0].startswith("--"):
        if args[0] == "--top" and len(args) > 1:
            top, args = int(args[1]), args[2:]
        elif args[0] == "--zen5" and len(args) > 1:
            zen5, args = os.path.abspath(args[1]), args[2:]
        else:
            sys.exit(__doc__)
    dcpi = args[0] if args else os.path.join(ROOT, "target/release/dcpi")
    sets = accuracy_sets.all_sets()
    names = accuracy_sets.NAMES
    truths = {n: freq_blocks.truth_counts(os.path.join(DATA, f"{n}.callgrind"),
                                          os.path.join(DATA, n)) for n in names}
    cells = [(n, s) for n in names for s in sets]
    points, per_set, shares = defaultdict(float), defaultdict(dict), []
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        done = pool.map(lambda c: cell(dcpi, zen5, truths[c[0]], *c), cells)
        for (name, s), (total, lost, errors, share) in zip(cells, done):
            shares.append(share)
            for (func, b), n in lost.items():
                points[(name, func, b)] += 100 * n / total / len(cells)
            for (func, b), e in errors.items():
                per_set[(name, func, b)][s] = e
    print(f"{len(cells)} cells: scaled ±10 % {100 * sum(shares) / len(shares):.1f} %, "
          f"{sum(points.values()):.1f} points lost; sets {' '.join(sets)}")
    for key, p in sorted(points.items(), key=lambda kv: -kv[1])[:top]:
        errs = " ".join(f"{100 * per_set[key][s]:+.0f}" if s in per_set[key] else "-"
                        for s in sets)
        print(f"{p:5.2f} pts  {key[0]:8} {key[1]:14} b{key[2]:<3} {errs}")


if __name__ == "__main__":
    main()
