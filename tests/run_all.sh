#!/bin/bash
# Runs every test: cmocka unit tests (binaries given as arguments), then the
# root integration tests tests/integration/test_*.sh against every target
# interpreter of scripts/targets.sh. Prints one closing line:
#   "tests: N passed, N failed, N skipped"
# A test script exits 0 (pass), 77 (skip, with its reason on stdout), else fail.
# ONLY=NAME runs tests/integration/test_NAME.sh alone (a glob: ONLY='o*';
# several, separated by spaces: ONLY='record trace'); an ONLY that names no
# script fails (exit 2) rather than pass on no test. KEEP_TMP=1 keeps the
# temporary directory of a script that fails (its log says "kept DIR").
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-build}
export OUT BPFPY="$PWD/$OUT/bpfpy"
log_dir=$OUT/test-logs
mkdir -p "$log_dir/unit" "$log_dir/integration"
pass=0 fail=0 skip=0
failed=()

# A hung test must fail with its log, not hold CI until its own limit: each
# gets a bound (seconds) far above its usual time (the slowest, test_oracle,
# takes about 120 s on 2 CPUs), and the whole run one too (LIMIT_TOTAL, from
# the first test on): a test gets at most what is left of it, and one that
# would get less than a minute is failed as not run. The bound is a hang
# guard, not the suite's budget: CI gives a run 90 minutes, and a suite that
# grows past its usual time (30 to 32 minutes on 2 CPUs, README "Two
# commands") must fail by its tests, not by this bound (in CI, 1701 s of
# 1800 left no room for the next two tests).
LIMIT_UNIT=300 LIMIT_INTEGRATION=600 LIMIT_TOTAL=${LIMIT_TOTAL:-3300}
run() { # name, limit, command...
	local name=$1 limit=$2 rc start secs left sid live
	shift 2
	left=$((deadline - $(date +%s)))
	if ((left < 60)); then
		fail=$((fail + 1)); failed+=("$name")
		printf 'FAIL  %-40s not run: the suite bound of %d s is spent\n' "$name" "$LIMIT_TOTAL"
		return
	fi
	((limit > left)) && limit=$left
	start=$(date +%s%N)
	# In a session of its own: timeout kills its process group, but a
	# test's own `timeout CMD` makes a group of its own and would survive
	# (and load the CPUs for the tests after it); what is left in the
	# session when the test ends is killed by the session's id.
	setsid -w bash -c 'echo $$ >"$0"; exec timeout -k 10 "$@"' "$log_dir/$name.sid" \
		"$limit" "$@" >"$log_dir/$name.log" 2>&1
	rc=$?
	((rc == 124 || rc == 137)) && echo "run_all: killed after $limit s" >>"$log_dir/$name.log"
	sid=$(cat "$log_dir/$name.sid" 2>/dev/null)
	rm -f "$log_dir/$name.sid"
	# Zombies are not listed: they hold nothing, and one whose parent
	# has just exited is still in the session until init reaps it.
	if [[ -n $sid ]]; then
		live=$(ps -o pid=,stat=,args= -s "$sid" | awk '$2 !~ /^Z/')
		if [[ -n $live ]]; then
			{ echo "run_all: left running, killed:"; echo "$live"; } >>"$log_dir/$name.log"
			pkill -KILL -s "$sid"
		fi
	fi
	secs=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
	case $rc in
	0) pass=$((pass + 1)); printf 'PASS  %-40s %6ss\n' "$name" "$secs" ;;
	77) skip=$((skip + 1)); printf 'SKIP  %-40s %s\n' "$name" "$(tail -n 1 "$log_dir/$name.log")" ;;
	*) fail=$((fail + 1)); failed+=("$name"); printf 'FAIL  %-40s %6ss (rc %d)\n' "$name" "$secs" "$rc"
	   # the failed checks first (a CI page may show only the start of
	   # this), then the end of the log
	   grep -m 10 -E '^(FAIL|run_all):|FAIL: ' "$log_dir/$name.log" | cut -c1-400 | sed 's/^/      ! /'
	   sed 's/^/      | /' "$log_dir/$name.log" | tail -n 40 | cut -c1-600 ;;
	esac
}

if [ "$(id -u)" != 0 ]; then
	echo "tests: the integration tests need root (BPF, perf events, ptrace); run 'sudo make test'" >&2
	exit 1
fi
echo "== provisioning target interpreters (scripts/targets.sh)"
scripts/targets.sh > "$OUT/targets.txt" || { echo "no target interpreter found" >&2; exit 1; }
sed 's/^/   /' "$OUT/targets.txt"
export BPFPY_TARGETS="$PWD/$OUT/targets.txt"

deadline=$(($(date +%s) + LIMIT_TOTAL))
echo "== unit tests"
for bin in "$@"; do
	run "unit/$(basename "$bin")" $LIMIT_UNIT "$bin"
done
echo "== integration tests (root)"
read -ra only <<<"${ONLY:-*}"
matched=0
for name in "${only[@]}"; do
	for t in tests/integration/test_${name}.sh; do
		[ -e "$t" ] || continue
		matched=$((matched + 1))
		run "integration/$(basename "$t" .sh)" $LIMIT_INTEGRATION bash "$t"
	done
done
if [ -n "${ONLY:-}" ] && [ "$matched" -eq 0 ]; then
	echo "ONLY='$ONLY': no tests/integration/test_NAME.sh matches" >&2
	exit 2
fi
echo
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]} (logs in $log_dir/)"
echo "tests: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
