# Readiness of a target that signals it itself: source after lib.sh.
# wait_file FILE PID: until FILE exists and is not empty (written by the
# target, fresh for this run), at most 20 s, or until PID is gone.
wait_file() {
	for _ in $(seq 1 400); do
		[ -s "$1" ] && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}
