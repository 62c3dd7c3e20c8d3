#!/usr/bin/env python3
"""Latency and throughput of single vector instructions on this host, beside
the host model's: the quickest way to find an instruction the machine
description costs wrongly.

Each argument is NAME=TEMPLATE, an AT&T instruction with D where its
destination goes and S where the source that carries a chain goes (e.g.
'vaddps=vaddps %zmm0,S,D'; `{W}` in the template is the register width).
Two blocks are timed with models/examples/measure.rs (BHive-style,
unrolled, pinned to CPU 1) and modeled:
  latency:    four copies with D = S = the same register, cycles / 4;
  throughput: twelve copies into twelve different registers from one
              source, cycles / 12 (an instruction that also reads its
              destination, as aesenc or vpdpbusd do, measures max(its
              latency / 12, its rate): use the VEX three-operand form).
A template without S times only the throughput meaningfully.

Session 62 found with it, on the Zen 5 host: 512-bit forms run as their
ymm forms (vaddps %zmm 2 cycles, not 4), single-precision divides and
square roots quicker than double, vpsadbw on the multiply pipes:

  WIDTH=zmm datasets/models/insn_sweep.py 'vaddps=vaddps %zmm0,S,D' \\
      'vpermd=vpermd S,%zmm0,D' 'vdivps=vdivps %zmm0,S,D'

Environment: WIDTH (xmm, ymm or zmm: the registers S and D name; default
zmm), MEASURE (the measure example's binary; default
target/release/examples/measure, built with `cargo build --release -p
dcpi-models --example measure`), DCPI_MACHINE (another description for
the model column).
Usage: insn_sweep.py NAME=TEMPLATE...
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def assemble(lines):
    """The bytes of `lines` (AT&T), as hex."""
    with tempfile.TemporaryDirectory() as d:
        src, obj, raw = (os.path.join(d, n) for n in ("b.s", "b.o", "b.bin"))
        with open(src, "w") as f:
            f.write("\n".join(lines) + "\n")
        subprocess.run(["as", "--64", "-o", obj, src], check=True)
        subprocess.run(["objcopy", "-O", "binary", "-j", ".text", obj, raw], check=True)
        with open(raw, "rb") as f:
            return f.read().hex()


def timed(measure, hexbytes):
    """(measured, modeled) cycles a copy of the block `hexbytes`."""
    out = subprocess.run(
        ["taskset", "-c", "1", measure, hexbytes],
        capture_output=True, text=True, check=True,
    ).stdout.strip().splitlines()[-1]
    m = re.search(r"measured (\S+)\s+model (\S+)", out)
    if not m:
        sys.exit(f"measure said: {out}")
    return float(m.group(1)), float(m.group(2))


def main():
    args = sys.argv[1:]
    if not args or any("=" not in a for a in args):
        sys.exit(__doc__)
    width = os.environ.get("WIDTH", "zmm")
    measure = os.environ.get(
        "MEASURE", os.path.join(ROOT, "target/release/examples/measure")
    )
    if not os.path.exists(measure):
        sys.exit(f"{measure} is missing: cargo build --release -p dcpi-models --example measure")
    reg = lambda n: f"%{width}{n}"
    print(f"{'instruction':<16} {'latency':>8} {'[model]':>8}   {'cycles each':>11} {'[model]':>8}")
    for arg in args:
        name, template = arg.split("=", 1)
        template = template.replace("{W}", width)
        chain = [template.replace("D", reg(2)).replace("S", reg(2))] * 4
        wide = [template.replace("D", reg(r)).replace("S", reg(1)) for r in range(3, 15)]
        lat, lat_model = (c / 4 for c in timed(measure, assemble(chain)))
        each, each_model = (c / 12 for c in timed(measure, assemble(wide)))
        print(f"{name:<16} {lat:8.2f} {lat_model:8.2f}   {each:11.2f} {each_model:8.2f}")


if __name__ == "__main__":
    main()
