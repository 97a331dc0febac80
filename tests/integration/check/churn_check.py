"""Checks one `bpfpy record` of tests/integration/py/churn.py (issue 28).

Arguments: what=LABEL err=SUMMARY out=TARGET_STDOUT raw=RAW_FILE

  sum        the summary's "ticks N = W written + E errors + P without a
             Python thread state + D dropped" holds exactly, and each part
             is the sum of its own line: written's Python stacks and thread
             phases, the "errors:" lines, the legacy line's "no thread
             state", the "dropped:" causes; the raw file holds W samples,
             with as many [thread starting] and [thread exiting] as said
  hooks      the threads the kernel saw born while sampled are the threads
             the target says it started (one more at most: the server's
             serve_forever thread, started before it counts; 1% fewer at
             most: a spawn whose clone comes more than a second later, on a
             host out of CPU, is not entered, and its thread is searched for)
  errors     at most 2 + 0.5% of the ticks (the goal is 0.2%; the bound is
             generous for a loaded machine, and fails on what the issue saw:
             1.3-2.3% before)
  no state   ticks without a Python thread state at most 2 + 0.5%: a thread
             being born or torn down is a thread phase, not a thread without
             a state (without the thread hooks, BPFPY_THREAD_HOOKS=0, these
             runs had 1-5%)
  freed      no sample of a thread taken after its body ended (the target's
             "end TID NS", CLOCK_MONOTONIC like the samples' times) shows
             its body's frames (Thread._bootstrap, _bootstrap_inner): such
             a stack could only be read from a freed or stale thread state.
             Python code may still run then, called from the C code that
             ends a thread (a WeakSet's _remove when the Thread object
             dies); that is a real stack. The count of samples after an end
             is printed, so a run that had none to check says so
  share      the share of ticks with handle_work on the stack is within
             3 binomial standard deviations plus 0.05 of the share of CPU
             time the target measured in handle_work (time.thread_time)
             against its whole CPU time (time.process_time): the ticks land
             on CPU time, and the 0.05 covers the target's own bookkeeping
             outside the measured span and bpfpy's hooks charged to it
"""
import json
import math
import re
import sys

from checklib import Report, kv

a = kv(sys.argv[1:])
r = Report(a["what"])
err = open(a["err"], errors="replace").read()
out = open(a["out"], errors="replace").read().splitlines()


def num(pattern, text=err, default=None):
    m = re.search(pattern, text)
    return int(m.group(1)) if m else default


m = re.search(r"ticks (\d+) = (\d+) written \+ (\d+) errors \+ (\d+) without a Python thread "
              r"state \+ (\d+) dropped(.*)", err)
stats = [json.loads(l[6:]) for l in out if l.startswith("stats ")]
if not m or not stats:
    r.bad("no summary sum or no stats line: %s | %s" % (err[-600:], out[-3:]))
    r.done()
stats = stats[0]
ticks, written, errors, none, dropped = (int(x) for x in m.groups()[:5])
w = re.search(r"written: (\d+) Python stacks, (\d+) \[thread starting\], (\d+) \[thread exiting\]",
              err)
err_lines = sum(int(x) for x in re.findall(r"^  errors: .* (\d+)$", err, re.M))
drop = re.search(r"^  dropped: (.*)$", err, re.M)
drops = sum(int(x) for x in re.findall(r"(\d+) [^,]+", drop.group(1))) if drop else 0
legacy_none = num(r"no thread state (\d+)")
parts = (w and int(w.group(1)) + int(w.group(2)) + int(w.group(3)) == written and
         err_lines == errors and legacy_none == none and drops == dropped)
if ticks == written + errors + none + dropped and not m.group(6).strip() and parts:
    r.ok("ticks %d = %d written (%s Python, %s starting, %s exiting) + %d errors + %d without "
         "a thread state + %d dropped" % (ticks, written, w.group(1), w.group(2), w.group(3),
                                          errors, none, dropped))
else:
    r.bad("the summary does not add up: %s" % "\n".join(
        l for l in err.splitlines() if re.match(r"  (ticks|written|errors|dropped)", l)))

# The raw file: one line per written sample, leaf first.
samples = []
for line in open(a["raw"], errors="replace"):
    if line.startswith("#"):
        continue
    f = line.rstrip("\n").split(" ", 5)
    if len(f) == 6:
        samples.append((int(f[0]), int(f[2]), [x.split(" (")[0] for x in f[5].split(";")]))
phase = {p: sum(1 for s in samples if "[thread %s]" % p in s[2]) for p in ("starting", "exiting")}
if w and len(samples) == written and phase["starting"] == int(w.group(2)) and \
        phase["exiting"] == int(w.group(3)):
    r.ok("the raw file holds the %d samples written, %d and %d of them thread phases"
         % (len(samples), phase["starting"], phase["exiting"]))
else:
    r.bad("raw: %d samples (%s), the summary wrote %d" % (len(samples), phase, written))

born = num(r"threads: (\d+) born")
if born is not None and stats["threads"] * 0.99 <= born <= stats["threads"] + 1 and \
        stats["requests"] > 0:
    r.ok("%d threads born while sampled, the target started %d and did %d requests"
         % (born, stats["threads"], stats["requests"]))
else:
    r.bad("threads born %s, the target started %d (%d requests)"
          % (born, stats["threads"], stats["requests"]))

for what, n in (("errors", errors), ("ticks without a Python thread state", none)):
    line = "%d %s in %d ticks (%.2f%%)" % (n, what, ticks, 100.0 * n / max(ticks, 1))
    if n <= 2 + ticks * 0.005:
        r.ok(line)
    else:
        r.bad(line)

ends = {}
for l in out:
    if l.startswith("end "):
        _, tid, ns = l.split()
        ends[int(tid)] = int(ns)
after, wrong = 0, []
body = ("Thread._bootstrap", "_bootstrap", "Thread._bootstrap_inner", "_bootstrap_inner")
for ts, tid, stack in samples:
    if tid in ends and ts > ends[tid]:
        after += 1
        if any(x in body for x in stack):
            wrong.append(";".join(stack))
if not wrong:
    r.ok("0 samples of a thread's body after it ended (%d samples after %d threads' ends)"
         % (after, len(ends)))
else:
    r.bad("%d samples with a Python stack after their thread's end: %s" % (len(wrong), wrong[:3]))

hits = sum(1 for s in samples if "handle_work" in s[2])
p_meas = stats["work_s"] / stats["cpu_s"]
p_samp = hits / max(ticks, 1)
tol = 3 * math.sqrt(max(p_meas * (1 - p_meas), 0.01) / max(ticks, 1)) + 0.05
if abs(p_samp - p_meas) <= tol:
    r.ok("handle_work: %.3f of the ticks, %.3f of the CPU by its own clock (tolerance %.3f)"
         % (p_samp, p_meas, tol))
else:
    r.bad("handle_work: %.3f of the ticks (%d of %d), %.3f of the CPU by its own clock "
          "(tolerance %.3f)" % (p_samp, hits, ticks, p_meas, tol))
r.done()
