#!/bin/bash
# Every wait has a deadline, and every signal that stops bpfpy resumes the
# target first (issue 11 rows 4 and 11).
# 1. py/vfork_fifo.py: a thread in posix_spawn whose vfork child blocks
#    opening a FIFO nobody writes (its parent waits in TASK_KILLABLE, which no
#    PTRACE_INTERRUPT wakes) while the main thread runs Python code. A
#    blocking `dump` must return within 30 s (the stop's deadline is 1 s),
#    exit 0 with the other thread's stack, name the stuck tid on stderr, and
#    leave no thread in 't' (the target keeps counting). On 3.12 and 3.8
#    (3.8 maps threads to tids through the stopped threads' fs base).
# 2. SIGTSTP to a blocking dump of a 500-thread target at random moments
#    (5 rounds, odd rounds as soon as a target thread is seen in 't'): while
#    bpfpy is stopped (state T) no thread of the target is in 't'; after
#    SIGCONT bpfpy exits by itself, 0 (the stop was done) or 1 naming
#    SIGTSTP (the stop was interrupted: "run again").
# Targets are waited for through a fresh file each writes itself.
# Rows for the table in SECURITY.md go to build/hardening/deadlines.tsv.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/progress_target.sh"

PYDIR=$ROOT_DIR/tests/integration/py
rows_file deadlines
use_bpfpy
row() { printf 'deadlines\t%s\t%s\n' "$1" "$2" >> "$ROWS"; }

# tstates PID: the state letters of its threads.
tstates() { cat /proc/"$1"/task/*/stat 2>/dev/null | sed 's/^.*) //' | cut -c1 | tr -d '\n'; }

vfork_fail=0
for want in 3.12 3.8; do
	label=$(targets | awk -F'\t' -v v="$want" 'index($1, v ".") == 1 && $3 == "/" {print $2; exit}')
	[ -n "$label" ] || { echo "no host $want target, skipped"; continue; }
	d=$(mktemp -d "$TMP/vfork.XXXXXX")
	mkfifo "$d/fifo"
	"$ROOT_DIR/scripts/pyrun.sh" "$label" "$PYDIR/vfork_fifo.py" "$d/fifo" "$d/ready" "$d/count" \
		> "$d/out" 2>&1 &
	PIDS+=($!)
	if ! wait_file "$d/ready"; then
		bad "$label: vfork target not ready: $(cat "$d/out")"
		vfork_fail=$((vfork_fail + 1))
		continue
	fi
	read -r pid stuck < "$d/ready"
	count() { cat "$d/count" 2>/dev/null || echo 0; }
	t0=$(date +%s.%N)
	timeout -s KILL 30 "$BPFPY" dump -p "$pid" > "$d/dump.out" 2> "$d/dump.err"
	rc=$?
	secs=$(echo "$(date +%s.%N) - $t0" | bc)
	st=$(tstates "$pid")
	if [ "$rc" -eq 0 ] && grep -q "thread $stuck did not stop within" "$d/dump.err" &&
		grep -q "<module>" "$d/dump.out"; then
		ok "$label: dump of a process with a thread in vfork: exit 0 in ${secs}s, tid $stuck named, other stack printed"
	else
		bad "$label: dump with a thread in vfork: rc $rc in ${secs}s: $(head -c 300 "$d/dump.err")"
		vfork_fail=$((vfork_fail + 1))
	fi
	p0=$(count)
	if [[ $st == *t* ]] || ! p1=$(progressed_since count "$p0"); then
		bad "$label: after the dump: thread states $st, count $p0 -> ${p1:-?}"
		vfork_fail=$((vfork_fail + 1))
	else
		ok "$label: after the dump no thread in 't' ($st), count $p0 -> $p1"
	fi
	# Let the child exec (it opens the FIFO for reading): the target ends
	# its spawn normally, then dies with the test.
	echo > "$d/fifo" &
	kill "$pid" 2>/dev/null
done
row "a thread in posix_spawn whose vfork child blocks opening a FIFO (TASK_KILLABLE: PTRACE_INTERRUPT cannot stop it), blocking dump, 3.12 and 3.8" \
	"$([ $vfork_fail -eq 0 ] && echo "dump returns after the 3 s stop deadline, exit 0, prints the other threads and names the stuck tid on stderr; no thread left in 't'" || echo "FAILED ($vfork_fail checks)")"

# 2. SIGTSTP during a blocking dump of 500 threads.
d=$(mktemp -d "$TMP/tstp.XXXXXX")
start_progress "$d" 500 || finish
tstp_fail=0 caught=0 stopped_rounds=0 released=0
for i in 1 2 3 4 5; do
	# A process group of its own inside this shell's session (job
	# control): run_all.sh starts each test in a new session, and there
	# the test's own group is orphaned, where the kernel discards a
	# default-action SIGTSTP, so bpfpy could never be seen stopped.
	set -m
	"$BPFPY" dump -p "$pid" > /dev/null 2> "$d/err$i" &
	bp=$!
	set +m
	if [ $((i % 2)) -eq 1 ]; then
		# Builtins only, fast enough to see the leader's 't' (the stop of
		# 500 threads lasts tens of ms), 10 s at most.
		end=$((SECONDS + 10))
		while read -r l < /proc/"$pid"/stat && [[ ${l##*) } != t* ]] && ((SECONDS < end)); do :; done
	else
		l=
		sleep "0.$((RANDOM % 12))"
	fi
	kill -TSTP "$bp" 2>/dev/null
	[[ ${l##*) } == t* ]] && caught=$((caught + 1))
	# Until bpfpy is stopped (T) or gone, 10 s at most.
	bst=
	for _ in $(seq 1 200); do
		bst=$(sed 's/^.*) //' /proc/"$bp"/stat 2>/dev/null | cut -c1)
		[[ -z $bst || $bst == T || $bst == Z ]] && break
		sleep 0.05
	done
	[[ $bst == T ]] && stopped_rounds=$((stopped_rounds + 1))
	st=$(tstates "$pid")
	left_t=0
	if [[ $st == *t* ]]; then
		left_t=$(echo "$st" | tr -cd t | wc -c)
		bad "round $i: bpfpy state '$bst', target threads in 't': $left_t"
		tstp_fail=$((tstp_fail + 1))
	fi
	kill -CONT "$bp" 2>/dev/null
	for _ in $(seq 1 300); do kill -0 "$bp" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$bp" 2>/dev/null; then
		bad "round $i: bpfpy still running 30 s after SIGCONT"
		kill -9 "$bp"
		tstp_fail=$((tstp_fail + 1))
	fi
	wait "$bp"
	rc=$?
	[ "$rc" -eq 1 ] && grep -q "SIGTSTP" "$d/err$i" && released=$((released + 1))
	if [ "$rc" -eq 0 ] || { [ "$rc" -eq 1 ] && grep -q "SIGTSTP" "$d/err$i"; }; then
		ok "round $i: SIGTSTP (bpfpy state '$bst', $left_t target threads in 't'), exit $rc after SIGCONT $(head -c 120 "$d/err$i")"
	else
		bad "round $i: exit $rc: $(head -c 300 "$d/err$i")"
		tstp_fail=$((tstp_fail + 1))
	fi
	p0=$(progress)
	if ! p1=$(progressed_since progress "$p0") || [[ $(tstates "$pid") == *t* ]]; then
		bad "round $i: target not progressing ($p0 -> $p1) or stopped"
		tstp_fail=$((tstp_fail + 1))
	fi
done
[ "$stopped_rounds" -gt 0 ] || bad "bpfpy never stopped on SIGTSTP: the test proves nothing"
[ "$released" -gt 0 ] || bad "SIGTSTP never came while the target was held: the test proves nothing"
row "SIGTSTP to a blocking dump of a 500-thread target at random moments (5 rounds, $caught sent while the leader was in 't', bpfpy stopped in $stopped_rounds, the held target released in $released)" \
	"$([ $tstp_fail -eq 0 ] && echo "target resumed before bpfpy stopped: no thread in 't' while bpfpy is suspended; after SIGCONT exit 0, or 1 naming SIGTSTP" || echo "FAILED ($tstp_fail checks)")"
finish
