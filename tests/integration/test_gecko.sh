#!/bin/bash
# -f gecko (issue 30, item 6): the Firefox Profiler's Gecko format. There is
# no Firefox here, so check/gecko_check.py holds each file to the schema the
# profiler documents and to the collapsed output of the same recording
# (the file's own header says what). On every target:
#   - -p hot.py, written at once as .json.gz, .folded and .raw: the checker;
#   - bpfpy convert of the .raw gives the .json.gz byte for byte.
# On pyenv-3.12 (or the last target) also: --clock offcpu of offcpu_four.py
# (weighted: an Off-CPU marker per interval, their lengths the folded ns),
# and --native --kernel of native_busy.py (Native and Kernel categories),
# each checked and converted the same way.
. "$(dirname "$0")/lib.sh"
use_bpfpy

# one LABEL TAG RECORD-ARGS...: record into $TMP/LABEL.TAG.{json.gz,folded,raw},
# check, convert.
one() {
	local label=$1 tag=$2 b=$TMP/$1.$2 weighted
	shift 2
	if ! timeout 60 "$BPFPY" record -q "$@" -o "$b.json.gz" -o "$b.folded" -o "$b.raw" 2>"$b.err"; then
		bad "$label $tag: record failed: $(tail -n 2 "$b.err")"
		return
	fi
	weighted=$(head -n 1 "$b.raw" | sed -n 's/.* weighted=\([01]\) .*/\1/p')
	"$CHECKPY" "$CHECK/gecko_check.py" gecko="$b.json.gz" folded="$b.folded" raw="$b.raw" weighted="${weighted:-?}" |
		sed "s/^\(ok\|FAIL\): gecko:/\1: $label $tag:/"
	fails=$((fails + PIPESTATUS[0]))
	timeout 30 "$BPFPY" convert -q "$b.raw" -o "$b.conv.json.gz" 2>"$b.conv.err"
	cmp -s "$b.json.gz" "$b.conv.json.gz" &&
		ok "$label $tag: convert .raw -> .json.gz is record's byte for byte ($(stat -c %s "$b.json.gz") bytes)" ||
		bad "$label $tag: convert to .json.gz differs: $(cat "$b.conv.err") $(cmp "$b.json.gz" "$b.conv.json.gz" 2>&1)"
}

gecko_one() { # run by each_target
	local version=$1 label=$2
	echo "== $label ($version)"
	start_py "$label" "$PYDIR/hot.py" || { bad "$label: hot.py did not start"; return; }
	one "$label" hot -p "$PY_PID" -d 1
	kill "$PY_PID" 2>/dev/null
}
each_target gecko_one

IFS=$'\t' read -r _ L _ < <(targets | awk -F'\t' '$2 == "pyenv-3.12"')
[[ -n ${L:-} ]] || IFS=$'\t' read -r _ L _ < <(targets | tail -n 1)
echo "== $L: --clock offcpu, --native --kernel"
if start_py "$L" "$PYDIR/offcpu_four.py"; then
	one "$L" offcpu --clock offcpu -p "$PY_PID" -d 1
	kill "$PY_PID" 2>/dev/null
else
	bad "$L: offcpu_four.py did not start"
fi
if start_py "$L" "$PYDIR/native_busy.py"; then
	one "$L" native --native --kernel -p "$PY_PID" -d 1
	grep -q ' \[native\] [0-9]*$\| \[native\];' "$TMP/$L.native.folded" && ok "$L native: native frames in the recording" ||
		bad "$L native: no native frame recorded: $(head -c 300 "$TMP/$L.native.folded")"
	kill "$PY_PID" 2>/dev/null
else
	bad "$L: native_busy.py did not start"
fi
finish
