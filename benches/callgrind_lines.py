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
  --per N: also print each line's count divided by N (e.g. the µops run)
  --top K: lines printed (default 40)

Make the profile with, e.g.:
  DCPI_MODEL_PASSES=1 valgrind --tool=callgrind --dump-instr=yes \\
    --toggle-collect='dcpi_models::schedule::analyze*' \\
    target/release/deps/model_speed-<hash> 10000
"""
import collections
import os
import re
import sys


def parse(path):
    """Per instruction address: (file, line, function) and its own Ir."""
    names = {}
    cur_file = cur_fn = None
    addr = line = 0
    skip_next = False
    cost = collections.Counter()
    where = {}

    def value(tok, prev):
        if tok == "*":
            return prev
        if tok[0] in "+-":
            return prev + int(tok, 0)
        return int(tok, 0)

    with open(path) as f:
        for raw in f:
            text = raw.rstrip("\n")
            m = re.match(r"^(fl|fi|fe|fn|cfi|cfl|cfn|ob|cob)=\((\d+)\)(?: (.*))?$", text)
            if m:
                key, idx, name = m.groups()
                kind = {"fi": "fl", "fe": "fl", "cfi": "fl", "cfl": "fl", "cfn": "fn"}.get(key, key)
                if name:
                    names[(kind, idx)] = name
                if key in ("fl", "fi", "fe"):
                    cur_file = names.get(("fl", idx), idx)
                elif key == "fn":
                    cur_fn = names.get(("fn", idx), idx)
                continue
            if text.startswith("calls="):
                # The next cost line is the call's inclusive cost.
                skip_next = True
                continue
            if not text or not (text[0].isdigit() or text[0] in "+-*"):
                continue
            parts = text.split()
            if len(parts) < 3:
                continue
            addr, line = value(parts[0], addr), value(parts[1], line)
            if skip_next:
                skip_next = False
                continue
            cost[addr] += int(parts[2])
            where[addr] = (cur_file, line, cur_fn)
    return cost, where


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
    cost, where = parse(path)
    lines = collections.Counter()
    for a, c in cost.items():
        fl, ln, fn = where[a]
        if fn == function:
            lines[(fl, ln)] += c
    total = sum(lines.values())
    if not total:
        sys.exit(f"{function}: no instructions of its own in {path}")
    print(f"{function}: {total} instructions of its own of {sum(cost.values())} in the profile"
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
