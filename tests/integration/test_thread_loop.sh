#!/bin/bash
# Issue 11 row 9: a target whose thread list loops (tstate->next pointing
# back, set with ctypes by tests/integration/py/thread_loop.py), on every
# interpreter. Before: dump stopped the target for seconds and printed the
# same threads thousands of times ("3584 more threads" for 2 threads).
# Now every reader of the list catches the loop (Brent's algorithm in
# bpf/frame_walker.h): dump fails with "thread list loops at 0x...", no
# thread printed twice, and record still samples the threads it can find.
. "$(dirname "$0")/lib.sh"
use_bpfpy
PYDIR=$ROOT_DIR/tests/integration/py

# ready_path LABEL NAME: sets rin (the ready file as the target names it)
# and rout (as we do). Run in this shell, not a subshell, so that CLEAN
# keeps the chroot directory for the exit trap.
ready_path() {
	local root d
	root=$(targets | awk -F'\t' -v l="$1" '$2 == l { print $3; exit }')
	if [ "$root" = / ]; then
		rin=$TMP/$2 rout=$TMP/$2
	else
		d=$(mktemp -d "$root/tmp/bpfpy-loop.XXXXXX")
		chmod 755 "$d"
		CLEAN+=("$d")
		rin=${d#"$root"}/$2 rout=$d/$2
	fi
}
CLEAN=()
trap 'cleanup; for d in "${CLEAN[@]}"; do rm -rf "$d"; done' EXIT

while IFS=$'\t' read -r ver label root py; do
	ready_path "$label" "ready-$label"
	"$ROOT_DIR/scripts/pyrun.sh" "$label" "$PYDIR/thread_loop.py" "$rin" >"$TMP/$label.out" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	if ! wait_file "$rout" 20 "$pid"; then
		if grep -q '^skip:' "$TMP/$label.out"; then
			ok "$label: $(cat "$TMP/$label.out")"
		else
			bad "$label: target not ready: $(head -3 "$TMP/$label.out")"
		fi
		continue
	fi
	t0=$(date +%s%N)
	timeout 30 "$BPFPY" dump -p "$pid" >"$TMP/$label.dump" 2>"$TMP/$label.dump.err"
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	lines=$(wc -l <"$TMP/$label.dump")
	if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q 'thread list loops at 0x[0-9a-f]*' "$TMP/$label.dump.err" &&
		[ "$lines" -lt 20 ]; then
		ok "$ver dump: exit $rc in $ms ms, $lines lines: $(cat "$TMP/$label.dump.err")"
	else
		bad "$ver dump: rc $rc, $lines lines, $ms ms: $(head -c 300 "$TMP/$label.dump.err")"
	fi
	timeout 30 "$BPFPY" dump --nonblocking -p "$pid" >/dev/null 2>"$TMP/$label.nb.err"
	grep -q 'thread list loops at' "$TMP/$label.nb.err" && ok "$ver dump --nonblocking reports the loop" ||
		bad "$ver dump --nonblocking: $(head -c 300 "$TMP/$label.nb.err")"
	# The loop sits behind the main thread: record finds both threads
	# before it, and samples the spinning one.
	timeout 30 "$BPFPY" record -p "$pid" -d 1 -q -f raw -o "$TMP/$label.raw" 2>"$TMP/$label.rec.err"
	rc=$?
	n=$(awk -v p="$pid" '!/^#/ && $2 == p' "$TMP/$label.raw" 2>/dev/null | grep -c loop_main)
	[ "$rc" = 0 ] && [ "$n" -gt 0 ] && ok "$ver record: $n samples in loop_main" ||
		bad "$ver record: rc $rc, $n samples: $(head -c 300 "$TMP/$label.rec.err")"
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
done < <(targets)
rows_file thread_loop
printf '%s\t%s\t%s\n' hostile "a target whose tstate->next points to itself (ctypes), every interpreter: blocking and non-blocking dump, record" \
	"$([ "$fails" -eq 0 ] && echo "dump exits 1 'thread list loops at 0x…' at once, printing no repeated thread; record still samples the other thread" || echo "FAILED ($fails checks)")" >>"$ROWS"
finish
