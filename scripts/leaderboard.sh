#!/bin/bash
# `make leaderboard`: every oracle case x every available interpreter x
# {1, 10} kHz x every mode (ptrace, live, bpf, bpf-wall) and every peer that
# supports the interpreter (bpfpy oracle --peers), in one run, written as
#   $OUT/leaderboard.json   each oracle run's --json, with the machine
#   $OUT/leaderboard.md     one row per case x interpreter x rate x mode
#
# Environment:
#   LEADERBOARD_DURATION  seconds per window (default 3, the oracle's)
#   LEADERBOARD_QUICK=1   a test run: 4 cases, 3 interpreters (the newest
#                         Austin 1.0.1, sid-Austin and Tachyon ones), ptrace,
#                         bpf and the peers, 1 s windows unless told
#   LEADERBOARD_PYTHONS   interpreter labels, comma-separated (default: all)
#   LEADERBOARD_CASES     cases, comma-separated (default: all)
#
# One oracle run per interpreter and rate; each runs its windows one after
# another (README "Leaderboard" has the time a full run takes). A run that
# fails is kept in the JSON with its exit status and stderr, never dropped.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$here/../build}
bpfpy=$OUT/bpfpy
quick=${LEADERBOARD_QUICK:-0}
dur=${LEADERBOARD_DURATION:-$( ((quick)) && echo 1 || echo 3)}
modes=(--mode ptrace --mode live --mode bpf --mode bpf-wall --peers)
cases=${LEADERBOARD_CASES:-}
pythons=${LEADERBOARD_PYTHONS:-}
if ((quick)); then
	modes=(--mode ptrace --mode bpf --peers)
	cases=${cases:-flat_alternating,gen_alternating,code_object_reuse,deep_recursion}
	pythons=${pythons:-pyenv-3.10,pyenv-3.12,sid-3.15}
fi
[[ -x $bpfpy ]] || { echo "leaderboard.sh: no $bpfpy (run make)" >&2; exit 1; }
if [[ -z $pythons ]]; then
	pythons=$("$here/targets.sh" | cut -f2 | paste -sd,) || exit 1
fi
snip=()
IFS=, read -ra cs <<<"$cases"
for c in "${cs[@]}"; do snip+=(--snippet "$c"); done

work=$(mktemp -d "${TMPDIR:-/tmp}/bpfpy-leaderboard.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
t0=$(date +%s)
IFS=, read -ra pys <<<"$pythons"
for py in "${pys[@]}"; do
	for rate in 1 10; do
		base=$work/$py-$rate
		echo "leaderboard: $py at $rate kHz ($(($(date +%s) - t0)) s so far)" >&2
		"$bpfpy" oracle -q --python "$py" --rate "$rate" --duration "$dur" "${modes[@]}" \
			"${snip[@]}" --json "$base.json" >"$base.txt" 2>"$base.err"
		echo $? >"$base.rc"
	done
done

python3 - "$work" "$OUT/leaderboard.json" "$OUT/leaderboard.md" "$quick" "$dur" \
	"$cases" "$pythons" "$(($(date +%s) - t0))" <<'EOF'
import glob, json, os, platform, sys, time
work, jpath, mpath, quick, dur, cases, pythons, secs = sys.argv[1:]
runs = []
for rc in sorted(glob.glob(os.path.join(work, "*.rc"))):
    base = rc[:-3]
    run = {"name": os.path.basename(base), "exit": int(open(rc).read() or -1),
           "stderr": open(base + ".err", errors="replace").read()[-4000:]}
    if os.path.exists(base + ".json"):
        run["oracle"] = json.load(open(base + ".json"))
    runs.append(run)
machine = {"nproc": os.cpu_count(), "kernel": platform.release(), "arch": platform.machine()}
loads = [r["oracle"]["header"]["other_load_cpus"] for r in runs if "oracle" in r]
doc = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine,
       "quick": quick == "1", "duration": float(dur), "seconds": int(secs), "runs": runs}
json.dump(doc, open(jpath, "w"), indent=1)

def f(x, fmt="%.2f"):
    return "-" if x is None else fmt % x

rows = []
for r in runs:
    o = r.get("oracle")
    if not o:
        rows.append("| (all) | %s | - | - | - | - | - | - | - | - | - | oracle exit %d: %s |"
                    % (r["name"], r["exit"], r["stderr"].strip().splitlines()[-1:] or ""))
        continue
    h = o["header"]
    for c in o["cases"]:
        for m in c["modes"]:
            for x in m["runs"]:
                rows.append("| %s | %s %s | %g | %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
                    c["name"], h["python_label"], h["python_version"], h["rate_khz"],
                    m["mode"] + (" (ref)" if m.get("reference") else ""), x["samples"],
                    f(x["errors_pct"]), f(x["impossible_pct"]),
                    "ref" if m.get("reference") else f(x["tvd_excess"], "%.3f"),
                    f(x["slowdown_pct"], "%.1f"), f(x["us"]), f(x["us_target"]),
                    (x["note"] or "").replace("|", "/")[:80]))
rows.sort(key=lambda s: s.split("|")[1:4])
with open(mpath, "w") as out:
    out.write("# bpfpy oracle leaderboard%s\n\n" % (" (QUICK RUN)" if quick == "1" else ""))
    out.write("- date: %s; machine: %d CPUs, kernel %s, %s\n" % (
        doc["date"], machine["nproc"], machine["kernel"], machine["arch"]))
    out.write("- other_load (CPUs used by other processes, per oracle run): %s\n" % (
        ", ".join("%.2f" % l for l in loads) or "-"))
    out.write("- cases: %s; interpreters: %s; %s s windows; 1 and 10 kHz; %d s in all\n" % (
        cases or "all", pythons, dur, int(secs)))
    out.write("- produced by `%smake leaderboard`; columns as in `bpfpy oracle --help`\n\n" % (
        "LEADERBOARD_QUICK=1 " if quick == "1" else ""))
    out.write("| case | interpreter | kHz | mode | samples | errors% | impossible% | "
              "tvd_excess | slowdown% | µs | µs_target | note |\n")
    out.write("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    out.write("\n".join(rows) + "\n")
print("leaderboard: %s, %s (%d rows, %s s)" % (jpath, mpath, len(rows), secs))
EOF
