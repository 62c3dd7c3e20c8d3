#!/usr/bin/env bash
# Speed of the analyzer against perf annotate on the same workload: pyenv's
# CPython (libpython3.11.so, 23 MB with symbols) running a mixed script,
# profiled by dcpi and by perf record at the same rate; then
#   dcpi cpi --func F (a small function and _PyEval_EvalFrameDefault),
#   dcpi cpi --all --image libpython3.11.so   vs   perf annotate --stdio on that DSO.
# Medians of 5 runs. Usage: benches/analyzer_speed.sh [PYTHON]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
py="${1:-/root/.pyenv/versions/3.11.7/bin/python3.11}"
out="$root/target/bench-analyzer"; mkdir -p "$out"
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
dcpi="$root/target/release/dcpi"
script='
import json, re, random
random.seed(1)
d = {}
for i in range(300000):
    d[str(i)] = [i, i * 2, str(i)]
s = json.dumps(d)
json.loads(s)
words = re.findall(r"\d+", s)
words.sort()
print(len(words), sum(len(w) for w in words[:1000]))
'
rm -f "$out/py.db"*
"$dcpi" collect -F 10000 -o "$out/py.db" -- "$py" -c "$script" >/dev/null
perf record -q -e cpu-clock -F 10000 -o "$out/perf.data" -- "$py" -c "$script" >/dev/null 2>&1
lib=$(ls "$(dirname "$py")"/../lib/libpython3*.so.1.0)
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_it() { # label command...
    local label=$1; shift
    local t
    t=$(for i in 1 2 3 4 5; do
        s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N)
        echo "$e - $s" | bc
    done | median)
    printf "%-58s %8.3f s\n" "$label" "$t"
}
echo "workload: $py; samples: dcpi $("$dcpi" prof --db "$out/py.db" --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["system"]["samples"][0])')"
echo "functions with samples in $(basename "$lib"): $("$dcpi" cpi --db "$out/py.db" --all --image "$(basename "$lib")" --format json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["functions"]))')"
time_it "dcpi cpi --func PyLong_FromLong" "$dcpi" cpi --db "$out/py.db" --image "$(basename "$lib")" --func PyLong_FromLong
time_it "dcpi cpi --func _PyEval_EvalFrameDefault" "$dcpi" cpi --db "$out/py.db" --image "$(basename "$lib")" --func _PyEval_EvalFrameDefault
time_it "dcpi cpi --all --image $(basename "$lib") --format json" "$dcpi" cpi --db "$out/py.db" --all --image "$(basename "$lib")" --format json
time_it "perf annotate --stdio --dsos $(basename "$lib")" perf annotate -i "$out/perf.data" --stdio --dsos "$(basename "$lib")"
time_it "perf annotate --stdio -s _PyEval_EvalFrameDefault" perf annotate -i "$out/perf.data" --stdio _PyEval_EvalFrameDefault
