# Shared helpers for the root integration tests. Source it.
# Targets: one line per interpreter in $BPFPY_TARGETS (from scripts/targets.sh):
#   VERSION<TAB>LABEL<TAB>ROOT<TAB>PYTHON
set -u
ROOT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BPFPY=${BPFPY:-$ROOT_DIR/build/bpfpy}
TARGETS=${BPFPY_TARGETS:-}
if [ -z "$TARGETS" ] || [ ! -s "$TARGETS" ]; then
	TARGETS=$(mktemp)
	"$ROOT_DIR/scripts/targets.sh" --no-provision > "$TARGETS"
fi
TMP=$(mktemp -d /tmp/bpfpy-test.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
finish() { [ "$fails" -eq 0 ] && exit 0; echo "$fails failure(s)"; exit 1; }

# use_bpfpy: stop early without a build, then run a copy of it, so that a
# rebuild meanwhile cannot change the binary under a running test.
# The copy's oracle finds the snippets through BPFPY_SNIPPETS.
use_bpfpy() {
	[ -x "$BPFPY" ] || { echo "no $BPFPY: build first"; exit 1; }
	cp "$BPFPY" "$TMP/bpfpy" && chmod 755 "$TMP" "$TMP/bpfpy" && BPFPY=$TMP/bpfpy
	export BPFPY_SNIPPETS=$ROOT_DIR/snippets
}

# rows_file NAME: ROWS=build/hardening/NAME.tsv, emptied. A test appends its
# rows for SECURITY.md's table there ("area<TAB>what was done<TAB>outcome";
# scripts/security_table.sh collects them).
rows_file() {
	ROWS=$ROOT_DIR/build/hardening/$1.tsv
	mkdir -p "${ROWS%/*}"
	: >"$ROWS"
}

# progressed_since READ P0: polls the command READ (which prints a counter
# the target advances) until it exceeds P0, for at most 15 s; prints the
# last value and fails if it never moved. A check that the target still
# runs, not how fast: under strace, or with the oracle's own busy targets
# pinned to both CPUs, a healthy target can take seconds to move.
progressed_since() {
	local v i
	for ((i = 0; i < 150; i++)); do
		v=$($1)
		((v > $2)) && { echo "$v"; return 0; }
		sleep 0.1
	done
	echo "$v"
	return 1
}

# Each target as "version label root python", one per line.
targets() { cat "$TARGETS"; }

# start_py LABEL SCRIPT [ARGS...]: run SCRIPT under that target in the
# background; sets PY_PID to the Python process itself. Waits until the
# script has printed its first line to $TMP/LABEL.out (scripts print "ready"
# once their threads and frames are in place).
start_py() {
	local label=$1 script=$2
	shift 2
	"$ROOT_DIR/scripts/pyrun.sh" "$label" "$script" "$@" > "$TMP/$label.out" 2>&1 &
	PY_PID=$!
	PIDS+=("$PY_PID")
	for _ in $(seq 1 100); do
		[ -s "$TMP/$label.out" ] && return 0
		sleep 0.05
	done
	echo "target $label did not start: $(cat "$TMP/$label.out")"
	return 1
}
