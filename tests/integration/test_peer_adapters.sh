#!/bin/bash
# The peer adapters (scripts/oracle_austin.py, oracle_cpython_unwinder.py,
# oracle_tachyon.py) fed their peer's real output, on real programs
# (snippets/realistic/). A peer's row must be the peer's own doing, never
# the adapter's.
#
# What it proves:
#  - Austin: a recorded 3.7.0 run (tests/data/peers/, 194 invalid samples of
#    861) replayed: every ":INVALID:" stack is one failed attempt ("E"),
#    never a stack, and the summary's "errors: 194/861" adds none on top
#    (counted once); the attempts add up to Austin's 861. Live, when sid's
#    Austin and a 3.11-3.13 host interpreter are here: the oracle's row has
#    no INVALID frame among its impossible stacks and its errors equal the
#    markers in the raw output (--tee) plus what the summary holds beyond;
#  - CPython's unwinder (3.15 only): with an unwinder that raises
#    SystemError on every 4th read (the torn-string error seen on 3.15.2),
#    the adapter counts each as "E", goes on to its deadline and exits 0;
#  - CPython's unwinder and Tachyon's CLI on records.py (3.15's class-call
#    shim, "__init__" with line -1): no key of cpython-blocking carries
#    "-1" or a file, the shim is "__init__:?" as in the reference, and the
#    oracle's consistency check says each pair sharing the unwinder agrees
#    (the test fails on DISAGREE); Tachyon's CLI output (--tee) replayed
#    gives as many stacks as its collapsed counts.
# Versions that do not exist here are skipped, each with its reason.
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "skip: needs root (ptrace)"; exit 77; }
[ -x "$BPFPY" ] || { echo "skip: $BPFPY not built"; exit 77; }
use_bpfpy
S=$ROOT_DIR/scripts
REAL=$ROOT_DIR/snippets/realistic
SID=${BPFPY_SID:-/var/cache/bpfpy/sid}

# --- Austin, replayed ------------------------------------------------------
raw=$ROOT_DIR/tests/data/peers/austin-3.7.0-py3.12.1-raytrace.txt
python3 "$S/oracle_austin.py" --replay "$raw" >"$TMP/a.out"
marks=$(grep -c ':INVALID:' "$raw")
lines=$(grep -c '^P' "$raw")
errs=$(grep -c '^E austin: INVALID' "$TMP/a.out")
extra=$(grep -c '^E austin: invalid sample (summary)' "$TMP/a.out")
stacks_invalid=$(grep '^tid=' "$TMP/a.out" | grep -c INVALID)
ends=$(grep -c '^\.' "$TMP/a.out")
((marks == 194)) || bad "the capture holds $marks markers, not 194"
[[ $errs == "$marks" && $extra == 0 && $stacks_invalid == 0 ]] \
	&& ok "austin replay: $marks INVALID stacks -> $errs errors, none as a stack, summary adds $extra" \
	|| bad "austin replay: markers $marks, E $errs, summary E $extra, INVALID in stacks $stacks_invalid"
((ends + errs == lines)) && ok "austin replay: $ends samples + $errs errors = Austin's $lines" \
	|| bad "austin replay: $ends + $errs != $lines"

# --- Austin, live ------------------------------------------------------------
l3=$(targets | awk -F'\t' '$1 ~ /^3\.1[123]\./ && $3 == "/" && $2 ~ /^pyenv/ { print $2; exit }')
if [[ -n $l3 && -x $SID/usr/local/bin/austin ]]; then
	tee=$TMP/austin-tee.txt
	timeout 150 "$BPFPY" oracle -q --python "$l3" --snippet "$REAL/raytrace.py" --mode ptrace \
		--mode "external:python3 '$S/oracle_austin.py' --root '$SID' --austin /usr/local/bin/austin --tee '$tee'" \
		--duration 1 --rate 1 --json "$TMP/al.json" >"$TMP/al.txt" 2>"$TMP/al.err"
	read -r errors imp_invalid < <(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
r = [m for m in d["cases"][0]["modes"] if m["mode"].startswith("ext:")][0]["runs"][0]
print(r["errors"], sum(1 for k in (r["impossible_stacks"] or {}) if "INVALID" in k))' "$TMP/al.json" 2>/dev/null)
	m=$(grep -c ':INVALID:' "$tee" 2>/dev/null)
	s=$(sed -n 's/^# errors: \([0-9]*\)\/.*/\1/p' "$tee" | tail -n 1)
	want=$((m > ${s:-0} ? m : ${s:-0}))
	[[ $errors =~ ^[0-9]+$ && $errors == "$want" && $imp_invalid == 0 ]] \
		&& ok "austin live on $l3: $m INVALID markers, summary $s -> $errors errors, 0 INVALID among impossible" \
		|| bad "austin live on $l3: errors '$errors' (want $want: markers $m, summary $s), INVALID impossible '$imp_invalid'; $(tail -n 2 "$TMP/al.err" | tr '\n' ' ')"
else
	ok "skipped live austin: no sid austin or no 3.11-3.13 pyenv interpreter"
fi

# --- CPython's unwinder: per-sample exceptions ----------------------------------
l15=$(targets | awk -F'\t' '$1 ~ /^3\.1[5-9]\./ { print $2; exit }')
if [[ -z $l15 ]]; then
	ok "skipped the 3.15 peers: no CPython 3.15+ target (scripts/targets.sh)"
	finish
fi
root15=$(targets | awk -F'\t' -v l="$l15" '$2 == l { print $3 }')
py15=$(targets | awk -F'\t' -v l="$l15" '$2 == l { print $4 }')
# An unwinder that fails as 3.15.2 once did, every 4th read: the adapter
# source follows it unchanged, and imports the module this replaced.
{
	cat <<'PY'
import sys, types, _remote_debugging as _real
class _Torn:
    def __init__(self, *a, **k):
        self._u, self._n = _real.RemoteUnwinder(*a, **k), 0
    def __getattr__(self, name):
        return getattr(self._u, name)
    def get_stack_trace(self):
        self._n += 1
        if self._n % 4 == 0:
            raise SystemError("invalid maximum character passed to PyUnicode_New")
        return self._u.get_stack_trace()
_m = types.ModuleType("_remote_debugging")
_m.__dict__.update(_real.__dict__)
_m.RemoteUnwinder = _Torn
sys.modules["_remote_debugging"] = _m
PY
	cat "$S/oracle_cpython_unwinder.py"
} >"$TMP/torn_unwinder.py"
if [[ $root15 == / ]]; then
	"$py15" "$REAL/raytrace.py" & tp=$!
else
	"$S/pyrun.sh" "$l15" "$REAL/raytrace.py" & tp=$!
fi
PIDS+=("$tp")
sleep 1
BPFPY_PID=$tp BPFPY_RATE_HZ=200 BPFPY_DURATION=1.5 timeout 60 "$S/pyrun.sh" --proc "$l15" \
	"$TMP/torn_unwinder.py" --blocking >"$TMP/torn.out" 2>"$TMP/torn.err"
rc=$?
kill "$tp" 2>/dev/null
n_e=$(grep -c '^E SystemError: invalid maximum character' "$TMP/torn.out")
n_ok=$(grep -c '^\. ' "$TMP/torn.out")
# 300 attempts asked; a loaded box may give fewer, never so few.
if ((rc == 0 && n_e > 0 && n_ok > 0 && n_e + n_ok >= 150)); then
	ok "$l15 unwinder raising SystemError every 4th read: $n_e errors, $n_ok samples, exit 0"
else
	bad "$l15 torn unwinder: rc $rc, $n_e errors, $n_ok samples; $(tail -n 3 "$TMP/torn.err" | tr '\n' ' ')"
fi

# --- The same unwinder, directly and through the CLI -----------------------------
ttee=$TMP/tachyon-tee.txt
[[ $root15 != / ]] && ttee=$root15/tmp/bpfpy-test-tachyon-tee.$$.txt
timeout 200 "$BPFPY" oracle -q --python "$l15" --snippet "$REAL/records.py" --mode ptrace \
	--mode cpython-blocking --mode cpython-live \
	--mode "external:'$S/pyrun.sh' --proc '$l15' '$S/oracle_tachyon.py' --blocking --tee '${ttee#"$root15"}'" \
	--peers --duration 1 --rate 1 --json "$TMP/c.json" >"$TMP/c.txt" 2>"$TMP/c.err"
cat "$TMP/c.txt" >&2
python3 - "$TMP/c.json" >"$TMP/c.check" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c = d["cases"][0]
modes = {m["mode"]: m["runs"][0] for m in c["modes"]}
cb = modes.get("cpython-blocking") or {}
keys = list((cb.get("distribution") or {}).keys())
print("keys", len(keys))
print("bad_keys", sum(1 for k in keys if ":-1" in k or "@" in k))
print("shim", sum(1 for k in keys if ";__init__:?;" in k))
print("ref_shim", sum(1 for k in (modes[c["modes"][0]["mode"]]["distribution"] or {}) if ";__init__:?;" in k))
for p in c.get("consistency") or []:
    print("pair", p["a"], p["b"], p["tvd"], p["bound"], p["agree"])
print("rules", c.get("rules"))
PY
cat "$TMP/c.check" >&2
grep -q '^bad_keys 0$' "$TMP/c.check" && ! grep -q '^keys 0$' "$TMP/c.check" \
	&& ok "$l15 cpython-blocking on records.py: no key with '-1' or a file ($(grep '^keys' "$TMP/c.check"))" \
	|| bad "$l15 cpython-blocking keys: $(tr '\n' ' ' <"$TMP/c.check"); $(tail -n 3 "$TMP/c.err" | tr '\n' ' ')"
if grep -q '^ref_shim [1-9]' "$TMP/c.check"; then
	grep -q '^shim [1-9]' "$TMP/c.check" && ok "$l15: the class-call shim is '__init__:?', as in the reference" \
		|| bad "$l15: the reference has '__init__:?' and cpython-blocking not"
fi
npairs=$(grep -c '^pair' "$TMP/c.check")
if ((npairs == 2)) && ! grep -q '^pair .* False$\|^pair .* None$' "$TMP/c.check"; then
	ok "$l15: both pairs sharing the unwinder agree: $(grep '^pair' "$TMP/c.check" | awk '{printf "%s~%s %.3f<=%.3f; ", $2, $3, $4, $5}')"
else
	bad "$l15: consistency: $(grep '^pair' "$TMP/c.check" | tr '\n' ' ') ($npairs pairs)"
fi
grep -q '^consistency: cpython-blocking vs tachyon-blocking' "$TMP/c.txt" \
	&& ok "the table prints the consistency lines" || bad "no consistency line in the table"
# Tachyon's raw output, replayed: as many stacks as its collapsed counts.
if [[ -s $ttee ]]; then
	want=$(grep -v '^#said ' "$ttee" | awk '$NF ~ /^[0-9]+$/ { n += $NF } END { print n + 0 }')
	got=$(python3 "$S/oracle_tachyon.py" --replay "$ttee" | grep -c '^tid=\|^[^SE#.]')
	((want > 0 && got == want)) && ok "tachyon replay: $got stacks = the CLI's collapsed counts" \
		|| bad "tachyon replay: $got stacks, the CLI counted $want"
	python3 "$S/oracle_tachyon.py" --replay "$ttee" | grep -q ':-1' \
		&& bad "tachyon replay: a '-1' line survived" || ok "tachyon replay: no '-1' line"
	rm -f "$ttee"
else
	bad "tachyon --tee wrote nothing at $ttee"
fi
finish
