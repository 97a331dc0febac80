#!/usr/bin/python3
"""make bench rows for record --opcodes (docs/opcodes.md): what reading the
leaf frame's instruction byte adds to the in-kernel cost of a sample. Prints
one JSON row per line (scripts/bench.py's EXTRA_ROW_SCRIPTS format).

  --opcodes extra  per interpreter (3.8-3.15, every target of
                   scripts/targets.sh): tests/integration/py/opcodes_add.py
                   (a loop of int additions) pinned to CPU 0,
                   `bpfpy record -F 1000 -d D` pinned to CPU 1, alternately
                   without and with --opcodes, R pairs; the value is the
                   mean of the pairs' differences of "in-kernel cost X
                   us/sample" (record's summary: CNT_COST_NS / CNT_KEPT),
                   with its 95% interval (Student t over the pairs), the
                   plain sample's cost beside it. Goal <= 0.5 us.

Usage: scripts/bench_opcodes.py [--json] [--quick]
"""
import json
import os
import subprocess
import sys
from bench_stats import kernel_extra

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BPFPY = os.environ.get("BPFPY", os.path.join(ROOT, "build", "bpfpy"))
PROG = os.path.join(ROOT, "tests", "integration", "py", "opcodes_add.py")
QUICK = "--quick" in sys.argv
OUT = os.path.join(os.environ.get("TMPDIR", "/tmp"), "bpfpy-bench-opcodes.%d.txt" % os.getpid())
PAIRS, DUR = (2, 2) if QUICK else (4, 3)


def labels():
    out = subprocess.run([os.path.join(HERE, "targets.sh")], capture_output=True, text=True).stdout
    return [l.split("\t")[1] for l in out.splitlines() if l.count("\t") == 3]


def row(goal, value, ci, target=None, limit=None, unit="us"):
    print(json.dumps({"goal": goal, "value": round(value, 3) if value is not None else None,
                      "ci95": round(ci, 3) if ci is not None else None,
                      "target": target, "limit": limit, "unit": unit}), flush=True)


def main():
    for label in labels():
        # Long enough for every pair; killed after them.
        p = subprocess.Popen(["taskset", "-c", "0", os.path.join(HERE, "pyrun.sh"), label, PROG,
                              str(4 * PAIRS * (DUR + 10))],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            p.stdout.readline()  # "ready"
            m, ci, pm = kernel_extra(BPFPY, p.pid, ["--opcodes"], PAIRS, DUR, OUT)
            if m is not None:
                row(f"record --opcodes in-kernel extra per sample, {label} (plain {pm:.2f} us)",
                    m, ci, "<= 0.5", 0.5)
            else:
                row(f"record --opcodes in-kernel extra per sample, {label}", None, None,
                    "n/a: no in-kernel cost in record's summary")
        finally:
            p.kill()
            p.wait()


try:
    main()
finally:
    if os.path.exists(OUT):
        os.unlink(OUT)
