# The checker of tests/integration/test_dump.sh: parses one dump of a
# program of tests/integration/py/ (text or --json) and compares every frame
# with what the program's source says (its "# L:key" / "# M:key" markers, the
# defs around them), the thread ids with what the program printed and with
# /proc/PID/task, and the blocking/non-blocking details.
#   check_dump.py label=L version=V root=R prog=P src=FILE shown=PATH out=DUMP
#                 fmt=text|json mode=blocking|nonblocking pid=N ready=LINE
#                 tasks=TID,... maxdepth=N
# Prints ok:/FAIL: lines (and "time:" lines); exit status = failures.
import ast, json, os, re, sys

from checklib import Report, Source, func_at, kv

def die(msg):
    print("FAIL: checker: " + msg)
    sys.exit(1)

args = kv(sys.argv[1:])
prog, src_path, shown_path = args["prog"], args["src"], args["shown"]
minor = int(args["version"].split(".")[1])
root = args["root"]
fmt, mode = args["fmt"], args["mode"]
report = Report("%s %s %s %s" % (args["label"], prog, fmt, mode))
ok, bad = report.ok, report.bad

# ---- expectations from the source
source = Source(src_path)
src, tree = source.text, source.tree

def fname(q):
    return q[0] if minor >= 11 else q[1]

L = source.markers("L")
def ours(key):
    return (fname(func_at(tree, L[key])), shown_path, L[key])

def made_up(key):
    # MADE_UP_SRC = """\ : its line 1 is the line after the opening quotes
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "MADE_UP_SRC":
            start, text = node.value.lineno, node.value.value
            break
    else:
        die("no MADE_UP_SRC in " + src_path)
    rel = source.markers("M")[key] - start
    if text.split("\n")[rel - 1].find("# M:" + key) < 0:
        die("made-up line arithmetic is off for " + key)
    return (fname(func_at(ast.parse(text), rel)), "made_up.py", rel)

def threading_frames():
    """run, _bootstrap_inner, _bootstrap of the target's own threading.py,
    each at the line of its call of the next one."""
    path = None
    for f in th_files:
        path = f
    if path is None:
        return None
    tl = open(os.path.join(root, path.lstrip("/")), encoding="utf-8").read().split("\n")
    def call_line(meth, pattern):
        start = [i for i, l in enumerate(tl, 1) if re.match(r"    def %s\(self\):" % meth, l)]
        start = [s for s in start if any(re.match(r"class Thread\b", tl[j - 1]) for j in range(1, s))]
        if not start:
            die("no Thread.%s in %s" % (meth, path))
        s = start[0]  # Thread comes first in threading.py
        end = next((i for i in range(s + 1, len(tl) + 1) if re.match(r"    def |\S", tl[i - 1])), len(tl))
        hits = [i for i in range(s + 1, end) if re.search(pattern, tl[i - 1])]
        if len(hits) != 1:
            die("Thread.%s in %s: %d lines match %s" % (meth, path, len(hits), pattern))
        q = ("Thread." + meth, meth)
        return (fname(q), path, hits[0])
    return [call_line("run", r"self\._target\("),
            call_line("_bootstrap_inner", r"self\.run\b"),
            call_line("_bootstrap", r"self\._bootstrap_inner\(\)")]

# ---- the dump
out = open(args["out"], encoding="utf-8").read()
threads = []
if fmt == "json":
    try:
        j = json.loads(out)
    except ValueError as e:
        die("JSON does not parse: %s" % e)
    if j.get("blocking") != (mode == "blocking"):
        bad("JSON blocking=%r in %s mode" % (j.get("blocking"), mode))
    if (mode == "blocking") != isinstance(j.get("stopped_us"), (int, float)):
        bad("JSON stopped_us=%r in %s mode" % (j.get("stopped_us"), mode))
    if j.get("pid") != int(args["pid"]):
        bad("JSON pid %r, expected %s" % (j.get("pid"), args["pid"]))
    if j.get("threads_total") != len(j.get("threads", [])):
        bad("threads_total %r but %d threads listed" % (j.get("threads_total"), len(j.get("threads", []))))
    for t in j["threads"]:
        threads.append(dict(tid=t["tid"], pthread=t["pthread_id"], gil=t["gil"],
                            truncated=t["truncated"], error=t["error"],
                            frames=[(f["name"], f["file"], f["line"]) for f in t["frames"]]))
else:
    cur = None
    for l in out.split("\n"):
        m = re.match(r"Thread (?:(\d+)|pthread 0x([0-9a-f]+))(?: \(GIL (\w+)\))?:$", l)
        if m:
            cur = dict(tid=int(m.group(1)) if m.group(1) else None,
                       pthread=int(m.group(2), 16) if m.group(2) else None,
                       gil=m.group(3) or "unknown", truncated=False, error=None, frames=[])
            threads.append(cur)
            continue
        if cur is None or not l.startswith("    "):
            continue
        m = re.match(r"    <stack not read: (.*)>$", l)
        if m:
            cur["error"] = m.group(1); continue
        m = re.match(r"    <truncated at (\d+) frames", l)
        if m:
            cur["truncated"] = int(m.group(1)); continue
        if l == "    <no Python frames>":
            continue
        m = re.match(r"    (.+) \((.+):(-?\d+)\)$", l)
        if m:
            cur["frames"].append((m.group(1), m.group(2), int(m.group(3))))
        else:
            m = re.match(r"    (.+) \((.+)\)$", l)
            cur["frames"].append((m.group(1), m.group(2), -1) if m else (l.strip(), "?", -1))
    if mode == "blocking":
        m = re.search(r"^Stopped the target for ([0-9.]+) us\.$", out, re.M)
        if not m:
            bad("no 'Stopped the target for X us' line")
        else:
            print("time: %s: %s frames: stopped the target for %s us" % (args["label"], prog, m.group(1)))
    elif "Stopped the target" in out:
        bad("--nonblocking reports a stop")

th_files = sorted({f[1] for t in threads for f in t["frames"] if f[1].endswith("/threading.py")})
if len(th_files) > 1:
    bad("frames from several threading.py: %s" % th_files)

def fmtf(fr):
    return "%s (%s:%d)" % fr

def expect(t, exp, who):
    """exp: list of frames, leaf first; None entries are not compared."""
    got = t["frames"]
    if t["error"]:
        bad("%s: stack not read: %s" % (who, t["error"])); return
    if len(got) != len(exp):
        bad("%s: %d frames, expected %d:\n      got %s\n      exp %s" % (
            who, len(got), len(exp), "; ".join(map(fmtf, got)),
            "; ".join(fmtf(e) if e else "*" for e in exp)))
        return
    diff = [(i, g, e) for i, (g, e) in enumerate(zip(got, exp)) if e is not None and tuple(g) != e]
    if diff:
        for i, g, e in diff[:5]:
            bad("%s: frame %d is %s, expected %s" % (who, i, fmtf(g), fmtf(e)))
    else:
        ok("%s: %d frames as expected (leaf %s)" % (who, len(got), fmtf(got[0]) if got else "-"))

# ---- thread identities
ids = {}
for kv in args["ready"].split()[1:]:
    k, v = kv.split("=")
    nid, ident = v.split(":")
    ids[k] = (int(nid), int(ident))
tasks = sorted(int(x) for x in args["tasks"].split(","))
if len(threads) != len(tasks):
    bad("%d threads in the dump, %d in /proc/%s/task" % (len(threads), len(tasks), args["pid"]))
by_key = {}
for t in threads:
    key = None
    for k, (nid, ident) in ids.items():
        if t["tid"] is not None and t["tid"] == nid:
            key = k
        elif t["tid"] is None and t["pthread"] == ident:
            key = k
    if t["tid"] is not None and t["pthread"] is not None and key and t["pthread"] != ids[key][1]:
        bad("thread %s: pthread id %#x, the program says %#x" % (key, t["pthread"], ids[key][1]))
    if key is None:
        bad("thread tid=%s pthread=%s is none of the program's threads %s" % (t["tid"], t["pthread"], args["ready"]))
    elif key in by_key:
        bad("thread %s shown twice" % key)
    else:
        by_key[key] = t
if set(by_key) == set(ids) and len(ids) == len(tasks):
    ok("threads %s all shown with the program's own ids" % ",".join(sorted(ids)))
elif set(by_key) != set(ids):
    bad("threads shown %s, program has %s" % (sorted(by_key), sorted(ids)))
if mode == "blocking" or minor >= 11:
    # the OS tid is known: stored in 3.11+, from the fs base while stopped before
    missing = [k for k, t in by_key.items() if t["tid"] is None]
    if missing:
        bad("no OS tid for %s" % missing)
    if sorted(ids[k][0] for k in ids) != tasks:
        bad("native ids %s differ from /proc task ids %s" % (sorted(ids[k][0] for k in ids), tasks))
held = [k for k, t in by_key.items() if t["gil"] == "held"]
if held:
    bad("GIL shown held by %s while every thread sleeps" % held)

# ---- stacks
park = ours("park")
if prog == "shapes":
    thr = threading_frames()
    if thr is None:
        bad("no threading.py frame anywhere")
        thr = [None, None, None]
    want = {
        "chain": [park, ours("chain_c"), ours("chain_b"), ours("chain_a")] + thr,
        "gen": [park, ours("gen"), ours("consume")] + thr,
        "method": [park, ours("method"), ours("run_method")] + thr,
        "nonascii": [park, ours("nonascii")] + thr,
        "compiled": [park, made_up("made_up_func"), made_up("made_up_module"),
                     ours("run_compiled")] + thr,
        "reporter": [park, ours("reporter")] + thr,
    }
    for k, exp in want.items():
        if k in by_key:
            expect(by_key[k], exp, "thread " + k)
    if "method" in by_key and minor >= 11 and "Worker.method" not in [f[0] for f in by_key["method"]["frames"]]:
        bad("no qualname Worker.method on 3.%d" % minor)
    t = by_key.get("main")
    if t:
        fr = t["frames"]
        n_async = len(fr) - 5
        mid = fr[3:-2] if n_async > 0 else []
        if n_async <= 0 or not all("/asyncio/" in f[1] and f[2] > 0 for f in mid):
            bad("main: frames between coro_outer and main() are not all asyncio's: %s" % "; ".join(map(fmtf, mid or fr)))
            n_async = max(n_async, 0)
        expect(t, [park, ours("coro_inner"), ours("coro_outer")] + [None] * n_async
               + [ours("main"), ours("module")], "thread main (asyncio)")
elif prog == "three":
    t = by_key.get("main")
    if t:
        expect(t, [park, ours("outer"), ours("module")], "3-frame stack")
elif prog == "deep":
    depth = int(re.search(r"^DEPTH = (\d+)$", src, re.M).group(1))
    full = [park, ours("recurse_leaf")] + [ours("recurse")] * depth + [ours("module")]
    t = by_key.get("main")
    limit = int(args.get("maxdepth", "0"))
    if t and not limit:
        expect(t, full, "recursion %d deep" % depth)
        if t["truncated"]:
            bad("reported truncated with every frame shown")
    elif t:
        expect(t, full[:limit], "recursion %d deep, --max-depth %d" % (depth, limit))
        if fmt == "json" and t["truncated"] is not True:
            bad("--max-depth %d: JSON truncated=%r" % (limit, t["truncated"]))
        elif fmt == "text" and t["truncated"] != limit:
            bad("--max-depth %d: truncation line says %r" % (limit, t["truncated"]))
        else:
            ok("--max-depth %d: truncation reported" % limit)
report.done()
