#!/usr/bin/env python3
"""Time loop bodies on this host and model them at the same address, side
by side: the quickest way to find where the host model is wrong.

Each argument is NAME=INSN;INSN;... (AT&T, as `as` takes it). The body is
closed by a fused `dec %r15; jnz`, starts at byte PAD (default 32) of a
64-byte line, and runs 1 M trips, best of 9 (rdtsc, core cycles from a
chain of dependent adds, pinned to CPU 1). Registers at the start: rsi =
an 8 KB buffer whose first quadword points to itself (so `mov (%rax),%rax`
chains stay in it), r8 = buffer + 4096, r10 = buffer + 6000, ecx = 3,
every other general register 0 (r15 is the trip counter: leave it). The
same body is assembled and linked at the same line offset and given to
`dcpi model --loop --cpu CPU` (default zen5; a .toml path tries a changed
description without rebuilding).

Session 60 found with it, on the Zen 5 host: loops of dense code run at
eight a cycle (model 7), the ALU scheduler's 64 entries
(scheduler_capacity.py), and serial ALU chains modeled 13-19 % too fast:

  loop_vs_model.py 'ch20=xor %eax,%eax;add $1,%eax;...;mov %eax,64(%rsi)'

Environment: PAD, CPU, DCPI (the dcpi binary; default target/release/dcpi
of this checkout), MODEL_ONLY=1 (skip the timing).
Usage: loop_vs_model.py NAME=BODY...
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

SETUP = [
    "push %rbp", "push %rbx", "push %r12", "push %r13", "push %r14", "push %r15",
    "xor %eax,%eax", "xor %ebx,%ebx", "xor %edx,%edx", "xor %edi,%edi", "xor %ebp,%ebp",
    "xor %r9d,%r9d", "xor %r11d,%r11d", "xor %r12d,%r12d", "xor %r13d,%r13d",
    "xor %r14d,%r14d", "mov $3,%ecx", "lea buf(%rip),%rsi", "mov %rsi,(%rsi)",
    "lea buf+4096(%rip),%r8", "lea buf+6000(%rip),%r10", "mov $1000000,%r15d",
]
TEARDOWN = ["pop %r15", "pop %r14", "pop %r13", "pop %r12", "pop %rbx", "pop %rbp"]


def c_asm(lines):
    return "".join(l.replace("%", "%%") + "\\n\\t" for l in lines)


def program(specs, pad):
    skip = f".skip {pad},0x90\\n" if pad else ""
    out = [
        "#include <stdio.h>",
        f'#include "{os.path.join(HERE, "..", "skid", "ticks_per_cycle.h")}"',
        "unsigned char buf[8192] __attribute__((aligned(64)));",
        "#define RUN(name, body) do { double best = 1e30; for (int r = 0; r < 9; r++) { \\",
        "  uint64_t t0 = __rdtsc(); \\",
        f'  __asm__ volatile("{c_asm(SETUP)}jmp 2f\\n.p2align 6\\n{skip}2:\\n1:\\n\\t" body \\',
        f'    "dec %%r15\\n\\tjnz 1b\\n\\t{c_asm(TEARDOWN)}" \\',
        '    ::: "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory", "cc"); \\',
        "  double c = (__rdtsc() - t0) / tpc / 1e6; if (c < best) best = c; } \\",
        '  printf("%.2f\\n", best); } while (0)',
        "int main(void) { double tpc = ticks_per_cycle();",
    ]
    for name, body in specs:
        out.append(f'  RUN("{name}", "{c_asm(body)}");')
    out.append("  return 0; }")
    return "\n".join(out) + "\n"


def model(dcpi, cpu, body, pad, tmp):
    asm = os.path.join(tmp, "m.s")
    with open(asm, "w") as f:
        f.write(".text\n.p2align 6\n" + (f".skip {pad},0x90\n" if pad else "") + "S:\n"
                + "\n".join(body + ["dec %r15", "jnz S"]) + "\nE:\n")
    obj, elf = os.path.join(tmp, "m.o"), os.path.join(tmp, "m.elf")
    subprocess.run(["as", "-o", obj, asm], check=True)
    subprocess.run(["ld", "-o", elf, obj, "-Ttext=0x100000", "-e", "0x100000"], check=True,
                   capture_output=True)
    syms = {}
    for line in subprocess.run(["nm", elf], capture_output=True, text=True).stdout.splitlines():
        addr, _, sym = line.split()
        syms[sym] = int(addr, 16)
    r = subprocess.run([dcpi, "model", "--image", elf, "--range", f"{syms['S']:x}-{syms['E']:x}",
                        "--loop", "--cpu", cpu, "--format", "json"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(r.stderr)
    return json.loads(r.stdout)["cycles_per_iteration"]


def main():
    pad = int(os.environ.get("PAD", "32"))
    cpu = os.environ.get("CPU", "zen5")
    dcpi = os.environ.get("DCPI", os.path.join(ROOT, "target", "release", "dcpi"))
    specs = []
    for arg in sys.argv[1:]:
        name, eq, body = arg.partition("=")
        if not eq or not name:
            sys.exit(__doc__)
        specs.append((name, [x.strip() for x in body.split(";") if x.strip()]))
    if not specs or not 0 <= pad < 64:
        sys.exit(__doc__)
    with tempfile.TemporaryDirectory() as tmp:
        if os.environ.get("MODEL_ONLY"):
            measured = ["-"] * len(specs)
        else:
            src, exe = os.path.join(tmp, "loops.c"), os.path.join(tmp, "loops")
            with open(src, "w") as f:
                f.write(program(specs, pad))
            subprocess.run(["gcc", "-O2", "-o", exe, src], check=True)
            measured = subprocess.run(["taskset", "-c", "1", exe], check=True,
                                      capture_output=True, text=True).stdout.split()
        print(f"{'loop':16s} {'measured':>8s} {'model':>8s}   (cycles a trip, PAD {pad}, {cpu})")
        for (name, body), m in zip(specs, measured):
            print(f"{name:16s} {m:>8s} {model(dcpi, cpu, body, pad, tmp):8.2f}")


if __name__ == "__main__":
    main()
