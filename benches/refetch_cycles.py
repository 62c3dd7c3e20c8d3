#!/usr/bin/env python3
"""The cycles of timer samples one mispredict leaves at its target, from the
recorded profiles and callgrind's counts: per block with refetch samples
(`dcpi cpi` JSON `refetch_samples`, the samples at its start that follow a
branch that may mispredict into it), those samples times the cycles a
sample stands for over the block's true runs, per set.

Where every run of the block follows a mispredict (the target of a loop
exit whose trip count varies: codec's `rle_encode` run end, search's
`insertion_sort` insertion point) this is the figure the analyzer divides
refetch samples by to count mispredicts (a machine description's
`refetch_cycles`); elsewhere it is a floor (a predicted run leaves no
refetch samples).

Usage: benches/refetch_cycles.py [--min N] [DCPI] [NAME,NAME...]
(default: blocks with 30 refetch samples or more, target/release/dcpi, the
workloads with callgrind truth)
"""
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benches"))
import freq_blocks  # noqa: E402

DATA = os.path.join(ROOT, "datasets/analyzer")
NAMES = ["kernels", "btree", "hashtab", "codec", "msort", "textproc", "numeric", "eventsim", "search"]


def main():
    least, dcpi, names = freq_blocks.cell_args(sys.argv[1:], "--min", 30.0, NAMES, __doc__)
    rows = {}
    for name, s, functions, truth in freq_blocks.recorded_cells(dcpi, names, DATA):
        for f in functions:
            cps = f.get("cycles_per_sample")
            for b in f["blocks"]:
                true = truth.get(int(b["start"], 16), 0)
                if not cps or true <= 0 or b["refetch_samples"] < least:
                    continue
                key = (name, f["function"], b["start"])
                rows.setdefault(key, {})[s] = b["refetch_samples"] * cps / true
    for (name, func, start), per in sorted(rows.items()):
        zen4 = [v for s, v in per.items() if s.startswith("zen4")]
        med = f"{statistics.median(zen4):5.1f}" if zen4 else "    -"
        cells = "  ".join(f"{s}:{v:.1f}" for s, v in sorted(per.items()))
        print(f"{name:9} {func:15} {start:8} zen4 median {med}   {cells}")


if __name__ == "__main__":
    main()
