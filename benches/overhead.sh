#!/usr/bin/env bash
# Collection overhead: slowdown of a CPU-bound workload (datasets/workloads/spin.c,
# which times its own work) under `dcpi collect` and `perf record` at the same
# rates, paired runs interleaved in one session, medians (benches/overhead.py). Also: lost samples at
# 50 kHz with both CPUs busy, and database size vs perf.data.
# Usage: benches/overhead.sh [ROUNDS] [ITERATIONS]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
rounds="${1:-7}"
iters="${2:-600000000}"
out="$root/target/bench"
mkdir -p "$out"
command -v perf >/dev/null || { apt-get update && apt-get install -y --no-install-recommends linux-perf; }
command -v gcc >/dev/null || { apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev; }
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
dcpi="$root/target/release/dcpi"
gcc -O2 -o "$out/spin" "$root/datasets/workloads/spin.c"
spin="$out/spin"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs, $(uname -r)"
echo "perf: $(perf --version)"
python3 "$root/benches/overhead.py" "$dcpi" "$spin" "$iters" "$rounds" "$out"
echo
echo "lost samples at 50 kHz with both CPUs busy:"
rm -f "$out/l.db"*
"$dcpi" collect -q -e cpu-clock -F 50000 -o "$out/l.db" -- sh -c "$spin $iters & $spin $iters; wait" >/dev/null
python3 - "$out/l.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
s = dict(c.execute("select name, value from collector_stats"))
print(f"  dcpi: {s['samples']} samples, lost_records={s['lost_records']} lost_samples={s['lost_samples']} throttles={s['throttles']} hash hit rate={100*s['hash_hits']/max(1,s['hash_lookups']):.2f}% handoff waits={s['overflow_handoff_waits']}")
PY
rm -f "$out/perf.data"
perf record -q -e cpu-clock -F 50000 -o "$out/perf.data" -- sh -c "$spin $iters & $spin $iters; wait" >/dev/null 2>&1
echo "  perf: $(perf report -i "$out/perf.data" --stats 2>/dev/null | grep -E 'SAMPLE events|LOST' | tr -s ' ' | paste -sd';')"
