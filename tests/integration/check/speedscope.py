# test_record.sh: a -f speedscope profile of hot.py parses as speedscope's
# file format: its schema, frames named heavy, light, main, <module>, samples
# and weights paired, every frame index in range.
#   speedscope.py FILE.json
import json, sys
j = json.load(open(sys.argv[1]))
assert j["$schema"] == "https://www.speedscope.app/file-format-schema.json", j.get("$schema")
names = {f["name"] for f in j["shared"]["frames"]}
assert {"heavy", "light", "main", "<module>"} <= names, names
n = sum(len(p["samples"]) for p in j["profiles"])
assert n > 0 and all(len(p["samples"]) == len(p["weights"]) for p in j["profiles"])
assert all(i < len(j["shared"]["frames"]) for p in j["profiles"] for s in p["samples"] for i in s)
print("ok: speedscope JSON parses: %d profile(s), %d samples, frames %s" % (len(j["profiles"]), n, sorted(names)))
