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
#   - go tool pprof -raw of the same recording: thread_name labels.
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
	f=$TMP/$label
	head -n 1 "$PY_OUT" >"$f.ready"
	if bpfpy dump -p "$PY_PID" >"$f.dump" 2>"$f.dump.err"; then
		"$CHECKPY" "$CHK" dump "$f.ready" "$f.dump" label="$label"
		fails=$((fails + $?))
	else
		bad "$label: dump exited $?: $(head -c 300 "$f.dump.err")"
	fi
	if bpfpy dump -p "$PY_PID" --json >"$f.json" 2>"$f.json.err"; then
		"$CHECKPY" "$CHK" json "$f.ready" "$f.json" label="$label"
		fails=$((fails + $?))
	else
		bad "$label: dump --json exited $?: $(head -c 300 "$f.json.err")"
	fi
	if bpfpy record -q -p "$PY_PID" -d 2 --threads -o "$f.folded" -o "$f.pb.gz" 2>"$f.rec.err"; then
		"$CHECKPY" "$CHK" folded "$f.ready" "$f.folded" label="$label"
		fails=$((fails + $?))
		if HOME=$TMP go tool pprof -raw "$f.pb.gz" >"$f.raw" 2>&1; then
			"$CHECKPY" "$CHK" pprof "$f.ready" "$f.raw" label="$label"
			fails=$((fails + $?))
		else
			bad "$label: go tool pprof -raw: $(head -c 300 "$f.raw")"
		fi
	else
		bad "$label: record exited $?: $(tail -n 3 "$f.rec.err")"
	fi
	kill -9 "$PY_PID" 2>/dev/null
	wait "$PY_PID" 2>/dev/null
}

JOBS=${JOBS:-2} each_target one
finish
