#!/bin/bash
# The host agent (issue 31, docs/agent.md): `record -a --rotate` over
# processes of two interpreters that start and exit all the time, one
# long-lived one in a cgroup shaped like docker's (docker-ID.scope).
#
# Run A (--rotate 2, 10 s, SIGHUP once the first window is written): it survives the HUP; each window
# is one file loadable by `go tool pprof -raw`; the windows' sample counts
# add up to what the run counted (the summary's "rotate:" line, which the
# per-window "wrote" lines must also add up to); the windows follow one
# another without gap or overlap (time + duration = the next one's time,
# within 50 ms); samples carry host, pid, comm, cgroup, python_version, and
# the docker-shaped process's its container id.
# Run B (--rotate 1 --keep 2 -f collapsed, at the same time): two windows
# (four files) stay, and the prune touched nothing else of DIR: not another
# host's file, not a symlink with our own pattern, nor its target.
source "$(dirname "$0")/lib.sh"
use_bpfpy
command -v go >/dev/null || { echo "no go: cannot check pprof files"; exit 77; }

mapfile -t labels < <(targets | awk -F'\t' 'NR == 1 || $3 != "/" { print $2 }' | sed -n '1p;$p')
((${#labels[@]} == 2)) || { echo "need two interpreters"; exit 77; }
cat >"$TMP/churn.py" <<'PY'
import sys, time
print("ready", flush=True)
end = time.monotonic() + float(sys.argv[1] if len(sys.argv) > 1 else 1.5)
def work(n):
    return sum(i * i for i in range(n))
while time.monotonic() < end:
    work(3000)
PY

# The long-lived target, moved into a docker-shaped cgroup (v2).
ID=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
CG=
for base in /sys/fs/cgroup/unified /sys/fs/cgroup; do
	[ -e "$base/cgroup.procs" ] && grep -q "^cgroup2 $base " /proc/mounts && CG=$base && break
done
start_py "${labels[0]}" "$TMP/churn.py" 60 || { bad "long-lived target: $PY_OUT"; finish; }
LONG=$PY_PID
if [ -n "$CG" ]; then
	CGDIR=$CG/bpfpy-agent-test.$$/docker-$ID.scope
	mkdir -p "$CGDIR" && echo "$LONG" >"$CGDIR/cgroup.procs" || CGDIR=
fi
cleanup_cg() { [ -n "${CGDIR:-}" ] && { echo "$LONG" >"$CG/cgroup.procs"; rmdir "$CGDIR" "${CGDIR%/*}"; } 2>/dev/null; }

# The churn: a process of each interpreter in turn, every 0.3 s, 1.5 s each.
(
	k=0
	while :; do
		"$ROOT_DIR/scripts/pyrun.sh" "${labels[k % 2]}" "$TMP/churn.py" >/dev/null 2>&1 &
		echo $! >>"$TMP/churn.pids"
		k=$((k + 1))
		sleep 0.3
	done
) &
CHURN=$!
PIDS+=("$CHURN")

A=$TMP/a B=$TMP/b
mkdir -p "$A" "$B"
HOST=$(hostname | tr -c 'A-Za-z0-9._\n-' '_' | head -c 64)
echo keep >"$B/bpfpy-20000101T000000Z-otherhost.pb.gz"
echo victim >"$TMP/victim"
ln -s "$TMP/victim" "$B/bpfpy-20000101T000000Z-$HOST.pb.gz"
echo notes >"$B/notes.txt"

timeout 120 "$BPFPY" record -a --rotate 2 -F 97 -d 10 -o "$A/" 2>"$TMP/a.err" &
RA=$!
timeout 120 "$BPFPY" record -a --rotate 1 --keep 2 -F 97 -d 6 -f collapsed -o "$B" \
	2>"$TMP/b.err" &
RB=$!
PIDS+=("$RA" "$RB")
# SIGHUP once sampling runs (before, it ends bpfpy like any signal): when
# the first window is written.
for ((i = 0; i < 300; i++)); do
	compgen -G "$A/bpfpy-*.pb.gz" >/dev/null && break
	kill -0 "$RA" 2>/dev/null || break
	sleep 0.1
done
kill -HUP "$RA"
wait_bounded "$RA" 110
rca=$?
wait_bounded "$RB" 110
rcb=$?
kill "$CHURN" 2>/dev/null
wait "$CHURN" 2>/dev/null
while read -r p; do kill -9 "$p" 2>/dev/null; done <"$TMP/churn.pids"
cleanup_cg

[ "$rca" = 0 ] && ok "run A exits 0 after a SIGHUP" || bad "run A: rc $rca: $(tail -5 "$TMP/a.err")"
grep -q "SIGHUP: writing to" "$TMP/a.err" && ok "run A noted the SIGHUP" ||
	bad "run A: no SIGHUP note: $(head -c 600 "$TMP/a.err")"
[ "$rcb" = 0 ] && ok "run B exits 0" || bad "run B: rc $rcb: $(tail -5 "$TMP/b.err")"

# Run A: files, counts, times, labels.
"$CHECKPY" - "$A" "$TMP/a.err" "$ID" "${CGDIR:+$LONG}" <<'PY'
import glob, gzip, re, subprocess, sys
d, err, cid, long_pid = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3], sys.argv[4]
fails = 0
def bad(m):
    global fails
    fails += 1
    print("FAIL: " + m)
files = sorted(glob.glob(d + "/bpfpy-*.pb.gz"))
m = re.search(r"rotate: (\d+) windows written \((\d+) samples, (\d+) without frames; the run counted (\d+)\)", err)
if not m:
    bad("no rotate: line: " + err[-800:])
    sys.exit(1)
windows, written, empty, counted = map(int, m.groups())
wrote = [int(x) for x in re.findall(r"wrote \S+\.pb\.gz \((\d+) samples", err)]
# 10 s in windows of 2 s make 5 or 6; a loaded machine may make the loop
# late, never the count of windows wrong: at least 3, one file each.
if len(files) != windows or windows < 3:
    bad("%d files, %d windows written (10 s in windows of 2 s)" % (len(files), windows))
else:
    print("ok: %d window files" % len(files))
if sum(wrote) != written or written + empty != counted:
    bad("wrote lines %d, rotate line %d + %d, run %d" % (sum(wrote), written, empty, counted))
def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i
def window(f):
    """time_nanos (field 9) and duration_nanos (field 10) of the Profile."""
    b, i, out = gzip.open(f).read(), 0, {}
    while i < len(b):
        key, i = varint(b, i)
        field, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
            out[field] = v
        elif wt == 2:
            n, i = varint(b, i)
            i += n
        elif wt == 1:
            i += 8
        elif wt == 5:
            i += 4
        else:
            raise ValueError("wire type %d" % wt)
    return out.get(9), out.get(10)
total, times, labels, cont = 0, [], set(), set()
for f in files:
    r = subprocess.run(["go", "tool", "pprof", "-raw", f], capture_output=True, text=True)
    if r.returncode:
        bad("%s: go tool pprof -raw: %s" % (f, r.stderr[:300]))
        continue
    n, block = 0, ""
    # A sample is its "COUNT VALUE: LOCATIONS" line and the label lines after it.
    for line in r.stdout.split("Locations")[0].splitlines() + ["  0  0: end"]:
        s = re.match(r"^\s+(\d+)\s+\d+: ", line)
        if s:
            labels.update(re.findall(r"(\w+):\[", block))
            if long_pid and "pid:[%s]" % long_pid in block:
                cont.add("container:[%s]" % cid in block)
            n += int(s.group(1))
            block = ""
        else:
            block += " " + line
    total += n
    times.append(window(f))
if total != written:
    bad("the files hold %d samples, the run wrote %d" % (total, written))
else:
    print("ok: the %d files' samples add up to the run's %d (+%d without frames)" % (len(files), written, empty))
# Contiguity: time_nanos + duration_nanos = the next one's time_nanos.
gaps = [(t1 - (t0 + d0)) / 1e9 for (t0, d0), (t1, _) in zip(times, times[1:]) if None not in (t0, d0, t1)]
if len(gaps) != len(times) - 1:
    bad("a file without time_nanos or duration_nanos: %s" % times)
elif gaps and max(abs(g) for g in gaps) > 0.05:
    bad("windows not contiguous: gaps %s s" % gaps)
elif gaps:
    print("ok: windows contiguous (largest gap %.6f s)" % max(abs(g) for g in gaps))
want = {"host", "pid", "tid", "comm", "cgroup", "python_version", "thread"}
if want - labels:
    bad("labels missing: %s (have %s)" % (sorted(want - labels), sorted(labels)))
else:
    print("ok: labels " + ", ".join(sorted(want)))
if long_pid:
    if cont != {True}:
        bad("pid %s in docker-%s.scope: container label %s" % (long_pid, cid[:12], cont))
    else:
        print("ok: the docker-shaped cgroup's process has its container label")
sys.exit(1 if fails else 0)
PY
[ $? = 0 ] || fails=$((fails + 1))

# Run B: --keep 2, and nothing else of DIR touched.
n=$(find "$B" -type f -printf '%f\n' | grep -c "^bpfpy-[0-9]\{8\}T[0-9]\{6\}Z-$HOST\.\(pb\.gz\|folded\)$")
[ "$n" = 4 ] && ok "--keep 2: 2 windows (4 files) stay" || bad "--keep 2: $n files: $(ls "$B")"
[ -e "$B/bpfpy-20000101T000000Z-otherhost.pb.gz" ] && [ -e "$B/notes.txt" ] &&
	[ -L "$B/bpfpy-20000101T000000Z-$HOST.pb.gz" ] && [ "$(cat "$TMP/victim")" = victim ] &&
	ok "prune left another host's file, a symlink of our pattern and its target alone" ||
	bad "prune touched what is not its own: $(ls -la "$B")"
grep -q "old files removed" "$TMP/b.err" || bad "run B: no rotate: line"
ls -a "$A" "$B" | grep -q '\.tmp$' && bad "temporary files left" || ok "no temporary file left"
kill "$LONG" 2>/dev/null
finish
