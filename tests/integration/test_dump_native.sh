#!/bin/bash
# bpfpy dump --native on every target interpreter of scripts/targets.sh.
#
# Per target, tests/integration/py/dump_qsort.py holds two threads inside
# ctypes qsort Python callbacks: the main thread spinning in order_cb, a
# second one blocked in os.read inside wait_cb. Then:
#   - dump --native (text and --json) and a plain dump, checked by
#     check/dump_native.py: per thread the whole stack in true order,
#     root first <module>|threading -> sort_block -> ctypes/libffi ->
#     qsort* (libc.so.6) -> ... ctypes/libffi -> the callback, the native
#     chain whole down to _start / clone, the Python frames exactly the
#     plain dump's, the blocker's leaf in libc (its read)
#   - after each blocking dump no thread of the target is stopped or traced
#   - record --native --no-lines -d 2 of the same process (the in-kernel
#     unwinder): its stack through order_cb is the dump's, frame by frame
#   - the time the target was stopped, plain and --native (min/median of
#     5), and dump -v's cost of the native unwind within it, in the log
# Once: --native with --nonblocking is refused (exit 2).
# Targets run in parallel, JOBS at a time (default 3).
. "$(dirname "$0")/lib.sh"

JOBS=${JOBS:-3}
use_bpfpy

# stop_times PID [FLAGS]: five blocking dumps; the stopped time, min and
# median (the machine may be loaded: min is the cost).
stop_times() {
	local i
	for i in 1 2 3 4 5; do
		"$BPFPY" dump -p "$@" 2>/dev/null | sed -n 's/^Stopped the target for \([0-9.]*\) us\.$/\1/p'
	done | sort -g | awk '{v[NR]=$1} END {print v[1] "/" v[int((NR+1)/2)]}'
}

test_target() {
	local version=$1 label=$2 root=$3 pid out=$TMP/$2 rc
	echo "== $label ($version)"
	if ! start_py "$label" "$PYDIR/dump_qsort.py"; then
		bad "$label: dump_qsort.py did not start"
		return
	fi
	pid=$PY_PID
	"$BPFPY" dump -p "$pid" >"$out.plain" 2>"$out.plain.err" ||
		bad "$label: plain dump exited $?: $(head -c 300 "$out.plain.err")"
	"$BPFPY" dump -p "$pid" --native -v >"$out.native" 2>"$out.native.err"
	rc=$?
	[[ $rc == 0 ]] || bad "$label: dump --native exited $rc: $(head -c 500 "$out.native.err")"
	not_stopped "$pid" "$label dump --native"
	sed 's/^/    /' "$out.native.err"
	"$BPFPY" dump -p "$pid" --native --json >"$out.json" 2>"$out.json.err" ||
		bad "$label: dump --native --json exited $?: $(head -c 300 "$out.json.err")"
	not_stopped "$pid" "$label dump --native --json"
	"$BPFPY" record -p "$pid" -d 2 --native --no-lines -q >"$out.folded" 2>"$out.rec.err" ||
		bad "$label: record --native exited $?: $(head -c 300 "$out.rec.err")"
	"$CHECKPY" "$CHECK/dump_native.py" what="$label" native="$out.native" plain="$out.plain" \
		json="$out.json" record="$out.folded"
	fails=$((fails + $?))
	echo "time: $label: stopped us, min/median of 5: plain $(stop_times "$pid") --native $(stop_times "$pid" --native)"
	if ((fails)); then
		echo "--- dump --native of $label:"
		sed 's/^/    /' "$out.native"
	fi
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}

start=$(date +%s.%N)
"$BPFPY" dump -p $$ --native --nonblocking >/dev/null 2>"$TMP/usage.err"
rc=$?
if [[ $rc == 2 ]] && grep -q -- '--native needs the threads stopped' "$TMP/usage.err"; then
	ok "--native --nonblocking refused (exit 2): $(head -n 1 "$TMP/usage.err")"
else
	bad "--native --nonblocking: exit $rc, $(head -c 300 "$TMP/usage.err")"
fi
each_target test_target
echo "run time $(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)") s"
finish
