#!/usr/bin/env python3
"""Where `dcpi accuracy` loses its samples: for one workload's profile, the
blocks whose instructions' estimates miss the callgrind count by more than
±10 %, weighted by the samples that landed on them (the measure `dcpi
accuracy` reports, unscaled), largest first. With --log, every block
ranked instead by its share of the workload's mean |ln(estimate/true)|
(samples × |ln e|, capped at ln 4 as `dcpi accuracy` does), with its
confidence: where the smooth measure loses most.

Usage: benches/accuracy_misses.py NAME [--set HOST] [--top N] [--log] [DCPI]
(NAME: kernels, btree, hashtab, codec or msort; --set as for
accuracy_table.py: datasets/analyzer/HOST/NAME.db; `--set all` or a comma
list of hosts ("." the top set) ranks blocks by their mean share of the
sets' |ln e|, with their error on each)."""
import json
import math
import os
import subprocess
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

args = sys.argv[1:]
if not args or args[0].startswith("-"):
    sys.exit(__doc__)
name, args = args[0], args[1:]
host, top, by_log = "", 15, False
while args and args[0].startswith("--"):
    if args[0] == "--log":
        by_log, args = True, args[1:]
    elif args[0] == "--set":
        host, args = args[1], args[2:]
    elif args[0] == "--top":
        top, args = int(args[1]), args[2:]
    else:
        sys.exit(__doc__)
dcpi = args[0] if args else os.path.join(ROOT, "target/release/dcpi")
data = os.path.join(ROOT, "datasets/analyzer")
image = os.path.join(data, name)

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
sys.path.insert(0, os.path.join(ROOT, "benches"))
from freq_blocks import profile_runs, truth_counts  # noqa: E402

def losses(host):
    """Per block of workload `name` in set `host`: samples × |ln e| (capped),
    errors in %, confidence, samples off by more than 10 %; and the totals."""
    db = os.path.join(data, host, f"{name}.db")
    out = subprocess.run(
        [dcpi, "cpi", "--all", "--db", db, "--symfs", data, "--image", name, "--format", "json"],
        check=True, capture_output=True, text=True,
    ).stdout
    report = json.loads(out)
    runs = profile_runs(db, image)
    truth = truth_counts(os.path.join(data, f"{name}.callgrind"), image)
    total, missed = 0.0, defaultdict(float)
    errors = defaultdict(list)
    log_loss, confidence = defaultdict(float), {}
    for f in report["functions"]:
        ev = f.get("time_event") or "cpu-clock"
        for i in f["instructions"]:
            s = i["samples"].get(ev, 0)
            if not s:
                continue
            t = truth.get(int(i["addr"], 16), 0) * runs
            e = i["freq"] or 0.0
            total += s
            key = (f["function"], i["block"])
            if t > 0 and e > 0:
                log_loss[key] += s * min(abs(math.log(e / t)), CAP)
            elif t > 0 or e > 0:
                log_loss[key] += s * CAP
            confidence[key] = i["confidence"]
            errors.setdefault(key, []).append((e - t) / t * 100 if t else float("inf"))
            if not (t > 0 and abs(e - t) <= 0.1 * t):
                missed[key] += s
    return total, missed, errors, log_loss, confidence, runs


CAP = 2 * math.log(2)
if "," in host or host == "all":
    # Several sets: each block's share of its set's mean |ln e|, averaged
    # over the sets, with its error on each.
    hosts = ([d for d in ["."] + sorted(os.listdir(data))
              if os.path.exists(os.path.join(data, d, f"{name}.db"))]
             if host == "all" else host.split(","))
    share, per_set = defaultdict(float), defaultdict(dict)
    for h in hosts:
        total, _, errors, log_loss, _, _ = losses(h)
        for key, loss in log_loss.items():
            share[key] += loss / max(total, 1) / len(hosts)
            per_set[key][h] = errors[key][0]
    print(f"{name} over {', '.join(hosts)}: mean |ln e| {sum(share.values()):.3f}")
    for (fn, b), v in sorted(share.items(), key=lambda kv: -kv[1])[:top]:
        errs = " ".join(f"{per_set[(fn, b)].get(h, float('nan')):+.0f}" for h in hosts)
        print(f"  {v:.4f}  {fn} block {b}  (% per set: {errs})")
    sys.exit(0)
total, missed, errors, log_loss, confidence, runs = losses(host)
if by_log:
    print(f"{name}{' (' + host + ')' if host else ''}: {total:.0f} samples, mean |ln e| "
          f"{sum(log_loss.values()) / max(total, 1):.3f} (callgrind x {runs})")
    for (fn, b), loss in sorted(log_loss.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {loss / max(total, 1):.4f}  {fn} block {b}  ({errors[(fn, b)][0]:+.0f} %, "
              f"{confidence[(fn, b)]})")
    sys.exit(0)
print(f"{name}{' (' + host + ')' if host else ''}: {total:.0f} samples, "
      f"{100 * sum(missed.values()) / max(total, 1):.1f} % on estimates off by more than 10 % "
      f"(callgrind x {runs})")
for (fn, b), s in sorted(missed.items(), key=lambda kv: -kv[1])[:top]:
    err = errors[(fn, b)][0]
    print(f"  {100 * s / total:5.1f} %  {s:6.0f} samples  {fn} block {b}  ({err:+.0f} %)")
