#!/usr/bin/env python3
"""bpfpy oracle adapter for CPython 3.15's own unwinder (_remote_debugging).

    bpfpy oracle --python sid-3.15 --mode cpython-live --mode cpython-blocking

The oracle runs this file with the target's own interpreter (the unwinder
reads only its own minor version), inside the target's root with a /proc of
its own (scripts/pyrun.sh --proc), and reads its stdout. It can be run by
hand with `--mode 'external:python3.15 scripts/oracle_cpython_unwinder.py'`.

Input: environment BPFPY_PID, BPFPY_RATE_HZ (0 = as fast as possible),
BPFPY_DURATION (seconds), BPFPY_POISSON (1 = exponential gaps).
--blocking stops every thread around each read (pause_threads), as the
original's blocking modes do; without it the target runs while it is read.

Output, the oracle's external protocol (bpfpy oracle --help): "S grouped"
when sampling begins, then per attempt the stack of each thread as
"tid=N f1;f2;...", ROOT FIRST, frames "qualname:lineno@file" (lineno '?'
when unknown; '%', ';', '@' and control characters in a name or file are
written %XX, since the target chose them), and ". US" closing
the attempt with its cost in microseconds; "E message" for an attempt that
raised. The schedule is absolute (start + i/rate, or exponential gaps) and
never samples past the deadline, like the oracle's own modes.
"""
import os
import random
import sys
import time


def _escape_table():
    t = {c: "%%%02X" % c for c in range(32)}
    t.update({ord(c): "%%%02X" % ord(c) for c in "%;@\x7f"})
    return t


_ESC = _escape_table()


def frame_text(f):
    """One frame for the protocol: 'qualname:lineno@file', escaped."""
    loc = f.location
    line = loc if isinstance(loc, int) else (loc[0] if loc else 0)
    name = str(f.funcname).translate(_ESC)
    text = "%s:%s" % (name, line if line else "?")
    if f.filename:
        text += "@" + str(f.filename).translate(_ESC)
    return text


def main():
    blocking = "--blocking" in sys.argv[1:]
    pid = int(os.environ["BPFPY_PID"])
    rate = float(os.environ.get("BPFPY_RATE_HZ", "1000"))
    duration = float(os.environ.get("BPFPY_DURATION", "3"))
    poisson = os.environ.get("BPFPY_POISSON", "0") == "1"
    try:
        import _remote_debugging
    except ImportError as e:
        print("E _remote_debugging unavailable: %s" % e, flush=True)
        return 2
    try:
        unwinder = _remote_debugging.RemoteUnwinder(pid, all_threads=True)
    except TypeError:
        unwinder = _remote_debugging.RemoteUnwinder(pid)
    out = sys.stdout
    write = out.write
    clock = time.monotonic
    start = clock()
    deadline = start + duration
    write("S grouped\n")
    n = 0
    nxt = start + (random.expovariate(rate) if poisson and rate > 0 else 0.0)
    while True:
        if rate > 0:
            if nxt >= deadline:
                break
            delay = nxt - clock()
            if delay > 0:
                time.sleep(delay)
        t0 = clock()
        if t0 >= deadline:
            break
        try:
            if blocking:
                unwinder.pause_threads()
                try:
                    interps = unwinder.get_stack_trace()
                finally:
                    unwinder.resume_threads()
            else:
                interps = unwinder.get_stack_trace()
        except Exception as e:  # a torn read is what we measure
            write("E %s\n" % str(e).replace("\n", " "))
        else:
            lines = []
            for interp in interps:
                for th in interp.threads:
                    frames = th.frame_info
                    if not frames:
                        continue
                    # leaf first -> root first
                    parts = [frame_text(f) for f in reversed(frames)]
                    lines.append("tid=%d %s\n" % (th.thread_id, ";".join(parts)))
            write("".join(lines))
            write(". %.2f\n" % ((clock() - t0) * 1e6))
        n += 1
        if rate > 0:
            nxt = nxt + random.expovariate(rate) if poisson else start + n / rate
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
