#!/bin/bash
# Issue 11 row 15: targets in their own PID namespace (any container).
# 3.11+ keeps gettid() as the target sees it, i.e. the namespace's tid;
# before the fix the BPF programs compared the host tid with it and found
# no thread state at all (0 samples), and dump printed namespace tids.
#
# Each namespaced target runs beside the same program outside a namespace,
# both pinned to one CPU so that they share it fairly whatever else the
# host runs, recorded together by one `record` (same duration, rate and
# load; one record of every pair, all on that CPU: about 300 samples a
# process, where there were five records of one pair each): the namespaced
# one must get as many samples as the plain one, within +-20% (the
# scheduler's fairness over DUR seconds between equal processes on one
# CPU; before the fix it got 0). Then, on the
# namespaced targets: dump prints host tids (compared with /proc/PID/task)
# with the namespace tid beside them, record -a and --clock wall (one record
# of them all) sample them, and trace captures stacks at USDT probes (3.15).
# Every spinning target is pinned to one CPU; the plain twins run only
# while the pairs are recorded.
#
# Namespaces: unshare --pid --fork --mount-proc with the sid chroot (3.15,
# 3.14), without chroot (pyenv 3.12 and 3.10), and nested user+PID
# namespaces (unshare --user --map-root-user) as nobody, with Debian's 3.11.
# The oracle only runs targets it launches itself (--python), so it cannot
# be pointed at a namespaced process: not tested here.
. "$(dirname "$0")/lib.sh"
use_bpfpy
PYDIR=$ROOT_DIR/tests/integration/py
SID=${BPFPY_SID:-/var/cache/bpfpy/sid}
RATE=1000
DUR=3

have() { targets | awk -F'\t' -v l="$1" '$2 == l { f = 1 } END { exit !f }'; }
pyof() { targets | awk -F'\t' -v l="$1" '$2 == l { print $4; exit }'; }

# Files the chroot targets name as /tmp/..., unique to this run.
WORK=
if [ -d "$SID/tmp" ]; then
	WORK=$(mktemp -d "$SID/tmp/bpfpy-ns.XXXXXX")
	chmod 755 "$WORK"
	cp "$PYDIR/ns_spin.py" "$PYDIR/trace_calls.py" "$WORK/"
fi
READY=$TMP/ready
mkdir -p "$READY" && chmod 1777 "$READY"
cp "$PYDIR/ns_spin.py" "$TMP/ns_spin.py" && chmod 644 "$TMP/ns_spin.py"
trap 'cleanup; [ -n "$WORK" ] && rm -rf "$WORK"' EXIT

# launch NAME READY_AS_HOST CMD...: run CMD in the background, wait for its
# ready file; sets TPID to the Python process. Under `unshare --fork` that
# is unshare's child (chroot and setpriv exec), else CMD itself.
declare -A TPIDS
launch() {
	local name=$1 ready=$2 pid child
	shift 2
	"$@" >"$TMP/$name.out" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	if ! wait_file "$ready" 20 "$pid"; then
		bad "$name: not ready: $(head -3 "$TMP/$name.out")"
		return 1
	fi
	child=$(pgrep -P "$pid" | head -1)
	TPID=${child:-$pid}
	PIDS+=("$TPID")
	TPIDS[$name]=$TPID
}

cpu_ticks() { cut -d')' -f2 "/proc/$1/stat" | awk '{ print $12 + $13 }'; }

# Every spinning target is pinned to one CPU from its start (the pairs
# share it fairly whatever else runs, and the other CPU stays free for
# bpfpy, the launches and the checks); the plain twins are started just
# before the pairs are recorded and killed after, their one use.
cpu=$(($(nproc) - 1))
pin() { local t; for t in /proc/"$1"/task/*; do taskset -pc "$cpu" "${t##*/}" >/dev/null; done; }

NS=()    # namespaced targets, by name
PAIRS=() # "ns_name plain_name LAUNCHER ARGS...": LAUNCHER ARGS starts the twin
add_pair() { NS+=("$1"); PAIRS+=("$*"); pin "${TPIDS[$1]}"; }
plain_sid() { # V: the sid interpreter outside a namespace
	local w=${WORK#"$SID"}
	launch "plain-sid-$1" "$WORK/ready-plain-$1" chroot "$SID" "python$1" "$w/ns_spin.py" "$w/ready-plain-$1"
}
plain_host() { # NAME PYTHON
	launch "$1" "$READY/$1" "$2" "$TMP/ns_spin.py" "$READY/$1"
}

if [ -n "$WORK" ]; then
	for v in 3.15 3.14; do
		have "sid-$v" || continue
		w=${WORK#"$SID"}
		launch "ns-sid-$v" "$WORK/ready-ns-$v" unshare --pid --fork --mount-proc \
			chroot "$SID" "python$v" "$w/ns_spin.py" "$w/ready-ns-$v" &&
			add_pair "ns-sid-$v" "plain-sid-$v" plain_sid "$v"
	done
fi
for l in pyenv-3.12 pyenv-3.10; do
	have "$l" || continue
	py=$(pyof "$l")
	launch "ns-$l" "$READY/ns-$l" unshare --pid --fork --mount-proc \
		"$py" "$TMP/ns_spin.py" "$READY/ns-$l" &&
		add_pair "ns-$l" "plain-$l" plain_host "plain-$l" "$py"
done
# Nested user + PID namespaces, as nobody if the kernel lets nobody make a
# user namespace, else as root.
if [ -x /usr/bin/python3.11 ]; then
	who="as nobody"
	as=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
	"${as[@]}" unshare --user --map-root-user true 2>/dev/null || {
		as=()
		who="as root"
	}
	launch "userns-3.11" "$READY/userns-3.11" "${as[@]}" unshare --user --map-root-user \
		--pid --fork --mount-proc /usr/bin/python3.11 "$TMP/ns_spin.py" "$READY/userns-3.11" &&
		add_pair "userns-3.11" "plain-3.11" plain_host plain-3.11 /usr/bin/python3.11 &&
		ok "nested user+PID namespace runs $who"
fi
[ "${#PAIRS[@]}" -gt 0 ] || {
	bad "no namespaced target could start"
	finish
}
for n in "${NS[@]}"; do
	p=${TPIDS[$n]}
	lv=$(awk '/^NSpid:/ { print NF - 1 }' "/proc/$p/status")
	[ "$lv" -ge 2 ] && ok "$n: pid $p is in its own PID namespace (NSpid:$(awk '/^NSpid:/ { $1 = ""; print }' "/proc/$p/status"))" ||
		bad "$n: pid $p not in a PID namespace"
done

# 1. Samples: each namespaced target and its plain twin, pinned to the
# same CPU (so that they share it fairly, whatever else runs), recorded by
# one record, every pair in the same one; 2. the sample tids are host tids.
LIVE=() # the pairs whose twin started
for pr in "${PAIRS[@]}"; do
	read -r a b launcher <<<"$pr"
	# shellcheck disable=SC2086 # the launcher and its words
	$launcher || continue
	pin "${TPIDS[$b]}"
	LIVE+=("$a $b")
done
declare -A TICKS
rp=()
for pr in "${LIVE[@]}"; do
	read -r a b <<<"$pr"
	for n in "$a" "$b"; do
		rp+=(-p "${TPIDS[$n]}")
		TICKS[$n]=$(cpu_ticks "${TPIDS[$n]}")
	done
done
if ((${#LIVE[@]})); then
	timeout 60 "$BPFPY" record "${rp[@]}" -F "$RATE" -d "$DUR" -q -f raw -o "$TMP/pairs.raw" \
		2>"$TMP/pairs.err"
	rc=$?
fi
for pr in "${LIVE[@]}"; do
	read -r a b <<<"$pr"
	pa=${TPIDS[$a]} pb=${TPIDS[$b]}
	ca=$(($(cpu_ticks "$pa") - ${TICKS[$a]})) cb=$(($(cpu_ticks "$pb") - ${TICKS[$b]}))
	sa=$(awk -v p="$pa" '!/^#/ && $2 == p' "$TMP/pairs.raw" | wc -l) # '#' lines: raw 2's, not samples
	sb=$(awk -v p="$pb" '!/^#/ && $2 == p' "$TMP/pairs.raw" | wc -l)
	# raw counts within 20% of each other; CPU used shown for reference
	if [ "$rc" = 0 ] && [ "$sa" -ge 50 ] && [ "$sb" -ge 50 ] && [ $((sa * 5)) -ge $((sb * 4)) ] &&
		[ $((sb * 5)) -ge $((sa * 4)) ]; then
		ok "$a: $sa samples ($ca CPU ticks), $b: $sb samples ($cb CPU ticks): within 20%"
	else
		bad "$a: $sa samples ($ca ticks), $b: $sb ($cb ticks), rc $rc: $(head -c 200 "$TMP/pairs.err")"
	fi
	tasks=$(ls "/proc/$pa/task" | sort -n | tr '\n' ' ')
	rtids=$(awk -v p="$pa" '!/^#/ && $2 == p { print $3 }' "$TMP/pairs.raw" | sort -un | tr '\n' ' ')
	[ "$rtids" = "$tasks" ] && ok "$a: samples carry host tids ($rtids)" || bad "$a: sample tids '$rtids', /proc/$pa/task '$tasks'"
done
# The twins' part is done: they spin no more beside what follows.
for pr in "${LIVE[@]}"; do
	read -r a b <<<"$pr"
	kill -9 "${TPIDS[$b]}" 2>/dev/null
	wait "${TPIDS[$b]}" 2>/dev/null
	unset "TPIDS[$b]"
done

# 3. dump: host tids, the namespace tid beside them.
for n in "${NS[@]}"; do
	p=${TPIDS[$n]}
	timeout 30 "$BPFPY" dump --json -p "$p" >"$TMP/$n.json" 2>"$TMP/$n.dump.err"
	if r=$(python3 - "$TMP/$n.json" "$p" 2>&1 <<'EOF'
import json, os, sys
d, pid = json.load(open(sys.argv[1])), sys.argv[2]
ns = {}
for t in os.listdir("/proc/%s/task" % pid):
    for l in open("/proc/%s/task/%s/status" % (pid, t)):
        if l.startswith("NSpid:"):
            ns[int(t)] = int(l.split()[-1])
got = {t["tid"]: t["ns_tid"] for t in d["threads"]}
print(got)
assert got == ns, (got, ns)
assert all(t["frames"] for t in d["threads"])
EOF
	); then
		ok "$n: dump --json: host tid -> ns tid $r"
	else
		bad "$n: dump --json tids: $r $(head -c 300 "$TMP/$n.dump.err")"
	fi
	timeout 30 "$BPFPY" dump -p "$p" >"$TMP/$n.txt" 2>&1
	first=$(ls "/proc/$p/task" | sort -n | head -1)
	grep -q "^Thread $first (ns tid 1)" "$TMP/$n.txt" && ok "$n: dump prints 'Thread $first (ns tid 1)'" ||
		bad "$n: dump text: $(head -c 300 "$TMP/$n.txt")"
done

# 4. record -a finds and samples them; 5. the wall clock too.
timeout 60 "$BPFPY" record -a -d 2 -q -f raw -o "$TMP/a.raw" 2>"$TMP/a.err"
for n in "${NS[@]}"; do
	c=$(awk -v p="${TPIDS[$n]}" '!/^#/ && $2 == p' "$TMP/a.raw" | wc -l)
	[ "$c" -gt 0 ] && ok "$n: record -a: $c samples" || bad "$n: record -a: no samples: $(head -c 300 "$TMP/a.err")"
done
# One wall record of every namespaced target (-p each), each judged on its
# own pid's lines: they all ran meanwhile whether recorded or not.
wp=()
for n in "${NS[@]}"; do wp+=(-p "${TPIDS[$n]}"); done
timeout 30 "$BPFPY" record --clock wall -F 200 -d 1.5 "${wp[@]}" -q -f raw -o "$TMP/ns.wall" 2>"$TMP/ns.wall.err"
for n in "${NS[@]}"; do
	p=${TPIDS[$n]}
	c=$(awk -v p="$p" '!/^#/ && $2 == p && /spin_/' "$TMP/ns.wall" | wc -l)
	tids=$(awk -v p="$p" '!/^#/ && $2 == p { print $3 }' "$TMP/ns.wall" | sort -un | tr '\n' ' ')
	[ "$c" -gt 50 ] && [ "$tids" = "$(ls "/proc/$p/task" | sort -n | tr '\n' ' ')" ] &&
		ok "$n: --clock wall: $c samples, host tids $tids" ||
		bad "$n: --clock wall: $c samples, tids '$tids': $(head -c 300 "$TMP/ns.wall.err")"
done
for n in "${!TPIDS[@]}"; do kill -9 "${TPIDS[$n]}" 2>/dev/null; done
wait 2>/dev/null

# 6. trace: every Python call of a 3.15 target in a PID namespace, with its
# stack (function__entry/return USDT probes).
if [ -n "$WORK" ] && have sid-3.15; then
	w=${WORK#"$SID"}
	unshare --pid --fork --mount-proc chroot "$SID" python3.15 "$w/trace_calls.py" 20 500 "$w/go" \
		>"$TMP/tr.target" 2>&1 &
	upid=$!
	PIDS+=("$upid")
	for _ in $(seq 1 200); do grep -q ready "$TMP/tr.target" && break; sleep 0.05; done
	tpid=$(pgrep -P "$upid" | head -1)
	PIDS+=("$tpid")
	timeout 60 "$BPFPY" trace -p "$tpid" --calls --threshold 0 -f collapsed -o "$TMP/tr.folded" \
		>"$TMP/tr.out" 2>"$TMP/tr.err" &
	trp=$!
	for _ in $(seq 1 200); do grep -q attached "$TMP/tr.err" && break; sleep 0.05; done
	touch "$WORK/go"
	wait "$trp"
	rc=$?
	# collapsed: root first, ';'-joined, then the count
	n=$(awk '$0 ~ /mid \(.*;leaf \(/ { s += $NF } END { print s + 0 }' "$TMP/tr.folded")
	[ "$rc" = 0 ] && [ "$n" -ge 10000 ] && ok "trace in a PID namespace: $n leaf calls with mid;leaf stacks" ||
		bad "trace in a PID namespace: rc $rc, $n stacks: $(head -c 400 "$TMP/tr.err")"
fi
rows_file containers
printf '%s\t%s\t%s\n' containers "targets in their own PID namespace (unshare --pid --fork --mount-proc; sid 3.14/3.15 chroot, pyenv 3.12, 3.10; Debian 3.11 in a user+PID namespace as nobody): record beside the same program outside, record -a, --clock wall, dump, trace --calls" \
	"$([ "$fails" -eq 0 ] && echo "samples within ±20% of the un-namespaced twin, host tids in every sample, dump shows host tids with the ns tid beside them, trace sees every call" || echo "FAILED ($fails checks)")" >>"$ROWS"
finish
