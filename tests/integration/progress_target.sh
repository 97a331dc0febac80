# Sourced after lib.sh: start_progress DIR [EXTRA_THREADS] starts
# py/hostile_progress.py (3.12, or the first target) publishing its counter
# to DIR/progress, and sets pid once the process itself has printed
# "ready PID" (its own fresh output file, DIR/out; 30 s at most: starting
# 500 threads takes seconds on a loaded host). progress() prints the counter.
start_progress() {
	local dir=$1 label
	label=$(targets | awk -F'\t' '$1 ~ /^3\.12\./ {print $2; exit}')
	[ -n "$label" ] || label=$(targets | awk -F'\t' 'NR == 1 {print $2}')
	PROGRESS_FILE=$dir/progress
	"$ROOT_DIR/scripts/pyrun.sh" "$label" "$ROOT_DIR/tests/integration/py/hostile_progress.py" \
		"$PROGRESS_FILE" ${2:+"$2"} > "$dir/out" 2>&1 &
	PIDS+=($!)
	pid=
	for _ in $(seq 1 300); do
		pid=$(awk '/^ready [0-9]+$/ {print $2}' "$dir/out")
		[ -n "$pid" ] && return 0
		sleep 0.1
	done
	bad "progress target not ready: $(cat "$dir/out")"
	return 1
}
progress() { cat "$PROGRESS_FILE" 2>/dev/null || echo 0; }
