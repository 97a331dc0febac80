#!/bin/bash
# Bad input for bpfpy dump and record, table-driven: each row is a command,
# the exit code it must give (as documented in --help) and a fragment its
# stderr must hold. Cases: a PID that does not exist (3); a non-Python
# process (4); Python 2.7/3.6/3.7 from pyenv (5, naming the version); PID 1
# and a kernel thread (4; PID 1 gives 6 where even root may not read it);
# a build that declares itself free-threaded in its _Py_DebugOffsets (5,
# "free-threaded"; see py/claim_free_threaded.py); Debian's debug build
# python3.11d is supported: dump and record read it like the release build;
# bad flags and values (2); output in a missing directory, an existing output
# without --force (2) and with it (0: replaced by a wall-clock profile of the
# sleeping three.py); not root (6, naming the capability).
# Also: a target that exits while record runs (exit 0, says so), and after
# every dump of a live process its threads are not stopped nor traced.
. "$(dirname "$0")/lib.sh"

use_bpfpy

# ---------------------------------------------------------------- processes
start_py "$(targets | head -n 1 | cut -f2)" "$PYDIR/three.py" || { bad "three.py did not start"; finish; }
py=$PY_PID
sleep 1000 &
nonpy=$!
PIDS+=("$nonpy")
true &
gone=$!
wait "$gone"
[[ -e /proc/$gone ]] && gone=$(($(cat /proc/sys/kernel/pid_max) - 1)) # reused: take another
old=() olde=()
for v in 2.7 3.6 3.7; do
	exe=$(ls -d /root/.pyenv/versions/$v.*/bin/python$v 2>/dev/null | head -n 1)
	if [[ -z $exe ]]; then
		echo "note: no pyenv Python $v: its rows are skipped"
		continue
	fi
	"$exe" -c 'import sys, time
print("ready")
sys.stdout.flush()
while True: time.sleep(1000)' >"$TMP/old$v.out" 2>&1 &
	PIDS+=("$!")
	old+=("$v:$!")
	olde+=("$exe")
done
for i in "${!old[@]}"; do # wait for each to print
	o=${old[i]}
	py_ready "${o#*:}" "$TMP/old${o%%:*}.out" "${olde[i]}" || bad "python${o%%:*} did not start"
done
# Debian's debug build (python3.11-dbg, installed by scripts/deps.sh).
dbg=
if [[ -x /usr/bin/python3.11d ]]; then
	/usr/bin/python3.11d "$PYDIR/three.py" >"$TMP/dbg.out" 2>&1 &
	dbg=$!
	PIDS+=("$dbg")
	py_ready "$dbg" "$TMP/dbg.out" /usr/bin/python3.11d || bad "python3.11d did not start"
else
	echo "note: no /usr/bin/python3.11d (python3.11-dbg): its rows are skipped"
fi
# A free-threaded build, as far as a debugger can tell: the sid chroot's 3.15
# with free_threaded set in its debug offsets. Needs the chroot (shared: the
# copy's name is this run's own).
ft=
ftpy=/tmp/bpfpy-ft-python3.15.${TMP##*/}
sid_root=$(targets | awk -F'\t' '$1 ~ /^3\.1[5-9]\./ && $3 != "/" {print $3; exit}')
if [[ -n $sid_root ]] && python3 "$PYDIR/claim_free_threaded.py" "$sid_root/usr/bin/python3.15" \
	"$sid_root$ftpy" >"$TMP/ft.log" 2>&1; then
	chroot "$sid_root" "$ftpy" -c 'import time
print("ready", flush=True)
time.sleep(1000)' >"$TMP/ft.out" 2>&1 &
	ft=$!
	PIDS+=("$ft")
	py_ready "$ft" "$TMP/ft.out" "$sid_root$ftpy" || bad "the free-threaded copy did not start"
else
	echo "note: no 3.15 in a sid chroot to mark free-threaded ($(cat "$TMP/ft.log" 2>/dev/null)): its rows are skipped"
fi
kthread=$(awk '$2 == "(kthreadd)" {print $1}' /proc/2/stat 2>/dev/null)
kthread=${kthread:-2}
# PID 1: a plain root can read it on a normal host (not Python: 4); where PID
# 1 holds capabilities beyond ours (some containers), the kernel refuses and
# bpfpy must say which privilege is missing (6).
# pid 1 here may be outside our sandbox: then its maps are refused although
# we may hold every capability, and the message must say so rather than
# blame a capability we hold.
if head -c 1 /proc/1/maps >/dev/null 2>&1; then
	pid1_rc=4 pid1_msg='not a CPython process'
elif (($(printf '%d' "0x$(awk '/^CapEff/ {print $2}' /proc/self/status)") >> 19 & 1)); then
	pid1_rc=6 pid1_msg='no capability is missing'
else
	pid1_rc=6 pid1_msg=CAP_SYS_PTRACE
fi

mkdir -p "$TMP/outdir"
echo existing >"$TMP/outdir/exists.folded"
echo existing >"$TMP/outdir/exists2.folded"

# Rows for SECURITY.md (build/hardening/bad_input.tsv), PIDs named by role.
rows_file bad_input
row() {
	local what=" $1 " o
	what=${what// $gone / <no-such-pid> }
	what=${what// $nonpy / <sleep> }
	what=${what// $kthread / <kthread> }
	what=${what// $py / <python3> }
	for o in "${old[@]}"; do what=${what// ${o#*:} / <python${o%%:*}> }; done
	[[ -n $dbg ]] && what=${what// $dbg / <python3.11d> }
	[[ -n $ft ]] && what=${what// $ft / <free-threaded> }
	what=${what//$TMP/\$TMP}
	printf 'bad input\tbpfpy%s\t%s\n' "${what% }" "${2//$TMP/\$TMP}" >>"$ROWS"
}

# ---------------------------------------------------------------- the table
# RC|FRAGMENT|ARGS (ARGS: one word list; $vars expanded here)
NOPRIV="setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all"
table=$(cat <<EOF
3|no such process|dump -p $gone
3|no such process|dump -p $gone --nonblocking
3|no such process|record -p $gone -d 1
4|not a CPython process|dump -p $nonpy
4|not a CPython process|dump -p $nonpy --json
4|not a CPython process|record -p $nonpy -d 1
$pid1_rc|$pid1_msg|dump -p 1 --nonblocking
$pid1_rc|$pid1_msg|record -p 1 -d 1
4|kernel thread|dump -p $kthread
4|kernel thread|record -p $kthread -d 1
2|-p PID is required|dump
2|invalid PID|dump -p abc
2|invalid PID|dump -p 0
2|invalid PID|dump -p -5
2|max-depth|dump -p $py --max-depth 0
2|max-depth|dump -p $py --max-depth 5000
2|unrecognized option|dump -p $py --bogus
2|unexpected argument|dump -p $py extra
2|give -p PID or -a|record -d 1
2|invalid PID list|record -p 12,abc
2|invalid rate|record -p $py -F 0
2|invalid rate|record -p $py -F fast
2|invalid duration|record -p $py -d -1
2|invalid duration|record -p $py -d soon
2|unknown format|record -p $py -f jpeg
2|--clock must be cpu, offcpu, wall or snapshot|record -p $py --clock moon
2|--idle goes with --clock wall|record -p $py --idle
2|--poisson-factor must be 2..64|record -p $py --poisson --poisson-factor 1
2|--max-depth must be 1..|record -p $py --max-depth 2000
2|--ringbuf-mb must be 1..1024|record -p $py --ringbuf-mb 0
2|cannot tell the format|record -p $py -d 1 -o $TMP/outdir/x.unknownext
2|$TMP/nodir/sub|record -p $py -d 1 -o $TMP/nodir/sub/out.folded
2|exists|record -p $py -d 1 -o $TMP/outdir/exists.folded
0||record -q -p $py -d 1 --clock wall --idle -F 50 -o $TMP/outdir/exists2.folded --force
6|CAP_|nopriv dump -p $py
6|CAP_|nopriv dump -p $py --nonblocking
6|CAP_BPF|nopriv record -p $py -d 1
EOF
)
for o in "${old[@]}"; do
	v=${o%%:*} p=${o#*:}
	table+=$'\n'"5|Python $v is not supported|dump -p $p"
	table+=$'\n'"5|Python $v is not supported|dump -p $p --nonblocking"
	table+=$'\n'"5|Python $v is not supported|record -p $p -d 1"
done

if [[ -n $ft ]]; then
	table+=$'\n'"5|free-threaded build (Py_GIL_DISABLED) is not supported|dump -p $ft"
	table+=$'\n'"5|free-threaded build (Py_GIL_DISABLED) is not supported|dump -p $ft --nonblocking"
	table+=$'\n'"5|free-threaded build (Py_GIL_DISABLED) is not supported|record -p $ft -d 1"
fi
if [[ -n $dbg ]]; then # supported: exit 0, nothing on stderr to match
	table+=$'\n'"0||dump -p $dbg"
	table+=$'\n'"0||dump -p $dbg --nonblocking --json"
	table+=$'\n'"0||record -q -p $dbg -d 1 --clock wall --idle -F 50 -o $TMP/dbg.folded"
fi

while IFS='|' read -r want frag cmd; do
	[[ -n $cmd ]] || continue
	read -ra argv <<<"$cmd"
	pre=()
	if [[ ${argv[0]} == nopriv ]]; then
		read -ra pre <<<"$NOPRIV"
		argv=("${argv[@]:1}")
	fi
	timeout -s KILL 60 "${pre[@]}" "$BPFPY" "${argv[@]}" >"$TMP/row.out" 2>"$TMP/row.err"
	rc=$?
	msg=$(grep -v '^libbpf' "$TMP/row.err" | head -n 3 | tr '\n' ' ')
	if [[ $rc == "$want" ]] && { [[ -z $frag ]] || grep -qF -- "$frag" "$TMP/row.err"; }; then
		ok "bpfpy ${pre:+(unprivileged) }${argv[*]} -> $rc, '$frag': $msg"
		row "${pre:+(unprivileged) }${argv[*]}" "exit $rc${frag:+: '$frag'}"
	else
		bad "bpfpy ${pre:+(unprivileged) }${argv[*]} -> $rc (want $want with '$frag'): $msg"
	fi
	if [[ ${argv[0]} == dump ]]; then
		for p in "$py" "${old[@]#*:}" $dbg $ft; do
			[[ " ${argv[*]} " == *" $p "* ]] && not_stopped "$p" "after dump ${argv[*]}"
		done
	fi
done <<<"$table"

# --force replaced the file with a profile
grep -q 'outer' "$TMP/outdir/exists2.folded" && ok "--force: existing file replaced by the profile" ||
	bad "--force: $TMP/outdir/exists2.folded not replaced: $(head -c 200 "$TMP/outdir/exists2.folded")"
[[ $(cat "$TMP/outdir/exists.folded") == existing ]] && ok "without --force: existing file untouched" ||
	bad "without --force: existing file changed"
[[ ! -e $TMP/nodir ]] && ok "missing directory not created" || bad "record created $TMP/nodir"

# the debug build: the same frames and lines as the release build
if [[ -n $dbg ]]; then
	timeout -s KILL 60 "$BPFPY" dump -p "$dbg" >"$TMP/dbg.dump" 2>&1
	want_lines=$(for k in park outer module; do grep -n "# L:$k\$" "$PYDIR/three.py" | cut -d: -f1; done | tr '\n' ' ')
	got_lines=$(grep -oE 'three\.py:[0-9]+' "$TMP/dbg.dump" | cut -d: -f2 | tr '\n' ' ')
	if grep -q "CPython 3.11.2, /usr/bin/python3.11d" "$TMP/dbg.dump" && [[ $got_lines == "$want_lines" ]]; then
		ok "python3.11d (debug build): park/outer/<module> at lines $got_lines"
	else
		bad "python3.11d: want lines $want_lines, got: $(head -c 400 "$TMP/dbg.dump")"
	fi
	grep -q '^<module> (.*three.py:[0-9]*);outer (.*);park (.*) [0-9]' "$TMP/dbg.folded" 2>/dev/null &&
		ok "python3.11d recorded: $(head -n 1 "$TMP/dbg.folded" | cut -c1-120)" ||
		bad "python3.11d record: $(head -c 300 "$TMP/dbg.folded" 2>/dev/null)"
fi
rm -f "${sid_root:-/nonexistent}$ftpy"

# a good dump of the same process still works after all that, and leaves it running
timeout -s KILL 60 "$BPFPY" dump -p "$py" >"$TMP/good.out" 2>&1 && grep -q 'outer' "$TMP/good.out" &&
	ok "dump -p $py still works" || bad "dump -p $py: $(head -c 300 "$TMP/good.out")"
not_stopped "$py" "after the good dump"

# ---------------------------------------------------------------- target exits
start_py "$(targets | tail -n 1 | cut -f2)" "$PYDIR/hot.py" || { bad "hot.py did not start"; finish; }
victim=$PY_PID
timeout -s KILL 60 "$BPFPY" record -v -p "$victim" -o "$TMP/exit.folded" 2>"$TMP/exit.err" &
rec=$!
PIDS+=("$rec")
for _ in $(seq 1 300); do grep -q "sampling pid $victim " "$TMP/exit.err" && break; sleep 0.1; done
sleep 1 # some samples first
kill -9 "$victim"
wait "$victim" 2>/dev/null
wait "$rec"
rc=$?
grep -v '^libbpf' "$TMP/exit.err" | sed 's/^/    /'
if [[ $rc == 0 ]] && grep -q 'every target exited' "$TMP/exit.err" && grep -q "pid $victim .*(exited)" "$TMP/exit.err"; then
	ok "target killed during record: exit 0, 'every target exited', summary marks it (exited)"
	printf 'bad input\tthe target is SIGKILLed while record runs\texit 0: says every target exited, marks it (exited), writes its samples\n' >>"$ROWS"
else
	bad "target killed during record: exit $rc, stderr: $(grep -v '^libbpf' "$TMP/exit.err" | tail -n 4 | tr '\n' ' ')"
fi
grep -q 'heavy' "$TMP/exit.folded" 2>/dev/null && ok "its samples were still written" ||
	bad "no profile written after the target exited"
finish
