# test_trace.sh, --usdt python:gc__start -f chrome of py/trace_gc.py: the
# events from collect_all() carry generations 0, 1, 2, 2, as instants.
#   trace_gc_generations.py FILE.json
import json, sys
t = json.load(open(sys.argv[1]))
ev = [e for e in t["traceEvents"] if e.get("args", {}).get("probe") == "python:gc__start"
      and e["args"].get("stack", [""])[0].startswith("collect_all (")]
assert [e["args"]["generation"] for e in ev] == [0, 1, 2, 2], ev
assert all(e["ph"] == "i" for e in ev)
