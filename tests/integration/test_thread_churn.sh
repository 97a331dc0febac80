#!/bin/bash
# Issue 28: threads that live for one request. On every interpreter, two
# programs of tests/integration/py/churn.py, each recorded from its start
# (`record -F 997 -- CMD`) for 2 s of churn:
#   server   http.server.ThreadingHTTPServer, a thread per request (JSON and
#            hashing), loaded by a client process of its own
#   futures  a concurrent.futures executor of 4 threads per batch of tasks
# tests/integration/check/churn_check.py checks each: the summary's ticks
# add up exactly (written + errors + without a thread state + dropped, and
# each part by cause), the threads the kernel saw born are those the target
# started, errors stay under a generous bound, no sample of a thread after
# its body ended shows the body's frames (which only a freed or stale
# thread state could give), and handle_work's share of ticks is the share
# of CPU the target measured in it (the checker's header gives the
# tolerances). The server runs with PYTHONMALLOC=debug, whose allocator
# fills freed memory with 0xDD: a sample read through a freed thread state
# then fails as an error instead of passing for a stack. Before the thread
# hooks (bpf/thread_watch.bpf.h) the same runs had 1-2.5% errors and an
# empty stack in 10-20% of samples.
. "$(dirname "$0")/lib.sh"
use_bpfpy

one() {
	local ver=$1 label=$2 mode b rc alloc
	for mode in server futures; do
		b=$TMP/$label.$mode
		alloc=
		[ "$mode" = server ] && alloc=debug
		PYTHONMALLOC=$alloc timeout 90 "$BPFPY" record -F 997 -o "$b.raw" -- \
			"$ROOT_DIR/scripts/pyrun.sh" "$label" "$PYDIR/churn.py" "$mode" 2 \
			>"$b.out" 2>"$b.err"
		rc=$?
		if [ "$rc" != 0 ] || [ ! -s "$b.raw" ]; then
			bad "$ver ($label) $mode: record exit $rc: $(tail -n 3 "$b.err")"
			continue
		fi
		"$CHECKPY" "$CHECK/churn_check.py" what="$ver ($label) $mode" err="$b.err" \
			out="$b.out" raw="$b.raw" || fails=$((fails + $?))
	done
}
JOBS=2 each_target one
finish
