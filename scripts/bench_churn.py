#!/usr/bin/python3
"""make bench rows for thread churn (issue 28, docs/record.md "Threads that
come and go"): what a sample costs in the kernel, and how many fail, when
the target's threads live for one request, beside the same work on threads
that live throughout. Prints one JSON row per line (scripts/bench.py's
EXTRA_ROW_SCRIPTS format).

For each interpreter (3.10, 3.12 and 3.15 as the issue measured; --quick:
3.12), tests/integration/py/churn.py runs each shape in turn, R rounds,
and `bpfpy record -p PID -F 997 -d D` records it once it is ready (its
start-up is not in the figures):

  futures  a ThreadPoolExecutor of 4 threads per batch of 8 tasks (churn)
  steady   the same tasks on one executor for the whole run
  server   http.server.ThreadingHTTPServer, a thread per request (churn),
           loaded by a client process of its own
  pool     the same server, its requests handled by 4 threads that live
           throughout

Rows per interpreter: in-kernel us/sample under churn (record's "in-kernel
cost X us/sample", CNT_COST_NS / CNT_KEPT), mean and 95% interval over the
rounds, the steady figure beside it in the row's name; churn / steady,
the mean of the rounds' ratios (each round records both shapes back to
back), goal <= 1.5; errors under churn, % of the ticks (the summary's
"ticks N = ... E errors"), goal <= 0.2; and the thread hooks' in-kernel
time per thread born (the summary's "threads:" line), no goal.

Usage: scripts/bench_churn.py [--json] [--quick]
"""
import os
import re
import subprocess
import sys
import tempfile
import time
from bench_stats import json_row as row, mean_ci, target_rows

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BPFPY = os.environ.get("BPFPY", os.path.join(ROOT, "build", "bpfpy"))
CHURN = os.path.join(ROOT, "tests", "integration", "py", "churn.py")
QUICK = "--quick" in sys.argv
LABELS = ["pyenv-3.12"] if QUICK else ["pyenv-3.10", "pyenv-3.12", "sid-3.15"]
ROUNDS, DUR = (2, 2) if QUICK else (4, 3)
PAIRS = (("futures", "steady"), ("server", "pool"))


def measure(label, mode):
    """One recording of one shape: (in-kernel us/sample, errors, ticks,
    hook us per thread born) or None."""
    p = subprocess.Popen([os.path.join(HERE, "pyrun.sh"), label, CHURN, mode, str(DUR + 3)],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        if p.stdout.readline().strip() != "ready":
            return None
        time.sleep(0.3)  # the server's client connects
        with tempfile.NamedTemporaryFile(suffix=".folded") as out:
            r = subprocess.run([BPFPY, "record", "-p", str(p.pid), "-F", "997", "-d", str(DUR),
                                "-o", out.name, "--force"], capture_output=True, text=True,
                               timeout=120)
        cost = re.search(r"in-kernel cost ([0-9.]+) us/sample", r.stderr)
        tally = re.search(r"ticks (\d+) = \d+ written \+ (\d+) errors", r.stderr)
        hooks = re.search(r"threads: (\d+) born .* ran (\d+) times, in-kernel ([0-9.]+) us each",
                          r.stderr)
        if not cost or not tally:
            return None
        per_thread = None
        if hooks and int(hooks.group(1)):
            per_thread = int(hooks.group(2)) * float(hooks.group(3)) / int(hooks.group(1))
        return float(cost.group(1)), int(tally.group(2)), int(tally.group(1)), per_thread
    finally:
        p.kill()
        p.wait()


def bench(label, churn, steady):
    cost, base, ratio, err_pct, hook = [], [], [], [], []
    for _ in range(ROUNDS):
        c, s = measure(label, churn), measure(label, steady)
        if c:
            cost.append(c[0])
            err_pct.append(100.0 * c[1] / max(c[2], 1))
            hook.append(c[3])
        if s:
            base.append(s[0])
        if c and s and s[0] > 0:
            ratio.append(c[0] / s[0])
    what = "%s (churn: a thread per %s)" % (label, "request" if churn == "server" else "batch")
    m, ci = mean_ci(cost)
    bm, _ = mean_ci(base)
    if m is not None:
        row("in-kernel per sample under thread churn, %s %s (%s: %s us)"
            % (churn, what, steady, "%.2f" % bm if bm is not None else "-"), m, ci)
    m, ci = mean_ci(ratio)
    if m is not None:
        row("in-kernel churn / steady, %s vs %s, %s" % (churn, steady, label), m, ci, "<= 1.5",
            1.5, unit="x")
    m, ci = mean_ci(err_pct)
    if m is not None:
        row("errors under thread churn, %s, %s" % (churn, label), m, ci, "<= 0.2", 0.2, unit="%")
    m, ci = mean_ci(hook)
    if m is not None:
        row("thread hooks in-kernel per thread born, %s, %s" % (churn, label), m, ci)


def main():
    have = target_rows()
    for label in LABELS:
        if label not in have:
            continue
        for churn, steady in PAIRS:
            bench(label, churn, steady)


main()
