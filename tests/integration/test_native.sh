#!/bin/bash
# bpfpy record --native --kernel: native and kernel frames spliced with the
# Python ones, on every target of scripts/targets.sh at once: pyenv 3.8-3.13
# (shared libpython with symbol tables), Debian's static /usr/bin/python3.11
# (no frame pointers), sid 3.14/3.15 in the chroot (files named through the
# chroot's root). Each target runs py/native_mix.py, which turns through
# every case from <module>; ONE recording (12 s) of all of them (-p A,B,... --threads,
# so one BPF load: under load the verifier alone takes tens of seconds)
# is checked per pid by check/native_stacks.py:
#
# 1. qsort through ctypes with a Python comparison: every sample through
#    order_cb is exactly <module>;sort_block;<native: ctypes/libffi>;
#    qsort* (libc.so.6);<native>;order_cb. glibc's qsort tail-calls
#    qsort_r, which is therefore the frame the stack holds: any qsort* of
#    libc.so.6 counts.
# 2. json.dumps(default=), re.sub(callable), sorted(key=): the callback's
#    frame sits on a native frame, with the Python caller below (>= 95% of
#    its samples; a sample between the C call and the callback's first
#    frame can legitimately end elsewhere).
# 3. native/burnmod.c, built here against the target's own headers (-O2, no
#    frame pointers, so the unwind comes from its CFI): burn_loop [native]
#    on spin [native] on outer on <module>; inner (Python) on spin; the
#    share of the main thread's samples in burn_loop within 4 binomial sd +
#    0.02 of the CPU share the extension measured for itself
#    (CLOCK_THREAD_CPUTIME_ID around the loop, over the recorded window).
#    A splice that drops the C frame (share 0) or smears it onto outer
#    cannot pass.
# 4. --kernel: kernel frames only on top of a stack; page_faults shows the
#    fault path, pipe_read the read path, on top of their Python frames.
# Samples whose native unwind the kernel lost (bpfpy marks them
# [native unwind lost] and counts them) are left out of the shape checks and
# may be at most 2% of a case: a lost unwind is a defect to find (an
# allowance of 10% once hid that ld.so, mapped just below [vsyscall], was
# never found, so every sample in __tls_get_addr lost its callers).
# 5. -f pprof read by the real client: `go tool pprof -traces` has qsort*
#    and order_cb in one trace, -raw lists the libc.so.6 mapping. The same
#    recording writes it (-o twice), where a second one of 8 s on two
#    targets did; test_convert.sh checks that a file of several -o is the
#    one the format alone gives.
# The targets are killed once the recording is done, the builds run before
# they start: neither the checks nor the builds wait behind nine busy
# targets.
. "$(dirname "$0")/lib.sh"

use_bpfpy
bpfpy() { timeout -s KILL 170 "$BPFPY" "$@"; }
check() {
	"$CHECKPY" "$CHECK/native_stacks.py" "$@"
	fails=$((fails + $?))
}

# build_ext LABEL ROOT DIR: burnmod built for that target into DIR (a path
# on the host; inside ROOT for a chroot target), with the target's headers
# (sysconfig), read through its root.
build_ext() {
	local label=$1 dir=$3 inc plat suffix r=${2%/}
	inc=$("$ROOT_DIR/scripts/pyrun.sh" "$label" -c 'import sysconfig; print(sysconfig.get_paths()["include"])') || return 1
	plat=$("$ROOT_DIR/scripts/pyrun.sh" "$label" -c 'import sysconfig; print(sysconfig.get_paths()["platinclude"])') || return 1
	suffix=$("$ROOT_DIR/scripts/pyrun.sh" "$label" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))') || return 1
	# Debian's pyconfig.h includes <x86_64-linux-gnu/python3.X/pyconfig.h>:
	# that name gets a directory of its own, pointing into the root.
	mkdir -p "$dir/inc/x86_64-linux-gnu"
	[[ -d $r/usr/include/x86_64-linux-gnu/${inc##*/} ]] &&
		ln -sfn "$r/usr/include/x86_64-linux-gnu/${inc##*/}" "$dir/inc/x86_64-linux-gnu/${inc##*/}"
	cc -O2 -fPIC -shared -fomit-frame-pointer -I"$dir/inc" -I"$r$inc" -I"$r$plat" \
		-o "$dir/burnmod$suffix" "$ROOT_DIR/tests/integration/native/burnmod.c"
}

declare -A PID DIR REPORT C0 T0
mapfile -t tl < <(targets)
((${#tl[@]})) || { echo "no target interpreter"; exit 77; }
LABELS=()
CHROOT_DIRS=()
trap 'cleanup; rm -rf "${CHROOT_DIRS[@]}"' EXIT
# Every build first, two at a time, before any target spins: a build
# beside nine busy targets waited for a CPU.
for r in "${tl[@]}"; do
	IFS=$'\t' read -r version label root py <<<"$r"
	if [[ $root == / ]]; then
		dir=$(mktemp -d "$TMP/ext.$label.XXXXXX")
	else
		dir=$(mktemp -d "${root%/}/tmp/bpfpy-native.XXXXXX")
		CHROOT_DIRS+=("$dir")
	fi
	DIR[$label]=$dir
	{ build_ext "$label" "$root" "$dir" >"$dir/build.log" 2>&1; echo $? >"$dir/build.rc"; } &
	while (($(jobs -rp | wc -l) >= 2)); do wait -n; done
done
wait
for r in "${tl[@]}"; do
	IFS=$'\t' read -r version label root py <<<"$r"
	dir=${DIR[$label]} indir=${DIR[$label]}
	[[ $root == / ]] || indir=/tmp/${dir##*/}
	if [[ $(cat "$dir/build.rc" 2>/dev/null) == 0 ]]; then
		ok "$label: burnmod built against $label's headers"
		ext=$indir
	else
		bad "$label: burnmod did not build: $(tail -n 5 "$dir/build.log")"
		ext=-
	fi
	py_launch "$label" "$PYDIR/native_mix.py" "$ext" "$indir/report"
	PID[$label]=$PY_PID
	REPORT[$label]=$dir/report
	eval "OUT_$((${#LABELS[@]}))=\$PY_OUT"
	LABELS+=("$label")
done
pids=()
for i in "${!LABELS[@]}"; do
	label=${LABELS[$i]}
	out_var=OUT_$i
	if py_ready "${PID[$label]}" "${!out_var}" "$label"; then
		pids+=("${PID[$label]}")
	else
		bad "$label: native_mix.py did not start"
	fi
done
((${#pids[@]})) || finish
for label in "${LABELS[@]}"; do
	read -r C0[$label] T0[$label] <"${REPORT[$label]}" 2>/dev/null
done
list=$(IFS=,; echo "${pids[*]}")
echo "== record -p $list -d 12 --native --kernel --threads -o all.folded -o native.pb.gz"
bpfpy record -p "$list" -d 12 --native --kernel --threads -o "$TMP/all.folded" \
	-o "$TMP/native.pb.gz" 2>"$TMP/all.err"
rc=$?
sed 's/^/    /' "$TMP/all.err"
[[ $rc == 0 ]] || bad "record --native --kernel exited $rc"
# The extension's own figures at the end of the window, then the targets
# go: the checks below need neither them nor a loaded host.
declare -A C1 T1
for label in "${LABELS[@]}"; do
	read -r C1[$label] T1[$label] <"${REPORT[$label]}" 2>/dev/null
	kill -9 "${PID[$label]}" 2>/dev/null
	wait "${PID[$label]}" 2>/dev/null
done

for label in "${LABELS[@]}"; do
	pid=${PID[$label]}
	echo "== $label (pid $pid)"
	[[ $rc == 0 ]] || continue
	f=$TMP/all.folded
	check qsort "$f" what="$label qsort" pid="$pid" min=8
	check callback "$f" what="$label json_default" pid="$pid" leaf=on_default caller=json_default min=8
	check callback "$f" what="$label re_sub" pid="$pid" leaf=on_match caller=re_sub min=8
	check callback "$f" what="$label sorted_key" pid="$pid" leaf=on_key caller=sorted_key min=8
	c1=${C1[$label]:-} t1=${T1[$label]:-}
	if [[ -n ${C0[$label]:-} && -n $c1 ]] && ((c1 > 0)); then
		share=$(awk -v a="${C0[$label]}" -v b="${T0[$label]}" -v c="$c1" -v d="$t1" 'BEGIN { printf "%.4f", (c - a) / (d - b) }')
		check burn "$f" what="$label burnmod" pid="$pid" share="$share" min=8
	else
		bad "$label: no burnmod figures from the target"
	fi
	check kernel "$f" what="$label page faults" pid="$pid" want=fault,clear_page py=page_faults min=8
	check kernel "$f" what="$label os.read of a pipe" pid="$pid" want=pipe_read,vfs_read,ksys_read,copy_ py=pipe_read min=8
done

# 5. pprof through the real client: the same recording's -o native.pb.gz
f=$TMP/native.pb.gz
if [[ $rc == 0 ]] && command -v go >/dev/null; then
	if go tool pprof -traces "$f" >"$f.traces" 2>"$f.err"; then
		if awk '/^-+/ { if (q && o) f = 1; q = o = 0 } /qsort/ { q = 1 } /order_cb/ { o = 1 } END { exit !(f || (q && o)) }' "$f.traces"; then
			ok "go tool pprof -traces shows qsort and order_cb in one trace"
		else
			bad "go tool pprof -traces has no trace with qsort and order_cb: $(head -c 600 "$f.traces")"
		fi
	else
		bad "go tool pprof -traces failed: $(head -c 300 "$f.err")"
	fi
	go tool pprof -raw "$f" >"$f.raw" 2>>"$f.err"
	if grep -q 'libc\.so\.6' "$f.raw"; then
		ok "go tool pprof -raw lists the libc.so.6 mapping: $(grep -m1 'libc\.so\.6' "$f.raw" | tr -s ' ')"
	else
		bad "go tool pprof -raw names no libc.so.6 mapping"
	fi
elif [[ $rc == 0 ]]; then
	bad "pprof part skipped: no go toolchain"
fi
finish
