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
#    - heavy's share of the heavy+light samples is in [0.45, 0.85]: 2/3
#      expected; with >= 100 samples the binomial sd is <= 0.047, so the
#      window is > 4 sd wide on each side (and cannot pass a 50/50 split
#      with >= 800 samples, or a missing function ever).
#    The 3.15 target runs in the sid chroot: that is the chroot case.
# 2. Fixed vs --poisson (one version): a single busy thread pinned to one CPU,
#    recorded at 1 kHz with -f raw; the coefficient of variation of the gaps
#    between its samples' timestamps must be < 0.3 (fixed; exact period mode)
#    and in [0.6, 1.4] (Poisson: geometric gaps on a K=8 base, CV 0.94). The
#    target's own preemptions would add gaps that have nothing to do with the
#    sampler, so this part runs in its own session (own autogroup) at nice -20.
# 3. --clock wall --idle shows a sleeping thread's stack (py/three.py) at
#    every snapshot; without --idle its samples are dropped and counted.
# 4. -a picks up a Python process started after recording began, on the cpu
#    and on the wall clock.
# 5. Two versions at once: -p A,B --threads, each pid with its own stacks.
# 6. -f pprof read by `go tool pprof` (-top totals = the run's sample count,
#    -raw locations all frames hot.py has, heavy's share as in the folded run);
#    speedscope JSON parses and names the frames; the SVG is well-formed XML
#    (xmllint --noout) and names the frames.
# 7. SIGINT to a record without -d: exit 0, summary printed, output written.
# 8. -a over 45 processes: the summary shows 40 rows and folds the rest.
. "$(dirname "$0")/lib.sh"

PYDIR=$ROOT_DIR/tests/integration/py
JOBS=${JOBS:-3}
CHECKPY=/usr/bin/python3
[ -x "$CHECKPY" ] || CHECKPY=$(command -v python3)
use_bpfpy

# ---------------------------------------------------------------- checker
# check_stacks.py KIND FILE key=value...: KIND folded (root first, optional
# pid:N;tid:N; prefix, count last) or raw (out_raw.c grammar, leaf first).
# Prints ok:/FAIL: lines and "stat:" lines; exit status = failures.
cat > "$TMP/check_stacks.py" <<'PYEOF'
import ast, re, sys
kind, path = sys.argv[1], sys.argv[2]
args = dict(a.split("=", 1) for a in sys.argv[3:])
what = args.get("what", path)
src_path, shown = args["src"], args["shown"]
want_pid = int(args["pid"]) if "pid" in args else None
fails = 0
def ok(m): print("ok: %s: %s" % (what, m))
def bad(m):
    global fails
    fails += 1
    print("FAIL: %s: %s" % (what, m))

src = open(src_path, encoding="utf-8").read()
tree = ast.parse(src)
L = {}
for i, l in enumerate(src.split("\n"), 1):
    for k in re.findall(r"# L:(\w+)", l):
        L[k] = i
funcs = {n.name: (n.lineno, n.end_lineno) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
# what each frame may be: the function and the lines its frame can show
def in_func(name, line):
    a, b = funcs[name]
    return a <= line <= b   # 3.11+ show the def line before the first instruction

def valid(stack):  # root first [(name, file, line)]
    if not stack:
        return "empty stack"
    if any(f[1] != shown for f in stack):
        return "frame in another file"
    names = [f[0] for f in stack]
    if names[0] != "<module>" or stack[0][2] != L["module"]:
        return "root is not <module> at line %d" % L["module"]
    if len(stack) == 1:
        return "only <module> (hot.py's loop is in main)"
    if names[1] != "main" or not in_func("main", stack[1][2]):
        return "second frame is not main at a line of main"
    if len(stack) == 2:
        return None
    if len(stack) > 3 or names[2] not in ("heavy", "light") or not in_func(names[2], stack[2][2]):
        return "below main: not heavy/light at a line of their own"
    if stack[1][2] != L["main_" + names[2]]:
        return "main at line %d calls %s" % (stack[1][2], names[2])
    return None

FRAME = re.compile(r"^(.*) \((.*):(-?\d+)\)$")
def frames(parts):
    out = []
    for p in parts:
        m = FRAME.match(p)
        if not m:
            return None
        out.append((m.group(1), m.group(2), int(m.group(3))))
    return out

stacks = {}   # root-first tuple -> count, for want_pid
startup = 0
pids, ts = {}, []
for n, line in enumerate(open(path, encoding="utf-8"), 1):
    line = line.rstrip("\n")
    if not line:
        continue
    pid = want_pid
    if kind == "folded":
        st, _, cnt = line.rpartition(" ")
        parts = st.split(";")
        if parts and parts[0].startswith("pid:"):
            pid = int(parts[0][4:]); parts = parts[1:]
        if parts and parts[0].startswith("tid:"):
            parts = parts[1:]
        cnt = int(cnt)
        fr = frames(parts)
    else:
        f = line.split(" ", 5)
        t, spid, tid, cpu, flags, st = f
        pid, cnt = int(spid), 1
        fr = frames(st.split(";")) if st != "-" else []
        if fr is not None:
            fr = fr[::-1]
        if want_pid is None or pid == want_pid:
            ts.append((int(t), int(tid)))
    pids[pid] = pids.get(pid, 0) + cnt
    if want_pid is not None and pid != want_pid:
        continue
    if fr is None:
        bad("line %d does not parse: %s" % (n, line[:200])); continue
    if "startup" in args and not any(f[1] == shown for f in fr):
        startup += cnt   # -a catches a process while its interpreter starts
        continue
    stacks[tuple(fr)] = stacks.get(tuple(fr), 0) + cnt

total = sum(stacks.values())
print("stat: %s: %d samples of pid %s (all pids: %s)%s" % (what, total, want_pid, pids,
      ", and %d during interpreter start-up (no frame of %s)" % (startup, shown) if startup else ""))
minimum = int(args.get("min", "50"))
if total < minimum:
    bad("%d samples, fewer than %d: nothing to judge" % (total, minimum))
torn = [(s, c) for s, c in stacks.items() if valid(list(s))]
# The wall clock reads a running thread without stopping it (a live read,
# like the oracle's bpf-wall row): a stack may tear. Allowed there, up to
# torn_max of the samples (1%: measured 0.08% here); the cpu clock, which
# interrupts the thread, must never tear.
torn_max = float(args.get("torn_max", "0"))
ntorn = sum(c for _, c in torn)
if torn and ntorn <= torn_max * total:
    ok("%d of %d samples torn (%.2f%%, within the %.0f%% a live read is allowed)" % (ntorn, total, 100.0 * ntorn / max(total, 1), 100 * torn_max))
elif torn:
    for s, c in torn[:5]:
        bad("stack hot.py cannot produce (%s), %d samples: %s" % (valid(list(s)), c, ";".join("%s (%s:%d)" % f for f in s)))
else:
    ok("all %d samples are stacks hot.py can produce (%d distinct)" % (total, len(stacks)))
seen = {(f[0], f[2]) for s in stacks for f in s}
for need in [("heavy", L["heavy_body"]), ("light", L["light_body"]),
             ("main", L["main_heavy"]), ("main", L["main_light"]), ("<module>", L["module"])]:
    if need not in seen:
        bad("no frame %s at line %d" % need)
if all(need in seen for need in [("heavy", L["heavy_body"]), ("light", L["light_body"])]):
    ok("heavy:%d, light:%d, main:%d,%d, <module>:%d all seen" % (L["heavy_body"], L["light_body"], L["main_heavy"], L["main_light"], L["module"]))
h = sum(c for s, c in stacks.items() if len(s) > 2 and s[2][0] == "heavy")
l = sum(c for s, c in stacks.items() if len(s) > 2 and s[2][0] == "light")
if h + l:
    share = h / (h + l)
    print("stat: %s: heavy share %.3f (%d heavy, %d light)" % (what, share, h, l))
    lo, hi = 0.45, 0.85
    if lo <= share <= hi:
        ok("heavy's share %.3f in [%.2f, %.2f] (expected 2/3)" % (share, lo, hi))
    else:
        bad("heavy's share %.3f outside [%.2f, %.2f] (expected 2/3)" % (share, lo, hi))
if "cv" in args and kind == "raw":
    tids = {t for _, t in ts}
    if len(tids) != 1:
        bad("samples of %d threads, expected one busy thread" % len(tids))
    tt = sorted(t for t, _ in ts)
    g = [b - a for a, b in zip(tt, tt[1:])]
    if len(g) < 100:
        bad("%d gaps: too few for a CV" % len(g))
    else:
        m = sum(g) / len(g)
        cv = (sum((x - m) ** 2 for x in g) / len(g)) ** 0.5 / m
        lo, hi = map(float, args["cv"].split(","))
        print("stat: %s: %d gaps, mean %.3f ms, CV %.3f" % (what, len(g), m / 1e6, cv))
        if lo <= cv <= hi:
            ok("CV of gaps %.3f in [%g, %g]" % (cv, lo, hi))
        else:
            bad("CV of gaps %.3f outside [%g, %g]" % (cv, lo, hi))
if "share_out" in args and h + l:
    open(args["share_out"], "w").write("%f %d\n" % (h / (h + l), total))
sys.exit(min(fails, 100))
PYEOF

# check KIND FILE ARGS...: run the checker, count its failures.
check() {
	"$CHECKPY" "$TMP/check_stacks.py" "$@"
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

# wait_bounded PID SECONDS: wait for a background bpfpy; kill it (rc 137) if
# it has not ended by then.
wait_bounded() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$1" 2>/dev/null && { echo "    (pid $1 still running after $2 s: killed)"; kill -9 "$1"; }
	wait "$1"
}

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
		bpfpy record -p "$pid" -F 1000 -d 2 "${flags[@]}" -f raw -o "$TMP/cv.$mode.raw" 2>"$TMP/cv.$mode.err"
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
record_target() { # in a subshell; exit status = failures
	local version=$1 label=$2 root=$3 pid rc
	fails=0
	PIDS=()
	trap 'for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done' EXIT
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
	fi
	stop_py "$pid"
	exit $((fails > 100 ? 100 : fails))
}

start=$(date +%s.%N)
mapfile -t tlines < <(targets)
((${#tlines[@]})) || { echo "no target interpreter"; exit 77; }
declare -A ROOTS=()
running=()
for tl in "${tlines[@]}"; do
	IFS=$'\t' read -r version label root py <<<"$tl"
	ROOTS[$label]=$root
	(record_target "$version" "$label" "$root") >"$TMP/log.$label" 2>&1 &
	running+=("$!:$label")
	PIDS+=("$!")
	while (($(jobs -rp | wc -l) >= JOBS)); do wait -n; done
done
for r in "${running[@]}"; do
	wait "${r%%:*}"
	rc=$?
	cat "$TMP/log.${r#*:}"
	fails=$((fails + rc))
	[[ $rc == 0 ]] || grep -q '^FAIL' "$TMP/log.${r#*:}" || bad "${r#*:}: the per-target run failed (rc $rc)"
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
	bpfpy record -p "$pid" --clock wall -F 100 -d 1 >"$TMP/wall2.folded" 2>"$TMP/wall2.err"
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
# The wall clock too: its task iterator must visit the processes added
# after it started, not only the one there was at start.
L3=$(pick debian-3.11 pyenv-3.11 pyenv-3.12)
for clock in cpu wall; do
echo "== -a picks up a process started later ($L3, $clock clock)"
if start_py "$L3" "$PYDIR/three.py"; then
	sentinel=$PY_PID
	mv "$TMP/$L3.out" "$TMP/$L3.sentinel.out"
	"$BPFPY" record -a -v -d 8 --clock "$clock" --threads -o "$TMP/all.$clock.folded" 2>"$TMP/all.$clock.err" &
	rec=$!
	PIDS+=("$rec")
	# its first scan found the sentinel: the host was scanned before sampling started
	if wait_for "$TMP/all.$clock.err" "sampling pid $sentinel " && start_py "$L3" "$PYDIR/hot.py"; then
		late=$PY_PID
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
				torn_max="$([[ $clock == wall ]] && echo 0.01 || echo 0)"
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
if start_py "$LA" "$PYDIR/hot.py" && pa=$PY_PID && mv "$TMP/$LA.out" "$TMP/$LA.a.out" &&
	start_py "$LB" "$PYDIR/hot.py"; then
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
	bpfpy record -q -p "$pid" -d 2 -o "$TMP/fmt.folded" &&
		check folded "$TMP/fmt.folded" what="$L4 folded (for pprof)" src="$PYDIR/hot.py" \
			shown="$shown" pid="$pid" share_out="$TMP/fmt.share" ||
		bad "record -o .folded failed"
	# pprof
	if bpfpy record -p "$pid" -d 2 -o "$TMP/p.pb.gz" 2>"$TMP/p.err"; then
		n=$(summary_samples "$TMP/p.err" "$pid")
		if go tool pprof -top -sample_index=samples "$TMP/p.pb.gz" >"$TMP/p.top" 2>"$TMP/p.top.err"; then
			sed 's/^/    /' "$TMP/p.top"
			"$CHECKPY" - "$TMP/p.top" "$n" "$(cat "$TMP/fmt.share" 2>/dev/null)" <<'PYEOF'
import re, sys
top, n, folded = open(sys.argv[1]).read(), int(sys.argv[2] or -1), sys.argv[3].split()
fails = 0
def ok(m): print("ok: pprof -top: " + m)
def bad(m):
    global fails; fails += 1; print("FAIL: pprof -top: " + m)
flat = {}
for l in top.split("\n"):
    m = re.match(r"^\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+[\d.]+%\s+(.*)$", l)
    if m:
        flat[m.group(3)] = int(m.group(1))
tot = sum(flat.values())
m = re.search(r"Total samples = (\d+)", top)
if tot == n and m and int(m.group(1)) == n:
    ok("flat totals sum to %d = the run's sample count" % n)
else:
    bad("flat totals sum to %d, header %s, the run had %d samples" % (tot, m and m.group(1), n))
# main holds the odd sample taken between its two calls
if not {"heavy", "light"} <= set(k for k, v in flat.items() if v) <= {"heavy", "light", "main"}:
    bad("functions with flat samples: %s, expected heavy, light (and main)" % flat)
elif folded:
    s, fs = flat["heavy"] / tot, float(folded[0])
    if 0.45 <= s <= 0.85 and abs(s - fs) <= 0.15:
        ok("heavy's flat share %.3f in [0.45, 0.85], folded run %.3f (within 0.15)" % (s, fs))
    else:
        bad("heavy's flat share %.3f, folded run %.3f: want [0.45, 0.85] and within 0.15" % (s, fs))
sys.exit(fails)
PYEOF
			fails=$((fails + $?))
			# every location is a frame hot.py has, at a line of its function
			go tool pprof -raw "$TMP/p.pb.gz" 2>/dev/null | awk '/^Locations/ {l = 1; next} /^Mappings/ {l = 0} l' >"$TMP/p.loc"
			"$CHECKPY" - "$TMP/p.loc" "$PYDIR/hot.py" "$shown" <<'PYEOF'
import ast, re, sys
locs, src, shown = open(sys.argv[1]).read().strip().split("\n"), sys.argv[2], sys.argv[3]
tree = ast.parse(open(src, encoding="utf-8").read())
funcs = {n.name: (n.lineno, n.end_lineno) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
bad = []
for l in locs:
    # "  N: 0x0 M=1 NAME FILE:LINE s=START[(SYSTEM NAME)]"; go pprof drops
    # "<...>" from names (C++ templates), so <module> shows as "" (<module>)
    m = re.match(r"^\s*\d+: 0x0 M=\d+ (\S*) (\S+):(\d+) s=(\d+)(?:\((.*)\))?$", l)
    if not m:
        bad.append(l); continue
    name = m.group(1) or m.group(5)
    line = int(m.group(3))
    if m.group(2) != shown:
        bad.append(l)
    elif name == "<module>":
        pass
    elif name not in funcs or not funcs[name][0] <= line <= funcs[name][1] or int(m.group(4)) != funcs[name][0]:
        bad.append(l)
if bad or not locs:
    print("FAIL: pprof -raw: %d locations, not frames of hot.py: %s" % (len(locs), bad[:5]))
    sys.exit(1)
print("ok: pprof -raw: all %d locations are frames of hot.py (function, file, line, start line)" % len(locs))
PYEOF
			fails=$((fails + $?))
		else
			bad "go tool pprof -top cannot read it: $(head -c 300 "$TMP/p.top.err")"
		fi
	else
		bad "record -o .pb.gz failed: $(tail -n 3 "$TMP/p.err")"
	fi
	# speedscope
	if bpfpy record -q -p "$pid" -d 1 -o "$TMP/s.json"; then
		"$CHECKPY" -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["$schema"] == "https://www.speedscope.app/file-format-schema.json", j.get("$schema")
names = {f["name"] for f in j["shared"]["frames"]}
assert {"heavy", "light", "main", "<module>"} <= names, names
n = sum(len(p["samples"]) for p in j["profiles"])
assert n > 0 and all(len(p["samples"]) == len(p["weights"]) for p in j["profiles"])
assert all(i < len(j["shared"]["frames"]) for p in j["profiles"] for s in p["samples"] for i in s)
print("ok: speedscope JSON parses: %d profile(s), %d samples, frames %s" % (len(j["profiles"]), n, sorted(names)))
' "$TMP/s.json" || bad "speedscope JSON is not what speedscope reads"
	else
		bad "record -o .json failed"
	fi
	# svg
	if bpfpy record -q -p "$pid" -d 1 -o "$TMP/f.svg"; then
		if xmllint --noout "$TMP/f.svg" 2>"$TMP/svg.err" && grep -q 'heavy' "$TMP/f.svg" && grep -q 'light' "$TMP/f.svg"; then
			ok "SVG well-formed (xmllint --noout) and names heavy and light"
		else
			bad "SVG: $(head -c 300 "$TMP/svg.err")"
		fi
	else
		bad "record -o .svg failed"
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
many=()
for k in $(seq 1 45); do
	"$ROOT_DIR/scripts/pyrun.sh" "$LM" "$PYDIR/three.py" >/dev/null 2>&1 &
	many+=("$!")
	PIDS+=("$!")
done
sleep 2 # every interpreter up
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

echo "run time $(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)") s"
finish
