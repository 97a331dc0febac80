#!/bin/bash
# bpfpy top (issue 15, item 5) in tmux, on every target: a pane runs
# `bpfpy top -p PID`, then prints its exit status and the terminal mode:
#   - top_hot_function appears within a bounded wait (15 s; the time seen is
#     reported, not asserted), first when sorted by own;
#   - t, n and o switch the sort (the header says which; with t and n
#     <module> is the first row, with o top_hot_function);
#   - q exits 0, the alternate screen is left (the pane shows the shell's
#     lines again) and the terminal is back in canonical mode with echo;
#   - the same after SIGTERM (graceful) and after SIGQUIT (fatal: the
#     release hook restores the terminal before bpfpy dies, exit 131).
. "$(dirname "$0")/lib.sh"
use_bpfpy
command -v tmux >/dev/null || { echo "no tmux"; exit 77; }

# pane_wait SOCK PATTERN SECONDS: poll capture-pane until PATTERN shows.
pane_wait() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		tmux -L "$1" capture-pane -p 2>/dev/null | grep -qE -- "$2" && return 0
		sleep 0.1
	done
	return 1
}
# first_row SOCK: the function of the first row of the table.
first_row() { tmux -L "$1" capture-pane -p | awk '/OWN%  TOTAL%/ {getline; sub(/^ *[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9]+  /, ""); print; exit}'; }

top_one() { # run by each_target
	local version=$1 label=$2 root=$3 sock t0 t1 r how
	echo "== $label ($version)"
	start_py "$label" "$PYDIR/top_target.py" || { bad "$label: target did not start"; exit 1; }
	for how in q TERM QUIT; do
		sock=bpfpy-top-$label-$how-$$
		# stty -a's "icanon echo" (or "-icanon -echo" if left raw).
		tmux -L "$sock" new-session -d -x 150 -y 30 \
			"$BPFPY top -p $PY_PID 2>$TMP/$label.$how.err; echo TOP-EXIT=\$?; stty -a | grep -o -- '-\\?icanon\\|-\\?echo ' | tr '\\n' ' '; echo; sleep 60"
		t0=$(date +%s.%N)
		if pane_wait "$sock" 'top_hot_function' 15; then
			t1=$(date +%s.%N)
			[[ $how == q ]] && ok "$label: top shows top_hot_function after $(printf '%.1f' "$(echo "$t1 - $t0" | bc)") s"
		else
			bad "$label ($how): no top_hot_function in 15 s: $(tmux -L "$sock" capture-pane -p | head -n 6 | tr '\n' '|')"
		fi
		if [[ $how == q ]]; then
			r=$(first_row "$sock")
			[[ $r == top_hot_function* ]] && ok "$label: sorted by own, first row $r" || bad "$label: by own, first row '$r'"
			for k in t:total n:name o:own; do
				tmux -L "$sock" send-keys "${k%%:*}"
				if pane_wait "$sock" "sort: ${k#*:} " 5; then
					r=$(first_row "$sock")
					want='<module>'
					[[ ${k%%:*} == o ]] && want=top_hot_function
					[[ $r == "$want"* ]] && ok "$label: key ${k%%:*} sorts by ${k#*:} (first row $r)" ||
						bad "$label: key ${k%%:*}: first row '$r', want $want"
				else
					bad "$label: key ${k%%:*}: header never says 'sort: ${k#*:}'"
				fi
			done
			tmux -L "$sock" send-keys q
			want=0
		else
			pid=$(pgrep -f "^$BPFPY top -p $PY_PID\$" | head -n 1)
			[ -n "$pid" ] && kill -"$how" "$pid"
			want=$([[ $how == TERM ]] && echo 0 || echo 131)
		fi
		if pane_wait "$sock" '^TOP-EXIT=' 10; then
			r=$(tmux -L "$sock" capture-pane -p | sed -n 's/^TOP-EXIT=//p')
			[[ $r == "$want" ]] && ok "$label: top ended by $how, exit $r" || bad "$label: ended by $how: exit $r, want $want"
			pane_wait "$sock" '^icanon echo' 5 && ok "$label ($how): terminal back in canonical mode with echo" ||
				bad "$label ($how): terminal left as: $(tmux -L "$sock" capture-pane -p | grep -- 'icanon' | head -n 1)"
			tmux -L "$sock" capture-pane -p | grep -q 'OWN%  TOTAL%' && bad "$label ($how): the table is still on screen (alternate screen not left)" ||
				ok "$label ($how): alternate screen left"
		else
			bad "$label: top did not end after $how: $(tmux -L "$sock" capture-pane -p | head -n 3 | tr '\n' '|')"
		fi
		tmux -L "$sock" kill-server 2>/dev/null
	done
	not_stopped "$PY_PID" "$label: after top"
	finish
}
# Three targets at a time (was 2): each check waits for an event (a pane's
# line) under a bound of seconds, none is a share of CPU or a timing.
JOBS=${JOBS:-3} each_target top_one
finish
