#!/bin/bash
# Hostile files (issue 11 rows 1-3): an unprivileged user (nobody) makes
# bpfpy read files it crafted, while a real CPython target runs beside it.
#   H1  maps 4 KiB of a copy of libpython3.12.so.1.0 whose build-id note has
#       n_descsz = 0x80000000 in a sparse 2 GiB section (was: SIGSEGV)
#   H2  the same with a valid note in a section claiming 2 GiB (was: 2.1 GB
#       of RSS and 28 s of reading zeros)
#   H3  runs a copy of python, deletes it and mkfifos the same name (was:
#       dump hangs forever in open())
#   H4  the same in a chroot (the sid tree) whose exe name becomes a symlink
#       to /etc/shadow (was: root opens the host's /etc/shadow)
#   H5  ... and a FIFO (was: hang)
# For each, `dump -p` must end within 30 s with a documented exit code, a
# message naming the pid when it fails, under 100 MB of RSS, and strace
# must show no open of /etc/shadow or of the FIFO. Then `record -a -d 2`
# with all of them present must exit 0, write its profile and sample the
# real target. H1/H2 need pyenv 3.12 (a shared libpython: a static python's
# own executable answers first and the crafted file is never read), run as
# nobody in a mount namespace where /root is traversable; H4/H5 need the
# sid chroot. Rows for SECURITY.md go to build/hardening/hostile_files.tsv.
. "$(dirname "$0")/lib.sh"

PYDIR=$ROOT_DIR/tests/integration/py
RSS_MAX_KB=$((100 * 1024))
SID=/var/cache/bpfpy/sid
rows_file hostile_files
use_bpfpy
for t in strace setpriv unshare /usr/bin/time; do
	command -v "$t" > /dev/null || { echo "skip: $t missing"; exit 77; }
done
row() { printf 'hostile files\t%s\t%s\n' "$1" "$2" >> "$ROWS"; }

chmod 755 "$TMP"
RUN=$TMP/run # the attackers' own directory, for their ready files
mkdir -p "$RUN" && chown nobody "$RUN"
cp "$PYDIR/map_file.py" "$TMP/map_file.py" && chmod 644 "$TMP/map_file.py"
NOBODY="setpriv --reuid=nobody --regid=nogroup --clear-groups"

# wait_ready FILE: the pid the hostile process wrote there (its own fresh
# file), within 20 s.
wait_ready() {
	for _ in $(seq 1 200); do
		[ -s "$1" ] && { awk '/^ready/ {print $2}' "$1"; return 0; }
		sleep 0.1
	done
	return 1
}

# The real target, sampled by record -a beside the hostile ones.
real=$(targets | awk -F'\t' '$2 == "debian-3.11" {print $2; exit}')
[ -n "$real" ] || real=$(targets | awk -F'\t' 'NR == 1 {print $2}')
start_py "$real" "$PYDIR/hot.py" || finish
real_pid=$PY_PID

declare -A HPID WHAT VICTIM
# H1, H2: crafted libpython copies, mapped by a pyenv 3.12 run as nobody.
py312=$(targets | awk -F'\t' '$1 ~ /^3\.12\./ && $4 ~ /pyenv/ {print $4; exit}')
lib312=${py312%/bin/*}/lib/libpython3.12.so.1.0
if [ -n "$py312" ] && [ -f "$lib312" ]; then
	pyenv_root=${py312%/versions/*}
	start_nobody_pyenv() { # name file
		mkdir -p "$TMP/$1.pyenv"
		unshare -m --propagation private bash -c '
			mount --bind "$1" "$2" && mount -t tmpfs -o mode=755 tmpfs /root &&
			mkdir -p "$1" && mount --bind "$2" "$1" && shift 2 && exec "$@"' \
			sh "$pyenv_root" "$TMP/$1.pyenv" $NOBODY "$py312" "$TMP/map_file.py" \
			"$2" "$RUN/$1.ready" > "$TMP/$1.log" 2>&1 &
		PIDS+=($!)
		HPID[$1]=$(wait_ready "$RUN/$1.ready") || { bad "$1 did not start: $(cat "$TMP/$1.log")"; HPID[$1]=; }
	}
	for m in note-overflow huge-note; do
		mkdir -p "$TMP/$m" && chmod 755 "$TMP/$m"
		python3 "$PYDIR/craft_elf.py" "$m" "$lib312" "$TMP/$m/libpython3.12.so.1.0"
	done
	start_nobody_pyenv H1 "$TMP/note-overflow/libpython3.12.so.1.0"
	WHAT[H1]="a mapped libpython3.12.so.1.0 whose build-id n_descsz is 0x80000000 (sparse 2 GiB section)"
	start_nobody_pyenv H2 "$TMP/huge-note/libpython3.12.so.1.0"
	WHAT[H2]="a 4 KiB mapping of a 2 GiB sparse libpython3.12.so.1.0 whose note section claims 2 GiB"
else
	echo "note: no pyenv 3.12 with libpython: rows 1 and 2 (H1, H2) skipped"
fi

# H3: a python copy of nobody's own, deleted and replaced by a FIFO.
mkdir -p "$TMP/u" && cp /usr/bin/python3.11 "$TMP/u/python3.11" && chown -R nobody "$TMP/u"
$NOBODY "$TMP/u/python3.11" "$TMP/map_file.py" "$TMP/map_file.py" "$RUN/H3.ready" \
	fifo "$TMP/u/python3.11" > "$TMP/H3.log" 2>&1 &
PIDS+=($!)
HPID[H3]=$(wait_ready "$RUN/H3.ready") || { bad "H3 did not start: $(cat "$TMP/H3.log")"; HPID[H3]=; }
WHAT[H3]="a user's python copy deleted and replaced by a FIFO of the same name"
VICTIM[H3]=$TMP/u/python3.11

# H4, H5: the same in a chroot, the exe's name becoming a symlink to
# /etc/shadow or a FIFO. The chroot is the shared sid tree: only a fresh
# directory under its /tmp is ours.
CHR=
if [ -x "$SID/usr/bin/python3.15" ]; then
	CHR=$(mktemp -d "$SID/tmp/bpfpy-hostile-files.XXXXXX")
	chmod 755 "$CHR"
	in=${CHR#"$SID"}
	cp "$TMP/map_file.py" "$CHR/map_file.py"
	for h in H4 H5; do
		mkdir -p "$CHR/$h" && cp "$SID/usr/bin/python3.15" "$CHR/$h/python3.15"
	done
	chown -R nobody "$CHR"
	start_chroot() { # name mode
		chroot --userspec=nobody:nogroup "$SID" "$in/$1/python3.15" "$in/map_file.py" \
			"$in/map_file.py" "$in/$1/ready" "$2" "$in/$1/python3.15" > "$TMP/$1.log" 2>&1 &
		PIDS+=($!)
		HPID[$1]=$(wait_ready "$CHR/$1/ready") || { bad "$1 did not start: $(cat "$TMP/$1.log")"; HPID[$1]=; }
		VICTIM[$1]=$CHR/$1/python3.15
	}
	start_chroot H4 symlink:/etc/shadow
	WHAT[H4]="a chroot whose mapped exe name is replaced by a symlink to /etc/shadow"
	start_chroot H5 fifo
	WHAT[H5]="a chroot whose mapped exe name is replaced by a FIFO"
else
	echo "note: no sid chroot: rows H4, H5 skipped"
fi
cleanup_chr() { cleanup; [ -z "$CHR" ] || rm -rf "$CHR"; }
trap cleanup_chr EXIT

# run NAME CMD...: under a 30 s hard timeout, /usr/bin/time and strace;
# sets RC, RSS (kB), and the logs $TMP/NAME.{out,err,strace}.
run() {
	local name=$1
	shift
	# LeakSanitizer cannot run under ptrace (strace): in the SAN=1 build
	# the leak check is left to the other tests, ASan and UBSan stay on.
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		timeout -s KILL 30 /usr/bin/time -f %M -o "$TMP/$name.time" \
		strace -f -y -qq --seccomp-bpf -e trace=open,openat,openat2 -o "$TMP/$name.strace" \
		"$@" > "$TMP/$name.out" 2> "$TMP/$name.err"
	RC=$?
	RSS=$(tail -n 1 "$TMP/$name.time" 2>/dev/null | grep -E '^[0-9]+$')
	RSS=${RSS:-0}
}

# opened_outside NAME [VICTIM]: the opens in NAME's strace log (-y: each fd
# shown with its file) that reached the host's /etc/shadow, or the victim
# path (now a FIFO or symlink) by name. The deleted file the target still
# maps, shown as "<VICTIM>(deleted)", is the target's own executable, reached
# through /proc/PID/map_files: that one is right.
opened_outside() {
	grep -F -e '</etc/shadow>' ${2:+-e "\"$2\"" -e "<$2>"} "$TMP/$1.strace" |
		grep -v -e ' = -1 ' ${2:+-e "= [0-9]*<$2>(deleted)\$"}
}

for h in H1 H2 H3 H4 H5; do
	pid=${HPID[$h]:-}
	[ -n "$pid" ] || continue
	run "dump.$h" "$BPFPY" dump -p "$pid"
	name="dump.$h"
	fail=
	case $RC in
	0) ok "$name: dump exit 0 (read through the kernel's handle)" ;;
	1 | 3 | 4 | 5 | 6)
		if grep -q "^bpfpy: pid $pid" "$TMP/$name.err"; then
			ok "$name: exit $RC: $(head -c 160 "$TMP/$name.err")"
		else
			bad "$name: exit $RC without a message naming pid $pid"; fail=1
		fi
		;;
	137) bad "$name: killed by the 30 s timeout (a hang)"; fail=1 ;;
	*) bad "$name: exit $RC (a crash?): $(tail -n 3 "$TMP/$name.err")"; fail=1 ;;
	esac
	if [ "$RSS" -gt 0 ] && [ "$RSS" -lt "$RSS_MAX_KB" ]; then
		ok "$name: max RSS $RSS kB"
	else
		bad "$name: max RSS $RSS kB (cap $RSS_MAX_KB)"; fail=1
	fi
	if out=$(opened_outside "$name" "${VICTIM[$h]:-}"); then
		bad "$name: opened outside the target's root: $out"; fail=1
	else
		ok "$name: no open of /etc/shadow${VICTIM[$h]:+ or of ${VICTIM[$h]}}"
	fi
	if [ -z "$fail" ]; then
		row "${WHAT[$h]}: dump -p" "exit $RC within 30 s, max RSS $((RSS / 1024)) MB, nothing opened outside the target's root"
	else
		row "${WHAT[$h]}: dump -p" "FAILED: exit $RC, max RSS $((RSS / 1024)) MB"
	fi
done

# record -a with every hostile process present.
run rec_all "$BPFPY" record -a -d 2 -o "$TMP/all.folded"
fail=
if [ "$RC" -eq 0 ]; then ok "record -a: exit 0"; else bad "record -a: exit $RC: $(tail -n 3 "$TMP/rec_all.err")"; fail=1; fi
if [ "$RSS" -gt 0 ] && [ "$RSS" -lt "$RSS_MAX_KB" ]; then ok "record -a: max RSS $RSS kB"; else bad "record -a: max RSS $RSS kB"; fail=1; fi
if grep -q heavy "$TMP/all.folded" 2> /dev/null; then ok "record -a: profile written with the real target's frames"; else bad "record -a: no profile of hot.py"; fail=1; fi
n=$(awk -v p="$real_pid" '$1 == "pid" && $2 == p {for (i = 1; i <= NF; i++) if ($i ~ /^samples,?$/) print $(i - 1)}' "$TMP/rec_all.err" | head -n 1)
if [ "${n:-0}" -gt 0 ]; then ok "record -a: real target pid $real_pid got $n samples"; else bad "record -a: real target pid $real_pid got no samples"; fail=1; fi
for h in H1 H2 H3 H4 H5; do
	pid=${HPID[$h]:-}
	[ -n "$pid" ] || continue
	hn=$(awk -v p="$pid" '$1 == "pid" && $2 == p {for (i = 1; i <= NF; i++) if ($i ~ /^samples,?$/) print $(i - 1)}' "$TMP/rec_all.err" | head -n 1)
	echo "   $h (pid $pid): ${hn:-0} samples (sleeping or refused)"
done
if out=$(opened_outside rec_all "${VICTIM[H3]:-}") || { [ -n "${VICTIM[H4]:-}" ] && out=$(opened_outside rec_all "${VICTIM[H4]}"); } ||
	{ [ -n "${VICTIM[H5]:-}" ] && out=$(opened_outside rec_all "${VICTIM[H5]}"); }; then
	bad "record -a: opened outside a target's root: $out"; fail=1
else
	ok "record -a: no open of /etc/shadow or of a planted FIFO/symlink"
fi
if [ -z "$fail" ]; then
	row "record -a -d 2 beside all of the above" "exit 0, profile written, real target $n samples, max RSS $((RSS / 1024)) MB"
else
	row "record -a -d 2 beside all of the above" "FAILED: exit $RC, real target ${n:-0} samples"
fi
finish
