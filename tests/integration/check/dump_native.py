# test_dump_native.sh: a `bpfpy dump --native` of tests/integration/py/dump_qsort.py.
#   dump_native.py what=LABEL native=TEXT plain=TEXT json=JSON [record=FOLDED]
# native, plain: the text of `dump --native` and of a plain `dump` of the
# same process; json: `dump --native --json`; record: the folded output of
# `record --native --no-lines` of it (optional).
# Per thread of the program (main: callback order_cb, spinning; blocker:
# callback wait_cb, in os.read):
#   - the native unwind is whole: no '<native ...>' note, no mark frame,
#     the root frame native (_start/__libc_start_* or clone*)
#   - root first, the stack holds sort_block (Python), then native frames
#     only, among them ctypes or libffi, then qsort* (libc.so.6), then more
#     native frames among them ctypes or libffi, then the callback (Python)
#   - its Python frames are exactly those of the plain dump, in order
#   - the blocker's leaf frame is native, in libc.so.6 (the read)
#   - the JSON dump gives the blocker the same frames (name, kind)
#   - record: the main thread's most frequent stack through order_cb equals
#     the dump's from the root up to order_cb, frame by frame
import json
import re
import sys
from collections import Counter

from checklib import Report, kv

args = kv(sys.argv[1:])
report = Report("dump --native %s" % args.get("what", ""))
ok, bad = report.ok, report.bad

FRAME_PY = re.compile(r"^(.*) \((.*?)(?::(-?\d+))?\)$")
FRAME_NATIVE = re.compile(r"^(.*?)(?: \((.*)\))? \[native\]$")
CALLBACKS = {"order_cb": "main", "wait_cb": "blocker"}


def parse_text(path):
    """[(header, [(kind, name, file, line)] leaf first, [notes])]"""
    threads = []
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        if line.startswith("Thread "):
            threads.append((line, [], []))
            continue
        if not threads or not line.startswith("    "):
            continue
        f = line[4:]
        if f.startswith("<") and f.endswith(">"):  # a note; <module> is a frame
            threads[-1][2].append(f)
        elif f.startswith("["):
            threads[-1][1].append(("mark", f, "", None))
        elif FRAME_NATIVE.match(f):
            m = FRAME_NATIVE.match(f)
            threads[-1][1].append(("native", m.group(1), m.group(2) or "", None))
        else:
            m = FRAME_PY.match(f)
            if m:
                threads[-1][1].append(("python", m.group(1), m.group(2), m.group(3)))
            else:
                threads[-1][1].append(("python", f, "", None))
    return threads


def role(frames):
    for k, name, _, _ in frames:
        if k == "python" and name in CALLBACKS:
            return CALLBACKS[name]
    return None


def ffi(f):
    return f[0] == "native" and (f[2].startswith("_ctypes") or f[2].startswith("libffi"))


def check_order(who, root_first):
    """sort_block -> native (ctypes/libffi) -> qsort (libc) -> native
    (ctypes/libffi) -> callback, nothing else between."""
    names = [(k, n) for k, n, _, _ in root_first]
    try:
        a = names.index(("python", "sort_block"))
    except ValueError:
        bad("%s: no sort_block frame: %s" % (who, names))
        return
    cb = [i for i, (k, n) in enumerate(names) if k == "python" and n in CALLBACKS]
    if not cb or cb[0] < a:
        bad("%s: no callback above sort_block: %s" % (who, names))
        return
    mid = root_first[a + 1:cb[0]]
    q = [i for i, f in enumerate(mid) if f[0] == "native" and f[1].startswith("qsort")
         and f[2] == "libc.so.6"]
    if any(f[0] != "native" for f in mid):
        bad("%s: non-native frames between sort_block and the callback: %s" % (who, mid))
    elif not q:
        bad("%s: no qsort* (libc.so.6) between sort_block and the callback: %s" % (who, mid))
    elif not any(ffi(f) for f in mid[:q[0]]) or not any(ffi(f) for f in mid[q[-1] + 1:]):
        bad("%s: no ctypes/libffi frame on both sides of qsort: %s" % (who, mid))
    else:
        ok("%s: sort_block -> %d native frames (%s) -> %s (libc.so.6) -> %d native frames -> %s"
           % (who, q[0], ", ".join(sorted({f[2] for f in mid[:q[0]]})), mid[q[0]][1],
              len(mid) - q[0] - 1, names[cb[0]][1]))


native = parse_text(args["native"])
plain = {role(fr): fr for _, fr, _ in parse_text(args["plain"])}
seen = {}
for header, frames, notes in native:
    who = role(frames)
    if who is None:
        bad("a thread with neither callback: %s %s" % (header, frames[:6]))
        continue
    seen[who] = frames
    who_l = "%s thread" % who
    lost = [n for n in notes if n.startswith("<native")]
    marks = [f for f in frames if f[0] == "mark"]
    if lost or marks:
        bad("%s: native unwind not whole: %s %s" % (who_l, lost, marks))
    root = frames[-1] if frames else ("none", "", "", None)
    want_root = ("_start", "__libc_start") if who == "main" else ("clone", "start_thread")
    if root[0] == "native" and (root[1].startswith(want_root) or "+0x" in root[1]):
        ok("%s: root frame %s (%s) [native]: %d frames, %d of them native" % (
            who_l, root[1], root[2], len(frames), sum(f[0] == "native" for f in frames)))
    else:
        bad("%s: root frame not %s...: %s" % (who_l, "/".join(want_root), root))
    rf = frames[::-1]
    check_order(who_l, rf)
    py = [(n, f) for k, n, f, _ in frames if k == "python"]
    py_plain = [(n, f) for k, n, f, _ in plain.get(who, []) if k == "python"]
    if py == py_plain:
        ok("%s: its %d Python frames are the plain dump's, in order" % (who_l, len(py)))
    else:
        bad("%s: Python frames differ from the plain dump's: %s vs %s" % (who_l, py, py_plain))
    if who == "blocker":
        if frames and frames[0][0] == "native" and frames[0][2] == "libc.so.6":
            ok("blocker thread: leaf %s (libc.so.6) [native], in os.read" % frames[0][1])
        else:
            bad("blocker thread: leaf is not a native libc.so.6 frame: %s" % (frames[:3],))
for who in CALLBACKS.values():
    if who not in seen:
        bad("no %s thread in the dump" % who)

# JSON: the blocker's stack does not move, so it must be the text's.
try:
    j = json.load(open(args["json"], encoding="utf-8"))
    jb = None
    for t in j["threads"]:
        fr = [("python" if f["kind"] == "python" else f["kind"], f["name"]) for f in t["frames"]]
        if ("python", "wait_cb") in fr:
            jb = (t, fr)
    if jb is None:
        bad("json: no thread with wait_cb")
    else:
        t, fr = jb
        text = [(k, n) for k, n, _, _ in seen.get("blocker", [])]
        nat = t.get("native") or {}
        if fr == text and nat.get("lost") is None and nat.get("truncated") is False \
                and nat.get("frames", 0) > 0:
            ok("json: the blocker's %d frames (kind and name) are the text's, native %s"
               % (len(fr), nat))
        else:
            bad("json: the blocker's frames differ from the text's or native is off: "
                "%s vs %s, native %s" % (fr, text, nat))
except (OSError, ValueError, KeyError) as e:
    bad("json: cannot read %s: %s" % (args["json"], e))

# record --native --no-lines: the main thread spins in one callback call,
# so every sample through order_cb has the dump's stack below order_cb.
if "record" in args and "main" in seen:
    def folded(f):
        k, n, file, _ = f
        if k == "native":
            return "%s (%s) [native]" % (n, file) if file else "%s [native]" % n
        return "%s (%s)" % (n, file)
    rf = seen["main"][::-1]
    cut = [i for i, f in enumerate(rf) if f[0] == "python" and f[1] == "order_cb"]
    want = [folded(f) for f in rf[:cut[0] + 1]] if cut else []
    c = Counter()
    for line in open(args["record"], encoding="utf-8", errors="replace"):
        body, _, n = line.rstrip("\n").rpartition(" ")
        parts = body.split(";")
        if "order_cb (" in body:
            k = [i for i, p in enumerate(parts) if p.startswith("order_cb (")][0]
            c[tuple(parts[:k + 1])] += int(n)
    total = sum(c.values())
    if not c:
        bad("record: no sample through order_cb")
    else:
        top, n = c.most_common(1)[0]
        if list(top) == want:
            ok("record: %d of %d samples through order_cb have the dump's %d frames from the "
               "root to order_cb, qsort included" % (n, total, len(want)))
        else:
            bad("record's stack through order_cb (%d of %d samples) differs from the dump's:\n"
                "  record %s\n  dump   %s" % (n, total, list(top), want))
report.done()
