#!/usr/bin/env python3
"""Overhead of the continuous-mode daemon (`dcpi start`) on a busy system.

The system is kept busy by two CPU-bound workers (datasets/workloads/spin.c,
each timing its own work, one per CPU, restarted back to back) and a shell
that forks and execs /bin/true every 20 ms. Phases of PHASE seconds
alternate: no daemon, daemon at 1 kHz per CPU, daemon at 10 kHz per CPU
(kernel links on, as `dcpi start` does by default), 10 kHz without kernel
links, and for comparison
`perf record -a -e cpu-clock -F 10000` over the same phase, ROUNDS times. Per phase:
  - work slowdown: median self-timed seconds of the spin runs finished in the
    phase over the median of the neighbouring bare phases (wall clock:
    disturbed by the host's other tenants);
  - daemon CPU: the daemon's own user+system seconds (from `dcpi status`)
    over the phase's CPU seconds (PHASE x CPUs): its direct share of the machine;
  - resident memory (peak) and database growth, extrapolated per hour.
Medians over rounds are printed. Usage: continuous_overhead.py DCPI SPIN ITERS PHASE ROUNDS OUTDIR
"""
import json, os, random, statistics, subprocess, sys, threading, time

dcpi, spin, iters, phase, rounds, out = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
ncpu = os.cpu_count()
run_dir = os.path.join(out, "run")
stop = threading.Event()
finished = []  # (end time, work seconds)
lock = threading.Lock()


def worker():
    while not stop.is_set():
        r = subprocess.run([spin, iters], capture_output=True, text=True)
        with lock:
            finished.append((time.monotonic(), float(r.stdout.split()[0])))


churn = subprocess.Popen(["sh", "-c", "while :; do /bin/true; sleep 0.02; done"])
threads = [threading.Thread(target=worker, daemon=True) for _ in range(ncpu)]
for t in threads:
    t.start()


def works_between(t0, t1):
    with lock:
        return [w for (t, w) in finished if t0 <= t <= t1]


def status():
    r = subprocess.run([dcpi, "status", "--format", "json", "--run-dir", run_dir], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


results = {"bare": [], "1000": [], "10000": [], "10000nolinks": [], "perf10000": []}
daemon = {"1000": [], "10000": [], "10000nolinks": []}
time.sleep(phase / 4)  # warm up
for rnd in range(rounds):
    order = ["bare", "1000", "10000", "10000nolinks", "perf10000"]
    random.shuffle(order)  # a trend in the host's noise must not favour a phase
    for cfg in order:
        db = os.path.join(out, f"c{cfg}.db")
        for suf in ("", "-wal", "-shm"):
            if os.path.exists(db + suf):
                os.remove(db + suf)
        perf = None
        if cfg == "perf10000":
            perf = subprocess.Popen(["perf", "record", "-q", "-a", "-e", "cpu-clock", "-F", "10000", "-o", os.path.join(out, "perf.data")],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1)
        elif cfg != "bare":
            hz = cfg.removesuffix("nolinks")
            extra = ["--no-kernel-links"] if cfg.endswith("nolinks") else []
            subprocess.run([dcpi, "start", "--run-dir", run_dir, "--db", db, "-F", hz, "--flush-interval", "10"] + extra, check=True, capture_output=True)
            s0 = status()
        t0 = time.monotonic()
        time.sleep(phase)
        t1 = time.monotonic()
        if perf:
            perf.send_signal(2)
            perf.wait()
            print(f"  perf.data {os.path.getsize(os.path.join(out, 'perf.data')) / 2**20:.1f} MiB for {t1 - t0:.0f} s", flush=True)
        elif cfg != "bare":
            s1 = status()
            cpu = (s1["cpu"]["user_s"] + s1["cpu"]["system_s"]) - (s0["cpu"]["user_s"] + s0["cpu"]["system_s"])
            subprocess.run([dcpi, "stop", "--run-dir", run_dir], check=True, capture_output=True)
            size = sum(os.path.getsize(db + s) for s in ("", "-wal") if os.path.exists(db + s))
            daemon[cfg].append({
                "cpu_share": cpu / ((t1 - t0) * ncpu),
                "peak_kib": s1["memory"]["peak_kib"],
                "bound_kib": s1["memory"]["bound_kib"],
                "db_mib_per_hour": size / (t1 - t0) * 3600 / 2**20,
                "samples_per_s": s1["samples_per_s"],
                "lost": s1["lost_records"] + s1["lost_samples"],
                "charged": s1["kernel_links"]["charged_samples"],
            })
        w = works_between(t0 + 2, t1)
        results[cfg].append(statistics.median(w) if w else float("nan"))
        print(f"round {rnd} {cfg:>5}: {len(w)} spin runs, median work {results[cfg][-1]:.3f} s"
              + (f", daemon {100*daemon[cfg][-1]['cpu_share']:.2f} % of the machine" if cfg in daemon else ""), flush=True)

stop.set()
churn.terminate()
for t in threads:
    t.join()
print()
print(f"{rounds} rounds of {phase:.0f} s phases, {ncpu} CPUs, both busy")
slow = [results["perf10000"][i] / results["bare"][i] - 1 for i in range(rounds)]
print(f"perf record -a at 10 kHz/CPU: work slowdown median {100*statistics.median(slow):+.2f} % (rounds: {', '.join(f'{100*s:+.1f}' for s in slow)})")
for cfg in ("1000", "10000", "10000nolinks"):
    slow = [results[cfg][i] / results["bare"][i] - 1 for i in range(rounds)]
    d = daemon[cfg]
    med = lambda k: statistics.median(x[k] for x in d)
    print(f"{cfg:>12} Hz/CPU: work slowdown median {100*statistics.median(slow):+.2f} % (rounds: {', '.join(f'{100*s:+.1f}' for s in slow)}); "
          f"daemon CPU {100*med('cpu_share'):.2f} % of the machine; peak RSS {med('peak_kib')/1024:.1f} MiB (bound {med('bound_kib')/1024:.1f}); "
          f"database {med('db_mib_per_hour'):.1f} MiB/hour; {med('samples_per_s'):.0f} samples/s; lost {med('lost'):.0f}; charged {med('charged'):.0f}")
