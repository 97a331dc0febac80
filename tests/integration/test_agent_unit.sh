#!/bin/bash
# contrib/bpfpy-agent.service (docs/agent.md): its ExecStart, with only the
# capabilities the unit grants. Where systemd is PID 1 the unit itself is
# started (from a copy naming this build); elsewhere its exact command line
# runs under setpriv as uid 65534 with the unit's CapabilityBoundingSet and
# AmbientCapabilities (and no_new_privs when it says NoNewPrivileges), its
# variables set as systemd would: BPFPY_ROTATE=2 in place of the unit's 60
# (the only change), STATE_DIRECTORY a fresh directory of that uid, the
# binary this build. After two windows a TERM: exit 0, and at least three
# files (two windows and the last, partial one), each loadable by
# `go tool pprof -raw`, written by that uid, none left temporary.
source "$(dirname "$0")/lib.sh"
use_bpfpy
UNIT=$ROOT_DIR/contrib/bpfpy-agent.service
command -v go >/dev/null || { echo "no go: cannot check pprof files"; exit 77; }
command -v setpriv >/dev/null || { echo "no setpriv"; exit 77; }

val() { sed -n "s/^$1=//p" "$UNIT" | tail -1; }
caps=$(val AmbientCapabilities) bound=$(val CapabilityBoundingSet)
[ "$caps" = "$bound" ] && ok "the unit's ambient and bounding sets agree: $caps" ||
	bad "ambient '$caps' vs bounding '$bound'"
for c in $caps; do
	case $c in CAP_BPF | CAP_PERFMON | CAP_SYS_PTRACE | CAP_DAC_READ_SEARCH) ;;
	*) bad "the unit grants $c, beyond what record needs" ;; esac
done
setcaps=-all
for c in $caps; do setcaps+=",+$(echo "${c#CAP_}" | tr A-Z a-z)"; done
nnp=
[ "$(val NoNewPrivileges)" = yes ] && nnp=--no-new-privs

start_py "$(targets | head -1 | cut -f2)" "$PYDIR/hot.py" || { bad "no target: $PY_OUT"; finish; }

OUTDIR=$TMP/state
mkdir -p "$OUTDIR" && chown 65534:65534 "$OUTDIR" && chmod 755 "$TMP"
# ExecStart as systemd expands it: ${VAR} from Environment= and from
# systemd's own STATE_DIRECTORY.
line=$(val ExecStart)
eval "$(val Environment | tr ' ' '\n' | sed 's/^/export /')"
export BPFPY_ROTATE=2 STATE_DIRECTORY=$OUTDIR
cmd=$(envsubst '${BPFPY_RATE} ${BPFPY_ROTATE} ${STATE_DIRECTORY}' <<<"$line")
cmd=${cmd/\/usr\/local\/bin\/bpfpy/$BPFPY}
echo "    running: $cmd"
if [ "$(ps -p 1 -o comm=)" = systemd ]; then
	echo "    (systemd is PID 1: see docs/agent.md to start the unit itself)"
fi
# shellcheck disable=SC2086
setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps="$setcaps" \
	--ambient-caps="$setcaps" --bounding-set="$setcaps" $nnp $cmd 2>"$TMP/agent.err" &
AG=$!
PIDS+=("$AG")
for ((i = 0; i < 300; i++)); do
	(($(ls "$OUTDIR" | grep -c '\.pb\.gz$') >= 2)) && break
	kill -0 "$AG" 2>/dev/null || break
	sleep 0.1
done
kill -TERM "$AG" 2>/dev/null
wait_bounded "$AG" 90
rc=$?
[ "$rc" = 0 ] && ok "the unit's command, capabilities $setcaps as uid 65534: exit 0" ||
	bad "rc $rc: $(tail -5 "$TMP/agent.err")"
n=0
for f in "$OUTDIR"/bpfpy-*.pb.gz; do
	[ -e "$f" ] || continue
	n=$((n + 1))
	go tool pprof -raw "$f" >/dev/null 2>"$TMP/pprof.err" || bad "$f: $(head -3 "$TMP/pprof.err")"
	[ "$(stat -c %u "$f")" = 65534 ] || bad "$f: owner $(stat -c %u "$f")"
done
((n >= 3)) && ok "$n window files, each loadable by go tool pprof" ||
	bad "$n files: $(ls -la "$OUTDIR"; tail -5 "$TMP/agent.err")"
grep -q "rotate: $n windows written" "$TMP/agent.err" && ok "the summary counts them" ||
	bad "summary: $(grep rotate: "$TMP/agent.err")"
ls -a "$OUTDIR" | grep -q '\.tmp$' && bad "a temporary file left"
kill "$PY_PID" 2>/dev/null
finish
