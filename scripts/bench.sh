#!/bin/sh
# make bench: sampler costs against issue 13's goals (scripts/bench.py, one
# table, JSON to $1), then the tracer's overhead (scripts/bench_trace.sh).
# Usage: scripts/bench.sh OUT.json [--quick] [bench.py options]
set -eu
[ "$(id -u)" = 0 ] || { echo "bench: needs root (BPF, perf events, ptrace)" >&2; exit 1; }
here=$(dirname "$0")
/usr/bin/python3 "$here/bench.py" "$@"
echo
echo "== tracer overhead (scripts/bench_trace.sh)"
case " $* " in
*" --quick "*) "$here/bench_trace.sh" 22 10 1 ;;
*) "$here/bench_trace.sh" ;;
esac
"$here/bench_offcpu.sh"
echo; echo "== --native in-kernel cost (scripts/bench_native.sh)"; "$here/bench_native.sh"
