"""The benches' one interval: a mean and the half-width of its 95%
Student-t interval, shared so every row of `make bench` is computed alike;
and the one paired measure of what a record option adds to the in-kernel
cost of a sample (kernel_extra); and the one reading of the target
interpreters (target_rows)."""
import json
import math
import os
import re
import subprocess

T975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26,
        10: 2.23, 15: 2.13, 20: 2.09, 30: 2.04}


def target_rows():
    """scripts/targets.sh's interpreters, in its order: label -> [version,
    label, root, python]."""
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run([os.path.join(here, "targets.sh")], capture_output=True, text=True).stdout
    return {l.split("\t")[1]: l.split("\t") for l in out.splitlines() if l.count("\t") == 3}


def mean_ci(xs):
    """Mean and the half-width of its 95% interval (Student t), None if n < 2.
    None entries (a run that gave no figure) are left out."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return None, None
    m = sum(xs) / len(xs)
    if len(xs) < 2:
        return m, None
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))
    df = len(xs) - 1
    t = T975.get(df) or T975[max(k for k in T975 if k <= df)]
    return m, t * sd / math.sqrt(len(xs))


def kernel_us(bpfpy, pid, extra, dur, out):
    """`bpfpy record -p PID -F 1000 -d DUR` pinned to CPU 1, with EXTRA
    options, writing OUT: its summary's "in-kernel cost X us/sample"
    (CNT_COST_NS / CNT_KEPT), or None."""
    r = subprocess.run(["taskset", "-c", "1", bpfpy, "record", "-p", str(pid), "-F", "1000",
                        "-d", str(dur), "-o", out, "--force", "-f", "collapsed"] + extra,
                       capture_output=True, text=True, timeout=60 + dur)
    m = re.search(r"in-kernel cost ([0-9.]+) us/sample", r.stderr)
    return float(m.group(1)) if m else None


def kernel_extra(bpfpy, pid, extra, pairs, dur, out):
    """What EXTRA adds to the in-kernel cost of a sample of PID: PAIRS
    pairs of kernel_us() runs, alternately without and with EXTRA, so that
    a drift of the machine falls on both sides. Returns (mean of the
    pairs' differences, its 95% half-width, mean of the plain runs); None
    for what no pair gave."""
    diffs, plain = [], []
    for _ in range(pairs):
        a = kernel_us(bpfpy, pid, [], dur, out)
        b = kernel_us(bpfpy, pid, extra, dur, out)
        if a is not None and b is not None:
            diffs.append(b - a)
            plain.append(a)
    m, ci = mean_ci(diffs)
    return m, ci, mean_ci(plain)[0]


def json_row(goal, value, ci, target=None, limit=None, unit="us"):
    """One row of scripts/bench.py's EXTRA_ROW_SCRIPTS format, on stdout."""
    print(json.dumps({"goal": goal, "value": round(value, 3) if value is not None else None,
                      "ci95": round(ci, 3) if ci is not None else None,
                      "target": target, "limit": limit, "unit": unit}), flush=True)
