"""record --opcodes outputs (tests/integration/test_opcodes.sh).

  mode=add folded=F pprof_top=T minor=M program=P
      py/opcodes_add.py on the cpu clock: every stack of the folded file F
      has exactly one instruction mark, right after a Python frame with a
      file and line (only [gc] may follow it); on the line P marks
      "# L:add", the most sampled instruction is BINARY_OP_ADD_INT
      (BINARY_OP) from 3.11 on and BINARY_ADD before (M: the minor), with at
      least MIN_ON_LINE samples there. The same from T, `go tool pprof
      -lines -top` of the recording's pprof, where each mark is a location
      at its Python frame's file and line.
  mode=unknown folded=F byte=B program=P
      py/opcodes_unknown.py, snapshot clock with --idle: the thread blocked
      on the line P marks "# L:blocked" shows "[op <op B>]", the byte the
      program wrote there, which its version does not name.
  mode=offcpu folded=F
      the same program on --clock offcpu: an interval whose stack ends in
      "[op ...];[off-cpu: sleep]" (the mark on the Python frame, the
      reason under it).
"""
import os
import re
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checklib import Report, Source, kv  # noqa: E402

MIN_ON_LINE = 50
OP = re.compile(r"^\[op [^;]*\]$")
PY = re.compile(r"^(.*) \((.+):(-?\d+)\)$")


def folded(path):
    for line in open(path, encoding="utf-8", errors="replace"):
        stack, _, n = line.rstrip("\n").rpartition(" ")
        yield stack.split(";"), int(n)


def expected(minor):
    return "[op BINARY_OP_ADD_INT (BINARY_OP)]" if minor >= 11 else "[op BINARY_ADD]"


def on_line(counts, want, what, r):
    total = sum(counts.values())
    top = counts.most_common(3)
    if total < MIN_ON_LINE:
        r.bad("%s: %d samples on the add line, fewer than %d: %s" % (what, total, MIN_ON_LINE, top))
    elif top[0][0] != want:
        r.bad("%s: the add line's most sampled instruction is %s, not %s: %s"
              % (what, top[0][0], want, top))
    else:
        r.ok("%s: %s is the add line's most sampled instruction, %d of its %d samples (next: %s)"
             % (what, want, top[0][1], total, top[1:] or "none"))


def check_add(a, r):
    line = Source(a["program"]).markers("L")["add"]
    base = os.path.basename(a["program"])
    want = expected(int(a["minor"]))
    counts, stacks, bad = Counter(), 0, []
    for frames, n in folded(a["folded"]):
        stacks += 1
        at = [i for i, f in enumerate(frames) if f.startswith("[op ")]
        py = PY.match(frames[at[0] - 1]) if len(at) == 1 and at[0] > 0 else None
        if len(at) != 1 or not OP.match(frames[at[0]]) or not py or \
                any(f != "[gc]" for f in frames[at[0] + 1:]):
            bad.append(";".join(frames[-3:]))
            continue
        if os.path.basename(py.group(2)) == base and int(py.group(3)) == line:
            counts[frames[at[0]]] += n
    if bad:
        r.bad("%d of %d stacks without exactly one instruction mark right on a Python frame: %s"
              % (len(bad), stacks, bad[:3]))
    else:
        r.ok("each of %d stacks has one instruction mark, on its Python leaf frame" % stacks)
    on_line(counts, want, "folded", r)
    top = re.compile(r"^\s*(\d+)\s+\S+%\s+\S+%\s+\d+\s+\S+%\s+(\[op .*\]) (\S+):(-?\d+)$")
    counts = Counter()
    for l in open(a["pprof_top"], encoding="utf-8", errors="replace"):
        m = top.match(l.rstrip("\n"))
        if m and os.path.basename(m.group(3)) == base and int(m.group(4)) == line:
            counts[m.group(2)] += int(m.group(1))
    on_line(counts, want, "go tool pprof -lines -top", r)


def check_unknown(a, r):
    line = Source(a["program"]).markers("L")["blocked"]
    want = "[op <op %s>]" % a["byte"]
    seen = Counter()
    for frames, n in folded(a["folded"]):
        for i in range(1, len(frames)):
            py = PY.match(frames[i - 1])
            if py and py.group(1) == "blocked" and int(py.group(3)) == line:
                seen[frames[i]] += n
    if seen[want]:
        r.ok("the blocked thread's forged byte is named %s (%d samples; all: %s)"
             % (want, seen[want], dict(seen)))
    else:
        r.bad("no %s on blocked() line %d: %s" % (want, line, dict(seen)))


def check_offcpu(a, r):
    n = sum(c for frames, c in folded(a["folded"])
            if len(frames) >= 2 and frames[-1] == "[off-cpu: sleep]" and OP.match(frames[-2]))
    if n:
        r.ok("off-CPU sleeps under their instruction mark: %d ns" % n)
    else:
        r.bad("no stack ending in [op ...];[off-cpu: sleep]")


def main():
    a = kv(sys.argv[1:])
    r = Report("%s %s" % (a.get("label", "?"), a["mode"]))
    {"add": check_add, "unknown": check_unknown, "offcpu": check_offcpu}[a["mode"]](a, r)
    r.done()


main()
