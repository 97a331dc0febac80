#!/usr/bin/env python3
# Checks of test_offcpu.sh on bpfpy's outputs. Prints ok:/FAIL: lines and
# "stat:" lines; the exit status is the number of failures.
#
#   check_offcpu.py four offcpu|wall FOLDED SUMMARY PY_OUT END
#       FOLDED: record --threads collapsed output (ns) of py/offcpu_four.py;
#       SUMMARY: its stderr ("bpfpy record: D s, ..."); PY_OUT: the
#       program's output ("stats T {...}" lines, T = time.monotonic());
#       END: CLOCK_MONOTONIC when bpfpy had ended. The program's measure is
#       taken between its lines nearest END - D and END.
#   check_offcpu.py minblock SPEEDSCOPE MIN_US
#   check_offcpu.py gilraw RAW_ALL RAW_GIL SPINNER_TID HASHER_TID
#   check_offcpu.py giloff FOLDED HASHER_TID
import collections
import json
import re
import sys

fails = 0


def ok(msg):
    print("ok: " + msg)


def bad(msg):
    global fails
    fails += 1
    print("FAIL: " + msg)


def check(cond, msg):
    (ok if cond else bad)(msg)


def folded(path):
    """{(tid, name): Counter(reason -> ns)}, reason "cpu" for on-CPU."""
    out = collections.defaultdict(collections.Counter)
    for line in open(path, encoding="utf-8"):
        st, _, n = line.rstrip("\n").rpartition(" ")
        parts = st.split(";")
        if len(parts) < 3 or not parts[0].startswith("pid:"):
            bad("not a --threads line: %r" % line[:200])
            continue
        m = re.match(r"tid:(\d+)(?: \((.*)\))?$", parts[1])
        if not m:
            bad("no tid in %r" % line[:200])
            continue
        leaf = parts[-1]
        r = leaf[len("[off-cpu: "):-1] if leaf.startswith("[off-cpu: ") else "cpu"
        out[(int(m.group(1)), m.group(2) or "")][r] += int(n)
    return out


def by_name(agg):
    return {name: c for (tid, name), c in agg.items()}


def elapsed(summary):
    for line in open(summary, encoding="utf-8"):
        m = re.match(r"bpfpy record: ([0-9.]+) s,", line)
        if m:
            return float(m.group(1))
    bad("no 'bpfpy record: D s' line in the summary")
    return 0.0


def stats(line):
    _, t, js = line.split(" ", 2)
    return float(t), json.loads(js)


# What each thread of offcpu_four.py waits for.
EXPECT = {"sleeper": "sleep", "holder": "sleep", "waiter": "lock", "reader": "io"}


def four(clock, path, summary, py_out, end):
    agg = by_name(folded(path))
    d = elapsed(summary)
    end = float(end)
    lines = [stats(l.rstrip("\n")) for l in open(py_out, encoding="utf-8") if l.startswith("stats ")]
    if not lines:
        bad("%s: the program printed no stats" % clock)
        return
    ta, a = min(lines, key=lambda x: abs(x[0] - (end - d)))
    tb, b = min(lines, key=lambda x: abs(x[0] - end))
    dt = tb - ta
    print("stat: %s: the program's window %.3f s (%.3f to %.3f), bpfpy's %.3f s ending at %.3f" %
          (clock, dt, ta, tb, d, end))
    if d <= 0 or dt <= 0:
        bad("no duration: recorded %.3f s, measured %.3f s" % (d, dt))
        return
    for name in list(EXPECT) + ["burner"]:
        c = agg.get(name)
        if not c:
            bad("%s: no thread named %s in the profile (names: %s)" % (clock, name, sorted(agg)))
            continue
        # The program's own fraction of its window off CPU: 1 - its CPU time
        # (time.thread_time()). Its time blocked inside its call is shown
        # too, but not compared: the GIL waits and preemptions before and
        # after the call are off-CPU time the call's clock does not see.
        meas = 1 - (b[name][2] - a[name][2]) / dt
        blocked = (b[name][1] - a[name][1]) / dt
        off = sum(v for r, v in c.items() if r != "cpu")
        tot = sum(c.values())
        shares = ", ".join("%s %.2f" % (r, v / tot) for r, v in c.most_common())
        print("stat: %s %s: recorded %.3f s of %.3f s (off-CPU %.3f s: %s); program measured "
              "%.2f of its time off CPU, %.2f blocked in its call" %
              (clock, name, tot / 1e9, d, off / 1e9, shares, meas, blocked))
        if name in EXPECT:
            want = EXPECT[name]
            blocking = off - c["gil"] - c["preempted"]
            check(blocking > 0 and c[want] >= 0.75 * blocking and c[want] >= 0.2 * off,
                  "%s %s: [off-cpu: %s] is %.2f of its off-CPU time other than GIL and "
                  "preemption (>= 0.75), %.2f of all of it (>= 0.2)" %
                  (clock, name, want, c[want] / blocking if blocking > 0 else 0,
                   c[want] / off if off else 0))
        else:
            check(c["gil"] + c["preempted"] >= 0.9 * off,
                  "%s burner: its off-CPU time is GIL waits and preemption (%.2f >= 0.9)" %
                  (clock, (c["gil"] + c["preempted"]) / off if off else 0))
        check(abs(off / 1e9 / d - meas) <= 0.2,
              "%s %s: off-CPU fraction %.2f within 0.2 of the program's %.2f" %
              (clock, name, off / 1e9 / d, meas))
        if clock == "wall":
            check(0.85 <= tot / 1e9 / d <= 1.1,
                  "wall %s: %.3f s of %.3f s elapsed (0.85..1.1)" % (name, tot / 1e9, d))
    if clock == "wall":
        n = len(agg)
        tot = sum(sum(c.values()) for c in agg.values())
        check(0.85 <= tot / 1e9 / (d * n) <= 1.1,
              "wall: all %d threads %.3f s = %.2f x elapsed x threads (0.85..1.1)" %
              (n, tot / 1e9, tot / 1e9 / (d * n)))


def minblock(path, min_us):
    """Every interval of a --min-block-us speedscope file is >= min_us."""
    floor = int(min_us) * 1000
    doc = json.load(open(path, encoding="utf-8"))
    frames = doc["shared"]["frames"]
    kept = []
    for p in doc["profiles"]:
        for st, w in zip(p["samples"], p["weights"]):
            if st and frames[st[-1]]["name"].startswith("[off-cpu: "):
                kept.append(w)
    short = [w for w in kept if w < floor]
    print("stat: --min-block-us %s: %d intervals kept, shortest %s ns" %
          (min_us, len(kept), min(kept, default="-")))
    check(kept and not short,
          "--min-block-us %s: all %d intervals kept are >= %d ns (%d shorter: %s)" %
          (min_us, len(kept), floor, len(short), short[:5]))


def raw_lines(path):
    for line in open(path, encoding="utf-8"):
        f = line.rstrip("\n").split(" ", 5)
        if len(f) == 6 and not line.startswith("#"):  # '#': raw 2's, not samples
            yield int(f[2]), int(f[4]), f[5]


GIL_HELD = 1 << 2  # SAMPLE_GIL_HELD, bpf/bpfpy.h


def gilraw(p_all, p_gil, spinner, hasher):
    spinner, hasher = int(spinner), int(hasher)
    cnt = collections.Counter((tid, bool(fl & GIL_HELD)) for tid, fl, _ in raw_lines(p_all))
    print("stat: without --gil: spinner %d held / %d not, hasher %d held / %d not" %
          (cnt[spinner, True], cnt[spinner, False], cnt[hasher, True], cnt[hasher, False]))
    check(cnt[hasher, False] > 0,
          "without --gil: the hasher has samples without the GIL (%d)" % cnt[hasher, False])
    g = list(raw_lines(p_gil))
    notheld = sum(1 for _, fl, _ in g if not fl & GIL_HELD)
    check(g and notheld == 0, "--gil: all %d samples hold the GIL (%d do not)" % (len(g), notheld))
    check(any(tid == spinner for tid, _, _ in g),
          "--gil: the spinner, which holds the GIL, is kept")


def giloff(path, hasher):
    agg = folded(path)
    reasons = collections.Counter()
    for c in agg.values():
        reasons.update(c)
    print("stat: --clock offcpu --gil: %s" %
          ", ".join("%s %.3f s" % (r, v / 1e9) for r, v in reasons.items()))
    check(reasons and set(reasons) == {"gil"},
          "--clock offcpu --gil keeps only [off-cpu: gil] (%s)" % sorted(reasons))
    h = sum(c["gil"] for (tid, _), c in agg.items() if tid == int(hasher))
    check(h > 0, "the hasher waits for the GIL: %.3f s of [off-cpu: gil]" % (h / 1e9))


mode = sys.argv[1]
if mode == "four":
    four(*sys.argv[2:7])
elif mode == "minblock":
    minblock(*sys.argv[2:4])
elif mode == "gilraw":
    gilraw(*sys.argv[2:6])
elif mode == "giloff":
    giloff(*sys.argv[2:4])
else:
    bad("unknown mode %s" % mode)
sys.exit(min(fails, 100))
