#!/bin/bash
# bpfpy record -- CMD and trace -- CMD (issue 15, item 4), on every target:
#   - record -- pyrun.sh LABEL launch_target.py exit 3: samples know the GIL
#     holder (registered once the interpreter and its GIL exist); the profile holds
#     launch_first (0.15 s of CPU at the very start: missed by anything that
#     finds the process late) and launch_hot; bpfpy exits 3, CMD's status;
#     pprof output: `go tool pprof -top` names <module> (not [[python]]);
#   - (pyenv-3.12: shared libpython; sid-3.15: chroot) the same ending in
#     SIGTERM: bpfpy exits 143 (128+15), profile written; --subprocesses
#     with "child": the child Python's child_hot is sampled;
#   - a command that does not exist: 127; the launched process is never left
#     stopped or traced (it is gone when bpfpy returns: checked by pid);
#   - sh -c "sleep; exec python" (watched, caught at the exec), sh -c
#     "python; true" --subprocesses, -d 1 on a watched shell (detached, not
#     stopped, runs to its end);
#   - Ctrl-C in tmux reaches the command (foreground group): exit 130, the
#     profile written, the terminal given back;
#   - trace --calls -- CMD (3.15, the target with function__entry): the first
#     call is traced and the Chrome JSON passes chrome_tef.py.
# For chroot targets the command is `scripts/pyrun.sh LABEL ...` itself:
# bash, then chroot, then python, each exec'ing the next (followed through
# every exec).
. "$(dirname "$0")/lib.sh"
use_bpfpy
T=$PYDIR/launch_target.py
PYRUN=$ROOT_DIR/scripts/pyrun.sh

launch_one() { # run by each_target
	local version=$1 label=$2 root=$3 rc t0 t1
	echo "== $label ($version)"
	t0=$(date +%s.%N)
	timeout 120 "$BPFPY" record -F 1khz -o "$TMP/$label.folded" -o "$TMP/$label.pb.gz" -o "$TMP/$label.raw" -- \
		"$PYRUN" "$label" "$T" exit 3 >"$TMP/$label.out" 2>"$TMP/$label.err"
	rc=$?
	t1=$(date +%s.%N)
	sed 's/^/    /' "$TMP/$label.err" | grep -v '^    *\(ticks\|code cache\|effective\)'
	[[ $rc == 3 ]] && ok "$label: record -- CMD exits 3, the command's status ($(printf '%.1f' "$(echo "$t1 - $t0" | bc)") s)" ||
		bad "$label: record -- CMD exited $rc, want 3"
	for fn in launch_first launch_hot '<module>'; do
		n=$(grep -F "$fn (" "$TMP/$label.folded" 2>/dev/null | awk '{s += $NF} END {print s + 0}')
		((n > 0)) && ok "$label: $fn in the profile ($n samples)" || bad "$label: no $fn in the profile"
	done
	# Registered once its interpreter (and, 3.12+, its GIL) exists: the
	# samples say whether the thread held the GIL (SAMPLE_GIL_KNOWN, bit 1).
	n=$(awk '!/^#/ { if (int($5 / 2) % 2) k++ } END { print k + 0 }' "$TMP/$label.raw" 2>/dev/null)
	((n > 0)) && ok "$label: $n of $(grep -vc '^#' "$TMP/$label.raw") samples know the GIL holder" ||
		bad "$label: no sample knows the GIL holder (registered before the interpreter was?)"
	grep -q "wrote $TMP/$label.pb.gz ([0-9]* samples, pprof)" "$TMP/$label.err" &&
		ok "$label: 'wrote FILE (N samples, FORMAT)' printed" || bad "$label: no 'wrote' line"
	if go tool pprof -top "$TMP/$label.pb.gz" >"$TMP/$label.top" 2>&1; then
		grep -q ' <module>$' "$TMP/$label.top" && ok "$label: go tool pprof -top shows <module>" ||
			bad "$label: pprof -top has no <module>: $(head -n 12 "$TMP/$label.top" | tail -n 5)"
		grep -q '\[\[python\]\]' "$TMP/$label.top" && bad "$label: pprof -top still shows [[python]]" ||
			ok "$label: no [[python]] in pprof -top"
	else
		bad "$label: go tool pprof -top failed: $(tail -n 3 "$TMP/$label.top")"
	fi

	# The signal and --subprocesses runs: on two targets (a shared libpython,
	# a chroot), the machine being shared; the launch itself is on all.
	[[ $label == pyenv-3.12 || $label == sid-3.15 ]] || { finish; return; }
	timeout 120 "$BPFPY" record -q -o "$TMP/$label.sig.folded" -- "$PYRUN" "$label" "$T" signal 2>"$TMP/$label.sig.err"
	rc=$?
	[[ $rc == 143 ]] && ok "$label: killed by SIGTERM: bpfpy exits 143" || bad "$label: signal run exited $rc, want 143: $(tail -n 2 "$TMP/$label.sig.err")"
	grep -q 'launch_hot (' "$TMP/$label.sig.folded" 2>/dev/null && ok "$label: its profile written all the same" ||
		bad "$label: no profile after the signal"

	timeout 120 "$BPFPY" record -q --subprocesses -o "$TMP/$label.sub.folded" -- "$PYRUN" "$label" "$T" child 2>"$TMP/$label.sub.err"
	rc=$?
	[[ $rc == 0 ]] || bad "$label: --subprocesses run exited $rc: $(tail -n 2 "$TMP/$label.sub.err")"
	n=$(grep -F 'child_hot (' "$TMP/$label.sub.folded" 2>/dev/null | awk '{s += $NF} END {print s + 0}')
	((n > 0)) && ok "$label: --subprocesses samples the child Python ($n samples of child_hot)" ||
		bad "$label: --subprocesses: no child_hot"
	finish
}
each_target launch_one

# A command that cannot be run, and the child's fate: not left stopped.
"$BPFPY" record -q -- /nonexistent/bpfpy-no-such-cmd 2>"$TMP/nx.err"
rc=$?
[[ $rc == 127 ]] && ok "a missing command: exit 127 ($(head -n 1 "$TMP/nx.err"))" || bad "missing command: exit $rc, want 127"
# -d shorter than the command: bpfpy ends, the command runs on, untraced.
SLEEPER=$(mktemp "$TMP/sleeper.XXXXXX.py")
printf 'import sys, time\nopen(sys.argv[1], "w").write("%%d\\n" %% __import__("os").getpid())\ntime.sleep(20)\n' >"$SLEEPER"
timeout 60 "$BPFPY" record -q -d 1 -o "$TMP/d.folded" -- python3 "$SLEEPER" "$TMP/sleeper.pid" 2>"$TMP/d.err"
rc=$?
[[ $rc == 0 ]] && ok "-d 1 on a longer command: exit 0" || bad "-d 1: exit $rc: $(tail -n 2 "$TMP/d.err")"
if wait_file "$TMP/sleeper.pid" 5; then
	p=$(cat "$TMP/sleeper.pid")
	PIDS+=("$p")
	not_stopped "$p" "record -d 1 -- CMD"
	kill "$p" 2>/dev/null
else
	bad "the sleeper never wrote its pid"
fi

# A shell that execs Python later (watched, not stepped): still sampled from
# the exec on; and one that only forks a Python: --subprocesses finds it.
timeout 60 "$BPFPY" record -q -o "$TMP/sh.folded" -- sh -c "sleep 0.8; exec /usr/bin/python3 $T exit 6" 2>"$TMP/sh.err"
rc=$?
[[ $rc == 6 ]] && ok "sh -c 'sleep; exec python': exit 6, the command's status" || bad "sh -c exec: exit $rc: $(tail -n 2 "$TMP/sh.err")"
grep -q 'launch_first (' "$TMP/sh.folded" 2>/dev/null && ok "sh -c 'sleep; exec python': launch_first sampled (caught at the exec)" ||
	bad "sh -c exec: no launch_first: $(head -c 300 "$TMP/sh.err")"
timeout 60 "$BPFPY" record -q --subprocesses -o "$TMP/shf.folded" -- sh -c "sleep 0.3; /usr/bin/python3 $T; true" 2>"$TMP/shf.err"
rc=$?
grep -q 'launch_hot (' "$TMP/shf.folded" 2>/dev/null && [[ $rc == 0 ]] && ok "sh -c 'python; true' --subprocesses: the forked Python sampled, exit 0" ||
	bad "sh -c fork --subprocesses: exit $rc, $(grep -c . "$TMP/shf.folded" 2>/dev/null) lines: $(head -c 300 "$TMP/shf.err")"
# -d ends while a watched (traced, running) shell goes on: detached, not
# stopped, not killed (it writes its pid, then its mark after the sleep).
timeout 60 "$BPFPY" record -q -d 1 -o "$TMP/shd.folded" -- sh -c "echo \$\$ >$TMP/shd.pid; sleep 3; echo done >$TMP/shd.mark" 2>"$TMP/shd.err"
if wait_file "$TMP/shd.pid" 5; then
	p=$(cat "$TMP/shd.pid")
	kill -0 "$p" 2>/dev/null && not_stopped "$p" "record -d 1 -- sh (watched)"
	wait_file "$TMP/shd.mark" 10 && ok "the watched shell ran to its end after bpfpy left" || bad "the watched shell never finished"
else
	bad "the watched shell never wrote its pid: $(head -c 300 "$TMP/shd.err")"
fi

# Ctrl-C in a terminal (tmux): the command, in the foreground group, gets
# SIGINT and dies of it (Python re-raises it: 130); bpfpy, not interrupted
# itself, writes the profile, exits 130 and gives the terminal back.
if command -v tmux >/dev/null; then
	sock=bpfpy-launch-$$
	LOOP=$(mktemp "$TMP/loop.XXXXXX.py")
	printf 'import sys\nopen(sys.argv[1], "w").write("ready\\n")\nwhile True:\n    sum(range(10000))\n' >"$LOOP"
	tmux -L "$sock" new-session -d -x 150 -y 20 \
		"$BPFPY record -q -o $TMP/cc.folded -- python3 $LOOP $TMP/cc.ready 2>$TMP/cc.err; echo LAUNCH-EXIT=\$?; stty -a | grep -o -- '-\\?icanon\\|-\\?echo ' | tr '\\n' ' '; echo; sleep 60"
	if wait_file "$TMP/cc.ready" 30; then
		tmux -L "$sock" send-keys C-c
		for ((i = 0; i < 150; i++)); do
			tmux -L "$sock" capture-pane -p | grep -q 'LAUNCH-EXIT=' && break
			sleep 0.1
		done
		pane=$(tmux -L "$sock" capture-pane -p)
		rc=$(grep -o 'LAUNCH-EXIT=[0-9]*' <<<"$pane" | cut -d= -f2)
		[[ $rc == 130 ]] && ok "Ctrl-C reaches the launched command: bpfpy exits 130 (128+SIGINT)" ||
			bad "Ctrl-C: bpfpy exit '${rc}', want 130: $(tr '\n' '|' <<<"$pane" | head -c 300)"
		grep -q 'sum\|<module> (' "$TMP/cc.folded" 2>/dev/null && ok "Ctrl-C: the profile is written ($(awk '{s += $NF} END {print s + 0}' "$TMP/cc.folded") samples)" ||
			bad "Ctrl-C: no profile: $(head -c 300 "$TMP/cc.err")"
		grep -q '^icanon echo' <<<"$pane" && ok "Ctrl-C: the terminal is bpfpy's shell's again, canonical with echo" ||
			bad "Ctrl-C: terminal mode after: $(grep icanon <<<"$pane")"
	else
		bad "Ctrl-C: the launched loop never started: $(head -c 300 "$TMP/cc.err")"
	fi
	tmux -L "$sock" kill-server 2>/dev/null
fi

# trace -- CMD on 3.15: the probes are in before the first call.
if targets | grep -q $'\tsid-3.15\t'; then
	timeout 90 "$BPFPY" trace -q --calls --threshold 0 -f chrome -o "$TMP/t.trace.json" -- "$PYRUN" sid-3.15 "$T" exit 5 2>"$TMP/t.err"
	rc=$?
	[[ $rc == 5 ]] && ok "trace -- CMD exits 5, the command's status" || bad "trace -- CMD exited $rc: $(tail -n 3 "$TMP/t.err")"
	"$CHECKPY" "$CHECK/chrome_tef.py" "$TMP/t.trace.json" what="trace -f chrome (3.15)" names=launch_first,launch_hot || fails=$((fails + 1))
fi
finish
