#!/bin/bash
# asyncio: record --async, dump --async (docs/async.md), on every target of
# scripts/targets.sh from 3.11 (JOBS at a time, default 3, was 2: every
# check is of a chain's shape or a share of the target's own samples, not
# of the CPU it gets); 3.8-3.10 must be refused with exit 2.
#
# py/async_gather.py: Task-1 gathers worker-1..3, each awaits its own child
# task fetch-K, which burns CPU in crunch(). check/check_async.py:
#   - record --async -d 1.5 (was 3, 1100-2700 samples there: the checks are
#     shares, and 500 samples or more judge them): >= 95% of the samples in
#     crunch read, root to
#     leaf, [task Task-1];main;[task worker-K];worker;[task fetch-K];fetch;
#     crunch with one K, and every K is seen (the running task and its first
#     awaiter read in the kernel at the sample, the awaiters above from the
#     task graph); >= 90% of the samples in a task have that first awaiter
#     with its frames from the kernel (the graph alone would give the same
#     chains here), none is without awaiters;
#   - record --async-mode all --clock snapshot -F 50 -d 1 (50 graph reads):
#     at each tick a sample of every waiting task (Task-1 in main, worker-K
#     in worker, ...), >= 90% of the reads;
#   - top --async: rows per task chain;
#   - dump --async (stopped) and --json: the seven tasks, who awaits whom,
#     at most one running, Task-1 suspended in main; text = JSON.
# py/async_shapes.py (dump --async): a TaskGroup's children under it, a
# three-deep chain (chain-a <- chain-b <- chain-c), an unnamed task (an int
# name on 3.12+, printed Task-N), an eager task (3.12+), a hostile name
# (escaped in the text, exact in the JSON), 10,000 pending tasks, a loop in
# a second thread; and record --async -d 1 of it: the loop thread's samples in
# spin() read [task thread-root];..;[task thread-leaf];..;spin (its loop's
# running task, not the main thread's). Then the gather program in a PID
# namespace of its own (pyenv-3.12).
. "$(dirname "$0")/lib.sh"

use_bpfpy
CHK=$CHECK/check_async.py
bpfpy() { timeout -s KILL 90 "$BPFPY" "$@"; }

minor_of() { local v=${1#3.}; echo "${v%%.*}"; }

one() {
	local version=$1 label=$2 f=$TMP/$2 minor rc
	minor=$(minor_of "$version")
	echo "== $label ($version)"
	if ((minor < 11)); then
		if ! start_py "$label" "$PYDIR/thread_names.py"; then
			bad "$label: target did not start"
			return
		fi
		bpfpy dump -p "$PY_PID" --async >"$f.dump" 2>"$f.err"
		rc=$?
		[[ $rc == 2 ]] && grep -q "needs CPython 3.11" "$f.err" &&
			ok "$label: dump --async refused (exit 2): $(head -c 120 "$f.err")" ||
			bad "$label: dump --async exit $rc, want 2: $(head -c 200 "$f.err")"
		bpfpy record -p "$PY_PID" --async -d 1 -o "$f.rec.txt" >"$f.err2" 2>&1
		rc=$?
		[[ $rc == 2 ]] && ok "$label: record --async refused (exit 2)" ||
			bad "$label: record --async exit $rc, want 2: $(head -c 200 "$f.err2")"
		kill -9 "$PY_PID" 2>/dev/null
		wait "$PY_PID" 2>/dev/null
		return
	fi
	if ! start_py "$label" "$PYDIR/async_gather.py"; then
		bad "$label: gather target did not start"
		return
	fi
	if bpfpy record -p "$PY_PID" --async -d 1.5 -o "$f.rec.txt" 2>"$f.rec.err"; then
		grep -E '^  async:' "$f.rec.err"
		"$CHECKPY" "$CHK" chains "$f.rec.txt" tasks=Task-1,worker-K,fetch-K leaf=crunch all_k=1,2,3
		fails=$((fails + $?))
		"$CHECKPY" "$CHK" kernel "$f.rec.err"
		fails=$((fails + $?))
	else
		bad "$label: record --async exited $?: $(head -c 300 "$f.rec.err")"
	fi
	if bpfpy record -p "$PY_PID" --async-mode all --clock snapshot -F 50 -d 1 -o "$f.all.txt" \
		2>"$f.all.err"; then
		"$CHECKPY" "$CHK" all "$f.all.txt" "$f.all.err"
		fails=$((fails + $?))
	else
		bad "$label: record --async-mode all exited $?: $(head -c 300 "$f.all.err")"
	fi
	# top --async without a terminal prints each refresh: the last one's
	# rows are task chains, the root's TOTAL% holding its tasks'.
	if bpfpy top -p "$PY_PID" --async -d 2.5 </dev/null >"$f.top" 2>"$f.top.err"; then
		"$CHECKPY" "$CHK" top "$f.top" root=Task-1 chain="Task-1 > worker-K > fetch-K"
		fails=$((fails + $?))
	else
		bad "$label: top --async exited $?: $(head -c 300 "$f.top.err")"
	fi
	if bpfpy dump -p "$PY_PID" --async >"$f.dump" 2>"$f.dump.err" &&
		bpfpy dump -p "$PY_PID" --async --json >"$f.json" 2>>"$f.dump.err"; then
		"$CHECKPY" "$CHK" gather "$f.dump" "$f.json"
		fails=$((fails + $?))
	else
		bad "$label: dump --async failed: $(head -c 300 "$f.dump.err")"
	fi
	not_stopped "$PY_PID" "$label"
	kill -9 "$PY_PID" 2>/dev/null
	wait "$PY_PID" 2>/dev/null

	if ! start_py "$label" "$PYDIR/async_shapes.py"; then
		bad "$label: shapes target did not start"
		return
	fi
	if bpfpy dump -p "$PY_PID" --async >"$f.sdump" 2>"$f.sdump.err" &&
		bpfpy dump -p "$PY_PID" --async --json >"$f.sjson" 2>>"$f.sdump.err"; then
		grep -E '^Stopped' "$f.sdump"
		"$CHECKPY" "$CHK" shapes "$f.sdump" "$f.sjson" minor="$minor"
		fails=$((fails + $?))
	else
		bad "$label: dump --async of the shapes failed: $(head -c 300 "$f.sdump.err")"
	fi
	if bpfpy record -p "$PY_PID" --async -d 1 -o "$f.srec.txt" 2>"$f.srec.err"; then
		"$CHECKPY" "$CHK" chains "$f.srec.txt" tasks=thread-root,thread-leaf leaf=spin min=0.9
		fails=$((fails + $?))
	else
		bad "$label: record --async of the shapes exited $?: $(head -c 300 "$f.srec.err")"
	fi
	kill -9 "$PY_PID" 2>/dev/null
	wait "$PY_PID" 2>/dev/null
}

JOBS=${JOBS:-3} each_target one

# In a PID namespace: PY_PID is unshare's child, the interpreter itself.
label=pyenv-3.12
if targets | awk -F'\t' -v l="$label" '$2 == l && $3 == "/" { f = 1 } END { exit !f }'; then
	echo "== ns-$label"
	if start_ns_py "$label" "$PYDIR/async_gather.py"; then
		if bpfpy record -p "$PY_PID" --async -d 1 -o "$TMP/ns.rec.txt" 2>"$TMP/ns.err"; then
			"$CHECKPY" "$CHK" chains "$TMP/ns.rec.txt" tasks=Task-1,worker-K,fetch-K leaf=crunch
			fails=$((fails + $?))
		else
			bad "ns-$label: record --async exited $?: $(head -c 300 "$TMP/ns.err")"
		fi
	else
		bad "ns-$label: target did not start: $(head -c 300 "$PY_OUT")"
	fi
	kill -9 "$NS_PID" "$PY_PID" 2>/dev/null
	wait "$NS_PID" 2>/dev/null
fi
finish
