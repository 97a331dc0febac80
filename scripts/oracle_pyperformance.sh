#!/bin/bash
# pyperformance's benchmark programs, unchanged, under `bpfpy oracle` with
# every peer: the programs issue 26 tried (real code nobody here wrote).
#
#   scripts/oracle_pyperformance.sh BENCHMARKS_DIR LABEL KHZ OUT.json [oracle options]
#
# BENCHMARKS_DIR is pyperformance's pyperformance/data-files/benchmarks (a
# checkout: pyperformance is not in Debian and PyPI is not reachable here).
# Each bm_NAME/run_benchmark.py of BENCH (default: the twelve of issue 26)
# is copied, unchanged, as bm_NAME.py into one directory beside
# scripts/pyperf_shim/pyperf.py, which runs the benchmark in the target
# process until the window ends (pyperf itself would run it in workers).
# The names keep the bm_ prefix so that no program shadows a standard
# module (bm_pprint imports pprint). No rules: each case is judged on its
# distribution against the reference, and on what the modes show that the
# reference never does (impossible% counts nothing without rules).
#
# Prints the oracle's table; writes its --json to OUT.json. Environment:
# BENCH (space-separated names), DURATION (default 1 s), WARMUP (0.5 s).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$here/../build}
(($# >= 4)) || { sed -n '2,19p' "$0" >&2; exit 2; }
src=$1 label=$2 khz=$3 json=$4
shift 4
bench=${BENCH:-raytrace richards generators deepcopy chaos go hexiom coroutines nqueens json_dumps pprint comprehensions}
dir=$(mktemp -d "${TMPDIR:-/tmp}/bpfpy-pyperformance.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
cp "$here/pyperf_shim/pyperf.py" "$dir/" || exit 1
snip=()
for b in $bench; do
	[[ -f $src/bm_$b/run_benchmark.py ]] || { echo "oracle_pyperformance.sh: no $src/bm_$b/run_benchmark.py" >&2; exit 2; }
	cp "$src/bm_$b/run_benchmark.py" "$dir/bm_$b.py" || exit 1
	snip+=(--snippet "$dir/bm_$b.py")
done
chmod -R a+rX "$dir"
exec "$OUT/bpfpy" oracle -q --python "$label" --rate "$khz" --duration "${DURATION:-1}" \
	--warmup "${WARMUP:-0.5}" --mode ptrace --mode live --mode bpf --peers "${snip[@]}" \
	--json "$json" "$@"
