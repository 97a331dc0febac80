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
# the target programs, the checkers of outputs (check/*.py, run by CHECKPY:
# Debian's python3, whatever the targets are)
PYDIR=$ROOT_DIR/tests/integration/py
CHECK=$ROOT_DIR/tests/integration/check
CHECKPY=/usr/bin/python3
[ -x "$CHECKPY" ] || CHECKPY=$(command -v python3)
TMP=$(mktemp -d /tmp/bpfpy-test.XXXXXX)
# the checkers under check/ import checklib: no __pycache__ in the tree
export PYTHONDONTWRITEBYTECODE=1
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	# KEEP_TMP=1 keeps the files of a failing run for a post-mortem.
	if [[ -n ${KEEP_TMP:-} && $fails != 0 ]]; then
		echo "kept $TMP"
	else
		rm -rf "$TMP"
	fi
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

# wait_bounded PID SECONDS: wait for a background child (bpfpy, a target);
# kill it (rc 137) if it has not ended by then.
wait_bounded() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$1" 2>/dev/null && { echo "    (pid $1 still running after $2 s: killed)"; kill -9 "$1"; }
	wait "$1"
}

# not_stopped PID WHAT [TRACER]: no thread of PID is stopped ('t' or 'T') or
# traced; with TRACER, traced by that pid only, its own 't' stops allowed
# (strace stops its tracee at each syscall).
not_stopped() {
	local t st tr l=()
	for t in /proc/"$1"/task/*; do
		st=$(sed 's/^.*) //' "$t/stat" 2>/dev/null | cut -d' ' -f1)
		tr=$(awk '/^TracerPid:/ {print $2}' "$t/status" 2>/dev/null)
		[[ ($st == t && -z ${3:-}) || $st == T ]] && l+=("${t##*/}:state=$st")
		[[ ${tr:-0} != 0 && $tr != "${3:-0}" ]] && l+=("${t##*/}:traced-by-$tr")
	done
	if ((${#l[@]})); then
		bad "$2: target $1 left stopped or traced: ${l[*]}"
	else
		ok "$2: every thread of $1 running, $([ -n "${3:-}" ] && echo "traced by $3 only" || echo "no tracer")"
	fi
}

# Each target as "version label root python", one per line.
targets() { cat "$TARGETS"; }

# each_target FUNC: runs `FUNC VERSION LABEL ROOT` for every target, JOBS
# (default 3) at a time, each in a subshell of its own: its own fails counter
# (its exit status, at most 100) and PIDS (killed when it ends), its output in
# $TMP/log.LABEL. Then prints the logs in target order and adds the failures
# up. Exits 77 when there is no target.
each_target() {
	local fn=$1 tl version label root py r rc running=()
	mapfile -t tl < <(targets)
	((${#tl[@]})) || { echo "no target interpreter"; exit 77; }
	for r in "${tl[@]}"; do
		IFS=$'\t' read -r version label root py <<<"$r"
		(
			fails=0 PIDS=()
			trap 'for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done' EXIT
			"$fn" "$version" "$label" "$root"
			exit $((fails > 100 ? 100 : fails))
		) >"$TMP/log.$label" 2>&1 &
		running+=("$!:$label")
		PIDS+=("$!")
		while (($(jobs -rp | wc -l) >= ${JOBS:-3})); do wait -n; done
	done
	for r in "${running[@]}"; do
		wait "${r%%:*}"
		rc=$?
		cat "$TMP/log.${r#*:}"
		fails=$((fails + rc))
		[[ $rc == 0 ]] || grep -q '^FAIL' "$TMP/log.${r#*:}" || bad "${r#*:}: the per-target run failed (rc $rc)"
	done
}

# wait_file FILE [SECONDS [PID]]: until FILE exists and is not empty
# (default 30 s), or at once with failure when PID (the process that is to
# write it) is gone. Only for a file nothing else wrote before: one the
# waited-for process creates itself, under a name fresh to this run (or
# removed first).
wait_file() {
	local i
	for ((i = 0; i < ${2:-30} * 20; i++)); do
		[ -s "$1" ] && return 0
		[ -n "${3:-}" ] && ! kill -0 "$3" 2>/dev/null && return 1
		sleep 0.05
	done
	return 1
}

# py_launch LABEL SCRIPT [ARGS...]: start SCRIPT under that target in the
# background, stdout and stderr to a file of this start alone (PY_OUT, new
# and empty: never a file an earlier target wrote). Sets PY_PID ($! of
# scripts/pyrun.sh, which execs the interpreter: the same PID) and PY_OUT.
# Does not wait: py_ready does.
py_launch() {
	local label=$1 script=$2
	shift 2
	PY_OUT=$(mktemp "$TMP/$label.XXXXXX.out")
	"$ROOT_DIR/scripts/pyrun.sh" "$label" "$script" "$@" >"$PY_OUT" 2>&1 &
	PY_PID=$!
	PIDS+=("$PY_PID")
}

# py_ready PID OUT LABEL|EXE: waits (30 s at most) until the process PID has
# written a first whole line to OUT, its own file (scripts print "ready" once
# their threads and frames are in place), then checks that PID is the
# interpreter itself: /proc/PID/exe is target LABEL's python (pyrun.sh has
# exec'd), or the file EXE (an absolute path). Fails at once when PID dies.
py_ready() {
	local pid=$1 out=$2 label=$3 i py=$3
	for ((i = 0; i < 600; i++)); do
		(($(head -n 1 "$out" 2>/dev/null | wc -l))) && break # a newline: a whole line
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	[[ $py == /* ]] || py=$(targets | awk -F'\t' -v l="$label" '$2 == l { print ($3 == "/" ? "" : $3) $4; exit }')
	if [ -n "$py" ] && [ /proc/"$pid"/exe -ef "$py" ] && [ -s "$out" ]; then
		return 0
	fi
	echo "target $label (pid $pid) did not start: exe $(readlink /proc/"$pid"/exe 2>/dev/null || echo gone), want $py: $(head -c 500 "$out")"
	return 1
}

# start_py LABEL SCRIPT [ARGS...]: py_launch, then py_ready. Sets PY_PID, the
# Python process itself, and PY_OUT, where it writes (its "ready" line first).
start_py() {
	py_launch "$@" && py_ready "$PY_PID" "$PY_OUT" "$1"
}

# start_ns_py LABEL SCRIPT: SCRIPT under host target LABEL in a PID
# namespace of its own (unshare --pid --fork --mount-proc), until its first
# line. Sets NS_PID (unshare), PY_PID (its child, the interpreter itself)
# and PY_OUT; both PIDs are killed at exit. Fails (returns 1) when the
# target is not a host target or did not start; the caller says so.
start_ns_py() {
	local label=$1 script=$2 py i
	py=$(targets | awk -F'\t' -v l="$label" '$2 == l && $3 == "/" { print $4; exit }')
	[[ -n $py ]] || return 1
	PY_OUT=$(mktemp "$TMP/ns-$label.XXXXXX.out")
	unshare --pid --fork --mount-proc "$py" "$script" >"$PY_OUT" 2>&1 &
	NS_PID=$!
	PIDS+=("$NS_PID")
	PY_PID=
	for ((i = 0; i < 600; i++)); do
		[[ -z $PY_PID ]] && PY_PID=$(pgrep -P "$NS_PID" | head -n 1)
		[[ -n $PY_PID ]] && (($(head -n 1 "$PY_OUT" 2>/dev/null | wc -l))) && break
		kill -0 "$NS_PID" 2>/dev/null || break
		sleep 0.05
	done
	[[ -n $PY_PID ]] && PIDS+=("$PY_PID")
	[[ -n $PY_PID ]] && [ /proc/"$PY_PID"/exe -ef "$py" ] && [ -s "$PY_OUT" ]
}
