#!/usr/bin/env bash
# Records the analyzer's datasets: each workload compiled here (-O2 -g),
# profiled with dcpi collect, and run under callgrind for exact execution
# counts. Tests read them with --symfs datasets/analyzer, so they are
# deterministic without live sampling. Re-run after changing the collector's
# database format or a workload:  datasets/analyzer/record.sh [NAME...]
# (names given: only those are recorded again).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
dcpi="$root/target/release/dcpi"
only=("$@")
record() { # name source args...  (TRUTH=no: no callgrind run; PROFILE=no: no profile here; LIBS=-lm)
    local name=$1 src=$2; shift 2
    if [ ${#only[@]} -gt 0 ] && [[ " ${only[*]} " != *" $name "* ]]; then return; fi
    # shellcheck disable=SC2086 # LIBS: libraries to link, word-split
    gcc -O2 -g -o "$here/$name" "$root/datasets/workloads/$src" ${LIBS:-}
    if [ "${PROFILE:-yes}" = yes ]; then
        rm -f "$here/$name.db"*
        "$dcpi" collect -F 20000 -o "$here/$name.db" -- "$here/$name" "$@" >/dev/null
    fi
    if [ "${TRUTH:-yes}" = yes ]; then
        valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file="$here/$name.callgrind" \
            "$here/$name" "$@" >/dev/null 2>&1
    fi
    # Keep the truth small: only the workload's own object matters.
    echo "recorded $name"
}
record kernels kernels.c 8000
record btree btree.c 3000000
TRUTH=no record culprits culprits.c 1
record hashtab hashtab.c 600
record codec codec.c 400
record msort msort.c 200000 30
# Held out from tuning (session 25): binary and truth only; its profiles are
# per host (record_profiles.sh), none in the Golden Cove set here.
PROFILE=no record textproc textproc.c 300
# Held out (session 25; numeric looked into since): measured only as a
# whole; see BENCHMARKS.md before tuning anything on eventsim.
LIBS=-lm PROFILE=no record numeric numeric.c 400
PROFILE=no record eventsim eventsim.c 100
# Written (session 27) to check the dispatch-loop estimate on switches it
# was not tuned on: a predictable bytecode loop and a random op stream.
PROFILE=no record bytecode bytecode.c 10000
# Held out (session 29, written so eventsim may be looked into): a
# Boyer-Moore-Horspool search, a CSR sparse product and short insertion
# sorts; measured only as a whole.
PROFILE=no record search search.c 400
# Held out (session 30, written so search may be looked into): a recursive
# regular-expression matcher, base64 and a Bloom filter's probe calls;
# measured only as a whole.
PROFILE=no record matchers matchers.c 240
# Held out (session 31, written so matchers may be looked into): edit
# distance, LCS, a knapsack row and printing in a run-time base; measured
# only as a whole.
PROFILE=no record dynprog dynprog.c 1400
# Held out (session 63): an LZ77 hash-chain match finder over 24 MB, its
# table, chain and candidate reads missing to DRAM (xz's encoder made small:
# the check that the estimates hold where code runs in the shadow of
# misses); measured only as a whole.
PROFILE=no record lzfind lzfind.c 24
# The I-cache known answer: the wide sweep and its narrow control as two
# processes of one profile (appids icache#1 and icache#2), no callgrind.
if [ ${#only[@]} -eq 0 ] || [[ " ${only[*]} " == *" icache "* ]]; then
    gcc -O2 -g -o "$here/icache" "$root/datasets/workloads/icache.c"
    rm -f "$here/icache.db"*
    "$dcpi" collect -F 20000 -o "$here/icache.db" -- \
        sh -c "'$here/icache' 7 && '$here/icache' 21 narrow" >/dev/null
    echo "recorded icache: $(du -h "$here/icache.db" | cut -f1) profile"
fi
