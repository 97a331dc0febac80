#!/bin/bash
# bpfpy dump on every target interpreter of scripts/targets.sh.
#
# Per target, three programs of tests/integration/py/ are started:
#   shapes.py  one thread per stack shape: nested call chain, generator,
#              method, non-ASCII function name, code compiled at run time as
#              "made_up.py", coroutine under asyncio (main thread), reporter
#   deep.py    recursion 1000 deep
#   three.py   a 3-frame process
# and each is dumped four ways: text and --json (parsed with python3's json),
# blocking (default) and --nonblocking. Every frame of our own code must
# match exactly: name (qualname Class.method on 3.11+, co_name before), file,
# line. The lines are computed from the program source: the "# L:key" marker
# comments, the innermost def around a marker (via ast) gives the name. The
# threading.py frames at the bottom of each thread are checked exactly too
# (names, and lines found in that interpreter's own threading.py); the
# asyncio frames between the coroutine and main() by their file only.
# Thread ids: the program prints every thread's native id and pthread id;
# the dump must show the same set, and the same as /proc/PID/task.
# deep.py: all 1003 frames shown with the default depth; with --max-depth 100
# exactly 100 leaf-side frames and the truncation reported.
# After every blocking dump no thread of the target is in state 't' and none
# has a tracer. The "Stopped the target for X us" of the 3-frame and the
# 1000-frame process is printed in the log per version.
#
# Targets run in parallel, JOBS at a time (default 3).
# The checker, check/check_dump.py, parses a dump (text or JSON) and compares
# it with what the program's source says.
. "$(dirname "$0")/lib.sh"

JOBS=${JOBS:-3}
use_bpfpy # one build for the whole run, even if the tree is rebuilt meanwhile

# dump_check LABEL VERSION ROOT PROG PID READY [MAXDEPTH]: the four dumps.
dump_check() {
	local label=$1 version=$2 root=$3 prog=$4 pid=$5 ready=$6 maxdepth=${7:-0}
	local shown=$PYDIR/$prog.py fmt mode flags out rc tasks
	[[ $root != / ]] && shown=/tmp/bpfpy/$prog.py
	for fmt in text json; do
		for mode in blocking nonblocking; do
			flags=()
			[[ $fmt == json ]] && flags+=(--json)
			[[ $mode == nonblocking ]] && flags+=(--nonblocking)
			((maxdepth)) && flags+=(--max-depth "$maxdepth")
			out=$TMP/$label.$prog.$fmt.$mode.$maxdepth
			tasks=$(ls /proc/"$pid"/task | paste -sd,)
			"$BPFPY" dump -p "$pid" "${flags[@]}" >"$out" 2>"$out.err"
			rc=$?
			if [[ $rc != 0 ]]; then
				bad "$label $prog: dump ${flags[*]} exited $rc: $(head -c 500 "$out.err")"
				continue
			fi
			[[ $mode == blocking ]] && not_stopped "$pid" "$label $prog dump ${flags[*]}"
			"$CHECKPY" "$CHECK/check_dump.py" label="$label" version="$version" root="$root" \
				prog="$prog" src="$PYDIR/$prog.py" shown="$shown" out="$out" fmt="$fmt" \
				mode="$mode" pid="$pid" ready="$ready" tasks="$tasks" maxdepth="$maxdepth"
			rc=$?
			fails=$((fails + rc))
		done
	done
}

# stop_times LABEL PROG PID: five more blocking dumps; the stopped time,
# min and median, for the log (the machine may be loaded: min is the cost).
stop_times() {
	local i us=()
	for i in 1 2 3 4 5; do
		us+=("$("$BPFPY" dump -p "$3" 2>/dev/null | sed -n 's/^Stopped the target for \([0-9.]*\) us\.$/\1/p')")
	done
	echo "time: $1: $2: stopped us min/median of 5: $(printf '%s\n' "${us[@]}" | sort -g | awk '{v[NR]=$1} END {print v[1] "/" v[int((NR+1)/2)]}')"
}

# One target: start the three programs, dump them, kill them (each_target
# runs it in a subshell; its exit status is its number of failures).
test_target() {
	local version=$1 label=$2 root=$3 prog pid ready
	echo "== $label ($version)"
	for prog in three deep shapes; do
		if ! start_py "$label" "$PYDIR/$prog.py"; then
			bad "$label: $prog.py did not start"
			continue
		fi
		pid=$PY_PID
		ready=$(head -n 1 "$PY_OUT")
		dump_check "$label" "$version" "$root" "$prog" "$pid" "$ready"
		[[ $prog == deep ]] && dump_check "$label" "$version" "$root" "$prog" "$pid" "$ready" 100
		[[ $prog == three || $prog == deep ]] && stop_times "$label" "$prog" "$pid"
		kill -9 "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
}

start=$(date +%s.%N)
each_target test_target
mapfile -t tlines < <(targets)
echo
echo "== blocking dump, time the target was stopped (us, min/median of 5), per version"
for tl in "${tlines[@]}"; do
	IFS=$'\t' read -r version label root py <<<"$tl"
	printf '  %-12s %-8s 3 frames: %20s us   1003 frames: %20s us\n' "$label" "$version" \
		"$(grep -h "^time: $label: three:" "$TMP/log.$label" | awk '{print $NF}')" \
		"$(grep -h "^time: $label: deep:" "$TMP/log.$label" | awk '{print $NF}')"
done
echo "run time $(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)") s"
finish
