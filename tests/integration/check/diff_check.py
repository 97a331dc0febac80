# test_diff.sh: `bpfpy diff BASE NEW` of two recordings of py/diff_pair.py
# (1 1, then 3 1), against the collapsed files of those recordings and
# against what the program measured of itself:
#   - the collapsed diff: the stacks of both files, NEW's column NEW's own
#     counts, BASE's column its counts scaled by NEW's total over BASE's,
#     rounded (the documented normalisation);
#   - the SVG: the frames calling alpha and beta (main's two lines) have
#     the NEW and BASE shares and the change in points that the collapsed
#     files give them (to the two decimals printed), red where it grew,
#     blue where it shrank;
#   - the known difference: alpha's change is the change of its share of
#     the CPU time the program measured (time.thread_time) in the two
#     recordings, within TOL points, and grew by more than 10 points.
#   diff_check.py base=F new=F diff=F svg=F src=F shown=P measured=A0,B0,A1,B1 tol=N
import re
import sys
import xml.etree.ElementTree as ET

import checklib

a = checklib.kv(sys.argv[1:])
r = checklib.Report("diff")


def folded(path):
    d = {}
    for line in open(path, encoding="utf-8"):
        s, c = line.rstrip("\n").rsplit(" ", 1)
        d[s] = d.get(s, 0) + int(c)
    return d


base, new = folded(a["base"]), folded(a["new"])
tb, tn = sum(base.values()), sum(new.values())
got = {}
for line in open(a["diff"], encoding="utf-8"):
    s, b, n = line.rstrip("\n").rsplit(" ", 2)
    got[s] = (int(b), int(n))
want = {s: (int(base.get(s, 0) * tn / tb + 0.5), new.get(s, 0)) for s in set(base) | set(new)}
if got == want:
    r.ok("collapsed: %d stacks 'STACK BASE NEW', NEW's counts, BASE's times %d/%d rounded" % (len(got), tn, tb))
else:
    k = sorted(s for s in set(got) | set(want) if got.get(s) != want.get(s))
    r.bad("collapsed: %d stacks differ, e.g. %s: %s, want %s" % (len(k), k[0][-150:], got.get(k[0]), want.get(k[0])))

# main's call lines of alpha and beta (the "# L:" markers of diff_pair.py
# are not needed: the lines are the calls' own).
src = open(a["src"], encoding="utf-8").read().split("\n")
call = {f: "main (%s:%d)" % (a["shown"], next(i for i, l in enumerate(src, 1) if l.strip().startswith(f + "(")))
        for f in ("alpha", "beta")}


def share(d, label):
    return 100.0 * sum(c for s, c in d.items() if label in s.split(";")) / sum(d.values())


ns = {"s": "http://www.w3.org/2000/svg"}
titles = {}
for g in ET.parse(a["svg"]).getroot().iter("{http://www.w3.org/2000/svg}g"):
    t = g.find("s:title", ns)
    rect = g.find("s:rect", ns)
    if t is not None and rect is not None:
        label, info = t.text.split("\n", 1)
        titles[label] = (info, rect.get("fill"))
m = [float(x) for x in a["measured"].split(",")]
measured = 100 * (m[2] / (m[2] + m[3]) - m[0] / (m[0] + m[1]))
for f, label in sorted(call.items()):
    if label not in titles:
        r.bad("svg: no frame %s" % label)
        continue
    info, fill = titles[label]
    mm = re.match(r"new ([\d.]+)% \((\d+)\), base ([\d.]+)% \((\d+)\), change ([+-][\d.]+) points$", info)
    sn, sb = share(new, label), share(base, label)
    if not mm:
        r.bad("svg %s: tooltip %r" % (f, info))
        continue
    vn, cn, vb, cb, ch = float(mm.group(1)), int(mm.group(2)), float(mm.group(3)), int(mm.group(4)), float(mm.group(5))
    if abs(vn - sn) <= 0.0051 and abs(vb - sb) <= 0.0051 and abs(ch - (sn - sb)) <= 0.0051:
        r.ok("svg %s: new %.2f%%, base %.2f%%, change %+.2f points, as the collapsed files give" % (f, vn, vb, ch))
    else:
        r.bad("svg %s: %r, want new %.3f base %.3f change %+.3f" % (f, info, sn, sb, sn - sb))
    rgb = [int(x) for x in re.findall(r"\d+", fill or "")] or [0, 0, 0]
    red = rgb[0] == 255 and rgb[2] < 255
    if (ch > 0 and red) or (ch < 0 and rgb[2] == 255 and rgb[0] < 255):
        r.ok("svg %s: %s, %s" % (f, fill, "red: grew" if red else "blue: shrank"))
    else:
        r.bad("svg %s: change %+.2f but fill %s" % (f, ch, fill))
    if f == "alpha":
        tol = float(a["tol"])
        if measured > 10 and abs(ch - measured) <= tol:
            r.ok("known difference: alpha's share changed %+.2f points, the program measured %+.2f (within %g)"
                 % (ch, measured, tol))
        else:
            r.bad("known difference: alpha changed %+.2f points, the program measured %+.2f (%s)" % (ch, measured, m))
r.done()
