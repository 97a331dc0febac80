#!/usr/bin/python3
"""make bench rows for asyncio (docs/async.md): what record --async adds to
the in-kernel cost of a sample, and how long dump --async stops a target
with 10,000 tasks. Prints one JSON row per line (scripts/bench.py's
EXTRA_ROW_SCRIPTS format).

  --async extra   per interpreter 3.11+: tests/integration/py/async_gather.py
                  pinned to CPU 0, `bpfpy record -F 1000 -d D` pinned to CPU 1,
                  alternately without and with --async, R pairs; the value is
                  the mean of the pairs' differences of "in-kernel cost X
                  us/sample" (record's summary: CNT_COST_NS / CNT_KEPT), with
                  its 95% interval (Student t over the pairs). Goal <= 2 us.
  dump stop       tests/integration/py/async_shapes.py (10,012 tasks), the
                  "Stopped the target for X us" of `dump --async`, R runs,
                  mean and 95% interval, in ms; no goal.

Usage: scripts/bench_async.py [--json] [--quick]
"""
import math
import os
import re
import subprocess
import sys
import time
from bench_stats import json_row as row, kernel_extra, mean_ci, target_rows

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BPFPY = os.environ.get("BPFPY", os.path.join(ROOT, "build", "bpfpy"))
PY = os.path.join(ROOT, "tests", "integration", "py")
QUICK = "--quick" in sys.argv
OUT = os.path.join(os.environ.get("TMPDIR", "/tmp"), "bpfpy-bench-async.%d.txt" % os.getpid())
PAIRS, DUR = (2, 2) if QUICK else (4, 3)


def targets():
    keep = {}
    for version, label, root, py in target_rows().values():
        minor = int(version.split(".")[1])
        if minor >= 11 and not label.startswith("debian"):
            keep[label] = (version, label, root, py)
    return keep


def start(label, script):
    p = subprocess.Popen(["taskset", "-c", "0", os.path.join(HERE, "pyrun.sh"), label, script],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    p.stdout.readline()  # "ready"
    return p


def main():
    for label, (version, _, root, _) in sorted(targets().items()):
        p = start(label, os.path.join(PY, "async_gather.py"))
        try:
            m, ci, pm = kernel_extra(BPFPY, p.pid, ["--async"], PAIRS, DUR, OUT)
            if m is not None:
                row(f"record --async in-kernel extra per sample, {label} (plain {pm:.2f} us)",
                    m, ci, "<= 2", 2)
        finally:
            p.kill()
            p.wait()
    for label in ("pyenv-3.12", "sid-3.15"):
        if label not in targets():
            continue
        p = start(label, os.path.join(PY, "async_shapes.py"))
        try:
            stops = []
            for _ in range(PAIRS + 1):
                r = subprocess.run(["taskset", "-c", "1", BPFPY, "dump", "-p", str(p.pid), "--async"],
                                   capture_output=True, text=True, timeout=120)
                m = re.search(r"Stopped the target for ([0-9.]+) us", r.stdout)
                if m:
                    stops.append(float(m.group(1)) / 1000)
            if stops:
                m, ci = mean_ci(stops)
                row(f"dump --async stop with 10,012 tasks, {label}", m, ci, unit="ms")
        finally:
            p.kill()
            p.wait()


try:
    main()
finally:
    if os.path.exists(OUT):
        os.unlink(OUT)
