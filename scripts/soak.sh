#!/bin/bash
# Soak (make soak; not part of CI): SOAK_SECONDS (600) of `bpfpy record -a`
# at 1 kHz on the CPU clock and, at the same time, on the wall clock,
# against churning Python processes of every target version, the sid
# chroot's 3.14/3.15 included (one
# started every second, each living 3 s and running a fresh code object
# per iteration, so code objects die and their addresses get reused).
# Prints each recorder's RSS and open fds shortly after start, every minute,
# and at the end, the lost share from its summary, and its "code cache" line
# (the most code objects any one process's cache held, against the bound).
# The cache is bounded by construction (CODE_CACHE_DEFAULT_CAP entries per
# process, each at most two PYSTR_DEFAULT_CAP names and a
# PYBYTES_DEFAULT_CAP table, freed with the process): flat RSS across
# hundreds of processes is the evidence that dead caches are released.
# SOAK_KEEP=1 keeps the recorders' outputs and summaries (the temp dir).
# "processes" counts every Python process a recorder met: the churn targets
# and the short version probes scripts/pyrun.sh runs before each.
# Fails if RSS grows by more than SOAK_RSS_GROWTH_KB (20 MB) or fds by more
# than 8, the lost share exceeds SOAK_MAX_LOST (1%), or a cache passed
# its bound.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-build}
BPFPY=${BPFPY:-$PWD/$OUT/bpfpy}
SECS=${SOAK_SECONDS:-600}
GROWTH_KB=${SOAK_RSS_GROWTH_KB:-20480}
MAX_LOST=${SOAK_MAX_LOST:-0.01}
TMP=$(mktemp -d /tmp/bpfpy-soak.XXXXXX)
churn_pid=
cleanup() {
	for p in $churn_pid ${cpu:-} ${wall:-}; do kill "$p" 2>/dev/null; done
	[ -n "${SOAK_KEEP:-}" ] && echo "soak: kept $TMP" || rm -rf "$TMP"
}
trap cleanup EXIT
[ "$(id -u)" = 0 ] || { echo "soak: needs root" >&2; exit 1; }
mapfile -t labels < <(scripts/targets.sh --no-provision | cut -f2)
[ ${#labels[@]} -gt 0 ] || { echo "soak: no host target" >&2; exit 1; }
cat > "$TMP/churn.py" <<'PY'
import time
end = time.monotonic() + 3
i = 0
while time.monotonic() < end:
    i += 1
    # A new code object every iteration (same source, so the set of
    # distinct stacks stays small and RSS growth would be a leak, not
    # profile content): the cache sees deaths and address reuse.
    exec(compile("def f(n):\n    return sum(range(n))\nf(2000)", "<churn>", "exec"))
PY

# One interpreter per second, every version in turn.
(
	k=0
	while :; do
		scripts/pyrun.sh "${labels[k % ${#labels[@]}]}" "$TMP/churn.py" > /dev/null 2>&1 &
		k=$((k + 1))
		sleep 1
	done
) &
churn_pid=$!

"$BPFPY" record -a -F 1khz -d "$SECS" -o "$TMP/cpu.folded" 2> "$TMP/cpu.err" &
cpu=$!
"$BPFPY" record -a --clock wall -F 1khz -d "$SECS" -o "$TMP/wall.folded" 2> "$TMP/wall.err" &
wall=$!

probe() { # pid -> "RSS_kB FDS"
	echo "$(awk '/^VmRSS/ {print $2}' /proc/"$1"/status 2>/dev/null) $(ls /proc/"$1"/fd 2>/dev/null | wc -l)"
}
sleep 10
read -r cpu_rss0 cpu_fd0 <<< "$(probe $cpu)"
read -r wall_rss0 wall_fd0 <<< "$(probe $wall)"
left=$((SECS > 15 ? SECS - 15 : 1))
for ((m = 60; m < left; m += 60)); do # the curve, not just its ends
	sleep 60
	echo "soak t=$((m + 10))s: cpu RSS/fds $(probe $cpu), wall RSS/fds $(probe $wall)"
done
sleep $((left % 60 ? left % 60 : (left >= 60 ? 60 : left)))
read -r cpu_rss1 cpu_fd1 <<< "$(probe $cpu)"
read -r wall_rss1 wall_fd1 <<< "$(probe $wall)"
wait $cpu; cpu_rc=$?
wait $wall; wall_rc=$?
kill "$churn_pid" 2>/dev/null
churn_pid=

fail=0
report() { # name rc rss0 rss1 fd0 fd1 errfile
	local name=$1 rc=$2 r0=$3 r1=$4 f0=$5 f1=$6 err=$7 line ticks lost share npids
	line=$(grep -m1 '^ *ticks' "$err")
	ticks=$(sed -n 's/.*ticks \([0-9]*\).*/\1/p' <<< "$line")
	lost=$(sed -n 's/.*lost \([0-9]*\).*/\1/p' <<< "$line")
	share=$(awk -v l="${lost:-0}" -v t="${ticks:-0}" 'BEGIN {printf "%.4f", t ? l / t : 0}')
	npids=$(($(grep -c '^ *pid ' "$err") + $(awk '/^ *\.\.\. [0-9]+ more processes/ {print $2; exit}' "$err" | grep . || echo 0)))
	echo "soak $name: ${SECS}s, exit $rc, RSS ${r0} -> ${r1} kB, fds ${f0} -> ${f1}, processes $npids, ticks ${ticks:-?}, lost ${lost:-?} (share $share)"
	grep -m1 'code cache:' "$err" | sed "s/^ */  $name /"
	grep -m1 'code cache:' "$err" | awk '{for (i = 1; i <= NF; i++) if ($i == "(bound") {gsub(/[^0-9]/, "", $(i + 1)); big = $(i - 1) + 0; exit !(big <= $(i + 1) + 0)}}' || fail=1
	[ "$rc" -eq 0 ] || fail=1
	[ -n "$r0" ] && [ -n "$r1" ] && [ $((r1 - r0)) -le "$GROWTH_KB" ] || fail=1
	[ -n "$f0" ] && [ -n "$f1" ] && [ $((f1 - f0)) -le 8 ] || fail=1
	awk -v s="$share" -v m="$MAX_LOST" 'BEGIN {exit !(s <= m)}' || fail=1
}
report "cpu  (record -a -F 1khz)" $cpu_rc "$cpu_rss0" "$cpu_rss1" "$cpu_fd0" "$cpu_fd1" "$TMP/cpu.err"
report "wall (record -a --clock wall)" $wall_rc "$wall_rss0" "$wall_rss1" "$wall_fd0" "$wall_fd1" "$TMP/wall.err"
tail -n 4 "$TMP/cpu.err" | sed 's/^/  cpu: /'
tail -n 4 "$TMP/wall.err" | sed 's/^/  wall: /'
[ "$fail" -eq 0 ] && echo "soak: ok" || echo "soak: FAILED"
exit $fail
