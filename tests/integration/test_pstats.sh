#!/bin/bash
# -f pstats (issue 30, item 5), on every target: one recording of -p hot.py
# written at once as .pstats, .folded and .raw, then
#   - check/pstats_check.py run by the target's own interpreter (its own
#     pstats and marshal): every key, cc, nc, tt, ct and caller edge as the
#     folded lines of the same recording make them, the totals, each
#     function's first line as that interpreter numbers it, and heavy (2/3
#     of the work) first in pstats.Stats(F).print_stats(5), unsorted;
#   - `python -m pstats F` (the module's own browser, "sort tottime",
#     "stats 1") names heavy;
#   - every other target's pstats loads it too, with the same total;
#   - bpfpy convert of the .raw gives the .pstats byte for byte.
# On one target also: --clock offcpu (a weighted profile: tt and ct are the
# intervals' ns) of offcpu_four.py, checked the same way; deep_spin.py
# (300 frames of down(): nc/cc shows the recursion, spin first); and
# py/hostile_names.py (3.11+): pstats loads its names and print_stats()
# prints no raw control byte, the escaped name instead.
. "$(dirname "$0")/lib.sh"
use_bpfpy
PYRUN=$ROOT_DIR/scripts/pyrun.sh
clean_roots() {
	local r
	while IFS=$'\t' read -r _ _ r _; do
		[[ $r == / ]] || rm -rf "${r%/}/tmp/bpfpy-pstats.$$"
	done < <(targets)
	cleanup
}
trap clean_roots EXIT

# in_root ROOT FILE...: copies FILEs into a fresh directory under ROOT (a
# chroot target reads files only there) and prints that directory as the
# target sees it. All under ROOT/tmp/bpfpy-pstats.$$, removed at the end
# ($$ is this script's pid in each_target's subshells too).
in_root() {
	local root=$1 dir
	shift
	[[ $root == / ]] && { echo "$TMP"; return; }
	mkdir -p "${root%/}/tmp/bpfpy-pstats.$$"
	dir=$(mktemp -d "${root%/}/tmp/bpfpy-pstats.$$/XXXXXX")
	cp "$@" "$dir/"
	echo "${dir#"${root%/}"}"
}

# check LABEL ROOT BASE SRC HOT [RECURSIVE]: pstats_check.py on BASE.pstats
# and BASE.folded by LABEL's interpreter.
check() {
	local label=$1 root=$2 b=$3 src=$4 hot=$5 rec=${6:-} head period weighted dir lib shown=$4 inner=$4
	head=$(head -n 1 "$b.raw")
	period=$(sed -n 's/.* period_ns=\([0-9]*\) .*/\1/p' <<<"$head")
	weighted=$(sed -n 's/.* weighted=\([01]\) .*/\1/p' <<<"$head")
	[[ -n $period && -n $weighted ]] || { bad "$label: no raw header: $head"; return; }
	dir=$(in_root "$root" "$b.pstats" "$b.folded" "$b.raw" "$src" "$CHECK/checklib.py")
	[[ $root == / ]] || { shown=/tmp/bpfpy/${src##*/} inner=$dir/${src##*/}; }
	[[ $root == / ]] && lib=$CHECK || lib=$dir
	PYTHONPATH=$lib "$PYRUN" "$label" "$CHECK/pstats_check.py" pstats="$dir/${b##*/}.pstats" \
		folded="$dir/${b##*/}.folded" raw="$dir/${b##*/}.raw" period_ns="$period" weighted="$weighted" \
		src="$inner" shown="$shown" hot="$hot" recursive="$rec"
	fails=$((fails + $?))
}

pstats_one() { # run by each_target
	local version=$1 label=$2 root=$3 b=$TMP/$2.hot rc dir other ol total t
	echo "== $label ($version)"
	start_py "$label" "$PYDIR/hot.py" || { bad "$label: hot.py did not start"; return; }
	timeout 60 "$BPFPY" record -p "$PY_PID" -d 1.5 -o "$b.pstats" -o "$b.folded" -o "$b.raw" 2>"$b.err"
	rc=$?
	kill "$PY_PID" 2>/dev/null
	[[ $rc == 0 ]] || { bad "$label: record exited $rc: $(tail -n 2 "$b.err")"; return; }
	grep -q "wrote $b.pstats ([0-9]* samples, pstats)" "$b.err" &&
		ok "$label: $(grep "wrote $b.pstats" "$b.err")" || bad "$label: no 'wrote' line for .pstats"
	check "$label" "$root" "$b" "$PYDIR/hot.py" heavy

	dir=$(in_root "$root" "$b.pstats")
	printf 'sort tottime\nstats 1\nquit\n' | timeout 30 "$PYRUN" "$label" -m pstats "$dir/${b##*/}.pstats" >"$b.browse" 2>&1
	grep -qE '^ +[0-9]+ +[0-9.]+ .*\(heavy\)$' "$b.browse" &&
		ok "$label: python -m pstats, sort tottime, stats 1: $(grep -E '\(heavy\)$' "$b.browse" | head -n 1 | tr -s ' ')" ||
		bad "$label: python -m pstats does not show heavy first: $(tail -c 400 "$b.browse")"

	# The same file through every other interpreter's marshal and pstats.
	total=$("$PYRUN" "$label" -c 'import pstats, sys; print("%.9f" % pstats.Stats(sys.argv[1]).total_tt)' "$dir/${b##*/}.pstats")
	while IFS=$'\t' read -r _ ol other _; do
		[[ $ol == "$label" ]] && continue
		dir=$(in_root "$other" "$b.pstats")
		t=$("$PYRUN" "$ol" -c 'import pstats, sys; print("%.9f" % pstats.Stats(sys.argv[1]).total_tt)' "$dir/${b##*/}.pstats" 2>&1)
		[[ -n $total && $t == "$total" ]] && ok "$label's .pstats loaded by $ol's pstats: $t s" ||
			bad "$label's .pstats by $ol: '$t', want '$total'"
	done < <(targets)

	timeout 30 "$BPFPY" convert -q "$b.raw" -o "$b.conv.pstats" 2>"$b.conv.err"
	cmp -s "$b.pstats" "$b.conv.pstats" &&
		ok "$label: convert .raw -> .pstats is record's byte for byte ($(stat -c %s "$b.pstats") bytes)" ||
		bad "$label: convert to .pstats differs: $(cat "$b.conv.err") $(cmp "$b.pstats" "$b.conv.pstats" 2>&1)"
}
each_target pstats_one

# Weighted (--clock offcpu) and hostile names: one interpreter.
IFS=$'\t' read -r ver L root _ < <(targets | awk -F'\t' 'index($1, "3.12.") == 1' | head -n 1)
[[ -n ${L:-} ]] || IFS=$'\t' read -r ver L root _ < <(targets | tail -n 1)
echo "== $L: --clock offcpu, hostile names"
b=$TMP/$L.off
if start_py "$L" "$PYDIR/offcpu_four.py"; then
	if timeout 60 "$BPFPY" record -q --clock offcpu -p "$PY_PID" -d 1.5 -o "$b.pstats" -o "$b.folded" -o "$b.raw" 2>"$b.err"; then
		grep -q ' weighted=1 ' "$b.raw" && ok "$L offcpu: a weighted recording" || bad "$L offcpu: not weighted: $(head -n 1 "$b.raw")"
		check "$L" "$root" "$b" "$PYDIR/offcpu_four.py" ""
	else
		bad "$L offcpu: record failed: $(tail -n 2 "$b.err")"
	fi
	kill "$PY_PID" 2>/dev/null
else
	bad "$L: offcpu_four.py did not start"
fi

b=$TMP/$L.deep
if start_py "$L" "$PYDIR/deep_spin.py"; then
	if timeout 60 "$BPFPY" record -q -p "$PY_PID" -d 1 -o "$b.pstats" -o "$b.folded" -o "$b.raw" 2>"$b.err"; then
		check "$L" "$root" "$b" "$PYDIR/deep_spin.py" spin down
	else
		bad "$L deep: record failed: $(tail -n 2 "$b.err")"
	fi
	kill "$PY_PID" 2>/dev/null
else
	bad "$L: deep_spin.py did not start"
fi

minor=${ver#3.}
minor=${minor%%.*}
if ((minor >= 11)); then
	dir=$(mktemp -d "${root%/}/tmp/bpfpy-pstats.XXXXXX")
	"$PYRUN" "$L" "$PYDIR/hostile_names.py" "${dir#"${root%/}"}/ready" >"$TMP/hn.out" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	wait_file "$dir/ready" 30 "$pid" || bad "$L: hostile_names.py did not start: $(cat "$TMP/hn.out")"
	b=$TMP/hostile
	if timeout 60 "$BPFPY" record -q -p "$pid" -d 1 -o "$b.pstats" 2>"$b.err"; then
		cp "$b.pstats" "$dir/"
		"$PYRUN" "$L" -c 'import pstats, sys; pstats.Stats(sys.argv[1]).sort_stats("tottime").print_stats()' \
			"${dir#"${root%/}"}/hostile.pstats" >"$b.txt" 2>&1
		c=$(LC_ALL=C tr -d '\n' <"$b.txt" | LC_ALL=C grep -aoP '[\x00-\x09\x0b-\x1f\x7f]' | od -An -tx1 | tr -s ' \n' ' ')
		[[ -z $c ]] && ok "$L hostile: print_stats prints no raw control byte" || bad "$L hostile: raw control bytes:$c"
		grep -qF '\x1b[2J\x1b]0;owned\x07\x0d\x0aThread 1 (GIL held):\x0a' "$b.txt" &&
			ok "$L hostile: the qualname escaped as \\xNN: $(grep -aoF '\x1b[2J\x1b]0;owned' "$b.txt" | head -n 1)" ||
			bad "$L hostile: no escaped name: $(head -c 600 "$b.txt")"
	else
		bad "$L hostile: record failed: $(tail -n 2 "$b.err")"
	fi
	kill "$pid" 2>/dev/null
	rm -rf "$dir"
fi
finish
