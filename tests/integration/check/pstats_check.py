# test_pstats.sh: a -f pstats profile, loaded by the pstats module of the
# interpreter running this (every target's own, 3.8 on), holds what the
# collapsed output of the same recording says, by the definitions of
# user/profile/out_pstats.c computed here anew from the folded lines:
#   cc  samples with the function on the stack, nc its frames in them,
#   tt  seconds with it as the leaf, ct seconds with it on the stack (once a
#       sample), a sample weighing period_ns (weighted=1: its count is ns);
#   callers: the same per (caller, callee) edge, tt where callee is the leaf.
# Every key, count and time must match exactly (times are summed in integer
# ns and divided once, here as there), the totals pstats prints too; the
# first line of each function of SRC (shown as SHOWN in the frames) must be
# its "def" line; and print_stats(5) unsorted must list HOT first.
# A weighted profile's folded counts are ns, not samples: its cc and nc are
# counted from the raw file of the recording instead (one line a sample, its
# stack leaf first), whose stacks must be the folded file's.
# With recursive=NAME, NAME's nc must exceed its cc (pstats shows "nc/cc").
#   pstats_check.py pstats=F folded=F raw=F period_ns=N weighted=0|1 src=F shown=P [hot=NAME]
#                   [recursive=NAME]
import io
import pstats
import re
import sys

import checklib  # PYTHONPATH: test_pstats.sh copies it beside the files

a = dict(x.split("=", 1) for x in sys.argv[1:])
fails = 0


def ok(m):
    print("ok: pstats %s: %s" % (sys.version.split()[0], m))


def bad(m):
    global fails
    fails += 1
    print("FAIL: pstats %s: %s" % (sys.version.split()[0], m))


period = int(a["period_ns"])
weighted = a["weighted"] == "1"
# The first lines as this interpreter numbers them (3.8 starts a module at
# its first statement, 3.12 at line 1): its own code objects, by qualname.
defs = {}


def walk(co, qual):
    defs[qual] = co.co_firstlineno
    for c in co.co_consts:
        if hasattr(c, "co_firstlineno"):
            walk(c, c.co_name if qual == "<module>" else qual + "." + c.co_name)


walk(compile(open(a["src"], encoding="utf-8").read(), a["src"], "exec"), "<module>")

st = pstats.Stats(a["pstats"], stream=io.StringIO())
stats = st.stats
by_name = {}
for k in stats:
    by_name.setdefault((k[0], k[2]), []).append(k)

FRAME = re.compile(r"^(.*) \((.*):(\d+)\)$")


def key(label):
    if label.endswith(" [native]") or label.endswith(" [kernel]"):
        return ("~", 0, "<" + label + ">")
    m = FRAME.match(label)
    if not m:
        return ("~", 0, label)  # a marker such as [truncated]
    name, file = m.group(1), m.group(2)
    if file == a["shown"]:
        return (file, defs.get(name, -1), name)
    ks = by_name.get((file, name), [])
    return ks[0] if len(ks) == 1 else (file, -1, name)


# Samples per root-first stack, from raw (weighted profiles only).
nsamples = checklib.raw_stack_counts(a["raw"]) if weighted else {}

want = {}
wedge = {}
total_ns = 0
for line in open(a["folded"], encoding="utf-8"):
    stack, c = line.rstrip("\n").rsplit(" ", 1)
    w = int(c) if weighted else int(c) * period
    c = nsamples.pop(stack, 0) if weighted else int(c)
    total_ns += w
    keys = [key(f) for f in stack.split(";")]
    edges = list(zip(keys[1:], keys[:-1]))  # (callee, caller)
    # cc and ct once a stack, nc for every occurrence (recursion).
    for table, items in ((want, keys), (wedge, edges)):
        for k in set(items):
            s = table.setdefault(k, [0, 0, 0, 0])
            s[0] += c
            s[3] += w
        for k in items:
            table[k][1] += c
    want[keys[-1]][2] += w
    if len(keys) > 1:
        wedge[(keys[-1], keys[-2])][2] += w

if weighted and nsamples:
    bad("raw stacks the folded file lacks: %s" % sorted(nsamples)[:3])
if set(want) != set(stats):
    bad("keys differ: only in folded %s, only in pstats %s"
        % (sorted(set(want) - set(stats))[:5], sorted(set(stats) - set(want))[:5]))
else:
    ok("%d functions, the keys the folded frames make (first lines of %s's code objects)" % (len(want), a["src"]))


def same(s, w):
    return s[0] == w[0] and s[1] == w[1] and s[2] == w[2] / 1e9 and s[3] == w[3] / 1e9


nbad = 0
nedges = 0
for k, w in sorted(want.items()):
    if k not in stats:
        continue
    cc, nc, tt, ct, callers = stats[k]
    if not same((cc, nc, tt, ct), w):
        nbad += 1
        bad("%s: (cc, nc, tt, ct) = %s, want %s" % (k, (cc, nc, tt, ct), (w[0], w[1], w[2] / 1e9, w[3] / 1e9)))
    mine = {e[1]: v for e, v in wedge.items() if e[0] == k}
    if set(callers) != set(mine):
        nbad += 1
        bad("%s: callers %s, want %s" % (k, sorted(callers), sorted(mine)))
        continue
    for c, v in callers.items():
        nedges += 1
        if not same(v, mine[c]):
            nbad += 1
            bad("%s <- %s: %s, want %s" % (k, c, v, mine[c]))
if not nbad:
    ok("cc, nc, tt, ct of every function and of its %d caller edges as the folded lines make them" % nedges)

if abs(st.total_tt - total_ns / 1e9) < 1e-6 and st.total_calls == sum(w[1] for w in want.values()) \
        and st.prim_calls == sum(w[0] for w in want.values()):
    ok("totals: %d calls (%d primitive) in %.3f s = the folded lines' %s"
       % (st.total_calls, st.prim_calls, st.total_tt, "ns" if weighted else "samples x period"))
else:
    bad("totals %s %s %s, want %s s" % (st.total_calls, st.prim_calls, st.total_tt, total_ns / 1e9))

out = io.StringIO()
pstats.Stats(a["pstats"], stream=out).print_stats(5)
rows = [l for l in out.getvalue().splitlines() if re.match(r"^\s+[\d/]+(\s+[\d.]+){4}\s", l)]
if not a.get("hot"):
    pass
elif rows and rows[0].endswith("(%s)" % a["hot"]):
    ok("print_stats(5) unsorted lists %s first: %s" % (a["hot"], rows[0].strip()))
else:
    bad("print_stats(5) does not list %s first: %s" % (a["hot"], rows[:2]))
if a.get("recursive"):
    rec = [(k, v) for k, v in stats.items() if k[2] == a["recursive"]]
    if len(rec) == 1 and rec[0][1][1] > rec[0][1][0]:
        ok("%s recursed: ncalls %d/%d (frames/samples), as cProfile prints recursion"
           % (a["recursive"], rec[0][1][1], rec[0][1][0]))
    else:
        bad("%s: not one entry with nc > cc: %s" % (a["recursive"], [v[:2] for _, v in rec]))
sys.exit(min(fails, 100))
