#!/bin/bash
# record --opcodes (issue 29, items 1 and 2), on every target:
#   - the opcode tables: scripts/gen_opcode_data.sh --check runs the
#     generator under every interpreter (each table comes from that
#     interpreter's own dis/opcode modules) and compares with the committed
#     user/python/gen/opcodes.c;
#   - py/opcodes_add.py (a loop of x = x + 3 in a function), cpu clock at
#     5 kHz: every stack has one instruction mark, right on its Python leaf
#     frame; on the x = x + 3 line the most sampled instruction is
#     BINARY_OP_ADD_INT (BINARY_OP) on 3.11+ and BINARY_ADD on 3.8-3.10, in
#     the folded file and in `go tool pprof -lines -top` (the mark is a
#     location at that line); pprof's labels opcode and opcode_base read
#     back by `go tool pprof -tags`; the summary's --opcodes line; convert
#     of the raw file gives the folded, pprof and SVG files byte for byte
#     (the raw keeps each mark's byte, index and columns in #def lines);
#   - py/opcodes_unknown.py: a thread blocked in a call whose instruction
#     byte the program overwrites with one its version does not name (until
#     SIGUSR1, after the recordings); the
#     snapshot clock (--idle) names it "<op N>", and --clock offcpu at the
#     same time puts the main thread's sleeps under their instruction mark.
#     The program puts the byte back and must exit 0.
. "$(dirname "$0")/lib.sh"
use_bpfpy

if out=$("$ROOT_DIR/scripts/gen_opcode_data.sh" --check 2>&1); then
	ok "opcode tables: every interpreter's own is the committed one ($(grep -c '^ok:' <<<"$out") interpreters)"
else
	bad "opcode tables: $(grep -v '^ok:' <<<"$out" | head -c 1500)"
fi

add_loop() {
	local label=$1 minor=$2 b=$3 rc n f
	start_py "$label" "$PYDIR/opcodes_add.py" 3 || { bad "$label: opcodes_add.py did not start"; return; }
	timeout 60 "$BPFPY" record -p "$PY_PID" -F 5000 -d 1.5 --opcodes \
		-o "$b.folded" -o "$b.raw" -o "$b.pb.gz" -o "$b.svg" 2>"$b.err"
	rc=$?
	kill "$PY_PID" 2>/dev/null
	[[ $rc == 0 ]] || { bad "$label: record --opcodes exited $rc: $(tail -n 3 "$b.err")"; return; }
	n=$(grep -- '^  --opcodes: [0-9]* samples with their instruction' "$b.err") &&
		ok "$label: summary:${n#  }" || bad "$label: no --opcodes line in the summary: $(tail -n 4 "$b.err")"
	go tool pprof -lines -top -nodecount=1000 "$b.pb.gz" >"$b.top" 2>&1
	"$CHECKPY" "$CHECK/opcodes_check.py" mode=add label="$label" minor="$minor" \
		folded="$b.folded" pprof_top="$b.top" program="$PYDIR/opcodes_add.py"
	fails=$((fails + $?))
	local name=BINARY_ADD base=BINARY_ADD
	((minor >= 11)) && name=BINARY_OP_ADD_INT base=BINARY_OP
	go tool pprof -tags "$b.pb.gz" >"$b.tags" 2>&1
	if grep -A12 '^ opcode:' "$b.tags" | grep -q "): $name\$" &&
		grep -A12 '^ opcode_base:' "$b.tags" | grep -q "): $base\$"; then
		ok "$label: pprof labels opcode=$name, opcode_base=$base (go tool pprof -tags)"
	else
		bad "$label: no opcode=$name / opcode_base=$base label: $(head -c 600 "$b.tags")"
	fi
	grep -q '^#def 3 0 [0-9]* 0 \[op ' "$b.raw" &&
		ok "$label: raw keeps the marks' byte, index and columns: $(grep -c '^#def 3 0 [0-9]* 0 \[op ' "$b.raw") #def lines" ||
		bad "$label: no instruction mark #def line in the raw file"
	for f in folded pb.gz svg; do
		if "$BPFPY" convert "$b.raw" -o "$b.conv.$f" >/dev/null 2>&1 && cmp -s "$b.conv.$f" "$b.$f"; then
			ok "$label: convert to .$f is record's byte for byte"
		else
			bad "$label: convert to .$f differs from record's: $(cmp "$b.conv.$f" "$b.$f" 2>&1)"
		fi
	done
}

unknown_byte() {
	local label=$1 b=$2 byte pid
	start_py "$label" "$PYDIR/opcodes_unknown.py" 30 || { bad "$label: opcodes_unknown.py did not start"; return; }
	pid=$PY_PID
	byte=$(head -n 1 "$PY_OUT" | awk '$1 == "ready" {print $2}')
	timeout 60 "$BPFPY" record -p "$pid" --clock offcpu -d 1 --opcodes -o "$b.off.folded" 2>"$b.off.err" &
	local off=$!
	timeout 60 "$BPFPY" record -p "$pid" --clock snapshot --idle -F 200 -d 1 --opcodes \
		-o "$b.snap.folded" 2>"$b.snap.err" ||
		bad "$label: record --clock snapshot --opcodes failed: $(tail -n 3 "$b.snap.err")"
	wait "$off" || bad "$label: record --clock offcpu --opcodes failed: $(tail -n 3 "$b.off.err")"
	kill -USR1 "$pid"
	if wait_bounded "$pid" 20; then
		ok "$label: the program put the byte back and exited 0"
	else
		bad "$label: opcodes_unknown.py did not exit 0: $(tail -c 300 "$PY_OUT")"
	fi
	[[ -n $byte ]] || { bad "$label: the program printed no byte: $(head -c 300 "$PY_OUT")"; return; }
	"$CHECKPY" "$CHECK/opcodes_check.py" mode=unknown label="$label" byte="$byte" \
		folded="$b.snap.folded" program="$PYDIR/opcodes_unknown.py"
	fails=$((fails + $?))
	"$CHECKPY" "$CHECK/opcodes_check.py" mode=offcpu label="$label" folded="$b.off.folded"
	fails=$((fails + $?))
}

run_target() {
	local version=$1 label=$2 minor=${1#3.}
	minor=${minor%%.*}
	echo "== $label ($version)"
	add_loop "$label" "$minor" "$TMP/$label.add"
	unknown_byte "$label" "$TMP/$label.unknown"
}

JOBS=${JOBS:-2}
each_target run_target
finish
