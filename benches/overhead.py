#!/usr/bin/env python3
"""Collection overhead of dcpi vs perf record, paired runs in one session.

Each round runs every configuration once, in random order, between two bare
runs of the workload (datasets/workloads/spin.c). Per configuration and round:
  - work slowdown: the workload's self-timed work over the mean of the round's
    bare runs (wall clock; disturbed by other tenants of the host);
  - workload CPU: its own user+system CPU seconds over the bare runs' (less
    sensitive to steal time, includes the sampling interrupts it suffers);
  - tool CPU: CPU seconds the tool itself used (children rusage minus the
    workload's own), per second of workload run.
Medians over rounds are printed. Usage: overhead.py DCPI SPIN ITERS ROUNDS OUTDIR
"""
import os, random, resource, statistics, subprocess, sys

dcpi, spin, iters, rounds, out = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
rates = (1000, 10000, 50000)
configs = [f"{t}-{hz}" for hz in rates for t in ("dcpi", "perf")]


def command(cfg):
    if cfg == "bare":
        return [spin, iters]
    tool, hz = cfg.split("-")
    if tool == "dcpi":
        db = os.path.join(out, "o.db")
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db + suffix):
                os.remove(db + suffix)
        return [dcpi, "collect", "-q", "-e", "cpu-clock", "-F", hz, "-o", db, "--", spin, iters]
    return ["perf", "record", "-q", "-e", "cpu-clock", "-F", hz, "-o", os.path.join(out, "perf.data"), "--", spin, iters]


def run(cfg):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(command(cfg), capture_output=True, text=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    work, user, sys_ = (float(x) for x in p.stdout.split()[:3])
    total_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"work": work, "cpu": user + sys_, "tool_cpu": max(0.0, total_cpu - user - sys_)}


rows = {c: [] for c in configs}
bare_all = []
for r in range(rounds):
    b = [run("bare")]
    order = configs[:]
    random.shuffle(order)
    got = {c: run(c) for c in order}
    b.append(run("bare"))
    bare_all += [x["work"] for x in b]
    bw = statistics.mean(x["work"] for x in b)
    bc = statistics.mean(x["cpu"] for x in b)
    for c, v in got.items():
        rows[c].append((v["work"] / bw - 1, v["cpu"] / bc - 1, v["tool_cpu"] / v["work"]))
    print(f"round {r + 1} done", file=sys.stderr)

print(f"bare: {len(bare_all)} runs, median {statistics.median(bare_all):.4f} s of work, "
      f"spread max/min {max(bare_all) / min(bare_all):.3f}")
print(f"{'config':<12} {'rounds':>6} {'work slowdown':>14} {'workload CPU':>13} {'tool CPU (ms/s)':>16}")
for c in configs:
    w = statistics.median(x[0] for x in rows[c])
    cpu = statistics.median(x[1] for x in rows[c])
    tool = statistics.median(x[2] for x in rows[c])
    print(f"{c:<12} {len(rows[c]):>6} {100 * w:>13.2f}% {100 * cpu:>12.2f}% {1000 * tool:>16.2f}")
