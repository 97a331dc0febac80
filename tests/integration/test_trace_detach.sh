#!/bin/bash
# bpfpy trace's detach, per probe: a hot probe whose locations saturate is
# really removed (3.15: its USDT semaphores read 0; 3.12: its uprobe is gone
# from bpftool's perf list) while another probe stays attached, even though
# a rare location (tick(), py/trace_detach.py) never reaches the threshold
# and keeps firing -- it is cut off, not a reason to keep every call
# trapped. The counts made before the detach are exact. No timing limits:
# only deadlines.
source "$(dirname "$0")/lib.sh"

tfield() { targets | awk -F'\t' -v l="$1" -v n="$2" '$2 == l { print $n; exit }'; }
have() { [ -n "$(tfield "$1" 2)" ]; }
# the go files as the target names them (in its root) and as we do
gofiles() {
	local root=$(tfield "$1" 3) base=/tmp/bpfpy/detach.${TMP##*/}
	if [ "$root" = / ]; then base=$TMP/detach; root=; fi
	mkdir -p "$root/tmp/bpfpy"
	rm -f "$root$base".{1,2,stop}
	echo "$base $root$base"
}
trap 'cleanup; rm -f /var/cache/bpfpy/sid/tmp/bpfpy/detach.'"${TMP##*/}"'.*' EXIT

# wait_for FILE PATTERN PID: until FILE holds PATTERN (60 s at most) or PID ends
wait_for() {
	local i
	for ((i = 0; i < 1200; i++)); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || break
		sleep 0.05
	done
	return 1
}
sem_value() { # PID FILE PROBE (ET_EXEC or not: the bias from the maps)
	local addr
	addr=$(readelf -n "$2" | awk -v p="$3" '$1 == "Name:" && $2 == p { f = 1 }
		f && /Semaphore:/ { print $NF; exit }')
	dd if="/proc/$1/mem" bs=1 skip=$((addr)) count=2 2>/dev/null | od -An -tu2 | tr -d ' '
}
# row FILE PROBE FUNC COLUMN: a column of the summary row of a location
row() { awk -v p="$2" -v fn="$3" -v c="$4" 'index($0, p) && $0 ~ ("  " fn " \\(") { print $c; exit }' "$1"; }

# run LABEL TRACE_ARGS...: the target through its three phases under trace;
# leaves $TMP/LABEL.err/.out and the target's PID in TPY.
run() {
	local label=$1 base local_
	shift
	read -r base local_ < <(gofiles "$label")
	start_py "$label" "$PYDIR/trace_detach.py" 20 50 "$base.1" "$base.2" "$base.stop" || return 1
	TPY=$PY_PID
	"$BPFPY" trace -p "$TPY" --threshold 2000 --interval 0.3 -d 50 "$@" \
		>"$TMP/$label.out" 2>"$TMP/$label.err" &
	TR=$!
	PIDS+=("$TR")
	wait_for "$TMP/$label.err" attached "$TR" || { echo "no attach: $(cat "$TMP/$label.err")"; return 1; }
	ATTACHED=$(attached_now)
	touch "$local_.1"
	wait_for "$PY_OUT" done "$TPY" || return 1
	touch "$local_.2"
	wait_for "$TMP/$label.err" ' detached at ' "$TR" || { echo "no detach: $(cat "$TMP/$label.err")"; return 1; }
	DETACHED=$(attached_now)
	touch "$local_.stop"
	wait_bounded "$TPY" 30
	kill -INT "$TR" 2>/dev/null
	wait_bounded "$TR" 30
	wait "$TR"
}

if have sid-3.15; then
	py=$(tfield sid-3.15 3)$(tfield sid-3.15 4)
	attached_now() { echo "$(sem_value "$TPY" "$py" function__entry) $(sem_value "$TPY" "$py" function__return) $(sem_value "$TPY" "$py" gc__start)"; }
	if run sid-3.15 --calls --usdt python:gc__start; then
		e=$TMP/sid-3.15.err o=$TMP/sid-3.15.out
		[ "$ATTACHED" = "1 1 1" ] && [ "$DETACHED" = "0 0 1" ] &&
			ok "3.15 semaphores entry/return/gc: $ATTACHED attached, $DETACHED once the calls saturated" ||
			bad "3.15 semaphores: $ATTACHED then $DETACHED: $(cat "$e")"
		grep -q 'function__entry + python:function__return detached at .* s: saturated ([1-9][0-9]* location' "$e" &&
			ok "3.15 the pair detached together, rare locations cut off" || bad "3.15 detach note: $(cat "$e")"
		m=$(row "$o" function__entry mid 1)
		le=$(row "$o" function__entry leaf 2)
		lh=$(row "$o" function__entry leaf 1)
		th=$(row "$o" function__entry tick 1)
		te=$(row "$o" function__entry tick 2)
		[ "$m" = 20 ] && [ "$le" = 2000 ] && [ "${lh:-0}" -gt 2000 ] && [ -n "$th" ] && [ "$th" = "$te" ] &&
			ok "3.15 counts: mid 20, leaf $lh hits 2000 emitted, tick $th all emitted" ||
			bad "3.15 counts: mid $m leaf $lh/$le tick $th/$te: $(cat "$o")"
	else
		bad "3.15 run: $(cat "$TMP/sid-3.15.err" 2>/dev/null)"
	fi
fi

if have pyenv-3.12 && command -v bpftool >/dev/null; then
	# uprobes of the tracer, as the kernel lists them (offsets in the file)
	attached_now() { bpftool perf list 2>/dev/null | awk -v p="pid $TR " 'index($0, p) && /uprobe/ { print $NF }' | sort -n | xargs; }
	if run pyenv-3.12 --uprobe libpython3.12:PyObject_Repr --uprobe libpython3.12:PyGC_Collect; then
		e=$TMP/pyenv-3.12.err o=$TMP/pyenv-3.12.out
		n1=$(wc -w <<<"$ATTACHED") n2=$(wc -w <<<"$DETACHED")
		[ "$n1" = 2 ] && [ "$n2" = 1 ] && [[ " $ATTACHED " == *" $DETACHED "* ]] &&
			ok "3.12 uprobes at offsets '$ATTACHED', then '$DETACHED' (PyObject_Repr removed)" ||
			bad "3.12 uprobes: '$ATTACHED' then '$DETACHED': $(cat "$e")"
		le=$(row "$o" PyObject_Repr leaf 2)
		lh=$(row "$o" PyObject_Repr leaf 1)
		th=$(row "$o" PyObject_Repr tick 1)
		te=$(row "$o" PyObject_Repr tick 2)
		[ "$le" = 2000 ] && [ "${lh:-0}" -gt 2000 ] && [ -n "$th" ] && [ "$th" = "$te" ] &&
			ok "3.12 counts: leaf $lh hits 2000 emitted, tick $th all emitted" ||
			bad "3.12 counts: leaf $lh/$le tick $th/$te: $(cat "$o")"
	else
		bad "3.12 run: $(cat "$TMP/pyenv-3.12.err" 2>/dev/null)"
	fi
fi
finish
