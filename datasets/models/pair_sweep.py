#!/usr/bin/env python3
"""Every pair of instructions chained through one register, timed on this
host beside the host model: where the latency from one class to another
is not the producer's latency alone (bypass delays between the register
files or between execution domains), a pair is off while both
instructions alone are right.

Each argument is NAME=INSTRUCTION, an AT&T instruction that reads and
writes the chain's register (%xmm0 in the default set). For each ordered
pair (A, B) the block `A; B` is timed unrolled with
models/examples/measure.rs (pinned to CPU 1, best of two) and modeled;
pairs off by more than 0.3 cycles are marked `<<<`, and the mean absolute
difference is printed at the end.

Session 65 found with it, on the Zen 5 host, that a floating-point add
reaches anything but another add a cycle late (`vaddps; vmulps` 6.0, not
5; zen5 `fp_add`'s `other_class_latency`); after that the default sixteen
(256 pairs) agree to 0.006 cycles on average:

  python3 datasets/models/pair_sweep.py

Environment: MEASURE (the measure example's binary; default
target/release/examples/measure, built with `cargo build --release -p
dcpi-models --example measure`), DCPI_MACHINE (another description for
the model column).
Usage: pair_sweep.py [NAME=INSTRUCTION...]
"""
import itertools
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from insn_sweep import ROOT, assemble, timed  # noqa: E402

DEFAULT = {
    "vpaddd": "vpaddd %xmm0,%xmm0,%xmm0",
    "vpxor": "vpxor %xmm1,%xmm0,%xmm0",
    "vpshufb": "vpshufb %xmm1,%xmm0,%xmm0",
    "vpshufd": "vpshufd $0x1b,%xmm0,%xmm0",
    "vpslld": "vpslld $1,%xmm0,%xmm0",
    "vpmulld": "vpmulld %xmm0,%xmm0,%xmm0",
    "vaddps": "vaddps %xmm0,%xmm0,%xmm0",
    "vmulps": "vmulps %xmm0,%xmm0,%xmm0",
    "vfmadd": "vfmadd231ps %xmm1,%xmm1,%xmm0",
    "vandps": "vandps %xmm1,%xmm0,%xmm0",
    "vblendvps": "vblendvps %xmm1,%xmm1,%xmm0,%xmm0",
    "vpcmpeqb": "vpcmpeqb %xmm1,%xmm0,%xmm0",
    "vcvtdq2ps": "vcvtdq2ps %xmm0,%xmm0",
    "vunpcklps": "vunpcklps %xmm1,%xmm0,%xmm0",
    "vpminub": "vpminub %xmm1,%xmm0,%xmm0",
    "vshufps": "vshufps $0x1b,%xmm0,%xmm0,%xmm0",
}


def best_of_two(measure, hexbytes):
    """(measured, modeled): the lower of two timings."""
    runs = []
    for _ in range(2):
        try:
            runs.append(timed(measure, hexbytes))
        except (subprocess.CalledProcessError, ValueError):
            continue
    return min(runs) if runs else None


def main():
    ops = dict(a.split("=", 1) for a in sys.argv[1:]) or DEFAULT
    measure = os.environ.get("MEASURE", os.path.join(ROOT, "target/release/examples/measure"))
    if not os.path.exists(measure):
        sys.exit(f"{measure} not found: cargo build --release -p dcpi-models --example measure")
    for name, insn in ops.items():
        print(f"{name:12s} alone {best_of_two(measure, assemble([insn]))}", flush=True)
    diffs = []
    for (a, ia), (b, ib) in itertools.product(ops.items(), ops.items()):
        got = best_of_two(measure, assemble([ia, ib]))
        if got is None:
            print(f"{a:12s} -> {b:12s} not measurable", flush=True)
            continue
        measured, model = got
        diffs.append(abs(measured - model))
        mark = "  <<<" if abs(measured - model) > 0.3 else ""
        print(f"{a:12s} -> {b:12s} measured {measured:6.2f} model {model:6.2f}{mark}", flush=True)
    if diffs:
        print(f"{len(diffs)} pairs, mean |measured - model| {sum(diffs) / len(diffs):.3f} cycles")


if __name__ == "__main__":
    main()
