#!/bin/bash
# record --clock offcpu / wall, --min-block-us, --gil and thread names, on
# every target of scripts/targets.sh (JOBS at a time, default 2). Root, real
# BPF, real interpreters. Checks are in check/check_offcpu.py.
#
# 1. py/offcpu_four.py: sleeper (time.sleep 10 ms, feeds a pipe), holder
#    (sleeps 50 ms holding a threading.Lock), waiter (blocks on that lock),
#    reader (os.read on the pipe), burner (pure Python). Each names its OS
#    thread, and prints every 100 ms how long it was blocked in its call and
#    its CPU time, with time.monotonic(): the program's own measure is the
#    difference of its lines nearest the recording's start and end (bpfpy's
#    end on CLOCK_MONOTONIC minus the recorded duration).
#    --clock offcpu --threads -d 2 (was 3: the fractions seen at 3 s were
#    within 0.03 of the program's, the bound is 0.2), per thread found BY
#    NAME:
#    - the reason named for it (sleep, sleep, lock, io) is >= 0.75 of its
#      off-CPU time other than GIL waits and preemption, and >= 0.2 of all
#      of it (the holder also waits for the lock, 0.01-0.1, when the waiter
#      holds it while it waits for the GIL). GIL waits and preemption come on top after each wake-up: the
#      program's own clock counts them inside its call, bpfpy names them
#      apart ([off-cpu: gil], [off-cpu: preempted]), and they grow with the
#      host's load (0.01-0.14 of a thread's off-CPU time at load 2-5, up to
#      0.57 at load 50 with the other builds here), so they are not held to
#      a share; a wrong reason would leave the named one near 0;
#    - the burner's off-CPU time is >= 0.9 GIL waits and preemption;
#    - each thread's off-CPU fraction (recorded ns / elapsed) is within 0.2
#      of what the program measured (1 - its CPU time / its window): the two
#      windows are not the same (the program's lines come every 100 ms and
#      bpfpy attaches and detaches in between), one block straddling each
#      end is lost (<= 50 ms of 2 s), and the program updates its CPU time
#      once per loop (<= 50 ms late). A wrong attribution (time of one
#      thread under another, or lost intervals) is ~0.5 off.
#    --clock wall: the same, plus each thread's total (on-CPU samples, each
#    1/RATE s, plus off-CPU ns) within 0.85..1.1 of the elapsed time, and
#    all threads' total within 0.85..1.1 of elapsed x threads: on-CPU time
#    is sampled at 1 kHz (2000 samples for a busy thread: +-2.2%), a block
#    open at the start is lost (<= 50 ms), blocks open at the end are
#    written up to it by the flush, and bpfpy's elapsed time also counts
#    its own detach and drain after the last sample.
#    --clock offcpu --min-block-us 30000 -f speedscope (one weight per
#    interval), -d 1 (about 45 intervals kept, 140 in the 3 s it was): every
#    interval kept is >= 30 ms, exactly, and the summary counts dropped ones
#    (the sleeper's and reader's 10 ms blocks: so the flag had something to
#    drop).
# 2. py/offcpu_gil.py: spinner (pure Python: holds the GIL) and hasher
#    (sha256 of 4 MiB: runs without the GIL, waits for it after each).
#    Each -d 1 (was 2: the hasher had ~600 samples without the GIL and
#    0.75 s of GIL waits, where one of each is wanted).
#    --clock cpu -f raw: the hasher has samples without the GIL (else the
#    --gil check below could not fail); with --gil every sample has
#    SAMPLE_GIL_HELD and the spinner is there. --clock offcpu --gil: every
#    interval is [off-cpu: gil], and the hasher has some: on every version
#    here (3.8-3.15, default builds) take_gil() sleeps on the GIL state's
#    pthread cond/mutex, a futex on a known address.
# 3. Names in dump, pprof labels and speedscope (one interpreter, below).
# Every wait for a target is for its "ready" line (lib.sh py_ready).
. "$(dirname "$0")/lib.sh"

use_bpfpy
CHK=$CHECK/check_offcpu.py

# Every bpfpy run is bounded, so a hang fails the test instead of blocking it.
bpfpy() { timeout -s KILL 60 "$BPFPY" "$@"; }

last_stats() { grep '^stats ' "$1" | tail -n 1; }

# record_four LABEL TAG EXT ARGS...: record py/offcpu_four.py (PY_PID,
# PY_OUT) with ARGS into $TMP/LABEL.TAG.EXT; $TMP/LABEL.TAG.end gets the
# CLOCK_MONOTONIC time bpfpy ended at, and the program has printed a stats
# line after it on return (bounded wait). Returns bpfpy's status.
record_four() {
	local label=$1 tag=$2 ext=$3 rc n i
	shift 3
	bpfpy record -p "$PY_PID" --threads "$@" -o "$TMP/$label.$tag.$ext" 2>"$TMP/$label.$tag.err"
	rc=$?
	# The program's stats carry time.monotonic(), the clock of bpfpy's
	# samples: the checker picks the lines around the recording by time.
	"$CHECKPY" -c 'import time; print(time.monotonic())' >"$TMP/$label.$tag.end"
	n=$(grep -c '^stats ' "$PY_OUT")
	for ((i = 0; i < 100; i++)); do
		(($(grep -c '^stats ' "$PY_OUT") > n)) && break
		sleep 0.05
	done
	sed 's/^/    /' "$TMP/$label.$tag.err"
	return $rc
}

one() {
	local version=$1 label=$2 root=$3 f
	echo "== $label ($version)"
	start_py "$label" "$PYDIR/offcpu_four.py" || { bad "$label: offcpu_four.py did not start"; return; }
	for clock in offcpu wall; do
		f=$TMP/$label.$clock
		if record_four "$label" "$clock" folded --clock "$clock" -d 2; then
			"$CHECKPY" "$CHK" four "$clock" "$f.folded" "$f.err" "$PY_OUT" "$(cat "$f.end")" | sed "s/^\(ok\|FAIL\|stat\): /\1: $label: /"
			fails=$((fails + PIPESTATUS[0]))
		else
			bad "$label: record --clock $clock failed: $(tail -n 3 "$f.err")"
		fi
	done
	if record_four "$label" min json --clock offcpu --min-block-us 30000 -d 1; then
		"$CHECKPY" "$CHK" minblock "$TMP/$label.min.json" 30000 | sed "s/^\(ok\|FAIL\|stat\): /\1: $label: /"
		fails=$((fails + PIPESTATUS[0]))
		n=$(sed -n 's/.* \([0-9]*\) under --min-block-us dropped.*/\1/p' "$TMP/$label.min.err")
		((${n:-0} > 0)) && ok "$label: summary counts $n blocks under --min-block-us" ||
			bad "$label: no blocks counted as dropped by --min-block-us"
	else
		bad "$label: record --min-block-us failed: $(tail -n 3 "$TMP/$label.min.err")"
	fi
	kill -9 "$PY_PID" 2>/dev/null
	wait "$PY_PID" 2>/dev/null

	start_py "$label" "$PYDIR/offcpu_gil.py" || { bad "$label: offcpu_gil.py did not start"; return; }
	local sp hs
	sp=$(sed -n '1s/.*spinner=\([0-9]*\).*/\1/p' "$PY_OUT")
	hs=$(sed -n '1s/.*hasher=\([0-9]*\).*/\1/p' "$PY_OUT")
	bpfpy record -p "$PY_PID" -d 1 -f raw -o "$TMP/$label.all.raw" 2>"$TMP/$label.all.err" &&
		bpfpy record -p "$PY_PID" -d 1 --gil -f raw -o "$TMP/$label.gil.raw" 2>"$TMP/$label.gil.err"
	if (($? == 0)); then
		"$CHECKPY" "$CHK" gilraw "$TMP/$label.all.raw" "$TMP/$label.gil.raw" "$sp" "$hs" | sed "s/^\(ok\|FAIL\|stat\): /\1: $label: /"
		fails=$((fails + PIPESTATUS[0]))
	else
		bad "$label: record --gil failed: $(tail -n 3 "$TMP/$label.all.err" "$TMP/$label.gil.err")"
	fi
	if bpfpy record -p "$PY_PID" -d 1 --clock offcpu --gil --threads -o "$TMP/$label.giloff.folded" 2>"$TMP/$label.giloff.err"; then
		"$CHECKPY" "$CHK" giloff "$TMP/$label.giloff.folded" "$hs" | sed "s/^\(ok\|FAIL\|stat\): /\1: $label: /"
		fails=$((fails + PIPESTATUS[0]))
	else
		bad "$label: record --clock offcpu --gil failed: $(tail -n 3 "$TMP/$label.giloff.err")"
	fi
	kill -9 "$PY_PID" 2>/dev/null
	wait "$PY_PID" 2>/dev/null
}

JOBS=${JOBS:-2} each_target one

# 3. The names and reasons in the outputs, on one interpreter: dump's
#    "  name: NAME" lines, pprof's labels (go tool pprof -tags) thread_name
#    and off_cpu_reason and its off-cpu sample type, speedscope's profile
#    names. Debian's 3.11: the host's own interpreter.
label=$(targets | awk -F'\t' '$2 == "debian-3.11" { print $2; exit }')
if [[ -z $label ]]; then
	label=$(targets | awk -F'\t' 'NR == 1 { print $2 }')
fi
echo "== names and labels ($label)"
if start_py "$label" "$PYDIR/offcpu_four.py"; then
	"$BPFPY" dump -p "$PY_PID" >"$TMP/names.dump" 2>&1
	for n in sleeper holder waiter reader burner; do
		grep -q "^  name: $n$" "$TMP/names.dump" && ok "dump names thread $n" ||
			bad "dump: no '  name: $n' line: $(head -c 400 "$TMP/names.dump")"
	done
	bpfpy record -q -p "$PY_PID" --clock wall -d 2 -o "$TMP/names.pb.gz" 2>"$TMP/names.err"
	if HOME=$TMP go tool pprof -tags "$TMP/names.pb.gz" >"$TMP/names.tags" 2>&1; then
		for want in "thread_name:" ": sleeper" "off_cpu_reason:" ": sleep" ": lock" ": io" ": gil"; do
			grep -q -- "$want" "$TMP/names.tags" && ok "pprof -tags shows '$want'" ||
				bad "pprof -tags lacks '$want': $(head -c 600 "$TMP/names.tags")"
		done
		HOME=$TMP go tool pprof -top -sample_index=off-cpu "$TMP/names.pb.gz" >"$TMP/names.top" 2>&1
		grep -q "off-cpu: lock" "$TMP/names.top" && ok "pprof -sample_index=off-cpu ranks [off-cpu: lock]" ||
			bad "pprof off-cpu -top: $(head -c 400 "$TMP/names.top")"
	else
		bad "go tool pprof -tags cannot read it: $(head -c 300 "$TMP/names.tags") $(tail -n 2 "$TMP/names.err")"
	fi
	bpfpy record -q -p "$PY_PID" --clock offcpu -d 1 -o "$TMP/names.json" 2>"$TMP/names.err"
	"$CHECKPY" -c 'import json, sys
names = [p["name"] for p in json.load(open(sys.argv[1]))["profiles"]]
missing = [n for n in ("sleeper", "holder", "waiter", "reader") if not any(x.startswith(n + ":") for x in names)]
print("ok: speedscope profile names start with the thread names" if not missing else "FAIL: speedscope names lack %s: %s" % (missing, names))
sys.exit(bool(missing))' "$TMP/names.json" || fails=$((fails + 1))
	kill -9 "$PY_PID" 2>/dev/null
	wait "$PY_PID" 2>/dev/null
else
	bad "$label: offcpu_four.py did not start"
fi

# Usage errors: the flags that go together, exit 2 before anything runs.
for args in "--min-block-us 100" "--clock snapshot --gil" "--clock offcpu --min-block-us -1" "--clock bogus"; do
	# shellcheck disable=SC2086
	"$BPFPY" record -p 1 $args >/dev/null 2>"$TMP/usage.err"
	rc=$?
	[[ $rc == 2 ]] && ok "record $args: exit 2 ($(head -n 1 "$TMP/usage.err"))" ||
		bad "record $args: exit $rc, want 2: $(head -c 300 "$TMP/usage.err")"
done
finish
