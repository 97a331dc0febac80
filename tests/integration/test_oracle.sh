#!/bin/bash
# bpfpy oracle end to end, on every interpreter of scripts/targets.sh:
# flat_alternating and ground_truth, modes ptrace (the reference) and bpf,
# a short window at a low rate (1 s at 0.4 kHz: modes sample in the "on"
# half of each slowdown pair, so 0.5 s of it, ~200 samples; it was 2 s at
# 0.2 kHz, the same count: flat_alternating changes state every few
# microseconds, so the shorter window sees as many states; ptrace at
# 0.4 kHz stays the auto reference, ~4% of the target's time, under 10%).
#
# What it proves, per interpreter:
#  - the reference and bpf both show 0 impossible stacks on flat_alternating
#    (each function on its one line, families never mixed);
#  - bpf's distribution agrees with the reference's: tvd_excess <= 0.25.
#    Generous on purpose: ~200 samples per mode give an IID floor near 0.04
#    and consecutive samples are correlated, and the box may be loaded (the
#    reference's stops then take long, and it sees fewer distinct states).
#    A wrong line or a swapped family gives a TVD near 1, far above;
#  - every column of the table is printed, and the JSON is valid;
#  - ground_truth: tvd_truth is computed for both modes (the snippet wrote
#    its measured time split at SIGTERM and the oracle read it).
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "skip: needs root (ptrace, BPF)"; exit 77; }
[ -x "$BPFPY" ] || { echo "skip: $BPFPY not built"; exit 77; }
TOL=0.25
COLS="mode samples µs errors% impossible impossible% tvd_excess tvd_floor raw_tvd tvd_noise tvd_fn tvd_truth slowdown% walk% lost µs_target µs_sampler"

while IFS=$'\t' read -r ver label root py; do
	out=$TMP/$label.txt
	json=$TMP/$label.json
	if ! "$BPFPY" oracle --python "$label" --snippet flat_alternating --snippet ground_truth \
		--mode ptrace --mode bpf --duration 1 --warmup 0.3 --rate 0.4 --json "$json" -q \
		> "$out" 2> "$TMP/$label.err"; then
		bad "$label: oracle failed: $(tail -3 "$TMP/$label.err")"
		continue
	fi
	head -1 "$out" | grep -q "^Python $ver \[$label\] cases=2 runs=1 duration=1 rate_khz=0.4 warmup=0.3 poisson_sampling=False" \
		&& ok "$label: header" || bad "$label: header: $(head -1 "$out")"
	hdr=$(grep -m1 '^mode ' "$out")
	missing=""
	for c in $COLS; do
		grep -qw -- "$c" <<< "$hdr" || missing="$missing $c"
	done
	[ -z "$missing" ] && ok "$label: every column" || bad "$label: columns missing:$missing"
	grep -q '^ptrace .* ref .* ref ' "$out" && ok "$label: reference row shows ref" \
		|| bad "$label: reference row: $(grep '^ptrace' "$out" | head -1)"
	if ! python3 -m json.tool "$json" > /dev/null; then
		bad "$label: JSON invalid"
		continue
	fi
	ok "$label: JSON valid"
	"$CHECKPY" "$CHECK/oracle_figures.py" "$json" "$TOL" && ok "$label: figures" || bad "$label: figures (above)"
done < <(targets)

# Any Python file, on the newest interpreter: a copy of flat_alternating
# without _oracle (its two lines blanked, so the rules' lines still hold)
# runs, shows 0 impossible under ptrace and bpf like the original, and has
# no slowdown% (no counter). Readiness comes from the process: had the
# oracle waited for a counter, the copy's windows would take no sample and
# the run would exit 1.
label=$(targets | tail -1 | cut -f2)
plain=$TMP/plain
mkdir -p "$plain"
sed -e 's/^from _oracle import progress$//' -e 's/^        progress\[0\] += 1$/        pass/' \
	"$ROOT_DIR/snippets/flat_alternating.py" > "$plain/flat_plain.py"
cp "$ROOT_DIR/snippets/flat_alternating.rules" "$plain/flat_plain.rules"
if grep -q _oracle "$plain/flat_plain.py" || [ "$(wc -l < "$plain/flat_plain.py")" != \
	"$(wc -l < "$ROOT_DIR/snippets/flat_alternating.py")" ]; then
	bad "$label: the _oracle-free copy is not what it should be"
elif "$BPFPY" oracle --python "$label" --snippet flat_alternating --snippet "$plain/flat_plain.py" \
	--mode ptrace --mode bpf --duration 1 --warmup 0.3 --rate 0.4 --json "$TMP/plain.json" -q \
	> "$TMP/plain.txt" 2> "$TMP/plain.err"; then
	python3 - "$TMP/plain.json" <<'PY' && ok "$label: a program without _oracle gives the same verdicts" \
		|| bad "$label: program without _oracle (above)"
import json, sys
d = json.load(open(sys.argv[1])); fail = 0
for mode in ("ptrace", "bpf"):
    for case in ("flat_alternating", "flat_plain"):
        c = next(c for c in d["cases"] if c["name"] == case)
        r = next(m for m in c["modes"] if m["mode"] == mode)["runs"][0]
        if r["samples"] <= 20 or r["impossible"]:
            print("  %s %s: %d samples, %d impossible %s" % (case, mode, r["samples"],
                  r["impossible"], r["impossible_stacks"])); fail = 1
        if case == "flat_plain" and r["slowdown_pct"] is not None:
            print("  flat_plain %s: slowdown %s without a counter" % (mode, r["slowdown_pct"])); fail = 1
sys.exit(fail)
PY
else
	bad "$label: program without _oracle: oracle failed: $(tail -3 "$TMP/plain.err")"
fi

# A mode that yields nothing fails the run (exit 1, with the reason), with
# or without --check.
for chk in "" --check; do
	"$BPFPY" oracle --python "$label" --snippet flat_alternating --mode ptrace --mode external:true \
		--duration 0.5 --warmup 0.2 --rate 0.2 -q $chk > "$TMP/empty.txt" 2> "$TMP/empty.err"
	rc=$?
	[ $rc = 1 ] && grep -q 'ext:true run 0 took no sample' "$TMP/empty.err" \
		&& ok "$label: a mode without samples exits 1 ${chk:-without --check}" \
		|| bad "$label: empty mode ${chk}: rc=$rc $(tail -2 "$TMP/empty.err")"
done

# The external protocol's files: a frame showing a wrong file is
# impossible, the same frame without a file is not (the tool prints one
# stack each, as three attempts).
ext='external:echo "<module>:24;main:18;hot_a:12@b.py;leaf_a:10"; echo "<module>:24;main:18;hot_a:12;leaf_a:10"; echo "<module>:24;main:18;hot_b:13@/x/flat_alternating.py;leaf_b:11@flat_alternating.py"'
if "$BPFPY" oracle --python "$label" --snippet flat_alternating --mode ptrace --mode "$ext" \
	--duration 0.5 --warmup 0.2 --rate 0.2 -q --json "$TMP/ext.json" > "$TMP/ext.txt" 2> "$TMP/ext.err"; then
	python3 - "$TMP/ext.json" <<'PY' && ok "$label: external frames: a wrong file is impossible, no file is not" \
		|| bad "$label: external frames with files (above)"
import json, sys
d = json.load(open(sys.argv[1]))
r = d["cases"][0]["modes"][1]["runs"][0]
imp = [k for k, _ in r["impossible_stacks"]] if isinstance(r["impossible_stacks"], list) else list(r["impossible_stacks"])
print("  samples %d impossible %d %s" % (r["samples"], r["impossible"], imp))
sys.exit(0 if r["samples"] == 3 and r["impossible"] == 1 else 1)
PY
else
	bad "$label: external frames: oracle failed: $(tail -3 "$TMP/ext.err")"
fi

# CPython 3.15's own blocking unwinder, which sends files: on the cases
# that judge files it is not impossible (it was 95-99% when the protocol
# had no file and an unknown file broke every deny rule).
if targets | cut -f1 | grep -q '^3\.15'; then
	l315=$(targets | awk -F'\t' '$1 ~ /^3\.15/ {print $2; exit}')
	if "$BPFPY" oracle --python "$l315" --snippet code_object_reuse --snippet oversized_chunk \
		--mode ptrace --mode cpython-blocking --duration 1 --warmup 0.3 --rate 0.2 -q \
		--json "$TMP/cpy.json" > "$TMP/cpy.txt" 2> "$TMP/cpy.err"; then
		python3 - "$TMP/cpy.json" <<'PY' && ok "$l315: cpython-blocking judged with files" \
			|| bad "$l315: cpython-blocking (above)"
import json, sys
d = json.load(open(sys.argv[1])); fail = 0
for c in d["cases"]:
    r = next(m for m in c["modes"] if m["mode"] == "cpython-blocking")["runs"][0]
    if r["samples"] <= 20 or r["impossible_pct"] is None or r["impossible_pct"] > 5:
        print("  %s: %d samples, impossible%% %s %s" % (c["name"], r["samples"],
              r["impossible_pct"], r["impossible_stacks"])); fail = 1
sys.exit(fail)
PY
	else
		bad "$l315: cpython-blocking: oracle failed: $(tail -3 "$TMP/cpy.err")"
	fi
fi

# Issue 12, items 5 and 6, on one interpreter (the newest 3.11+: the running
# subset needs the OS tid the thread state keeps since 3.11). Assertions on
# what does not depend on the host's load: which reference was chosen and
# that the header says so; that the reference's slowdown% is printed and
# flagged exactly when above 10%; that the running subset of the reference
# holds fewer stacks than all threads on a case whose main thread sleeps,
# and that bpf (cpu clock) is compared with it; the ground truth of the
# self-timed snippets; an explicit bpf-poisson reference.
ref_label=$(targets | awk -F'\t' '$1 ~ /^3\.1[1-4]/ { l = $2 } END { print l }')
if [ -z "$ref_label" ]; then
	echo "skip: no 3.11-3.14 interpreter for the reference checks"
else
	out=$TMP/ref.txt json=$TMP/ref.json
	if "$BPFPY" oracle --python "$ref_label" --snippet per_thread_truth --mode ptrace --mode bpf \
		--rate 10 --duration 1 --warmup 0.3 --json "$json" -q > "$out" 2> "$TMP/ref.err"; then
		grep -q '^reference=ptrace-low (auto: ptrace at 10000 Hz would stop' "$out" \
			&& ok "$ref_label: 10 kHz: auto reference is ptrace-low, said in the header" \
			|| bad "$ref_label: reference line: $(grep '^reference' "$out")"
		grep -q '^ptrace-low .* ref .* ref ' "$out" && ok "$ref_label: ptrace-low row is the reference" \
			|| bad "$ref_label: no ptrace-low reference row"
		grep -q '^bpf .* running$' "$out" && grep -q '^ptrace .* all$' "$out" \
			&& ok "$ref_label: ref_set: bpf vs running threads, ptrace vs all" \
			|| bad "$ref_label: ref_set column: $(grep -E '^(bpf|ptrace) ' "$out")"
		python3 - "$json" "$out" <<'PY' && ok "$ref_label: distortion flag and running subset" || bad "$ref_label: (above)"
import json, sys
d = json.load(open(sys.argv[1])); table = open(sys.argv[2]).read(); fail = 0
def check(cond, what):
    global fail
    if not cond:
        print("  " + what); fail = 1
modes = {m["mode"]: m["runs"][0] for m in d["cases"][0]["modes"]}
for name in ("ptrace-low", "ptrace"):
    sd = modes[name]["slowdown_pct"]
    check(sd is not None, "%s: no slowdown_pct" % name)
    flagged = ("note: the reference " if name == "ptrace-low" else "note: ") + name + " slowed" in table
    check(sd is None or flagged == (sd > 10), "%s: slowdown %s but flagged=%s" % (name, sd, flagged))
ref = modes["ptrace-low"]
n_all, n_run = sum(ref["distribution"].values()), sum(ref["running_distribution"].values())
# The main thread sleeps in time.sleep: not running at most samples.
check(0 < n_run < n_all, "running subset %s of %s stacks" % (n_run, n_all))
b = modes["bpf"]
check(b["ref_set"] == "running" and modes["ptrace"]["ref_set"] == "all", "ref_set")
def tvd(p, q):
    tp, tq = sum(p.values()), sum(q.values())
    return 0.5 * sum(abs(p.get(k, 0) / tp - q.get(k, 0) / tq) for k in set(p) | set(q))
# bpf never shows the sleeping main thread, which is ~1/3 of all threads'
# stacks: against all threads its TVD carries that third. 0.05 of slack
# for sampling noise (a few hundred reference samples).
t_run, t_all = tvd(b["distribution"], ref["running_distribution"]), tvd(b["distribution"], ref["distribution"])
check(t_run < t_all + 0.05, "tvd vs running %.3f not below tvd vs all %.3f" % (t_run, t_all))
check(abs(b["raw_tvd"] - t_run) < 1e-9, "raw_tvd %s is not the TVD vs the running subset %.3f" % (b["raw_tvd"], t_run))
sys.exit(fail)
PY
	else
		bad "$ref_label: oracle at 10 kHz failed: $(tail -3 "$TMP/ref.err")"
	fi
	out=$TMP/truth.txt json=$TMP/truth.json
	if "$BPFPY" oracle --python "$ref_label" --snippet nested_alternating --snippet shared_leaf \
		--snippet gen_alternating --snippet deep_recursion --reference-mode bpf-poisson \
		--mode ptrace --mode bpf --rate 0.4 --duration 1 --warmup 0.3 --json "$json" -q \
		> "$out" 2> "$TMP/truth.err"; then
		grep -q '^reference=bpf-poisson (as asked); Poisson times, 3x the window' "$out" \
			&& ok "$ref_label: bpf-poisson reference named in the header" \
			|| bad "$ref_label: reference line: $(grep '^reference' "$out")"
		python3 - "$json" <<'PY' && ok "$ref_label: tvd_truth on the self-timed cases" || bad "$ref_label: (above)"
import json, sys
d = json.load(open(sys.argv[1])); fail = 0
for c in d["cases"]:
    for m in c["modes"]:
        r = m["runs"][0]
        if r["tvd_truth"] is None or not r["truth"]:
            print("  %s %s: no tvd_truth (truth=%s)" % (c["name"], m["mode"], r["truth"])); fail = 1
        if r["impossible"]:
            print("  %s %s: %d impossible" % (c["name"], m["mode"], r["impossible"])); fail = 1
sys.exit(fail)
PY
	else
		bad "$ref_label: truth cases failed: $(tail -3 "$TMP/truth.err")"
	fi
fi
finish
