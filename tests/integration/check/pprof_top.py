# test_record.sh: `go tool pprof -top` of a -f pprof profile of hot.py.
#   pprof_top.py TOPFILE SAMPLES "SHARE TOTAL"   (SHARE: heavy's share in the
#   folded run, from check_stacks.py share_out=; may be empty)
# The flat totals sum to the run's sample count; only heavy, light (and main)
# hold flat samples; heavy's flat share as in the folded run.
import re, sys

from checklib import Report

top, n, folded = open(sys.argv[1]).read(), int(sys.argv[2] or -1), sys.argv[3].split()
report = Report("pprof -top")
ok, bad = report.ok, report.bad
flat = {}
for l in top.split("\n"):
    m = re.match(r"^\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+[\d.]+%\s+(.*)$", l)
    if m:
        flat[m.group(3)] = int(m.group(1))
tot = sum(flat.values())
m = re.search(r"Total samples = (\d+)", top)
if tot == n and m and int(m.group(1)) == n:
    ok("flat totals sum to %d = the run's sample count" % n)
else:
    bad("flat totals sum to %d, header %s, the run had %d samples" % (tot, m and m.group(1), n))
# main holds the odd sample taken between its two calls
if not {"heavy", "light"} <= set(k for k, v in flat.items() if v) <= {"heavy", "light", "main"}:
    bad("functions with flat samples: %s, expected heavy, light (and main)" % flat)
elif folded:
    s, fs = flat["heavy"] / tot, float(folded[0])
    if 0.45 <= s <= 0.85 and abs(s - fs) <= 0.15:
        ok("heavy's flat share %.3f in [0.45, 0.85], folded run %.3f (within 0.15)" % (s, fs))
    else:
        bad("heavy's flat share %.3f, folded run %.3f: want [0.45, 0.85] and within 0.15" % (s, fs))
report.done()
