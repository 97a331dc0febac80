#!/bin/bash
# User space keeps up with deep stacks (issue 13): a target spinning 300
# frames deep, recorded on the cpu-clock at 10 kHz for 2 s, on every
# interpreter. Every record the kernel wrote must reach the profile: 0 lost
# (the kernel's count of records the full ring buffer refused), and the
# profile must hold the whole 300-deep stack. Counts come from the record
# summary; nothing here is timed.
source "$(dirname "$0")/lib.sh"
use_bpfpy

check() {
	local label=$2 out err lost emitted deepest
	start_py "$label" "$PYDIR/deep_spin.py" || { bad "$label: $PY_OUT"; return; }
	out=$TMP/$label.folded err=$TMP/$label.err
	timeout 60 "$BPFPY" record -p "$PY_PID" -F 10000 -d 2 -o "$out" >/dev/null 2>"$err"
	rc=$?
	kill -9 "$PY_PID" 2>/dev/null
	wait "$PY_PID" 2>/dev/null
	if [ "$rc" != 0 ]; then
		bad "$label: record exited $rc: $(head -c 500 "$err")"
		return
	fi
	lost=$(grep -o 'lost [0-9]*' "$err" | head -n 1 | cut -d' ' -f2)
	emitted=$(grep -o 'emitted [0-9]*' "$err" | head -n 1 | cut -d' ' -f2)
	if [ -z "$lost" ] || [ -z "$emitted" ]; then
		bad "$label: no counts in the summary: $(head -c 500 "$err")"
	elif [ "$lost" -eq 0 ] && [ "$emitted" -gt 0 ]; then
		ok "$label: 10 kHz on a 300-deep stack: $emitted records, 0 lost"
	else
		bad "$label: $lost of $((emitted + lost)) records lost at 10 kHz, 300 deep"
	fi
	# The deepest folded stack: 300 down() frames under <module>.
	deepest=$(awk '{ $NF = ""; n = gsub(/;down \(/, "&"); if (n > m) m = n } END { print m + 0 }' "$out")
	if [ "$deepest" -ge 300 ]; then
		ok "$label: the profile holds the whole stack ($deepest down() frames)"
	else
		bad "$label: deepest stack has $deepest down() frames, want 300: $(head -c 300 "$out")"
	fi
}

# One at a time: two recordings at 10 kHz would share the two CPUs.
JOBS=1 each_target check
finish
