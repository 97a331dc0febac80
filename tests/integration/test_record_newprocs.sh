#!/bin/bash
# record finds new processes from the kernel's events, not by polling /proc
# (issue 13): after its second look at /proc (bpfpy -v says "new processes
# from now on: exec and fork events"), a target of --subprocesses forks a
# child that never execs. The child must be sampled: its own function under
# its own pid in the --threads profile. With no more /proc scans, only the
# fork event can have found it. The record ends (SIGTERM: exit 0, output
# written) 1 s after it says it samples the child, not after a fixed 6 s:
# the child is found within milliseconds of its fork, and a second of it
# spinning is hundreds of samples.
source "$(dirname "$0")/lib.sh"
use_bpfpy

check() {
	local label=$2 d inner err out child i rec rc
	# A chroot target names its files inside the chroot (its own /tmp).
	if [ "$3" = / ]; then
		d=$(mktemp -d "$TMP/newprocs.XXXXXX") inner=$d
	else
		d=$(mktemp -d "$3/tmp/bpfpy-newprocs.XXXXXX") inner=${d#"$3"}
	fi
	start_py "$label" "$PYDIR/fork_child.py" "$inner/go" "$inner/child" ||
		{ bad "$label: $PY_OUT"; rm -rf "$d"; return; }
	err=$TMP/$label.newprocs.err out=$TMP/$label.newprocs.folded
	timeout 60 "$BPFPY" record -v --subprocesses -p "$PY_PID" -F 997 -d 40 --threads \
		-o "$out" 2>"$err" &
	rec=$!
	PIDS+=("$rec")
	for ((i = 0; i < 600; i++)); do
		grep -qs "exec and fork events" "$err" && break
		kill -0 "$rec" 2>/dev/null || break
		sleep 0.05
	done
	if ! grep -q "exec and fork events" "$err"; then
		bad "$label: record never switched to events: $(head -c 500 "$err")"
		kill -9 "$rec" "$PY_PID" 2>/dev/null
		rm -rf "$d"
		return
	fi
	: >"$d/go"
	if ! wait_file "$d/child" 30 "$PY_PID"; then
		bad "$label: the forked child never wrote $d/child"
		kill -9 "$rec" 2>/dev/null
	fi
	child=$(cat "$d/child" 2>/dev/null)
	# Sampled from its fork event: then a second of its samples, and TERM
	# (timeout passes it on) ends the record as -d would.
	if [ -n "$child" ]; then
		for ((i = 0; i < 600; i++)); do
			grep -qs "sampling pid $child " "$err" && break
			kill -0 "$rec" 2>/dev/null || break
			sleep 0.05
		done
		grep -qs "sampling pid $child " "$err" && sleep 1
	fi
	kill -TERM "$rec" 2>/dev/null
	wait_bounded "$rec" 60
	rc=$?
	[ -n "$child" ] && kill -9 "$child" 2>/dev/null
	kill -9 "$PY_PID" 2>/dev/null
	wait "$PY_PID" 2>/dev/null
	rm -rf "$d"
	if [ "$rc" != 0 ]; then
		bad "$label: record exited $rc: $(head -c 500 "$err")"
	elif [ -n "$child" ] && grep -q "^pid:$child;.*forked_child_spin" "$out"; then
		ok "$label: the fork of a target (pid $child, no exec) was found from its fork event and sampled"
	else
		bad "$label: no forked_child_spin under pid:${child:-?} in the profile: $(grep -c . "$out") lines; $(grep -i "pid $child\|sampling" "$err" | head -c 300)"
	fi
}

# Three targets at a time (was 2): the check is whether the child is in
# the profile at all, not how much of a CPU it got.
JOBS=3 each_target check
finish
