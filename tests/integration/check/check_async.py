"""Checks of record --async and dump --async (tests/integration/test_async.sh).

  chains FILE tasks=Task-1,worker-K,fetch-K leaf=crunch [min=0.95] [all_k=1,2,3]
      collapsed output of record --async: of the samples whose leaf function
      is LEAF, at least MIN must read, root to leaf,
      ...[task Task-1];...;[task worker-K];...;[task fetch-K];...;LEAF
      with one K (and each of ALL_K seen).
  gather TEXT JSON        dump --async of py/async_gather.py: seven tasks, who
      awaits whom, at most one running; the text says the same as the JSON.
  shapes TEXT JSON minor=M  dump --async of py/async_shapes.py.
  kernel ERR [min=0.9]    record --async's summary line (stderr) of
      py/async_gather.py: at least MIN of the samples in a task have their
      first awaiter and its frames from the kernel (each fetch-K's worker-K
      awaits it directly, which every version records where the kernel
      reads it), and none is without awaiters.
"""
import json
import re
import sys

from checklib import Report, kv

FILELINE = re.compile(r" \([^()]*\)$")


def frames_of(line):
    stack, _, count = line.rpartition(" ")
    return [FILELINE.sub("", f) for f in stack.split(";")], int(count)


def chains(r, path, a):
    tasks, leaf = a["tasks"].split(","), a["leaf"]
    need = float(a.get("min", "0.95"))
    total = good = 0
    ks = set()
    parts, seen_k = [], False
    for t in tasks:
        if "K" in t:
            name = re.escape(t).replace("K", r"\1" if seen_k else r"(\d+)")
            seen_k = True
        else:
            name = re.escape(t)
        parts.append(r"\[task %s\]" % name)
    pat = re.compile(";(?:[^;]*;)*?".join(parts + [re.escape(leaf)]) + "$")
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        if not line:
            continue
        fr, n = frames_of(line)
        if fr[-1] != leaf:
            continue
        total += n
        m = pat.search(";".join(fr))
        if m:
            good += n
            if m.groups():
                ks.add(m.group(1))
    if not total:
        r.bad("%s: no sample ends in %s" % (path, leaf))
        return
    share = good / total
    msg = "%d of %d samples in %s read %s (%.1f%%, K in %s)" % (
        good, total, leaf, " .. ".join("[task %s]" % t for t in tasks), 100 * share, sorted(ks))
    (r.ok if share >= need else r.bad)(msg)
    want_k = a.get("all_k")
    if want_k:
        missing = sorted(set(want_k.split(",")) - ks)
        (r.bad if missing else r.ok)("every K seen: missing %s" % missing)


def text_tasks(path):
    """name -> (state, awaiter name or None), from dump --async's text."""
    out = {}
    head = re.compile(r"^( *)(\S.*) \[(running|pending|done|cancelled)(?:, thread \d+)?\] 0x[0-9a-f]+"
                      r"(?:, awaited by (.*?)(?: \(and \d+ more\))?)?$")
    for line in open(path, encoding="utf-8"):
        m = head.match(line.rstrip("\n"))
        if m:
            out[m.group(2)] = (m.group(3), m.group(4))
    return out


def escaped(name):
    """The text output's escape of a name (user/base/text_escape.c)."""
    return "".join(c if 0x20 <= ord(c) < 0x7f else "\\x%02x" % ord(c) for c in name)


def json_tasks(path):
    d = json.load(open(path, encoding="utf-8"))
    return d, {t["name"]: t for t in d["tasks"]}


def same_as_text(r, jt, tt, names):
    for n in names:
        t = jt.get(n)
        e = tt.get(escaped(n))
        if not t or not e:
            r.bad("task %r: json %s, text %s" % (n, bool(t), bool(e)))
            continue
        # Two dumps, moments apart: the running task may have changed.
        cls = lambda s: "live" if s in ("running", "pending") else s
        want = (cls(t["state"]), escaped(t["awaiter_name"]) if t["awaiter_name"] else None)
        got = (cls(e[0]), e[1])
        (r.ok if got == want else r.bad)("task %r: text %s, json %s" % (n, e, want))


def gather(r, tpath, jpath):
    d, jt = json_tasks(jpath)
    tt = text_tasks(tpath)
    names = ["Task-1"] + ["worker-%d" % k for k in (1, 2, 3)] + ["fetch-%d" % k for k in (1, 2, 3)]
    missing = [n for n in names if n not in jt]
    (r.bad if missing else r.ok)("tasks listed: %d, missing %s" % (len(jt), missing))
    if len(jt) != 7:
        r.bad("%d tasks, want 7: %s" % (len(jt), sorted(jt)))
    for k in (1, 2, 3):
        for n, want in (("worker-%d" % k, "Task-1"), ("fetch-%d" % k, "worker-%d" % k)):
            got = jt.get(n, {}).get("awaiter_name")
            (r.ok if got == want else r.bad)("%s awaited by %s (want %s)" % (n, got, want))
    running = [n for n, t in jt.items() if t["state"] == "running"]
    (r.ok if len(running) <= 1 and all(n.startswith("fetch-") for n in running)
     else r.bad)("running: %s" % running)
    other = [n for n, t in jt.items() if t["state"] not in ("running", "pending")]
    (r.bad if other else r.ok)("none done or cancelled: %s" % other)
    root = jt.get("Task-1", {})
    (r.ok if root.get("frames") and root["frames"][0]["name"] == "main"
     else r.bad)("Task-1 suspended in main: %s" % [f["name"] for f in root.get("frames", [])])
    same_as_text(r, jt, tt, names)


def shapes(r, tpath, jpath, minor):
    d, jt = json_tasks(jpath)
    tt = text_tasks(tpath)
    many = [n for n in jt if n.startswith("many-")]
    (r.ok if len(many) == 10000 else r.bad)("%d of 10000 pending many-N tasks listed" % len(many))
    want = {"tg-1": "group", "tg-2": "group", "chain-c": "chain-b", "chain-b": "chain-a",
            "thread-leaf": "thread-root", "group": None, "chain-a": None, "thread-root": None,
            "shapes-main": None, "bad\x1b[31m\nname": None}
    if minor >= 12:
        want["eager-1"] = None
    for n, w in want.items():
        t = jt.get(n)
        if not t:
            r.bad("task %r not listed" % n)
            continue
        (r.ok if t["awaiter_name"] == w else r.bad)("%r awaited by %r (want %r)" % (n, t["awaiter_name"], w))
    c = jt.get("chain-c", {})
    fr = [f["name"] for f in c.get("frames", [])]
    (r.ok if fr[-3:] == ["sleep", "leaf", "chain_c"][-len(fr[-3:]):] and fr[-1] == "chain_c" and "leaf" in fr
     else r.bad)("chain-c's coroutine chain leaf first: %s" % fr)
    unnamed = [n for n in jt if re.fullmatch(r"Task-\d+", n)]
    (r.ok if unnamed else r.bad)("an unnamed task named Task-N: %s" % unnamed)
    leafr = jt.get("thread-leaf", {})
    (r.ok if leafr.get("state") in ("running", "pending") else r.bad)("thread-leaf %s" % leafr.get("state"))
    raw = open(tpath, "rb").read()
    (r.bad if b"\x1b" in raw else r.ok)("no raw ESC byte in the text output")
    (r.ok if escaped("bad\x1b[31m\nname") in tt else r.bad)("the hostile name printed escaped")
    same_as_text(r, jt, tt, [n for n in want if n in jt])
    cut = d.get("cut", {})
    (r.bad if any(cut.values()) else r.ok)("nothing cut: %s" % cut)


def top(r, path, a):
    """The last refresh of top --async: a row per chain; the root's TOTAL%."""
    text = open(path, encoding="utf-8").read()
    last = text.rsplit("TASK CHAIN", 1)
    if len(last) != 2:
        r.bad("no TASK CHAIN header in top's output")
        return
    rows = {}
    for line in last[1].splitlines():
        m = re.match(r"^ *([0-9.]+) +([0-9.]+) +(\d+) +(\d+)  (.*)$", line)
        if m:
            rows[m.group(5)] = (float(m.group(1)), float(m.group(2)))
    pat = re.compile("^" + re.escape(a["chain"]).replace("K", r"(\d)") + "$")
    chains = [k for k in rows if pat.match(k)]
    (r.ok if chains else r.bad)("rows of the chain %s: %s" % (a["chain"], chains))
    root = rows.get(a["root"])
    (r.ok if root and root[1] >= 90 else r.bad)("%s's TOTAL%% %s (>= 90)" % (a["root"], root and root[1]))
    if chains:
        own = sum(rows[k][0] for k in chains)
        (r.ok if own >= 90 else r.bad)("OWN%% of those rows together %.1f (>= 90)" % own)


def all_mode(r, path, errpath):
    """record --async-mode all of the gather program: at each tick Task-1
    waits in main, worker-K in worker, the two fetch tasks not running in
    sleep; so per graph read about 6 waiting samples, each a chain from the
    root with no loop frames."""
    m = re.search(r"async-mode all: (\d+) task graphs read, (\d+) waiting-task samples",
                  open(errpath, encoding="utf-8").read())
    if not m:
        r.bad("no 'async-mode all:' summary line")
        return
    reads, waiting = int(m.group(1)), int(m.group(2))
    (r.ok if reads and 5 * reads <= waiting <= 7 * reads else r.bad)(
        "%d waiting-task samples for %d graph reads (5 to 7 a read: 6 waiting tasks)" % (waiting, reads))
    want = {("[task Task-1]", "main"): 0}
    for k in (1, 2, 3):
        want[("[task Task-1]", "main", "[task worker-%d]" % k, "worker")] = 0
    for line in open(path, encoding="utf-8"):
        fr, n = frames_of(line.rstrip("\n"))
        if tuple(fr) in want:
            want[tuple(fr)] += n
    for chain, n in want.items():
        (r.ok if n >= 0.9 * reads else r.bad)("%s: %d samples over %d reads" % (";".join(chain), n, reads))


def kernel(r, path, a):
    need = float(a.get("min", "0.9"))
    text = open(path, encoding="utf-8", errors="replace").read()
    m = re.search(r"async: (\d+) samples in a task.*first awaiter from the kernel (\d+) \(its "
                  r"frames from the kernel (\d+).* (\d+) chains without awaiters", text)
    if not m:
        r.bad("no 'async:' summary line with the kernel's awaiters")
        return
    tasks, aw, frames, lone = (int(x) for x in m.groups())
    (r.ok if tasks and frames >= need * tasks else r.bad)(
        "first awaiter and its frames from the kernel in %d of %d samples in a task "
        "(%d awaiters; >= %.0f%%)" % (frames, tasks, aw, 100 * need))
    (r.ok if not lone else r.bad)("%d chains without awaiters" % lone)


def main():
    r = Report("async")
    mode = sys.argv[1]
    if mode == "chains":
        chains(r, sys.argv[2], kv(sys.argv[3:]))
    elif mode == "all":
        all_mode(r, sys.argv[2], sys.argv[3])
    elif mode == "top":
        top(r, sys.argv[2], kv(sys.argv[3:]))
    elif mode == "gather":
        gather(r, sys.argv[2], sys.argv[3])
    elif mode == "kernel":
        kernel(r, sys.argv[2], kv(sys.argv[3:]))
    elif mode == "shapes":
        shapes(r, sys.argv[2], sys.argv[3], int(kv(sys.argv[4:])["minor"]))
    r.done()


main()
