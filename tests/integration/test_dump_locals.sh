#!/bin/bash
# bpfpy dump --locals on every target interpreter of scripts/targets.sh.
#
# py/locals.py blocks in a function holding a local of every kind the dump
# shows by value (int small and past 64 bits, an int too large to show,
# float, str with control bytes and non-ASCII, bytes with NUL, None, bools),
# a closure's cell, a 10000-character string (cut at 120 code points), a
# list and a function (shown by type), a class named "int" and a str
# subclass (shown by type: only exact built-in types are read), called from
# a function compiled at run time with 70 locals (64 shown, 6 counted).
# Each target is dumped four ways: text and --json, blocking and
# --nonblocking; check/check_locals.py compares every value with what the
# program holds. After each blocking dump no thread is stopped or traced.
# --locals with --async is refused as bad usage (exit 2).
. "$(dirname "$0")/lib.sh"

JOBS=${JOBS:-3}
use_bpfpy

test_target() {
	local version=$1 label=$2 root=$3 fmt mode flags out rc
	echo "== $label ($version)"
	if ! start_py "$label" "$PYDIR/locals.py"; then
		bad "$label: locals.py did not start"
		return
	fi
	for fmt in text json; do
		for mode in blocking nonblocking; do
			flags=(--locals)
			[[ $fmt == json ]] && flags+=(--json)
			[[ $mode == nonblocking ]] && flags+=(--nonblocking)
			out=$TMP/$label.$fmt.$mode
			"$BPFPY" dump -p "$PY_PID" "${flags[@]}" >"$out" 2>"$out.err"
			rc=$?
			if [[ $rc != 0 ]]; then
				bad "$label: dump ${flags[*]} exited $rc: $(head -c 500 "$out.err")"
				continue
			fi
			[[ $mode == blocking ]] && not_stopped "$PY_PID" "$label dump ${flags[*]}"
			"$CHECKPY" "$CHECK/check_locals.py" label="$label $mode" version="$version" \
				fmt="$fmt" out="$out"
			fails=$((fails + $?))
		done
	done
	"$BPFPY" dump -p "$PY_PID" --locals --async >/dev/null 2>"$TMP/$label.async.err"
	rc=$?
	if [[ $rc == 2 ]] && grep -q "not with --locals" "$TMP/$label.async.err"; then
		ok "$label: --locals --async refused (exit 2)"
	else
		bad "$label: --locals --async exited $rc: $(head -c 300 "$TMP/$label.async.err")"
	fi
	kill -9 "$PY_PID" 2>/dev/null
	wait "$PY_PID" 2>/dev/null
}

each_target test_target
finish
