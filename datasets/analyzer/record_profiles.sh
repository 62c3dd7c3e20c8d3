#!/usr/bin/env bash
# Profiles the analyzer's recorded workloads again on this host, into
# datasets/analyzer/HOST/ (the binaries and their callgrind truth stay the
# ones in datasets/analyzer: the same code, sampled on another machine).
# The accuracy of the analyzer then reads, for that host's model:
#   benches/accuracy_table.py --set HOST
# Usage: datasets/analyzer/record_profiles.sh HOST [NAME...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
host=${1:?"usage: $0 HOST [NAME...] (e.g. zen4: a directory name for this host's profiles)"}
shift
only=("$@")
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
dcpi="$root/target/release/dcpi"
mkdir -p "$here/$host"
profile() { # name args...
    local name=$1; shift
    if [ ${#only[@]} -gt 0 ] && [[ " ${only[*]} " != *" $name "* ]]; then return; fi
    rm -f "$here/$host/$name.db"*
    (cd "$here" && "$dcpi" collect -F 20000 -o "$here/$host/$name.db" -- "./$name" "$@" >/dev/null)
    echo "profiled $name: $(du -h "$here/$host/$name.db" | cut -f1)"
}
# The same workloads and arguments as record.sh.
profile kernels 8000
profile btree 3000000
profile hashtab 600
profile codec 400
profile msort 200000 30
