#!/usr/bin/env bash
# A model speed change judged the way BENCHMARKS.md reports it: the same
# blocks modeled by two builds of the `model_speed` bench, runs alternating
# (the host is noisy: compare medians of runs made side by side), and every
# block's whole analysis compared on all six descriptions
# (DCPI_MODEL_DUMP_FULL), so a change meant to alter nothing is seen to.
#
# Usage: benches/model_speed_ab.sh BASE_BIN NEW_BIN [RUNS] [INSTRUCTIONS]
#   BASE_BIN, NEW_BIN: bench binaries, e.g. copies of
#     target/release/deps/model_speed-<hash> made before and after the
#     change (`cargo build --release --benches -p dcpi-models` builds it;
#     `cargo build --release` alone does not).
#   RUNS: alternating runs of each (default 4); INSTRUCTIONS: the bench's
#   budget (default 100000, python3.11's 29,536 blocks).
# Prints each build's instructions/s per run and their medians, then per
# description whether the analyses are identical (and how many blocks
# differ where not).
set -euo pipefail
base=${1:?usage: $0 BASE_BIN NEW_BIN [RUNS] [INSTRUCTIONS]}
new=${2:?usage: $0 BASE_BIN NEW_BIN [RUNS] [INSTRUCTIONS]}
runs=${3:-4}
budget=${4:-100000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

rate() { "$1" "$budget" 2>/dev/null | sed -n 's/^model only: \([0-9]*\) instructions.*/\1/p'; }
median() { sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : int((v[NR/2]+v[NR/2+1])/2)}'; }

for _ in $(seq "$runs"); do
  echo "base $(rate "$base")" >>"$work/rates"
  echo "new $(rate "$new")" >>"$work/rates"
done
for which in base new; do
  list=$(awk -v w="$which" '$1 == w {print $2}' "$work/rates")
  printf '%-4s %s  median %s instructions/s\n' "$which" "$(echo $list)" \
    "$(echo "$list" | median)"
done

for cpu in golden-cove zen5 zen4 zen3 skylake generic; do
  for which in base new; do
    bin=$base
    [ "$which" = new ] && bin=$new
    DCPI_MODEL_CPU=$cpu DCPI_MODEL_PASSES=1 DCPI_MODEL_DUMP_FULL="$work/$which.$cpu" \
      "$bin" "$budget" >/dev/null
  done
  if cmp -s "$work/base.$cpu" "$work/new.$cpu"; then
    echo "$cpu: identical"
  else
    echo "$cpu: $(diff "$work/base.$cpu" "$work/new.$cpu" | grep -c '^<') blocks differ"
  fi
done
