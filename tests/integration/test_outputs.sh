#!/bin/bash
# Everything bpfpy writes (issue 11 rows 5, 6, 7, 12):
#   row 5: a target (py/hostile_names.py, 3.12 and 3.15) whose qualname,
#     filename and comm hold ESC/OSC/BEL/CR/LF and a forged thread block:
#     dump, record (folded on stdout and its summary) and trace (summary and
#     collapsed) print no raw control byte, no forged "Thread" line, and the
#     escaped name;
#   row 6: a FIFO planted at the -o path by nobody in a sticky directory:
#     refused without --force and with it (exit 2), bounded; our own FIFO
#     without a reader: refused at once with --force; with a reader: written;
#   row 7: oracle --json / record -o onto a symlink nobody planted in a
#     sticky directory: refused, the root-owned file it points to untouched;
#   row 12: -o a symlink to /proc/self/fd/1 with --force: the profile goes
#     to stdout and the link stays a link;
#   and go tool pprof -top still reads record's pprof output.
# Rows for SECURITY.md's table go to build/hardening/outputs.tsv.
. "$(dirname "$0")/lib.sh"

PYDIR=$ROOT_DIR/tests/integration/py
rows_file outputs
use_bpfpy
row() { printf 'outputs\t%s\t%s\n' "$1" "$2" >>"$ROWS"; }

# raw_ctl FILE: the C0 controls (but LF), DEL, and the C1 ones that FILE holds, as hex.
raw_ctl() { LC_ALL=C tr -d '\n' <"$1" | LC_ALL=C grep -aoP '[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]' | od -An -tx1 | tr -s ' \n' ' '; }
ESCAPED='\x1b[2J\x1b]0;owned\x07\x0d\x0aThread 1 (GIL held):\x0a    sshd_auth (/etc/shadow:1)\\'
ESCAPED_FOLDED='\x1b[2J\x1b]0:owned\x07\x0d\x0aThread 1 (GIL held):\x0a    sshd_auth (/etc/shadow:1)\\'

# text_ok NAME FILE PATTERN: FILE is clean text with the escaped name.
text_ok() {
	local name=$1 f=$2 want=$3 c
	c=$(raw_ctl "$f")
	[ -z "$c" ] && ok "$name: no raw control byte" || bad "$name: raw control bytes:$c"
	if grep -aqE '^ *(Thread 1 \(GIL held\):|sshd_auth \(/etc/shadow:1\))' "$f"; then
		bad "$name: a forged line: $(grep -aE '^ *(Thread 1 |sshd_auth)' "$f" | head -n 2)"
	else
		ok "$name: no forged Thread/frame line"
	fi
	grep -aqF -- "$want" "$f" && ok "$name: escaped name present" ||
		bad "$name: no escaped name: $(head -c 300 "$f")"
}

# start_target LABEL: runs py/hostile_names.py, waits for the fresh file it
# writes (its own readiness signal), sets HPID.
start_target() {
	local label=$1 root=$2 dir rel
	# A chroot target writes inside its root; a host one in our own $TMP.
	if [ "$root" = / ]; then
		dir=$(mktemp -d "$TMP/ready.XXXXXX")
	else
		dir=$(mktemp -d "$root/tmp/bpfpy-outputs.XXXXXX")
	fi
	rel=${dir#"${root%/}"}
	CLEAN_DIRS+=("$dir")
	"$ROOT_DIR/scripts/pyrun.sh" "$label" "$PYDIR/hostile_names.py" "$rel/ready" \
		>"$TMP/$label.py.out" 2>&1 &
	HPID=$!
	PIDS+=("$HPID")
	for _ in $(seq 1 300); do
		[ -s "$dir/ready" ] && return 0
		kill -0 "$HPID" 2>/dev/null || break
		sleep 0.05
	done
	bad "$label: target did not start: $(cat "$TMP/$label.py.out")"
	return 1
}
CLEAN_DIRS=()
trap 'for p in "${PIDS[@]}"; do { kill -9 "$p" && wait "$p"; } 2>/dev/null; done; rm -rf "$TMP" "${CLEAN_DIRS[@]}"' EXIT

# --- row 5: escape sequences in target names --------------------------------
ran=0
for want in 3.12 3.15; do
	IFS=$'\t' read -r ver label root py < <(targets | awk -F'\t' -v w="$want" 'index($1, w ".") == 1' | head -n 1)
	[ -n "${label:-}" ] || { echo "note: no $want target"; continue; }
	start_target "$label" "$root" || continue
	ran=$((ran + 1))
	if [ "$want" = 3.12 ]; then probe=(--uprobe libpython3.12:PyObject_Repr); else probe=(--usdt python:function__entry); fi
	timeout -s KILL 60 "$BPFPY" dump -p "$HPID" >"$TMP/d.out" 2>"$TMP/d.err"
	rc=$?
	[ $rc -eq 0 ] && ok "$label dump: exit 0" || bad "$label dump: exit $rc: $(head -c 300 "$TMP/d.err")"
	text_ok "$label dump" "$TMP/d.out" "$ESCAPED"
	n=$(grep -ac '^Thread ' "$TMP/d.out")
	[ "$n" -eq 1 ] && ok "$label dump: 1 Thread line for 1 thread" || bad "$label dump: $n Thread lines"
	grep -aqF 'ev\x1b[1mil\x07' "$TMP/d.out" && ok "$label dump: comm escaped" || bad "$label dump: comm: $(head -n 1 "$TMP/d.out")"
	timeout -s KILL 60 "$BPFPY" record -p "$HPID" -d 1 -F 200 >"$TMP/r.out" 2>"$TMP/r.err"
	rc=$?
	[ $rc -eq 0 ] && ok "$label record: exit 0" || bad "$label record: exit $rc: $(head -c 300 "$TMP/r.err")"
	text_ok "$label record (folded on stdout)" "$TMP/r.out" "$ESCAPED_FOLDED"
	text_ok "$label record (summary)" "$TMP/r.err" 'ev\x1b[1mil\x07'
	timeout -s KILL 60 "$BPFPY" trace -p "$HPID" -d 1 "${probe[@]}" >"$TMP/t.out" 2>"$TMP/t.err"
	rc=$?
	[ $rc -eq 0 ] && ok "$label trace: exit 0" || bad "$label trace: exit $rc: $(head -c 300 "$TMP/t.err")"
	text_ok "$label trace (summary)" "$TMP/t.out" "$ESCAPED"
	timeout -s KILL 60 "$BPFPY" trace -p "$HPID" -d 1 -f folded "${probe[@]}" >"$TMP/tc.out" 2>"$TMP/tc.err"
	rc=$?
	[ $rc -eq 0 ] && ok "$label trace -f folded: exit 0" || bad "$label trace -f folded: exit $rc: $(head -c 300 "$TMP/tc.err")"
	text_ok "$label trace (collapsed)" "$TMP/tc.out" "$ESCAPED_FOLDED"
	text_ok "$label trace (stderr)" "$TMP/tc.err" 'ev\x1b[1mil\x07'
	if [ -z "$(cat "$TMP"/{d,r,t,tc}.out "$TMP"/{r,tc}.err | raw_ctl /dev/stdin)" ] && ! grep -aqE '^ *Thread 1 \(GIL' "$TMP"/{d,r,t,tc}.out; then
		row "target names with ESC/OSC/BEL/CR/LF and a forged thread block (CPython $ver): dump, record, trace text" 'escaped as \xNN, one line per item, no forged line'
	else
		row "target names with control bytes (CPython $ver)" "FAILED: raw control bytes or a forged line"
	fi
	{ kill -9 "$HPID" && wait "$HPID"; } 2>/dev/null
done
[ $ran -gt 0 ] || bad "no 3.12 or 3.15 target ran"

# A target for the output rows: any 3.12 (or the first) interpreter.
IFS=$'\t' read -r ver label root py < <(targets | awk -F'\t' 'index($1, "3.12.") == 1' | head -n 1)
[ -n "${label:-}" ] || IFS=$'\t' read -r ver label root py < <(targets | head -n 1)
start_target "$label" "$root" || finish

# --- row 6: a FIFO at the -o path --------------------------------------------
chmod 755 "$TMP"
mkdir -m 1777 "$TMP/sticky"
setpriv --reuid=nobody --regid=nogroup --clear-groups mkfifo "$TMP/sticky/out.folded"
[ -p "$TMP/sticky/out.folded" ] || bad "nobody could not mkfifo in the sticky dir"
for force in "" --force; do
	t0=$SECONDS
	timeout -s KILL 30 "$BPFPY" record -p "$HPID" -d 1 -o "$TMP/sticky/out.folded" $force >/dev/null 2>"$TMP/f.err"
	rc=$?
	[ $rc -eq 2 ] && ok "planted FIFO, record ${force:-without --force}: exit 2 after $((SECONDS - t0)) s: $(head -n 1 "$TMP/f.err")" ||
		bad "planted FIFO, record ${force:-without --force}: exit $rc (137: hung): $(head -n 1 "$TMP/f.err")"
	row "a FIFO planted by another user at the -o path in a sticky dir, record ${force:-without --force}" \
		"$([ $rc -eq 2 ] && echo "refused at once, exit 2$([ -n "$force" ] && echo ' (protected_fifos rule)')" || echo "FAILED: exit $rc")"
done
mkfifo "$TMP/own.folded"
timeout -s KILL 30 "$BPFPY" record -p "$HPID" -d 1 -o "$TMP/own.folded" --force >/dev/null 2>"$TMP/f2.err"
rc=$?
grep -q 'no process reads' "$TMP/f2.err" && [ $rc -eq 2 ] && ok "own FIFO, no reader, --force: exit 2, no hang" ||
	bad "own FIFO without a reader: exit $rc: $(head -n 1 "$TMP/f2.err")"
row "-o our own FIFO with no reader, --force" "$([ $rc -eq 2 ] && echo 'refused at once (O_NONBLOCK: ENXIO), exit 2' || echo "FAILED: exit $rc")"
# The reader opens without blocking and then says so in a fresh file of its
# own; it reads until the writer has come and gone (bounded: 60 s).
timeout -s KILL 60 python3 -c '
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)
open(sys.argv[2], "w").close()
data, deadline = b"", time.monotonic() + 55
while time.monotonic() < deadline:
    try:
        chunk = os.read(fd, 65536)
    except BlockingIOError:
        chunk = None
    if chunk:
        data += chunk
    elif chunk == b"" and data:
        break
    else:
        time.sleep(0.02)
open(sys.argv[3], "wb").write(data)
' "$TMP/own.folded" "$TMP/reader.ready" "$TMP/fifo.read" &
reader=$!
for _ in $(seq 1 300); do [ -e "$TMP/reader.ready" ] && break; sleep 0.05; done
timeout -s KILL 60 "$BPFPY" record -q -p "$HPID" -d 1 -o "$TMP/own.folded" --force 2>"$TMP/f3.err"
rc=$?
wait "$reader"
[ $rc -eq 0 ] && grep -q 'owned' "$TMP/fifo.read" && ok "own FIFO with a reader, --force: the reader got $(wc -l <"$TMP/fifo.read") folded lines" ||
	bad "own FIFO with a reader: exit $rc, read $(wc -c <"$TMP/fifo.read") bytes: $(head -n 1 "$TMP/f3.err")"
timeout -s KILL 30 "$BPFPY" trace -p "$HPID" -d 1 -f collapsed -o "$TMP/sticky/out.folded" --uprobe libc:write >/dev/null 2>"$TMP/f4.err"
rc=$?
[ $rc -eq 2 ] && ok "planted FIFO, trace -o: exit 2" || bad "planted FIFO, trace -o: exit $rc: $(head -n 1 "$TMP/f4.err")"

# --- row 7: a symlink planted by nobody in a sticky dir ------------------------
echo precious >"$TMP/victim"
chmod 644 "$TMP/victim"
setpriv --reuid=nobody --regid=nogroup --clear-groups ln -s "$TMP/victim" "$TMP/sticky/o.json"
setpriv --reuid=nobody --regid=nogroup --clear-groups ln -s "$TMP/victim" "$TMP/sticky/p.folded"
timeout -s KILL 120 "$BPFPY" oracle --python "$label" --snippet flat_alternating --mode ptrace \
	--duration 0.5 --warmup 0.2 --rate 0.2 -q --json "$TMP/sticky/o.json" >/dev/null 2>"$TMP/o.err"
rc=$?
if [ $rc -eq 2 ] && [ "$(cat "$TMP/victim")" = precious ] && [ -L "$TMP/sticky/o.json" ]; then
	ok "oracle --json onto nobody's symlink: exit 2, root-owned file untouched: $(head -n 1 "$TMP/o.err")"
	row "oracle --json onto a symlink planted by another user" "refused (exit 2), the file it points to untouched"
else
	bad "oracle --json onto nobody's symlink: exit $rc, victim now: $(head -c 80 "$TMP/victim"): $(head -n 2 "$TMP/o.err")"
	row "oracle --json onto a symlink planted by another user" "FAILED: exit $rc"
fi
echo existing >"$TMP/exists.json"
timeout -s KILL 120 "$BPFPY" oracle --python "$label" --snippet flat_alternating --mode ptrace \
	--duration 0.5 --warmup 0.2 --rate 0.2 -q --json "$TMP/exists.json" >/dev/null 2>"$TMP/o2.err"
rc=$?
[ $rc -eq 2 ] && [ "$(cat "$TMP/exists.json")" = existing ] && ok "oracle --json onto an existing file: exit 2, kept" ||
	bad "oracle --json onto an existing file: exit $rc, now $(head -c 80 "$TMP/exists.json")"
row "oracle --json onto an existing file (the oracle has no --force)" "$([ $rc -eq 2 ] && echo 'refused before the run, exit 2' || echo "FAILED: exit $rc")"
timeout -s KILL 30 "$BPFPY" record -p "$HPID" -d 1 -o "$TMP/sticky/p.folded" --force >/dev/null 2>"$TMP/o3.err"
rc=$?
[ $rc -eq 2 ] && [ "$(cat "$TMP/victim")" = precious ] && ok "record -o nobody's symlink --force: exit 2, untouched: $(head -n 1 "$TMP/o3.err")" ||
	bad "record -o nobody's symlink --force: exit $rc, victim: $(head -c 80 "$TMP/victim")"
row "record -o a symlink planted by another user in a sticky dir, --force" "$([ $rc -eq 2 ] && echo 'refused (protected_symlinks rule), exit 2, target untouched' || echo "FAILED: exit $rc")"

# --- row 12: -o a symlink to /proc/self/fd/1 --------------------------------
ln -s /proc/self/fd/1 "$TMP/tostdout.folded"
timeout -s KILL 30 "$BPFPY" record -p "$HPID" -d 1 -o "$TMP/tostdout.folded" >"$TMP/s0.out" 2>"$TMP/s0.err"
rc=$?
[ $rc -eq 2 ] && ok "-o symlink to /proc/self/fd/1 without --force: exit 2" || bad "-o link to fd 1 without --force: exit $rc"
timeout -s KILL 30 "$BPFPY" record -q -p "$HPID" -d 1 -o "$TMP/tostdout.folded" --force >"$TMP/s1.out" 2>"$TMP/s1.err"
rc=$?
if [ $rc -eq 0 ] && grep -q 'owned' "$TMP/s1.out" && [ -L "$TMP/tostdout.folded" ]; then
	ok "-o symlink to /proc/self/fd/1 --force: $(wc -l <"$TMP/s1.out") folded lines on stdout, the link kept"
	row "-o a symlink to /proc/self/fd/1, --force" "the profile goes to stdout, the link stays"
else
	bad "-o link to fd 1 --force: exit $rc, stdout $(wc -c <"$TMP/s1.out") bytes, link: $(ls -l "$TMP/tostdout.folded")"
	row "-o a symlink to /proc/self/fd/1, --force" "FAILED: exit $rc"
fi
timeout -s KILL 30 "$BPFPY" record -q -p "$HPID" -d 1 -f folded -o /dev/stdout --force >"$TMP/s2.out" 2>"$TMP/s2.err"
rc=$?
[ $rc -eq 0 ] && grep -q 'owned' "$TMP/s2.out" && [ -L /dev/stdout ] && ok "-o /dev/stdout --force -f folded: on stdout" ||
	bad "-o /dev/stdout --force: exit $rc: $(head -n 1 "$TMP/s2.err")"

# --- pprof still read by go tool pprof ----------------------------------------
if command -v go >/dev/null && go tool pprof -h >/dev/null 2>&1; then
	timeout -s KILL 30 "$BPFPY" record -q -p "$HPID" -d 1 -o "$TMP/p.pb.gz" 2>"$TMP/p.err"
	if go tool pprof -top "$TMP/p.pb.gz" >"$TMP/p.top" 2>&1 && grep -q 'owned' "$TMP/p.top"; then
		ok "go tool pprof -top reads the pprof output"
	else
		bad "go tool pprof -top: $(head -n 3 "$TMP/p.top")"
	fi
else
	echo "note: no go tool pprof"
fi
finish
