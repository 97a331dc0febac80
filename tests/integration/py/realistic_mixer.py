#!/usr/bin/env python3
"""A sampler that mixes frames of two moments up on purpose, for the
realistic suite's rules (snippets/realistic/).

    realistic_mixer.py --bpfpy BPFPY [--log-dir DIR] [--clean] [--min-stacks N]
        an external:CMD mode of bpfpy oracle (BPFPY_PID, BPFPY_DURATION)
    realistic_mixer.py --bpfpy BPFPY --shapes --pid PID [--seconds S] [--name PROG]
        the stacks it sees, collapsed with files (no fault): a look at a
        program's real shapes

It samples the target with `bpfpy dump --json` (every thread stopped, so
each stack is one real moment, read with files) for the window, then
replays what it saw in the oracle's external protocol ('S late SECS'),
grafting frames of one moment onto another, as a sampler that tears a
stack between two reads would: for a stack S holding a frame X and a
stack T of the same window holding a frame Y, S up to X carries what T had
above Y. Each program has its faults (FAULTS below): X, Y and the names,
at least one of which must be in the grafted part, chosen so that the
result is a stack the program can never have (e.g. json's decoder hook
from_wire under the encoder's iterencode). Every second stack a fault
applies to is changed; the others are sent as read, so the rules are
shown both to pass the real moments and to fail the mixed ones.

--min-stacks N samples past the window until N stacks are read (at most
MAX_EXTRA_S more: on a loaded host each dump takes long, and a window of a
few stacks may hold nothing to mix); 'S late' says how long it sampled.
--log-dir DIR gets PROGRAM.log: 'changed N stacks M errors E', what the
oracle's impossible and stacks columns must read if the rules hold for
every real moment and catch every graft. --clean sends every stack as read (a ptrace-like
reference with files).
"""
import json
import os
import subprocess
import sys
import time

# program -> [(X, Y, Z)]: graft onto the frame X what a stack had above its
# frame Y, when that part holds a frame named in Z. A name is the last
# dotted part of the frame's name; "name@tail" is a frame whose file ends
# with tail, a bare name one of the program's own file.
FAULTS = {
    "raytrace": [("shade", "trace", {"intersect", "point_at"}), ("render", "trace", {"shade", "intersect"})],
    "records": [("validate", "build_items", {"__init__"}), ("summarise", "build_items", {"__init__"}),
                ("build_items", "summarise", {"<genexpr>"})],
    "json_codec": [
        ("iterencode@json/encoder.py", "raw_decode@json/decoder.py", {"from_wire"}),
        ("raw_decode@json/decoder.py", "iterencode@json/encoder.py", {"to_wire"}),
    ],
    "tokenizer": [("evaluate", "to_rpn", {"tokenize"}), ("to_rpn", "main", {"evaluate"})],
    "worker_pool": [("produce", "worker", {"checksum"}), ("main", "run@threading.py", {"worker"})],
    "gather_tree": [("fetch", "handle", {"render"}), ("serve", "handle", {"render"}),
                    ("_run@asyncio/events.py", "handle", {"render"})],
    "pipeline": [("summarise", "run", {"<genexpr>"}), ("batches", "only_levels", {"parse"})],
    "ledger": [("amortize", "invoice_total", {"line_amount"}), ("invoice_total", "statement", {"money"}),
               ("statement", "invoice_total", {"line_amount"})],
    "pickling": [("restore", "snapshot", {"__getstate__", "__reduce__"}),
                 ("snapshot", "restore", {"__setstate__", "make_money"})],
    "formatting": [("render_table", "render_letter", {"substitute"}), ("legacy_line", "format_row", {"__format__"}),
                   ("format_row", "wrap_notes", {"fill"}), ("wrap_notes", "render_table", {"format_row"})],
}


def program(pid):
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        argv = f.read().split(b"\0")
    return next(os.path.basename(a.decode())[:-3] for a in argv if a.endswith(b".py"))


def dump(bpfpy, pid):
    """One stop of every thread: [(tid, frames root first) or (tid, error)]."""
    p = subprocess.run([bpfpy, "dump", "--json", "-p", str(pid)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=10)
    if p.returncode:
        return [(0, "dump exited %d: %s" % (p.returncode, p.stderr.decode(errors="replace").strip()[-200:]))]
    out = []
    for t in json.loads(p.stdout)["threads"]:
        if t.get("error") or t.get("truncated"):
            out.append((t["tid"], t.get("error") or "truncated"))
        elif t["frames"]:
            out.append((t["tid"], [(f["name"], f.get("file") or "", f["line"]) for f in reversed(t["frames"])]))
    return out


def matches(spec, frame, own):
    name, _, tail = spec.partition("@")
    fname, ffile, _ = frame
    if fname.rsplit(".", 1)[-1] != name and fname != name:
        return False
    return ffile.endswith("/" + tail) or ffile == tail if tail else os.path.basename(ffile) == own


def find(stack, spec, own):
    return next((i for i, f in enumerate(stack) if matches(spec, f, own)), None)


def graft(stack, pool, faults, own, turn):
    """The stack with another moment's frames grafted on, or None."""
    for x, y, z in faults:
        i = find(stack, x, own)
        if i is None:
            continue
        donors = []
        for t in pool:
            j = find(t, y, own)
            if j is not None and any(f[0].rsplit(".", 1)[-1] in z for f in t[j + 1:]):
                donors.append(t[j + 1:])
        if donors:
            return stack[: i + 1] + donors[turn % len(donors)]
    return None


def esc(s):
    return "".join("%%%02X" % ord(c) if c in ";@%\n\r" else c for c in s)


def line(tid, stack):
    return "tid=%d %s\n" % (tid, ";".join(
        "%s:%s@%s" % (esc(n), l if l >= 0 else "?", esc(f)) if f else "%s:%s" % (esc(n), l if l >= 0 else "?")
        for n, f, l in stack))


# The oracle takes a late tool's stacks if it sampled at most its window
# plus 30 s (bpfpy oracle --help, EXTERNAL PROTOCOL).
MAX_EXTRA_S = 10.0


def sample(bpfpy, pid, seconds, min_stacks=0):
    seen, t0 = [], time.monotonic()
    while True:
        t = time.monotonic() - t0
        stacks = sum(1 for _, st in seen if not isinstance(st, str))
        if t >= seconds and (stacks >= min_stacks or t >= seconds + MAX_EXTRA_S):
            break
        try:
            seen.extend(dump(bpfpy, pid))
        except (OSError, ValueError, KeyError, subprocess.TimeoutExpired) as e:
            seen.append((0, "dump failed: %s" % e))
    return seen, time.monotonic() - t0


def shapes(bpfpy, pid, seconds, own):
    seen, _ = sample(bpfpy, pid, seconds)
    counts = {}
    for tid, s in seen:
        key = "E " + s if isinstance(s, str) else ";".join("%s (%s:%d)" % f for f in s)
        counts[key] = counts.get(key, 0) + 1
    for key, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(n, key)


def main():
    args = sys.argv[1:]
    opt = lambda name, default=None: args[args.index(name) + 1] if name in args else default
    bpfpy = opt("--bpfpy", "bpfpy")
    if "--shapes" in args:
        pid = int(opt("--pid"))
        return shapes(bpfpy, pid, float(opt("--seconds", "2")), opt("--name", program(pid)) + ".py")
    pid = int(os.environ["BPFPY_PID"])
    own = program(pid)
    faults = [] if "--clean" in args else FAULTS.get(own, [])
    seen, secs = sample(bpfpy, pid, float(os.environ.get("BPFPY_DURATION", "1")),
                        int(opt("--min-stacks", "0")))
    pool = [s for _, s in seen if not isinstance(s, str)]
    out, changed, eligible, errors = ["S late %.3f\n" % secs], 0, 0, 0
    for tid, s in seen:
        if isinstance(s, str):
            out.append("E %s\n" % s.replace("\n", " "))
            errors += 1
            continue
        g = graft(s, pool, faults, own + ".py", eligible // 2)
        if g is not None:
            eligible += 1
            if eligible % 2:
                s, changed = g, changed + 1
        out.append(line(tid, s))
    sys.stdout.write("".join(out))
    sys.stdout.flush()
    if opt("--log-dir"):
        with open(os.path.join(opt("--log-dir"), own + ".log"), "w") as f:
            f.write("changed %d stacks %d errors %d\n" % (changed, len(seen) - errors, errors))
    return 0


if __name__ == "__main__":
    sys.exit(main())
