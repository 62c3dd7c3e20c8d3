#!/usr/bin/env python3
"""Where the analyzer's error comes from, by mechanism: over every recorded
set of the tuning workloads, each instruction's |ln(estimate/true)|
(capped at ln 4, as `dcpi accuracy` does) weighted by its samples, summed
by its block's `confidence_why` (the rule its frequency rests on; "high"
where it has none). Prints per reason: its share of the weighted error
(x 1e4 samples), the samples behind it and their mean |ln e| — which rule
to look into next, and whether a change moved error between rules.

Usage: benches/accuracy_by_reason.py [DCPI] [NAME,NAME...]
(default: target/release/dcpi over kernels, btree, hashtab, codec, msort)
"""
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benches"))
import freq_blocks  # noqa: E402

DATA = os.path.join(ROOT, "datasets/analyzer")


def main():
    args = sys.argv[1:]
    if args and args[0].startswith("-"):
        sys.exit(__doc__)
    dcpi = args[0] if args else os.path.join(ROOT, "target/release/dcpi")
    names = args[1].split(",") if len(args) > 1 else ["kernels", "btree", "hashtab", "codec", "msort"]
    by_reason = {}
    for _, _, functions, truth in freq_blocks.recorded_cells(dcpi, names, DATA):
        for f in functions:
            for i in f["instructions"]:
                n = sum(i["samples"].values())
                true = truth.get(int(i["addr"], 16), 0)
                if n <= 0 or true <= 0:
                    continue
                err = min(abs(math.log(max(i["freq"] or 0.0, 1e-9) / true)), math.log(4))
                block = f["blocks"][i["block"]]
                why = block.get("confidence_why") or block.get("confidence")
                w = by_reason.setdefault(why, [0.0, 0.0])
                w[0] += n * err
                w[1] += n
    print(f"{'error':>9} {'samples':>9} {'mean':>6}  reason")
    for why, (e, n) in sorted(by_reason.items(), key=lambda x: -x[1][0]):
        print(f"{e / 1e4:9.2f} {n:9.0f} {e / n:6.3f}  {why}")


if __name__ == "__main__":
    main()
