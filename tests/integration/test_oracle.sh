#!/bin/bash
# bpfpy oracle end to end, on every interpreter of scripts/targets.sh:
# flat_alternating and ground_truth, modes ptrace (the reference) and bpf,
# a short window at a low rate.
#
# What it proves, per interpreter:
#  - the reference and bpf both show 0 impossible stacks on flat_alternating
#    (each function on its one line, families never mixed);
#  - bpf's distribution agrees with the reference's: tvd_excess <= 0.25.
#    Generous on purpose: ~200 samples per mode give an IID floor near 0.04
#    and consecutive samples are correlated, and the box may be loaded (the
#    reference's stops then take long, and it sees fewer distinct states).
#    A wrong line or a swapped family gives a TVD near 1, far above;
#  - every column of the table is printed, and the JSON is valid;
#  - ground_truth: tvd_truth is computed for both modes (the snippet wrote
#    its measured time split at SIGTERM and the oracle read it).
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "skip: needs root (ptrace, BPF)"; exit 77; }
[ -x "$BPFPY" ] || { echo "skip: $BPFPY not built"; exit 77; }
TOL=0.25
COLS="mode samples µs errors% impossible impossible% tvd_excess tvd_floor raw_tvd tvd_noise tvd_fn tvd_truth slowdown% lost µs_target µs_sampler"

while IFS=$'\t' read -r ver label root py; do
	out=$TMP/$label.txt
	json=$TMP/$label.json
	if ! "$BPFPY" oracle --python "$label" --snippet flat_alternating --snippet ground_truth \
		--mode ptrace --mode bpf --duration 1 --warmup 0.3 --rate 0.2 --json "$json" -q \
		> "$out" 2> "$TMP/$label.err"; then
		bad "$label: oracle failed: $(tail -3 "$TMP/$label.err")"
		continue
	fi
	head -1 "$out" | grep -q "^Python $ver \[$label\] cases=2 runs=1 duration=1 rate_khz=0.2 warmup=0.3 poisson_sampling=False" \
		&& ok "$label: header" || bad "$label: header: $(head -1 "$out")"
	hdr=$(grep -m1 '^mode ' "$out")
	missing=""
	for c in $COLS; do
		grep -qw -- "$c" <<< "$hdr" || missing="$missing $c"
	done
	[ -z "$missing" ] && ok "$label: every column" || bad "$label: columns missing:$missing"
	grep -q '^ptrace .* ref .* ref ' "$out" && ok "$label: reference row shows ref" \
		|| bad "$label: reference row: $(grep '^ptrace' "$out" | head -1)"
	if ! python3 -m json.tool "$json" > /dev/null; then
		bad "$label: JSON invalid"
		continue
	fi
	ok "$label: JSON valid"
	"$CHECKPY" "$CHECK/oracle_figures.py" "$json" "$TOL" && ok "$label: figures" || bad "$label: figures (above)"
done < <(targets)
finish
