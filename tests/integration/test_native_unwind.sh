#!/bin/bash
# --native, the kernel side: user stacks unwound in BPF with the unwind
# tables built from each mapped file's CFI (user/native/), on every target.
#
# 1. py/native_busy.py (busy in OpenSSL's PBKDF2 through _hashlib) recorded
#    for 2 s with BPFPY_NATIVE_RAW, which dumps every record's raw native
#    addresses. check/native_chain.py symbolizes them with binutils alone
#    (/proc/PID/maps copy, readelf -lW, addr2line -f) and wants >= 80% of the
#    records complete (no NATIVE_LOST / NATIVE_TRUNCATED), every address
#    named, and the chain PKCS5_PBKDF2_HMAC -> _PyEval_EvalFrameDefault ->
#    Py_BytesMain|main -> __libc_start_main* in that order from the leaf,
#    the leaf in libcrypto or libc (its malloc), and no frame-pointer
#    fallback. Debian's 3.11 and
#    sid's 3.14/3.15 are built without frame pointers: a frame-pointer walk
#    could not pass this there.
# 2. --kernel (one target): the same program touching fresh pages: some
#    records carry kernel frames, all inside the kernel's text
#    (/proc/kallsyms _stext.._etext), and the native chain still completes.
# 3. The plain record (no BPFPY_NATIVE_RAW) still works: samples as before.
# 4. dlopen after recording began: tables refreshed (see there).
# 5. A library without CFI: frame-pointer fallback, flagged (see there).
. "$(dirname "$0")/lib.sh"

JOBS=${JOBS:-3}
use_bpfpy

# Leaf to root. The eval loop is named only where the interpreter's ELF has
# it in .symtab (pyenv, Debian's 3.11 with its -dbg symbols): sid's builds
# are stripped to .dynsym, where addr2line names static functions by the
# exported one before them, so there the chain is checked without it.
START='Py_BytesMain|Py_RunMain|pymain_main|main,__libc_start_main|__libc_start_call_main|__libc_start_main_impl'
chain_of() { # MAPS: the chain to expect in that process
	local elf
	elf=$(awk '$6 ~ /libpython3/ { print $6; exit }' "$1")
	[ -n "$elf" ] || elf=$(awk '$2 ~ /x/ && $6 ~ /^\// { print $6; exit }' "$1")
	if nm "$elf" 2>/dev/null | grep -qw _PyEval_EvalFrameDefault ||
		nm "/usr/lib/debug/.build-id/$(readelf -n "$elf" | awk '/Build ID/ { print substr($3, 1, 2) "/" substr($3, 3) }').debug" 2>/dev/null | grep -qw _PyEval_EvalFrameDefault; then
		echo "PKCS5_PBKDF2_HMAC,_PyEval_EvalFrameDefault,$START"
	else
		echo "PKCS5_PBKDF2_HMAC,$START"
	fi
}

# record_raw LABEL PID TAG: 2 s of record with the raw dump; sets RAW, MAPS.
record_raw() {
	RAW=$TMP/$1.$3.raw MAPS=$TMP/$1.$3.maps
	cp "/proc/$2/maps" "$MAPS"
	BPFPY_NATIVE_RAW=$RAW timeout 60 "$BPFPY" record -p "$2" -d 2 -f collapsed \
		-o "$TMP/$1.$3.folded" 2>"$TMP/$1.$3.err"
	local rc=$?
	[[ $rc == 0 ]] || { bad "$1: record --native (raw dump) exited $rc: $(tail -3 "$TMP/$1.$3.err")"; return 1; }
	[ -s "$RAW" ] || { bad "$1: no record dumped"; return 1; }
}

one() {
	local version=$1 label=$2 root=$3
	start_py "$label" "$PYDIR/native_busy.py" || { bad "$label: target did not start"; return; }
	if record_raw "$label" "$PY_PID" busy; then
		"$CHECKPY" "$CHECK/native_chain.py" raw="$RAW" maps="$MAPS" what="$label" \
			leaf_lib=libcrypto,libc.so chain="$(chain_of "$MAPS")"
		fails=$((fails + $?))
		grep -m1 'in-kernel cost' "$TMP/$label.busy.err" | sed "s/^ */    $label --native: /"
	fi
	kill -9 "$PY_PID" 2>/dev/null
	wait "$PY_PID" 2>/dev/null
}
each_target one

# 2. --kernel: page faults put kernel frames on top.
label=$(targets | awk -F'\t' '$2 == "debian-3.11" { print $2 }')
[ -n "$label" ] || label=$(targets | head -1 | cut -f2)
start_py "$label" "$PYDIR/native_busy.py" faults || bad "$label: faults target did not start"
if record_raw "$label" "$PY_PID" faults; then
	read -r lo hi < <(awk '$3 == "_stext" { lo = $1 } $3 == "_etext" { hi = $1 } END { print lo, hi }' /proc/kallsyms)
	"$CHECKPY" - "$RAW" "$lo" "$hi" "$label" <<'PY'
import sys
raw, lo, hi, label = sys.argv[1], int(sys.argv[2], 16), int(sys.argv[3], 16), sys.argv[4]
n = withk = outside = complete = 0
for line in open(raw):
    head, nat, kern = line.split("|")
    h = head.split()
    n += 1
    ks = [int(x, 16) for x in kern.split()]
    if ks:
        withk += 1
        outside += sum(not lo <= k < hi for k in ks)
    complete += not int(h[6], 16) & 5
ok = withk > 0 and outside == 0 and lo > 0
print("%s: %s: %d of %d records with kernel frames, %d kernel addresses outside the kernel's text, %d native chains complete"
      % ("ok" if ok else "FAIL", label, withk, n, outside, complete))
sys.exit(0 if ok else 1)
PY
	fails=$((fails + $?))
fi
kill -9 "$PY_PID" 2>/dev/null
wait "$PY_PID" 2>/dev/null

# 3. Without the dump (and without --native) the record is as before.
start_py "$label" "$PYDIR/native_busy.py" || bad "$label: target did not start"
timeout 60 "$BPFPY" record -p "$PY_PID" -d 1 -f collapsed -o "$TMP/plain.folded" 2>"$TMP/plain.err"
rc=$?
if [[ $rc == 0 ]] && grep -q 'main' "$TMP/plain.folded"; then
	ok "$label: plain record unchanged: $(grep -m1 'samples,' "$TMP/plain.err" | sed 's/^ *//')"
else
	bad "$label: plain record rc $rc: $(tail -3 "$TMP/plain.err")"
fi
kill -9 "$PY_PID" 2>/dev/null
wait "$PY_PID" 2>/dev/null

# 4. A library mapped after recording began (ctypes and _hashlib dlopen
#    theirs late): samples in it first stop at an unknown mapping
#    (NATIVE_LOST, cause NATIVE_NO_MAP = 2), which makes bpfpy re-scan the
#    maps; the last records then have the whole chain through libcrypto.
go=$TMP/late.go
start_py "$label" "$PYDIR/native_busy.py" late "$go" || bad "$label: late target did not start"
if grep -q libcrypto "/proc/$PY_PID/maps"; then
	echo "    ($label maps libcrypto at startup: the late-load case cannot be shown)"
else
	RAW=$TMP/late.raw
	BPFPY_NATIVE_RAW=$RAW timeout 60 "$BPFPY" record -p "$PY_PID" -d 5 -f collapsed \
		-o "$TMP/late.folded" 2>"$TMP/late.err" &
	rec=$!
	# go once the pure-Python phase has been sampled (the dump is bpfpy's,
	# written from the target's own samples)
	for ((i = 0; i < 300; i++)); do
		[ -f "$RAW" ] && (($(wc -l <"$RAW") >= 20)) && break
		kill -0 "$rec" 2>/dev/null || break
		sleep 0.1
	done
	before=0
	[ -f "$RAW" ] && before=$(wc -l <"$RAW")
	touch "$go"
	wait_bounded "$rec" 60
	cp "/proc/$PY_PID/maps" "$TMP/late.maps"
	nomap=$("$CHECKPY" -c 'import sys
n = 0
for i, l in enumerate(open(sys.argv[1])):
    f = int(l.split()[6], 16)
    n += i >= int(sys.argv[2]) and f & 4 and (f >> 8) & 255 == 2
print(n)' "$RAW" "$before")
	if ((nomap > 0)); then
		ok "$label: $nomap records after the dlopen stopped at an unknown mapping (NATIVE_NO_MAP), as expected before the re-scan"
	else
		bad "$label: no NATIVE_NO_MAP record after the dlopen ($(wc -l <"$RAW") records, $before before go)"
	fi
	tail -n 30 "$RAW" >"$TMP/late.tail"
	"$CHECKPY" "$CHECK/native_chain.py" raw="$TMP/late.tail" maps="$TMP/late.maps" \
		what="$label after dlopen" leaf_lib=libcrypto,libc.so chain="$(chain_of "$TMP/late.maps")"
	fails=$((fails + $?))
fi
kill -9 "$PY_PID" 2>/dev/null
wait "$PY_PID" 2>/dev/null

# 5. A library without CFI (built here with -fno-asynchronous-unwind-tables,
#    with frame pointers), busy through ctypes: its frames are found by the
#    frame-pointer fallback, flagged NATIVE_FP_FALLBACK, and the chain goes
#    on by CFI from libffi down to main.
cat >"$TMP/nofp.c" <<'C'
__attribute__((noinline)) long nofp_inner(long n)
{
	volatile long x = 0;
	for (long i = 0; i < n; i++)
		x += i;
	return x;
}
long nofp_spin(long n) { return nofp_inner(n) + 1; }
C
if gcc -O1 -shared -fPIC -fno-omit-frame-pointer -fno-asynchronous-unwind-tables -fno-unwind-tables \
	-o "$TMP/libnofp.so" "$TMP/nofp.c" 2>"$TMP/nofp.err"; then
	chmod 755 "$TMP/libnofp.so"
	start_py "$label" "$PYDIR/native_busy.py" ctypes "$TMP/libnofp.so" || bad "$label: ctypes target did not start"
	if record_raw "$label" "$PY_PID" nofp; then
		"$CHECKPY" "$CHECK/native_chain.py" raw="$RAW" maps="$MAPS" what="$label no-CFI library" \
			leaf_lib=libnofp chain="nofp_inner,nofp_spin,$(chain_of "$MAPS" | cut -d, -f2-)" fp=expect
		fails=$((fails + $?))
	fi
	kill -9 "$PY_PID" 2>/dev/null
	wait "$PY_PID" 2>/dev/null
else
	bad "cannot build the no-CFI library: $(head -3 "$TMP/nofp.err")"
fi
finish
