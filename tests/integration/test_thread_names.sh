#!/bin/bash
# Python's threading names, read out of process (user/python/py_threads.c),
# on every target of scripts/targets.sh (JOBS at a time, default 2).
#
# py/thread_names.py runs four busy threads named by threading.Thread(name=)
# with names longer than the 15 bytes of an OS name (3.14+ gives the OS
# thread the name cut to 15 bytes; before, each thread sets another OS name
# with prctl), one of them hostile (newlines, a forged dump header and
# collapsed prefix, quotes, a backslash escape, a lone surrogate, ESC and
# 10 kB of padding), and a renamed main thread. It prints its names with
# their native ids once all are set. Then (check/check_thread_names.py):
#   - dump (text): each thread's "  name:" line is its threading name, and
#     its OS name follows as "  comm:"; the hostile one escaped, cut to 128
#     bytes with an ellipsis, no forged line, no raw control byte;
#   - dump --json: name and comm per tid, the same;
#   - record --threads -d 2: each busy thread's prefix pid:N;tid:N (NAME)
#     carries its threading name (the hostile one escaped, ';' folded);
#   - go tool pprof -raw of the same recording: thread_name labels;
#   - its Chrome trace (record -f chrome): thread_name metadata;
#   - and on pyenv-3.12, trace -f chrome's thread_name metadata.
# Then the same on 3.10 and 3.12 in a PID namespace of their own (unshare
# --pid --fork --mount-proc): _native_id is the target's tid there, and
# must be turned into the host's (dump --json's ns_tid/tid pairs check it).
# A version whose names were not read would show the OS names (os-N, or the
# 15-byte cut on 3.14+) and fail every check.
. "$(dirname "$0")/lib.sh"

use_bpfpy
CHK=$CHECK/check_thread_names.py
bpfpy() { timeout -s KILL 60 "$BPFPY" "$@"; }

one() {
	local version=$1 label=$2 f
	echo "== $label ($version)"
	if ! start_py "$label" "$PYDIR/thread_names.py"; then
		bad "$label: target did not start"
		return
	fi
	checks "$label" "$TMP/$label" "$PY_OUT"
	kill -9 "$PY_PID" 2>/dev/null
	wait "$PY_PID" 2>/dev/null
}

# checks LABEL PREFIX OUT [ns]: every output of PY_PID against its ready
# line in OUT; with ns, through dump --json's host/ns tid pairs.
checks() {
	local label=$1 f=$2 ns=()
	head -n 1 "$3" >"$f.ready"
	[[ ${4:-} == ns ]] && ns=(ns="$f.json")
	if ! bpfpy dump -p "$PY_PID" --json >"$f.json" 2>"$f.json.err"; then
		bad "$label: dump --json exited $?: $(head -c 300 "$f.json.err")"
		return
	fi
	"$CHECKPY" "$CHK" json "$f.ready" "$f.json" label="$label" "${ns[@]}"
	fails=$((fails + $?))
	if bpfpy dump -p "$PY_PID" >"$f.dump" 2>"$f.dump.err"; then
		"$CHECKPY" "$CHK" dump "$f.ready" "$f.dump" label="$label" "${ns[@]}"
		fails=$((fails + $?))
	else
		bad "$label: dump exited $?: $(head -c 300 "$f.dump.err")"
	fi
	if bpfpy record -q -p "$PY_PID" -d 2 --threads -o "$f.folded" -o "$f.pb.gz" \
		-o "$f.trace.json" 2>"$f.rec.err"; then
		"$CHECKPY" "$CHK" chrome "$f.ready" "$f.trace.json" label="$label" "${ns[@]}"
		fails=$((fails + $?))
		"$CHECKPY" "$CHK" folded "$f.ready" "$f.folded" label="$label" "${ns[@]}"
		fails=$((fails + $?))
		if HOME=$TMP go tool pprof -raw "$f.pb.gz" >"$f.raw" 2>&1; then
			"$CHECKPY" "$CHK" pprof "$f.ready" "$f.raw" label="$label" "${ns[@]}"
			fails=$((fails + $?))
		else
			bad "$label: go tool pprof -raw: $(head -c 300 "$f.raw")"
		fi
	else
		bad "$label: record exited $?: $(tail -n 3 "$f.rec.err")"
	fi
}

JOBS=${JOBS:-2} each_target one

# trace's Chrome output names threads as record's does: a uprobe every
# worker hits (PyObject_GetIter, once per turn of its range loop) on the
# shared libpython of pyenv 3.12.
if targets | awk -F'\t' '$2 == "pyenv-3.12" { f = 1 } END { exit !f }'; then
	echo "== trace on pyenv-3.12"
	if start_py pyenv-3.12 "$PYDIR/thread_names.py"; then
		head -n 1 "$PY_OUT" >"$TMP/tr.ready"
		if bpfpy trace -q -p "$PY_PID" -d 2 --threshold 0 --uprobe libpython3.12:PyObject_GetIter \
			-f chrome -o "$TMP/tr.json" 2>"$TMP/tr.err"; then
			"$CHECKPY" "$CHK" chrome "$TMP/tr.ready" "$TMP/tr.json" label="trace pyenv-3.12"
			fails=$((fails + $?))
		else
			bad "trace pyenv-3.12 exited $?: $(tail -n 3 "$TMP/tr.err")"
		fi
		kill -9 "$PY_PID" 2>/dev/null
		wait "$PY_PID" 2>/dev/null
	else
		bad "trace pyenv-3.12: target did not start"
	fi
fi

# In a PID namespace: PY_PID is unshare's child, the interpreter itself.
for label in pyenv-3.10 pyenv-3.12; do
	targets | awk -F'\t' -v l="$label" '$2 == l && $3 == "/" { f = 1 } END { exit !f }' || continue
	echo "== ns-$label"
	if start_ns_py "$label" "$PYDIR/thread_names.py"; then
		checks "ns-$label" "$TMP/ns-$label" "$PY_OUT" ns
	else
		bad "ns-$label: target did not start: $(head -c 300 "$PY_OUT")"
	fi
	kill -9 "$NS_PID" "$PY_PID" 2>/dev/null
	wait "$NS_PID" 2>/dev/null
done
finish
