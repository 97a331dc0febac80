#!/bin/bash
# bpfpy diff (issue 30, item 4), on pyenv-3.12 (or the last target) and on
# the first target: two real recordings of py/diff_pair.py, BASE with
# "1 1" (alpha and beta alike) and NEW with "3 1" (alpha three times
# beta's work), each 2 s of -p as .raw and .folded, the program's own
# stats line (CPU seconds per function) read before and after; then
#   - check/diff_check.py: the collapsed diff's both columns as documented
#     (NEW's counts, BASE's scaled by the totals), the SVG tooltips' shares
#     and changes as the collapsed files give them, red/blue by the sign,
#     and alpha's change that of the CPU shares the program measured
#     (within 10 points; it must have grown by more than 10);
#   - the two .folded inputs give the same bytes as the two .raw ones;
#   - BASE against itself: every line's two counts equal;
#   - hostile input: bad collapsed lines (no count, a bad count, an empty
#     frame, a NUL, too many frames, a line past 4 MiB), a missing file, a
#     FIFO, an empty file, -f pprof, an existing -o without --force: exit
#     2 with the file (and line) named, nothing written, within 30 s; names
#     with controls come out escaped in both formats.
. "$(dirname "$0")/lib.sh"
use_bpfpy

# record_pair LABEL TAG A B: $TMP/LABEL.TAG.{raw,folded} of diff_pair.py A
# B, and in $TMP/LABEL.TAG.cpu "ALPHA_S BETA_S" the CPU seconds the program
# measured meanwhile.
record_pair() {
	local label=$1 tag=$2 b=$TMP/$1.$2 s0 s1
	start_py "$label" "$PYDIR/diff_pair.py" "$3" "$4" || { bad "$label: diff_pair.py did not start"; return 1; }
	sleep 0.2 # a first stats line
	s0=$(grep '^stats ' "$PY_OUT" | tail -n 1)
	timeout 60 "$BPFPY" record -q -p "$PY_PID" -d 2 -o "$b.raw" -o "$b.folded" 2>"$b.err" ||
		{ bad "$label $tag: record failed: $(tail -n 2 "$b.err")"; return 1; }
	sleep 0.1
	s1=$(grep '^stats ' "$PY_OUT" | tail -n 1)
	kill "$PY_PID"
	[[ -n $s0 && -n $s1 ]] || { bad "$label $tag: no stats lines: $(tail -n 2 "$PY_OUT")"; return 1; }
	awk -v a="$s0" -v b="$s1" 'BEGIN { split(a, x); split(b, y); printf "%.6f,%.6f", y[2] - x[2], y[3] - x[3] }' >"$b.cpu"
}

diff_on() {
	local L=$1 b=$TMP/$1
	echo "== $L"
	record_pair "$L" base 1 1 && record_pair "$L" new 3 1 || return
	if ! "$BPFPY" diff "$b.base.raw" "$b.new.raw" >"$b.diff" 2>"$b.diff.err" ||
		! "$BPFPY" diff -q "$b.base.raw" "$b.new.raw" -o "$b.svg" 2>>"$b.diff.err"; then
		bad "$L: diff failed: $(cat "$b.diff.err")"
		return
	fi
	ok "$L: $(tail -n 1 "$b.diff.err")"
	xmllint --noout "$b.svg" 2>"$b.xml.err" && ok "$L: the SVG is well-formed (xmllint)" || bad "$L: SVG: $(head -c 300 "$b.xml.err")"
	"$CHECKPY" "$CHECK/diff_check.py" base="$b.base.folded" new="$b.new.folded" diff="$b.diff" svg="$b.svg" \
		src="$PYDIR/diff_pair.py" shown="$PYDIR/diff_pair.py" measured="$(cat "$b.base.cpu"),$(cat "$b.new.cpu")" tol=10
	fails=$((fails + $?))
	"$BPFPY" diff -q "$b.base.folded" "$b.new.folded" >"$b.diff2" 2>&1
	cmp -s "$b.diff" "$b.diff2" && ok "$L: the .folded inputs give the .raw inputs' diff byte for byte" ||
		bad "$L: folded and raw inputs differ: $(cmp "$b.diff" "$b.diff2" 2>&1)"
	"$BPFPY" diff -q "$b.base.raw" "$b.base.folded" >"$b.same"
	if [[ -s $b.same ]] && awk '$(NF - 1) != $NF { exit 1 }' "$b.same"; then
		ok "$L: BASE against itself: $(wc -l <"$b.same") lines, each with equal counts"
	else
		bad "$L: BASE against itself: $(awk '$(NF - 1) != $NF' "$b.same" | head -n 2)"
	fi
}

IFS=$'\t' read -r _ L1 _ < <(targets | awk -F'\t' '$2 == "pyenv-3.12"')
[[ -n ${L1:-} ]] || IFS=$'\t' read -r _ L1 _ < <(targets | tail -n 1)
IFS=$'\t' read -r _ L2 root2 _ < <(targets | head -n 1)
diff_on "$L1"
[[ $L2 != "$L1" && $root2 == / ]] && diff_on "$L2"

# Hostile input: exit 2, FILE:LINE named, nothing written.
H=$TMP/hostile
mkdir -p "$H"
good='main (/x.py:1);f (/x.py:2) 5'
printf '%s\n' "$good" >"$H/good.folded"
printf '%s\nmain (/x.py:1)\n' "$good" >"$H/nocount.folded" && echo 2 >"$H/nocount.line"
printf '%s\nmain (/x.py:1) 1x\n' "$good" >"$H/badcount.folded" && echo 2 >"$H/badcount.line"
printf '%s\nmain (/x.py:1) 99999999999999999999\n' "$good" >"$H/bigcount.folded" && echo 2 >"$H/bigcount.line"
printf '%s\nmain;;f 1\n' "$good" >"$H/emptyframe.folded" && echo 2 >"$H/emptyframe.line"
printf '%s\nma\0in 1\n' "$good" >"$H/nul.folded" && echo 2 >"$H/nul.line"
{ for ((i = 0; i < 1100; i++)); do printf 'f;'; done; printf 'g 1\n'; } >"$H/deep.folded" && echo 1 >"$H/deep.line"
{ head -c $((5 << 20)) /dev/zero | tr '\0' 'a'; printf ' 1\n'; } >"$H/long.folded" && echo 1 >"$H/long.line"
: >"$H/empty.folded"
mkfifo "$H/fifo.folded"
for f in nocount badcount bigcount emptyframe nul deep long empty fifo missing; do
	rm -f "$H/out.folded"
	timeout 30 "$BPFPY" diff "$H/good.folded" "$H/$f.folded" -o "$H/out.folded" 2>"$H/$f.err"
	rc=$?
	where=$H/$f.folded$([[ -e $H/$f.line ]] && echo ":$(cat "$H/$f.line")")
	if [[ $rc == 2 && ! -e $H/out.folded ]] && grep -qF "$where" "$H/$f.err"; then
		ok "hostile '$f': exit 2, nothing written: $(head -c 150 "$H/$f.err")"
	else
		bad "hostile '$f': exit $rc (want 2, '$where' named), output $([[ -e $H/out.folded ]] && echo written || echo none): $(head -c 200 "$H/$f.err")"
	fi
done
"$BPFPY" diff "$H/good.folded" "$H/good.folded" -f pprof 2>"$H/fmt.err"
rc=$?
[[ $rc == 2 ]] && ok "-f pprof: exit 2: $(head -n 1 "$H/fmt.err")" || bad "-f pprof: exit $rc"
: >"$H/exists.svg"
"$BPFPY" diff "$H/good.folded" "$H/good.folded" -o "$H/exists.svg" 2>"$H/ex.err"
rc=$?
[[ $rc == 2 && ! -s $H/exists.svg ]] && ok "an existing -o without --force: exit 2: $(head -n 1 "$H/ex.err")" ||
	bad "an existing -o: exit $rc: $(cat "$H/ex.err")"
# Names with controls (a raw ESC, BEL, CR) and an escaped one: out escaped.
printf 'main (/x.py:1);ev\x1b[2Jil\x07\x0d (/x.py:2) 3\nmain (/x.py:1);\\x1b]0:t (/x.py:3) 2\n' >"$H/names.folded"
"$BPFPY" diff -q "$H/good.folded" "$H/names.folded" >"$H/names.out" &&
	"$BPFPY" diff -q "$H/good.folded" "$H/names.folded" -o "$H/names.svg"
c=$(LC_ALL=C tr -d '\n' <"$H/names.out" | LC_ALL=C grep -aoP '[\x00-\x09\x0b-\x1f\x7f]' | od -An -tx1)
c2=$(LC_ALL=C tr -d '\n' <"$H/names.svg" | LC_ALL=C grep -aoP '[\x00-\x09\x0b-\x1f\x7f]' | od -An -tx1)
if [[ -z $c$c2 ]] && grep -qF 'ev\x1b[2Jil\x07\x0d (/x.py:2) 0 3' "$H/names.out" && grep -qF '\x1b]0:t (/x.py:3) 0 2' "$H/names.out"; then
	ok "names with controls: escaped in the collapsed diff ($(grep -c . "$H/names.out") lines), none raw in the SVG"
else
	bad "names with controls: raw bytes:$c / svg:$c2: $(cat "$H/names.out")"
fi
finish
