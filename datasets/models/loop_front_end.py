#!/usr/bin/env python3
"""How fast the front end feeds a loop: cycles a trip of loops of K
eliminated 32-bit moves (`mov %eax,%r8d` and three more pairs, 3 bytes
each) closed by a fused `dec; jnz`, with the loop's first instruction at
byte PAD of a 64-byte line. Writes a C program (rdtsc, best of 15 runs of
1 M trips, core cycles from a chain of dependent adds), builds it with gcc
and runs it pinned to CPU 1. Nothing in these loops waits on anything but
the front end and dispatch.

Zen 5 host of session 59 (EPYC family 26 model 2, KVM), two runs each
(µops a trip = K + 1):

  PAD 0, µops 3-8: 1.00 cycle; 9-12: µops / 8 (1.12 1.24 1.37 1.50);
  13-20: 2.96-3.00; 21-32: 3.94-4.01; 33-36: µops / 8 (4.14-4.51);
  37-42: 6.0; 43-56: 7.0; 57-60: µops / 8; 61-62: 9.0; 63-78: 10.0;
  79-81: 12.0. The same with 4-byte nops or loads beside adds.
  Other PADs (µops: PAD 0 / 16 / 32 / 48): 13: 2.94 / 2.97 / 1.60 / 1.61;
  20: 2.93 / 3.94 / 2.47 / 2.96; 32: 3.95 / 5.92 / 3.97 / 3.95;
  37: 5.95 / 6.93 / 4.58 / 4.56; 45: 6.95 / 6.91 / 5.55 / 5.96.

With 7-byte nops (`nopl 0x1000(%rax)`, MOVES edited) at offset 0 the
13-20 plateau is gone (13 µops 1.67, 16 2.07, 24 3.03: µops / 8); slow
trips come where the loop's end crosses a line (10-12 µops 2.00, 19-22
3.00-3.06, 28 4.37): the 3-byte table's plateau at 13 µops is a line
holding more than 12 of them, reached by the taken branch (at offset 32
the same loops, whose first line holds 11, run at µops / 8).

Decisive (a C program like the one below, 25 µops a trip, the loop's
first line filled to its 64 bytes with 4- and 6-byte nops, the rest 7-byte
nops): 12 instructions in the loop's first line 3.09-3.12 cycles a trip
(µops / 8), 13 in it 4.92-4.98; 9 7-byte nops first then 15 3-byte moves
3.12, 20 moves first then 4 nops 3.97. So: a loop whose first line (from
its start to the line's end) holds more than 12 instructions pays extra
cycles a trip (how many is not yet fitted: the 3-byte table's plateaus).

So a loop's trip is not its µops over the dispatch width: where its start
sits in a line changes it by up to 1.9x, and a loop starting a line is
often the slowest. The model (zen5.toml, Loop mode) takes dense code at
seven a cycle instead: 17 µops 2.43 cycles (measured 2.96 at PAD 0), 33
µops 4.71 (4.14), 65 µops 9.29 (9.96). Not modeled yet: no rule found
that fits these tables. Two real loops the analyzer models too fast on
this host, timed the same way from their C source (same gcc flags, same
code and alignment as the recorded binaries): matchers' `b64_encode` 32
instructions 5.05-5.32 cycles a trip (model 4.33), textproc's `checksum`
33 instructions 4.97 (model 3.83).

Every start at a multiple of 4 bytes: loop-front-end-zen5.tsv.

Usage: loop_front_end.py [PAD ...]   (default 0 16 32 48)
"""
import os
import subprocess
import sys
import tempfile

MOVES = ["mov %%eax,%%r8d", "mov %%ebx,%%r9d", "mov %%ecx,%%r10d", "mov %%edx,%%r11d"]
HERE = os.path.dirname(os.path.abspath(__file__))


def program(pads, counts):
    lines = [
        "#include <stdio.h>",
        f'#include "{os.path.join(HERE, "..", "skid", "ticks_per_cycle.h")}"',
        "#define RUN(pad, k, align, body) do { double best = 1e30; for (int r = 0; r < 15; r++) { \\",
        "  long n = 1000000; uint64_t t0 = __rdtsc(); \\",
        '  __asm__ volatile("jmp 2f\\n.p2align 6\\n" align "2:\\n1:\\n\\t" body \\',
        '    "dec %[n]\\n\\tjnz 1b" : [n] "+r"(n) :: "r8", "r9", "r10", "r11", "cc"); \\',
        "  double c = (__rdtsc() - t0) / tpc / 1e6; if (c < best) best = c; } \\",
        '  printf("PAD %2d  uops %3d  %6.2f cycles a trip\\n", pad, k + 1, best); } while (0)',
        "int main(void) { double tpc = ticks_per_cycle();",
    ]
    for pad in pads:
        align = f".skip {pad}, 0x90\\n" if pad else ""
        for k in counts:
            body = "".join(MOVES[i % 4] + "\\n\\t" for i in range(k))
            lines.append(f'  RUN({pad}, {k}, "{align}", "{body}");')
    lines.append("  return 0; }")
    return "\n".join(lines) + "\n"


def main():
    pads = [int(a) for a in sys.argv[1:]] or [0, 16, 32, 48]
    if any(not 0 <= p < 64 for p in pads):
        sys.exit(__doc__)
    counts = list(range(2, 81))
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "loops.c"), os.path.join(tmp, "loops")
        with open(src, "w") as f:
            f.write(program(pads, counts))
        subprocess.run(["gcc", "-O2", "-o", exe, src], check=True)
        subprocess.run(["taskset", "-c", "1", exe], check=True)


if __name__ == "__main__":
    main()
