# test_gecko.sh: a -f gecko file against the Gecko profile schema the
# Firefox Profiler documents (src/types/gecko-profile.ts: GeckoProfile,
# GeckoProfileFullMeta, GeckoThread, its samples, markers, stackTable and
# frameTable with their schema objects, CategoryList), and against the
# collapsed output of the same recording:
#   - gzip, then JSON; meta.version 27, every field of the meta the type
#     requires, categories with a known colour and subcategories;
#   - per thread: name, pid, tid, registerTime, processType, every table's
#     schema exactly as documented, rows of the schema's width, every index
#     in range (stack -> stackTable, prefix -> an earlier stack, frame ->
#     frameTable, location and marker names -> stringTable, category and
#     subcategory -> meta.categories), sample times never going back;
#   - the samples, each walked to its root, are the folded file's stacks
#     with its counts (weighted=1: counts from the raw file, the folded ones
#     being ns) and every frame's category follows its kind;
#   - weighted=1: one Off-CPU interval marker per off-CPU sample, named for
#     its leaf's reason, whose lengths add up (per reason) to the ns the
#     folded file gives that reason's stacks.
#   gecko_check.py gecko=F folded=F raw=F weighted=0|1
import gzip
import json
import re
import sys

import checklib

a = checklib.kv(sys.argv[1:])
r = checklib.Report("gecko")
weighted = a["weighted"] == "1"
COLORS = {"transparent", "purple", "green", "orange", "yellow", "lightblue", "grey", "blue",
          "brown", "red", "lightgreen", "darkgray", "magenta"}
NUM = (int, float)

j = json.load(gzip.open(a["gecko"], "rt", encoding="utf-8"))
meta = j.get("meta", {})
need = {"version": int, "startTime": NUM, "interval": NUM, "stackwalk": int, "debug": int,
        "gcpoison": int, "asyncstack": int, "processType": int, "categories": list,
        "markerSchema": list}
miss = [k for k, t in need.items() if not isinstance(meta.get(k), t) or isinstance(meta.get(k), bool)]
if miss or meta["version"] != 27 or "shutdownTime" not in meta or meta["interval"] <= 0:
    r.bad("meta lacks or has wrong %s: %s" % (miss, {k: meta.get(k) for k in need if k != "categories"}))
else:
    r.ok("meta: version 27, interval %s ms, startTime %s, product %r" % (meta["interval"], meta["startTime"], meta.get("product")))
cats = meta.get("categories", [])
if all(isinstance(c.get("name"), str) and c.get("color") in COLORS and c.get("subcategories") for c in cats) and cats:
    r.ok("categories: %s" % [c["name"] for c in cats])
else:
    r.bad("categories: %s" % cats)
for k in ("libs", "threads", "processes", "pausedRanges"):
    if not isinstance(j.get(k), list):
        r.bad("top-level %s is not a list" % k)

SCHEMA = {
    "samples": {"stack": 0, "time": 1, "eventDelay": 2},
    "markers": {"name": 0, "startTime": 1, "endTime": 2, "phase": 3, "category": 4, "data": 5},
    "stackTable": {"prefix": 0, "frame": 1},
    "frameTable": {"location": 0, "relevantForJS": 1, "innerWindowID": 2, "implementation": 3,
                   "line": 4, "column": 5, "category": 6, "subcategory": 7},
}
KIND = re.compile(r" \[(native|kernel)\]$")
got = {}
markers = {}  # reason -> [count, ms]
offcpu_samples = {}
nbad = 0
for t in j.get("threads", []):
    who = "thread %s (tid %s)" % (t.get("name"), t.get("tid"))
    if not (isinstance(t.get("name"), str) and isinstance(t.get("pid"), int) and isinstance(t.get("tid"), int)
            and isinstance(t.get("registerTime"), NUM) and isinstance(t.get("processType"), str)
            and "unregisterTime" in t and isinstance(t.get("stringTable"), list)):
        nbad += 1
        r.bad("%s: thread fields: %s" % (who, sorted(t)))
        continue
    bad_schema = [k for k, s in SCHEMA.items() if t.get(k, {}).get("schema") != s]
    if bad_schema:
        nbad += 1
        r.bad("%s: schema of %s differs from the documented one" % (who, bad_schema))
        continue
    strings = t["stringTable"]
    frames = t["frameTable"]["data"]
    stacks = t["stackTable"]["data"]

    def row_bad(rows, width):
        return [x for x in rows if not isinstance(x, list) or len(x) != width]

    if row_bad(frames, 8) or row_bad(stacks, 2) or row_bad(t["samples"]["data"], 3) or row_bad(t["markers"]["data"], 6):
        nbad += 1
        r.bad("%s: a row not of its schema's width" % who)
        continue
    for i, f in enumerate(frames):
        loc, js, _, _, line, _, cat, sub = f
        if not (isinstance(loc, int) and 0 <= loc < len(strings) and isinstance(js, bool)
                and isinstance(cat, int) and 0 <= cat < len(cats)
                and isinstance(sub, int) and 0 <= sub < len(cats[cat]["subcategories"])
                and (line is None or isinstance(line, int))):
            nbad += 1
            r.bad("%s: frame %d: %s" % (who, i, f))
            break
        name = strings[loc]
        want = ("Native" if KIND.search(name) and KIND.search(name).group(1) == "native"
                else "Kernel" if KIND.search(name)
                else "Off-CPU" if name.startswith("[off-cpu")
                else "Other" if name.startswith("[") and " (" not in name
                else "Python")
        if cats[cat]["name"] != want:
            nbad += 1
            r.bad("%s: frame %r in category %s, want %s" % (who, name, cats[cat]["name"], want))
            break
    for i, (prefix, fr) in enumerate(stacks):
        if not (isinstance(fr, int) and 0 <= fr < len(frames) and (prefix is None or (isinstance(prefix, int) and 0 <= prefix < i))):
            nbad += 1
            r.bad("%s: stack %d: [%s, %s]" % (who, i, prefix, fr))
            break
    else:
        last = 0
        for s, tm, delay in t["samples"]["data"]:
            if not (isinstance(s, int) and 0 <= s < len(stacks) and isinstance(tm, NUM) and tm >= last):
                nbad += 1
                r.bad("%s: sample [%s, %s] (after time %s)" % (who, s, tm, last))
                break
            last = tm
            names = []
            while s is not None:
                names.append(strings[frames[stacks[s][1]][0]])
                s = stacks[s][0]
            key = ";".join(n.replace(";", ":") for n in reversed(names))
            got[key] = got.get(key, 0) + 1
            if names[0].startswith("[off-cpu: "):
                reason = names[0][len("[off-cpu: "):-1]
                offcpu_samples[reason] = offcpu_samples.get(reason, 0) + 1
    for m in t["markers"]["data"]:
        name, start, end, phase, cat, _ = m
        if not (isinstance(name, int) and 0 <= name < len(strings) and isinstance(start, NUM)
                and isinstance(end, NUM) and start <= end and phase == 1
                and isinstance(cat, int) and 0 <= cat < len(cats) and cats[cat]["name"] == "Off-CPU"
                and strings[name].startswith("off-CPU: ")):
            nbad += 1
            r.bad("%s: marker %s" % (who, m))
            break
        mk = markers.setdefault(strings[name][len("off-CPU: "):], [0, 0.0])
        mk[0] += 1
        mk[1] += end - start
if not nbad:
    r.ok("%d threads: fields, schemas, row widths, every index in range, times in order, categories by kind"
         % len(j.get("threads", [])))

want = {}
ns = {}
for line in open(a["folded"], encoding="utf-8"):
    stack, c = line.rstrip("\n").rsplit(" ", 1)
    want[stack] = int(c)
    leaf = stack.rsplit(";", 1)[-1]
    if leaf.startswith("[off-cpu: "):
        reason = leaf[len("[off-cpu: "):-1]
        ns[reason] = ns.get(reason, 0) + int(c)
if weighted:
    want = checklib.raw_stack_counts(a["raw"])
if got == want:
    r.ok("%d samples in %d stacks: the %s stacks and counts" % (sum(got.values()), len(got), "raw file's" if weighted else "folded file's"))
else:
    diff = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
    r.bad("%d stacks differ, e.g. %s: gecko %s, want %s" % (len(diff), diff[0][-200:], got.get(diff[0]), want.get(diff[0])))
if weighted:
    if not markers:
        r.bad("a weighted profile without a single off-CPU marker")
    for reason in sorted(set(markers) | set(ns)):
        n, ms = markers.get(reason, (0, 0.0))
        if n == offcpu_samples.get(reason, 0) and abs(ms * 1e6 - ns.get(reason, 0)) <= n + 1:
            r.ok("off-CPU %s: %d markers, %.3f ms, the folded file's %d ns" % (reason, n, ms, ns.get(reason, 0)))
        else:
            r.bad("off-CPU %s: %d markers (%d samples), %.6f ms, want %d ns"
                  % (reason, n, offcpu_samples.get(reason, 0), ms, ns.get(reason, 0)))
r.done()
