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
--cache reuses unchanged parent frames (cache_frames=True), as Tachyon's
CLI does: modes cpython-live-cache and cpython-blocking-cache.
--async reads task chains with get_async_stack_trace() (mode cpython-async,
run with --cache as the CLI's --async-aware runs it): per thread running a
task, that task's frames leaf first, "[task NAME]", then the frames where
its awaiter is suspended, its mark, and so on to the root task, as `bpfpy
record --async` composes them (docs/async.md): a task several tasks await
is followed to the one with the lowest id (its address), its mark
"[task NAME (N awaiters)]". Threads running no task are not reported (the
unwinder does not return them).

Output, the oracle's external protocol (bpfpy oracle --help): "S grouped"
when sampling begins, then per attempt the stack of each thread as
"tid=N f1;f2;...", ROOT FIRST, frames "qualname:lineno@file" (lineno '?'
when unknown; '%', ';', '@' and control characters in a name or file are
written %XX, since the target chose them), and ". US" closing
the attempt with its cost in microseconds; "E message" for an attempt that
raised (any exception, while reading or while naming: the run goes on). The schedule is absolute (start + i/rate, or exponential gaps) and
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
    """One frame for the protocol: 'qualname:lineno@file', escaped.

    Normalized as the reference (bpfpy's own walker) does: a line that is
    not a positive number is unknown, '?'. 3.15 reports the interpreter's
    synthetic frames that way, e.g. the shim a class call runs __init__
    under (funcname and filename '__init__', lineno -1): sent as "-1" it was
    no line number, so the whole frame text became the name and no key
    matched the reference's "__init__:?" (tvd_excess 0.59 against the
    same unwinder's 0.07 through the CLI, which prints '?')."""
    loc = f.location
    line = loc if isinstance(loc, int) else (loc[0] if loc else 0)
    name = str(f.funcname).translate(_ESC)
    if name.startswith("["):  # never taken for a task mark (protocol: %5B)
        name = "%5B" + name[1:]
    text = "%s:%s" % (name, line if isinstance(line, int) and line > 0 else "?")
    if f.filename:
        text += "@" + str(f.filename).translate(_ESC)
    return text


def task_mark(task, nawaiters):
    """A task's mark for the protocol: '[task NAME]', escaped like a name."""
    name = task.task_name if isinstance(task.task_name, str) else "Task-%s" % task.task_name
    if nawaiters > 1:
        name += " (%d awaiters)" % nawaiters
    return "[task %s]" % name.translate(_ESC)


def task_chains(awaited):
    """The chain of each task no other task awaits (the running one: the
    unwinder returns the running task of each thread with its awaiters),
    root first, on its thread. Each TaskInfo: task_id, task_name,
    coroutine_stack (CoroInfo: call_stack, leaf first), awaited_by (CoroInfo
    whose task_name is the awaiting task's id); an awaiter may be listed
    under another thread's entry."""
    tasks = {t.task_id: (t, info.thread_id) for info in awaited for t in info.awaited_by}
    awaiting = {c.task_name for t, _ in tasks.values() for c in t.awaited_by}
    lines = []
    for leaf, tid in (v for k, v in tasks.items() if k not in awaiting):
        parts, seen, task = [], set(), leaf
        while task is not None and task.task_id not in seen:
            seen.add(task.task_id)
            for coro in task.coroutine_stack:
                parts.extend(frame_text(f) for f in coro.call_stack)
            ids = [c.task_name for c in task.awaited_by]
            parts.append(task_mark(task, len(ids)))
            task = tasks.get(min(ids), (None,))[0] if ids else None
        lines.append("tid=%d %s\n" % (tid, ";".join(reversed(parts))))
    return "".join(lines)


def read_sample(unwinder, blocking, tasks=False):
    """One attempt: the protocol's stack lines, leaf-first frames reversed."""
    read = unwinder.get_async_stack_trace if tasks else unwinder.get_stack_trace
    if blocking:
        unwinder.pause_threads()
        try:
            interps = read()
        finally:
            unwinder.resume_threads()
    else:
        interps = read()
    if tasks:
        return task_chains(interps)
    lines = []
    for interp in interps:
        for th in interp.threads:
            frames = th.frame_info
            if not frames:
                continue
            # leaf first -> root first
            parts = [frame_text(f) for f in reversed(frames)]
            lines.append("tid=%d %s\n" % (th.thread_id, ";".join(parts)))
    return "".join(lines)


def main():
    blocking = "--blocking" in sys.argv[1:]
    tasks = "--async" in sys.argv[1:]
    pid = int(os.environ["BPFPY_PID"])
    rate = float(os.environ.get("BPFPY_RATE_HZ", "1000"))
    duration = float(os.environ.get("BPFPY_DURATION", "3"))
    poisson = os.environ.get("BPFPY_POISSON", "0") == "1"
    try:
        import _remote_debugging
    except ImportError as e:
        print("E _remote_debugging unavailable: %s" % e, flush=True)
        return 2
    # --cache: reuse parent frames unchanged since the last sample, as
    # Tachyon's CLI always does (cache_frames=True in profiling.sampling):
    # the configuration the tachyon-* modes are compared with.
    kw = dict(cache_frames=True, mode=0, gc=False, skip_non_matching_threads=True) if "--cache" in sys.argv[1:] else {}
    try:
        unwinder = _remote_debugging.RemoteUnwinder(pid, all_threads=True, **kw)
    except TypeError:
        unwinder = _remote_debugging.RemoteUnwinder(pid, **kw)
    out = sys.stdout
    write = out.write
    clock = time.monotonic
    start = clock()
    deadline = start + duration
    write("S grouped\n")
    n = 0
    nxt = start + (random.expovariate(rate) if poisson and rate > 0 else 0.0)
    while True:
        if rate > 0 and nxt >= deadline:
            break
        # Anything raised in an attempt, while reading, while its result is
        # turned into text, or by a call after it that finds an exception
        # the unwinder left set, is one failed attempt and the run goes on:
        # on 3.15.2 live, SystemError "invalid maximum character passed to
        # PyUnicode_New" (a torn string) made the adapter exit 1 mid-window.
        try:
            if rate > 0:
                delay = nxt - clock()
                if delay > 0:
                    time.sleep(delay)
            t0 = clock()
            if t0 >= deadline:
                break
            text = read_sample(unwinder, blocking, tasks)
            write(text + ". %.2f\n" % ((clock() - t0) * 1e6))
        except Exception as e:  # a torn read is what we measure
            write("E %s: %s\n" % (type(e).__name__, str(e).replace("\n", " ")[:300]))
        n += 1
        if rate > 0:
            nxt = nxt + random.expovariate(rate) if poisson else start + n / rate
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
