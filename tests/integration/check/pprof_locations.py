# test_record.sh: the Locations of `go tool pprof -raw` of a -f pprof profile
# of hot.py: every one is a frame hot.py has (function, file, a line of that
# function, its start line).
#   pprof_locations.py LOCATIONS hot.py SHOWN_PATH
import re, sys

from checklib import Source

locs, src, shown = open(sys.argv[1]).read().strip().split("\n"), sys.argv[2], sys.argv[3]
funcs = Source(src).funcs()
bad = []
for l in locs:
    # "  N: 0x0 M=1 NAME FILE:LINE s=START[(SYSTEM NAME)]"; go pprof drops
    # "<...>" from names (C++ templates), so <module> shows as "" (<module>)
    m = re.match(r"^\s*\d+: 0x0 M=\d+ (\S*) (\S+):(\d+) s=(\d+)(?:\((.*)\))?$", l)
    if not m:
        bad.append(l); continue
    name = m.group(1) or m.group(5)
    line = int(m.group(3))
    if m.group(2) != shown:
        bad.append(l)
    elif name == "<module>":
        pass
    elif name not in funcs or not funcs[name][0] <= line <= funcs[name][1] or int(m.group(4)) != funcs[name][0]:
        bad.append(l)
if bad or not locs:
    print("FAIL: pprof -raw: %d locations, not frames of hot.py: %s" % (len(locs), bad[:5]))
    sys.exit(1)
print("ok: pprof -raw: all %d locations are frames of hot.py (function, file, line, start line)" % len(locs))
