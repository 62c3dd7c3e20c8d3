#!/usr/bin/env python3
"""What each innermost loop's samples hold per entry beyond its trips, from
the recorded profiles against callgrind's counts: the cycles of the loop's
samples (all but those on its header's first instruction, as
`add_loop_totals`' `inside`) less the true runs of each block times the
model's best case, over the true entries (X); and the part of X on the
header's second instruction, where a refill lands when the branch that
enters the loop mispredicts into it (Y). The analyzer charges a loop a
whole `mispredict_penalty` per entry (half where its exits' refills are
out of sight); X says what the loop actually paid.

Entries come from callgrind's block counts where the CFG pins them: each
block leading in either goes only to the header, or its other successor
has no other predecessor (then the edge's flow is the difference); else
the header's count less its back edges' flows, found the same way. Loops
whose entries cannot be pinned are left out. Beside each loop, how its
entry edges leave their blocks: `u` (an unconditional way in) or the
share p of the block's runs that enter (p < 0.5: entering is the
branch's minority side, the one a predictor guesses wrong).

Usage: benches/loop_entry_costs.py [--max-trips N] [DCPI] [NAME,NAME...]
(default: loops of at most 100 trips an entry, target/release/dcpi, the
five workloads of the accuracy means)
"""
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
sys.path.insert(0, os.path.join(ROOT, "benches"))
import freq_blocks  # noqa: E402

DATA = os.path.join(ROOT, "datasets/analyzer")
NAMES = ["kernels", "btree", "hashtab", "codec", "msort"]


def samples_of(insn):
    s = insn["samples"]
    return s.get("cpu-clock", 0) if isinstance(s, dict) else s


def loop_costs(f, truth):
    """Per innermost loop of function report `f`: (header start, trips per
    entry, X, Y, entry edges), with `truth` callgrind's counts by address."""
    cps = f.get("cycles_per_sample")
    if not cps:
        return
    blocks = f["blocks"]
    preds = {b["index"]: [] for b in blocks}
    for b in blocks:
        for t in b["successors"]:
            preds.setdefault(t, []).append(b["index"])
    runs = {b["index"]: truth.get(int(b["start"], 16), 0) for b in blocks}
    insns = {}
    for i in f["instructions"]:
        insns.setdefault(i["block"], []).append(i)

    def flow(u, to):
        succ = blocks[u]["successors"]
        if len(succ) == 1:
            return runs[u]
        if len(succ) == 2:
            other = succ[0] if succ[1] == to else succ[1]
            if preds.get(other) == [u]:
                return runs[u] - runs[other]
        return None

    for loop in f["loops"]:
        body = set(loop["blocks"])
        if any(set(m["blocks"]) < body for m in f["loops"] if m is not loop):
            continue  # not innermost
        h = loop["header"]
        trips = runs[h]
        outside = [u for u in preds[h] if u not in body]
        flows = [flow(u, h) for u in outside]
        if outside and all(x is not None for x in flows):
            entries = sum(flows)
        else:
            back = [flow(u, h) for u in preds[h] if u in body]
            entries = trips - sum(back) if all(x is not None for x in back) else None
        if trips <= 0 or not entries or entries <= 0:
            continue
        inside = second = 0
        for b in body:
            for k, i in enumerate(insns.get(b, [])):
                if b == h and k == 0:
                    continue
                inside += samples_of(i)
                if b == h and k == 1:
                    second = samples_of(i)
        best = sum(runs[b] * blocks[b]["best_cycles"] for b in body)
        ways = [
            "u" if len(blocks[u]["successors"]) == 1
            else f"p={x / runs[u]:.2f}" if x is not None and runs[u] > 0 else "?"
            for u, x in zip(outside, flows)
        ]
        yield (loop["start"], trips / entries, (inside * cps - best) / entries,
               second * cps / entries, ways)


def main():
    most, dcpi, names = freq_blocks.cell_args(sys.argv[1:], "--max-trips", 100.0, NAMES, __doc__)
    rows = {}
    for name, s, functions, truth in freq_blocks.recorded_cells(dcpi, names, DATA):
        for f in functions:
            for start, per, x, y, ways in loop_costs(f, truth):
                if per <= most:
                    rows.setdefault((name, f["function"], start, " ".join(ways)), []).append((s, per, x, y))
    print("loop | ways in | trips/entry | X Zen 4 | Y Zen 4 | X Zen 5 | Y Zen 5 | X others (Zen 3, Golden Cove)")
    for (name, func, start, ways), cells in sorted(rows.items()):
        def med(prefix, k):
            v = [c[k] for c in cells if c[0].startswith(prefix)]
            return f"{statistics.median(v):6.1f}" if v else "     -"
        others = " ".join(f"{c[2]:.1f}" for c in cells if not c[0].startswith("zen4") and not c[0].startswith("zen5"))
        per = statistics.median(c[1] for c in cells)
        print(f"{name} {func} {start} | {ways} | {per:.1f} | {med('zen4', 2)} | {med('zen4', 3)} | "
              f"{med('zen5', 2)} | {med('zen5', 3)} | {others}")


if __name__ == "__main__":
    main()
