#!/bin/bash
# Soak of the agent (make soak; not part of CI; docs/agent.md): `bpfpy
# record -a --rotate` for SOAK_WINDOWS windows (60) of SOAK_ROTATE seconds
# (60: an hour) at SOAK_RATE Hz (997) on the CPU clock, with --keep 10,
# against churning Python processes of every target version, the sid
# chroot's included: one started every second, each living 3 s and
# compiling a fresh code object per iteration (so code objects die and
# their addresses are reused, and targets exit all the time).
#
# Prints one line per window from record's --window-stats: its samples and
# stacks, bpfpy's RSS and open fds, targets live and freed, code objects
# cached (and the largest any one cache held). Then the goal: anonymous
# memory (RssAnon: what bpfpy allocated, without file-backed pages) after the
# last window within SOAK_RSS_PCT (10) percent of its value after window
# SOAK_BASE (5; 2 for runs of under 10 windows), fds within 4, the largest
# cache within its bound, exit 0, and at most 10 windows' files in the
# directory. Fails otherwise.
#
# Short form, to see it work: SOAK_WINDOWS=8 SOAK_ROTATE=5 make soak
# The hour: make soak (SOAK_WINDOWS=60 SOAK_ROTATE=60).
# SOAK_KEEP=1 keeps the directory, the stderr and the churn's script.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-build}
BPFPY=${BPFPY:-$PWD/$OUT/bpfpy}
WINDOWS=${SOAK_WINDOWS:-60}
ROTATE=${SOAK_ROTATE:-60}
RATE=${SOAK_RATE:-997}
PCT=${SOAK_RSS_PCT:-10}
BASE=${SOAK_BASE:-$((WINDOWS < 10 ? 2 : 5))}
TMP=$(mktemp -d /tmp/bpfpy-soak-agent.XXXXXX)
churn_pid= rec=
cleanup() {
	[ -n "$churn_pid" ] && kill "$churn_pid" 2>/dev/null
	[ -n "$rec" ] && kill "$rec" 2>/dev/null
	[ -s "$TMP/churn.pids" ] && while read -r p; do kill -9 "$p" 2>/dev/null; done <"$TMP/churn.pids"
	[ -n "${SOAK_KEEP:-}" ] && echo "soak: kept $TMP" || rm -rf "$TMP"
}
trap cleanup EXIT
[ "$(id -u)" = 0 ] || { echo "soak: needs root" >&2; exit 1; }
mapfile -t labels < <(scripts/targets.sh --no-provision | cut -f2)
[ ${#labels[@]} -gt 0 ] || { echo "soak: no host target" >&2; exit 1; }
cat >"$TMP/churn.py" <<'PY'
import time
end = time.monotonic() + 3
while time.monotonic() < end:
    exec(compile("def f(n):\n    return sum(range(n))\nf(2000)", "<churn>", "exec"))
PY
(
	k=0
	while :; do
		scripts/pyrun.sh "${labels[k % ${#labels[@]}]}" "$TMP/churn.py" >/dev/null 2>&1 &
		echo $! >>"$TMP/churn.pids"
		# Only the recent ones can still run: the file stays small.
		((k % 100 == 99)) && tail -n 20 "$TMP/churn.pids" >"$TMP/p" && mv "$TMP/p" "$TMP/churn.pids"
		k=$((k + 1))
		sleep 1
	done
) &
churn_pid=$!
mkdir "$TMP/dir"
SECS=$(awk -v w="$WINDOWS" -v r="$ROTATE" 'BEGIN {print w * r}')
echo "soak: $WINDOWS windows of $ROTATE s at $RATE Hz over ${#labels[@]} interpreters (${SECS} s)"
"$BPFPY" record -a -F "$RATE" --rotate "$ROTATE" --keep 10 --window-stats -d "$SECS" \
	-o "$TMP/dir/" 2>"$TMP/err" &
rec=$!
# The windows as they end.
tail -n +1 -F "$TMP/err" 2>/dev/null | grep --line-buffered 'record: window [0-9]* ' &
tailer=$!
wait "$rec"
rc=$?
rec=
sleep 0.5
kill "$tailer" 2>/dev/null
kill "$churn_pid" 2>/dev/null
churn_pid=

fail=0
rss() { sed -n "s/.*record: window $1 .*RSS \([0-9]*\) kB.*/\1/p" "$TMP/err"; }
anon() { sed -n "s/.*record: window $1 .*(anon \([0-9]*\) kB).*/\1/p" "$TMP/err"; }
fds() { sed -n "s/.*record: window $1 .* \([0-9]*\) fds;.*/\1/p" "$TMP/err"; }
n=$(grep -c 'record: window [0-9]* ' "$TMP/err")
last=$n
r0=$(rss "$BASE") r1=$(rss "$last") f0=$(fds "$BASE") f1=$(fds "$last")
a0=$(anon "$BASE") a1=$(anon "$last")
grep -E '^ *(ticks|code cache|bpfpy CPU|rotate:|\.\.\. [0-9]+ processes)' "$TMP/err" | sed 's/^ */  /'
echo "soak: exit $rc, $n windows; RSS after window $BASE ${r0:-?} kB (anon ${a0:-?}), after window $last ${r1:-?} kB (anon ${a1:-?}); fds ${f0:-?} -> ${f1:-?}"
[ "$rc" = 0 ] || fail=1
[ "$n" -ge "$WINDOWS" ] || { echo "soak: $n windows, expected $WINDOWS"; fail=1; }
# The goal is on anonymous memory, what bpfpy allocates: RSS also counts
# the ring buffer's pages as the kernel first writes them (file-backed, at
# most the ring's size), which grow with the busiest burst, not with time.
if [ -n "$a0" ] && [ -n "$a1" ]; then
	awk -v a="$r0" -v b="$r1" 'BEGIN {printf "soak: RSS change %+.1f%% (ring buffer pages included)\n", 100 * (b - a) / a}'
	awk -v a="$a0" -v b="$a1" -v p="$PCT" 'BEGIN {g = 100 * (b - a) / a; printf "soak: anonymous memory change %+.1f%% (goal within %d%%)\n", g, p; exit !(g <= p && g >= -p)}' || fail=1
else
	fail=1
fi
[ -n "$f0" ] && [ -n "$f1" ] && [ $((f1 - f0)) -le 4 ] || fail=1
files=$(ls "$TMP/dir" | cut -c1-22 | sort -u | wc -l)
[ "$files" -le 10 ] || { echo "soak: $files windows in the directory, --keep 10"; fail=1; }
grep -m1 'code cache:' "$TMP/err" | awk '{for (i = 1; i <= NF; i++) if ($i == "(bound") {gsub(/[^0-9]/, "", $(i + 1)); big = $(i - 1) + 0; exit !(big <= $(i + 1) + 0)}}' || fail=1
[ "$fail" -eq 0 ] && echo "soak: ok" || echo "soak: FAILED"
exit $fail
