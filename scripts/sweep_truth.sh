#!/bin/bash
# The truth sweep (issue 12's "Done when"): modes bpf and ptrace on every
# snippet x every interpreter (scripts/targets.sh) x {1, 10} kHz. Prints one
# line per cell and mode,
#   CASE INTERPRETER KHZ MODE samples=N errors=N (P%) impossible=N unknown=N
# then a summary: impossible stacks in all (must be 0), stacks with an
# <unknown> frame, and bpf's error rate (failed attempts / attempts).
# Exit status: 0 when nothing impossible, no <unknown> frame and no cell
# without a sample was seen, 1 otherwise (or when an oracle run failed).
# A bpf cell without a sample is not counted when the ptrace reference of
# the same cell saw no thread running (state R) in any of its stacks: the
# program sleeps (deep_static), so a cpu-clock sampler has nothing to see.
#
#   scripts/sweep_truth.sh                 run the sweep (OUT=build dir)
#   scripts/sweep_truth.sh FILE.json...    summarize existing oracle --json
#                                          files or a build/leaderboard.json
#                                          (its bpf and ptrace rows)
# Environment: SWEEP_DURATION (s per window, default 1), SWEEP_WARMUP
# (default 0.3), SWEEP_PYTHONS, SWEEP_CASES (comma-separated; default all),
# SWEEP_RATES (default "1 10").
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$here/../build}
bpfpy=$OUT/bpfpy
files=("$@")
if ((${#files[@]} == 0)); then
	[[ -x $bpfpy ]] || { echo "sweep_truth.sh: no $bpfpy (run make)" >&2; exit 1; }
	pythons=${SWEEP_PYTHONS:-$("$here/targets.sh" | cut -f2 | paste -sd,)} || exit 1
	snip=()
	if [[ -n ${SWEEP_CASES:-} ]]; then
		IFS=, read -ra cs <<<"$SWEEP_CASES"
		for c in "${cs[@]}"; do snip+=(--snippet "$c"); done
	fi
	work=$(mktemp -d "${TMPDIR:-/tmp}/bpfpy-sweep.XXXXXX") || exit 1
	trap 'rm -rf "$work"' EXIT
	IFS=, read -ra pys <<<"$pythons"
	for py in "${pys[@]}"; do
		for rate in ${SWEEP_RATES:-1 10}; do
			echo "sweep: $py at $rate kHz" >&2
			"$bpfpy" oracle -q --python "$py" --rate "$rate" \
				--duration "${SWEEP_DURATION:-1}" --warmup "${SWEEP_WARMUP:-0.3}" \
				--mode ptrace --mode bpf "${snip[@]}" \
				--json "$work/$py-$rate.json" >"$work/$py-$rate.txt" 2>"$work/$py-$rate.err" ||
				echo "sweep: $py at $rate kHz: oracle exit $?: $(tail -1 "$work/$py-$rate.err")" >&2
			[[ -s $work/$py-$rate.json ]] && files+=("$work/$py-$rate.json")
		done
	done
fi
python3 - "${files[@]}" <<'PY'
import json, sys
docs = []
for path in sys.argv[1:]:
    d = json.load(open(path))
    if "runs" in d and "cases" not in d:  # a leaderboard
        docs += [r["oracle"] for r in d["runs"] if "oracle" in r]
    else:
        docs.append(d)
tot = {}
bad = 0
for o in docs:
    h = o["header"]
    for c in o["cases"]:
        # the ptrace reference's stacks, and how many had a thread running
        ref = [r for m in c["modes"] if m["mode"] == "ptrace" for r in m["runs"]]
        ref_stacks = sum(r["samples"] for r in ref)
        ref_running = sum(sum((r.get("running_distribution") or {}).values()) for r in ref)
        for m in c["modes"]:
            name = m["mode"]
            if name not in ("bpf", "ptrace"):
                continue
            for r in m["runs"]:
                unk = sum(1 for k in list(r.get("distribution") or {}) + list(r.get("impossible_stacks") or {})
                          if "<unknown>" in k)
                att = max(r["attempts"], 1)
                print("%-22s %-12s %4g %-7s samples=%-6d errors=%d (%.2f%%) impossible=%d unknown_keys=%d%s" % (
                    c["name"], h["python_label"], h["rate_khz"], name, r["samples"], r["errors"],
                    100.0 * r["errors"] / att, r["impossible"], unk,
                    "  note: " + r["note"] if r.get("note") else ""))
                t = tot.setdefault(name, [0, 0, 0, 0, 0, 0, 0])
                offcpu = name == "bpf" and r["samples"] == 0 and ref_stacks > 0 and ref_running == 0
                if offcpu:
                    print("%-22s %-12s %4g %-7s   no sample expected: the ptrace reference saw no "
                          "thread running in its %d stacks" % (c["name"], h["python_label"],
                                                               h["rate_khz"], name, ref_stacks))
                t[0] += 1; t[1] += r["attempts"]; t[2] += r["errors"]; t[3] += r["impossible"]
                t[4] += unk; t[5] += r["samples"] == 0 and not offcpu; t[6] += offcpu
                if r["impossible"] or unk or (r["samples"] == 0 and not offcpu):
                    bad += 1
for name, t in sorted(tot.items()):
    print("summary: %s: %d cells, %d attempts, %d errors (%.3f%%), %d impossible, "
          "%d <unknown> keys, %d cells without a sample (%d more off-CPU, none expected)" % (
              name, t[0], t[1], t[2], 100.0 * t[2] / max(t[1], 1), t[3], t[4], t[5], t[6]))
print("summary: %s" % ("0 impossible, 0 <unknown>" if not bad else "%d bad cells" % bad))
sys.exit(1 if bad or not tot else 0)
PY
