#!/usr/bin/env python3
"""Where one function's own instructions go, line by line, from a callgrind
profile made with `--dump-instr=yes`: every source line the function's
code comes from (its own and what it inlines: slice indexing, ranges,
`Option`, ...), and the code that carries no line at all (line 0: register
spills and reloads, moves the compiler made up), which
`callgrind_annotate` only lumps together as "unidentified lines".

The model's simulation loop is one large function; this is how its cost
per µop was split in session 55 (509 instructions a µop of its own, 101 of
them without a line, ~40 in bounds checks: BENCHMARKS.md).

Usage: benches/callgrind_lines.py CALLGRIND_OUT FUNCTION [--per N] [--top K]
  FUNCTION: the demangled name as callgrind prints it, e.g.
    dcpi_models::simulate::simulate
  --per N: print each line's count divided by N (e.g. the µops run)
    instead of its share of the function
  --top K: lines printed (default 40)

Make the profile with, e.g.:
  DCPI_MODEL_PASSES=1 valgrind --tool=callgrind --dump-instr=yes \\
    --toggle-collect='dcpi_models::schedule::analyze*' \\
    target/release/deps/model_speed-<hash> 10000
"""
import collections
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from callgrind_file import records  # noqa: E402


def main():
    args = sys.argv[1:]
    per, top = None, 40
    while len(args) > 2 and args[-2] in ("--per", "--top"):
        if args[-2] == "--per":
            per = float(args[-1])
        else:
            top = int(args[-1])
        args = args[:-2]
    if len(args) != 2:
        sys.exit(__doc__)
    path, function = args
    lines = collections.Counter()
    everything = 0
    for _, fl, fn, _, ln, ir in records(path):
        everything += ir
        if fn == function:
            lines[(fl, ln)] += ir
    total = sum(lines.values())
    if not total:
        sys.exit(f"{function}: no instructions of its own in {path}")
    print(f"{function}: {total} instructions of its own of {everything} in the profile"
          + (f" ({total / per:.1f} per {per:.0f})" if per else ""))
    sources = {}
    for (fl, ln), c in lines.most_common(top):
        text = ""
        if ln > 0 and fl and os.path.exists(fl):
            if fl not in sources:
                sources[fl] = open(fl, errors="replace").read().split("\n")
            text = sources[fl][ln - 1].strip()[:80]
        share = f"{c / per:7.1f}" if per else f"{100 * c / total:5.1f} %"
        print(f"{share}  {os.path.basename(str(fl))}:{ln}  {text}")


if __name__ == "__main__":
    main()
