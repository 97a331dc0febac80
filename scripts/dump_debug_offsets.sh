#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Dump the first bytes of _PyRuntime (which begin with _Py_DebugOffsets) of
# real 3.13+ interpreters into tests/data/debug_offsets_3.X.bin, so that the
# parser in user/python/py_offsets.c is tested on what CPython really writes rather
# than on bytes we composed to match our own reading of the headers.
#
# The dump is as long as what bpfpy reads at _PyRuntime
# (PY_DEBUG_OFFSETS_READ_SIZE); the bytes past the struct are whatever the
# runtime holds there, as in a real read.
#
# 3.13 comes from pyenv, 3.14 and 3.15 from the Debian sid chroot
# (SID=..., default /var/cache/bpfpy/sid). An interpreter that is absent is
# skipped with a note on stderr; the tests then skip its blob.
#
# usage: scripts/dump_debug_offsets.sh [OUTDIR]   (default tests/data)
set -eu

OUTDIR="${1:-tests/data}"
PYENV="${PYENV_ROOT:-/root/.pyenv}/versions"
SID="${SID:-/var/cache/bpfpy/sid}"
N="$(sed -n 's/^#define PY_DEBUG_OFFSETS_READ_SIZE[[:space:]]*\([0-9]*\).*/\1/p' user/python/py_offsets.h)"
[ -n "$N" ] || { echo "dump_debug_offsets: run from the repository root" >&2; exit 1; }
mkdir -p "$OUTDIR"

# _PyRuntime is exported both by libpython and by Debian's static
# executables, so a dlsym through ctypes.pythonapi finds it either way.
CODE="import ctypes, sys
a = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, '_PyRuntime'))
sys.stdout.buffer.write(ctypes.string_at(a, $N))"

dump() { # minor, command...
	minor="$1"
	shift
	if "$@" -c "$CODE" >"$OUTDIR/debug_offsets_$minor.bin.tmp" 2>"$OUTDIR/.err"; then
		mv "$OUTDIR/debug_offsets_$minor.bin.tmp" "$OUTDIR/debug_offsets_$minor.bin"
		echo "dump_debug_offsets: $minor: $*" >&2
	else
		echo "dump_debug_offsets: $minor: $* failed: $(cat "$OUTDIR/.err")" >&2
		rm -f "$OUTDIR/debug_offsets_$minor.bin.tmp"
	fi
	rm -f "$OUTDIR/.err"
}

if [ -x "$PYENV/3.13.0/bin/python3.13" ]; then
	dump 3.13 "$PYENV/3.13.0/bin/python3.13"
else
	echo "dump_debug_offsets: no pyenv 3.13.0, 3.13 skipped" >&2
fi
for m in 3.14 3.15; do
	if [ -x "$SID/usr/bin/python$m" ]; then
		dump "$m" chroot "$SID" "python$m"
	else
		echo "dump_debug_offsets: no $SID/usr/bin/python$m, $m skipped" >&2
	fi
done

# And the asyncio module's _Py_AsyncioModuleDebugOffsets (.AsyncioDebug):
# in the _asyncio extension on 3.14, in the interpreter's file on 3.15.
for pair in "3.14 $SID/usr/lib/python3.14/lib-dynload/_asyncio.cpython-314-x86_64-linux-gnu.so" \
	"3.15 $SID/usr/bin/python3.15"; do
	minor=${pair%% *}
	file=$(readlink -f "${pair#* }" 2>/dev/null || true)
	if [ -z "$file" ] || [ ! -f "$file" ]; then
		echo "dump_debug_offsets: no $minor asyncio module, skipped" >&2
		continue
	fi
	objcopy -O binary --only-section=.AsyncioDebug "$file" "$OUTDIR/asyncio_debug_$minor.bin"
	echo "dump_debug_offsets: $OUTDIR/asyncio_debug_$minor.bin from $file"
done
