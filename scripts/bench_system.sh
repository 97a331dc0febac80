#!/bin/bash
# System-wide cost of `bpfpy record -a` (issue 13): N light Python processes
# (scripts/bench_system_light.py: a little work every 10 ms), recorded with
# `record -a -F 100 -d 10`. Prints, per N: samples, in-kernel us per sample
# and per frame (the record summary's own figures), bpfpy's CPU as % of one
# core over the run (user + system, startup included), the same without the
# start (steady), and its peak RSS;
# then the hot reference: the same in-kernel figure for one process
# spinning 3 frames deep (snippets/bench_shallow.py), so that the ratio the
# issue asks about (system-wide / hot <= 3) is on the same line.
#
# Usage: scripts/bench_system.sh [N ...]     (default: 50 200)
# Env:   BPFPY (default build/bpfpy), LABEL (default pyenv-3.12, any
#        scripts/targets.sh label), DURATION (10), RATE (100).
# Not a test: it prints figures. Every process it starts is killed on exit.
set -uo pipefail
[ "$(id -u)" = 0 ] || { echo "bench_system: needs root" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
BPFPY=${BPFPY:-$root/${OUT:-build}/bpfpy}
LABEL=${LABEL:-pyenv-3.12}
DURATION=${DURATION:-10}
RATE=${RATE:-100}
counts=("$@")
((${#counts[@]})) || counts=(50 200)
tmp=$(mktemp -d /tmp/bpfpy-bench-system.XXXXXX)
pids=()
stop_all() {
	((${#pids[@]})) && kill -9 "${pids[@]}" 2>/dev/null
	wait 2>/dev/null
	pids=()
}
trap 'stop_all; rm -rf "$tmp"' EXIT

# field FILE REGEX: the first number after REGEX in FILE, or "-".
field() { grep -oE "$2 [0-9.]+" "$1" | head -n 1 | awk '{ print $NF }' | grep . || echo -; }

# cpu_ticks PID: its user + system CPU so far, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null; }

# run_record OUTPREFIX ARGS...: bpfpy record under /usr/bin/time; leaves
# the summary in OUTPREFIX.err and "user sys maxrss_kb elapsed" in .time,
# and sets STEADY: bpfpy's CPU% from 2 s in to 1 s before the end, i.e.
# without the start (BPF verification, opening every process), "-" for
# runs shorter than 5 s.
run_record() {
	local p=$1 tp bp c0 c1 hz
	shift
	/usr/bin/time -o "$p.time" -f "%U %S %M %e" "$BPFPY" record "$@" -F "$RATE" \
		-d "$DURATION" -o "$p.folded" --force >/dev/null 2>"$p.err" &
	tp=$!
	STEADY=-
	if ((DURATION >= 5)); then
		sleep 2
		bp=$(pgrep -P "$tp" | head -n 1)
		c0=$(cpu_ticks "$bp")
		sleep $((DURATION - 3))
		c1=$(cpu_ticks "$bp")
		hz=$(getconf CLK_TCK)
		[ -n "$c0" ] && [ -n "$c1" ] &&
			STEADY=$(awk -v a="$c0" -v b="$c1" -v hz="$hz" -v t=$((DURATION - 3)) \
				'BEGIN { printf "%.2f", 100 * (b - a) / hz / t }')
	fi
	wait "$tp"
}

# The interpreter, resolved once: 200 starts through pyrun.sh would probe
# every interpreter 200 times. A chroot target runs the script copied into
# its /tmp.
IFS=$'\t' read -r _ _ troot tpy < <("$here/targets.sh" --no-provision --only "$LABEL")
[ -n "${tpy:-}" ] || { echo "bench_system: no target $LABEL" >&2; exit 1; }
light=$here/bench_system_light.py rdir=$tmp
if [ "$troot" != / ]; then
	rdir=$(mktemp -d "$troot/tmp/bpfpy-bench-system.XXXXXX")
	cp "$light" "$rdir/light.py"
	trap 'stop_all; rm -rf "$tmp" "$rdir"' EXIT
fi
# start_light I: one light process writing its readiness file $rdir/ready.I.
start_light() {
	if [ "$troot" = / ]; then
		"$tpy" "$light" "$rdir/ready.$1" >/dev/null 2>>"$tmp/light.log" &
	else
		chroot "$troot" "$tpy" "${rdir#"$troot"}/light.py" "${rdir#"$troot"}/ready.$1" \
			>/dev/null 2>>"$tmp/light.log" &
	fi
	pids+=("$!")
}

printf '%-6s %9s %11s %10s %11s %12s %9s\n' procs samples us/sample us/frame "bpfpy CPU%" "steady CPU%" "RSS MB"
for n in "${counts[@]}"; do
	rm -f "$rdir"/ready.*
	for ((i = 0; i < n; i++)); do
		start_light "$i"
	done
	# Each process writes its own fresh readiness file (renamed into place).
	for ((w = 0; w < 1200; w++)); do
		[ "$(find "$rdir" -maxdepth 1 -name 'ready.*' ! -name '*.tmp' | wc -l)" -ge "$n" ] && break
		sleep 0.1
	done
	ready=$(find "$rdir" -maxdepth 1 -name 'ready.*' ! -name '*.tmp' | wc -l)
	if [ "$ready" -lt "$n" ]; then
		echo "bench_system: only $ready of $n processes ready after 120 s: $(tail -c 300 "$tmp/light.log")" >&2
		stop_all
		continue
	fi
	run_record "$tmp/all$n" -a
	read -r u s m e <"$tmp/all$n.time"
	printf '%-6s %9s %11s %10s %11s %12s %9s\n' "$n" \
		"$(field "$tmp/all$n.err" emitted)" \
		"$(field "$tmp/all$n.err" 'in-kernel cost')" \
		"$(grep -oE '[0-9.]+ us/frame' "$tmp/all$n.err" | awk '{ print $1 }' | grep . || echo -)" \
		"$(awk -v u="$u" -v s="$s" -v e="$DURATION" 'BEGIN { printf "%.2f", 100 * (u + s) / e }')" \
		"$STEADY" "$(awk -v m="$m" 'BEGIN { printf "%.1f", m / 1024 }')"
	stop_all
done

# The hot reference: one process spinning 3 frames deep.
"$here/pyrun.sh" "$LABEL" "$root/snippets/bench_shallow.py" >/dev/null 2>&1 &
hot=$!
pids+=("$hot")
for ((w = 0; w < 100; w++)); do
	[ "$(awk '{ print $14 }' /proc/$hot/stat 2>/dev/null || echo 0)" -gt 20 ] && break # 0.2 s of CPU: running
	sleep 0.1
done
run_record "$tmp/hot" -p "$hot"
RATE=10000 DURATION=2 run_record "$tmp/hot10k" -p "$hot"
echo "hot reference, 1 process spinning 3 frames deep (-p): $(field "$tmp/hot.err" 'in-kernel cost') us/sample at $RATE Hz, $(field "$tmp/hot10k.err" 'in-kernel cost') us/sample at 10 kHz"
stop_all
