#!/usr/bin/python3
"""make bench rows of issue 29: the observer effect and de-instrumentation.

On scripts/bench_progs/ocular_loop.py (a hot loop of int arithmetic,
attribute loads and calls, which CPython quickens into specialized
instructions; it counts its own iterations per window), one interpreter
(sid-3.15, else pyenv-3.13/3.12: sys.monitoring needs 3.12+), each run once:

  none      no tool: the loop's throughput
  record    bpfpy record --opcodes -F 1000: throughput, and the share of
            samples whose leaf instruction is a specialized form
  before    the in-process tracer (ocular_loop.py --tracer 0: INSTRUCTION
            events, never disabled -- the state before its threshold)
  after     the in-process tracer with DISABLE at 1000 hits per offset:
            windows after every offset of the loop is disabled
  trace     bpfpy trace --calls --threshold 500 --interval 0.5 (3.15 only,
            the one version with a call probe for every call) on a run of
            at least 10 s: windows from 0.5 s after its detach
'before', 'after' and 'trace' compare with windows of the same run taken
before the tool went in.

Throughput is iterations per second of the loop thread's CPU time (user +
system: a uprobe's trap counts; waiting for a CPU held by others does not).
Throughput rows are ratios with 95% intervals from the windows
(0.25 s each; windows are not independent, so the intervals are a floor);
share rows carry a binomial interval. In the 'before' and 'after' runs
record --opcodes samples for the last part only, after the throughput
windows. Without `record --opcodes` the share and record rows say
"n/a: record --opcodes missing".

Usage: scripts/bench_observer.py [--json] [--quick] [--python LABEL]
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from bench_stats import mean_ci

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BPFPY = os.environ.get("BPFPY", os.path.join(ROOT, "build", "bpfpy"))
LOOP = os.path.join(HERE, "bench_progs", "ocular_loop.py")
QUICK = "--quick" in sys.argv
RUN_S = 4 if QUICK else 10      # throughput windows per run, seconds
SHARE_S = 2 if QUICK else 4     # record --opcodes slot, seconds
TRACE_S = 10 if QUICK else 14   # the trace run: >= 10 s, as issue 29 asks
BASE_S = 3 if QUICK else 5      # baseline in the same run, seconds, warm-up included
WARM_S = 1.0                    # first windows left out: the loop still quickens
# record --opcodes' instruction mark, right on the Python leaf frame: a
# [gc] or off-CPU mark may follow it (docs/opcodes.md).
OP_LEAF = re.compile(r"(?:^|;)\[op ([^\];(]+?)(?: \(([^);]+)\))?\](?:;|$)")


def ratio_ci(a, ca, b, cb):
    if a is None or not b:
        return None, None
    r = a / b
    if ca is None or cb is None or not a:
        return r, None
    return r, abs(r) * math.sqrt((ca / a) ** 2 + (cb / b) ** 2)


def row(goal, value, ci, target=None, limit=None, unit="", where=""):
    """One row; goal at most 63 characters (make bench's table column)."""
    if JSON:
        print(json.dumps({"goal": goal, "where": where,
                          "value": round(value, 4) if value is not None else None,
                          "ci95": round(ci, 4) if ci is not None else None,
                          "target": target, "limit": limit, "unit": unit}), flush=True)
    else:
        v = "-" if value is None else "%.4g" % value
        c = "" if ci is None else " ± %.2g" % ci
        print("%-64s%-11s%12s%s %s %s" % (goal, where, v, c, unit, target or ""), flush=True)


def na(goal, why, where=""):
    row(goal, None, None, "n/a: " + why, where=where)


def pick_label():
    if "--python" in sys.argv:
        return sys.argv[sys.argv.index("--python") + 1]
    out = subprocess.run([os.path.join(HERE, "targets.sh"), "--no-provision"],
                         capture_output=True, text=True).stdout
    labels = [l.split("\t")[1] for l in out.splitlines() if l.count("\t") == 3]
    for want in ("sid-3.15", "pyenv-3.13", "pyenv-3.12"):
        if want in labels:
            return want
    return None


def has_opcodes():
    r = subprocess.run([BPFPY, "record", "--help"], capture_output=True, text=True)
    return "--opcodes" in r.stdout


class Loop:
    """ocular_loop.py under LABEL, pinned to CPU 0; its lines gathered."""

    def __init__(self, label, seconds, *args):
        self.lines = []
        self.p = subprocess.Popen(["taskset", "-c", "0", os.path.join(HERE, "pyrun.sh"), label,
                                   LOOP, str(seconds)] + list(args),
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.p.stdout.readline()  # "ready"
        self.t0 = time.monotonic()
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for line in self.p.stdout:
            self.lines.append(line.split())

    def rates(self, t0=0.0, t1=float("inf")):
        """Iterations per CPU second of the windows that ended in [t0, t1]:
        on a shared machine, time spent waiting for a CPU is not the
        tool's cost (a uprobe's trap is system time, and counts)."""
        return [float(l[3]) for l in list(self.lines)
                if l and l[0] == "rate" and t0 <= float(l[1]) <= t1]

    def mark(self, what):
        for l in list(self.lines):
            if l and l[0] == what:
                return float(l[1])
        return None

    def wait(self):
        try:
            self.p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.t.join(5)


def share(pid, seconds):
    """(specialized share, its ci95, samples with an [op] leaf) from one
    record --opcodes run on CPU 1, or None."""
    with tempfile.NamedTemporaryFile(suffix=".folded") as f:
        r = subprocess.run(["taskset", "-c", "1", BPFPY, "record", "-p", str(pid), "-F", "1000",
                            "-d", str(seconds), "--opcodes", "-f", "collapsed", "-o", f.name,
                            "--force"], capture_output=True, text=True, timeout=seconds + 60)
        if r.returncode:
            return None
        spec = total = 0
        for line in open(f.name, errors="replace"):
            stack, _, n = line.rstrip("\n").rpartition(" ")
            m = OP_LEAF.search(stack)
            if not m or not n.isdigit():
                continue
            total += int(n)
            spec += int(n) if m.group(2) else 0
        # collapsed counts may be ns: the share is a ratio either way; n
        # for the interval is the sample count at 1 kHz.
        samples = seconds * 1000
        if not total:
            return None
        p = spec / total
        return p * 100, 196 * math.sqrt(p * (1 - p) / samples), total


def run_none(label):
    lp = Loop(label, RUN_S)
    lp.wait()
    return mean_ci(lp.rates(lp.t0 + WARM_S))


def run_record(label):
    """record --opcodes after a baseline in the same run: the ratio of the
    windows while it samples to those before, and the share."""
    lp = Loop(label, BASE_S + RUN_S + 1)
    time.sleep(BASE_S)
    t0 = time.monotonic()
    sh = share(lp.p.pid, RUN_S - 1)
    t1 = time.monotonic()
    lp.wait()
    base = mean_ci(lp.rates(lp.t0 + WARM_S, t0))
    m = mean_ci(lp.rates(t0 + 0.5, t1))
    return ratio_ci(m[0], m[1], *base), sh


def run_tracer(label, n, opcodes):
    """The tracer installed after a baseline in the same run; throughput
    windows once its state holds (n = 0: before the threshold; else after
    every loop offset is disabled), then the share. Returns the ratio to
    the baseline, its ci, the share, and whether the state was reached."""
    lp = Loop(label, BASE_S + RUN_S + SHARE_S + 4, "--tracer", str(n), "--start", str(BASE_S))
    for _ in range(int((BASE_S + 15) / 0.05)):
        if lp.mark("all-disabled" if n else "tracer-on"):
            break
        time.sleep(0.05)
    on = lp.mark("tracer-on")
    held = lp.mark("all-disabled" if n else "tracer-on")
    if held is None:
        lp.p.kill()
        lp.wait()
        return None, None, None, False
    start = held + 0.5
    time.sleep(max(0.0, start + RUN_S - time.monotonic()))
    base = mean_ci(lp.rates(lp.t0 + WARM_S, on))
    m = mean_ci(lp.rates(start, start + RUN_S))
    sh = share(lp.p.pid, SHARE_S) if opcodes else None
    lp.p.kill()
    lp.wait()
    r, c = ratio_ci(m[0], m[1], *base)
    return r, c, sh, True


def run_trace(label):
    """bpfpy trace --calls on a run of TRACE_S s after a baseline of BASE_S s
    in the same run: windows from 0.5 s after the probes were detached
    against the windows before the attach."""
    lp = Loop(label, BASE_S + TRACE_S)
    time.sleep(BASE_S)
    t_attach = time.monotonic()
    err = tempfile.TemporaryFile(mode="w+")
    tr = subprocess.Popen(["taskset", "-c", "1", BPFPY, "trace", "-p", str(lp.p.pid), "--calls",
                           "--threshold", "500", "--interval", "0.5", "-f", "summary", "-o",
                           os.devnull, "--force"],
                          stdout=subprocess.DEVNULL, stderr=err, text=True)
    detached, text = None, ""
    while lp.p.poll() is None and detached is None:
        time.sleep(0.05)
        err.seek(0)
        text = err.read()
        if "probes detached" in text:
            detached = time.monotonic()
    lp.wait()
    tr.send_signal(2)
    try:
        tr.wait(timeout=30)
    except subprocess.TimeoutExpired:
        tr.kill()
    if detached is None:
        return None, None, None, text[-200:]
    at = re.search(r"saturated at ([0-9.]+) s", text)
    base = mean_ci(lp.rates(lp.t0 + WARM_S, t_attach))
    m = mean_ci(lp.rates(detached + 0.5))
    r, c = ratio_ci(m[0], m[1], *base)
    return r, c, float(at.group(1)) if at else None, None


def main():
    label = pick_label()
    if not label:
        na("observer effect (issue 29)", "no interpreter 3.12+")
        return
    ops = has_opcodes()
    base, bci = run_none(label)
    row("observer: loop throughput, no tool (M iterations/CPU s)", base / 1e6 if base else None,
        bci / 1e6 if bci else None, unit="M/s", where=label)
    if ops:
        (r, c), sh = run_record(label)
        row("observer: throughput, record --opcodes -F 1000 / none", r, c, where=label)
        if sh:
            row("observer: specialized share %, record --opcodes, no tracer", sh[0], sh[1],
                unit="%", where=label)
    else:
        na("observer: throughput, record --opcodes -F 1000 / none", "record --opcodes missing",
           label)
        na("observer: specialized share %, record --opcodes, no tracer",
           "record --opcodes missing", label)
    after = None
    for n, name in ((0, "before threshold"), (1000, "after DISABLE")):
        r, c, sh, held = run_tracer(label, n, ops)
        if not held:
            na(f"observer: sys.monitoring tracer {name}", "not every offset was disabled", label)
            continue
        row(f"observer: throughput, sys.monitoring {name} / none", r, c, where=label)
        if n:
            after = (r, c)
        if not ops:
            na(f"observer: specialized share %, tracer {name}", "record --opcodes missing", label)
        elif sh:
            row(f"observer: specialized share %, tracer {name}", sh[0], sh[1], unit="%",
                where=label)
    trace_rows(label, after)


def trace_rows(label, after):
    if label != "sid-3.15":
        na("de-instr.: trace --calls overhead % once detached", "no call probes before 3.15",
           label)
    else:
        r, c, at, why = run_trace(label)
        if r is None:
            na("de-instr.: trace --calls overhead % once detached", f"no detach: {why}", label)
        else:
            row(f"de-instr.: trace --calls overhead % once detached, {TRACE_S} s run",
                (1 - r) * 100, c * 100 if c is not None else None, "<= 2", 2, "%", label)
            row("de-instr.: trace --calls detached, s after the attach began", at, None,
                unit="s", where=label)
    if after and after[0] is not None:
        row("de-instr.: sys.monitoring tracer overhead % after DISABLE", (1 - after[0]) * 100,
            after[1] * 100 if after[1] is not None else None, unit="%", where=label)


JSON = "--json" in sys.argv
main()
