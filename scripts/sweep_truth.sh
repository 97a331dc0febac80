#!/bin/bash
# The truth sweep (issue 12's "Done when"): modes bpf and ptrace on every
# snippet x every interpreter (scripts/targets.sh) x {1, 10} kHz. Prints one
# line per cell and mode,
#   CASE INTERPRETER KHZ MODE samples=N errors=N (P%) impossible=N unknown=N
# then a summary: impossible stacks in all (must be 0), stacks with an
# <unknown> frame, and bpf's error rate (failed attempts / attempts).
# Exit status: 0 when nothing impossible, no <unknown> frame and no cell
# without a sample was seen, 1 otherwise (or when an oracle run failed).
# A bpf cell without a sample is not counted when its case does not run on
# a CPU: the ptrace reference saw a thread running (state R) in under 5% of
# its stacks over the case's cells on 3.11+ (the interpreters whose thread
# state names its OS thread, so that the reference can tell; deep_static
# sleeps: 0-4% per cell), or, where no 3.11+ cell holds the case, in none of
# the cell's own stacks. A cpu-clock sampler then expects a handful of
# samples a window at most, and none is no fault.
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
def ver(h):
    return tuple(int(x) for x in h["python_version"].split(".")[:2])
def ref_counts(c):
    # the ptrace reference's stacks, and how many had a thread running
    ref = [r for m in c["modes"] if m["mode"] == "ptrace" for r in m["runs"]]
    return (sum(r["samples"] for r in ref),
            sum(sum((r.get("running_distribution") or {}).values()) for r in ref))
# Per case, over its 3.11+ cells: [stacks, running].
share = {}
for o in docs:
    if ver(o["header"]) >= (3, 11):
        for c in o["cases"]:
            s_, r_ = ref_counts(c)
            a = share.setdefault(c["name"], [0, 0])
            a[0] += s_; a[1] += r_
for o in docs:
    h = o["header"]
    for c in o["cases"]:
        ref_stacks, ref_running = ref_counts(c)
        cs = share.get(c["name"])
        sleeps = (cs[1] < 0.05 * cs[0]) if cs and cs[0] else (ref_stacks > 0 and ref_running == 0)
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
                offcpu = name == "bpf" and r["samples"] == 0 and sleeps
                if offcpu:
                    print("%-22s %-12s %4g %-7s   no sample expected: the case does not run on a "
                          "CPU (the ptrace reference saw a thread running in %d of %d stacks%s)" % (
                              c["name"], h["python_label"], h["rate_khz"], name,
                              cs[1] if cs else ref_running, cs[0] if cs else ref_stacks,
                              " over its 3.11+ cells" if cs else ""))
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
