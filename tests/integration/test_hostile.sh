#!/bin/bash
# A hostile target: py/hostile_frames.py (CPython 3.12) corrupts its own
# frames and code objects with ctypes (a frame linked to itself, two frames
# linked to each other, a link into unmapped memory, a code object whose
# qualname is a wild pointer, whose filename is a str claiming 2**60
# characters and whose line table a bytes claiming 2**62 bytes), then keeps
# running. Every mode of bpfpy is pointed at it:
#   dump, dump --nonblocking, dump --json, record (cpu clock), record
#   --clock wall --idle
# Checked for each: it ends (under a hard timeout: a loop would hit it),
# exits 0, names every fault (frame cycle, frame unreadable, truncated,
# <unknown>, an ellipsis-capped filename), stays under 200 MB of RSS
# (/usr/bin/time -v), and the target is still alive and still counting.
# Rows for the table in SECURITY.md go to build/hardening/hostile.tsv.
. "$(dirname "$0")/lib.sh"

rows_file hostile
RSS_MAX_KB=$((200 * 1024))
use_bpfpy
[ -x /usr/bin/time ] || { echo "skip: /usr/bin/time missing"; exit 77; }
label=$(targets | awk -F'\t' '$1 ~ /^3\.12\./ {print $2; exit}')
[ -n "$label" ] || { echo "skip: no 3.12 target"; exit 77; }

row() { printf 'hostile\t%s\t%s\n' "$1" "$2" >> "$ROWS"; }

start_py "$label" "$PYDIR/hostile_frames.py" "$TMP/progress"
rc=$?
grep -q '^skip' "$PY_OUT" && { cat "$PY_OUT"; exit 77; }
((rc == 0)) || finish
pid=$(awk '/^ready/ {print $2}' "$PY_OUT")
[ "$pid" = "$PY_PID" ] || { bad "ready line names pid '$pid', not $PY_PID: $(cat "$PY_OUT")"; finish; }

progress() { cat "$TMP/progress" 2>/dev/null || echo 0; }

# run NAME TIMEOUT CMD...: runs under /usr/bin/time -v with a hard timeout;
# sets RC, OUTF (stdout), ERRF (stderr), RSS (kB).
run() {
	local name=$1 limit=$2
	shift 2
	OUTF=$TMP/$name.out ERRF=$TMP/$name.err
	timeout -s KILL "$limit" /usr/bin/time -v -o "$TMP/$name.time" "$@" > "$OUTF" 2> "$ERRF"
	RC=$?
	RSS=$(awk -F': ' '/Maximum resident/ {print $2}' "$TMP/$name.time" 2>/dev/null)
	RSS=${RSS:-0}
}

# expect NAME PATTERN WHAT: the output (stdout+stderr) of run NAME has PATTERN.
expect() {
	if grep -qa -- "$2" "$TMP/$1.out" "$TMP/$1.err"; then ok "$1: $3"; else bad "$1: no $3"; fi
}

check_run() { # name, description of the faults it must survive
	local name=$1 what=$2 p0=$3 p1 moved=0
	p1=$(progressed_since progress "$p0") && moved=1
	if [ "$RC" -eq 0 ]; then ok "$name: exit 0"; else bad "$name: exit $RC (137 = killed by the timeout: a loop)"; sed 's/^/   /' "$ERRF" | tail -n 5; fi
	if [ "$RSS" -gt 0 ] && [ "$RSS" -lt "$RSS_MAX_KB" ]; then ok "$name: max RSS ${RSS} kB"; else bad "$name: max RSS ${RSS} kB"; fi
	if kill -0 "$pid" 2>/dev/null && ((moved)); then
		ok "$name: target alive, progress $p0 -> $p1"
	else
		bad "$name: target dead or stuck (progress $p0 -> $p1)"
	fi
	if [ "$RC" -eq 0 ] && [ "$RSS" -lt "$RSS_MAX_KB" ]; then
		row "$what" "exit 0, faults reported, max RSS $((RSS / 1024)) MB, target kept running"
	else
		row "$what" "FAILED: exit $RC, max RSS $((RSS / 1024)) MB"
	fi
}

# counting: the target has published its first count (a file only it writes)
wait_file "$TMP/progress" || { bad "target never published its progress"; finish; }
faults="self cycle, 2-cycle, wild previous, wild co_qualname, 2**60-char co_filename, 2**62-byte co_linetable"

p0=$(progress)
run dump 30 "$BPFPY" dump -p "$pid"
expect dump 'frame cycle' "self-cycle reported as 'frame cycle'"
expect dump 'frame unreadable' "wild previous reported as 'frame unreadable'"
expect dump 'truncated at 1024' "2-cycle cut at the depth bound"
expect dump '<unknown> (huge_filename' "wild qualname shown as <unknown>, huge filename read"
expect dump '…)' "huge filename capped with an ellipsis"
n=$(grep -ao 'huge_filename[^)]*' "$TMP/dump.out" | head -n 1 | wc -c)
if [ "$n" -le 4100 ]; then ok "dump: filename capped at $n bytes"; else bad "dump: filename of $n bytes"; fi
if grep -aq . "$TMP/dump.out" && iconv -f UTF-8 -t UTF-8 "$TMP/dump.out" > /dev/null 2>&1; then
	ok "dump: output is valid UTF-8"
else
	bad "dump: output is not valid UTF-8"
fi
check_run dump "dump (ptrace stop) of a target with $faults" "$p0"

p0=$(progress)
run nonblocking 30 "$BPFPY" dump --nonblocking -p "$pid"
expect nonblocking 'frame cycle' "self-cycle reported"
expect nonblocking 'frame unreadable' "wild previous reported"
check_run nonblocking "dump --nonblocking, same target" "$p0"

p0=$(progress)
run json 30 "$BPFPY" dump --json -p "$pid"
if /usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/json.out" 2>/dev/null; then
	ok "json: parses"
else
	bad "json: does not parse"
fi
check_run json "dump --json, same target (output still parses as JSON)" "$p0"

p0=$(progress)
run record_cpu 40 "$BPFPY" record -p "$pid" -d 2 -f collapsed
expect record_cpu 'huge_filename' "the spinning thread's corrupted code object sampled"
expect record_cpu 'errors' "summary printed"
check_run record_cpu "record -d 2 (cpu clock, in-kernel walker), same target" "$p0"

p0=$(progress)
run record_wall 40 "$BPFPY" record -p "$pid" -d 2 --clock wall --idle -f collapsed
expect record_wall 'cycle2_inner' "the 2-cycle thread sampled (truncated)"
expect record_wall 'errors' "summary printed"
check_run record_wall "record -d 2 --clock wall --idle (BPF task iterator), same target" "$p0"
grep -a 'errors\|ticks\|cycle\|unreadable' "$TMP/record_wall.err" | head -n 5

finish
