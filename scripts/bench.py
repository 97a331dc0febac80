#!/usr/bin/python3
"""make bench: what each sampler costs the target, measured side by side.

Not a test: it asserts nothing and prints figures and their ratios. Every
figure comes from one run of this script on this machine, so ratios compare
like with like. The oracle does the sampling (its modes share one frame
walker and differ only in when they read), so a figure here means what the
same column means in `bpfpy oracle --help`:

  us_target   what the target pays per sample: ptrace = time stopped,
              bpf = in-kernel BPF time, live = 0 (it is not stopped, but the
              reader competes for memory bandwidth and the CPU)
  us_sampler  the sampler's own wall time per sample
  slowdown%   the target's progress rate vs an unsampled run of it

Then, with `bpfpy record`: the highest cpu-clock rate with zero lost samples
on the 300-deep program, and bpfpy's own user+system CPU per sample.

Usage: scripts/bench.py OUT.json [--quick]
"""
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BPFPY = os.environ.get("BPFPY", os.path.join(ROOT, os.environ.get("OUT", "build"), "bpfpy"))
PROGRAMS = ["bench_shallow", "bench_deep", "bench_threads"]


def targets():
    out = subprocess.run([os.path.join(HERE, "targets.sh")], capture_output=True, text=True).stdout
    return {line.split("\t")[1]: line.split("\t") for line in out.splitlines() if line.count("\t") == 3}


def oracle(python, snippet, modes, rate_khz, duration, warmup):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [BPFPY, "oracle", "--python", python, "--snippet", snippet, "--rate", str(rate_khz),
               "--duration", str(duration), "--warmup", str(warmup), "--json", f.name]
        for m in modes:
            cmd += ["--mode", m]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"  oracle failed ({r.returncode}): {r.stderr.strip()[-300:]}", file=sys.stderr)
            return None
        return json.load(open(f.name))


def mode_rows(doc):
    """mode name -> its first run's figures, from the oracle's JSON."""
    rows = {}
    for case in doc.get("cases", []):
        for m in case.get("modes", []):
            runs = m.get("runs") or []
            if runs:
                rows[m.get("mode")] = runs[0]
    return rows


def record_lost(label_root_python, rate, duration=2.0):
    """Run bench_deep under the target and record it at rate; return (lost, samples, cpu_s)."""
    version, label, root, python = label_root_python
    proc = subprocess.Popen([os.path.join(HERE, "pyrun.sh"), label,
                             os.path.join(ROOT, "snippets", "bench_deep.py")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            cwd=os.path.join(ROOT, "snippets"))
    try:
        time.sleep(1.0)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        r = subprocess.run([BPFPY, "record", "-p", str(proc.pid), "-F", str(rate), "-d", str(duration),
                            "-f", "raw", "-o", "/dev/null", "--force"],
                           capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    finally:
        proc.kill()
        proc.wait()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lost = re.search(r"lost (\d+)", r.stderr)
    emitted = re.search(r"emitted (\d+)", r.stderr)
    if r.returncode != 0 or not lost or not emitted:
        return None, None, cpu, r.stderr.strip()[-200:]
    return int(lost.group(1)), int(emitted.group(1)), cpu, ""


def progress_rate(path, secs):
    """Iterations per second of a snippet, from its BPFPY_PROGRESS counter."""
    read = lambda: int.from_bytes(open(path, "rb").read(8), "little")
    a, t0 = read(), time.monotonic()
    time.sleep(secs)
    return (read() - a) / (time.monotonic() - t0)


def tick_control(python, rate):
    """Split bpfpy's slowdown into the clock interrupt and the walk.

    The target spins pinned to CPU 0. 'clock only': bpfpy records another,
    sleeping process at the same rate, so the cpu-clock still fires on CPU 0
    but the BPF program returns at its first map lookup; what is lost is the
    price of the timer interrupt itself (high in VMs). 'bpfpy': the target is
    recorded. Both against the same unsampled rate, in one run."""
    with tempfile.NamedTemporaryFile() as prog:
        prog.write(b"\0" * 8)
        prog.flush()
        env = dict(os.environ, BPFPY_PROGRESS=prog.name)
        snip = os.path.join(ROOT, "snippets", "bench_shallow.py")
        spin = subprocess.Popen(["taskset", "-c", "0", python, snip], env=env,
                                cwd=os.path.join(ROOT, "snippets"))
        idle = subprocess.Popen([python, "-c", "import time; time.sleep(120)"])
        try:
            time.sleep(1.0)
            base = progress_rate(prog.name, 2.0)
            out = {"rate_hz": rate, "unsampled_it_s": round(base)}
            for name, pid in (("clock_only", idle.pid), ("bpfpy", spin.pid)):
                rec = subprocess.Popen(["taskset", "-c", "1", BPFPY, "record", "-p", str(pid), "-F",
                                        str(rate), "-d", "3", "-q", "-f", "raw", "-o", "/dev/null",
                                        "--force"])
                time.sleep(0.5)
                r = progress_rate(prog.name, 2.0)
                rec.wait()
                out[name + "_slowdown_pct"] = round(100 * (1 - r / base), 1)
            return out
        finally:
            spin.kill()
            idle.kill()
            spin.wait()
            idle.wait()


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    out_path, quick = sys.argv[1], "--quick" in sys.argv
    duration, warmup = (1.0, 0.3) if quick else (2.0, 0.5)
    rates = [1, 10] if quick else [1, 10, 100]
    tg = targets()
    pythons = [p for p in ("pyenv-3.12", "sid-3.15") if p in tg]
    result = {"machine": {"cpus": os.cpu_count(), "kernel": os.uname().release,
                          "loadavg_start": os.getloadavg()}, "cost": [], "record": []}
    print(f"bpfpy bench: {os.cpu_count()} CPUs, kernel {os.uname().release}, "
          f"load {os.getloadavg()[0]:.2f}; target and sampler pinned to different CPUs by the oracle")
    for py in pythons:
        modes = ["ptrace", "live", "bpf"]
        if py.startswith("sid-3.15"):
            modes += ["cpython-live", "cpython-blocking"]
        for prog in PROGRAMS:
            for rate in rates:
                doc = oracle(py, prog, modes, rate, duration, warmup)
                if not doc:
                    continue
                for mode, run in mode_rows(doc).items():
                    result["cost"].append({"python": py, "program": prog, "rate_khz": rate, "mode": mode,
                                           "us_target": run.get("us_target"),
                                           "us_sampler": run.get("us_sampler"),
                                           "slowdown_pct": run.get("slowdown_pct"),
                                           "samples": run.get("samples"), "lost": run.get("lost"),
                                           "errors_pct": run.get("errors_pct")})
        # Highest rate without loss, and bpfpy's own CPU per sample.
        best = None
        for rate in ([10000, 50000] if quick else [10000, 20000, 50000, 100000]):
            lost, emitted, cpu, err = record_lost(tg[py], rate)
            row = {"python": py, "rate_hz": rate, "lost": lost, "emitted": emitted,
                   "bpfpy_cpu_s": round(cpu, 4),
                   "us_cpu_per_sample": round(cpu * 1e6 / emitted, 2) if emitted else None}
            if err:
                row["error"] = err
            result["record"].append(row)
            if lost == 0:
                best = rate
        result.setdefault("zero_loss_max_hz", {})[py] = best

    # Control: how much of bpf's slowdown is the timer interrupt itself.
    if "pyenv-3.12" in tg:
        result["tick_control"] = [tick_control(tg["pyenv-3.12"][3], r) for r in (1000, 10000)]

    # The table: per python/program/rate, each mode and its ratio to bpf.
    print(f"\n{'python':<11}{'program':<14}{'kHz':>4}  {'mode':<17}{'us_target':>10}{'us_sampler':>11}"
          f"{'slowdown%':>10}{'x bpf (target us)':>19}")
    key = lambda r: (r["python"], r["program"], r["rate_khz"])
    groups = {}
    for r in result["cost"]:
        groups.setdefault(key(r), []).append(r)
    for k, rows in groups.items():
        bpf = next((r for r in rows if r["mode"] == "bpf"), None)
        for r in rows:
            ratio = ""
            # live pays nothing while stopped: a ratio of 0 would mislead.
            if bpf and bpf.get("us_target") and r.get("us_target") and r["mode"] != "bpf":
                ratio = f"{r['us_target'] / bpf['us_target']:.1f}x"
                r["target_us_vs_bpf"] = round(r["us_target"] / bpf["us_target"], 2)
            fmt = lambda v, p=2: "-" if v is None else f"{v:.{p}f}"
            print(f"{k[0]:<11}{k[1]:<14}{k[2]:>4}  {r['mode']:<17}{fmt(r['us_target']):>10}"
                  f"{fmt(r['us_sampler']):>11}{fmt(r['slowdown_pct'], 1):>10}{ratio:>19}")
    print(f"\n{'python':<11}{'record rate':>12}{'emitted':>9}{'lost':>7}{'bpfpy CPU us/sample':>21}")
    for r in result["record"]:
        print(f"{r['python']:<11}{r['rate_hz']:>12}{r['emitted'] if r['emitted'] is not None else '-':>9}"
              f"{r['lost'] if r['lost'] is not None else '-':>7}"
              f"{r['us_cpu_per_sample'] if r['us_cpu_per_sample'] is not None else '-':>21}")
    for py, best in result.get("zero_loss_max_hz", {}).items():
        print(f"{py}: highest rate with zero lost samples on 300-deep stacks: {best or 'none tried'} Hz")
    for c in result.get("tick_control", []):
        print(f"control, 3-frame loop on CPU 0 at {c['rate_hz']} Hz: cpu-clock alone (BPF returns at once) "
              f"slows it {c['clock_only_slowdown_pct']}%, bpfpy recording it {c['bpfpy_slowdown_pct']}%")
    result["machine"]["loadavg_end"] = os.getloadavg()
    with open(out_path, "w") as f:
        json.dump(result, f, indent=2)
    print(f"\nwrote {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
