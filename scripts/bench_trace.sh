#!/bin/bash
# Overhead of bpfpy trace on a call-heavy program (recursive fib), side by
# side: no tracing, --threshold 500 (detaches once saturated; checked every
# --interval 0.2 s) and --threshold 0 (every hit, never detached), on 3.15
# with the function__entry/return USDT probes (--calls) and on pyenv 3.12
# with a uprobe on _PyFrame_ClearExceptCode, which runs once per Python
# call (when its frame is popped). Prints seconds and slowdown ratios.
# fib(22) x 10 is shorter than the detach delay, so the threshold column is
# the cost of the counting path; the overhead once detached, on a run of
# 10 s and more, is scripts/bench_observer.py's (docs/trace-deinstrumentation.md).
#
#   scripts/bench_trace.sh [N [REPS [RUNS]]]     (root; default 22 10 3)
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-build}
BPFPY=${BPFPY:-$PWD/$OUT/bpfpy}
N=${1:-22} REPS=${2:-10} RUNS=${3:-3}
PY=$PWD/tests/integration/py/trace_bench.py
TMP=$(mktemp -d /tmp/bpfpy-bench-trace.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# one_run LABEL ROOT MODE PROBE_ARGS...: prints the target's elapsed seconds
one_run() {
	local label=$1 root=$2 mode=$3 gin gout pid tpid=
	shift 3
	if [ "$root" = / ]; then gin=$TMP/go; gout=$gin; else
		mkdir -p "$root/tmp/bpfpy"; gin=/tmp/bpfpy/go-bench; gout=$root$gin; fi
	rm -f "$gout" "$TMP/py.out" "$TMP/tr.err"
	scripts/pyrun.sh "$label" "$PY" "$N" "$REPS" "$gin" >"$TMP/py.out" 2>&1 &
	pid=$!
	for _ in $(seq 1 200); do [ -s "$TMP/py.out" ] && break; sleep 0.05; done
	if [ "$mode" != none ]; then
		"$BPFPY" trace -p "$pid" --threshold "$mode" --interval 0.2 "$@" \
			>/dev/null 2>"$TMP/tr.err" &
		tpid=$!
		# Go only once the probes are in: loading the tracer can take
		# seconds on a busy machine, and a fixed sleep then timed a
		# program that ran before the attach (3.12 at threshold 0: x1.09).
		for _ in $(seq 1 600); do
			grep -q attached "$TMP/tr.err" 2>/dev/null && break
			kill -0 "$tpid" 2>/dev/null || break
			sleep 0.05
		done
	fi
	touch "$gout"
	wait "$pid"
	[ -n "$tpid" ] && { kill -INT "$tpid" 2>/dev/null; wait "$tpid"; }
	awk '/^elapsed/ { print $2 }' "$TMP/py.out"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

bench() { # LABEL ROOT PROBE_ARGS...
	local label=$1 root=$2 base t5 t0
	shift 2
	base=$(for _ in $(seq "$RUNS"); do one_run "$label" "$root" none; done | median)
	t5=$(for _ in $(seq "$RUNS"); do one_run "$label" "$root" 500 "$@"; done | median)
	t0=$(for _ in $(seq "$RUNS"); do one_run "$label" "$root" 0 "$@"; done | median)
	printf '%-10s %-44s %8.3f %8.3f (x%5.2f) %8.3f (x%6.2f)\n' "$label" "$*" "$base" "$t5" \
		"$(echo "$t5 / $base" | bc -l)" "$t0" "$(echo "$t0 / $base" | bc -l)"
}

targets=$(scripts/targets.sh --no-provision)
root_of() { awk -F'\t' -v l="$1" '$2 == l { print $3 }' <<<"$targets"; }
echo "fib($N) x $REPS, median of $RUNS runs, seconds (slowdown vs no tracing)"
printf '%-10s %-44s %8s %17s %18s\n' target probes none "threshold 500" "threshold 0"
[ -n "$(root_of sid-3.15)" ] && bench sid-3.15 "$(root_of sid-3.15)" --calls
[ -n "$(root_of pyenv-3.12)" ] && bench pyenv-3.12 / --uprobe python:_PyFrame_ClearExceptCode
