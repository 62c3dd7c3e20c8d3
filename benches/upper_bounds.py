#!/usr/bin/env python3
"""How often a frequency `dcpi cpi` labels an upper bound (`<=`, JSON
`freq_upper_bound`: every sample of the block may be a load stall, so
F <= samples x cycles a sample / best-case cycles) is exceeded by
callgrind's exact count, per workload over every recorded set.

The bound holds only if a block never takes fewer cycles a run than its
best case; an out-of-order core runs a block with exposed latency (a
load feeding a load, a chain through a loop with few trips) under other
work, and then it does. Session 63: lzfind's chain walk ran 596 M times
under a bound of 431 M (1.38x); textproc's tokenize b7 (two dependent
loads, best case 10 cycles) 1.84x.

The held-out workload (accuracy_sets.py HELD_OUT) is left out unless named.

Usage: benches/upper_bounds.py [DCPI] [NAME,NAME...]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from freq_blocks import recorded_cells  # noqa: E402
from accuracy_sets import NAMES, EXTRA, HELD_OUT  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    args = sys.argv[1:]
    if args and args[0].startswith("-"):
        sys.exit(__doc__)
    dcpi = args[0] if args else os.path.join(ROOT, "target/release/dcpi")
    names = args[1].split(",") if len(args) > 1 else [n for n in NAMES + EXTRA if n != HELD_OUT]
    print("| workload | samples under a bound | truth > 1.1x bound | > 1.5x | worst |")
    print("| --- | --- | --- | --- | --- |")
    for name in names:
        n = over10 = over50 = 0
        worst = 0.0
        cells = recorded_cells(dcpi, [name], os.path.join(ROOT, "datasets/analyzer"))
        for _, _, funcs, truth in cells:
            for f in funcs:
                for i in f["instructions"]:
                    if not i.get("freq_upper_bound") or i["freq"] <= 0:
                        continue
                    s = sum(i["samples"].values())
                    ratio = truth.get(int(i["addr"], 16), 0) / i["freq"]
                    n += s
                    over10 += s if ratio > 1.1 else 0
                    over50 += s if ratio > 1.5 else 0
                    worst = max(worst, ratio) if s > 0 else worst
        if n:
            print(f"| {name} | {n:.0f} | {100 * over10 / n:.1f} % | {100 * over50 / n:.1f} % | {worst:.2f}x |")
        else:
            print(f"| {name} | 0 | - | - | - |")


if __name__ == "__main__":
    main()
