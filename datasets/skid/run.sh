#!/usr/bin/env bash
# Skid experiment: profile each loop of skid.c with `dcpi collect` (cpu-clock,
# 10 kHz) and print the share of the loop's samples on each instruction;
# for the branch loop also its cycles per iteration with a random and a
# constant bit, and the cycles per mispredict the samples on the branch's
# targets (and one past each) stand for; for the spread loops (the random
# branch with eight adds on each path, independent or one chain, or a store
# second) the samples at each distance past the target.
# Usage: [DCPI_SKID_MODES="spread spreadstore"] datasets/skid/run.sh [OUT.md]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$root/target/skid"
mkdir -p "$out"
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
gcc -O1 -no-pie -o "$out/skid" "$here/skid.c"
for mode in ${DCPI_SKID_MODES:-imul chase alu steady branch spread spreadchain spreadstore}; do
  case $mode in imul) n=400000000 ;; chase) n=20000000 ;; alu) n=1000000000 ;; *) n=400000000 ;; esac
  rm -f "$out/$mode.db"*
  "$root/target/release/dcpi" collect -q -F 10000 -o "$out/$mode.db" -- "$out/skid" $mode $n >/dev/null
  python3 - "$out/$mode.db" "$out/skid" "$mode" "$n" <<'PY'
import sqlite3, subprocess, sys
db, exe, mode = sys.argv[1:4]
prefix = "branch" if mode == "steady" else mode  # one loop, two inputs
syms = {}
for line in subprocess.run(["nm", exe], capture_output=True, text=True).stdout.splitlines():
    parts = line.split()
    if len(parts) == 3 and parts[2].startswith(f"skid_{prefix}_"):
        syms[int(parts[0], 16)] = parts[2]
text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", exe], capture_output=True, text=True).stdout
insn = {}
for line in text.splitlines():
    line = line.strip()
    if ":" in line and line.split(":")[0].strip() and all(c in "0123456789abcdef" for c in line.split(":")[0].strip()):
        addr = int(line.split(":")[0], 16)
        if addr in syms:
            insn[addr] = line.split(":", 1)[1].strip()
# Non-PIE: the text segment maps file offset o at vaddr 0x400000 + o.
c = sqlite3.connect(db)
rows = c.execute("select c.offset, sum(c.count) from counts c join images i on i.id = c.image_id where i.path = ? group by c.offset", (exe,)).fetchall()
counts = {0x400000 + off: n for off, n in rows}
total = sum(counts.get(a, 0) for a in syms)
print(f"### {mode}: {total} samples in the loop")
print("| address | instruction | share |")
print("| --- | --- | --- |")
for a in sorted(syms):
    print(f"| {a:#x} | `{insn.get(a, syms[a])}` | {100 * counts.get(a, 0) / max(1, total):.1f} % |")
if mode in ("steady", "branch"):
    # Cycles the samples stand for: the run's sampled core clock over the
    # timer's rate (cpu-clock, period in ns).
    hz, period_ns = c.execute("select r.sampled_core_hz, e.period from runs r join events e on e.run_id = r.id").fetchone()
    cps = hz * period_ns * 1e-9
    n = int(sys.argv[4])
    by = {syms[a]: counts.get(a, 0) for a in syms}
    print(f"cycles per iteration: {total * cps / n:.2f} ({cps:.0f} cycles a sample)")
    if mode == "branch":
        # A random bit mispredicts half the time; the refill lands on each
        # path's first instruction and the one after it.
        landing = sum(by[k] for k in ("skid_branch_11", "skid_branch_12", "skid_branch_13", "skid_branch_14"))
        print(f"samples on the two targets and one past each: {landing} = "
              f"{landing * cps / (n / 2):.1f} cycles per mispredict (n/2 mispredicts)")
if mode in ("spread", "spreadchain", "spreadstore"):
    hz, period_ns = c.execute("select r.sampled_core_hz, e.period from runs r join events e on e.run_id = r.id").fetchone()
    cps = hz * period_ns * 1e-9
    n = int(sys.argv[4])
    by = {syms[a]: counts.get(a, 0) for a in syms}
    p = f"skid_{mode}_"
    print(f"cycles per iteration: {total * cps / n:.2f} ({cps:.0f} cycles a sample)")
    print()
    print("| past the target | samples (both paths) | cycles per mispredict (n/2) |")
    print("| --- | --- | --- |")
    for k in range(8):
        s = by.get(f"{p}f{k}", 0) + by.get(f"{p}t{k}", 0)
        print(f"| +{k} | {s} | {s * cps / (n / 2):.2f} |")
    rest = total - sum(by.get(f"{p}f{k}", 0) + by.get(f"{p}t{k}", 0) for k in range(8))
    print(f"| elsewhere in the loop | {rest} | {rest * cps / (n / 2):.2f} |")
print()
PY
done | tee "${1:-$out/results.md}"
