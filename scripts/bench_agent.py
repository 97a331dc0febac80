#!/usr/bin/python3
"""make bench rows for the agent (docs/agent.md): what `bpfpy record -a
--rotate` costs, continuously, at 19 Hz (the OpenTelemetry eBPF profiler's
default rate, prime so that it does not beat with periodic work) over 50
and 200 idle-ish Python processes (scripts/bench_system_light.py: a little
work every 10 ms). Prints one JSON row per line (scripts/bench.py's
EXTRA_ROW_SCRIPTS format).

For each count N, R runs of `bpfpy record -a -F 19 --rotate 10 -d D`:
  bpfpy CPU per hour   "bpfpy CPU while sampling X s" of record's summary
                       (its own CPU clock, every thread: draining, naming,
                       /proc, the windows' writer thread) over the elapsed
                       seconds, x 3600; and as % of one core (goal <= 0.2%)
  steady               the same from the windows' own lines (--window-stats:
                       bpfpy's CPU between two window ends), over every
                       window but the first (the start: registering every
                       process) and the last (partial), as % of a core
  whole process        the same from getrusage of the bpfpy child after it
                       exited (loading the BPF programs and writing the
                       last window included), over the same elapsed time
  in-kernel per hour   "in-kernel cost X us/sample" x emitted samples /
                       elapsed, x 3600: the BPF programs' own time
Mean and 95% interval (Student t over the runs).

Usage: scripts/bench_agent.py [--json] [--quick] [N ...]
"""
import json
import math
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from bench_stats import mean_ci

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BPFPY = os.environ.get("BPFPY", os.path.join(ROOT, "build", "bpfpy"))
QUICK = "--quick" in sys.argv
JSON = "--json" in sys.argv
COUNTS = [int(a) for a in sys.argv[1:] if a.isdigit()] or [50, 200]
RUNS, DUR = (1, 20) if QUICK else (3, 120)
RATE = 19


def host_python():
    out = subprocess.run([os.path.join(HERE, "targets.sh"), "--no-provision"],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) == 4 and f[2] == "/":
            return f[3]
    return sys.executable


def start_light(n, tmp, py):
    procs = []
    for i in range(n):
        procs.append(subprocess.Popen([py, os.path.join(HERE, "bench_system_light.py"),
                                       os.path.join(tmp, "ready.%d" % i)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if sum(os.path.exists(os.path.join(tmp, "ready.%d" % i)) for i in range(n)) >= n:
            break
        time.sleep(0.2)
    return procs


def one_run(tmp):
    out = tempfile.mkdtemp(dir=tmp)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run([BPFPY, "record", "-a", "-F", str(RATE), "--rotate", "10", "--window-stats", "-d", str(DUR),
                        "-o", out + "/"], capture_output=True, text=True, timeout=DUR + 120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    shutil.rmtree(out, ignore_errors=True)
    err = r.stderr
    el = re.search(r"bpfpy record: ([\d.]+) s, clock", err)
    cpu = re.search(r"bpfpy CPU while sampling ([\d.]+) s", err)
    kern = re.search(r"in-kernel cost ([\d.]+) us/sample", err)
    emitted = re.search(r"emitted (\d+)", err)
    if r.returncode or not el or not cpu:
        print("bench_agent: run failed (%d): %s" % (r.returncode, err[-300:]), file=sys.stderr)
        return None
    e = float(el.group(1))
    whole = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    k = float(kern.group(1)) * int(emitted.group(1)) / 1e6 if kern and emitted else None
    win = [float(x) for x in re.findall(r"record: window \d+ \S+: .*?\(([\d.]+)% of a core\)", err)]
    steady = sum(win[1:-1]) / len(win[1:-1]) if len(win) > 2 else None
    return {"cpu_h": float(cpu.group(1)) / e * 3600, "whole_h": whole / e * 3600, "steady": steady,
            "kern_h": k / e * 3600 if k is not None else None}


def row(goal, vals, target=None, limit=None, unit="s"):
    m, ci = mean_ci(vals)
    rec = {"goal": goal, "value": round(m, 3) if m is not None else None,
           "ci95": round(ci, 3) if ci is not None else None, "target": target,
           "limit": limit, "unit": unit}
    if JSON:
        print(json.dumps(rec), flush=True)
    print("  %-70s %s%s %s" % (goal, "-" if m is None else "%.3f" % m,
                               "" if ci is None else " +- %.3f" % ci, unit), file=sys.stderr)


def main():
    py = host_python()
    for n in COUNTS:
        tmp = tempfile.mkdtemp(prefix="bpfpy-bench-agent.")
        procs = start_light(n, tmp, py)
        try:
            runs = [x for x in (one_run(tmp) for _ in range(RUNS)) if x]
        finally:
            for p in procs:
                p.kill()
            for p in procs:
                p.wait()
            shutil.rmtree(tmp, ignore_errors=True)
        tag = "record -a -F %d --rotate 10, %d light procs" % (RATE, n)
        row(tag + ": bpfpy CPU per hour", [r["cpu_h"] for r in runs])
        row(tag + ": bpfpy CPU, % of a core", [r["cpu_h"] / 36 for r in runs], "<= 0.2", 0.2, "%")
        row(tag + ": steady, % of a core (windows 2..n-1)", [r["steady"] for r in runs], "<= 0.2", 0.2, "%")
        row(tag + ": whole process (getrusage) per hour", [r["whole_h"] for r in runs])
        row(tag + ": in-kernel per hour", [r["kern_h"] for r in runs])


if __name__ == "__main__":
    main()
