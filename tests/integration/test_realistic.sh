#!/bin/bash
# The realistic suite's rules (snippets/realistic/, issue 26): ten programs
# written like ordinary code, each with a NAME.rules of structural rules
# (rooted stacks, who may call whom). Each program runs on one interpreter
# per run, assigned in turn: program k on interpreter (k + offset) mod N,
# where the offset is the day of the year (REALISTIC_OFFSET sets it), so
# ten programs cover all nine interpreters in every run and every pair
# over nine days; REALISTIC_ALL=1 runs every program on every interpreter
# (see below for how long).
#
# One oracle run per interpreter, its reference a sampler that mixes frames
# up on purpose (tests/integration/py/realistic_mixer.py: real moments read
# with every thread stopped, `bpfpy dump`, at least 30 of them, sampling up
# to 10 s past the window on a loaded host; half of those a fault applies
# to given another moment's frames above one of their own, e.g. json's
# decoder hook under the encoder), then ptrace and bpf. What it proves, per
# program:
#  - the rules hold for every real moment the blocking ptrace reference
#    sees: 0 impossible;
#  - bpf: at most 1% impossible (0 in every run seen; the margin is for a
#    rare real moment no run has shown yet, printed when it happens);
#  - the rules catch frames mixed up: the mixer's impossible count is
#    exactly the number of stacks it changed (> 0) out of the stacks it
#    sent: every changed stack fails, every unchanged one (a real moment,
#    with files) passes.
# A program whose window was too thin to judge (the mixer changed no
# stack, or a mode took none: a host so loaded that the pinned target
# barely ran) is run once more alone. About 60-80 s on the 2-CPU host
# (2026-12-06; 80 at load average 8-10); REALISTIC_ALL=1 took 12 minutes
# there.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "skip: needs root (ptrace, BPF)"; exit 77; }
use_bpfpy
dir=$ROOT_DIR/snippets/realistic
progs=()
for p in "$dir"/*.py; do
	[[ -e ${p%.py}.rules ]] || { bad "$(basename "$p"): no rules file beside it"; continue; }
	progs+=("$(basename "$p" .py)")
done
((${#progs[@]} >= 10)) || bad "only ${#progs[@]} realistic programs with rules (want 10)"
mapfile -t labels < <(targets | cut -f2)
n=${#labels[@]}
((n)) || { echo "skip: no interpreter"; exit 77; }
offset=${REALISTIC_OFFSET:-$((10#$(date +%j)))}
declare -A plan
for k in "${!progs[@]}"; do
	if [[ -n ${REALISTIC_ALL:-} ]]; then
		for l in "${labels[@]}"; do plan[$l]+=" ${progs[$k]}"; done
	else
		l=${labels[$(((k + offset) % n))]}
		plan[$l]+=" ${progs[$k]}"
	fi
done
mixer=$PYDIR/realistic_mixer.py

# run LABEL TAG PROG...: the oracle with the mixer as reference, then
# ptrace and bpf; its JSON in $TMP/TAG.json, the mixer's counts in
# $TMP/TAG/PROG.log.
run() {
	local label=$1 tag=$2 snip=()
	shift 2
	for p in "$@"; do snip+=(--snippet "$dir/$p.py"); done
	mkdir -p "$TMP/$tag"
	timeout 300 "$BPFPY" oracle -q --python "$label" "${snip[@]}" \
		--reference-mode "external:$CHECKPY $mixer --bpfpy $BPFPY --log-dir $TMP/$tag --min-stacks 30" \
		--mode ptrace --mode bpf --duration 1 --warmup 0.3 --rate 1 --json "$TMP/$tag.json" \
		>"$TMP/$tag.out" 2>"$TMP/$tag.err"
}

# judge TAG LABEL PROG: prints "retry: WHY" when a window is too thin to
# judge (the mixer changed nothing, a mode took no stack).
judge() {
	"$CHECKPY" - "$TMP/$1.json" "$TMP/$1" "$2" "$3" <<'PY'
import json, os, sys
path, logs, label, prog = sys.argv[1:]
case = next(c for c in json.load(open(path))["cases"] if c["name"] == prog)
bad = []
for m in case["modes"]:
    r, name = m["runs"][0], m["mode"]
    worst = sorted(r["impossible_stacks"].items(), key=lambda kv: -kv[1])[:3]
    if m.get("reference"):
        try:
            f = open(os.path.join(logs, prog + ".log")).read().split()
            changed, stacks = int(f[1]), int(f[3])
        except (OSError, IndexError, ValueError):
            bad.append("the mixer left no log"); continue
        if changed == 0:
            print("retry: the mixer changed no stack"); sys.exit(0)
        if r["impossible"] != changed or r["stacks"] != stacks:
            bad.append("mixer: %d changed of %d sent, the rules found %d impossible of %d: %s"
                       % (changed, stacks, r["impossible"], r["stacks"], worst))
        else:
            print("ok: %s %s: the rules fail exactly the %d mixed-up stacks of %d (the other "
                  "%d real moments pass)" % (label, prog, changed, stacks, stacks - changed))
    elif not r["stacks"]:
        print("retry: %s took no stack" % name); sys.exit(0)
    elif r["impossible"] > (0 if name == "ptrace" else 0.01 * r["stacks"]):
        bad.append("%s: %d of %d stacks impossible: %s" % (name, r["impossible"], r["stacks"], worst))
    else:
        print("ok: %s %s %s: %d stacks, %d impossible" % (label, prog, name, r["stacks"],
                                                         r["impossible"]))
for b in bad:
    print("FAIL: %s %s: %s" % (label, prog, b))
sys.exit(1 if bad else 0)
PY
}

for label in "${labels[@]}"; do
	[[ -n ${plan[$label]:-} ]] || continue
	read -ra ps <<<"${plan[$label]}"
	echo "  $label: ${ps[*]}"
	# A window without a sample makes the oracle exit 1, its JSON written:
	# the programs whose windows did sample are judged, the others retried.
	run "$label" "$label" "${ps[@]}"
	if [[ ! -s $TMP/$label.json ]]; then
		bad "$label: oracle failed: $(tail -n 3 "$TMP/$label.err" | tr '\n' ' ')"
		continue
	fi
	for p in "${ps[@]}"; do
		v=$(judge "$label" "$label" "$p")
		rc=$?
		if [[ $v == retry* ]]; then
			echo "  $label $p: ${v#retry: } (a loaded host?): once more, alone"
			run "$label" "$label-$p" "$p"
			v=$(judge "$label-$p" "$label" "$p" 2>&1)
			rc=$?
			[[ $v == retry* ]] && { v="FAIL: $label $p: twice: ${v#retry: }"; rc=1; }
		fi
		echo "$v"
		((rc == 0)) || fails=$((fails + 1))
	done
done
finish
