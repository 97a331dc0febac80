#!/bin/bash
# The oracle as a regression gate (issue 27; docs/oracle-gate.md):
#  - false alarms: GATE_REPEATS (default 2, to keep the suite short; the
#    rate itself is measured in docs/oracle-gate.md) runs
#    of the same samplers
#    (ptrace, live, bpf) on three cases, --runs 3 each (the gate's
#    between-run tests: one run a side calls 7-10% of rows worse, measured
#    in docs/oracle-gate.md), each compared with the one before: the share
#    of rows called worse stays <= 5%;
#  - detection: Austin (a real sampler, pyenv 3.8-3.10) behind a filter
#    that makes 5% of family a's stacks impossible, against the same
#    sampler without the fault: exit 9, its impossible% row worse; at 1%
#    the --detect line agrees with the table's largest min_Δ. Windows of
#    1.5 s (were 3: the 5% fault's row was worse at p_holm 4e-24; half the
#    samples leave it far below alpha 0.05);
#  - cost: ptrace at 2 kHz against 0.5 kHz stops the target four times as often:
#    refused as another experiment (rate_khz) without --force, its
#    slowdown% worse with it;
#  - --baseline reruns what the baseline ran and prints the gate: the
#    baseline is same0 cut to its first case and first run (bl.json, made
#    as one0.json is), 3 windows rather than same0's 27: the rerun and its
#    gate are the same code whatever the size, and the gate's --runs 3
#    tests are those of the false-alarm comparisons above;
#  - JUnit read back by xml.etree and by junitparser (Debian's package);
#  - hostile baselines: a clear message and exit 2, never a crash;
#  - --json, --html, --junit refuse an existing path without --force and
#    replace it with it.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "skip: needs root (ptrace, BPF)"; exit 77; }
[ -x "$BPFPY" ] || { echo "skip: $BPFPY not built"; exit 77; }
use_bpfpy
here=$(cd "$(dirname "$0")" && pwd)
label=$(targets | awk -F'\t' '$3 == "/" { l = $2 } END { print l }')
[ -n "$label" ] || { echo "skip: no host interpreter"; exit 77; }
repeats=${GATE_REPEATS:-2}
run_oracle() { # json, args...
	local j=$1
	shift
	timeout 300 "$BPFPY" oracle -q --rate 1 --warmup 0.3 --json "$j" "$@" > "$j.txt" 2> "$j.err"
}

# --- false alarms -------------------------------------------------------
for ((i = 0; i < repeats; i++)); do
	run_oracle "$TMP/same$i.json" --python "$label" --snippet flat_alternating \
		--snippet nested_alternating --snippet shared_leaf --mode ptrace --mode live \
		--mode bpf --duration 1 --runs 3 || bad "same run $i: exit $?: $(tail -2 "$TMP/same$i.json.err")"
done
rows=0 worse=0
for ((i = 1; i < repeats; i++)); do
	"$BPFPY" oracle --compare "$TMP/same$((i - 1)).json" "$TMP/same$i.json" > "$TMP/cmp$i.txt" 2>&1
	rc=$?
	[[ $rc == 0 || $rc == 9 ]] || bad "compare $i: exit $rc: $(tail -2 "$TMP/cmp$i.txt")"
	read -r w s b n < <(awk '/^gate: [0-9]+ worse/ { print $2, $6, $4, $8 }' "$TMP/cmp$i.txt")
	if { ((rc == 9)) && ((w == 0)); } || { ((rc == 0)) && ((w > 0)); }; then
		bad "compare $i: exit $rc with $w worse rows"
	fi
	rows=$((rows + w + s + b)) worse=$((worse + w))
done
echo "false alarms: $worse worse of $rows rows over $((repeats - 1)) comparisons"
((rows >= 40 * (repeats - 1))) || bad "only $rows rows compared (48 a comparison expected)"
((worse * 20 <= rows)) && ok "same samplers: $worse of $rows rows worse (<= 5%)" \
	|| bad "same samplers: $worse of $rows rows worse (> 5%): $(grep -h ' worse ' "$TMP"/cmp*.txt | head -5)"
grep -q ' same ' "$TMP/cmp1.txt" && ok "same samplers: rows read same" || bad "no same row: $(head -5 "$TMP/cmp1.txt")"

# --- JUnit, read back ---------------------------------------------------
"$BPFPY" oracle --compare "$TMP/same0.json" "$TMP/same1.json" --junit "$TMP/g.xml" > "$TMP/j.txt" 2>&1
rc=$?
"$CHECKPY" - "$TMP/g.xml" "$TMP/j.txt" <<'PY' && ok "JUnit: xml.etree reads one testcase a row, failures as worse" || bad "JUnit (above)"
import sys, xml.etree.ElementTree as ET
t = ET.parse(sys.argv[1]).getroot()
rows = [l.split() for l in open(sys.argv[2]) if l.startswith(("flat_", "nested_", "shared_"))]
cases = t.findall("./testsuite/testcase")
fail = 0
if len(cases) != len(rows):
    print("  %d testcases, %d rows" % (len(cases), len(rows))); fail = 1
worse = [r for r in rows if "worse" in r]
f = t.findall("./testsuite/testcase/failure")
if len(f) != len(worse) or t.get("failures") != str(len(worse)):
    print("  %d failures for %d worse rows" % (len(f), len(worse))); fail = 1
for c, r in zip(cases, rows):
    if c.get("classname") != r[0] + "." + r[1] or c.get("name") != r[2]:
        print("  testcase %s %s, row %s" % (c.get("classname"), c.get("name"), r[:3])); fail = 1
        break
sys.exit(fail)
PY
if /usr/bin/python3 -c 'import junitparser' 2>/dev/null; then
	/usr/bin/python3 - "$TMP/g.xml" <<'PY' && ok "JUnit: junitparser reads it" || bad "junitparser (above)"
import sys
from junitparser import JUnitXml
x = JUnitXml.fromfile(sys.argv[1])
n = sum(1 for s in x for c in s)
print("  junitparser: %d testcases, %d failures" % (n, x.failures))
sys.exit(0 if n >= 40 else 1)
PY
else
	bad "python3-junitparser not installed (scripts/deps.sh test)"
fi
"$BPFPY" oracle --compare "$TMP/same0.json" "$TMP/same1.json" --junit "$TMP/g.xml" > /dev/null 2>&1
[[ $? == 2 ]] && ok "--junit: an existing file refused without --force" || bad "--junit overwrote without --force"
"$BPFPY" oracle --compare "$TMP/same0.json" "$TMP/same1.json" --junit "$TMP/g.xml" --force > /dev/null 2>&1
[[ $? == 0 || $? == 9 ]] && ok "--junit --force replaces it" || bad "--junit --force failed"
ln -s "$TMP/victim" "$TMP/link.xml"
"$BPFPY" oracle --compare "$TMP/same0.json" "$TMP/same1.json" --junit "$TMP/link.xml" --force > /dev/null 2>&1
[[ -L $TMP/link.xml || ! -e $TMP/victim ]] && [[ ! -e $TMP/victim ]] && ok "--junit --force on a symlink: the target is not written" \
	|| bad "--junit followed a symlink"

# --- hostile and mismatched baselines ------------------------------------
check_refused() { # what, expected message regex, args...
	local what=$1 re=$2 out rc
	shift 2
	out=$("$BPFPY" oracle "$@" 2>&1)
	rc=$?
	if [[ $rc == 2 ]] && grep -Eq "$re" <<< "$out"; then ok "$what: exit 2, '$(tail -1 <<< "$out" | cut -c1-110)'"
	else bad "$what: exit $rc: $out"; fi
}
printf '{"header": ' > "$TMP/trunc.json"
echo '[1, 2, 3]' > "$TMP/array.json"
/usr/bin/python3 - "$TMP" <<'PY'
import json, sys
t = sys.argv[1]
d = json.load(open(t + "/same0.json"))
d["header"]["format_version"] = 1
json.dump(d, open(t + "/v1.json", "w"))
d = json.load(open(t + "/same0.json"))
d["header"]["python_version"] = "3.99.0"
json.dump(d, open(t + "/otherpy.json", "w"))
d = json.load(open(t + "/same0.json"))
d["cases"] = d["cases"][:1]
json.dump(d, open(t + "/fewer.json", "w"))
d = json.load(open(t + "/same0.json"))
d["cases"][0]["modes"][1]["runs"][0]["impossible"] = 10 ** 9
json.dump(d, open(t + "/toomany.json", "w"))
# The blocks are the data of the one-run-a-side tests only (bootstrap,
# welch-blocks); with --runs >= 2 on both sides the gate tests the per-run
# figures and never reads them (docs/oracle-gate.md's table). same0 has
# --runs 3, so the bad blocks go into one-run files cut from it (run 0 and
# run 1, header runs=1), or the check would not reach the block reader.
def one(d, r):
    d["header"]["runs"] = 1
    for c in d["cases"]:
        for m in c["modes"]:
            m["runs"] = [m["runs"][r]]
    return d
def spoil(d, r):
    for m in d["cases"][0]["modes"]:
        m["runs"][r]["seq_blocks"]["blocks"] = [[999999, 5]] * 3
        m["runs"][r]["us_blocks"] = ["x"]
    return d
json.dump(one(json.load(open(t + "/same0.json")), 0), open(t + "/one0.json", "w"))
json.dump(one(json.load(open(t + "/same0.json")), 1), open(t + "/one1.json", "w"))
json.dump(spoil(one(json.load(open(t + "/same0.json")), 0), 0), open(t + "/badblocks.json", "w"))
json.dump(spoil(json.load(open(t + "/same0.json")), 0), open(t + "/badblocks3.json", "w"))
d = one(json.load(open(t + "/same0.json")), 0)
d["cases"] = d["cases"][:1]
json.dump(d, open(t + "/bl.json", "w"))
d = json.load(open(t + "/same0.json"))
x = d
for _ in range(40):
    x["n"] = {}
    x = x["n"]
json.dump(d, open(t + "/deep.json", "w"))
PY
truncate -s 70M "$TMP/huge.json"
mkfifo "$TMP/fifo.json"
check_refused "truncated JSON" "not JSON" --compare "$TMP/trunc.json" "$TMP/same0.json"
check_refused "an array" "not a bpfpy oracle --json file" --compare "$TMP/array.json" "$TMP/same0.json"
check_refused "format_version 1" "format_version" --compare "$TMP/v1.json" "$TMP/same0.json"
check_refused "70 MB" "more than" --compare "$TMP/huge.json" "$TMP/same0.json"
check_refused "a FIFO" "not a regular file" --compare "$TMP/fifo.json" "$TMP/same0.json"
check_refused "nesting past the bound" "not JSON" --compare "$TMP/deep.json" "$TMP/same0.json"
check_refused "more impossible than stacks" "more errors or impossible" --compare "$TMP/toomany.json" "$TMP/same0.json"
check_refused "missing file" "cannot open" --compare "$TMP/none.json" "$TMP/same0.json"
check_refused "another interpreter" "python_version 3.99.0, now" --compare "$TMP/otherpy.json" "$TMP/same0.json"
check_refused "another snippet set" "in one run only" --compare "$TMP/fewer.json" "$TMP/same0.json"
out=$("$BPFPY" oracle --compare "$TMP/fewer.json" "$TMP/same0.json" --force 2>&1); rc=$?
[[ $rc == 0 || $rc == 9 ]] && grep -q "^flat_alternating " <<< "$out" && ! grep -q "^nested_" <<< "$out" \
	&& ok "another snippet set with --force: the common rows compared" || bad "--force on fewer cases: exit $rc: $out"
# One run a side: the same two runs give the row a test, their bad blocks n/a.
out=$("$BPFPY" oracle --compare "$TMP/one0.json" "$TMP/one1.json" 2>&1); rc=$?
[[ $rc == 0 || $rc == 9 ]] && grep -Eq "^flat_alternating +live +tvd_excess .* (same|worse|better) +bootstrap$" <<< "$out" \
	&& ok "one run a side, good blocks: the row is tested (bootstrap)" || bad "one-run control: exit $rc: $out"
out=$("$BPFPY" oracle --compare "$TMP/badblocks.json" "$TMP/one1.json" 2>&1); rc=$?
[[ $rc == 0 || $rc == 9 ]] && grep -Eq "^flat_alternating +live +tvd_excess .* n/a +bootstrap$" <<< "$out" \
	&& grep -Eq "^flat_alternating +live +µs .* n/a +welch-blocks$" <<< "$out" \
	&& ok "blocks out of range: the rows are n/a, no crash" || bad "bad blocks: exit $rc: $out"
# --runs 3: the blocks are not read, the per-run figures are compared.
out=$("$BPFPY" oracle --compare "$TMP/badblocks3.json" "$TMP/same0.json" 2>&1); rc=$?
[[ $rc == 0 ]] && grep -Eq "^flat_alternating +live +tvd_excess .* same +welch-runs$" <<< "$out" \
	&& ok "bad blocks with --runs 3: not read, per-run figures compared" || bad "bad blocks, runs 3: exit $rc: $out"

# --- --baseline and --force on the run's own outputs ---------------------
touch "$TMP/exists.json"
out=$(timeout 60 "$BPFPY" oracle -q --baseline "$TMP/same0.json" --json "$TMP/exists.json" 2>&1); rc=$?
[[ $rc == 2 ]] && grep -q "already exists (use --force" <<< "$out" && [[ ! -s $TMP/exists.json ]] \
	&& ok "--json: an existing file refused before the run" || bad "--json existing: exit $rc: $out"
timeout 300 "$BPFPY" oracle -q --baseline "$TMP/bl.json" --json "$TMP/exists.json" --force \
	--html "$TMP/exists.json.html" > "$TMP/bl.txt" 2> "$TMP/bl.err"
rc=$?
[[ $rc == 0 || $rc == 9 ]] && [[ -s $TMP/exists.json ]] && grep -q "^gate: [0-9]* worse" "$TMP/bl.txt" \
	&& ok "--baseline: ran and gated (exit $rc), --json --force replaced the file" \
	|| bad "--baseline: exit $rc: $(tail -3 "$TMP/bl.err")"
"$CHECKPY" - "$TMP/bl.json" "$TMP/exists.json" <<'PY' && ok "--baseline ran the baseline's cases, modes, rate, duration, runs" || bad "--baseline's run (above)"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
fail = 0
for k in ("python_version", "rate_khz", "duration", "runs", "mode_args", "cpu_model", "python_build_id"):
    if a["header"].get(k) != b["header"].get(k):
        print("  %s: %s, rerun %s" % (k, a["header"].get(k), b["header"].get(k))); fail = 1
if [c["name"] for c in a["cases"]] != [c["name"] for c in b["cases"]]:
    print("  cases differ"); fail = 1
if not a["header"]["python_build_id"] or not a["header"]["kernel"] or not a["header"]["cpu_model"]:
    print("  machine facts missing: %s" % a["header"]); fail = 1
sys.exit(fail)
PY

# --- cost: ptrace stopping the target four times as often ---------------
# 0.5 against 2 kHz, not 1 against 2: on a loaded machine the 1 kHz run's
# own slowdown (34% against 46% at 2 kHz, once) left the doubling at
# p_holm 0.05, a coin's toss for the test; four times the stops is past
# that noise and still the same claim: a cost change is seen.
run_oracle "$TMP/c1.json" --python "$label" --snippet flat_alternating --mode ptrace --duration 3 \
	--rate 0.5 --reference-mode ptrace || bad "ptrace 0.5 kHz: exit $?"
run_oracle "$TMP/c2.json" --python "$label" --snippet flat_alternating --mode ptrace --duration 3 --rate 2 \
	--reference-mode ptrace || bad "ptrace 2 kHz: exit $?"
check_refused "another rate" "rate_khz 0.5, now 2" --compare "$TMP/c1.json" "$TMP/c2.json"
out=$("$BPFPY" oracle --compare "$TMP/c1.json" "$TMP/c2.json" --force 2>&1); rc=$?
[[ $rc == 9 ]] && grep -Eq "^flat_alternating +ptrace +slowdown% .* worse" <<< "$out" \
	&& ok "ptrace at four times the rate: slowdown% worse, exit 9" || bad "cost change not flagged: exit $rc: $out"

# --- detection: a real sampler with a known defect -----------------------
if ! command -v austin > /dev/null; then
	bad "austin not installed (scripts/deps.sh test): no detection test"
	finish
fi
old=$(targets | awk -F'\t' '$3 == "/" && $1 ~ /^3\.(8|9|10)\./ { l = $2 } END { print l }')
[[ -n $old ]] || { bad "no 3.8-3.10 interpreter for Austin: no detection test"; finish; }
ext="external:python3 '$PWD/scripts/oracle_austin.py' | python3 '$here/py/fault_filter.py'"
for f in 0 0.05 0.01; do
	FAULT_IMPOSSIBLE=$f FAULT_SEED=7 run_oracle "$TMP/f$f.json" --python "$old" \
		--snippet flat_alternating --mode ptrace --mode "$ext" --duration 1.5 \
		|| bad "austin fault $f: exit $?: $(tail -2 "$TMP/f$f.json.err")"
done
out=$("$BPFPY" oracle --compare "$TMP/f0.json" "$TMP/f0.05.json" --junit "$TMP/f.xml" 2>&1); rc=$?
[[ $rc == 9 ]] && grep -Eq "^flat_alternating +ext:.* impossible% .* worse +fisher" <<< "$out" \
	&& ok "5% impossible stacks: impossible% worse, exit 9" || bad "5% fault not flagged: exit $rc: $out"
"$CHECKPY" - "$TMP/f.xml" <<'PY' && ok "JUnit: the failure names impossible% with its numbers" || bad "JUnit failure (above)"
import sys, xml.etree.ElementTree as ET
f = [c for c in ET.parse(sys.argv[1]).getroot().iter("testcase")
     if c.get("name") == "impossible%" and c.find("failure") is not None]
ok = f and "worse" in f[0].find("failure").get("message") and "p_holm" in f[0].find("failure").text
print("  " + (f[0].find("failure").get("message") if f else "no failure"))
sys.exit(0 if ok else 1)
PY
"$BPFPY" oracle --compare "$TMP/f0.json" "$TMP/f0.01.json" --detect impossible=1 > "$TMP/d1.txt" 2>&1
out=$(cat "$TMP/d1.txt")
"$CHECKPY" - "$TMP/d1.txt" <<'PY' && ok "1% fault: the detect line agrees with the rows' min_Δ" || { bad "1% detect line"; echo "$out"; }
import re, sys
t = open(sys.argv[1]).read()
mdd = [float(l.split()[-4]) for l in t.splitlines() if re.match(r"flat_alternating .* impossible% ", l)]
m = re.search(r"detect impossible=1: (seen on every row \(largest min_Δ ([0-9.e+-]+)\)|largest min_Δ ([0-9.e+-]+); --duration ([0-9.]+) would see it)", t)
if not m or not mdd:
    sys.exit(1)
big = float(m.group(2) or m.group(3))
print("  largest min_Δ %g (rows %s): %s" % (big, mdd, m.group(1)))
sys.exit(0 if abs(big - max(mdd)) <= 0.01 * max(mdd) + 0.005 and (m.group(2) is None) == (big > 1) else 1)
PY
finish
