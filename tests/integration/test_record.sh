#!/bin/bash
# bpfpy record, root, real BPF sampling of real interpreters.
#
# 1. Every target of scripts/targets.sh (JOBS at a time): py/hot.py, whose
#    heavy() does twice the work of light() (same loop body, twice the
#    iterations), recorded for 2 s (-d 2, collapsed on stdout). Checked:
#    - the folded stacks name heavy and light at their loop-body lines and
#      main at its two call lines, under <module> (lines from the "# L:"
#      markers of hot.py, names from its defs);
#    - no torn stack: every sampled stack is one hot.py can produce
#      (<module>;main[;heavy|light], each frame at a line of its own function,
#      main at the call line of the function above it);
#    - the summary's names: all 4 code objects named when registered, none
#      by the kernel (from user space: the stack then holds <module> and
#      main, and heavy, light and main are constants of <module>'s code);
#    - heavy's share of the heavy+light samples is in [0.45, 0.85]: 2/3
#      expected; with >= 100 samples the binomial sd is <= 0.047, so the
#      window is > 4 sd wide on each side (and cannot pass a 50/50 split
#      with >= 800 samples, or a missing function ever).
#    The 3.15 target runs in the sid chroot: that is the chroot case.
# 2. Fixed vs --poisson (one version): a single busy thread pinned to one CPU,
#    recorded at 1 kHz for 1 s with -f raw (about 1000 gaps, 500 wanted; the
#    CV's own spread is then about 0.05); the coefficient of variation of the
#    gaps between its samples' timestamps must be < 0.3 (fixed; exact period
#    mode) and in [0.6, 1.4] (Poisson: geometric gaps on a K=8 base, CV 0.94). The
#    target's own preemptions would add gaps that have nothing to do with the
#    sampler, so this part runs in its own session (own autogroup) at nice -20.
# 3. --clock wall --idle shows a sleeping thread's stack (py/three.py) at
#    every snapshot; without --idle its samples are dropped and counted.
# 4. -a picks up a Python process started after recording began, on the cpu
#    and on the snapshot clock. The record ends (SIGTERM: exit 0, output
#    written) 1 s after it says it samples the late process, not at a fixed
#    -d 8: about 1000 of its samples (it had about 7700), where the check
#    wants 20 and the heavy share's window stays > 4 sd wide from 100.
# 5. Two versions at once: -p A,B --threads, each pid with its own stacks.
# 6. -f pprof read by `go tool pprof` (-top totals = the run's sample count,
#    -raw locations all frames hot.py has, heavy's share as in the folded
#    output); speedscope JSON parses and names the frames; the SVG is
#    well-formed XML (xmllint --noout) and names the frames. One recording
#    (-d 2) writes the four files at once (-o each; test_convert.sh checks
#    that a file of several -o is the one the format alone gives), where
#    there were four of 2, 2, 1 and 1 s.
# 7. SIGINT to a record without -d: exit 0, summary printed, output written.
# 8. -a over 45 processes: the summary shows 40 rows and folds the rest.
# 9. --phases: the in-kernel cost split into 6 steps that add up to it.
# 10. --cost-floor: every kept tick writes a record (emitted = kept, at
#    least 100 in 1 s of a spinning thread at 1 kHz), none becomes a sample
#    (0 samples, an empty profile), the cost is printed as the floor's; it
#    is refused (exit 2) beside --clock wall and --native.
. "$(dirname "$0")/lib.sh"

JOBS=${JOBS:-3}
use_bpfpy

# ---------------------------------------------------------------- checker
# check/check_stacks.py KIND FILE key=value...: KIND folded (root first,
# optional pid:N;tid:N; prefix, count last) or raw (out_raw.c grammar, leaf
# first). Prints ok:/FAIL: lines and "stat:" lines; exit status = failures.

# check KIND FILE ARGS...: run the checker, count its failures.
check() {
	"$CHECKPY" "$CHECK/check_stacks.py" "$@"
	fails=$((fails + $?))
}

shown_path() { # ROOT PROG: the path the target's frames show
	if [[ $1 == / ]]; then echo "$PYDIR/$2"; else echo "/tmp/bpfpy/$2"; fi
}

# summary_samples ERRFILE PID: "N samples" of PID in bpfpy's summary.
summary_samples() {
	awk -v p="$2" '$1 == "pid" && $2 == p { for (i = 1; i <= NF; i++) if ($(i + 1) ~ /^samples/) { print $i; exit } }' "$1"
}

stop_py() { kill -9 "$1" 2>/dev/null; wait "$1" 2>/dev/null; }

# Every bpfpy run is bounded, so a hang fails the test instead of blocking it.
bpfpy() { timeout -s KILL 120 "$BPFPY" "$@"; }

# ---------------------------------------------------------------- 2. CV part
# Runs as `setsid bash test_record.sh --cv LABEL ROOT`: a session of its own,
# so that its autogroup can be given nice -20 without touching anyone else's.
if [[ ${1:-} == --cv ]]; then
	label=$2 root=$3
	echo -20 >/proc/self/autogroup 2>/dev/null || echo "note: could not renice the autogroup"
	start_py "$label" "$PYDIR/hot.py" || { bad "$label: hot.py did not start"; finish; }
	pid=$PY_PID
	cpu=$(($(nproc) - 1))
	taskset -a -p -c "$cpu" "$pid" >/dev/null && renice -n -20 -p "$pid" >/dev/null
	for mode in fixed poisson; do
		flags=()
		[[ $mode == poisson ]] && flags=(--poisson)
		bpfpy record -p "$pid" -F 1000 -d 1 "${flags[@]}" -f raw -o "$TMP/cv.$mode.raw" 2>"$TMP/cv.$mode.err"
		rc=$?
		sed 's/^/    /' "$TMP/cv.$mode.err"
		[[ $rc == 0 ]] || { bad "$label record $mode -f raw exited $rc"; continue; }
		if [[ $mode == fixed ]]; then cv=0,0.3; else cv=0.6,1.4; fi
		check raw "$TMP/cv.$mode.raw" what="$label $mode raw" src="$PYDIR/hot.py" \
			shown="$(shown_path "$root" hot.py)" pid="$pid" cv="$cv" min=500
	done
	stop_py "$pid"
	finish
fi

# ---------------------------------------------------------------- 1. per version
record_target() { # run by each_target, in a subshell; exit status = failures
	local version=$1 label=$2 root=$3 pid rc
	echo "== $label ($version)"
	start_py "$label" "$PYDIR/hot.py" || { bad "$label: hot.py did not start"; exit 1; }
	pid=$PY_PID
	bpfpy record -p "$pid" -d 2 >"$TMP/$label.folded" 2>"$TMP/$label.err"
	rc=$?
	sed 's/^/    /' "$TMP/$label.err"
	if [[ $rc != 0 ]]; then
		bad "$label: record -p $pid -d 2 exited $rc"
	else
		check folded "$TMP/$label.folded" what="$label record -d 2" src="$PYDIR/hot.py" \
			shown="$(shown_path "$root" hot.py)" pid="$pid"
		n=$(summary_samples "$TMP/$label.err" "$pid")
		total=$(awk '{s += $NF} END {print s + 0}' "$TMP/$label.folded")
		[[ $n == "$total" ]] && ok "$label: summary's $n samples = folded total" ||
			bad "$label: summary says '$n' samples, the folded counts sum to $total"
		# bpfpy's own CPU: present, within what 2 s on every CPU allow, and
		# per sample = seconds / samples (the summary's own figures)
		cpu=$(awk '/^  bpfpy CPU while sampling / { gsub(/[(%,]/, " "); print $5, $7, $11 }' "$TMP/$label.err")
		if [[ -n $cpu ]] && awk -v n="$n" -v c="$(nproc)" '{ s = $1; pc = $2; us = $3
			exit !(s >= 0 && s <= 2.5 * c && pc <= 100 * c && (n == 0 || (us - s * 1e6 / n) ^ 2 < (0.01 + 0.001 * 1e6 / n) ^ 2)) }' <<<"$cpu"; then
			ok "$label: summary gives bpfpy's own CPU while sampling ($cpu: s, %, us per sample)"
		else
			bad "$label: no consistent 'bpfpy CPU while sampling' line: '$cpu' ($n samples)"
		fi
		# Names: the code on hot.py's stack when it was registered (<module>,
		# main, and heavy or light) and the code <module> holds as
		# constants (the three functions) are named from user space then
		# (bpf_sampler_seed): the 4 in all, none left to the kernel.
		read -r kn sn < <(awk '/^  code cache: / { for (i = 1; i < NF; i++) {
			if ($(i + 1) == "named" && $(i + 4) == "kernel,") k = $i
			if ($(i + 1) == "when") s = $i } print k, s }' "$TMP/$label.err")
		if [[ $kn =~ ^[0-9]+$ && $sn =~ ^[0-9]+$ ]] && ((sn == 4 && kn == 0)); then
			ok "$label: $sn code objects named when registered, $kn by the kernel"
		else
			bad "$label: code objects named: '$kn' by the kernel, '$sn' when registered (want 4 when registered, 0 by the kernel)"
		fi
	fi
	stop_py "$pid"
}

start=$(date +%s.%N)
each_target record_target
mapfile -t tlines < <(targets)
declare -A ROOTS=()
for tl in "${tlines[@]}"; do
	IFS=$'\t' read -r version label root py <<<"$tl"
	ROOTS[$label]=$root
done

# pick LABEL...: the first of these labels that is a target, else the first target
pick() {
	local l
	for l in "$@"; do [[ -n ${ROOTS[$l]:-} ]] && { echo "$l"; return; }; done
	IFS=$'\t' read -r _ l _ _ <<<"${tlines[0]}"
	echo "$l"
}

# ---------------------------------------------------------------- 2. fixed vs Poisson
L1=$(pick pyenv-3.12 pyenv-3.13 debian-3.11)
echo "== fixed vs --poisson, gaps of one busy thread ($L1; own session, nice -20, one CPU)"
setsid -w bash "$0" --cv "$L1" "${ROOTS[$L1]}" >"$TMP/log.cv" 2>&1
rc=$?
cat "$TMP/log.cv"
[[ $rc == 0 ]] || fails=$((fails + 1))

# ---------------------------------------------------------------- 3. wall clock
L2=$(pick pyenv-3.10 pyenv-3.9 pyenv-3.12)
echo "== --clock wall, a sleeping thread ($L2)"
if start_py "$L2" "$PYDIR/three.py"; then
	pid=$PY_PID
	shown=$(shown_path "${ROOTS[$L2]}" three.py)
	# the stack three.py sleeps in, from its markers: <module>;outer;park
	want=$(for k in module outer park; do
		n=$(grep -n "# L:$k\$" "$PYDIR/three.py" | cut -d: -f1)
		f=$(awk -v n="$n" 'NR <= n && /^def / {sub(/^def /, ""); sub(/\(.*/, ""); f = $0} END {print f}' "$PYDIR/three.py")
		[[ $k == module ]] && f="<module>"
		printf '%s (%s:%s);' "$f" "$shown" "$n"
	done)
	want=${want%;}
	bpfpy record -p "$pid" --clock wall --idle -F 100 -d 1 >"$TMP/wall.folded" 2>"$TMP/wall.err"
	rc=$?
	sed 's/^/    /' "$TMP/wall.err"
	n=$(summary_samples "$TMP/wall.err" "$pid")
	if [[ $rc != 0 ]]; then
		bad "wall --idle exited $rc"
	elif [[ $(wc -l <"$TMP/wall.folded") == 1 && $(cut -d' ' -f1- "$TMP/wall.folded") == "$want ${n:-x}" && ${n:-0} -ge 10 ]]; then
		ok "wall --idle: all $n snapshots show '$want'"
	else
		bad "wall --idle: expected only '$want' ($n samples), got: $(head -c 600 "$TMP/wall.folded")"
	fi
	bpfpy record -p "$pid" --clock snapshot -F 100 -d 1 >"$TMP/wall2.folded" 2>"$TMP/wall2.err"
	rc=$?
	dropped=$(sed -n 's/^ *idle samples dropped: \([0-9]*\).*/\1/p' "$TMP/wall2.err")
	if [[ $rc == 0 && ! -s $TMP/wall2.folded && ${dropped:-0} -ge 10 ]]; then
		ok "wall without --idle: nothing kept, $dropped idle samples dropped and counted"
	else
		bad "wall without --idle: rc $rc, dropped '$dropped', output: $(head -c 300 "$TMP/wall2.folded")"
	fi
	stop_py "$pid"
else
	bad "$L2: three.py did not start"
fi

# wait_for FILE REGEX: up to 30 s for bpfpy to have said it.
wait_for() {
	local i
	for i in $(seq 1 300); do grep -qE "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
	return 1
}

# ---------------------------------------------------------------- 4. -a
# The snapshot clock too: its task iterator must visit the processes added
# after it started, not only the one there was at start.
L3=$(pick debian-3.11 pyenv-3.11 pyenv-3.12)
for clock in cpu snapshot; do
echo "== -a picks up a process started later ($L3, $clock clock)"
if start_py "$L3" "$PYDIR/three.py"; then
	sentinel=$PY_PID
	"$BPFPY" record -a -v -d 60 --clock "$clock" --threads -o "$TMP/all.$clock.folded" 2>"$TMP/all.$clock.err" &
	rec=$!
	PIDS+=("$rec")
	# its first scan found the sentinel: the host was scanned before sampling started
	if wait_for "$TMP/all.$clock.err" "sampling pid $sentinel " && start_py "$L3" "$PYDIR/hot.py"; then
		late=$PY_PID
		# a second of its samples once it is picked up, then TERM ends
		# the record as -d would
		wait_for "$TMP/all.$clock.err" "sampling pid $late " && sleep 1
		kill -TERM "$rec" 2>/dev/null
		wait_bounded "$rec" 60
		rc=$?
		grep -v '^libbpf' "$TMP/all.$clock.err" | grep -E "pid ($sentinel|$late) |sampling pid ($sentinel|$late) |^  (ticks|effective)" | sed 's/^/    /'
		if [[ $rc != 0 ]]; then
			bad "-a exited $rc: $(tail -n 5 "$TMP/all.$clock.err")"
		else
			grep -q "sampling pid $late " "$TMP/all.$clock.err" && ok "-a: pid $late, started after the first scan, picked up" ||
				bad "-a: no 'sampling pid $late' on stderr"
			check folded "$TMP/all.$clock.folded" what="-a ($clock clock), the late process" src="$PYDIR/hot.py" \
				shown="$(shown_path "${ROOTS[$L3]}" hot.py)" pid="$late" min=20 startup=1 \
				torn_max="$([[ $clock == snapshot ]] && echo 0.01 || echo 0)"
		fi
		stop_py "$late"
	else
		bad "-a: record did not report the sentinel pid $sentinel: $(tail -n 5 "$TMP/all.$clock.err")"
		kill "$rec" 2>/dev/null
		wait "$rec" 2>/dev/null
	fi
	stop_py "$sentinel"
else
	bad "$L3: three.py did not start"
fi
done

# ---------------------------------------------------------------- 5. two versions
LA=$(pick pyenv-3.8 pyenv-3.9) LB=$(pick sid-3.15 sid-3.14 pyenv-3.13)
echo "== two versions at once: -p A,B ($LA and $LB)"
if start_py "$LA" "$PYDIR/hot.py" && pa=$PY_PID && start_py "$LB" "$PYDIR/hot.py"; then
	pb=$PY_PID
	bpfpy record -p "$pa,$pb" -d 2 --threads -o "$TMP/two.folded" 2>"$TMP/two.err"
	rc=$?
	sed 's/^/    /' "$TMP/two.err"
	if [[ $rc != 0 ]]; then
		bad "-p $pa,$pb exited $rc"
	else
		check folded "$TMP/two.folded" what="-p A,B: $LA" src="$PYDIR/hot.py" \
			shown="$(shown_path "${ROOTS[$LA]}" hot.py)" pid="$pa"
		check folded "$TMP/two.folded" what="-p A,B: $LB" src="$PYDIR/hot.py" \
			shown="$(shown_path "${ROOTS[$LB]}" hot.py)" pid="$pb"
	fi
	stop_py "$pa"
	stop_py "$pb"
else
	bad "$LA/$LB: hot.py did not start"
fi

# ---------------------------------------------------------------- 6. formats
L4=$(pick pyenv-3.13 pyenv-3.12)
echo "== pprof, speedscope, svg ($L4)"
if start_py "$L4" "$PYDIR/hot.py"; then
	pid=$PY_PID
	shown=$(shown_path "${ROOTS[$L4]}" hot.py)
	if bpfpy record -p "$pid" -d 2 -o "$TMP/fmt.folded" -o "$TMP/p.pb.gz" -o "$TMP/s.json" \
		-o "$TMP/f.svg" 2>"$TMP/p.err"; then
		check folded "$TMP/fmt.folded" what="$L4 folded (for pprof)" src="$PYDIR/hot.py" \
			shown="$shown" pid="$pid" share_out="$TMP/fmt.share"
		# pprof
		n=$(summary_samples "$TMP/p.err" "$pid")
		if go tool pprof -top -sample_index=samples "$TMP/p.pb.gz" >"$TMP/p.top" 2>"$TMP/p.top.err"; then
			sed 's/^/    /' "$TMP/p.top"
			"$CHECKPY" "$CHECK/pprof_top.py" "$TMP/p.top" "$n" "$(cat "$TMP/fmt.share" 2>/dev/null)"
			fails=$((fails + $?))
			# every location is a frame hot.py has, at a line of its function
			go tool pprof -raw "$TMP/p.pb.gz" 2>/dev/null | awk '/^Locations/ {l = 1; next} /^Mappings/ {l = 0} l' >"$TMP/p.loc"
			"$CHECKPY" "$CHECK/pprof_locations.py" "$TMP/p.loc" "$PYDIR/hot.py" "$shown"
			fails=$((fails + $?))
		else
			bad "go tool pprof -top cannot read it: $(head -c 300 "$TMP/p.top.err")"
		fi
		# speedscope
		"$CHECKPY" "$CHECK/speedscope.py" "$TMP/s.json" || bad "speedscope JSON is not what speedscope reads"
		# svg
		if xmllint --noout "$TMP/f.svg" 2>"$TMP/svg.err" && grep -q 'heavy' "$TMP/f.svg" && grep -q 'light' "$TMP/f.svg"; then
			ok "SVG well-formed (xmllint --noout) and names heavy and light"
		else
			bad "SVG: $(head -c 300 "$TMP/svg.err")"
		fi
	else
		bad "record -o .folded -o .pb.gz -o .json -o .svg failed: $(tail -n 3 "$TMP/p.err")"
	fi
	stop_py "$pid"
else
	bad "$L4: hot.py did not start"
fi

# ---------------------------------------------------------------- 7. Ctrl-C
L5=$(pick pyenv-3.9 pyenv-3.10)
echo "== SIGINT ends a record without -d cleanly ($L5)"
if start_py "$L5" "$PYDIR/hot.py"; then
	pid=$PY_PID
	# a background job of a script ignores SIGINT unless told otherwise
	env --default-signal=INT "$BPFPY" record -v -p "$pid" -o "$TMP/int.folded" 2>"$TMP/int.err" &
	rec=$!
	PIDS+=("$rec")
	if wait_for "$TMP/int.err" "sampling pid $pid "; then
		sleep 1 # samples to write
		kill -INT "$rec"
		wait_bounded "$rec" 30
		rc=$?
		grep -v '^libbpf' "$TMP/int.err" | sed 's/^/    /'
		if [[ $rc == 0 ]] && grep -q "^  pid $pid " "$TMP/int.err"; then
			ok "SIGINT: exit 0 and the summary printed"
		else
			bad "SIGINT: exit $rc (want 0 and a summary)"
		fi
		check folded "$TMP/int.folded" what="SIGINT, the output written" src="$PYDIR/hot.py" \
			shown="$(shown_path "${ROOTS[$L5]}" hot.py)" pid="$pid" min=20
	else
		bad "SIGINT: record never said 'sampling pid $pid'"
	fi
	stop_py "$pid"
else
	bad "$L5: hot.py did not start"
fi

# ---------------------------------------------------------------- 8. many
echo "== -a over 45 processes: a 40-row summary and one line for the rest"
LM=$(pick pyenv-3.12 pyenv-3.11 debian-3.11)
many=() outs=()
for k in $(seq 1 45); do
	py_launch "$LM" "$PYDIR/three.py"
	many+=("$PY_PID")
	outs+=("$PY_OUT")
done
# every interpreter up: each has printed its ready line, from its own frames
for k in "${!many[@]}"; do
	py_ready "${many[k]}" "${outs[k]}" "$LM" || bad "-a over 45: process $k did not start"
done
"$BPFPY" record -a --clock wall --idle -F 20 -d 2 -o "$TMP/many.folded" 2>"$TMP/many.err"
rc=$?
rows=$(grep -c '^  pid ' "$TMP/many.err")
more=$(awk '/^  \.\.\. [0-9]+ more processes/ {print $2}' "$TMP/many.err")
grep -E '^  \.\.\.' "$TMP/many.err" | sed 's/^/    /'
if [[ $rc == 0 && $rows == 40 && ${more:-0} -ge 5 ]]; then
	ok "-a over $((rows + more)) processes: 40 rows, then '... $more more processes'"
else
	bad "-a over 45+ processes: exit $rc, $rows rows, more='$more'"
fi
kill -9 "${many[@]}" 2>/dev/null

# ---------------------------------------------------------------- 9. --phases
# The split adds up: each step is the time between two clock reads, from
# the program's start to after the ring-buffer write, and the in-kernel
# cost runs from the same start to a little later (one more counter
# update). So the steps sum to at most the cost (+0.02 for the rounding of
# seven figures) and, with one thread (no sample stops early), to at least
# half of it; the walk of hot.py's 4 frames is never free.
echo "== --phases: the in-kernel cost split by step"
LP=$(pick pyenv-3.12 pyenv-3.13 debian-3.11)
if start_py "$LP" "$PYDIR/hot.py"; then
	pid=$PY_PID
	bpfpy record -p "$pid" -d 1 --phases -o "$TMP/ph.folded" 2>"$TMP/ph.err"
	rc=$?
	cost=$(grep -oE 'in-kernel cost [0-9.]+' "$TMP/ph.err" | awk '{ print $3 }')
	split=$(sed -n 's/^  in-kernel phases (us\/sample): //p' "$TMP/ph.err")
	echo "    cost $cost us; $split"
	if [[ $rc == 0 && -n $cost ]] && awk -v c="$cost" -v s="$split" 'BEGIN {
		n = split(s, f, ", "); sum = 0; walk = -1
		for (i = 1; i <= n; i++) {
			k = split(f[i], w, " "); v = w[k] + 0; sum += v
			if (f[i] ~ /^frames /) walk = v
			if (v < 0) exit 1
		}
		exit !(n == 6 && walk > 0 && sum <= c + 0.02 && sum >= 0.5 * c) }'; then
		ok "$LP: 6 steps, frames > 0, summing to $cost us or a little less"
	else
		bad "$LP: record --phases exit $rc, cost '$cost', split '$split'"
	fi
	stop_py "$pid"
else
	bad "$LP: hot.py did not start"
fi

# ---------------------------------------------------------------- 10. --cost-floor
echo "== --cost-floor: records without stacks, counted and not drawn"
if start_py "$LP" "$PYDIR/hot.py"; then
	pid=$PY_PID
	bpfpy record -p "$pid" -d 1 --cost-floor -o "$TMP/fl.folded" 2>"$TMP/fl.err"
	rc=$?
	kept=$(grep -oE 'kept [0-9]+' "$TMP/fl.err" | awk '{ print $2 }')
	emitted=$(grep -oE 'emitted [0-9]+' "$TMP/fl.err" | awk '{ print $2 }')
	cost=$(grep -oE 'in-kernel cost [0-9.]+ us/sample \(--cost-floor' "$TMP/fl.err" | awk '{ print $3 }')
	n=$(summary_samples "$TMP/fl.err" "$pid")
	echo "    kept $kept, emitted $emitted, samples $n, cost $cost us"
	if [[ $rc == 0 && -n $kept && $kept -ge 100 && $emitted == "$kept" && $n == 0 && ! -s $TMP/fl.folded ]] &&
		awk -v c="$cost" 'BEGIN { exit !(c > 0) }'; then
		ok "$LP: $emitted floor records, no sample, floor cost $cost us"
	else
		bad "$LP: record --cost-floor exit $rc, kept '$kept', emitted '$emitted', samples '$n', cost '$cost'"
		sed 's/^/    | /' "$TMP/fl.err"
	fi
	for extra in "--clock wall" "--native"; do
		# shellcheck disable=SC2086 # two words on purpose
		bpfpy record -p "$pid" -d 1 --cost-floor $extra -o "$TMP/fl2.folded" 2>"$TMP/fl2.err"
		rc=$?
		if [[ $rc == 2 ]] && grep -q -- '--cost-floor goes with' "$TMP/fl2.err"; then
			ok "--cost-floor $extra refused (exit 2)"
		else
			bad "--cost-floor $extra: exit $rc"
		fi
	done
	stop_py "$pid"
else
	bad "$LP: hot.py did not start"
fi

echo "run time $(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)") s"
finish
