#!/bin/sh
# make bench: see scripts/bench.py. Usage: scripts/bench.sh OUT.json [--quick]
set -eu
[ "$(id -u)" = 0 ] || { echo "bench: needs root (BPF, perf events, ptrace)" >&2; exit 1; }
exec /usr/bin/python3 "$(dirname "$0")/bench.py" "$@"
