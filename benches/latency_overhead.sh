#!/usr/bin/env bash
# Overhead of `dcpi latency` per traced call and on syscall-heavy workloads,
# against `perf trace -s` on the same workload, paired rounds, medians.
# Usage: benches/latency_overhead.sh [ROUNDS]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
rounds="${1:-7}"
out="$root/target/bench"
mkdir -p "$out"
command -v perf >/dev/null || { apt-get update && apt-get install -y --no-install-recommends linux-perf; }
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
dcpi="$root/target/release/dcpi"
gcc -O2 -o "$out/sysloop" "$root/datasets/workloads/sysloop.c"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs, $(uname -r); $(perf --version)"
python3 - "$dcpi" "$out" "$rounds" <<'PY'
import statistics, subprocess, sys, os
dcpi, out, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
loop = os.path.join(out, "sysloop")
def run(tool, n, size):
    cmd = [loop, str(n), str(size)]
    if tool == "dcpi":
        db = os.path.join(out, "lat.db")
        for s in ("", "-wal", "-shm"):
            if os.path.exists(db + s): os.remove(db + s)
        cmd = [dcpi, "latency", "-q", "--no-calibrate", "-o", db, "--"] + cmd
    elif tool == "perf":
        cmd = ["perf", "trace", "-s", "-o", os.path.join(out, "trace.txt"), "--"] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return float(p.stdout.split()[0])
for n, size, label in [(2_000_000, 1, "1-byte reads (cheapest calls)"), (100_000, 65536, "64 KiB reads")]:
    per = {"bare": [], "dcpi": [], "perf": []}
    ratios = {"dcpi": [], "perf": []}
    for r in range(rounds):
        b = run("bare", n, size)
        d = run("dcpi", n, size)
        p = run("perf", n, size)
        b2 = run("bare", n, size)
        bm = (b + b2) / 2
        per["bare"].append(bm); per["dcpi"].append(d); per["perf"].append(p)
        ratios["dcpi"].append(d / bm - 1); ratios["perf"].append(p / bm - 1)
    base = statistics.median(per["bare"])
    print(f"\n{label}: {n} calls, bare median {base:.4f} s ({1e9 * base / n:.0f} ns/call)")
    for t in ("dcpi", "perf"):
        m = statistics.median(per[t])
        print(f"  {t:<5} median {m:.4f} s, slowdown {100 * statistics.median(ratios[t]):.1f}%, "
              f"+{1e9 * (m - base) / n:.0f} ns per traced call")
PY
