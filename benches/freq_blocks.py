#!/usr/bin/env python3
"""Per-block frequency estimates of `dcpi cpi --all --format json` beside
callgrind's exact counts: a diagnostic for the analyzer.
Usage: freq_blocks.py ALL.json CALLGRIND.OUT IMAGE_PATH [PROFILE.db | RUNS]
callgrind counts one run; a profile may hold several runs of the image
(the zen3 set: 4), so its counts are multiplied by the number of processes
that ran IMAGE_PATH in PROFILE.db (as `dcpi accuracy` does), or by RUNS."""
import json, os, sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from callgrind_file import records  # noqa: E402

def truth_counts(path, image):
    """callgrind's exact execution counts by address in `image` (its path
    as callgrind recorded it)."""
    truth = defaultdict(int)
    for ob, _, _, addr, _, cost in records(path):
        if ob == image:
            truth[addr] += cost
    return truth

def recorded_cells(dcpi, names, data):
    """Per workload in `names` and recorded set under `data` holding it (the
    top set "." first): (name, set, the functions of `dcpi cpi --all --format
    json --confidence low`, callgrind's counts by address times the
    profile's runs -- callgrind ran the workload once, a profile may hold
    several runs)."""
    import os, sqlite3, subprocess
    sets = ["."] + sorted(
        d for d in os.listdir(data)
        if os.path.isdir(os.path.join(data, d)) and os.path.exists(os.path.join(data, d, "kernels.db"))
    )
    for name in names:
        truth = truth_counts(f"{data}/{name}.callgrind", f"{data}/{name}")
        for s in sets:
            db = os.path.join(data, s, f"{name}.db")
            if not os.path.exists(db):
                continue
            runs = sqlite3.connect(db).execute("select count(*) from runs").fetchone()[0]
            out = subprocess.run(
                [dcpi, "cpi", "--all", "--db", db, "--symfs", data, "--image", name,
                 "--format", "json", "--confidence", "low"],
                check=True, capture_output=True, text=True,
            ).stdout
            yield name, s, json.loads(out)["functions"], {a: n * runs for a, n in truth.items()}

def cell_args(argv, flag, default, names, usage):
    """The command line of a script over `recorded_cells`: `[FLAG N] [DCPI]
    [NAME,NAME...]` as (N, the dcpi binary, the workload names), `default`
    and `names` where not given; exits with `usage` on an unknown option."""
    import os, sys
    value = default
    if argv[:1] == [flag]:
        value, argv = float(argv[1]), argv[2:]
    if argv and argv[0].startswith("-"):
        sys.exit(usage)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    dcpi = argv[0] if argv else os.path.join(root, "target/release/dcpi")
    return value, dcpi, argv[1].split(",") if len(argv) > 1 else names

def profile_runs(arg, image):
    import os, sqlite3
    if arg is None:
        return 1
    if arg.isdigit():
        return int(arg)
    con = sqlite3.connect(f"file:{arg}?mode=ro", uri=True)
    n = con.execute(
        "SELECT COUNT(DISTINCT c.process_id) FROM counts c JOIN images i ON i.id = c.image_id "
        "WHERE i.path = ? OR i.path LIKE ?", (image, '%/' + os.path.basename(image))).fetchone()[0]
    return max(1, n or 1)

def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    d = json.load(open(sys.argv[1]))
    truth = truth_counts(sys.argv[2], sys.argv[3])
    runs = profile_runs(sys.argv[4] if len(sys.argv) > 4 else None, sys.argv[3])
    if runs > 1:
        print(f"callgrind counts x {runs} (runs in the profile)")
        truth = {k: v * runs for k, v in truth.items()}
    for f in d['functions']:
        print(f['function'], 'cycles/sample', round(f['cycles_per_sample'] or 0))
        for b in f['blocks']:
            a = int(b['start'], 16)
            t = truth.get(a, 0); e = b['freq'] or 0
            err = f"{(e - t) / t * 100:+7.1f}%" if t else "   n/a"
            print(f"  b{b['index']:<3} {b['start']} n={b['instructions']:<3} samples={b['samples']:<6} best={b['best_cycles']:5.2f} "
                  f"est={e:12.0f} true={t:10} {err} {b['confidence']:<6} class={b['class']} loops={b['loops']}")


if __name__ == "__main__":
    main()
