#!/bin/bash
# The oracle's slowdown figure (issue 13, item 3), on the newest host
# interpreter and on sid-3.15 with a fake external tool that says 'S late':
#  - every sampled mode has slowdown_pairs == --slowdown-pairs, each pair's
#    on and off progress rates are in the JSON, and slowdown_pct and
#    slowdown_ci95 are what those pairs give (mean of 100*(1-on/off), Student
#    t 95% half-width): recomputed here, so a wrong formula fails;
#  - the interval is finite and not negative, the table prints mean±ci;
#  - bpf-timer runs, takes no sample (0 attempts, 0 stacks: nothing walked),
#    is not reported as an empty mode (exit 0), and walk_pct is bpf's
#    slowdown less bpf-timer's, walk_ci95 their half-widths in quadrature;
#  - an external tool's slowdown is unpaired (slowdown_pairs 0) and is
#    counted over the window its 'S late SECS' line names.
# No timing threshold: the figures' values are not judged, only that they
# are the statistics the help promises.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "skip: needs root (ptrace, BPF)"; exit 77; }
[ -x "$BPFPY" ] || { echo "skip: $BPFPY not built"; exit 77; }

label=$(targets | awk -F'\t' '$3 == "/" { l = $2 } END { print l }')
[ -n "$label" ] || { echo "skip: no host interpreter"; exit 77; }
json=$TMP/slow.json
if timeout 120 "$BPFPY" oracle -q --python "$label" --snippet flat_alternating --rate 1 \
	--duration 1.2 --warmup 0.2 --slowdown-pairs 6 --mode ptrace --mode bpf --mode bpf-timer \
	--mode live --json "$json" > "$TMP/slow.txt" 2> "$TMP/slow.err"; then
	ok "$label: oracle with bpf-timer exits 0"
else
	bad "$label: oracle exit $?: $(tail -3 "$TMP/slow.err")"
fi
grep -Eq '^bpf .* -?[0-9]+\.[0-9]±[0-9]+\.[0-9] ' "$TMP/slow.txt" \
	&& ok "$label: the table prints slowdown% as mean±ci" \
	|| bad "$label: no mean±ci on the bpf row: $(grep '^bpf ' "$TMP/slow.txt")"
"$CHECKPY" - "$json" 6 <<'PY' && ok "$label: slowdown statistics recomputed" || bad "$label: slowdown statistics (above)"
import json, math, sys
T = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365}
d = json.load(open(sys.argv[1])); want = int(sys.argv[2]); fail = 0
def check(c, msg):
    global fail
    if not c:
        print("  " + msg); fail = 1
modes = {m["mode"]: m["runs"][0] for m in d["cases"][0]["modes"]}
for name in ("ptrace", "bpf", "bpf-timer", "live"):
    r = modes[name]
    pr = r["slowdown_pair_rates"]
    check(len(pr) == want, "%s: %d pairs of rates, want %d" % (name, len(pr), want))
    # A pair is used when complete and its off half made progress (on a
    # loaded box the target may not run for 50 ms).
    s = [100 * (1 - on / off) for on, off in pr if on is not None and off is not None and off > 0]
    check(r["slowdown_pairs"] == len(s), "%s: slowdown_pairs %s, %d usable in %s" % (name, r["slowdown_pairs"], len(s), pr))
    if len(s) < 2:
        continue
    mean = sum(s) / len(s)
    sd = math.sqrt(sum((x - mean) ** 2 for x in s) / (len(s) - 1))
    ci = T[len(s) - 1] * sd / math.sqrt(len(s))
    check(r["slowdown_pct"] is not None and abs(r["slowdown_pct"] - mean) < 1e-6 * max(1, abs(mean)),
          "%s: slowdown_pct %s, pairs give %s" % (name, r["slowdown_pct"], mean))
    check(r["slowdown_ci95"] is not None and math.isfinite(r["slowdown_ci95"]) and r["slowdown_ci95"] >= 0
          and abs(r["slowdown_ci95"] - ci) < 1e-3 * max(1, ci),
          "%s: slowdown_ci95 %s, pairs give %s" % (name, r["slowdown_ci95"], ci))
t, b = modes["bpf-timer"], modes["bpf"]
check(t["attempts"] == 0 and t["samples"] == 0 and t["stacks"] == 0 and not t["distribution"],
      "bpf-timer walked something: %s attempts %s stacks" % (t["attempts"], t["stacks"]))
check(b["samples"] > 0, "bpf took no sample")
if b["slowdown_pct"] is not None and t["slowdown_pct"] is not None:
    check(abs(b["walk_pct"] - (b["slowdown_pct"] - t["slowdown_pct"])) < 1e-6, "walk_pct %s" % b["walk_pct"])
    check(abs(b["walk_ci95"] - math.hypot(b["slowdown_ci95"], t["slowdown_ci95"])) < 1e-6,
          "walk_ci95 %s" % b["walk_ci95"])
check(modes["ptrace"]["walk_pct"] is None, "walk_pct on a non-bpf row")
sys.exit(fail)
PY

# An external tool that reports after the fact, as Tachyon's CLI: it waits,
# then says it sampled the last 0.5 s, then prints its stacks.
fake=$TMP/fake_late.sh
cat > "$fake" <<'SH'
#!/bin/sh
sleep 0.8
echo "S late 0.5"
i=0
while [ $i -lt 50 ]; do echo "<module>:23;main:18;hot_a:12;leaf_a:10"; i=$((i + 1)); done
SH
chmod +x "$fake"
if timeout 120 "$BPFPY" oracle -q --python "$label" --snippet flat_alternating --rate 1 \
	--duration 0.5 --warmup 0.2 --mode ptrace --mode "external:$fake" --json "$TMP/late.json" \
	> "$TMP/late.txt" 2> "$TMP/late.err"; then
	ok "$label: oracle with a late external tool exits 0"
else
	bad "$label: late external: exit $?: $(tail -3 "$TMP/late.err")"
fi
"$CHECKPY" - "$TMP/late.json" <<'PY' && ok "$label: 'S late': stacks counted, window 0.5 s, unpaired slowdown" || bad "$label: 'S late' (above)"
import json, math, sys
d = json.load(open(sys.argv[1]))
r = [m for m in d["cases"][0]["modes"] if m["mode"].startswith("ext:")][0]["runs"][0]
fail = 0
if r["samples"] != 50:
    print("  samples %s, want 50 (lines after the window must count with 'S late')" % r["samples"]); fail = 1
if r["elapsed_s"] is None or abs(r["elapsed_s"] - 0.5) > 0.1:
    print("  window %s s, want the 0.5 s the tool named" % r["elapsed_s"]); fail = 1
# The half-width needs two sub-windows of each half that the log covers;
# on a loaded box it may be unknown (null), never negative or infinite.
ci = r["slowdown_ci95"]
if r["slowdown_pairs"] != 0 or r["slowdown_pct"] is None or not (ci is None or (math.isfinite(ci) and ci >= 0)):
    print("  external slowdown: pairs %s pct %s ci %s" % (r["slowdown_pairs"], r["slowdown_pct"], r["slowdown_ci95"])); fail = 1
sys.exit(fail)
PY
finish
