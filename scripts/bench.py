#!/usr/bin/python3
"""make bench: what bpfpy costs, measured side by side, against issue 13's goals.

Not a test: it asserts nothing. It measures, then prints ONE table: every
goal beside its measured value, the value's 95% interval where repeated runs
give one, and the ratio of value to goal. Every figure comes from this one
run on this machine, so ratios compare like with like. Parts:

  kernel   per interpreter: in-kernel µs per sample (the sample header's
           cost, counters CNT_COST_NS / CNT_KEPT) at 3, 30, 300 and 1000
           frames (scripts/bench_progs/depth.py), `bpfpy record` at 1 kHz,
           target pinned to CPU 0 and bpfpy to CPU 1
  record   per interpreter, 300 frames: the highest cpu-clock rate with zero
           lost samples, bpfpy's own user+system CPU per sample (also at 3
           frames) as record's summary gives it ("bpfpy CPU while sampling":
           its process CPU clock from the first sample to the summary, so
           neither BPF loading nor output writing; collapsed output, the
           aggregating path), and the loss at 10 kHz
  oracle   pyenv-3.12 and sid-3.15 through `bpfpy oracle`: per-sample target
           cost of ptrace vs bpf (us_target) and the slowdown of bpf and of
           the interrupt-only control bpf-timer at 1 and 10 kHz on the
           3-frame loop, with their 95% intervals when the oracle gives them
           (slowdown_pct, slowdown_ci95, mode bpf-timer; '-' otherwise)
  extra    row scripts (EXTRA_ROW_SCRIPTS below): each prints JSON rows;
           scripts/bench_system.sh gives the system-wide rows (record -a
           -F 100 over 50 and 200 light processes)

Usage: scripts/bench.py OUT.json [--quick] [--only PART[,PART]] [--python LABEL[,LABEL]]
"""
import json
import math
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from bench_stats import mean_ci, target_rows

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BPFPY = os.environ.get("BPFPY", os.path.join(ROOT, os.environ.get("OUT", "build"), "bpfpy"))
DEPTH_PY = os.path.join(HERE, "bench_progs", "depth.py")
DEPTHS = [3, 30, 300, 1000]

# Hook point: scripts that add rows to the goals table. Each is run as
# `SCRIPT [ARGS...] [--quick]` with BPFPY in its environment, within its
# deadline (s),
# and prints one JSON object per line:
#   {"goal": "what is measured", "value": 1.5, "ci95": 0.2 or null,
#    "target": "<= 3" or null, "limit": 3 or null, "unit": "us"}
# ("limit" with a "<=" or ">=" target gives the ratio column). Lines that
# are not JSON are shown as they are. One line per script in this list.
# Entries are (script, deadline) or (script, deadline, [args]).
EXTRA_ROW_SCRIPTS = [
    # record -a over 50 and 200 light processes: in-kernel / hot, bpfpy CPU
    # with and without start-up, RSS, each a mean of 3 runs (2 with --quick)
    ("scripts/bench_system.sh", 900, ["--json"]),
    # record --async's in-kernel extra per sample (paired runs), and the
    # stop of dump --async with 10,000 tasks (scripts/bench_async.py)
    ("scripts/bench_async.py", 600, ["--json"]),
    # record --opcodes' in-kernel extra per sample, every interpreter
    # (paired runs, scripts/bench_opcodes.py)
    ("scripts/bench_opcodes.py", 900, ["--json"]),
    # issue 29: the specialized share under record --opcodes with and
    # without an in-process sys.monitoring tracer, the loop's throughput
    # under each, and trace's overhead once its probes are detached
    ("scripts/bench_observer.py", 300, ["--json"]),
    # issue 28: in-kernel cost and errors under thread churn (a thread per
    # request, short-lived executors) beside the same work on steady
    # threads, and the thread hooks' cost (scripts/bench_churn.py)
    ("scripts/bench_churn.py", 600, ["--json"]),
    # the agent: record -a -F 19 --rotate over 50 and 200 idle-ish processes,
    # bpfpy's CPU and the in-kernel time per hour (scripts/bench_agent.py)
    ("scripts/bench_agent.py", 1800, ["--json"]),
]


class Target:
    """A depth.py process of one interpreter, pinned to CPU 0, ready once its
    ready file exists (chroot targets write it inside the chroot)."""

    def __init__(self, tgt, depth):
        _, self.label, root, _ = tgt
        self.proc = None
        if root == "/":
            self.dir = tempfile.mkdtemp(prefix="bpfpy-bench.")
            inside = self.dir
        else:
            self.dir = tempfile.mkdtemp(prefix="bpfpy-bench.", dir=os.path.join(root, "tmp"))
            inside = "/tmp/" + os.path.basename(self.dir)
        self.ready_host = os.path.join(self.dir, "ready")
        self.proc = subprocess.Popen(["taskset", "-c", "0", os.path.join(HERE, "pyrun.sh"), self.label,
                                      DEPTH_PY, str(depth), inside + "/ready"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while not os.path.exists(self.ready_host):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.poll() is not None else ""
                self.close()
                raise RuntimeError(f"{self.label}: depth.py {depth} never got ready: {err.strip()[-200:]}")
            time.sleep(0.02)
        self.pid = self.proc.pid

    def close(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
        if self.proc:
            self.proc.wait()
        subprocess.run(["rm", "-rf", self.dir])

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()


def record(pid, rate, duration, ringbuf_mb=None):
    """bpfpy record on CPU 1: its summary figures and its own CPU seconds."""
    cmd = ["taskset", "-c", "1", BPFPY, "record", "-p", str(pid), "-F", str(rate), "-d", str(duration),
           "-f", "collapsed", "-o", "/dev/null", "--force"]
    if ringbuf_mb:
        cmd += ["--ringbuf-mb", str(ringbuf_mb)]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    out = {"rc": p.returncode, "cpu_s": ru.ru_utime + ru.ru_stime}
    for key, pat in (("kept", r"kept (\d+)"), ("emitted", r"emitted (\d+)"), ("lost", r"lost (\d+)"),
                     ("us_kernel", r"in-kernel cost ([\d.]+) us/sample"),
                     ("us_frame", r"([\d.]+) us/frame"),
                     # bpfpy's own CPU from the first sample to the summary
                     # (its process CPU clock): no BPF loading, no output
                     ("cpu_sampling_s", r"bpfpy CPU while sampling ([\d.]+) s"),
                     ("us_cpu_sampling", r"of a CPU\), ([\d.]+) us per sample")):
        m = re.search(pat, err)
        out[key] = (float(m.group(1)) if "." in m.group(1) else int(m.group(1))) if m else None
    if p.returncode != 0 or out["emitted"] is None:
        out["error"] = err.strip()[-300:]
    return out


def part_kernel(tg, pys, quick, res):
    runs, dur = (2, 0.5) if quick else (3, 1.0)
    for py in pys:
        for depth in DEPTHS:
            try:
                with Target(tg[py], depth) as t:
                    time.sleep(0.2)
                    recs = [record(t.pid, 1000, dur) for _ in range(runs)]
            except RuntimeError as e:
                print(f"  {e}", file=sys.stderr)
                continue
            m, ci = mean_ci([r["us_kernel"] for r in recs])
            errs = [r["error"] for r in recs if "error" in r]
            row = {"python": py, "depth": depth, "us_kernel": m, "ci95": ci, "runs": len(recs),
                   "us_frame": mean_ci([r["us_frame"] for r in recs])[0],
                   "samples": sum(r["emitted"] or 0 for r in recs)}
            if errs:
                row["error"] = errs[0]
            res["kernel"].append(row)
            print(f"  kernel {py:<12} {depth:>5} frames: {fmt(m)} ± {fmt(ci)} us/sample"
                  f"{'  ' + errs[0][-120:] if errs else ''}", file=sys.stderr)


def part_record(tg, pys, quick, res):
    """300 deep: loss and bpfpy's CPU per sample by rate; 3 deep at 10 kHz."""
    rates = [10000, 50000] if quick else [10000, 20000, 50000]
    dur = 1.0 if quick else 2.0
    for py in pys:
        for depth, rs in ((300, rates), (3, [10000])):
            # 3-frame samples cost little: a longer run, so that they
            # outweigh the noise of the fixed cost
            d = dur * 2 if depth == 3 else dur
            try:
                with Target(tg[py], depth) as t:
                    # bpfpy's fixed cost (BPF load and verification, /proc
                    # scans, exit) from a 10 Hz run of the same length, so
                    # that what is left is the cost of the samples.
                    base = record(t.pid, 10, d)
                    for rate in rs:
                        r = record(t.pid, rate, d)
                        n = (r["emitted"] or 0) - (base["emitted"] or 0)
                        row = {"python": py, "depth": depth, "rate_hz": rate, "lost": r["lost"],
                               "emitted": r["emitted"], "bpfpy_cpu_s": round(r["cpu_s"], 4),
                               "bpfpy_fixed_cpu_s": round(base["cpu_s"], 4),
                               # what record itself measured while sampling
                               "us_cpu_per_sample": r["us_cpu_sampling"],
                               # the older figure: whole runs minus a 10 Hz run,
                               # dominated by the verifier's noise for cheap samples
                               "us_cpu_per_sample_whole": (r["cpu_s"] - base["cpu_s"]) * 1e6 / n
                               if n > 0 and r["cpu_s"] > base["cpu_s"] else None,
                               "us_kernel": r["us_kernel"]}
                        if "error" in r:
                            row["error"] = r["error"]
                        res["record"].append(row)
                        print(f"  record {py:<12} {depth:>4} frames {rate:>6} Hz: lost {r['lost']}, "
                              f"bpfpy {fmt(row['us_cpu_per_sample'])} us CPU/sample"
                              f"{'  ' + r['error'][-120:] if 'error' in r else ''}", file=sys.stderr)
            except RuntimeError as e:
                print(f"  {e}", file=sys.stderr)


def oracle_modes():
    h = subprocess.run([BPFPY, "oracle", "--help"], capture_output=True, text=True).stdout
    return ["ptrace", "bpf"] + (["bpf-timer"] if "bpf-timer" in h else [])


def part_oracle(tg, quick, res):
    """ptrace vs bpf target cost, and bpf vs the interrupt-only control."""
    # On/off pairs of 100 ms. 64 at 1 kHz: on the idle machine the walk's
    # own share (bpf - bpf-timer) comes out within about +-1.8 points, where
    # 2 s windows (20 pairs) gave +-5. 192 at 10 kHz, where the goal (3
    # points) is closer to the share itself (~1.5): 64 gave +-1.4-1.6
    modes = oracle_modes()
    for py in [p for p in ("pyenv-3.12", "sid-3.15") if p in tg]:
        for rate in (1, 10):
            duration, warmup, pairs = (1.0, 0.3, 10) if quick else \
                ((6.4, 0.5, 64) if rate == 1 else (19.2, 0.5, 192))
            with tempfile.TemporaryDirectory() as d:
                out = os.path.join(d, "o.json")
                cmd = [BPFPY, "oracle", "--python", py, "--snippet", "bench_shallow", "--rate", str(rate),
                       "--duration", str(duration), "--warmup", str(warmup),
                       "--slowdown-pairs", str(pairs), "--json", out]
                for m in modes:
                    cmd += ["--mode", m]
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                                   env=dict(os.environ, BPFPY_SNIPPETS=os.path.join(ROOT, "snippets")))
                if r.returncode != 0 or not os.path.exists(out):
                    print(f"  oracle {py} {rate} kHz failed ({r.returncode}): {r.stderr.strip()[-300:]}",
                          file=sys.stderr)
                    continue
                doc = json.load(open(out))
            for case in doc.get("cases", []):
                for m in case.get("modes", []):
                    run = (m.get("runs") or [{}])[0]
                    res["oracle"].append({"python": py, "rate_khz": rate, "mode": m.get("mode"),
                                          "us_target": run.get("us_target"),
                                          "us_sampler": run.get("us_sampler"),
                                          "slowdown_pct": run.get("slowdown_pct"),
                                          "slowdown_ci95": run.get("slowdown_ci95"),
                                          "samples": run.get("samples")})
            print(f"  oracle {py} {rate} kHz: done", file=sys.stderr)


def part_extra(quick, res):
    for script, deadline, *args in EXTRA_ROW_SCRIPTS:
        cmd = [os.path.join(ROOT, script)] + (args[0] if args else []) + (["--quick"] if quick else [])
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=deadline,
                               env=dict(os.environ, BPFPY=BPFPY))
        except subprocess.TimeoutExpired:
            res["extra"].append({"goal": f"{script}: no answer within {deadline} s"})
            continue
        # Its own table (runs, means, load) goes with the progress lines.
        sys.stderr.write(r.stderr)
        for line in r.stdout.splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                row = {"goal": line.strip()}
            if isinstance(row, dict) and row.get("goal"):
                row.setdefault("source", script)
                res["extra"].append(row)
        if r.returncode != 0:
            res["extra"].append({"goal": f"{script} failed ({r.returncode}): {r.stderr.strip()[-150:]}"})


def fmt(v, p=2):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, int):
        return str(v)
    return f"{v:.{p}f}"


def ratio_ci(a, ca, b, cb):
    """a / b and its 95% half-width (first order), None where unknown."""
    if a is None or not b:
        return None, None
    r = a / b
    if ca is None or cb is None or not a:
        return r, None
    return r, abs(r) * math.sqrt((ca / a) ** 2 + (cb / b) ** 2)


def goal_rows(res):
    """Every goal of issue 13 beside what was measured: (goal, where, value,
    ci95, target text, limit, '<=' or '>=' or None)."""
    rows = []
    kern = {(r["python"], r["depth"]): r for r in res["kernel"]}
    pys = list(dict.fromkeys(r["python"] for r in res["kernel"] + res["record"]))
    for py in pys:
        k3, k300 = kern.get((py, 3), {}), kern.get((py, 300), {})
        r, c = ratio_ci(k300.get("us_kernel"), k300.get("ci95"), k3.get("us_kernel"), k3.get("ci95"))
        rows.append(("in-kernel 300-frame / 3-frame sample", py, r, c, "<= 10", 10, "<="))
    for py in pys:
        k3, k300 = kern.get((py, 3), {}), kern.get((py, 300), {})
        v = c = None
        if k3.get("us_kernel") is not None and k300.get("us_kernel") is not None:
            v = (k300["us_kernel"] - k3["us_kernel"]) / 297
            if k3.get("ci95") is not None and k300.get("ci95") is not None:
                c = math.hypot(k300["ci95"], k3["ci95"]) / 297
        rows.append(("in-kernel us per extra frame (3 -> 300)", py, v, c, "<= 0.06", 0.06, "<="))
    for depth in DEPTHS:
        for py in pys:
            k = kern.get((py, depth), {})
            rows.append((f"in-kernel us per sample, {depth} frames", py, k.get("us_kernel"), k.get("ci95"),
                         "", None, None))
    rec = {(r["python"], r["depth"], r["rate_hz"]): r for r in res["record"]}
    for py in pys:
        r, k = rec.get((py, 300, 10000), {}), kern.get((py, 300), {})
        v = r.get("us_cpu_per_sample")
        lim = k.get("us_kernel")
        rows.append(("bpfpy CPU us per 300-frame sample (10 kHz) <= its in-kernel us", py, v, None,
                     f"<= {fmt(lim)}" if lim else "<= in-kernel", lim, "<="))
    for py in pys:
        v = rec.get((py, 3, 10000), {}).get("us_cpu_per_sample")
        rows.append(("bpfpy CPU us per 3-frame sample (10 kHz)", py, v, None, "<= 1", 1, "<="))
    for py in pys:
        v = rec.get((py, 300, 10000), {}).get("lost")
        rows.append(("lost samples at 10 kHz, 300 frames", py, v, None, "0", 0, "<="))
    for py in pys:
        ok = [r["rate_hz"] for r in res["record"] if r["python"] == py and r["depth"] == 300 and r["lost"] == 0]
        rows.append(("highest rate with zero lost, 300 frames (Hz)", py, max(ok) if ok else None, None,
                     ">= 10000", 10000, ">="))
    orc = {(r["python"], r["rate_khz"], r["mode"]): r for r in res["oracle"]}
    for py in dict.fromkeys(r["python"] for r in res["oracle"]):
        for rate, lim in ((1, 1), (10, 3)):
            b, t = orc.get((py, rate, "bpf"), {}), orc.get((py, rate, "bpf-timer"), {})
            rows.append((f"slowdown % bpf, 3-frame loop, {rate} kHz", py, b.get("slowdown_pct"),
                         b.get("slowdown_ci95"), "", None, None))
            rows.append((f"slowdown % bpf-timer (interrupt only), {rate} kHz", py, t.get("slowdown_pct"),
                         t.get("slowdown_ci95"), "", None, None))
            v = c = None
            if b.get("slowdown_pct") is not None and t.get("slowdown_pct") is not None:
                v = b["slowdown_pct"] - t["slowdown_pct"]
                if b.get("slowdown_ci95") is not None and t.get("slowdown_ci95") is not None:
                    c = math.hypot(b["slowdown_ci95"], t["slowdown_ci95"])
            rows.append((f"slowdown points bpf - bpf-timer, {rate} kHz", py, v, c, f"<= {lim}", lim, "<="))
        p, b = orc.get((py, 1, "ptrace"), {}), orc.get((py, 1, "bpf"), {})
        r, _ = ratio_ci(p.get("us_target"), None, b.get("us_target"), None)
        rows.append(("ptrace / bpf target us per sample, 3 frames, 1 kHz", py, r, None, ">= 20", 20, ">="))
    for e in res["extra"]:
        rows.append((e.get("goal"), e.get("where", e.get("source", "")), e.get("value"), e.get("ci95"),
                     e.get("target") or "", e.get("limit"), (e.get("target") or "")[:2] or None))
    return rows


def print_table(rows):
    print(f"\n{'goal':<64}{'where':<13}{'measured':>10}{'±95%':>8}  {'goal':<10}{'ratio':>7}  ok")
    for goal, where, v, c, target, lim, cmp in rows:
        ratio, ok = "", ""
        if v is not None and lim is not None and cmp in ("<=", ">="):
            if lim:
                ratio = f"{v / lim:.2f}"
            ok = "yes" if (v <= lim if cmp == "<=" else v >= lim) else "NO"
        print(f"{str(goal)[:63]:<64}{str(where)[:12]:<13}{fmt(v):>10}{fmt(c):>8}  {target:<10}{ratio:>7}  {ok}")
    print("ratio = measured / goal; ±95% from repeated runs (kernel) or the oracle's interval; "
          "'-' = not measured")


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        print(__doc__)
        return 2
    out_path, quick = args[0], "--quick" in args
    only = args[args.index("--only") + 1].split(",") if "--only" in args else None
    tg = target_rows()
    pys = args[args.index("--python") + 1].split(",") if "--python" in args else list(tg)
    pys = [p for p in pys if p in tg]
    res = {"machine": {"cpus": os.cpu_count(), "kernel": os.uname().release,
                       "loadavg_start": os.getloadavg()}, "kernel": [], "record": [], "oracle": [],
           "extra": []}
    t0 = time.monotonic()
    print(f"bpfpy bench: {os.cpu_count()} CPUs, kernel {os.uname().release}, "
          f"load {os.getloadavg()[0]:.2f}", file=sys.stderr)
    for name, fn in (("kernel", lambda: part_kernel(tg, pys, quick, res)),
                     ("record", lambda: part_record(tg, pys, quick, res)),
                     ("oracle", lambda: part_oracle(tg, quick, res)),
                     ("extra", lambda: part_extra(quick, res))):
        if not only or name in only:
            fn()
    res["machine"]["loadavg_end"] = os.getloadavg()
    res["machine"]["seconds"] = round(time.monotonic() - t0, 1)
    res["goals"] = [dict(zip(("goal", "where", "value", "ci95", "target", "limit", "cmp"), r))
                    for r in goal_rows(res)]
    print(f"bpfpy bench, {os.cpu_count()} CPUs, kernel {os.uname().release}; load average "
          f"{res['machine']['loadavg_start'][0]:.2f} at start, {res['machine']['loadavg_end'][0]:.2f} at end; "
          f"{res['machine']['seconds']:.0f} s; target on CPU 0, bpfpy on CPU 1")
    print_table(goal_rows(res))
    with open(out_path, "w") as f:
        json.dump(res, f, indent=2)
    print(f"\nwrote {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
