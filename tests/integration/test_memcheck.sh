#!/bin/bash
# Valgrind memcheck over the commands that read target memory and build
# profiles: dump (blocking, and non-blocking as JSON), record (cpu clock to
# speedscope, wall clock to pprof, -a to folded), oracle (every built-in
# mode on a short case) and trace (USDT on Debian's 3.11). Each must exit 0
# with no invalid read or write, no use of uninitialised memory and no
# definite, indirect or possible leak: valgrind turns any of them into exit
# 99 (--error-exitcode), and its report is shown.
# Suppressed: valgrind's checks of bpf() parameters that libbpf leaves
# unset because the kernel does not read them for that command
# (tests/valgrind/bpfpy.supp says which and why). Valgrind 3.19
# does not know openat2 (ENOSYS): bpfpy then opens target files by its
# fallback (SECURITY.md), so this run checks that path too.
# Rows for the table in SECURITY.md go to build/hardening/memcheck.tsv.
. "$(dirname "$0")/lib.sh"

rows_file memcheck
use_bpfpy
if ! command -v valgrind >/dev/null; then
	echo "skip: valgrind not installed (scripts/deps.sh installs it)"
	exit 77
fi
if [[ $BPFPY == *-san/* ]] || ldd "$BPFPY" | grep -q libasan; then
	echo "skip: valgrind cannot run an ASan build ($BPFPY); memcheck runs in the plain suite"
	exit 77
fi
VG=(valgrind -q --error-exitcode=99 --suppressions="$ROOT_DIR/tests/valgrind/bpfpy.supp"
	--leak-check=full --show-leak-kinds=definite,indirect,possible
	--errors-for-leak-kinds=definite,indirect,possible --track-origins=yes)

label=$(targets | awk -F'\t' '$1 ~ /^3\.12\./ {print $2; exit}')
[[ -n $label ]] || label=$(targets | awk -F'\t' 'NR == 1 {print $2}')
newest=$(targets | tail -n 1 | cut -f2)
py= hot= gc=

# vg_start NAME ARGS...: bpfpy ARGS under memcheck, in the background (its
# exit status into $TMP/NAME.rc); vg_check NAME ARGS... waits for it and
# passes on exit 0 with nothing from valgrind. Two run at a time: valgrind
# is one CPU-bound thread, and the machine has two CPUs.
vg_pids=()
vg_start() {
	local name=$1
	shift
	if ((${#vg_pids[@]} >= 2)); then
		wait "${vg_pids[0]}"
		vg_pids=("${vg_pids[@]:1}")
	fi
	{
		timeout -s KILL 600 "${VG[@]}" "$BPFPY" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
		echo $? >"$TMP/$name.rc"
	} &
	vg_pids+=($!)
}
vg_check() {
	local name=$1 rc
	shift
	while [[ ! -s $TMP/$name.rc ]]; do
		wait -n 2>/dev/null || sleep 0.2
	done
	rc=$(cat "$TMP/$name.rc")
	# valgrind's own chatter about syscalls it does not model is not a finding
	grep -E '^==[0-9]+== ' "$TMP/$name.err" | grep -vE 'unhandled (amd64-linux syscall|eBPF command)' >"$TMP/$name.vg"
	if [[ $rc == 0 && ! -s $TMP/$name.vg ]]; then
		ok "memcheck bpfpy $*: exit 0, no error, no leak"
		printf 'memcheck\tvalgrind memcheck of bpfpy %s\texit 0; no invalid access, no uninitialised use, no leak\n' \
			"$(sed "s|$TMP|\$TMP|g; s| $py | <python3> |g; s| $hot | <busy python3> |g; s| $gc | <python3.11> |g; s|^ ||; s| \$||" <<<" $* ")" >>"$ROWS"
	else
		bad "memcheck bpfpy $*: exit $rc"
		head -n 60 "$TMP/$name.vg"
		grep -v '^==' "$TMP/$name.err" | tail -n 5
	fi
}

start_py "$label" "$PYDIR/three.py" || finish
py=$PY_PID
start_py "$newest" "$PYDIR/hot.py" || finish
hot=$PY_PID

runs=(
	"dump|dump -p $py"
	"dump_json|dump -p $hot --nonblocking --json"
	"rec_cpu|record -p $hot -d 2 -f speedscope -o $TMP/r.speedscope.json"
	"rec_wall|record -p $py -d 2 --clock wall --idle -F 200 -f pprof -o $TMP/r.pb.gz"
	"rec_all|record -a -d 2 -F 200 -o $TMP/all.folded"
	"oracle|oracle --snippet flat_alternating --mode ptrace --mode live --mode bpf --mode bpf-wall --duration 1 --rate 0.2 --warmup 0.3 --python $label -q --json $TMP/o.json"
)
for r in "${runs[@]}"; do
	read -ra args <<<"${r#*|}"
	vg_start "${r%%|*}" "${args[@]}"
done
for r in "${runs[@]}"; do
	read -ra args <<<"${r#*|}"
	vg_check "${r%%|*}" "${args[@]}"
done
grep -q heavy "$TMP/all.folded" 2>/dev/null || bad "record -a under valgrind: no samples of hot.py"
grep -q '^bpf ' "$TMP/oracle.out" || bad "oracle under valgrind printed no bpf row: $(tail -n 5 "$TMP/oracle.out")"

if [[ -x /usr/bin/python3.11 ]] && readelf -n /usr/bin/python3.11 2>/dev/null | grep -q gc__start; then
	printf 'import gc, time\nprint("ready", flush=True)\nwhile True:\n    gc.collect(0)\n    time.sleep(0.01)\n' >"$TMP/gc_loop.py"
	start_py debian-3.11 "$TMP/gc_loop.py" || finish
	gc=$PY_PID
	vg_start trace trace -p "$gc" --usdt python:gc__start -d 2 -q
	vg_check trace trace -p "$gc" --usdt python:gc__start -d 2 -q
else
	echo "note: no Debian python3.11 with USDT probes: the trace row is skipped"
fi
finish
