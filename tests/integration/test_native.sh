#!/bin/bash
# bpfpy record --native / --kernel: native and kernel frames spliced with the
# Python ones, on every target of scripts/targets.sh (JOBS at a time; pyenv
# 3.8-3.13 with a shared libpython and symbol tables, Debian's static
# /usr/bin/python3.11 without frame pointers, sid 3.14/3.15 in the chroot,
# named through the chroot's root). Checked by check/native_stacks.py:
#
# 1. py/native_qsort.py (libc qsort through ctypes, Python comparison
#    callback), record --native -d 3: every sample through order_cb is
#    exactly <module>;sort_block;<native: ctypes/libffi>;qsort* (libc.so.6);
#    <native>;order_cb. glibc's qsort is a tail call into qsort_r, which is
#    therefore the frame the stack holds: any qsort* of libc.so.6 counts.
# 2. py/native_callbacks.py: json.dumps(default=), re.sub(callable),
#    sorted(key=): the callback's frame sits on a native frame, with the
#    Python caller below (>= 95% of its samples; a sample between the C
#    call and the callback's first frame can legitimately end elsewhere).
# 3. native/burnmod.c, built by the test against the target's own headers
#    (-O2, no frame pointers): burn_loop [native] on spin [native] on outer
#    on <module>; inner (Python) on spin. burn_loop's share of the samples
#    is within 0.10 of the CPU share the extension measured for itself
#    (CLOCK_THREAD_CPUTIME_ID around the loop, over the recorded window).
#    Why 0.10: with >= 300 samples the binomial sd of a share near 0.5 is
#    <= 0.029, the window's edges (a round is ~40 ms of a 3 s run) move the
#    measured share by <= 0.02, and the few samples taken in the clock
#    calls or the loop's entry count for neither side; a splice that
#    loses the C frame (0 share) or smears it onto outer cannot pass.
# 4. --kernel: py/native_kernel.py page_faults (cpu clock): kernel frames
#    only on top, fault handling named (asm_exc_page_fault, *fault*);
#    pipe_read (--clock wall --idle): pipe_read / schedule in the kernel.
# 5. -f pprof of run 1 read by `go tool pprof -traces` (the real client):
#    qsort* and order_cb in one trace, libc.so.6 in the mappings (-raw).
. "$(dirname "$0")/lib.sh"

JOBS=${JOBS:-3}
use_bpfpy

bpfpy() { timeout -s KILL 120 "$BPFPY" "$@"; }
check() {
	"$CHECKPY" "$CHECK/native_stacks.py" "$@"
	fails=$((fails + $?))
}
stop_py() { kill -9 "$1" 2>/dev/null; wait "$1" 2>/dev/null; }

# record_into LABEL NAME ARGS...: bpfpy record ARGS > $TMP/LABEL.NAME.folded,
# its stderr shown indented; 0 if it exited 0.
record_into() {
	local label=$1 name=$2 rc
	shift 2
	bpfpy record "$@" >"$TMP/$label.$name.folded" 2>"$TMP/$label.$name.err"
	rc=$?
	sed 's/^/    /' "$TMP/$label.$name.err"
	[[ $rc == 0 ]] || bad "$label: record $* exited $rc"
	return $rc
}

# build_ext LABEL ROOT DIR: burnmod built for that target into DIR (a path
# on the host; inside ROOT for a chroot target). The headers are the
# target's own (sysconfig), read through its root.
build_ext() {
	local label=$1 root=$2 dir=$3 inc plat suffix r=${2%/}
	inc=$("$ROOT_DIR/scripts/pyrun.sh" "$label" -c 'import sysconfig; print(sysconfig.get_paths()["include"])') || return 1
	plat=$("$ROOT_DIR/scripts/pyrun.sh" "$label" -c 'import sysconfig; print(sysconfig.get_paths()["platinclude"])') || return 1
	suffix=$("$ROOT_DIR/scripts/pyrun.sh" "$label" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))') || return 1
	# Debian's pyconfig.h includes <x86_64-linux-gnu/python3.X/pyconfig.h>:
	# give that name a directory of its own that points into the root.
	mkdir -p "$dir/inc/x86_64-linux-gnu"
	[[ -d $r/usr/include/x86_64-linux-gnu/${inc##*/} ]] &&
		ln -sfn "$r/usr/include/x86_64-linux-gnu/${inc##*/}" "$dir/inc/x86_64-linux-gnu/${inc##*/}"
	cc -O2 -fPIC -shared -fomit-frame-pointer -I"$dir/inc" -I"$r$inc" -I"$r$plat" \
		-o "$dir/burnmod$suffix" "$ROOT_DIR/tests/integration/native/burnmod.c"
}

native_target() { # run by each_target, in a subshell; exit status = failures
	local version=$1 label=$2 root=$3 pid w dir indir c0 t0 c1 t1 share
	echo "== $label ($version)"

	# 1. qsort
	if start_py "$label" "$PYDIR/native_qsort.py"; then
		pid=$PY_PID
		record_into "$label" qsort -p "$pid" -d 3 --native &&
			check qsort "$TMP/$label.qsort.folded" what="$label qsort"
		if [[ $label == pyenv-3.12 || $label == debian-3.11 ]]; then
			record_into "$label" qsort-pprof -p "$pid" -d 2 --native -f pprof -o "$TMP/$label.pb.gz" &&
				pprof_check "$label" "$TMP/$label.pb.gz"
		fi
		stop_py "$pid"
	else
		bad "$label: native_qsort.py did not start"
	fi

	# 2. callbacks from C code of the standard library
	for w in json_default:on_default re_sub:on_match sorted_key:on_key; do
		if start_py "$label" "$PYDIR/native_callbacks.py" "${w%%:*}"; then
			pid=$PY_PID
			record_into "$label" "${w%%:*}" -p "$pid" -d 2 --native &&
				check callback "$TMP/$label.${w%%:*}.folded" what="$label ${w%%:*}" \
					leaf="${w##*:}" caller="${w%%:*}"
			stop_py "$pid"
		else
			bad "$label: native_callbacks.py ${w%%:*} did not start"
		fi
	done

	# 3. the C extension
	if [[ $root == / ]]; then
		dir=$(mktemp -d "$TMP/ext.$label.XXXXXX") indir=$dir
	else
		dir=$(mktemp -d "${root%/}/tmp/bpfpy-native.XXXXXX") indir=/tmp/${dir##*/}
	fi
	if ! build_ext "$label" "$root" "$dir" >"$dir/build.log" 2>&1; then
		bad "$label: burnmod did not build: $(tail -n 5 "$dir/build.log")"
	elif start_py "$label" "$PYDIR/native_burn.py" "$indir" "$indir/report"; then
		pid=$PY_PID
		wait_file "$dir/report" 30 "$pid"
		read -r c0 t0 <"$dir/report"
		record_into "$label" burn -p "$pid" -d 3 --native
		rc=$?
		read -r c1 t1 <"$dir/report"
		stop_py "$pid"
		share=$(awk -v a="$c0" -v b="$t0" -v c="$c1" -v d="$t1" 'BEGIN { if (d > b) printf "%.4f", (c - a) / (d - b); else print "nan" }')
		[[ $rc == 0 ]] && check burn "$TMP/$label.burn.folded" what="$label burnmod" share="$share" tol=0.10
	else
		bad "$label: native_burn.py did not start"
	fi
	rm -rf "$dir"

	# 4. kernel frames on top
	if start_py "$label" "$PYDIR/native_kernel.py" page_faults; then
		pid=$PY_PID
		record_into "$label" faults -p "$pid" -d 2 --native --kernel &&
			check kernel "$TMP/$label.faults.folded" what="$label page faults" \
				want=fault,clear_page py=page_faults
		stop_py "$pid"
	else
		bad "$label: native_kernel.py page_faults did not start"
	fi
	if start_py "$label" "$PYDIR/native_kernel.py" pipe_read; then
		pid=$PY_PID
		record_into "$label" pipe -p "$pid" -d 2 --clock wall --idle -F 200 --native --kernel &&
			check kernel "$TMP/$label.pipe.folded" what="$label os.read of a pipe" \
				want=pipe_read,schedule py=pipe_read
		stop_py "$pid"
	else
		bad "$label: native_kernel.py pipe_read did not start"
	fi
}

# pprof_check LABEL FILE: the real pprof client reads it; qsort* and order_cb
# in one trace, the native frames' file (libc.so.6) among the mappings.
pprof_check() {
	local label=$1 f=$2
	if ! command -v go >/dev/null; then
		bad "$label: no go toolchain for go tool pprof"
		return
	fi
	if ! go tool pprof -traces "$f" >"$f.traces" 2>"$f.err"; then
		bad "$label: go tool pprof -traces failed: $(head -c 300 "$f.err")"
		return
	fi
	go tool pprof -raw "$f" >"$f.raw" 2>>"$f.err"
	if awk '/^-+/ { if (q && o) f = 1; q = o = 0 } /qsort/ { q = 1 } /order_cb/ { o = 1 } END { exit !(f || (q && o)) }' "$f.traces"; then
		ok "$label: go tool pprof -traces shows qsort and order_cb in one trace"
	else
		bad "$label: go tool pprof -traces has no trace with qsort and order_cb: $(head -c 600 "$f.traces")"
	fi
	if grep -q 'libc\.so\.6' "$f.raw"; then
		ok "$label: go tool pprof -raw lists the libc.so.6 mapping"
	else
		bad "$label: go tool pprof -raw names no libc.so.6 mapping: $(grep -A5 -i mapping "$f.raw" | head -c 400)"
	fi
}

each_target native_target
finish
