# test_native.sh: folded --native / --kernel profiles.
#   native_stacks.py MODE FOLDED key=value...
# A folded line is root-first frames joined by ";" and a count. A frame is
# Python ("name (file:line)"), native ("name (lib) [native]"), kernel
# ("name [kernel]", "name (module) [kernel]") or a mark ("[...]").
# Modes:
#   qsort     every stack through order_cb is exactly <module> -> sort_block
#             -> native frames, among them ctypes/libffi, then a qsort of
#             libc.so.6, then more native frames -> order_cb (Python frames
#             in that order and no others, nothing unplaced)
#             probe=SYM (trace --native): and each stack goes on from
#             order_cb through native frames, among them ctypes/libffi,
#             to SYM [native] and ends with the probe "[uprobe ...:SYM]"
#   callback  leaf=NAME caller=NAME: in stacks through the callback NAME,
#             the frame just below it is native and the Python caller is
#             below that (C code of the standard library between them)
#   burn      share=C_SHARE: burn_loop [native] over spin [native]
#             over outer over <module>; inner (Python) over spin; the
#             share of the main thread's samples with burn_loop as leaf
#             within 4 binomial sd + 0.02 of C_SHARE
#   kernel    want=SUBSTR[,SUBSTR] py=NAME: kernel frames only at the leaf
#             end of a stack; stacks through Python function py have kernel
#             frames whose names contain one of the substrings
# Each mode needs at least min= (default 20) matching samples. A sample
# whose record says the native unwind stopped early carries the mark
# "[native unwind lost]" (bpfpy counted it and placed nothing by guess): it
# is left out of the shape checks, and may be at most LOST_MAX (2%) of a case,
# or lost_max= (a fraction) where the caller expects more (trace -- CMD).
import re
import sys

from checklib import Report, kv

mode, path = sys.argv[1], sys.argv[2]
args = kv(sys.argv[3:])
report = Report("native %s%s" % (mode, (" " + args["what"]) if "what" in args else ""))
ok, bad = report.ok, report.bad
need = int(args.get("min", 20))

NATIVE = re.compile(r"^(.*) \((.*)\) \[native\]$|^(.*) \[native\]$")
KERNEL = re.compile(r"^(.*?)(?: \((.*)\))? \[kernel\]$")
# With every mapping found, an unwind is lost only where the CFI is truly
# missing (a few samples a run); 2% of a case leaves room for those and
# fails on any defect that loses a whole function's samples.
LOST_MAX = float(args.get("lost_max", 0.02))
PY = re.compile(r"^(.*) \((.*):(-?\d+)\)$|^(.*) \((.*)\)$")


def parse(frame):
    """(kind, name, file)"""
    m = NATIVE.match(frame)
    if m:
        return ("native", m.group(1) or m.group(3), m.group(2) or "")
    m = KERNEL.match(frame)
    if m:
        return ("kernel", m.group(1), m.group(2) or "")
    if frame.startswith("["):
        return ("mark", frame, "")
    m = PY.match(frame)
    if m:
        return ("python", m.group(1) or m.group(4), m.group(2) or m.group(5))
    return ("python", frame, "")


# pid=N: only that process's stacks (a --threads profile: pid:N;tid:N (NAME);...),
# and the main thread's (tid N) for the shares.
want_pid = args.get("pid")
stacks, main_total = [], 0
for line in open(path, encoding="utf-8", errors="replace"):
    line = line.rstrip("\n")
    if not line:
        continue
    body, _, n = line.rpartition(" ")
    parts = body.split(";")
    ids = {}
    # --threads: pid:N;tid:N (NAME); the name is the thread's OS name
    while parts and re.match(r"^(pid|tid):\d+( \(.*\))?$", parts[0]):
        k, v = parts.pop(0).split(" ", 1)[0].split(":")
        ids[k] = v
    if want_pid and ids.get("pid") != want_pid:
        continue
    frames = [parse(f) for f in parts]
    stacks.append((frames, int(n)))
    if not want_pid or ids.get("tid") == want_pid:
        main_total += int(n)
total = sum(n for _, n in stacks)
print("stat: %d samples, %d stacks" % (total, len(stacks)))


LOST = "[native unwind lost]"


def lost(frames):
    """The record said the native unwind stopped early: bpfpy put the
    Python frames it could not place behind this mark (and counted them)."""
    return any(f[0] == "mark" and f[1] == LOST for f in frames)


def pyonly(frames):
    return [f[1] for f in frames if f[0] == "python"]


def show(frames):
    return ";".join("%s%s" % (f[1], "" if f[0] == "python" else "[%s]" % f[0][0]) for f in frames)


if mode == "qsort":
    through = [(f, n) for f, n in stacks if any(x[0] == "python" and x[1] == "order_cb" for x in f)]
    good = wrong = nlost = 0
    example = None
    probe = args.get("probe")
    for frames, n in through:
        names = [f[1] for f in frames]
        right = False
        if lost(frames):
            nlost += n
            continue
        if probe:
            i_cb = names.index("order_cb")
            top = frames[i_cb + 1:]
            if not (len(top) >= 3 and top[-1][0] == "mark" and top[-1][1].startswith("[uprobe ")
                    and top[-1][1].endswith(":%s]" % probe) and top[-2][:2] == ("native", probe)
                    and all(f[0] == "native" for f in top[:-1])
                    and any("ffi" in f[2] or "_ctypes" in f[2] for f in top[:-2])):
                wrong += n
                if wrong <= 3 * n:
                    print("  wrong above order_cb: %d x %s" % (n, show(frames)))
                continue
            frames, names = frames[:i_cb + 1], names[:i_cb + 1]
        if pyonly(frames) == ["<module>", "sort_block", "order_cb"]:
            i_sort, i_cb = names.index("sort_block"), names.index("order_cb")
            mid = frames[i_sort + 1:i_cb]
            q = [k for k, f in enumerate(mid) if f[1].startswith("qsort") and f[2] == "libc.so.6"]
            right = (q and all(f[0] == "native" for f in mid)
                     and any("ffi" in f[2] or "_ctypes" in f[2] for f in mid[:q[0]])
                     and not any(f[0] == "mark" for f in frames))
        if right:
            good += n
            example = example or frames
        else:
            wrong += n
            if wrong <= 3 * n:
                print("  wrong: %d x %s" % (n, show(frames)))
    if nlost:
        print("  %d samples through order_cb with the native unwind lost (marked, counted)" % nlost)
    if nlost > LOST_MAX * (good + wrong + nlost):
        bad("%d of %d samples through order_cb lost their native unwind (> %g%%)"
            % (nlost, good + wrong + nlost, 100 * LOST_MAX))
    if good + wrong < need:
        bad("only %d samples through order_cb (want >= %d)" % (good + wrong, need))
    elif wrong:
        bad("%d of %d samples through order_cb not in the order <module>;sort_block;"
            "ctypes/libffi;qsort (libc.so.6);...;order_cb" % (wrong, good + wrong))
    else:
        ok("all %d samples through order_cb spliced as <module>;sort_block;ctypes/libffi;"
           "qsort (libc.so.6);...;order_cb" % good)
    if example:
        print("  e.g. " + show(example))
elif mode == "callback":
    leaf, caller = args["leaf"], args["caller"]
    through = [(f, n) for f, n in stacks if any(x[0] == "python" and x[1] == leaf for x in f)]
    good = wrong = nlost = 0
    for frames, n in through:
        if lost(frames):
            nlost += n
            continue
        i = [f[1] for f in frames].index(leaf)
        below = frames[:i]
        py_below = [f for f in below if f[0] == "python"]
        if (i > 0 and frames[i - 1][0] == "native" and py_below and caller in pyonly(below)
                and not any(f[0] == "mark" for f in frames)):
            good += n
        else:
            wrong += n
            if wrong <= 3 * n:
                print("  wrong: %d x %s" % (n, show(frames)))
    if nlost > LOST_MAX * (good + wrong + nlost):
        bad("%d of %d samples through %s lost their native unwind (> %g%%)"
            % (nlost, good + wrong + nlost, leaf, 100 * LOST_MAX))
    if good + wrong < need:
        bad("only %d samples through %s (want >= %d)" % (good + wrong, leaf, need))
    elif wrong * 20 > good + wrong:
        bad("%d of %d samples through %s without native frames between it and %s"
            % (wrong, good + wrong, leaf, caller))
    else:
        ok("%d of %d samples through %s have native frames between it and %s"
           % (good, good + wrong, leaf, caller))
elif mode == "burn":
    want = float(args["share"])
    c = cbad = inner = ibad = ilost = 0
    for frames, n in stacks:
        names = [f[1] for f in frames]
        user = [f for f in frames if f[0] != "kernel"]  # an interrupt on top
        leaf = user[-1] if user else ("", "", "")
        frames = user
        if leaf[0] == "native" and leaf[1].startswith("burn_loop"):
            c += n
            ok_shape = (len(frames) >= 4 and frames[-2][0] == "native"
                        and frames[-2][1].startswith("spin") and "burnmod" in frames[-2][2]
                        and pyonly(frames)[-2:] == ["<module>", "outer"][-2:]
                        and pyonly(frames) == ["<module>", "outer"])
            if not ok_shape:
                cbad += n
                print("  wrong C stack: %d x %s" % (n, show(frames)))
        if "inner" in names and frames[names.index("inner")][0] == "python" and lost(frames):
            ilost += n
        elif "inner" in names and frames[names.index("inner")][0] == "python":
            inner += n
            i = names.index("inner")
            spins = [k for k in range(i) if frames[k][0] == "native" and frames[k][1].startswith("spin")]
            if not (spins and pyonly(frames[:spins[0]]) == ["<module>", "outer"]
                    and all(f[0] == "native" for f in frames[spins[0]:i])):
                ibad += n
                if ibad <= 3 * n:
                    print("  wrong callback stack: %d x %s" % (n, show(frames)))
    share = c / main_total if main_total else 0
    # 4 binomial sd of the share at this many samples, plus 0.02 for the
    # window's edges (a turn of the target's loop is ~0.3 s of a 12 s run)
    tol = 4 * (want * (1 - want) / max(main_total, 1)) ** 0.5 + 0.02
    print("stat: burn_loop %d, inner %d of %d main-thread samples; share %.3f, measured %.3f"
          % (c, inner, main_total, share, want))
    if c < need or inner < need:
        bad("burn_loop %d, inner %d samples (want >= %d each)" % (c, inner, need))
    if cbad:
        bad("%d of %d burn_loop samples not <module>;outer;spin [native];burn_loop [native]" % (cbad, c))
    elif c >= need:
        ok("all %d burn_loop samples are <module>;outer;spin [native];burn_loop [native]" % c)
    if ilost > LOST_MAX * (inner + ilost):
        bad("%d of %d inner samples lost their native unwind (> %g%%)" % (ilost, inner + ilost, 100 * LOST_MAX))
    if ibad * 20 > inner:
        bad("%d of %d inner samples not <module>;outer;spin [native];...;inner" % (ibad, inner))
    elif inner >= need:
        ok("%d of %d inner samples are <module>;outer;spin [native];...;inner" % (inner - ibad, inner))
    if abs(share - want) <= tol:
        ok("burn_loop holds %.3f of the samples, measured %.3f of the CPU (within %.2f)" % (share, want, tol))
    else:
        bad("burn_loop holds %.3f of the samples, measured %.3f of the CPU (tolerance %.2f)" % (share, want, tol))
elif mode == "kernel":
    subs = args["want"].split(",")
    pyname = args["py"]
    misplaced = hit = through = 0
    for frames, n in stacks:
        kinds = [f[0] for f in frames]
        if "kernel" in kinds:
            first = kinds.index("kernel")
            if any(k != "kernel" for k in kinds[first:]):
                misplaced += n
                print("  kernel frame below a user frame: %s" % show(frames))
        if any(f[0] == "python" and f[1] == pyname for f in frames):
            through += n
            if any(f[0] == "kernel" and any(s in f[1] for s in subs) for f in frames):
                hit += n
    if misplaced:
        bad("%d samples with kernel frames below user frames" % misplaced)
    else:
        ok("kernel frames only at the top of the stack (%d samples)" % total)
    if hit < need:
        bad("%d of %d samples through %s have a kernel frame named like %s (want >= %d)"
            % (hit, through, pyname, "|".join(subs), need))
    else:
        ok("%d of %d samples through %s have a kernel frame named like %s"
           % (hit, through, pyname, "|".join(subs)))
else:
    bad("unknown mode " + mode)
report.done()
