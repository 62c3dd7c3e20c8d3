#!/usr/bin/env python3
"""Where `dcpi accuracy` loses its samples: for one workload's profile, the
blocks whose instructions' estimates miss the callgrind count by more than
±10 %, weighted by the samples that landed on them (the measure `dcpi
accuracy` reports, unscaled), largest first.

Usage: benches/accuracy_misses.py NAME [--set HOST] [--top N] [DCPI]
(NAME: kernels, btree, hashtab, codec or msort; --set as for
accuracy_table.py: datasets/analyzer/HOST/NAME.db)."""
import json
import os
import subprocess
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

args = sys.argv[1:]
if not args or args[0].startswith("-"):
    sys.exit(__doc__)
name, args = args[0], args[1:]
host, top = "", 15
while args and args[0].startswith("--"):
    if args[0] == "--set":
        host, args = args[1], args[2:]
    elif args[0] == "--top":
        top, args = int(args[1]), args[2:]
    else:
        sys.exit(__doc__)
dcpi = args[0] if args else os.path.join(ROOT, "target/release/dcpi")
data = os.path.join(ROOT, "datasets/analyzer")
db = os.path.join(data, host, f"{name}.db")
image = os.path.join(data, name)

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
sys.path.insert(0, os.path.join(ROOT, "benches"))
from freq_blocks import profile_runs, truth_counts  # noqa: E402

out = subprocess.run(
    [dcpi, "cpi", "--all", "--db", db, "--symfs", data, "--image", name, "--format", "json"],
    check=True, capture_output=True, text=True,
).stdout
report = json.loads(out)
runs = profile_runs(db, image)
truth = truth_counts(os.path.join(data, f"{name}.callgrind"), image)
total, missed = 0.0, defaultdict(float)
errors = defaultdict(list)
for f in report["functions"]:
    ev = f.get("time_event") or "cpu-clock"
    for i in f["instructions"]:
        s = i["samples"].get(ev, 0)
        if not s:
            continue
        t = truth.get(int(i["addr"], 16), 0) * runs
        e = i["freq"] or 0.0
        total += s
        if not (t > 0 and abs(e - t) <= 0.1 * t):
            key = (f["function"], i["block"])
            missed[key] += s
            errors[key].append((e - t) / t * 100 if t else float("inf"))
print(f"{name}{' (' + host + ')' if host else ''}: {total:.0f} samples, "
      f"{100 * sum(missed.values()) / max(total, 1):.1f} % on estimates off by more than 10 % "
      f"(callgrind x {runs})")
for (fn, b), s in sorted(missed.items(), key=lambda kv: -kv[1])[:top]:
    err = errors[(fn, b)][0]
    print(f"  {100 * s / total:5.1f} %  {s:6.0f} samples  {fn} block {b}  ({err:+.0f} %)")
