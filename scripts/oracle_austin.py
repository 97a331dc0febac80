#!/usr/bin/env python3
"""bpfpy oracle adapter for Austin (https://github.com/P403n1x87/austin).

    bpfpy oracle --python pyenv-3.10 --peers    (mode austin: bookworm's 1.0.1)
    bpfpy oracle --python pyenv-3.12 --peers    (mode austin-sid: sid's 3.7.0)

Runs `austin -i INTERVAL -p PID` (AUSTIN, or --austin PATH) and translates
its output into the oracle's external protocol (bpfpy oracle --help). Any
Python 3 runs this file; the sid Austin runs inside the chroot with a /proc of
its own (scripts/pyrun.sh --proc), since it needs the chroot's libc.

- Austin streams one line per thread per sample, root first:
    1.x  "Thread 7f..;func (file);L12;func (file);L3 METRIC"
    3.x  "P123;T0:123;file:func:12;file:func:3 METRIC"
  each becomes "tid=N func:line@file;..." (N a small index per thread: a
  pthread id does not fit an int). A sample's thread lines are consecutive,
  so a thread seen again starts the next attempt, closed by "." lines.
- Austin never stops the target; -i is the pause between samples, so it
  samples a little slower than asked. It is periodic, not Poisson.
- An invalid sample: 3.x prints the thread's stack with an ":INVALID:"
  marker frame (at the root, the leaf part it could read after it; on
  3.12 about one sample in five of a ray tracer); it is one failed attempt
  ("E austin: INVALID ..."), never a stack, so it is neither impossible nor
  in the distribution. Its closing summary ("errors: N/M") counts the same
  samples: only what that count holds beyond the markers seen (1.x prints
  no marker, only the count) becomes further "E" lines. It reports its sampling time only
  as min/avg/max for the whole run, after the window, so no attempt carries
  a cost (the oracle shows µs as "-"); the summary is echoed as '#' lines.
- Austin 1.x has no duration flag and 3.x's takes whole seconds: Austin
  gets SIGINT when the window ends, and is killed 5 s after it.
- A line this adapter cannot read is one failed attempt ("E austin adapter:
  ..."), and the run goes on: a peer is never cut short by its adapter.

--tee FILE keeps Austin's raw output; --replay FILE translates such a file
instead of running Austin (the tests feed it Austin's real output).
"""
import math
import os
import re
import signal
import subprocess
import sys
import threading

# The protocol's escapes (bpfpy oracle --help): '%' and '@' in a name or a
# file are written %XX; ';' and line breaks cannot occur, Austin splits on them.
def esc(s):
    return s.replace("%", "%25").replace("@", "%40")


INVALID = object()  # a stack that holds Austin's own invalid-sample marker


def frames_3(parts):
    out = []
    for p in parts:
        f = p.rsplit(":", 2)  # file:func:line (a file may hold ':')
        if len(f) != 3:
            return None  # some other marker: not a stack
        if f[1] == "INVALID" and not f[0] and not f[2]:
            return INVALID  # ":INVALID:", Austin's "I could not read this"
        line = f[2] if f[2].isdigit() and f[2] != "0" else "?"
        out.append("%s:%s@%s" % (esc(f[1]), line, esc(f[0])))
    return out


def frames_1(parts):
    out = []
    for p in parts:
        if p.startswith("L") and p[1:].isdigit() and out:
            out[-1] = out[-1].replace(":?@", ":%s@" % p[1:], 1)
            continue
        m = re.match(r"(.*) \((.*)\)$", p)
        if not m:
            return None
        if m.group(1) == "INVALID":
            return INVALID
        out.append("%s:?@%s" % (esc(m.group(1)), esc(m.group(2))))
    return out


class Translator:
    """Austin's lines in, the protocol's lines out (through write)."""

    def __init__(self, v3, write):
        self.v3, self.w = v3, write
        self.tids, self.group, self.stacks, self.invalid = {}, set(), [], 0
        self.pending_invalid = 0  # in the open group: written after its "."
        self.summary = []

    def close_group(self):
        # The group's valid stacks are one attempt; each invalid thread
        # stack is a failed one of its own (Austin counts them so).
        if self.stacks:
            self.w("".join(self.stacks) + ".\n")
        self.w("E austin: INVALID (Austin's invalid-sample marker)\n" * self.pending_invalid)
        self.group.clear()
        self.stacks, self.pending_invalid = [], 0

    def feed(self, line):
        line = line.rstrip("\n")
        if line.startswith("#"):
            self.summary.append(line)
            return
        head, _, _metric = line.rpartition(" ")
        parts = head.split(";")
        if self.v3 and len(parts) >= 2 and parts[0].startswith("P"):
            tid, frames = parts[1].split(":")[-1], frames_3(parts[2:])
        elif not self.v3 and parts[0].startswith("Thread "):
            tid, frames = parts[0][7:], frames_1(parts[1:])
        else:
            return
        if tid in self.group:  # this thread again: the previous sample is complete
            self.close_group()
        self.group.add(tid)
        if frames is INVALID:
            self.invalid += 1
            self.pending_invalid += 1
        elif frames:
            self.stacks.append("tid=%d %s\n" % (self.tids.setdefault(tid, len(self.tids) + 1),
                                                  ";".join(frames)))

    def finish(self, stderr_text=""):
        if self.group or self.pending_invalid:
            self.close_group()
        summary = self.summary + ["# " + s.strip() for s in stderr_text.splitlines() if s.strip()]
        bad = re.search(r"errors?(?: rate)?\s*:\s*(\d+)/(\d+)", "\n".join(summary), re.I)
        if bad:
            # The summary counts the marked samples too: only the rest.
            self.w("E austin: invalid sample (summary)\n" * max(0, int(bad.group(1)) - self.invalid))
        self.w("".join("# austin: %s\n" % s.lstrip("# ") for s in summary[-6:]))


def feed_safely(tr, line):
    try:
        tr.feed(line)
    except Exception as e:  # one unreadable line is one failed attempt
        tr.w("E austin adapter: %s: %s\n" % (type(e).__name__, str(e).replace("\n", " ")[:200]))


def replay(path, write):
    """Translate a saved Austin output (--tee), as if Austin printed it."""
    with open(path, errors="replace") as f:
        lines = f.readlines()
    v3 = any(l.startswith("P") for l in lines[:200]) or any("# austin: 3" in l for l in lines[:5])
    tr = Translator(v3, write)
    write("S grouped\n")
    for line in lines:
        feed_safely(tr, line)
    tr.finish()
    return 0


def main():
    args = sys.argv[1:]
    if "--replay" in args:
        return replay(args[args.index("--replay") + 1], sys.stdout.write)
    austin = args[args.index("--austin") + 1] if "--austin" in args else "austin"
    # --root DIR: AUSTIN is a binary of another root (the sid chroot's
    # 3.7.0), run HERE through that root's own dynamic loader and libc.
    # Inside the chroot it cannot open the host target's binary (the paths
    # in /proc/PID/maps are the host's): on 3.13.0 it then finds no
    # Py_Version and says "not a Python process" (exit 32); on 3.12 it
    # guesses 3.12.0. Run here it reads the real binary.
    run = [austin]
    if "--root" in args:
        root = args[args.index("--root") + 1]
        run = [root + "/lib64/ld-linux-x86-64.so.2", "--library-path",
               root + "/usr/lib/x86_64-linux-gnu:" + root + "/lib/x86_64-linux-gnu",
               root + austin]
    pid = os.environ["BPFPY_PID"]
    rate = float(os.environ.get("BPFPY_RATE_HZ", "1000"))
    duration = float(os.environ.get("BPFPY_DURATION", "3"))
    interval = "%d" % (1e6 / rate) if rate > 0 else "0"
    try:
        ver = subprocess.run(run + ["-V"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        print("E austin: %s" % e, flush=True)
        return 2
    v3 = not re.search(r"\b[12]\.\d+\.\d+", ver)
    if v3:  # -P: metadata lines; -x: the window; -t: attach patiently on a busy host
        cmd = run + ["-P", "-t", "3s", "-i", interval + "us", "-x", "%d" % math.ceil(duration), "-p", pid]
    else:
        cmd = run + ["-t", "3000", "-i", interval, "-p", pid]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            errors="replace")
    # Bounded whatever Austin does (3.7.0 on 3.13.0 attaches, spins and never
    # samples nor ends): killed a few seconds past the window.
    hard = threading.Timer(duration + 5, proc.kill)
    hard.daemon = True
    hard.start()
    w = sys.stdout.write
    tee = open(args[args.index("--tee") + 1], "w") if "--tee" in args else None
    tr, started = Translator(v3, w), False
    for line in proc.stdout:
        if not started:
            w("S grouped\n")  # Austin is up: the window starts
            started = True
            # -x takes whole seconds only: SIGINT ends the window
            stop = threading.Timer(duration, proc.send_signal, [signal.SIGINT])
            stop.daemon = True
            stop.start()
        if tee:
            tee.write(line)
        feed_safely(tr, line)
    proc.wait()
    hard.cancel()
    err = proc.stderr.read()
    if tee:
        tee.write("".join("# " + s + "\n" for s in err.splitlines() if s.strip()))
        tee.close()
    tr.finish(err)
    sys.stdout.flush()
    # 1.x exits non-zero on SIGINT; only a failure before any sample is one
    return 0 if started else (proc.returncode or 1)


if __name__ == "__main__":
    sys.exit(main())
