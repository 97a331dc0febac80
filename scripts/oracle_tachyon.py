#!/usr/bin/env python3
"""bpfpy oracle adapter for CPython's own sampling profiler's CLI (Tachyon).

    bpfpy oracle --python sid-3.15 --peers      (modes tachyon-live, tachyon-blocking)

Runs `python -m profiling.sampling attach -r RATE -d DURATION -a [--blocking]
--collapsed -o FILE PID` with the target's own interpreter (the profiler
reads only its own minor version), inside the target's root with a /proc of
its own (scripts/pyrun.sh --proc), and translates what the CLI writes into
the oracle's external protocol (bpfpy oracle --help):

- The CLI aggregates: it writes `tid:N;file:func:line;... COUNT` once it is
  done, so each line becomes COUNT stack lines "tid=N func:line@file;...",
  root first. Without per-sample grouping each thread stack counts as one
  attempt (the same thing on the single-threaded cases).
- Its summary's "Captured N samples" and "Error rate: X" (percent) give the
  failed attempts, written as N*X/100 "E" lines.
- "S late SECS" before the stacks: the results only exist after the run,
  and the CLI's summary line "Captured N samples in SECS seconds" comes the
  moment its sampling loop ends (read as the CLI prints it), so the window
  it sampled is the SECS before that line: the oracle counts the target's
  slowdown% over that window only, not the CLI's start-up (about 0.4 s
  here). -d takes whole seconds: a fractional window is rounded up, and the
  CLI's own SECS is what the oracle uses. The CLI reports no per-sample
  cost, so no ". US" lines: the oracle shows µs as "-".
- The file is what the collapsed format carries (a short path, often the
  base name), which is what the rules' name@file conditions compare.
- --no-gc: the artificial <GC> frame is an annotation, not a stack frame;
  the oracle judges stacks. The CLI's sampling is periodic, not Poisson.
- A line not a number is unknown ('?'), as the reference has it (3.15's
  class-call shim is "__init__:__init__:-1" here); a line the adapter
  cannot read is one failed attempt ("E tachyon adapter: ...").

--async (mode tachyon-async): the CLI with --async-aware (its running
mode: get_async_stack_trace) and without -a and --no-gc, which it refuses
with it. Its
task markers, frames "<task>:NAME:0" after which (leafward) the task's own
frames follow, become the protocol's "[task NAME]" marks; a " (N parents)"
suffix is dropped by the oracle, as record --async's " (N awaiters)".

--tee FILE keeps what the CLI wrote and said; --replay FILE translates such
a file instead of running the CLI (the tests feed it the CLI's real output).
"""
import math
import os
import re
import subprocess
import sys
import tempfile

# The protocol's escapes (bpfpy oracle --help): '%' and '@' in a name or a
# file are written %XX; ';' and line breaks cannot occur, the CLI splits on them.
def esc(s):
    return s.replace("%", "%25").replace("@", "%40")


def frame(text):
    # "<task>:NAME:0": --async-aware's task marker (NAME may hold ':')
    if text.startswith("<task>:") and text.endswith(":0"):
        return "[task %s]" % esc(text[7:-2])
    # "file:func:line"; a file may itself hold ':' (so split from the right)
    parts = text.rsplit(":", 2)
    if len(parts) != 3:
        return "%s:?" % text
    file, func, line = parts
    func = esc(func)
    if func.startswith("["):  # never taken for a task mark (protocol: %5B)
        func = "%5B" + func[1:]
    return "%s:%s@%s" % (func, line if line.isdigit() and line != "0" else "?", esc(file))


def translate(lines, said, w):
    """The CLI's collapsed lines and what it said, in the protocol."""
    for line in lines:
        # One line the adapter cannot read is one failed attempt, not the
        # end of the run.
        try:
            head, _, count = line.rpartition(" ")
            if not head or not count.isdigit():
                continue
            parts = head.split(";")
            tid = parts[0][4:] if parts[0].startswith("tid:") else ""
            frames = ";".join(frame(p) for p in parts[1 if tid else 0:])
            stack = ("tid=%s %s\n" % (tid, frames)) if tid.isdigit() else frames + "\n"
            w(stack * int(count))
        except Exception as e:
            w("E tachyon adapter: %s: %s\n" % (type(e).__name__, str(e).replace("\n", " ")[:200]))
    m = re.search(r"Captured (\d+) samples", said)
    e = re.search(r"Error rate: ([0-9.]+)", said)
    if m and e:
        w("E tachyon: failed sample\n" * round(int(m.group(1)) * float(e.group(1)) / 100))
    for note in said.splitlines()[-3:]:
        w("# tachyon: %s\n" % note)


def replay(path, w):
    """Translate a file saved with --tee (collapsed lines, then '#said ' lines)."""
    with open(path, errors="replace") as f:
        text = f.read().splitlines()
    said = "".join(l[6:] + "\n" for l in text if l.startswith("#said "))
    w("S late 0\n")
    translate([l for l in text if not l.startswith("#said ")], said, w)
    return 0


def main():
    if "--replay" in sys.argv[1:]:
        return replay(sys.argv[sys.argv.index("--replay") + 1], sys.stdout.write)
    pid = os.environ["BPFPY_PID"]
    rate = float(os.environ.get("BPFPY_RATE_HZ", "1000"))
    duration = str(max(1, math.ceil(float(os.environ.get("BPFPY_DURATION", "3")))))
    out = tempfile.mkdtemp(prefix="bpfpy-tachyon.")
    path = os.path.join(out, "collapsed.txt")
    # rate 0 = as fast as possible: the CLI takes an interval, so ask 1 MHz
    cmd = [sys.executable, "-m", "profiling.sampling", "attach",
           "-r", str(int(rate)) if rate > 0 else "1000000",
           "-d", duration, "-a", "--no-gc", "--collapsed", "-o", path, pid]
    if "--blocking" in sys.argv[1:]:
        cmd.insert(-1, "--blocking")
    if "--async" in sys.argv[1:]:
        # the CLI refuses -a and --no-gc with --async-aware
        cmd.remove("-a")
        cmd.remove("--no-gc")
        cmd.insert(-1, "--async-aware")
    said = []
    try:
        # Unbuffered, read line by line: the summary's arrival time is when
        # the sampling ended. The oracle bounds the whole run.
        run = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, errors="replace",
                               env=dict(os.environ, PYTHONUNBUFFERED="1"))
        for note in run.stdout:
            said.append(note)
            m = re.match(r"Captured \d+ samples in ([0-9.]+) seconds", note)
            if m:
                print("S late %s" % m.group(1), flush=True)
        run.wait()
        lines = open(path, errors="replace").read().splitlines() if os.path.exists(path) else []
    except OSError as e:
        print("E tachyon: %s" % str(e).replace("\n", " "), flush=True)
        return 2
    finally:
        if os.path.exists(path):
            os.unlink(path)
        os.rmdir(out)
    if "--tee" in sys.argv[1:]:
        with open(sys.argv[sys.argv.index("--tee") + 1], "w") as tee:
            tee.write("".join(l + "\n" for l in lines) + "".join("#said " + n for n in said))
    translate(lines, "".join(said), sys.stdout.write)
    sys.stdout.flush()
    if run.returncode:
        sys.stderr.write("oracle_tachyon: %s exited %d: %s\n"
                         % (" ".join(cmd[:5]), run.returncode, out[-300:]))
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
