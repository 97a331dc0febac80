#!/bin/bash
# The gate's false-alarm rate (issue 27, docs/oracle-gate.md): REPEATS+1
# runs of the same samplers (ptrace reference, live, bpf) on three cases at
# --runs 3, each compared with the one before by `bpfpy oracle --compare`;
# prints per comparison and in total how many rows were called worse, and
# by metric. Noise alone must call at most 5% of rows worse: the gate
# corrects for multiplicity within one comparison (Holm), so the share of
# worse rows over many comparisons is the figure to check.
#
# Usage: scripts/gate_false_alarms.sh [REPEATS [PYTHON_LABEL [DURATION]]]
#   REPEATS   comparisons (default 20: 21 oracle runs)
#   LABEL     an interpreter label of scripts/targets.sh (default: the
#             host's first)
#   DURATION  seconds per window (default 1)
# Needs root. Run it with the machine otherwise idle: the oracle pins its
# targets at nice -20 and a second experiment's load is part of what the
# between-run spread measures.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$here/../build}
bpfpy=$OUT/bpfpy
repeats=${1:-20}
label=${2:-}
dur=${3:-1}
[ "$(id -u)" = 0 ] || { echo "gate_false_alarms: needs root" >&2; exit 1; }
[ -x "$bpfpy" ] || { echo "gate_false_alarms: build first ($bpfpy)" >&2; exit 1; }
if [ -z "$label" ]; then
	label=$("$here/targets.sh" --no-provision | awk -F'\t' '$3 == "/" { print $2; exit }')
fi
[ -n "$label" ] || { echo "gate_false_alarms: no interpreter" >&2; exit 1; }
dir=$(mktemp -d /tmp/bpfpy-gate-fa.XXXXXX)
trap 'rm -rf "$dir"' EXIT
echo "gate false alarms: $label, $repeats comparisons, ${dur}s windows, --runs 3, $(date -u +%FT%TZ)"
total=0 worse=0
declare -A by_metric_w by_metric_n
for ((i = 0; i <= repeats; i++)); do
	# A run with a window that took no sample (exit 1: on a loaded machine
	# a mode can lose its whole window) is run once more, and said: the
	# rate is about the rows of runs that completed.
	for try in 1 2; do
		"$bpfpy" oracle -q --rate 1 --warmup 0.3 --duration "$dur" --runs 3 \
			--python "$label" --snippet flat_alternating --snippet nested_alternating \
			--snippet shared_leaf --mode ptrace --mode live --mode bpf \
			--json "$dir/r$i.json" --force > "$dir/r$i.txt" 2> "$dir/r$i.err" && break
		echo "run $i, try $try failed: $(tail -2 "$dir/r$i.err" | tr '\n' ' ')" >&2
		((try == 2)) && exit 1
	done
	((i == 0)) && continue
	"$bpfpy" oracle --compare "$dir/r$((i - 1)).json" "$dir/r$i.json" > "$dir/c$i.txt" 2>&1
	rc=$?
	[[ $rc == 0 || $rc == 9 ]] || { echo "compare $i: exit $rc" >&2; cat "$dir/c$i.txt" >&2; exit 1; }
	read -r w b s n < <(awk '/^gate: [0-9]+ worse/ { print $2, $4, $6, $8 }' "$dir/c$i.txt")
	rows=$((w + b + s))
	total=$((total + rows)) worse=$((worse + w))
	load=$(grep -o "other_load=[0-9.]*" "$dir/r$i.txt" "$dir/r$i.err" 2>/dev/null | head -1 | sed "s/.*://")
	echo "comparison $i: $w worse, $b better, $s same, $n n/a (exit $rc; ${load:-other_load ?})"
	# per metric: a row is CASE MODE METRIC ... VERDICT TEST
	while read -r metric verdict; do
		by_metric_n[$metric]=$((${by_metric_n[$metric]:-0} + 1))
		[[ $verdict == worse ]] && by_metric_w[$metric]=$((${by_metric_w[$metric]:-0} + 1))
	done < <(awk 'NF >= 9 && $(NF - 1) ~ /^(worse|same|better)$/ { print $3, $(NF - 1) }' "$dir/c$i.txt")
done
awk -v w="$worse" -v t="$total" 'BEGIN { printf "total: %d of %d rows worse (%.1f%%)\n", w, t, t ? 100 * w / t : 0 }'
for m in "${!by_metric_n[@]}"; do
	echo "  $m: ${by_metric_w[$m]:-0} of ${by_metric_n[$m]} worse"
done | sort
