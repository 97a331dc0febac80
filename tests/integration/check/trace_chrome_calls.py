# test_trace.sh, 3.15 --calls --threshold 0 -f chrome of py/trace_calls.py
# (20 mid() calls of 500 leaf() each): the Chrome JSON has every field, 10000
# balanced B/E events of leaf, their stacks and arguments, sorted timestamps.
#   trace_chrome_calls.py FILE.json
import json, sys
t = json.load(open(sys.argv[1]))
ev = [e for e in t["traceEvents"] if e["ph"] != "M"]
for e in ev:
    assert {"name", "ph", "ts", "pid", "tid", "args"} <= e.keys(), e
B = [e for e in ev if e["ph"] == "B" and e["name"] == "leaf"]
E = [e for e in ev if e["ph"] == "E" and e["name"] == "leaf"]
assert len(B) == 10000 and len(E) == 10000, (len(B), len(E))
s = B[0]["args"]["stack"]
assert s[0].startswith("leaf (") and s[1].startswith("mid ("), s
assert B[0]["args"]["funcname"] == "leaf" and B[0]["args"]["filename"].endswith("trace_calls.py")
ts = [e["ts"] for e in ev]
assert ts == sorted(ts)
