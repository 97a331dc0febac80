#!/bin/bash
# Issue 12 item 2: names of short-lived code. A target that compiles,
# execs, calls and deletes func_a and func_b in a tight loop
# (py/short_lived.py) frees most code objects soon after a sample shows
# them. Before, 0.1-0.7% of record's stacks at 10 kHz had an "<unknown>"
# frame: the object was gone when user space read its name. Now the kernel
# copies the names on first sight (bpf/py_sample.bpf.h, map code_names) and
# a frame that still cannot be named makes its sample an error. On every
# interpreter: `record -F 10k -d 1` shows no <unknown> frame and both
# functions (about 9000 samples, 18000 at -d 2: at the defect's least,
# 0.1%, 0 <unknown> by chance is e^-9); on 3.12 and 3.15 the oracle's bpf
# mode on code_object_reuse (at 10 kHz, beside the ptrace reference) has no
# <unknown> key either: --duration 1.5, about 7500 bpf samples (15000 at
# the default 3 s; 0 <unknown> by chance e^-7.5, below 0.1%).
#
# Lines of freed code: py/module_lines.py runs generated module code (a
# line table of 1.6-5 KB, the hot loop at its end) once per object for 1 s
# (about 450-800 samples, 100 wanted; it was 2 s) under `record -- CMD`;
# on every interpreter the frames of gen_module.py
# are named <module>, none has line -1 or a line the file does not have,
# and 80% or more sit on the loop's two lines, which the script prints
# (the rest: the filler lines before the loop). Before the kernel copied the
# whole table (up to CODE_TABLE_LIMIT), 3-46% of them had line -1 and a
# few had lines past the file's end, read from freed tables.
. "$(dirname "$0")/lib.sh"
use_bpfpy

one() {
	local ver=$1 label=$2 out=$TMP/$2.folded err=$TMP/$2.err rc unk a b
	start_py "$label" "$PYDIR/short_lived.py" || {
		bad "$label: target did not start"
		return
	}
	timeout 60 "$BPFPY" record -p "$PY_PID" -F 10000 -d 1 -f collapsed -o "$out" 2>"$err"
	rc=$?
	kill -9 "$PY_PID" 2>/dev/null
	wait "$PY_PID" 2>/dev/null
	if [ "$rc" != 0 ] || [ ! -s "$out" ]; then
		bad "$label: record failed (rc $rc): $(tail -3 "$err")"
		return
	fi
	# collapsed lines: "frame;frame;... COUNT"
	unk=$(awk '/<unknown>/ { s += $NF } END { print s + 0 }' "$out")
	a=$(awk '/func_a \(A_file\.py/ { s += $NF } END { print s + 0 }' "$out")
	b=$(awk '/func_b \(B_file\.py/ { s += $NF } END { print s + 0 }' "$out")
	local summary
	summary=$(grep -o '[0-9]* samples, [0-9]* errors' "$err" | head -1)
	if [ "$unk" = 0 ]; then
		ok "$ver ($label): no <unknown> frame ($summary)"
	else
		bad "$ver ($label): $unk samples with an <unknown> frame ($summary)"
	fi
	if ((a > 0 && b > 0)); then
		ok "$ver ($label): func_a@A_file.py $a, func_b@B_file.py $b samples"
	else
		bad "$ver ($label): func_a $a, func_b $b samples: $(head -c 600 "$out")"
	fi
}
JOBS=2 each_target one

module_lines() {
	local ver=$1 label=$2 out=$TMP/$2.mod.folded err=$TMP/$2.mod.err rc why
	timeout 60 "$BPFPY" record -F 997 -f collapsed -o "$out" -- \
		"$ROOT_DIR/scripts/pyrun.sh" "$label" "$PYDIR/module_lines.py" 1 >"$TMP/$label.mod.hot" 2>"$err"
	rc=$?
	if [ "$rc" != 0 ] || [ ! -s "$out" ]; then
		bad "$label: record -- module_lines.py failed (rc $rc): $(tail -3 "$err")"
		return
	fi
	if why=$("$CHECKPY" - "$out" "$TMP/$label.mod.hot" <<'PY' 2>&1
import re, sys
hot = {int(l.split()[1]) for l in open(sys.argv[2]) if l.startswith("hot ")}
last = max(hot)
lines, bad = {}, []
for row in open(sys.argv[1]):
    stack, count = row.rsplit(" ", 1)
    for frame in stack.split(";"):
        m = re.fullmatch(r"(.*) \(gen_module\.py:(-?\d+)\)", frame)
        if m:
            line = int(m.group(2))
            lines[line] = lines.get(line, 0) + int(count)
            # 0: 3.12+ give the module's first instruction (RESUME) line 0
            if m.group(1) != "<module>" or line < 0 or line > last:
                bad.append(frame)
total = sum(lines.values())
on_hot = sum(v for k, v in lines.items() if k in hot)
print("%d samples in gen_module.py, %d on the loop's lines %s, %d frames wrong%s" % (
    total, on_hot, sorted(hot), len(bad), (": " + "; ".join(sorted(set(bad))[:5])) if bad else ""))
sys.exit(1 if bad or total < 100 or on_hot < 0.8 * total else 0)
PY
	); then
		ok "$ver ($label): freed module code keeps its lines: $why"
	else
		bad "$ver ($label): freed module code: $why"
	fi
	grep -q "lines unknown" "$err" && bad "$ver ($label): record says $(grep 'lines unknown' "$err")"
}
JOBS=2 each_target module_lines

# The oracle, as the issue measured it: bpf beside the ptrace reference.
for label in pyenv-3.12 sid-3.15; do
	targets | awk -F'\t' -v l="$label" '$2 == l { f = 1 } END { exit !f }' || {
		bad "no $label target"
		continue
	}
	json=$TMP/oracle-$label.json
	if ! timeout 150 "$BPFPY" oracle --python "$label" --snippet code_object_reuse \
		--mode ptrace --mode bpf --rate 10 --duration 1.5 --json "$json" >"$TMP/oracle-$label.out" 2>&1; then
		bad "$label: oracle failed: $(tail -5 "$TMP/oracle-$label.out")"
		continue
	fi
	if why=$("$CHECKPY" - "$json" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
modes = {m["mode"]: m for m in d["cases"][0]["modes"]}
runs = modes["bpf"]["runs"]
samples = sum(r["samples"] for r in runs)
# a stack with an <unknown> frame breaks the rules: it is listed under
# impossible_stacks, not in the distribution; look at both
unk = sum(v for r in runs for part in ("distribution", "impossible_stacks")
          for k, v in r[part].items() if "<unknown>" in k)
errors = sum(r["errors"] for r in runs)
print("bpf: %d samples, %d errors, %d with an <unknown> frame" % (samples, errors, unk))
sys.exit(1 if unk or not samples else 0)
PY
	); then
		ok "$label: oracle code_object_reuse at 10 kHz: $why"
	else
		bad "$label: oracle code_object_reuse at 10 kHz: $why"
	fi
done
finish
