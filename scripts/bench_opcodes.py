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
import os
import subprocess
import sys
import tempfile
from bench_stats import json_row as row, kernel_extra, target_rows

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BPFPY = os.environ.get("BPFPY", os.path.join(ROOT, "build", "bpfpy"))
PROG = os.path.join(ROOT, "tests", "integration", "py", "opcodes_add.py")
QUICK = "--quick" in sys.argv
PAIRS, DUR = (2, 2) if QUICK else (4, 3)


def main(out):
    for label in target_rows():
        # Long enough for every pair; killed after them.
        p = subprocess.Popen(["taskset", "-c", "0", os.path.join(HERE, "pyrun.sh"), label, PROG,
                              str(4 * PAIRS * (DUR + 10))],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            p.stdout.readline()  # "ready"
            m, ci, pm = kernel_extra(BPFPY, p.pid, ["--opcodes"], PAIRS, DUR, out)
        finally:
            p.kill()
            p.wait()
        if m is None:
            row(f"record --opcodes in-kernel extra per sample, {label}", None, None,
                "n/a: no in-kernel cost in record's summary")
        else:
            row(f"record --opcodes in-kernel extra per sample, {label} (plain {pm:.2f} us)",
                m, ci, "<= 0.5", 0.5)


with tempfile.TemporaryDirectory(prefix="bpfpy-bench-opcodes.") as d:
    main(os.path.join(d, "out.folded"))
