"""test_convert.sh: a converted file against record's own, for the formats
whose bytes differ by what raw does not carry (the process and thread names,
functions' first lines, the wall-clock start). Everything else must be equal.
  convert_same.py KIND DIRECT CONVERTED   KIND: speedscope | chrome"""
import json
import sys

kind, a, b = sys.argv[1:4]
x, y = (json.load(open(p, encoding="utf-8")) for p in (a, b))
if kind == "speedscope":
    for j in (x, y):
        for p in j["profiles"]:
            # "[THREAD: ]pid P tid T (comm)": raw has neither name
            p["name"] = p["name"].rsplit(" (", 1)[0].split(": ")[-1]
elif kind == "chrome":
    for j in (x, y):
        for e in j["traceEvents"]:
            if e.get("ph") == "M" and e.get("name") == "process_name":
                e["args"]["name"] = e["args"]["name"].split(" (pid ")[-1]
            if e.get("ph") == "M" and e.get("name") == "thread_name":
                e["args"]["name"] = ""
if x == y:
    print("ok: %s: %s equals %s but for the process and thread names" % (kind, b, a))
    sys.exit(0)
print("FAIL: %s: %s and %s differ beyond the process and thread names" % (kind, a, b))
sys.exit(1)
