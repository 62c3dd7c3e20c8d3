#!/usr/bin/env python3
"""How the op cache feeds a loop, line by line: cycles a trip of loops laid
out by how many instructions start in each 64-byte line. A spec `a,b,c`
is a loop of three lines: every line but the last filled to its end with
exactly that many nops (lengths spread evenly, 1-11 bytes), the last with
nops of LAST bytes (default 2) and the loop's fused `dec; jnz`; the loop
starts at byte PAD (default 0) of its first line, which then holds `a`
nops in its 64 - PAD bytes. Writes a C program (rdtsc, best of 9 runs of
1 M trips, core cycles from a chain of dependent adds), builds it with gcc
and runs it pinned to CPU 1. Ops a trip = instructions - 1 (the fused
pair is one).

Zen 5 host of session 60 (EPYC family 26 model 2, KVM), PAD 0:

  One line (LAST=2): 3-12 ops 1.00-1.48 (ops / 8); 13-24 ops 3.00;
  25-28 5.00 (LAST=1: 29-33 5.15, 37-45 7.27, 49 9.3).
  14 ops, then a second line of N-1 ops (LAST=1/2/3 alike): N <= 17 4.0,
  18-29 6.0, 30-41 8.0, 42-50 9.9.
  First line F, the second's N where the trip turns from 4 to 6 cycles
  (LAST=3): F 14 -> 18, 16 -> 16, 18 -> 14, 20 -> 18, 22 -> 16, 24 -> 14:
  it moves by six ops with F. A sparse first line: 8,N at ops / 8 for N
  up to 50 (8,20 3.38, 8,36 5.33, 8,50 6.98).

So a loop whose first line (from its start to the line's end) holds more
than 12 ops runs the slow way: its ops are taken in entries of 6, filled
in order across the line's end, an entry belonging to the line its first
op starts in; a fetch delivers two entries of a line; every line of the
trip costs a cycle and each further fetch within a line two more (a line
of k entries 2·ceil(k/2) - 1 cycles). That fits every row above and
loop_front_end.py's 3-byte moves where the first line holds more than 12
(266 starts: mean error 1.9 % with the rules in zen5.toml, 15.3 % before).

A loop of 12 ops or fewer whose last bytes reach into the next line
(PAD 16/32/40/48, every split of 8-12 ops): 2.0 cycles a trip where its
first line holds 7 or more ops, 0.98-1.13 where it holds 6 or fewer:
modeled too (a line a cycle).

Then not modeled (session 61 below: modeled since): with PAD 44-60 a
first line of 2-6 ops and a second line of 13+ turn slow (2,18 at PAD 48
2.98 against ops / 8 = 2.38; 6,14 2.96 at every PAD; 1,18 2.24 is not).
Still not modeled: three-line loops whose second and third
lines both hold three or more entries (loop-front-end-zen5.tsv, 37-50
µops at PAD 40-60: 5.9-7.0 cycles against 4.6-6.2).

Session 61 mapped the sparse first lines (two-line loops `F,N`, LAST=2;
measured, the model's ops / 8 before it in brackets where it differs):
  PAD 48: F = 2-6 with the second line's own entries k2 (its ops less
  what the first line's entry takes across the line's end, in sixes):
  k2 <= 2 at ops / 8 (2,16 2.10; 3,16 2.22; 5,14 2.24); k2 = 3-4 2.94-3.09
  (2,18 [2.38]; 3,18 [2.50]; 4,16 [2.38]; 5,16 [2.50]; 6,14 [2.38]; 6,20
  [3.12]; 2,24 3.07), k2 = 5 4.88-4.96 (F,30 [3.88-4.38]). F = 7: ops / 8
  up to 7,30 (4.48). F = 8, 10, 12: ops / 8 up to N = 24, then F,30
  7.86-7.93 [4.62-5.12].
  PAD 32 and 40 the same (4,16 2.99/3.04, 5,16 2.99/3.03, 6,14 2.98/2.99,
  3,18 2.97/2.99, 6,30 4.95/5.07, 3,30 4.97/5.06); PAD 56 too but 6,30
  8.05.
So with one entry or less in its first line a loop takes 2*ceil(k2/2) - 1
cycles for its second line's entries and nothing for the first (the rule
above, applied, would say one more: 4 for k2 = 3-4, 6 for k2 = 5):
modeled so (models/src/fetch_clock.rs, the step into the second line
free), this table's mean error 5.4 -> 2.8 %; with two entries in
the first line three or four in the second cost nothing beyond ops / 8 and
five cost eight cycles (not modeled: 4.62-5.12 modeled).

Usage: op_cache_lines.py SPEC...   (environment: PAD, LAST; MODEL_ONLY=1
models the same loops with loop_vs_model.py instead of timing them)
"""
import os
import subprocess
import sys
import tempfile

NOPS = {
    1: "90", 2: "66 90", 3: "0f 1f 00", 4: "0f 1f 40 00", 5: "0f 1f 44 00 00",
    6: "66 0f 1f 44 00 00", 7: "0f 1f 80 00 00 00 00", 8: "0f 1f 84 00 00 00 00 00",
    9: "66 0f 1f 84 00 00 00 00 00", 10: "66 2e 0f 1f 84 00 00 00 00 00",
    11: "66 66 2e 0f 1f 84 00 00 00 00 00",
}
HERE = os.path.dirname(os.path.abspath(__file__))


def nop(n):
    return ".byte " + ",".join("0x" + b for b in NOPS[n].split()) + "\\n\\t"


def fill(count, total):
    """`count` nop lengths summing to `total`, the longer ones first."""
    base, extra = divmod(total, count)
    lengths = [base + (1 if i < extra else 0) for i in range(count)]
    if not all(n in NOPS for n in lengths):
        sys.exit(f"{count} nops cannot fill {total} bytes")
    return lengths


def body(spec, pad, last):
    out = ""
    for i, n in enumerate(spec[:-1]):
        out += "".join(nop(n) for n in fill(n, 64 - pad if i == 0 else 64))
    return out + nop(last) * (spec[-1] - 2)


def program(specs, pad, last):
    skip = f".skip {pad}, 0x90\\n" if pad else ""
    lines = [
        "#include <stdio.h>",
        f'#include "{os.path.join(HERE, "..", "skid", "ticks_per_cycle.h")}"',
        "#define RUN(name, body) do { double best = 1e30; for (int r = 0; r < 9; r++) { \\",
        "  long n = 1000000; uint64_t t0 = __rdtsc(); \\",
        f'  __asm__ volatile("jmp 2f\\n.p2align 6\\n{skip}2:\\n1:\\n\\t" body \\',
        '    "dec %[n]\\n\\tjnz 1b" : [n] "+r"(n) :: "cc"); \\',
        "  double c = (__rdtsc() - t0) / tpc / 1e6; if (c < best) best = c; } \\",
        f'  printf("PAD %2d LAST %d  %-12s %6.2f cycles a trip\\n", {pad}, {last}, name, best); }} while (0)',
        "int main(void) { double tpc = ticks_per_cycle();",
    ]
    for spec in specs:
        name = ",".join(map(str, spec))
        lines.append(f'  RUN("{name}", "{body(spec, pad, last)}");')
    lines.append("  return 0; }")
    return "\n".join(lines) + "\n"


def model(specs, pad, last):
    """The same loops modeled instead of timed: their nops as `.byte`
    lines handed to loop_vs_model.py (MODEL_ONLY, at the same PAD; its
    `dec; jnz` closes them as this script's does)."""
    args = []
    for spec in specs:
        lines = [fill(n, 64 - pad if i == 0 else 64) for i, n in enumerate(spec[:-1])]
        lengths = [n for line in lines for n in line] + [last] * (spec[-1] - 2)
        body = ";".join(".byte " + ",".join("0x" + b for b in NOPS[n].split()) for n in lengths)
        args.append(",".join(map(str, spec)) + "=" + body)
    env = dict(os.environ, MODEL_ONLY="1", PAD=str(pad))
    subprocess.run([sys.executable, os.path.join(HERE, "loop_vs_model.py")] + args, env=env, check=True)


def main():
    pad, last = int(os.environ.get("PAD", "0")), int(os.environ.get("LAST", "2"))
    try:
        specs = [[int(x) for x in a.split(",")] for a in sys.argv[1:]]
    except ValueError:
        sys.exit(__doc__)
    if not specs or not 0 <= pad < 64 or last not in NOPS or any(s[-1] < 2 for s in specs):
        sys.exit(__doc__)
    if os.environ.get("MODEL_ONLY"):
        model(specs, pad, last)
        return
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "lines.c"), os.path.join(tmp, "lines")
        with open(src, "w") as f:
            f.write(program(specs, pad, last))
        subprocess.run(["gcc", "-O2", "-o", exe, src], check=True)
        subprocess.run(["taskset", "-c", "1", exe], check=True)


if __name__ == "__main__":
    main()
