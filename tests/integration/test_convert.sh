#!/bin/bash
# bpfpy convert (issue 15, item 6), on every target: one recording written
# by record in every format at once (-o x.raw -o x.folded ...), then the raw
# file converted into each format:
#   - collapsed, svg, raw and collapsed --threads/--no-lines: byte for byte
#     equal to record's own;
#   - speedscope and chrome: equal but for the process and thread names (raw
#     carries no comm: check/convert_same.py); pprof: `go tool pprof -traces`
#     equal but for the comm and thread labels and the Time line (raw carries
#     neither comm nor thread names, nor
#     first lines, nor the wall-clock start);
#   - hostile raw input: truncated, a bad field, NUL, too many frames, a
#     line past 4 MiB, a FIFO, a missing file: exit 2 with the line named,
#     nothing written, all within 30 s.
. "$(dirname "$0")/lib.sh"
use_bpfpy
T=$PYDIR/launch_target.py
PYRUN=$ROOT_DIR/scripts/pyrun.sh
FORMATS="folded svg raw json trace.json pb.gz"

convert_one() { # run by each_target
	local version=$1 label=$2 root=$3 b=$TMP/$2 rc outs=() ext fmt want
	echo "== $label ($version)"
	for ext in $FORMATS; do outs+=(-o "$b.$ext"); done
	timeout 120 "$BPFPY" record -F 997 "${outs[@]}" -- "$PYRUN" "$label" "$T" 2>"$b.err"
	rc=$?
	[[ $rc == 0 ]] || { bad "$label: record exited $rc: $(tail -n 2 "$b.err")"; finish; }
	n=$(wc -l <"$b.raw")
	for ext in $FORMATS; do
		timeout 30 "$BPFPY" convert -F 997 "$b.raw" -o "$b.conv.$ext" 2>"$b.conv.err"
		rc=$?
		[[ $rc == 0 ]] || { bad "$label: convert to .$ext exited $rc: $(cat "$b.conv.err")"; continue; }
		# The same count as record's own line for that file.
		want=$(sed -n "s|^bpfpy record: wrote $b.$ext (\([0-9]*\) samples, .*|\1|p" "$b.err")
		grep -q "^bpfpy convert: wrote $b.conv.$ext (${want:-?} samples, " "$b.conv.err" ||
			bad "$label: convert .$ext: not 'wrote FILE (${want:-?} samples, FORMAT)' as record said: $(cat "$b.conv.err")"
		case $ext in
		folded | svg | raw)
			cmp -s "$b.$ext" "$b.conv.$ext" && ok "$label: convert .$ext: byte for byte record's ($(stat -c %s "$b.$ext") bytes, $n samples)" ||
				bad "$label: convert .$ext differs from record's: $(cmp "$b.$ext" "$b.conv.$ext")" ;;
		json) "$CHECKPY" "$CHECK/convert_same.py" speedscope "$b.json" "$b.conv.json" || fails=$((fails + 1)) ;;
		trace.json) "$CHECKPY" "$CHECK/convert_same.py" chrome "$b.trace.json" "$b.conv.trace.json" || fails=$((fails + 1)) ;;
		pb.gz)
			if diff <(go tool pprof -traces "$b.pb.gz" 2>&1 | grep -v '^ *comm:\|^ *thread:\|^ *thread_name:\|^Time:') \
				<(go tool pprof -traces "$b.conv.pb.gz" 2>&1 | grep -v '^ *comm:\|^ *thread:\|^ *thread_name:\|^Time:') >"$b.pdiff"; then
				ok "$label: convert .pb.gz: pprof -traces equal but for comm, thread names and Time ($(go tool pprof -traces "$b.pb.gz" 2>/dev/null | grep -c -- '^-----') traces)"
			else
				bad "$label: pprof -traces differ: $(head -n 6 "$b.pdiff")"
			fi ;;
		esac
	done
	# Record's flags that change the aggregation, through convert's.
	for fl in --threads --no-lines; do
		"$BPFPY" convert -q "$fl" "$b.raw" >"$b.conv$fl.folded" 2>&1
		"$BPFPY" convert -q "$b.raw" -o "$b.again.raw" --force 2>/dev/null
		"$BPFPY" convert -q "$fl" "$b.again.raw" >"$b.again$fl.folded" 2>&1
		cmp -s "$b.conv$fl.folded" "$b.again$fl.folded" && [ -s "$b.conv$fl.folded" ] &&
			ok "$label: convert $fl: raw -> raw -> collapsed equals raw -> collapsed" ||
			bad "$label: convert $fl differs after a raw round trip"
	done
	finish
}
each_target convert_one

# Hostile raw input: each refused with exit 2, the line named, no output.
H=$TMP/hostile
mkdir -p "$H"
good='12 100 100 0 0 f (/x.py:3);<module> (/x.py:9)'
printf '%s\n%s' "$good" "$good" >"$H/truncated.raw"
printf '%s\n12 100 abc 0 0 f (/x.py:3)\n' "$good" >"$H/badfield.raw"
printf '%s\n12 100 100 0 0 f (/x\0.py:3)\n' "$good" >"$H/nul.raw"
printf '12 100 100 0 99999999999 f (/x.py:3)\n' >"$H/bigflags.raw"
printf '12 100 100 0 0 f (/x.py:three)\n' >"$H/badline.raw"
{ printf '12 100 100 0 0 '; for ((i = 0; i < 1100; i++)); do printf 'f (/x.py:1);'; done; printf 'g (/x.py:2)\n'; } >"$H/deep.raw"
{ printf '12 100 100 0 0 '; head -c $((5 << 20)) /dev/zero | tr '\0' 'a'; printf ' (/x.py:1)\n'; } >"$H/long.raw"
head -c 4096 /dev/urandom >"$H/garbage.raw"
mkfifo "$H/fifo.raw"
for f in truncated badfield nul bigflags badline deep long garbage fifo missing; do
	t0=$(date +%s.%N)
	timeout 30 "$BPFPY" convert "$H/$f.raw" -o "$H/$f.folded" 2>"$H/$f.err"
	rc=$?
	t=$(printf '%.2f' "$(echo "$(date +%s.%N) - $t0" | bc)")
	if [[ $rc == 2 && ! -e $H/$f.folded ]]; then
		ok "hostile raw '$f': exit 2 in $t s, nothing written: $(head -c 160 "$H/$f.err")"
	else
		bad "hostile raw '$f': exit $rc (want 2), output $([ -e "$H/$f.folded" ] && echo written || echo none): $(head -c 200 "$H/$f.err")"
	fi
done
finish
