#!/bin/bash
# [gc] frames and record --exception (issue 30, items 1 and 2), on every
# target, with py/gc_exc.py (churn that collects, an except block, deep
# raises; it measures its own collection time with gc.callbacks, in CPU
# time). Three recordings per target, each to the program's exit:
#   - record -p (gc frames on, the default): the [gc] share of the samples
#     within the checker's documented tolerance of the program's measured
#     collection share, [gc] always the leaf over the program's own frames
#     (check/gc_exc_check.py); the summary's "[gc]: N samples" line;
#     convert of the raw gives the collapsed and pprof files byte for byte;
#   - record --exception: only samples under an [exception TYPE] leaf
#     ([gc] over it where a collection ran), KeyError inside handled(),
#     ValueError inside deep() or main(), none in churn(); the summary's
#     samples in flight (> 0, within the deep phase) and being handled
#     (KeyError's share of the ticks against the except block's measured
#     share); pprof's exception label (go tool pprof -tags) names KeyError;
#     convert of the raw gives the same collapsed and pprof bytes;
#   - record --no-gc (a shorter run): no [gc] frame. Then the checker's
#     gc mode is run on that recording and must fail: the [gc] checks can
#     fail, a recording without [gc] frames does not pass them.
. "$(dirname "$0")/lib.sh"
use_bpfpy

# one LABEL MODE BASE SECONDS FLAGS...: start gc_exc.py for SECONDS of CPU
# time, record it to its exit into BASE.{folded,raw,pb.gz}, check. Sets
# MEASURED; returns 1 when there is nothing to check.
one() {
	local label=$1 mode=$2 b=$3 secs=$4 rc summary=
	shift 4
	start_py "$label" "$PYDIR/gc_exc.py" "$secs" || { bad "$label: gc_exc.py did not start"; return 1; }
	timeout 60 "$BPFPY" record -p "$PY_PID" "$@" -o "$b.folded" -o "$b.raw" -o "$b.pb.gz" 2>"$b.err"
	rc=$?
	wait_bounded "$PY_PID" 30 2>/dev/null || kill -9 "$PY_PID" 2>/dev/null
	MEASURED=$(grep '^gc_share' "$PY_OUT")
	[[ $rc == 0 ]] || { bad "$label $mode: record exited $rc: $(tail -n 3 "$b.err")"; return 1; }
	[[ -n $MEASURED ]] || { bad "$label $mode: the program printed no gc_share: $(tail -c 300 "$PY_OUT")"; return 1; }
	if [[ $mode == exception ]]; then
		summary=$(sed -n 's/^  --exception: \([0-9]*\) samples with an exception in flight, \([0-9]*\) being handled; \([0-9]*\) ticks of threads without one not sampled.*/\1 \2 \3/p' "$b.err")
		[[ -n $summary ]] || { bad "$label: no --exception line in the summary: $(tail -n 5 "$b.err")"; return 1; }
	fi
	"$CHECKPY" "$CHECK/gc_exc_check.py" label="$label" mode="$mode" folded="$b.folded" \
		measured="$MEASURED" summary="$summary"
	fails=$((fails + $?))
	[[ $mode == nogc ]] && return 0
	for f in collapsed pprof; do
		local want=$b.folded
		[[ $f == pprof ]] && want=$b.pb.gz
		if "$BPFPY" convert "$b.raw" -f "$f" -o "$b.conv.$f" >/dev/null 2>&1 && cmp -s "$b.conv.$f" "$want"; then
			ok "$label $mode: convert -f $f of the raw is the recording's byte for byte"
		else
			bad "$label $mode: convert -f $f of the raw differs from the recording's"
		fi
	done
}

run_target() {
	local version=$1 label=$2 b=$TMP/$2 n
	echo "== $label ($version)"
	if one "$label" gc "$b.gc" 1.2; then
		if n=$(grep '^  \[gc\]: [0-9]* samples of a thread collecting garbage$' "$b.gc.err"); then
			ok "$label: summary: ${n#  }"
		else
			bad "$label: no [gc] line in the summary"
		fi
	fi
	if one "$label" exception "$b.exc" 1.2 --exception; then
		ok "$label: $(grep -- '--exception:' "$b.exc.err" | sed 's/^ *//')"
		if go tool pprof -tags "$b.exc.pb.gz" 2>/dev/null | grep -A3 '^ exception:' | grep -q 'KeyError'; then
			ok "$label: pprof label exception=KeyError (go tool pprof -tags)"
		else
			bad "$label: no exception=KeyError label in the pprof: $(go tool pprof -tags "$b.exc.pb.gz" 2>&1 | head -c 300)"
		fi
	fi
	if one "$label" nogc "$b.nogc" 0.6 --no-gc; then
		if "$CHECKPY" "$CHECK/gc_exc_check.py" label="$label" mode=gc folded="$b.nogc.folded" \
			measured="$MEASURED" >"$b.teeth" 2>&1; then
			bad "$label: the gc check passes a recording without [gc] frames: $(cat "$b.teeth")"
		else
			ok "$label: the gc check fails the --no-gc recording: $(grep -m1 FAIL "$b.teeth")"
		fi
	fi
}

JOBS=${JOBS:-2}
each_target run_target
finish
