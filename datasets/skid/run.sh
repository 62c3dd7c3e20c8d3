#!/usr/bin/env bash
# Skid experiment: profile each loop of skid.c with `dcpi collect` (cpu-clock,
# 10 kHz) and print the share of the loop's samples on each instruction.
# Usage: datasets/skid/run.sh [OUT.md]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$root/target/skid"
mkdir -p "$out"
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
gcc -O1 -no-pie -o "$out/skid" "$here/skid.c"
for mode in imul chase alu; do
  case $mode in imul) n=400000000 ;; chase) n=20000000 ;; alu) n=1000000000 ;; esac
  rm -f "$out/$mode.db"*
  "$root/target/release/dcpi" collect -q -F 10000 -o "$out/$mode.db" -- "$out/skid" $mode $n >/dev/null
  python3 - "$out/$mode.db" "$out/skid" "$mode" <<'PY'
import sqlite3, subprocess, sys
db, exe, mode = sys.argv[1:]
syms = {}
for line in subprocess.run(["nm", exe], capture_output=True, text=True).stdout.splitlines():
    parts = line.split()
    if len(parts) == 3 and parts[2].startswith(f"skid_{mode}_"):
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
print()
PY
done | tee "${1:-$out/results.md}"
