#!/usr/bin/env bash
# Database size: dcpi.db for a 10 s and a 30 s run of one CPU-bound process
# (it must follow distinct PCs, not sample count) against perf.data of the
# same 30 s run at the same rate. Usage: benches/size.sh [HZ]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
hz="${1:-4000}"
out="$root/target/bench"
mkdir -p "$out"
command -v perf >/dev/null || { apt-get update && apt-get install -y --no-install-recommends linux-perf; }
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
dcpi="$root/target/release/dcpi"
gcc -O2 -o "$out/spin" "$root/datasets/workloads/spin.c"
gcc -O1 -g -o "$out/btree" "$root/datasets/workloads/btree.c"
size() { stat -c %s "$1"; }
for secs in 10 30; do
  iters=$((secs * 430000000))
  rm -f "$out/s$secs.db"*
  "$dcpi" collect -q -e cpu-clock -F "$hz" -o "$out/s$secs.db" -- "$out/spin" "$iters" >/dev/null
  echo "spin ${secs}s: dcpi.db $(size "$out/s$secs.db") bytes, $(sqlite3 "$out/s$secs.db" 'select value from collector_stats where name="samples"') samples, $(sqlite3 "$out/s$secs.db" 'select count(*) from counts') count rows"
done
rm -f "$out/perf.data"
perf record -q -e cpu-clock -F "$hz" -o "$out/perf.data" -- "$out/spin" $((30 * 430000000)) >/dev/null 2>&1
echo "spin 30s: perf.data $(size "$out/perf.data") bytes"
echo "ratio perf.data / dcpi.db (30 s): $(echo "scale=1; $(size "$out/perf.data") / $(size "$out/s30.db")" | bc)"
# A program with more distinct PCs: btree repeated in one shell for ~30 s.
rm -f "$out/b.db"* "$out/perf.data"
"$dcpi" collect -q -e cpu-clock -F "$hz" -o "$out/b.db" -- sh -c "for i in \$(seq 50); do $out/btree 3000000; done" >/dev/null
perf record -q -e cpu-clock -F "$hz" -o "$out/perf.data" -- sh -c "for i in \$(seq 50); do $out/btree 3000000; done" >/dev/null 2>&1
echo "btree x50: dcpi.db $(size "$out/b.db") bytes ($(sqlite3 "$out/b.db" 'select count(*) from counts') count rows, 50 process instances), perf.data $(size "$out/perf.data") bytes, ratio $(echo "scale=1; $(size "$out/perf.data") / $(size "$out/b.db")" | bc)"
