#!/bin/bash
# The in-kernel cost of --native (bpf/native_unwind.bpf.h), one row per
# target x program:
#
#   scripts/bench_native.sh [LABEL...]      (default: debian-3.11 pyenv-3.10)
#
# Each program of snippets/ (bench_shallow: 3 Python frames, bench_deep: 300)
# runs under the target and is recorded twice for DUR seconds (default 3) at
# 1 kHz: plain, then with native and kernel unwinding on (BPFPY_NATIVE_RAW,
# which also dumps each record's addresses). us/sample is bpfpy's own
# "in-kernel cost" figure (bpf_ktime_get_ns around the whole program, mean
# per kept tick); native frames is the mean per record from the dump; the
# per-native-frame figure is (native - plain) / native frames, i.e. it
# includes the fixed part (regs, two map lookups, bpf_get_stack of an empty
# kernel stack). Not a test: it prints figures, asserts nothing. Root.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
BPFPY=${BPFPY:-$root/${OUT:-build}/bpfpy}
DUR=${DUR:-3}
[ "$(id -u)" = 0 ] || { echo "bench_native: needs root" >&2; exit 1; }
(($#)) || set -- debian-3.11 pyenv-3.10
tmp=$(mktemp -d /tmp/bpfpy-bench-native.XXXXXX)
trap 'kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
pid=
cost() { sed -n 's/.*in-kernel cost \([0-9.]*\) us\/sample.*/\1/p' "$1" | head -1; }

printf '%-12s %-14s %10s %10s %10s %14s\n' target program plain_us native_us frames us/native_fr
for label in "$@"; do
	for prog in bench_shallow bench_deep; do
		(cd "$root/snippets" && exec "$here/pyrun.sh" "$label" "$root/snippets/$prog.py") >/dev/null 2>&1 &
		pid=$!
		sleep 1
		"$BPFPY" record -p "$pid" -d "$DUR" -f raw -o /dev/null --force 2>"$tmp/plain.err"
		rm -f "$tmp/raw"
		BPFPY_NATIVE_RAW=$tmp/raw "$BPFPY" record -p "$pid" -d "$DUR" -f raw -o /dev/null \
			--force 2>"$tmp/native.err"
		kill -9 "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		p=$(cost "$tmp/plain.err") n=$(cost "$tmp/native.err")
		f=$(awk '{ s += $5; c++ } END { if (c) printf "%.1f", s / c; else print 0 }' "$tmp/raw" 2>/dev/null)
		printf '%-12s %-14s %10s %10s %10s %14s\n' "$label" "$prog" "${p:-?}" "${n:-?}" "$f" \
			"$(awk -v p="${p:-0}" -v n="${n:-0}" -v f="$f" 'BEGIN { if (f > 0) printf "%.3f", (n - p) / f; else print "-" }')"
	done
done
