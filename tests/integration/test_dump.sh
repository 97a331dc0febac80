#!/bin/bash
# bpfpy dump on every target interpreter of scripts/targets.sh.
#
# Per target, three programs of tests/integration/py/ are started:
#   shapes.py  one thread per stack shape: nested call chain, generator,
#              method, non-ASCII function name, code compiled at run time as
#              "made_up.py", coroutine under asyncio (main thread), reporter
#   deep.py    recursion 1000 deep
#   three.py   a 3-frame process
# and each is dumped four ways: text and --json (parsed with python3's json),
# blocking (default) and --nonblocking. Every frame of our own code must
# match exactly: name (qualname Class.method on 3.11+, co_name before), file,
# line. The lines are computed from the program source: the "# L:key" marker
# comments, the innermost def around a marker (via ast) gives the name. The
# threading.py frames at the bottom of each thread are checked exactly too
# (names, and lines found in that interpreter's own threading.py); the
# asyncio frames between the coroutine and main() by their file only.
# Thread ids: the program prints every thread's native id and pthread id;
# the dump must show the same set, and the same as /proc/PID/task.
# deep.py: all 1003 frames shown with the default depth; with --max-depth 100
# exactly 100 leaf-side frames and the truncation reported.
# After every blocking dump no thread of the target is in state 't' and none
# has a tracer. The "Stopped the target for X us" of the 3-frame and the
# 1000-frame process is printed in the log per version.
#
# Targets run in parallel, JOBS at a time (default 3).
. "$(dirname "$0")/lib.sh"

PYDIR=$ROOT_DIR/tests/integration/py
JOBS=${JOBS:-3}
CHECKPY=/usr/bin/python3
[ -x "$CHECKPY" ] || CHECKPY=$(command -v python3)
use_bpfpy # one build for the whole run, even if the tree is rebuilt meanwhile

# The checker: parses a dump (text or JSON) and compares it with what the
# program's source says. Prints ok:/FAIL: lines; exit status = failures.
cat > "$TMP/check_dump.py" <<'PYEOF'
import ast, json, os, re, sys

def die(msg):
    print("FAIL: checker: " + msg)
    sys.exit(1)

args = dict(a.split("=", 1) for a in sys.argv[1:])
prog, src_path, shown_path = args["prog"], args["src"], args["shown"]
minor = int(args["version"].split(".")[1])
root = args["root"]
fmt, mode = args["fmt"], args["mode"]
what = "%s %s %s %s" % (args["label"], prog, fmt, mode)
fails = 0

def ok(m): print("ok: %s: %s" % (what, m))
def bad(m):
    global fails
    fails += 1
    print("FAIL: %s: %s" % (what, m))

# ---- expectations from the source
src = open(src_path, encoding="utf-8").read()
lines = src.split("\n")
tree = ast.parse(src)

def markers(tag):
    m = {}
    for i, l in enumerate(lines, 1):
        for k in re.findall(r"# %s:(\w+)" % tag, l):
            m[k] = i
    return m

def func_at(tree, line):
    """qualname and name of the innermost function around line."""
    best = ("<module>", "<module>")
    def walk(node, quals):
        nonlocal best
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if ch.lineno <= line <= ch.end_lineno:
                    best = (".".join(quals + [ch.name]), ch.name)
                    walk(ch, quals + [ch.name, "<locals>"])
            elif isinstance(ch, ast.ClassDef):
                if ch.lineno <= line <= ch.end_lineno:
                    walk(ch, quals + [ch.name])
            else:
                walk(ch, quals)
    walk(tree, [])
    return best

def fname(q):
    return q[0] if minor >= 11 else q[1]

L = markers("L")
def ours(key):
    return (fname(func_at(tree, L[key])), shown_path, L[key])

def made_up(key):
    # MADE_UP_SRC = """\ : its line 1 is the line after the opening quotes
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "MADE_UP_SRC":
            start, text = node.value.lineno, node.value.value
            break
    else:
        die("no MADE_UP_SRC in " + src_path)
    rel = markers("M")[key] - start
    if text.split("\n")[rel - 1].find("# M:" + key) < 0:
        die("made-up line arithmetic is off for " + key)
    return (fname(func_at(ast.parse(text), rel)), "made_up.py", rel)

def threading_frames():
    """run, _bootstrap_inner, _bootstrap of the target's own threading.py,
    each at the line of its call of the next one."""
    path = None
    for f in th_files:
        path = f
    if path is None:
        return None
    tl = open(os.path.join(root, path.lstrip("/")), encoding="utf-8").read().split("\n")
    def call_line(meth, pattern):
        start = [i for i, l in enumerate(tl, 1) if re.match(r"    def %s\(self\):" % meth, l)]
        start = [s for s in start if any(re.match(r"class Thread\b", tl[j - 1]) for j in range(1, s))]
        if not start:
            die("no Thread.%s in %s" % (meth, path))
        s = start[0]  # Thread comes first in threading.py
        end = next((i for i in range(s + 1, len(tl) + 1) if re.match(r"    def |\S", tl[i - 1])), len(tl))
        hits = [i for i in range(s + 1, end) if re.search(pattern, tl[i - 1])]
        if len(hits) != 1:
            die("Thread.%s in %s: %d lines match %s" % (meth, path, len(hits), pattern))
        q = ("Thread." + meth, meth)
        return (fname(q), path, hits[0])
    return [call_line("run", r"self\._target\("),
            call_line("_bootstrap_inner", r"self\.run\b"),
            call_line("_bootstrap", r"self\._bootstrap_inner\(\)")]

# ---- the dump
out = open(args["out"], encoding="utf-8").read()
threads = []
if fmt == "json":
    try:
        j = json.loads(out)
    except ValueError as e:
        die("JSON does not parse: %s" % e)
    if j.get("blocking") != (mode == "blocking"):
        bad("JSON blocking=%r in %s mode" % (j.get("blocking"), mode))
    if (mode == "blocking") != isinstance(j.get("stopped_us"), (int, float)):
        bad("JSON stopped_us=%r in %s mode" % (j.get("stopped_us"), mode))
    if j.get("pid") != int(args["pid"]):
        bad("JSON pid %r, expected %s" % (j.get("pid"), args["pid"]))
    if j.get("threads_total") != len(j.get("threads", [])):
        bad("threads_total %r but %d threads listed" % (j.get("threads_total"), len(j.get("threads", []))))
    for t in j["threads"]:
        threads.append(dict(tid=t["tid"], pthread=t["pthread_id"], gil=t["gil"],
                            truncated=t["truncated"], error=t["error"],
                            frames=[(f["name"], f["file"], f["line"]) for f in t["frames"]]))
else:
    cur = None
    for l in out.split("\n"):
        m = re.match(r"Thread (?:(\d+)|pthread 0x([0-9a-f]+))(?: \(GIL (\w+)\))?:$", l)
        if m:
            cur = dict(tid=int(m.group(1)) if m.group(1) else None,
                       pthread=int(m.group(2), 16) if m.group(2) else None,
                       gil=m.group(3) or "unknown", truncated=False, error=None, frames=[])
            threads.append(cur)
            continue
        if cur is None or not l.startswith("    "):
            continue
        m = re.match(r"    <stack not read: (.*)>$", l)
        if m:
            cur["error"] = m.group(1); continue
        m = re.match(r"    <truncated at (\d+) frames", l)
        if m:
            cur["truncated"] = int(m.group(1)); continue
        if l == "    <no Python frames>":
            continue
        m = re.match(r"    (.+) \((.+):(-?\d+)\)$", l)
        if m:
            cur["frames"].append((m.group(1), m.group(2), int(m.group(3))))
        else:
            m = re.match(r"    (.+) \((.+)\)$", l)
            cur["frames"].append((m.group(1), m.group(2), -1) if m else (l.strip(), "?", -1))
    if mode == "blocking":
        m = re.search(r"^Stopped the target for ([0-9.]+) us\.$", out, re.M)
        if not m:
            bad("no 'Stopped the target for X us' line")
        else:
            print("time: %s: %s frames: stopped the target for %s us" % (args["label"], prog, m.group(1)))
    elif "Stopped the target" in out:
        bad("--nonblocking reports a stop")

th_files = sorted({f[1] for t in threads for f in t["frames"] if f[1].endswith("/threading.py")})
if len(th_files) > 1:
    bad("frames from several threading.py: %s" % th_files)

def fmtf(fr):
    return "%s (%s:%d)" % fr

def expect(t, exp, who):
    """exp: list of frames, leaf first; None entries are not compared."""
    got = t["frames"]
    if t["error"]:
        bad("%s: stack not read: %s" % (who, t["error"])); return
    if len(got) != len(exp):
        bad("%s: %d frames, expected %d:\n      got %s\n      exp %s" % (
            who, len(got), len(exp), "; ".join(map(fmtf, got)),
            "; ".join(fmtf(e) if e else "*" for e in exp)))
        return
    diff = [(i, g, e) for i, (g, e) in enumerate(zip(got, exp)) if e is not None and tuple(g) != e]
    if diff:
        for i, g, e in diff[:5]:
            bad("%s: frame %d is %s, expected %s" % (who, i, fmtf(g), fmtf(e)))
    else:
        ok("%s: %d frames as expected (leaf %s)" % (who, len(got), fmtf(got[0]) if got else "-"))

# ---- thread identities
ids = {}
for kv in args["ready"].split()[1:]:
    k, v = kv.split("=")
    nid, ident = v.split(":")
    ids[k] = (int(nid), int(ident))
tasks = sorted(int(x) for x in args["tasks"].split(","))
if len(threads) != len(tasks):
    bad("%d threads in the dump, %d in /proc/%s/task" % (len(threads), len(tasks), args["pid"]))
by_key = {}
for t in threads:
    key = None
    for k, (nid, ident) in ids.items():
        if t["tid"] is not None and t["tid"] == nid:
            key = k
        elif t["tid"] is None and t["pthread"] == ident:
            key = k
    if t["tid"] is not None and t["pthread"] is not None and key and t["pthread"] != ids[key][1]:
        bad("thread %s: pthread id %#x, the program says %#x" % (key, t["pthread"], ids[key][1]))
    if key is None:
        bad("thread tid=%s pthread=%s is none of the program's threads %s" % (t["tid"], t["pthread"], args["ready"]))
    elif key in by_key:
        bad("thread %s shown twice" % key)
    else:
        by_key[key] = t
if set(by_key) == set(ids) and len(ids) == len(tasks):
    ok("threads %s all shown with the program's own ids" % ",".join(sorted(ids)))
elif set(by_key) != set(ids):
    bad("threads shown %s, program has %s" % (sorted(by_key), sorted(ids)))
if mode == "blocking" or minor >= 11:
    # the OS tid is known: stored in 3.11+, from the fs base while stopped before
    missing = [k for k, t in by_key.items() if t["tid"] is None]
    if missing:
        bad("no OS tid for %s" % missing)
    if sorted(ids[k][0] for k in ids) != tasks:
        bad("native ids %s differ from /proc task ids %s" % (sorted(ids[k][0] for k in ids), tasks))
held = [k for k, t in by_key.items() if t["gil"] == "held"]
if held:
    bad("GIL shown held by %s while every thread sleeps" % held)

# ---- stacks
park = ours("park")
if prog == "shapes":
    thr = threading_frames()
    if thr is None:
        bad("no threading.py frame anywhere")
        thr = [None, None, None]
    want = {
        "chain": [park, ours("chain_c"), ours("chain_b"), ours("chain_a")] + thr,
        "gen": [park, ours("gen"), ours("consume")] + thr,
        "method": [park, ours("method"), ours("run_method")] + thr,
        "nonascii": [park, ours("nonascii")] + thr,
        "compiled": [park, made_up("made_up_func"), made_up("made_up_module"),
                     ours("run_compiled")] + thr,
        "reporter": [park, ours("reporter")] + thr,
    }
    for k, exp in want.items():
        if k in by_key:
            expect(by_key[k], exp, "thread " + k)
    if "method" in by_key and minor >= 11 and "Worker.method" not in [f[0] for f in by_key["method"]["frames"]]:
        bad("no qualname Worker.method on 3.%d" % minor)
    t = by_key.get("main")
    if t:
        fr = t["frames"]
        n_async = len(fr) - 5
        mid = fr[3:-2] if n_async > 0 else []
        if n_async <= 0 or not all("/asyncio/" in f[1] and f[2] > 0 for f in mid):
            bad("main: frames between coro_outer and main() are not all asyncio's: %s" % "; ".join(map(fmtf, mid or fr)))
            n_async = max(n_async, 0)
        expect(t, [park, ours("coro_inner"), ours("coro_outer")] + [None] * n_async
               + [ours("main"), ours("module")], "thread main (asyncio)")
elif prog == "three":
    t = by_key.get("main")
    if t:
        expect(t, [park, ours("outer"), ours("module")], "3-frame stack")
elif prog == "deep":
    depth = int(re.search(r"^DEPTH = (\d+)$", src, re.M).group(1))
    full = [park, ours("recurse_leaf")] + [ours("recurse")] * depth + [ours("module")]
    t = by_key.get("main")
    limit = int(args.get("maxdepth", "0"))
    if t and not limit:
        expect(t, full, "recursion %d deep" % depth)
        if t["truncated"]:
            bad("reported truncated with every frame shown")
    elif t:
        expect(t, full[:limit], "recursion %d deep, --max-depth %d" % (depth, limit))
        if fmt == "json" and t["truncated"] is not True:
            bad("--max-depth %d: JSON truncated=%r" % (limit, t["truncated"]))
        elif fmt == "text" and t["truncated"] != limit:
            bad("--max-depth %d: truncation line says %r" % (limit, t["truncated"]))
        else:
            ok("--max-depth %d: truncation reported" % limit)
sys.exit(min(fails, 100))
PYEOF

# not_stopped PID WHAT: no thread of PID is stopped or traced.
not_stopped() {
	local pid=$1 what=$2 t st tr bad_threads=()
	for t in /proc/"$pid"/task/*; do
		st=$(sed 's/^.*) //' "$t/stat" 2>/dev/null | cut -d' ' -f1)
		tr=$(awk '/^TracerPid:/ {print $2}' "$t/status" 2>/dev/null)
		[[ $st == t || $st == T || ${tr:-0} != 0 ]] && bad_threads+=("${t##*/}:state=$st,tracer=$tr")
	done
	if ((${#bad_threads[@]})); then
		bad "$what: target left stopped or traced: ${bad_threads[*]}"
	else
		ok "$what: every thread of $pid running, no tracer"
	fi
}

# dump_check LABEL VERSION ROOT PROG PID READY [MAXDEPTH]: the four dumps.
dump_check() {
	local label=$1 version=$2 root=$3 prog=$4 pid=$5 ready=$6 maxdepth=${7:-0}
	local shown=$PYDIR/$prog.py fmt mode flags out rc tasks
	[[ $root != / ]] && shown=/tmp/bpfpy/$prog.py
	for fmt in text json; do
		for mode in blocking nonblocking; do
			flags=()
			[[ $fmt == json ]] && flags+=(--json)
			[[ $mode == nonblocking ]] && flags+=(--nonblocking)
			((maxdepth)) && flags+=(--max-depth "$maxdepth")
			out=$TMP/$label.$prog.$fmt.$mode.$maxdepth
			tasks=$(ls /proc/"$pid"/task | paste -sd,)
			"$BPFPY" dump -p "$pid" "${flags[@]}" >"$out" 2>"$out.err"
			rc=$?
			if [[ $rc != 0 ]]; then
				bad "$label $prog: dump ${flags[*]} exited $rc: $(head -c 500 "$out.err")"
				continue
			fi
			[[ $mode == blocking ]] && not_stopped "$pid" "$label $prog dump ${flags[*]}"
			"$CHECKPY" "$TMP/check_dump.py" label="$label" version="$version" root="$root" \
				prog="$prog" src="$PYDIR/$prog.py" shown="$shown" out="$out" fmt="$fmt" \
				mode="$mode" pid="$pid" ready="$ready" tasks="$tasks" maxdepth="$maxdepth"
			rc=$?
			fails=$((fails + rc))
		done
	done
}

# stop_times LABEL PROG PID: five more blocking dumps; the stopped time,
# min and median, for the log (the machine may be loaded: min is the cost).
stop_times() {
	local i us=()
	for i in 1 2 3 4 5; do
		us+=("$("$BPFPY" dump -p "$3" 2>/dev/null | sed -n 's/^Stopped the target for \([0-9.]*\) us\.$/\1/p')")
	done
	echo "time: $1: $2: stopped us min/median of 5: $(printf '%s\n' "${us[@]}" | sort -g | awk '{v[NR]=$1} END {print v[1] "/" v[int((NR+1)/2)]}')"
}

# One target: start the three programs, dump them, kill them. Runs in a
# subshell; its exit status is its number of failures.
test_target() {
	local version=$1 label=$2 root=$3 prog pid ready
	fails=0
	PIDS=()
	trap 'for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done' EXIT
	echo "== $label ($version)"
	for prog in three deep shapes; do
		if ! start_py "$label" "$PYDIR/$prog.py"; then
			bad "$label: $prog.py did not start"
			continue
		fi
		pid=$PY_PID
		ready=$(head -n 1 "$TMP/$label.out")
		mv "$TMP/$label.out" "$TMP/$label.$prog.out"
		dump_check "$label" "$version" "$root" "$prog" "$pid" "$ready"
		[[ $prog == deep ]] && dump_check "$label" "$version" "$root" "$prog" "$pid" "$ready" 100
		[[ $prog == three || $prog == deep ]] && stop_times "$label" "$prog" "$pid"
		kill -9 "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	exit $((fails > 100 ? 100 : fails))
}

start=$(date +%s.%N)
mapfile -t tlines < <(targets)
((${#tlines[@]})) || { echo "no target interpreter"; exit 77; }
running=()
for tl in "${tlines[@]}"; do
	IFS=$'\t' read -r version label root py <<<"$tl"
	(test_target "$version" "$label" "$root") >"$TMP/log.$label" 2>&1 &
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
echo
echo "== blocking dump, time the target was stopped (us, min/median of 5), per version"
for tl in "${tlines[@]}"; do
	IFS=$'\t' read -r version label root py <<<"$tl"
	printf '  %-12s %-8s 3 frames: %20s us   1003 frames: %20s us\n' "$label" "$version" \
		"$(grep -h "^time: $label: three:" "$TMP/log.$label" | awk '{print $NF}')" \
		"$(grep -h "^time: $label: deep:" "$TMP/log.$label" | awk '{print $NF}')"
done
echo "run time $(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)") s"
finish
