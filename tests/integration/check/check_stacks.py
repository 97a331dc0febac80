# The checker of tests/integration/test_record.sh: the stacks of a profile of
# tests/integration/py/hot.py, judged against hot.py's source (its "# L:key"
# markers and defs): no torn stack, every expected frame seen, heavy's share
# of the samples; with cv=LO,HI the spread of the gaps between samples.
#   check_stacks.py folded|raw FILE src=hot.py shown=PATH [pid=N] [what=TEXT]
#                   [min=N] [startup=1] [torn_max=F] [cv=LO,HI] [share_out=FILE]
# KIND folded: root first, optional pid:N;tid:N; prefix, count last; raw: the
# out_raw.c grammar, leaf first.
# Prints ok:/FAIL: lines and "stat:" lines; exit status = failures.
import re, sys

from checklib import Report, Source, kv

kind, path = sys.argv[1], sys.argv[2]
args = kv(sys.argv[3:])
what = args.get("what", path)
src_path, shown = args["src"], args["shown"]
want_pid = int(args["pid"]) if "pid" in args else None
report = Report(what)
ok, bad = report.ok, report.bad

source = Source(src_path)
L = source.markers("L")
funcs = source.funcs()
# what each frame may be: the function and the lines its frame can show
def in_func(name, line):
    a, b = funcs[name]
    return a <= line <= b   # 3.11+ show the def line before the first instruction

def valid(stack):  # root first [(name, file, line)]
    if not stack:
        return "empty stack"
    if any(f[1] != shown for f in stack):
        return "frame in another file"
    names = [f[0] for f in stack]
    if names[0] != "<module>" or stack[0][2] != L["module"]:
        return "root is not <module> at line %d" % L["module"]
    if len(stack) == 1:
        return "only <module> (hot.py's loop is in main)"
    if names[1] != "main" or not in_func("main", stack[1][2]):
        return "second frame is not main at a line of main"
    if len(stack) == 2:
        return None
    if len(stack) > 3 or names[2] not in ("heavy", "light") or not in_func(names[2], stack[2][2]):
        return "below main: not heavy/light at a line of their own"
    if stack[1][2] != L["main_" + names[2]]:
        return "main at line %d calls %s" % (stack[1][2], names[2])
    return None

FRAME = re.compile(r"^(.*) \((.*):(-?\d+)\)$")
def frames(parts):
    out = []
    for p in parts:
        if p == "[gc]" or p.startswith("[gc] ("):  # record's default mark: collecting garbage
            continue
        m = FRAME.match(p)
        if not m:
            return None
        out.append((m.group(1), m.group(2), int(m.group(3))))
    return out

stacks = {}   # root-first tuple -> count, for want_pid
startup = 0
pids, ts = {}, []
for n, line in enumerate(open(path, encoding="utf-8"), 1):
    line = line.rstrip("\n")
    if not line or (kind == "raw" and line.startswith("#")):  # raw 2's '#' lines
        continue
    pid = want_pid
    if kind == "folded":
        st, _, cnt = line.rpartition(" ")
        parts = st.split(";")
        if parts and parts[0].startswith("pid:"):
            pid = int(parts[0][4:]); parts = parts[1:]
        if parts and parts[0].startswith("tid:"):
            parts = parts[1:]
        cnt = int(cnt)
        fr = frames(parts)
    else:
        f = line.split(" ", 5)
        t, spid, tid, cpu, flags, st = f
        pid, cnt = int(spid), 1
        fr = frames(st.split(";")) if st != "-" else []
        if fr is not None:
            fr = fr[::-1]
        if want_pid is None or pid == want_pid:
            ts.append((int(t), int(tid)))
    pids[pid] = pids.get(pid, 0) + cnt
    if want_pid is not None and pid != want_pid:
        continue
    if fr is None:
        bad("line %d does not parse: %s" % (n, line[:200])); continue
    if "startup" in args and not any(f[1] == shown for f in fr):
        startup += cnt   # -a catches a process while its interpreter starts
        continue
    stacks[tuple(fr)] = stacks.get(tuple(fr), 0) + cnt

total = sum(stacks.values())
print("stat: %s: %d samples of pid %s (all pids: %s)%s" % (what, total, want_pid, pids,
      ", and %d during interpreter start-up (no frame of %s)" % (startup, shown) if startup else ""))
minimum = int(args.get("min", "50"))
if total < minimum:
    bad("%d samples, fewer than %d: nothing to judge" % (total, minimum))
torn = [(s, c) for s, c in stacks.items() if valid(list(s))]
# The wall clock reads a running thread without stopping it (a live read,
# like the oracle's bpf-wall row): a stack may tear. Allowed there, up to
# torn_max of the samples (1%: measured 0.08% here); the cpu clock, which
# interrupts the thread, must never tear.
torn_max = float(args.get("torn_max", "0"))
ntorn = sum(c for _, c in torn)
if torn and ntorn <= torn_max * total:
    ok("%d of %d samples torn (%.2f%%, within the %.0f%% a live read is allowed)" % (ntorn, total, 100.0 * ntorn / max(total, 1), 100 * torn_max))
elif torn:
    for s, c in torn[:5]:
        bad("stack hot.py cannot produce (%s), %d samples: %s" % (valid(list(s)), c, ";".join("%s (%s:%d)" % f for f in s)))
else:
    ok("all %d samples are stacks hot.py can produce (%d distinct)" % (total, len(stacks)))
seen = {(f[0], f[2]) for s in stacks for f in s}
for need in [("heavy", L["heavy_body"]), ("light", L["light_body"]),
             ("main", L["main_heavy"]), ("main", L["main_light"]), ("<module>", L["module"])]:
    if need not in seen:
        bad("no frame %s at line %d" % need)
if all(need in seen for need in [("heavy", L["heavy_body"]), ("light", L["light_body"])]):
    ok("heavy:%d, light:%d, main:%d,%d, <module>:%d all seen" % (L["heavy_body"], L["light_body"], L["main_heavy"], L["main_light"], L["module"]))
h = sum(c for s, c in stacks.items() if len(s) > 2 and s[2][0] == "heavy")
l = sum(c for s, c in stacks.items() if len(s) > 2 and s[2][0] == "light")
if h + l:
    share = h / (h + l)
    print("stat: %s: heavy share %.3f (%d heavy, %d light)" % (what, share, h, l))
    lo, hi = 0.45, 0.85
    if lo <= share <= hi:
        ok("heavy's share %.3f in [%.2f, %.2f] (expected 2/3)" % (share, lo, hi))
    else:
        bad("heavy's share %.3f outside [%.2f, %.2f] (expected 2/3)" % (share, lo, hi))
if "cv" in args and kind == "raw":
    tids = {t for _, t in ts}
    if len(tids) != 1:
        bad("samples of %d threads, expected one busy thread" % len(tids))
    tt = sorted(t for t, _ in ts)
    g = [b - a for a, b in zip(tt, tt[1:])]
    if len(g) < 100:
        bad("%d gaps: too few for a CV" % len(g))
    else:
        m = sum(g) / len(g)
        cv = (sum((x - m) ** 2 for x in g) / len(g)) ** 0.5 / m
        lo, hi = map(float, args["cv"].split(","))
        print("stat: %s: %d gaps, mean %.3f ms, CV %.3f" % (what, len(g), m / 1e6, cv))
        if lo <= cv <= hi:
            ok("CV of gaps %.3f in [%g, %g]" % (cv, lo, hi))
        else:
            bad("CV of gaps %.3f outside [%g, %g]" % (cv, lo, hi))
if "share_out" in args and h + l:
    open(args["share_out"], "w").write("%f %d\n" % (h / (h + l), total))
report.done()
