#!/usr/bin/env bash
# Overhead, memory and database growth of the continuous-mode daemon on a busy
# system at 1 and 10 kHz per CPU (benches/continuous_overhead.py).
# Usage: benches/continuous_overhead.sh [PHASE_SECONDS] [ROUNDS] [SPIN_ITERATIONS]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
phase="${1:-60}"
rounds="${2:-3}"
iters="${3:-300000000}"
out="$root/target/bench/continuous"
mkdir -p "$out"
command -v gcc >/dev/null || { apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev; }
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
gcc -O2 -o "$out/spin" "$root/datasets/workloads/spin.c"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs, $(uname -r)"
python3 "$root/benches/continuous_overhead.py" "$root/target/release/dcpi" "$out/spin" "$iters" "$phase" "$rounds" "$out"
