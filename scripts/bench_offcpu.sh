#!/bin/bash
# The in-kernel cost of record --clock offcpu per context switch.
#
#   scripts/bench_offcpu.sh [SECONDS]     (root; default 5 s)
#
# The off-CPU program (bpf/offcpu.bpf.c) runs at EVERY context switch of the
# host, so its cost is paid by every process, not only the target's. It is
# measured by the kernel's own BPF statistics (kernel.bpf_stats_enabled,
# switched on for the run and restored after): run_time_ns / run_cnt of the
# program over a window in the middle of a recording of
# tests/integration/py/offcpu_four.py (five threads switching ~1500 times a
# second together), on Debian's python3.11. Printed:
#   - ns per context switch, all switches of the host averaged (the price
#     every process pays while bpfpy records with --clock offcpu or wall);
#   - us per target switch-out, from bpfpy's own counter (the stack walk and
#     its copy into task storage, the part only the target's switches pay).
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "bench_offcpu: needs root" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
secs=${1:-5}
BPFPY=${BPFPY:-$root/${OUT:-build}/bpfpy}
BPFTOOL=$(command -v bpftool || echo /usr/sbin/bpftool)
PY=/usr/bin/python3.11
[ -x "$PY" ] || PY=$(command -v python3)
tmp=$(mktemp -d /tmp/bench-offcpu.XXXXXX)
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
py=
rec=
cleanup() {
	sysctl -q -w kernel.bpf_stats_enabled="$old_stats" || true
	[ -n "$rec" ] && kill "$rec" 2>/dev/null || true
	[ -n "$py" ] && kill -9 "$py" 2>/dev/null && wait "$py" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

echo "== off-CPU program cost per context switch (scripts/bench_offcpu.sh)"
"$PY" "$root/tests/integration/py/offcpu_four.py" >"$tmp/py.out" 2>&1 &
py=$!
for ((i = 0; i < 200; i++)); do
	grep -q '^ready' "$tmp/py.out" && break
	kill -0 "$py" 2>/dev/null || { echo "bench_offcpu: target died: $(head -c 300 "$tmp/py.out")"; exit 1; }
	sleep 0.05
done
sysctl -q -w kernel.bpf_stats_enabled=1
before=$("$BPFTOOL" prog show -j | /usr/bin/python3 -c '
import json, sys
print(" ".join(str(p["id"]) for p in json.load(sys.stdin) if p.get("name") == "on_switch"))')
"$BPFPY" record -p "$py" --clock offcpu -d $((secs + 2)) -o "$tmp/off.folded" 2>"$tmp/rec.err" &
rec=$!

# prog_stats: "run_time_ns run_cnt" of our bpfpy's on_switch program, the
# one that was not loaded before it started (bpftool here cannot tell the
# owning pid).
prog_stats() {
	"$BPFTOOL" prog show -j | /usr/bin/python3 -c '
import json, sys
old = set(sys.argv[1].split())
for p in json.load(sys.stdin):
    if p.get("name") == "on_switch" and str(p["id"]) not in old:
        print(p.get("run_time_ns", 0), p.get("run_cnt", 0)); break' "$before"
}
a=
for ((i = 0; i < 200; i++)); do # the program is attached when it shows
	a=$(prog_stats)
	[ -n "$a" ] && break
	kill -0 "$rec" 2>/dev/null || break
	sleep 0.05
done
[ -n "$a" ] || { echo "bench_offcpu: on_switch never appeared: $(tail -n 3 "$tmp/rec.err")"; exit 1; }
sleep 1
a=$(prog_stats)
t0=$(date +%s.%N)
sleep "$secs"
b=$(prog_stats)
t1=$(date +%s.%N)
wait "$rec" || { echo "bench_offcpu: record failed: $(tail -n 3 "$tmp/rec.err")"; exit 1; }
rec=
read -r ta ca <<<"$a"
read -r tb cb <<<"$b"
n=$((cb - ca))
((n > 0)) || { echo "bench_offcpu: no context switch counted"; exit 1; }
out=$(sed -n 's/.*in-kernel \([0-9.]*\) us per target switch-out.*/\1/p' "$tmp/rec.err")
targ=$(sed -n 's/.* \([0-9]*\) by targets,.*/\1/p' "$tmp/rec.err")
seen=$(sed -n 's/.*off-CPU: \([0-9]*\) context switches seen.*/\1/p' "$tmp/rec.err")
awk -v t=$((tb - ta)) -v n="$n" -v dt="$(echo "$t1 - $t0" | bc)" -v out="$out" -v targ="$targ" -v seen="$seen" 'BEGIN {
	printf "  %.0f ns per context switch, mean over all %d switches of the host in %.1f s (%.0f/s)\n", t / n, n, dt, n / dt
	# The target share of the window, in the proportion of the whole run.
	k = seen > 0 ? n * targ / seen : 0
	if (n > k)
		printf "  %.0f ns per switch of other processes (the target\047s %.0f switch-outs at %s us taken out)\n", (t - k * out * 1000) / (n - k), k, out
	printf "  %s us per target switch-out (walk and store); %d of the run\047s %d switches were by the target\n", out, targ, seen
}'
