"""Reads a callgrind output file made with `--dump-instr=yes` (positions
`instr line`): one record per cost line of a function's own code, with
the object, source file and function it belongs to, the instruction's
address, its source line (0: none) and its cost (Ir). Calls' inclusive
costs (the line after `calls=`) are skipped: each instruction is counted
once, in the function whose code it is.

Shared by the benches that need callgrind's counts: `freq_blocks.py`
(exact execution counts by address) and `callgrind_lines.py` (a function's
cost by source line)."""
import re

# Name compression: `fl=(3) /path` names index 3, later `fl=(3)` refers to
# it. Files and functions have their own index spaces, objects another;
# `fi`/`fe` (inlined code) and the `c*` forms of a call share them.
_KIND = {"ob": "ob", "cob": "ob", "fl": "fl", "fi": "fl", "fe": "fl", "cfi": "fl",
         "cfl": "fl", "fn": "fn", "cfn": "fn"}
_NAME = re.compile(r"^(c?ob|fl|fi|fe|cfi|cfl|c?fn)=\((\d+)\)(?: (.*))?$")


def records(path):
    """Yields (object, file, function, address, line, cost) per own cost line."""
    names = {}
    ob = fl = fn = None
    pos = [0, 0]
    skip = False
    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            m = _NAME.match(line)
            if m:
                key, idx, name = m.groups()
                kind = _KIND[key]
                if name:
                    names[(kind, idx)] = name
                named = names.get((kind, idx), idx)
                if key == "ob":
                    ob = named
                elif key in ("fl", "fi", "fe"):
                    fl = named
                elif key == "fn":
                    fn = named
                continue
            if line.startswith("calls="):
                skip = True
                continue
            if not line or not (line[0].isdigit() or line[0] in "+-*"):
                continue
            t = line.split()
            if len(t) < 3:
                continue
            for k in range(2):
                x = t[k]
                if x == "*":
                    pass
                elif x[0] == "+":
                    pos[k] += int(x[1:], 0)
                elif x[0] == "-":
                    pos[k] -= int(x[1:], 0)
                else:
                    pos[k] = int(x, 0)
            if skip:
                skip = False
                continue
            yield ob, fl, fn, pos[0], pos[1], int(t[2])
