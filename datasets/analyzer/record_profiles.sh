#!/usr/bin/env bash
# Profiles the analyzer's recorded workloads again on this host, into
# datasets/analyzer/HOST/ (the binaries and their callgrind truth stay the
# ones in datasets/analyzer: the same code, sampled on another machine).
# The accuracy of the analyzer then reads, for that host's model:
#   benches/accuracy_table.py --set HOST
# Usage: [DCPI_RECORD_FREQ=HZ] [DCPI_RECORD_RUNS=N] datasets/analyzer/record_profiles.sh HOST [NAME...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
host=${1:?"usage: $0 HOST [NAME...] (e.g. zen4: a directory name for this host's profiles)"}
shift
only=("$@")
# DCPI_RECORD_FREQ: samples per second (default 20000, as record.sh). A
# virtual machine whose timer interrupts are exits can slow the sampled code
# far more than the collector's probe sees: on a Zen 3 KVM guest, 20 kHz
# made ./kernels 1.8x slower (the probe said 1.47x) and its frequency
# estimates 1.3-2x high; 5 kHz cost 8-12 % and left them within 5 %.
freq=${DCPI_RECORD_FREQ:-20000}
# DCPI_RECORD_RUNS: runs of each workload into its profile (default 1); a
# lower rate with more runs gives as many samples, and `dcpi accuracy`
# multiplies callgrind's counts by the processes that ran the image.
runs=${DCPI_RECORD_RUNS:-1}
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
dcpi="$root/target/release/dcpi"
mkdir -p "$here/$host"
profile() { # name args...
    local name=$1; shift
    if [ ${#only[@]} -gt 0 ] && [[ " ${only[*]} " != *" $name "* ]]; then return; fi
    rm -f "$here/$host/$name.db"*
    for _ in $(seq "$runs"); do
        (cd "$here" && "$dcpi" collect -F "$freq" -o "$here/$host/$name.db" -- "./$name" "$@" >/dev/null)
    done
    echo "profiled $name: $(du -h "$here/$host/$name.db" | cut -f1)"
}
# The same workloads and arguments as record.sh.
profile kernels 8000
profile btree 3000000
profile hashtab 600
profile codec 400
profile msort 200000 30
profile textproc 300
profile numeric 400
profile eventsim 100
profile bytecode 10000
profile search 400
profile matchers 240
profile dynprog 1400
profile lzfind 24
