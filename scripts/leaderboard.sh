#!/bin/bash
# `make leaderboard`: every oracle case x every available interpreter x
# {1, 10} kHz x every mode (ptrace, live, bpf, bpf-wall, the bpf-timer
# control) and every peer that supports the interpreter (bpfpy oracle
# --peers; the others are rows marked unsupported, with the reason), in one
# run, written as
#   $OUT/leaderboard.json   each oracle run's --json, with the machine
#   $OUT/leaderboard.md     one row per case x interpreter x rate x mode,
#                           and the truth sweep's summary (sweep_truth.sh)
#
# Environment:
#   LEADERBOARD_DURATION  seconds per window (default 0.6: the full run in
#                         about 75 minutes on 2 CPUs; README "Leaderboard" has
#                         the precision that buys)
#   LEADERBOARD_WARMUP    seconds before each window (default 0.2)
#   LEADERBOARD_QUICK=1   a test run: 4 cases, 3 interpreters (the newest
#                         Austin 1.0.1, sid-Austin and Tachyon ones), ptrace,
#                         bpf, bpf-timer and the peers, 0.5 s windows unless told
#   LEADERBOARD_PYTHONS   interpreter labels, comma-separated (default: all)
#   LEADERBOARD_CASES     cases, comma-separated (default: all, and every
#                         program of snippets/realistic/, named realistic/NAME)
#
# The async snippets (async_running_task, asyncio) also run as an async run
# on 3.11+ (bpf-async and, with --peers, cpython-async and tachyon-async,
# against the async reference ptrace-async: docs/oracle.md, "Async"), its
# rows beside the thread-stack ones.
#
# One oracle run per interpreter and rate (two with the async one); each
# runs its windows one after another (README "Leaderboard" has the time a full run takes). A run that
# fails is kept in the JSON with its exit status and stderr, never dropped.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$here/../build}
bpfpy=$OUT/bpfpy
quick=${LEADERBOARD_QUICK:-0}
dur=${LEADERBOARD_DURATION:-$( ((quick)) && echo 0.5 || echo 0.6)}
warm=${LEADERBOARD_WARMUP:-0.2}
modes=(--mode ptrace --mode live --mode bpf --mode bpf-wall --mode bpf-timer --peers)
cases=${LEADERBOARD_CASES:-}
pythons=${LEADERBOARD_PYTHONS:-}
if ((quick)); then
	modes=(--mode ptrace --mode bpf --mode bpf-timer --peers)
	cases=${cases:-flat_alternating,gen_alternating,code_object_reuse,deep_recursion}
	pythons=${pythons:-pyenv-3.10,pyenv-3.12,sid-3.15}
fi
[[ -x $bpfpy ]] || { echo "leaderboard.sh: no $bpfpy (run make)" >&2; exit 1; }
if [[ -z $pythons ]]; then
	# Newest first: the interpreters every peer supports come early, so a
	# run cut short still has them (the report is rewritten after each).
	pythons=$("$here/targets.sh" | cut -f2 | tac | paste -sd,) || exit 1
fi
# realistic/NAME: a program of snippets/realistic/ (ordinary code, run as it
# is); by default every case and every such program.
snippets=${BPFPY_SNIPPETS:-$here/../snippets}
snip=()
if [[ -z $cases ]]; then
	for c in $(cd "$snippets" && ls ./*.py | sed -n 's|^\./\([a-z][a-z0-9_]*\)\.py$|\1|p' | grep -v '^bench_'); do
		snip+=(--snippet "$c")
	done
	for p in "$snippets"/realistic/*.py; do [[ -e $p ]] && snip+=(--snippet "$p"); done
fi
IFS=, read -ra cs <<<"$cases"
async=()
for c in async_running_task asyncio; do
	[[ -z $cases || ,$cases, == *,$c,* ]] && async+=(--snippet "$c")
done
for c in "${cs[@]}"; do
	if [[ $c == realistic/* ]]; then snip+=(--snippet "$snippets/$c.py"); else snip+=(--snippet "$c"); fi
done

report() {
python3 - "$work" "$OUT/leaderboard.json" "$OUT/leaderboard.md" "$quick" "$dur" \
	"$cases" "$pythons" "$(($(date +%s) - t0))" "$warm" "$1" <<'EOF'
import glob, json, os, platform, sys, time
work, jpath, mpath, quick, dur, cases, pythons, secs, warm, partial = sys.argv[1:]
runs = []
for rc in sorted(glob.glob(os.path.join(work, "*.rc"))):
    base = rc[:-3]
    run = {"name": os.path.basename(base), "exit": int(open(rc).read() or -1),
           "stderr": open(base + ".err", errors="replace").read()[-4000:]}
    if os.path.exists(base + ".json"):
        run["oracle"] = json.load(open(base + ".json"))
    runs.append(run)
skips = {}
for sk in glob.glob(os.path.join(work, "*.skips")):
    skips[os.path.basename(sk)[:-6]] = [l.strip() for l in open(sk) if l.strip()]
machine = {"nproc": os.cpu_count(), "kernel": platform.release(), "arch": platform.machine(),
           "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                        if l.startswith("model name")), "?")}
loads = [r["oracle"]["header"]["other_load_cpus"] for r in runs if "oracle" in r]
doc = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine,
       "quick": quick == "1", "duration": float(dur), "warmup": float(warm),
       "seconds": int(secs), "unsupported_peers": skips, "runs": runs}
json.dump(doc, open(jpath, "w"), indent=1)

def f(x, fmt="%.2f"):
    return "-" if x is None else fmt % x

def ci(x, c):
    return "-" if x is None else ("%.1f" % x if c is None else "%.1f±%.1f" % (x, c))

def case_name(c):
    # a program of snippets/realistic/ is named as LEADERBOARD_CASES names it
    return ("realistic/" if "/realistic/" in (c.get("snippet") or "") else "") + c["name"]

rows = []
for r in runs:
    o = r.get("oracle")
    if not o:
        rows.append("| (all) | %s | - | - | - | - | - | - | - | - | - | - | oracle exit %d: %s |"
                    % (r["name"], r["exit"], r["stderr"].strip().splitlines()[-1:] or ""))
        continue
    h = o["header"]
    for c in o["cases"]:
        for m in c["modes"]:
            for x in m["runs"]:
                rows.append("| %s | %s %s | %g | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    case_name(c), h["python_label"], h["python_version"], h["rate_khz"],
                    m["mode"] + (" (ref)" if m.get("reference") else ""), x["samples"],
                    f(x["errors_pct"]), f(x["impossible_pct"]),
                    "ref" if m.get("reference") else f(x["tvd_excess"], "%.3f"),
                    ci(x.get("slowdown_pct"), x.get("slowdown_ci95")),
                    ci(x.get("walk_pct"), x.get("walk_ci95")), f(x["us"]), f(x["us_target"]),
                    (x["note"] or "").replace("|", "/")[:80]))
rows.sort(key=lambda s: s.split("|")[1:4])
with open(mpath, "w") as out:
    out.write("# bpfpy oracle leaderboard%s%s\n\n" % (" (QUICK RUN)" if quick == "1" else "",
                                                   " (PARTIAL: %s)" % partial if partial else ""))
    out.write("- date: %s; machine: %d CPUs (%s), kernel %s, %s\n" % (
        doc["date"], machine["nproc"], machine["cpu"], machine["kernel"], machine["arch"]))
    out.write("- other_load (CPUs used by other processes, per oracle run): %s\n" % (
        ", ".join("%.2f" % l for l in loads) or "-"))
    # 0.2 CPUs: what this script's own bookkeeping and an idle desktop
    # reach; past it another workload shared the machine.
    if loads and max(loads) <= 0.2:
        out.write("- the machine was otherwise idle (other_load at most %.2f CPUs)\n" % max(loads))
    else:
        out.write("- the machine was shared (other_load above); its figures, slowdown% above all, "
                  "carry that\n")
    out.write("- cases: %s; interpreters: %s; %s s windows after %s s warmup; 1 and 10 kHz; "
              "%d s in all\n" % (cases or "all", pythons, dur, warm, int(secs)))
    out.write("- slowdown% and walk%: mean±95% half-width (bpfpy oracle --help, SLOWDOWN); "
              "walk% = bpf − bpf-timer\n")
    out.write("- produced by `%smake leaderboard`; columns as in `bpfpy oracle --help`\n\n" % (
        "LEADERBOARD_QUICK=1 " if quick == "1" else ""))
    out.write("| case | interpreter | kHz | mode | samples | errors% | impossible% | "
              "tvd_excess | slowdown% | walk% | µs | µs_target | note |\n")
    out.write("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    out.write("\n".join(rows) + "\n")
    # Modes that run one unwinder alike must agree (bpfpy oracle --help,
    # CONSISTENCY): every pair measured, a disagreement marked.
    pairs = []
    for r in runs:
        o = r.get("oracle")
        for c in (o or {}).get("cases", []):
            for pc in c.get("consistency") or []:
                pairs.append((case_name(c), o["header"]["python_label"], o["header"]["rate_khz"], pc))
    out.write("\n## Consistency (modes sharing an unwinder)\n\n")
    bad = [x for x in pairs if x[3].get("agree") is False]
    out.write("%d pairs measured, %d DISAGREE.\n\n" % (len(pairs), len(bad)))
    if pairs:
        out.write("| case | interpreter | kHz | pair | tvd | bound | keys only one shows | bound | verdict |\n")
        out.write("|---|---|---|---|---|---|---|---|---|\n")
        for case, py, khz, pc in sorted(pairs, key=lambda x: (x[3].get("agree") is not False,) + x[:3]):
            out.write("| %s | %s | %g | %s ~ %s | %s | %s | %s | %s | %s |\n" % (
                case, py, khz, pc["a"], pc["b"], f(pc.get("tvd"), "%.3f"), f(pc.get("bound"), "%.3f"),
                f(None if pc.get("exclusive_share") is None else 100 * pc["exclusive_share"], "%.1f%%"),
                f(None if pc.get("exclusive_bound") is None else 100 * pc["exclusive_bound"], "%.1f%%"),
                {True: "agree", False: "**DISAGREE**", None: "not judged: %s" % (
                    pc.get("not_judged") or "no figure")}[pc.get("agree")]))
    # Cells no peer row stands for: the peer cannot run that interpreter.
    out.write("\n## Unsupported peers (no row: scripts/oracle_peers.sh's reason)\n\n")
    out.write("| interpreter | peer | reason |\n|---|---|---|\n")
    for py in sorted(skips):
        for sk in skips[py]:
            peer, _, why = sk.partition(":")
            out.write("| %s | %s | %s |\n" % (py, peer.strip(), why.strip().replace("|", "/")))
print("leaderboard: %s, %s (%d rows, %s s)" % (jpath, mpath, len(rows), secs))
EOF
}

# The truth sweep over the same runs: bpf and ptrace, 0 impossible.
sweep() {
	{
		echo
		echo "## Truth sweep (scripts/sweep_truth.sh over these runs: bpf and ptrace)"
		echo
		"$here/sweep_truth.sh" "$OUT/leaderboard.json" | grep '^summary' | sed 's/^/- /'
	} >>"$OUT/leaderboard.md"
}

work=$(mktemp -d "${TMPDIR:-/tmp}/bpfpy-leaderboard.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
t0=$(date +%s)
IFS=, read -ra pys <<<"$pythons"
for py in "${pys[@]}"; do
	# The peers this interpreter does not support, with the reason.
	IFS=$'\t' read -r pv pl pr pp < <("$here/targets.sh" --no-provision --only "$py" | head -n 1)
	[[ -n ${pp:-} ]] && "$here/oracle_peers.sh" "$pv" "$pl" "$pr" "$pp" 2>/dev/null |
		sed -n 's/^# skip //p' >"$work/$py.skips"
	[[ -n ${pp:-} ]] && ((${#async[@]})) && "$here/oracle_peers.sh" "$pv" "$pl" "$pr" "$pp" async 2>/dev/null |
		sed -n 's/^# skip \(cpython-async\|tachyon-async\)/\1/p' >"$work/$py-async.skips"
	for rate in 1 10; do
		base=$work/$py-$rate
		echo "leaderboard: $py at $rate kHz ($(($(date +%s) - t0)) s so far)" >&2
		"$bpfpy" oracle -q --python "$py" --rate "$rate" --duration "$dur" --warmup "$warm" "${modes[@]}" \
			"${snip[@]}" --json "$base.json" >"$base.txt" 2>"$base.err"
		echo $? >"$base.rc"
		if ((${#async[@]})) && [[ $pv =~ ^3\.1[1-9]\. ]]; then
			"$bpfpy" oracle -q --python "$py" --rate "$rate" --duration "$dur" --warmup "$warm" \
				--mode bpf-async --peers "${async[@]}" --json "$base-async.json" \
				>"$base-async.txt" 2>"$base-async.err"
			echo $? >"$base-async.rc"
		fi
		report "$py at $rate kHz done, $(($(date +%s) - t0)) s so far" >/dev/null && sweep
	done
done
report "" && sweep

