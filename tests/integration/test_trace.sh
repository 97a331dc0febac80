#!/bin/bash
# bpfpy trace on real processes: exact call counts with USDT on 3.15, the
# threshold and the detach (semaphore back to 0, target faster again),
# uprobe/uretprobe stacks and latencies on pyenv 3.12, gc__start arguments
# on Debian's 3.11, the Chrome JSON, --list, and the refusals.
source "$(dirname "$0")/lib.sh"

# field N of the target LABEL's line (1 version, 2 label, 3 root, 4 python)
tfield() { targets | awk -F'\t' -v l="$1" -v n="$2" '$2 == l { print $n; exit }'; }
have() { [ -n "$(tfield "$1" 2)" ]; }

# go_path LABEL NAME: the go file as the target names it, and as we do. In
# the shared chroot the name carries this run's $TMP, so that a colleague's
# run of this test can neither start our target nor see ours start it.
go_path() {
	local root name=$2.${TMP##*/}
	root=$(tfield "$1" 3)
	if [ "$root" = / ]; then
		echo "$TMP/$2 $TMP/$2"
	else
		mkdir -p "$root/tmp/bpfpy"
		rm -f "$root/tmp/bpfpy/$name"
		echo "/tmp/bpfpy/$name $root/tmp/bpfpy/$name"
	fi
}
# at exit, this run's go files in every chroot (go_path runs in a subshell)
go_cleanup() {
	local r
	for r in $(targets | awk -F'\t' '$3 != "/" { print $3 }' | sort -u); do
		rm -f "$r"/tmp/bpfpy/go-*."${TMP##*/}"
	done
}
trap 'cleanup; go_cleanup' EXIT

# trace_bg LOG ARGS...: start bpfpy trace in the background, wait until its
# probes are attached. Sets TR_PID.
trace_bg() {
	local log=$1 i
	shift
	"$BPFPY" trace "$@" >"$log.out" 2>"$log.err" &
	TR_PID=$!
	for ((i = 0; i < 600; i++)); do
		grep -q 'attached' "$log.err" 2>/dev/null && return 0
		kill -0 "$TR_PID" 2>/dev/null || break
		sleep 0.05
	done
	echo "tracer did not attach: $(cat "$log.err")"
	return 1
}

# sem_value PID FILE PROBE: the probe's semaphore in the target, read from
# its memory at the address its ELF notes give (ET_EXEC: no bias).
sem_value() {
	local addr
	addr=$(readelf -n "$2" | awk -v p="$3" '$1 == "Name:" && $2 == p { f = 1 }
		f && /Semaphore:/ { print $NF; exit }')
	dd if="/proc/$1/mem" bs=1 skip=$((addr)) count=2 2>/dev/null | od -An -tu2 | tr -d ' '
}

# loc_field FILE PROBE FUNC COLUMN: a column of the summary row for a
# location (1 hits, 2 emitted, 3 counted, 5 calls).
loc_field() {
	awk -v p="$2" -v fn="$3" -v c="$4" '$0 ~ p && $0 ~ ("  " fn " \\(") { print $c; exit }' "$1"
}

if have sid-3.15; then
	root=$(tfield sid-3.15 3)
	py=$root$(tfield sid-3.15 4)
	# 1. --threshold 0: every call, exact, with a Chrome timeline.
	read -r gin gout < <(go_path sid-3.15 go-full)
	start_py sid-3.15 "$PYDIR/trace_calls.py" 20 500 "$gin" 0 || exit 1
	trace_bg "$TMP/full" -p "$PY_PID" --calls --threshold 0 -f chrome -o "$TMP/full.json" || exit 1
	touch "$gout"
	wait "$TR_PID"
	rc=$?
	[ "$rc" = 0 ] && ok "3.15 --calls --threshold 0 ran" || bad "3.15 full trace rc $rc: $(cat "$TMP/full.err")"
	h=$(loc_field "$TMP/full.err" function__entry leaf 1)
	e=$(loc_field "$TMP/full.err" function__entry leaf 2)
	m=$(loc_field "$TMP/full.err" function__entry mid 1)
	r=$(loc_field "$TMP/full.err" function__return leaf 1)
	n=$(loc_field "$TMP/full.err" function__entry leaf 5)
	[ "$h" = 10000 ] && [ "$e" = 10000 ] && [ "$r" = 10000 ] && [ "$m" = 20 ] &&
		ok "3.15 exact counts: leaf 10000 entries/returns, mid 20" ||
		bad "3.15 counts: leaf $h/$e/$r mid $m: $(cat "$TMP/full.err")"
	[ "$n" = 10000 ] && ok "3.15 10000 leaf call latencies" || bad "3.15 latencies: $n"
	"$CHECKPY" "$CHECK/trace_chrome_calls.py" "$TMP/full.json" &&
		ok "3.15 Chrome JSON: fields, B/E balanced, stacks" || bad "3.15 Chrome JSON"

	# 2. --threshold N: at most N emitted per location, counts still exact.
	read -r gin gout < <(go_path sid-3.15 go-thr)
	start_py sid-3.15 "$PYDIR/trace_calls.py" 20 500 "$gin" 0 || exit 1
	trace_bg "$TMP/thr" -p "$PY_PID" --calls --threshold 50 --interval 30 || exit 1
	touch "$gout"
	wait "$TR_PID"
	h=$(loc_field "$TMP/thr.out" function__entry leaf 1)
	e=$(loc_field "$TMP/thr.out" function__entry leaf 2)
	c=$(loc_field "$TMP/thr.out" function__entry leaf 3)
	re=$(loc_field "$TMP/thr.out" function__return leaf 2)
	[ "$h" = 10000 ] && [ "$e" = 50 ] && [ "$c" = 9950 ] && [ "$re" -le 50 ] &&
		ok "3.15 --threshold 50: leaf 10000 hits, 50 emitted, 9950 counted" ||
		bad "3.15 threshold: $h $e $c $re: $(cat "$TMP/thr.out")"

	# 3. Detach: the semaphore reads 0 again and the calls get faster.
	read -r gin gout < <(go_path sid-3.15 go-det)
	start_py sid-3.15 "$PYDIR/trace_calls.py" 1 10 "$gin" 6 || exit 1
	det_out=$PY_OUT
	trace_bg "$TMP/det" -p "$PY_PID" --calls --threshold 50 --interval 0.5 -d 8 || exit 1
	s1=$(sem_value "$PY_PID" "$py" function__entry)
	touch "$gout"
	# trace says "probes detached" once the uprobes are gone (semaphore released)
	for ((i = 0; i < 600; i++)); do
		grep -q detached "$TMP/det.err" && break
		kill -0 "$TR_PID" 2>/dev/null || break
		sleep 0.05
	done
	s2=$(sem_value "$PY_PID" "$py" function__entry)
	[ "$s1" -ge 1 ] && [ "$s2" = 0 ] && ok "3.15 semaphore $s1 while attached, 0 after the detach" ||
		bad "3.15 semaphore: $s1 then $s2: $(cat "$TMP/det.err")"
	sleep 1.5
	kill "$TR_PID" 2>/dev/null
	wait "$TR_PID"
	# every batch timed: the target ends 6 s after its go file
	wait_bounded "$PY_PID" 60
	# batches while attached (the first ones) against the last ones
	"$CHECKPY" "$CHECK/trace_speedup.py" "$det_out" &&
		ok "3.15 calls faster after the detach" || bad "3.15 no speed-up: $(head -5 "$det_out")"
	grep -q 'detached [0-9.]* s in total (1 detach' "$TMP/det.out" &&
		ok "3.15 summary reports the detached time" || bad "3.15 summary: $(cat "$TMP/det.out")"

	# --list
	read -r gin gout < <(go_path sid-3.15 go-list)
	start_py sid-3.15 "$PYDIR/trace_calls.py" 1 1 "$gin" 0 || exit 1
	"$BPFPY" trace -p "$PY_PID" --list >"$TMP/l15" 2>&1
	grep -q 'python:function__entry .*semaphore 0x[0-9a-f]* = 0' "$TMP/l15" &&
		grep -q -- '--calls: available' "$TMP/l15" && grep -q 'python:gc__start' "$TMP/l15" &&
		grep -q 'missing python:line' "$TMP/l15" &&
		ok "3.15 --list" || bad "3.15 --list: $(cat "$TMP/l15")"
	"$BPFPY" trace -p "$PY_PID" --usdt python:nope >"$TMP/bad1" 2>&1
	rc=$?
	[ "$rc" = 2 ] && grep -q 'no USDT probe python:nope' "$TMP/bad1" && ok "unknown probe: exit 2" ||
		bad "unknown probe: rc $rc $(cat "$TMP/bad1")"
	touch "$gout"
else
	echo "no sid-3.15 target: 3.15 USDT checks skipped"
fi

if have pyenv-3.12; then
	# 4. uprobe + uretprobe on libpython: stacks and latencies.
	read -r gin gout < <(go_path pyenv-3.12 go-up)
	start_py pyenv-3.12 "$PYDIR/trace_repr.py" 2000 "$gin" || exit 1
	trace_bg "$TMP/up" -p "$PY_PID" --threshold 0 -f collapsed -o "$TMP/up.folded" \
		--uprobe libpython3.12:PyObject_Repr --uretprobe libpython3.12:PyObject_Repr || exit 1
	touch "$gout"
	wait "$TR_PID"
	n=$(awk '/\[uprobe libpython3.12.so.1.0:PyObject_Repr\]/ && /;mid \([^;]*;leaf \([^;]*;\[uprobe/ { s += $NF } END { print s + 0 }' "$TMP/up.folded")
	all=$(awk '/\[uprobe / { s += $NF } END { print s + 0 }' "$TMP/up.folded")
	[ "$n" -ge 2000 ] && ok "3.12 uprobe: $n of $all hits in leaf() under mid()" ||
		bad "3.12 uprobe stacks: $n of $all: $(head "$TMP/up.folded")"
	lat=$(loc_field "$TMP/up.err" "uprobe libpython3.12.so.1.0:PyObject_Repr" leaf 5)
	[ "${lat:-0}" -ge 2000 ] && ok "3.12 uretprobe latencies: $lat" ||
		bad "3.12 latencies: $lat $(cat "$TMP/up.err")"
	# Names survive the target: the tracer is stopped while the target
	# makes its calls and exits, so every record is drained after the code
	# objects (and the process) are gone. The names are the kernel's copies
	# (code_names); reading the dead process would give <unknown>.
	read -r gin gout < <(go_path pyenv-3.12 go-dead)
	start_py pyenv-3.12 "$PYDIR/trace_repr.py" 300 "$gin" || exit 1
	tpid=$PY_PID
	trace_bg "$TMP/dead" -p "$tpid" --threshold 0 -f collapsed -o "$TMP/dead.folded" \
		--uprobe libpython3.12:PyObject_Repr || exit 1
	kill -STOP "$TR_PID"
	touch "$gout"
	wait_bounded "$tpid" 30 >/dev/null
	kill -CONT "$TR_PID"
	wait_bounded "$TR_PID" 30
	n=$(awk '/;mid \([^;]*;leaf \([^;]*;\[uprobe/ { s += $NF } END { print s + 0 }' "$TMP/dead.folded" 2>/dev/null)
	[ "${n:-0}" -ge 300 ] && ok "3.12 names after the target exited: $n of 300 hits in leaf() under mid()" ||
		bad "3.12 names after exit: $n: $(head -c 600 "$TMP/dead.folded" 2>/dev/null) $(cat "$TMP/dead.err")"
	# --list and the refusals
	read -r gin gout < <(go_path pyenv-3.12 go-l12)
	start_py pyenv-3.12 "$PYDIR/trace_repr.py" 1 "$gin" || exit 1
	"$BPFPY" trace -p "$PY_PID" --list >"$TMP/l12" 2>&1
	grep -q 'USDT probes (0)' "$TMP/l12" && grep -q 'missing python:function__entry: this build has no USDT' "$TMP/l12" &&
		ok "3.12 --list" || bad "3.12 --list: $(cat "$TMP/l12")"
	"$BPFPY" trace -p "$PY_PID" --calls >"$TMP/bad2" 2>&1
	rc=$?
	[ "$rc" = 5 ] && grep -q 'cannot report every call' "$TMP/bad2" && ok "3.12 --calls refused: exit 5" ||
		bad "3.12 --calls: rc $rc $(cat "$TMP/bad2")"
	"$BPFPY" trace -p "$PY_PID" --uprobe libnothere:foo >"$TMP/bad3" 2>&1
	rc=$?
	[ "$rc" = 2 ] && grep -q "does not map a file 'libnothere'" "$TMP/bad3" && ok "unmapped binary: exit 2" ||
		bad "unmapped binary: rc $rc $(cat "$TMP/bad3")"
	"$BPFPY" trace -p "$PY_PID" --uprobe python:No_Such_Symbol >"$TMP/bad4" 2>&1
	rc=$?
	[ "$rc" = 2 ] && grep -q "symbol 'No_Such_Symbol' is not in" "$TMP/bad4" && ok "missing symbol: exit 2" ||
		bad "missing symbol: rc $rc $(cat "$TMP/bad4")"
	touch "$gout"
fi

if have debian-3.11; then
	# 5. gc__start with its generation argument.
	read -r gin gout < <(go_path debian-3.11 go-gc)
	start_py debian-3.11 "$PYDIR/trace_gc.py" "$gin" || exit 1
	trace_bg "$TMP/gc" -p "$PY_PID" --threshold 0 --usdt python:gc__start -f chrome -o "$TMP/gc.json" || exit 1
	touch "$gout"
	wait "$TR_PID"
	"$CHECKPY" "$CHECK/trace_gc_generations.py" "$TMP/gc.json" &&
		ok "3.11 gc__start generations 0 1 2 2 from collect_all()" ||
		bad "3.11 gc__start: $(head -c 600 "$TMP/gc.json")"
	read -r gin gout < <(go_path debian-3.11 go-l11)
	start_py debian-3.11 "$PYDIR/trace_gc.py" "$gin" || exit 1
	"$BPFPY" trace -p "$PY_PID" --list >"$TMP/l11" 2>&1
	grep -q 'python:function__entry .*fires only for calls from C' "$TMP/l11" &&
		grep -q 'python:line ' "$TMP/l11" && grep -q -- '--calls: refused' "$TMP/l11" &&
		ok "3.11 --list" || bad "3.11 --list: $(cat "$TMP/l11")"
	"$BPFPY" trace -p "$PY_PID" --calls >"$TMP/bad5" 2>&1
	rc=$?
	[ "$rc" = 5 ] && ok "3.11 --calls refused: exit 5" || bad "3.11 --calls: rc $rc $(cat "$TMP/bad5")"
	touch "$gout"
fi

sleep 30 &
"$BPFPY" trace -p $! --usdt python:gc__start >"$TMP/bad6" 2>&1
rc=$?
kill $! 2>/dev/null
[ "$rc" = 4 ] && ok "not Python: exit 4" || bad "not Python: rc $rc $(cat "$TMP/bad6")"
finish
