#!/bin/bash
# bpfpy convert (issue 15, item 6), on every target: each recording written
# by record in every format at once (-o x.raw -o x.folded ...), then the raw
# file converted into each format with the same aggregation flags, and
# every converted file compared byte for byte (cmp) with record's own:
#   - cpu clock, record -- launch_target.py: collapsed, svg, speedscope,
#     chrome, pprof, pstats, gecko, raw;
#   - cpu clock --threads and --no-lines, --clock offcpu --threads,
#     --clock wall (weighted: ns per record, "#w" lines) and --clock wall
#     --opcodes (instruction marks: their byte, index and columns in "#def"
#     lines), each for 1 s of -p offcpu_four.py (five threads: sleeping,
#     lock, pipe, CPU): the same eight formats;
#   - --native --kernel on pyenv-3.12 (py/native_busy.py): #lib and #def
#     lines, the same eight;
#   - py/hostile_names.py (3.11+): a qualname, file and comm with controls,
#     ';' and " (" that the stack text cleans: "#exact" lines, the same eight;
#   - the same raw file without its '#' lines (version 1, as bpfpy wrote it
#     before): still read, collapsed and svg byte for byte record's (they use
#     nothing raw 1 lacks, but for a name the stack text cleans: the launch
#     target has none, and one there is a name read wrong, as the "\x7f" of
#     a freed module's code once was; the message shows the frames that
#     differ);
#   - hostile raw input: truncated, a bad field, NUL, too many frames, a
#     line past 4 MiB, a FIFO, a missing file, and bad version 2 lines
#     (#w, #def, #lib, #comm, #thread, the header): exit 2 with the line
#     named, nothing written, all within 30 s; a '#' line of an unknown kind
#     is skipped.
. "$(dirname "$0")/lib.sh"
use_bpfpy
T=$PYDIR/launch_target.py
PYRUN=$ROOT_DIR/scripts/pyrun.sh
FORMATS="folded svg raw json trace.json pb.gz pstats json.gz"

# compare LABEL TAG AGG...: convert $TMP/LABEL.TAG.raw into each format with
# AGG (--threads, --no-lines) and cmp each with record's own file.
compare() {
	local label=$1 tag=$2 b=$TMP/$1.$2 ext rc want n
	shift 2
	n=$(grep -vc '^#' "$b.raw")
	for ext in $FORMATS; do
		timeout 30 "$BPFPY" convert "$@" "$b.raw" -o "$b.conv.$ext" 2>"$b.conv.err"
		rc=$?
		[[ $rc == 0 ]] || { bad "$label $tag: convert to .$ext exited $rc: $(cat "$b.conv.err")"; continue; }
		# The same count as record's own line for that file.
		want=$(sed -n "s|^bpfpy record: wrote $b.$ext (\([0-9]*\) samples, .*|\1|p" "$b.err")
		grep -q "^bpfpy convert: wrote $b.conv.$ext (${want:-?} samples, " "$b.conv.err" ||
			bad "$label $tag: convert .$ext: not 'wrote FILE (${want:-?} samples, FORMAT)' as record said: $(cat "$b.conv.err")"
		if cmp -s "$b.$ext" "$b.conv.$ext"; then
			ok "$label $tag: convert .$ext: byte for byte record's ($(stat -c %s "$b.$ext") bytes, $n samples)"
		else
			bad "$label $tag: convert .$ext differs from record's: $(cmp "$b.$ext" "$b.conv.$ext" 2>&1)"
		fi
	done
}

# outs LABEL TAG: record's -o for every format.
outs() {
	local ext
	for ext in $FORMATS; do printf -- '-o\n%s\n' "$TMP/$1.$2.$ext"; done
}

convert_one() { # run by each_target
	local version=$1 label=$2 root=$3 b=$TMP/$2.launch rc tag agg clk
	local -a o
	echo "== $label ($version)"
	mapfile -t o < <(outs "$label" launch)
	timeout 120 "$BPFPY" record -F 997 "${o[@]}" -- "$PYRUN" "$label" "$T" 2>"$b.err"
	rc=$?
	[[ $rc == 0 ]] || { bad "$label: record exited $rc: $(tail -n 2 "$b.err")"; finish; }
	head -n 1 "$b.raw" | grep -q '^#bpfpy raw 2 clock=cpu period_ns=1003009 weighted=0 realtime_off=' &&
		ok "$label: raw starts with its version 2 header: $(head -n 1 "$b.raw")" ||
		bad "$label: raw's first line is not the header: $(head -c 200 "$b.raw")"
	grep -q "^#comm [0-9]* python" "$b.raw" && grep -q '^#thread ' "$b.raw" && grep -q '^#def 0 [1-9]' "$b.raw" &&
		ok "$label: raw carries comm, thread names and first lines ($(grep -c '^#def' "$b.raw") #def lines)" ||
		bad "$label: raw lacks #comm, #thread or #def lines"
	compare "$label" launch

	# Version 1 (no '#' lines): still read; what it has comes out the same.
	grep -v '^#' "$b.raw" >"$TMP/$label.v1.raw"
	for ext in folded svg; do
		"$BPFPY" convert -q -F 997 "$TMP/$label.v1.raw" -o "$TMP/$label.v1.$ext" 2>"$TMP/$label.v1.err"
		cmp -s "$b.$ext" "$TMP/$label.v1.$ext" &&
			ok "$label: a version 1 raw file (no '#' lines) converts to record's .$ext byte for byte" ||
			bad "$label: version 1 raw to .$ext differs: $(cat "$TMP/$label.v1.err") $(cmp "$b.$ext" "$TMP/$label.v1.$ext" 2>&1)
$(diff <(tr ';' '\n' <"$b.$ext") <(tr ';' '\n' <"$TMP/$label.v1.$ext") | head -c 1500)"
	done

	# Threads, aggregation flags and the weighted clocks, on a live target.
	start_py "$label" "$PYDIR/offcpu_four.py" || { bad "$label: offcpu_four.py did not start"; finish; }
	for tag in cpu-threads cpu-nolines offcpu-threads wall wall-opcodes; do
		local -a rec=()
		clk=${tag%%-*} agg=()
		[[ $tag == *-threads ]] && agg=(--threads)
		[[ $tag == *-nolines ]] && agg=(--no-lines)
		[[ $tag == *-opcodes ]] && rec=(--opcodes)
		mapfile -t o < <(outs "$label" "$tag")
		timeout 60 "$BPFPY" record --clock "$clk" "${agg[@]}" "${rec[@]}" -p "$PY_PID" -d 1 "${o[@]}" 2>"$TMP/$label.$tag.err"
		rc=$?
		[[ $rc == 0 ]] || { bad "$label $tag: record exited $rc: $(tail -n 2 "$TMP/$label.$tag.err")"; continue; }
		if [[ $clk != cpu ]]; then
			# Weighted: off-CPU intervals carry their ns in #w lines.
			n=$(grep -c '^#w [0-9]* [1-9]' "$TMP/$label.$tag.raw")
			((n > 0)) && ok "$label $tag: $n off-CPU intervals with their weight (#w) in raw" ||
				bad "$label $tag: no #w line in a --clock $clk raw file"
		fi
		if [[ $tag == *-opcodes ]]; then
			# Instruction marks: kind 3 with their byte, index and
			# columns in #def, the " (BASE)" of a name in #exact.
			n=$(grep -c '^#def 3 0 [0-9]* 0 \[op ' "$TMP/$label.$tag.raw")
			((n > 0)) && ok "$label $tag: $n instruction mark #def lines in raw" ||
				bad "$label $tag: no instruction mark #def line in a --opcodes raw file"
		fi
		compare "$label" "$tag" "${agg[@]}"
	done

	# Native and kernel frames (--native --kernel; one interpreter, as
	# test_native.sh's): #lib and #def carry libraries and addresses.
	if [[ $label == pyenv-3.12 ]] && start_py "$label" "$PYDIR/native_busy.py"; then
		mapfile -t o < <(outs "$label" native)
		if timeout 60 "$BPFPY" record --native --kernel -p "$PY_PID" -d 1 "${o[@]}" 2>"$TMP/$label.native.err"; then
			n=$(grep -c '^#lib ' "$TMP/$label.native.raw")
			((n > 0)) && ok "$label native: $n #lib, $(grep -c '^#def 1 ' "$TMP/$label.native.raw") native #def lines" ||
				bad "$label native: no #lib line in a --native raw file"
			compare "$label" native
		else
			bad "$label native: record failed: $(tail -n 2 "$TMP/$label.native.err")"
		fi
	fi

	# Names raw's stack text cannot hold (controls, ';', " (" in a qualname,
	# an escape in the comm): "#exact" lines, and still byte for byte.
	# co_qualname is 3.11+.
	local minor=${version#3.} dir pid
	minor=${minor%%.*}
	((minor >= 11)) || finish
	dir=$(mktemp -d "${root%/}/tmp/bpfpy-convert.XXXXXX")
	"$PYRUN" "$label" "$PYDIR/hostile_names.py" "${dir#"${root%/}"}/ready" >"$TMP/$label.hn.out" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	for ((i = 0; i < 300; i++)); do [ -s "$dir/ready" ] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
	rm -rf "$dir"
	mapfile -t o < <(outs "$label" hostile)
	if timeout 60 "$BPFPY" record -p "$pid" -d 1 "${o[@]}" 2>"$TMP/$label.hostile.err"; then
		n=$(grep -c '^#exact [1-9]' "$TMP/$label.hostile.raw")
		((n > 0)) && ok "$label hostile: $n #exact lines for names the stack text cleans" ||
			bad "$label hostile: no #exact line: $(grep -v '^#' "$TMP/$label.hostile.raw" | head -c 200)"
		compare "$label" hostile
	else
		bad "$label hostile: record failed: $(tail -n 2 "$TMP/$label.hostile.err") $(cat "$TMP/$label.hn.out")"
	fi
	finish
}
each_target convert_one

# Hostile raw input: each refused with exit 2, the line named, no output.
H=$TMP/hostile
mkdir -p "$H"
good='12 100 100 0 0 f (/x.py:3);<module> (/x.py:9)'
head='#bpfpy raw 2 clock=cpu period_ns=1000000 weighted=0 realtime_off=5'
printf '%s\n%s' "$good" "$good" >"$H/truncated.raw"
printf '%s\n12 100 abc 0 0 f (/x.py:3)\n' "$good" >"$H/badfield.raw"
printf '%s\n12 100 100 0 0 f (/x\0.py:3)\n' "$good" >"$H/nul.raw"
printf '12 100 100 0 99999999999 f (/x.py:3)\n' >"$H/bigflags.raw"
printf '12 100 100 0 0 f (/x.py:three)\n' >"$H/badline.raw"
{ printf '12 100 100 0 0 '; for ((i = 0; i < 1100; i++)); do printf 'f (/x.py:1);'; done; printf 'g (/x.py:2)\n'; } >"$H/deep.raw"
{ printf '12 100 100 0 0 '; head -c $((5 << 20)) /dev/zero | tr '\0' 'a'; printf ' (/x.py:1)\n'; } >"$H/long.raw"
head -c 4096 /dev/urandom >"$H/garbage.raw"
mkfifo "$H/fifo.raw"
# Version 2 lines, each bad in one field (FILE:LINE the message must name).
v2() { local f=$1 line=$2; shift 2; printf '%s\n' "$head" "$@" >"$H/$f.raw"; echo "$line" >"$H/$f.line"; }
printf '%s\n%s\n' "${head/raw 2/raw 3}" "$good" >"$H/v2version.raw" && echo 1 >"$H/v2version.line"
printf '%s\n%s\n' "${head/=cpu/=tsc}" "$good" >"$H/v2clock.raw" && echo 1 >"$H/v2clock.line"
v2 v2late 3 "$good" "$head"
v2 v2reason 2 '#w 5 99' "$good"
v2 v2wtwice 3 '#w 5 1' '#w 6 1' "$good"
v2 v2defkind 2 '#def 9 1 0 0 f (/x.py:3)' "$good"
v2 v2deflib 2 '#def 0 1 0 1 f (/x.py:3)' "$good"
v2 v2defsemi 2 '#def 0 1 0 0 f (/x.py:3);g (/x.py:4)' "$good"
v2 v2libid 2 '#lib 2 0 10 0 - /lib/x.so' "$good"
v2 v2libbid 2 '#lib 1 0 10 0 XYZ /lib/x.so' "$good"
v2 v2comm 3 "$good" '#comm 100 bad\qescape'
v2 v2commnul 3 "$good" '#comm 100 a\x00b'
v2 v2thread 3 "$good" '#thread 100 x name'
for f in truncated badfield nul bigflags badline deep long garbage fifo missing \
	v2version v2clock v2late v2reason v2wtwice v2defkind v2deflib v2defsemi v2libid v2libbid \
	v2comm v2commnul v2thread; do
	t0=$(date +%s.%N)
	timeout 30 "$BPFPY" convert "$H/$f.raw" -o "$H/$f.folded" 2>"$H/$f.err"
	rc=$?
	t=$(printf '%.2f' "$(echo "$(date +%s.%N) - $t0" | bc)")
	where=$H/$f.raw:$(cat "$H/$f.line" 2>/dev/null)
	if [[ $rc == 2 && ! -e $H/$f.folded ]] && { [[ $f != v2* ]] || grep -q "$where: bad " "$H/$f.err"; }; then
		ok "hostile raw '$f': exit 2 in $t s, nothing written: $(head -c 160 "$H/$f.err")"
	else
		bad "hostile raw '$f': exit $rc (want 2, '$where: bad'), output $([ -e "$H/$f.folded" ] && echo written || echo none): $(head -c 200 "$H/$f.err")"
	fi
done
# A kind of a later version is skipped; the samples are read as ever.
printf '%s\n%s\n%s\n%s\n' "$head" '#later 1 2 3' '#' "$good" >"$H/later.raw"
if "$BPFPY" convert -q "$H/later.raw" >"$H/later.folded" 2>"$H/later.err" &&
	[[ $(cat "$H/later.folded") == '<module> (/x.py:9);f (/x.py:3) 1' ]]; then
	ok "unknown '#' kinds skipped: $(cat "$H/later.folded")"
else
	bad "a raw file with an unknown '#' kind: $(cat "$H/later.err" "$H/later.folded")"
fi
finish
