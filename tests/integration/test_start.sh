#!/bin/bash
# lib.sh's start_py cannot return before its own target is up. Per target
# (the sid chroot's too: its exec chain is the longest), 3 starts of
# py/three.py back to back on the same label, each checked the moment
# start_py returns: PY_PID is the interpreter itself (/proc/PID/exe), its
# PY_OUT is a file no other start wrote and holds that process's own ready
# line (three.py prints its main thread's native id: the PID). The old
# helper waited for a shared $TMP/LABEL.out to be non-empty, found the
# previous target's line there and returned while pyrun.sh had not exec'd.
# And start_py fails, within its bound, for a target that dies before its
# ready line and for a label pyrun.sh refuses.
. "$(dirname "$0")/lib.sh"

outs=()
while IFS=$'\t' read -r ver label root py; do
	[[ $root == / ]] && exe=$py || exe=$root$py
	good=0
	for i in 1 2 3; do
		if ! start_py "$label" "$PYDIR/three.py"; then
			bad "$label start $i: start_py failed"
			continue
		fi
		if ! [ /proc/"$PY_PID"/exe -ef "$exe" ]; then
			bad "$label start $i: pid $PY_PID is $(readlink /proc/"$PY_PID"/exe), not $exe"
		elif ! grep -q "^ready main=$PY_PID:" "$PY_OUT"; then
			bad "$label start $i: $PY_OUT does not hold pid $PY_PID's ready line: $(head -c 200 "$PY_OUT")"
		elif [[ " ${outs[*]} " == *" $PY_OUT "* ]]; then
			bad "$label start $i: $PY_OUT reused"
		else
			good=$((good + 1))
		fi
		outs+=("$PY_OUT")
		kill -9 "$PY_PID" 2>/dev/null
		wait "$PY_PID" 2>/dev/null
	done
	((good == 3)) && ok "$label ($ver): 3 starts back to back, each returned its own running interpreter"
done < <(targets)

label=$(targets | head -n 1 | cut -f2)
printf 'import sys\nsys.exit(3)\n' >"$TMP/dies.py"
s=$SECONDS
if start_py "$label" "$TMP/dies.py" >"$TMP/dies.msg"; then
	bad "a target that exits before its ready line: start_py succeeded"
elif ((SECONDS - s < 30)); then
	ok "a target that exits before its ready line: start_py fails ($((SECONDS - s)) s): $(head -c 120 "$TMP/dies.msg")"
else
	bad "a target that exits before its ready line: start_py took $((SECONDS - s)) s"
fi
if start_py no-such-label "$PYDIR/three.py" >"$TMP/nolabel.msg"; then
	bad "an unknown label: start_py succeeded"
else
	ok "an unknown label: start_py fails: $(head -c 160 "$TMP/nolabel.msg")"
fi
finish
