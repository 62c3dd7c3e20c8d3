#!/usr/bin/env bash
# The main job end to end on a bundled workload: build dcpi, compile SLEEPY's
# btree benchmark from datasets/workloads, profile it, and show where the
# samples are, what each instruction of the hottest procedure costs
# (frequency, CPI, stall cycles), the instructions that stall most, and the
# culprits of the worst one. Usage: datasets/demo.sh [DB]  (default: target/demo/dcpi.db)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/target/demo"
db="${1:-$out/dcpi.db}"
mkdir -p "$out"
command -v gcc >/dev/null || { echo "demo: gcc is needed (apt-get install gcc)" >&2; exit 1; }
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
gcc -O1 -g -o "$out/btree" "$root/datasets/workloads/btree.c"
rm -f "$db" "$db-wal" "$db-shm"
"$root/target/release/dcpi" collect -F 10000 -o "$db" -- "$out/btree" 3000000
"$root/target/release/dcpi" prof --db "$db" --limit 12
echo
"$root/target/release/dcpi" cpi --db "$db" --func find_index
echo
"$root/target/release/dcpi" topstalls --db "$db" --limit 5
top=$("$root/target/release/dcpi" topstalls --db "$db" --limit 1 --format json |
  sed -n 's/^ *"addr": "\(0x[0-9a-f]*\)",$/\1/p' | head -1)
if [ -n "$top" ]; then
  echo
  "$root/target/release/dcpi" culprits --db "$db" --insn "$top"
fi
