"""A Chrome Trace Event Format (JSON object form) check, for record -f chrome
and trace -f chrome: the keys each phase requires, known phases only,
metadata events (process_name for every pid with events, thread_name for
every (pid, tid)), B/E nesting per thread with non-decreasing times, and
every "sf" and stackFrames parent resolving.
  chrome_tef.py FILE what=TEXT [names=a,b,...]   names: slice/frame names
  that must appear somewhere (in events or stackFrames)."""
import json
import sys

from checklib import Report, kv

path = sys.argv[1]
args = kv(sys.argv[2:])
r = Report(args.get("what", path))
try:
    j = json.load(open(path, encoding="utf-8"))
except Exception as e:  # noqa: BLE001 - any parse failure is the finding
    r.bad("not JSON: %s" % e)
    r.done()
if not isinstance(j, dict) or not isinstance(j.get("traceEvents"), list):
    r.bad("no traceEvents array")
    r.done()
ev = j["traceEvents"]
sfs = j.get("stackFrames", {})
NEED = {"B": ("name", "pid", "tid", "ts"), "E": ("pid", "tid", "ts"),
        "i": ("name", "pid", "tid", "ts"), "I": ("name", "pid", "tid", "ts"),
        "X": ("name", "pid", "tid", "ts", "dur"), "M": ("name", "pid", "args"),
        "P": ("pid", "tid", "ts"), "C": ("name", "pid", "ts", "args")}
bad_keys, bad_ph, bad_sf = [], set(), []
pnames, tnames, have = set(), set(), set()
depth, last_ts, unbalanced, backwards = {}, {}, 0, 0
for e in ev:
    ph = e.get("ph")
    if ph not in NEED:
        bad_ph.add(ph)
        continue
    miss = [k for k in NEED[ph] if k not in e]
    if miss:
        bad_keys.append((ph, miss))
        continue
    if "sf" in e and str(e["sf"]) not in sfs:
        bad_sf.append(e["sf"])
    if ph == "M":
        if e["name"] == "process_name":
            pnames.add(e["pid"])
        elif e["name"] == "thread_name":
            tnames.add((e["pid"], e.get("tid")))
        if not isinstance(e["args"].get("name"), str):
            bad_keys.append((ph, ["args.name"]))
        continue
    key = (e["pid"], e["tid"])
    have.add(key)
    if not isinstance(e["ts"], (int, float)):
        bad_keys.append((ph, ["ts (a number)"]))
        continue
    if e["ts"] < last_ts.get(key, float("-inf")) and ph in "BE":
        backwards += 1
    if ph in "BE":
        last_ts[key] = e["ts"]
    if ph == "B":
        depth[key] = depth.get(key, 0) + 1
    elif ph == "E":
        if depth.get(key, 0) == 0:
            unbalanced += 1
        else:
            depth[key] -= 1
for k, v in sfs.items():
    if "name" not in v or ("parent" in v and str(v["parent"]) not in sfs):
        bad_sf.append("stackFrames[%s]" % k)
n = len(ev)
(r.bad if bad_ph else r.ok)("%d events, phases known%s" % (n, (": unknown %s" % sorted(map(str, bad_ph))) if bad_ph else ""))
(r.bad if bad_keys else r.ok)("required keys present%s" % (": missing %s" % bad_keys[:5] if bad_keys else ""))
(r.bad if bad_sf else r.ok)("%d stackFrames, every sf and parent resolves%s" % (len(sfs), (": not %s" % bad_sf[:5]) if bad_sf else ""))
nosf = sum(1 for e in ev if e.get("ph") in ("B", "i", "I", "P") and "sf" not in e)
(r.bad if not sfs or nosf == n else r.ok)("events carry sf (%d of %d without)" % (nosf, n))
pids = {p for p, _ in have}
(r.bad if pids - pnames or not pids else r.ok)("process_name for pids %s (events of %s)" % (sorted(pnames), sorted(pids)))
(r.bad if have - tnames else r.ok)("thread_name for %d threads%s" % (len(tnames), (": none for %s" % sorted(have - tnames)[:5]) if have - tnames else ""))
(r.bad if unbalanced or backwards else r.ok)("B/E nest per thread, in time order (%d unmatched E, %d backwards)" % (unbalanced, backwards))
want = [w for w in args.get("names", "").split(",") if w]
names = {e.get("name", "") for e in ev} | {v.get("name", "") for v in sfs.values()}
for w in want:
    hit = any(w in x for x in names)
    (r.ok if hit else r.bad)("a slice or frame named %s" % w)
r.done()
