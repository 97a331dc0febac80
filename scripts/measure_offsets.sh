#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Measure, with pahole on the DWARF of the pyenv builds, every offset that
# user/python/py_offsets.c tabulates for CPython 3.8-3.13, and write them as
# "<minor> <key> <value>" lines. tests/unit/test_py_offsets.c compares the
# tables against this file, so a number typed wrong in the tables (or a
# rebuilt interpreter whose layout moved) fails a test instead of a profile.
#
# Keys are the field names of struct py_offsets / struct py_extra, plus
# frame_size and code_size (sizeof the frame and code structs). A version
# whose libpython is absent is skipped with a note on stderr.
#
# usage: scripts/measure_offsets.sh [OUT]   (default tests/data/pahole_offsets.txt)
set -eu

PYENV="${PYENV_ROOT:-/root/.pyenv}/versions"
OUT="${1:-tests/data/pahole_offsets.txt}"
command -v pahole >/dev/null || { echo "measure_offsets: pahole not found (apt install dwarves)" >&2; exit 1; }
PY="$(command -v python3)" || { echo "measure_offsets: python3 not found" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "# <minor> <key> <value>: written by scripts/measure_offsets.sh, read by tests/unit/test_py_offsets.c" >"$tmp/out"
for dir in "$PYENV"/3.*; do
	[ -d "$dir" ] || continue
	full="${dir##*/}"
	minor="${full%.*}"
	case "$minor" in 3.8 | 3.9 | 3.10 | 3.11 | 3.12 | 3.13) ;; *) continue ;; esac
	lib="$dir/lib/libpython$minor.so.1.0"
	if [ ! -f "$lib" ]; then
		echo "measure_offsets: $lib absent, $minor skipped" >&2
		continue
	fi
	# One expanded dump per library: nested members then carry absolute
	# offsets, so "ceval.gil.locked" is a lookup, not arithmetic.
	pahole -E "$lib" 2>/dev/null >"$tmp/dump"
	for s in _err_stackitem PyASCIIObject PyCompactUnicodeObject PyBytesObject PyCodeObject PyModuleObject PyDictObject \
		_dictkeysobject _dictvalues _longobject _typeobject _heaptypeobject PyTupleObject \
		PyGenObject PySetObject PyListObject _PyWeakReference PyMethodObject PyCFunctionObject PyFloatObject PyCellObject \
		bootstate; do
		pahole -E -C "$s" "$lib" 2>/dev/null >>"$tmp/dump" || true
	done
	# asyncio's TaskObj lives in the _asyncio extension's DWARF (3.11-3.13).
	for so in "$dir"/lib/python"$minor"/lib-dynload/_asyncio.*.so; do
		[ -f "$so" ] && pahole -E -C TaskObj "$so" 2>/dev/null >>"$tmp/dump" || true
	done
	echo "# $minor measured on $lib ($full)" >>"$tmp/out"
	"$PY" - "$minor" "$tmp/dump" >>"$tmp/out" <<'EOF'
import re, sys

minor, path = sys.argv[1], sys.argv[2]
ver = tuple(int(x) for x in minor.split("."))
MEMBER = re.compile(r"/\*\s*(\d+)(?::\s*\d+)?\s+\d+\s*\*/\s*$")


def name_of(decl):
    decl = re.sub(r"/\*.*?\*/", "", decl).strip().rstrip(";").strip()
    m = re.search(r"\(\*\s*(\w+)\)", decl)
    if m:
        return m.group(1)
    decl = re.sub(r"\[[^\]]*\]", "", decl)
    decl = re.sub(r":\s*\d+$", "", decl).strip()
    m = re.search(r"(\w+)$", decl)
    return m.group(1) if m else ""


def parse(lines):
    """Top-level structs of a pahole -E dump as trees of
    {"name", "off", "kids", "size"}; offsets are absolute within the
    top-level struct because -E expands nested members in place."""
    structs = {}
    stack = []
    for line in lines:
        s = line.strip()
        if not stack:
            m = re.match(r"^(?:typedef\s+)?struct\s*(\w*)\s*\{$", s)
            if m and not line.startswith("\t"):
                stack.append({"name": m.group(1), "off": 0, "kids": [], "size": None})
            continue
        if s.endswith("{"):
            stack.append({"name": "", "off": None, "kids": [], "size": None})
            continue
        if s.startswith("}"):
            node = stack.pop()
            if not stack:
                m = re.match(r"^\}\s*(\w*)\s*;", s)
                name = node["name"] or (m.group(1) if m else "")
                if name and name not in structs:
                    structs[name] = node
                continue
            m = re.match(r"^\}\s*(\w*)\s*(?:\[[^\]]*\])?\s*;", s)
            node["name"] = m.group(1) if m else ""
            mo = MEMBER.search(s)
            node["off"] = int(mo.group(1)) if mo else None
            stack[-1]["kids"].append(node)
            continue
        m = re.search(r"/\*\s*size:\s*(\d+)", s)
        if m and len(stack) == 1:
            stack[0]["size"] = int(m.group(1))
            continue
        mo = MEMBER.search(s)
        if mo and ";" in s:
            stack[-1]["kids"].append(
                {"name": name_of(s[: s.rfind("/*")]), "off": int(mo.group(1)), "kids": []}
            )
    return structs


def find(node, name):
    for k in node["kids"]:
        if k["name"] == name:
            return k
    for k in node["kids"]:
        if not k["name"] and k["kids"]:
            r = find(k, name)
            if r:
                return r
    return None


structs = parse(open(path).read().splitlines())


def off(struct, dotted):
    node = structs[struct]
    for part in dotted.split("."):
        node = find(node, part)
        if node is None:
            raise SystemExit(f"measure_offsets: {minor}: no {struct}.{dotted}")
    return node["off"]


def size(struct):
    return structs[struct]["size"]


out = []
put = lambda k, v: out.append(f"{minor} {k} {v}")
RT, IS, TS, CO = "pyruntimestate", "_is", "_ts", "PyCodeObject"
FR = "_frame" if ver <= (3, 10) else "_PyInterpreterFrame"

put("runtime_interpreters_head", off(RT, "interpreters.head"))
put("interp_next", off(IS, "next"))
put("interp_threads_head", off(IS, "tstate_head" if ver <= (3, 10) else "threads.head"))
put("interp_id", off(IS, "id"))
put("tstate_next", off(TS, "next"))
put("tstate_thread_id", off(TS, "thread_id"))
if ver >= (3, 11):
    put("tstate_native_thread_id", off(TS, "native_thread_id"))
if ver <= (3, 10):
    put("tstate_frame", off(TS, "frame"))
elif ver <= (3, 12):
    put("tstate_frame", off(TS, "cframe"))
    put("cframe_current_frame", off("_PyCFrame", "current_frame"))
    put("cframe_previous", off("_PyCFrame", "previous"))
else:
    put("tstate_frame", off(TS, "current_frame"))

if ver <= (3, 10):
    put("frame_code", off(FR, "f_code"))
    put("frame_previous", off(FR, "f_back"))
    put("frame_instr", off(FR, "f_lasti"))
else:
    put("frame_code", off(FR, "f_code" if ver <= (3, 12) else "f_executable"))
    put("frame_previous", off(FR, "previous"))
    put("frame_instr", off(FR, "prev_instr" if ver <= (3, 12) else "instr_ptr"))
    put("frame_owner", off(FR, "owner"))
put("frame_size", size(FR))

put("code_argcount", off(CO, "co_argcount"))
put("code_flags", off(CO, "co_flags"))
put("code_firstlineno", off(CO, "co_firstlineno"))
put("code_filename", off(CO, "co_filename"))
put("code_name", off(CO, "co_name"))
if ver >= (3, 11):
    put("code_qualname", off(CO, "co_qualname"))
    put("code_adaptive", off(CO, "co_code_adaptive"))
put("code_linetable", off(CO, "co_lnotab" if ver <= (3, 9) else "co_linetable"))
# record --opcodes: where the bytecode is. <= 3.10 co_code, a bytes
# object; 3.11+ the code units sit in the code object itself, as many as
# its var header's ob_size says.
if ver <= (3, 10):
    put("code_code", off(CO, "co_code"))
else:
    put("code_units", off(CO, "ob_base.ob_size"))
put("code_size", size(CO))

put("ob_type", off("_object", "ob_type"))
put("unicode_state", off("PyASCIIObject", "state"))
put("unicode_length", off("PyASCIIObject", "length"))
put("ascii_data_off", size("PyASCIIObject"))
put("compact_data_off", size("PyCompactUnicodeObject"))
put("bytes_size", off("PyBytesObject", "ob_base.ob_size"))
put("bytes_data", off("PyBytesObject", "ob_sval"))

if ver <= (3, 11):
    put("gil_locked", off(RT, "ceval.gil.locked"))
    put("gil_holder", off(RT, "ceval.gil.last_holder"))
else:
    put("interp_ceval_gil", off(IS, "ceval.gil"))
    put("gil_locked", off("_gil_runtime_state", "locked"))
    put("gil_holder", off("_gil_runtime_state", "last_holder"))

# Objects, for threading names (struct py_objlayout, "obj." keys).
put("obj.interp_modules", off(IS, "modules" if ver <= (3, 11) else "imports.modules"))
put("obj.module_dict", off("PyModuleObject", "md_dict"))
put("obj.dict_used", off("PyDictObject", "ma_used"))
put("obj.dict_keys", off("PyDictObject", "ma_keys"))
put("obj.dict_values", off("PyDictObject", "ma_values"))
KO = "_dictkeysobject"
if ver <= (3, 10):
    put("obj.keys_size", off(KO, "dk_size"))
else:
    put("obj.keys_size", off(KO, "dk_log2_size"))
    put("obj.keys_index_bytes", off(KO, "dk_log2_index_bytes"))
    put("obj.keys_kind", off(KO, "dk_kind"))
    put("obj.values_items", off("_dictvalues", "values"))
if ver >= (3, 13):
    put("obj.values_capacity", off("_dictvalues", "capacity"))
    put("obj.values_valid", off("_dictvalues", "valid"))
put("obj.keys_nentries", off(KO, "dk_nentries"))
put("obj.keys_indices", off(KO, "dk_indices"))
if ver <= (3, 11):
    put("obj.long_size", off("_longobject", "ob_base.ob_size"))
    put("obj.long_digits", off("_longobject", "ob_digit"))
else:
    put("obj.long_size", off("_longobject", "long_value.lv_tag"))
    put("obj.long_digits", off("_longobject", "long_value.ob_digit"))
put("obj.type_basicsize", off("_typeobject", "tp_basicsize"))
put("obj.type_flags", off("_typeobject", "tp_flags"))
put("obj.type_dictoffset", off("_typeobject", "tp_dictoffset"))
put("obj.type_cached_keys", off("_heaptypeobject", "ht_cached_keys"))
# Code constants, for naming code at registration (bpf_sampler_seed).
put("obj.code_consts", off(CO, "co_consts"))
put("obj.tuple_size", off("PyTupleObject", "ob_base.ob_size"))
put("obj.tuple_items", off("PyTupleObject", "ob_item"))
# dump --locals (struct py_locals, "locals." keys): fast locals and their
# names, and the value layouts shown.
if ver <= (3, 10):
    put("locals.frame_localsplus", off(FR, "f_localsplus"))
    put("locals.code_varnames", off(CO, "co_varnames"))
    put("locals.code_cellvars", off(CO, "co_cellvars"))
    put("locals.code_freevars", off(CO, "co_freevars"))
else:
    put("locals.frame_localsplus", off(FR, "localsplus"))
    put("locals.code_localsplusnames", off(CO, "co_localsplusnames"))
    put("locals.code_localspluskinds", off(CO, "co_localspluskinds"))
put("locals.type_name", off("_typeobject", "tp_name"))
put("locals.float_value", off("PyFloatObject", "ob_fval"))
put("locals.cell_ref", off("PyCellObject", "ob_ref"))
# record --exception (struct py_offsets): the thread's exception in flight
# (curexc_type, a type, up to 3.11; current_exception, an exception, from
# 3.12), its exc_info pointer and exc_value's place in a _PyErr_StackItem.
if ver <= (3, 11):
    put("tstate_cur_exc", off(TS, "curexc_type"))
    put("cur_exc_is_type", 1)
else:
    put("tstate_cur_exc", off(TS, "current_exception"))
put("tstate_exc_info", off(TS, "exc_info"))
if ver <= (3, 10):
    put("stackitem_exc_value", off("_err_stackitem", "exc_value"))
# Threads spawned while sampled (struct py_offsets, bpf/thread_watch.bpf.h):
# where _thread's struct bootstate keeps the new thread's state.
put("boot_tstate", off("bootstate", "tstate"))
# [gc] frames (struct py_extra): gc.collecting, in _PyRuntime in 3.8, in
# the interpreter from 3.9.
if ver <= (3, 8):
    put("gc_in_runtime", 1)
    put("gc_collecting", off(RT, "gc.collecting"))
else:
    put("gc_collecting", off(IS, "gc.collecting"))
# asyncio (struct py_async, "async." keys), 3.11-3.13: what py_offsets.c
# tabulates, and the fixed offsets py_asyncio.c uses (TaskObj's first
# callback, a bound method's self, a weakref's referent, lists and sets),
# and what the kernel reads for a task's first awaiter (bpf/task_walker.h:
# the list of further callbacks, the built-in method task_wakeup's
# definition and self).
if (3, 11) <= ver <= (3, 13) and "TaskObj" in structs:
    put("async.task_size", size("TaskObj"))
    put("async.task_state", off("TaskObj", "task_state"))
    put("async.task_fut_waiter", off("TaskObj", "task_fut_waiter"))
    put("async.task_coro", off("TaskObj", "task_coro"))
    put("async.task_name", off("TaskObj", "task_name"))
    put("async.task_callback0", off("TaskObj", "task_callback0"))
    put("async.coro.gen_iframe", off("PyGenObject", "gi_iframe"))
    put("async.coro.gen_frame_state", off("PyGenObject", "gi_frame_state"))
    put("async.coro.frame_stack", off(FR, "stacktop"))
    put("async.coro.frame_localsplus", off(FR, "localsplus"))
    put("async.set_mask", off("PySetObject", "mask"))
    put("async.set_table", off("PySetObject", "table"))
    put("async.list_size", off("PyListObject", "ob_base.ob_size"))
    put("async.list_items", off("PyListObject", "ob_item"))
    put("async.weakref_object", off("_PyWeakReference", "wr_object"))
    put("async.method_self", off("PyMethodObject", "im_self"))
    put("async.task_callbacks", off("TaskObj", "task_callbacks"))
    put("async.cfunc_ml", off("PyCFunctionObject", "m_ml"))
    put("async.cfunc_self", off("PyCFunctionObject", "m_self"))
print("\n".join(out))
EOF
done

# 3.14 and 3.15 (Debian sid chroot, no DWARF): what _Py_DebugOffsets does
# not carry and py_offsets.c supplies from the headers is measured here on a
# live interpreter instead, by finding where known values sit in objects:
# co_flags in code objects, where a compact str's characters begin, a
# class's cached keys, co_consts and a tuple's size and items.
SID="${SID:-/var/cache/bpfpy/sid}"
PROBE='import ctypes, sys
def mem(o, n):
    return ctypes.string_at(id(o), n)
def find_int(objs, attr):
    hits = [k for k in range(16, 200, 4)
            if all(int.from_bytes(mem(o, 200)[k:k + 4], "little", signed=True) == getattr(o, attr)
                   for o in objs)]
    assert len(hits) == 1, (attr, hits)
    return hits[0]
def a(x): return x
def b(*x, **y): yield x
async def c(p, q=1): return p
def d(p, q, r, s, *, t): pass
codes = [f.__code__ for f in (a, b, c, d)]
def data_off(s, enc):
    raw = s.encode(enc)
    hits = [k for k in range(16, 128) if mem(s, 160)[k:k + len(raw)] == raw]
    return hits[0]
m = "%d.%d" % sys.version_info[:2]
print(m, "code_flags", find_int(codes, "co_flags"))
print(m, "code_argcount", find_int(codes, "co_argcount"))
print(m, "ascii_data_off", data_off("".join(map(chr, range(97, 123))) * 2, "ascii"))
print(m, "compact_data_off", data_off("".join(map(chr, range(0xc0, 0xff))), "latin-1"))
# ht_cached_keys: the word of a class that points at split keys (dk_kind 2)
# whose first key is the first attribute of its instances. Via a pipe,
# which answers EFAULT for a wild pointer instead of crashing.
import os
rfd, wfd = os.pipe()
def word(addr, n=8):
    os.write(wfd, (ctypes.c_char * n).from_address(addr))
    return int.from_bytes(os.read(rfd, n), "little")
class C:
    def __init__(self):
        self.first_attribute_x = 1
objs = [C(), C()]
key = sys.intern("first_attribute_x")
hits = []
for k in range(400, type.__basicsize__, 8):
    p = word(id(C) + k)
    if p < 4096 or p % 8:
        continue
    try:
        if word(p + 10, 1) == 2 and word(p + 9, 1) < 16 and \
                word(p + 32 + (1 << word(p + 9, 1))) == id(key):
            hits.append(k)
    except OSError:
        pass
assert len(hits) == 1, hits
print(m, "obj.type_cached_keys", hits[0])
# co_consts: the word of a code object that is id(co_consts); a tuple'"'"'s
# size and first item: the words that are its len() and id(item 0).
def find_word(o, want, lo=16, hi=200):
    hits = [k for k in range(lo, hi, 8) if word(id(o) + k) == want]
    assert len(hits) == 1, (want, hits)
    return hits[0]
mod = compile("def f(): pass\nx = 12345", "m", "exec")
print(m, "obj.code_consts", find_word(mod, id(mod.co_consts)))
t = tuple([C, "x", 3 ** 40])
print(m, "obj.tuple_size", find_word(t, 3, 8, 48))
print(m, "obj.tuple_items", find_word(t, id(C), 8, 48))
# dump --locals: a cell'"'"'s ob_ref is the word that is id() of its content;
# a float'"'"'s ob_fval the 8 bytes that pack its value.
import struct
def closure():
    inner = C
    return (lambda: inner).__closure__[0]
print(m, "locals.cell_ref", find_word(closure(), id(C), 8, 32))
fv = 1234.0625
print(m, "locals.float_value", [k for k in range(8, 32, 8) if mem(fv, 32)[k:k + 8] == struct.pack("<d", fv)][0])
# record --exception: in an except block, exc_info is the word of the
# thread state that points to a word (its own exc_state) holding id() of
# the exception handled.
def safe(addr, n=8):
    try:
        return word(addr, n)
    except OSError:
        return None
ctypes.pythonapi.PyThreadState_Get.restype = ctypes.c_void_p
ts = ctypes.pythonapi.PyThreadState_Get()
try:
    raise KeyError("probe")
except KeyError as e:
    hits = [k for k in range(8, 2048, 8)
            if (lambda p: p is not None and ts <= p < ts + 4096 and p != ts + k and safe(p) == id(e))(safe(ts + k))]
assert len(hits) == 1, hits
print(m, "tstate_exc_info", hits[0])
# gc.collecting: the ints of the interpreter that are 1 inside a gc
# callback and 0 outside (several are; the header probe below must name one).
import gc
ctypes.pythonapi.PyInterpreterState_Get.restype = ctypes.c_void_p
interp = ctypes.pythonapi.PyInterpreterState_Get()
ints = lambda: [safe(interp + k, 4) for k in range(0, 16384, 4)]
seen = {}
cb = lambda phase, info: seen.setdefault(phase, ints())
gc.callbacks.append(cb)
gc.collect()
gc.callbacks.remove(cb)
after = ints()
print("gc_candidates", " ".join(str(4 * i) for i, (a, b) in enumerate(zip(seen["start"], after)) if a == 1 and b == 0))'
for m in 3.14 3.15; do
	if [ -x "$SID/usr/bin/python$m" ]; then
		echo "# $m measured live on $SID/usr/bin/python$m ($(chroot "$SID" "python$m" -c 'import platform; print(platform.python_version())')) with ctypes" >>"$tmp/out"
		chroot "$SID" "python$m" -c "$PROBE" >"$tmp/live"
		grep -v '^gc_candidates' "$tmp/live" >>"$tmp/out"
		# What no live probe can catch (current_exception is NULL whenever
		# Python code runs) and gc.collecting among its candidates: offsetof
		# from the headers of the same release (libpython3.X-dev), built on
		# the host against them.
		mkdir -p "$tmp/inc/x86_64-linux-gnu"
		ln -sfn "$SID/usr/include/x86_64-linux-gnu/python$m" "$tmp/inc/x86_64-linux-gnu/python$m"
		cat >"$tmp/hdr.c" <<'EOF'
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#include "internal/pycore_interp.h"
int main(void)
{
	printf("tstate_cur_exc %zu\ngc_collecting %zu\n", offsetof(PyThreadState, current_exception),
	       offsetof(PyInterpreterState, gc) + offsetof(struct _gc_runtime_state, collecting));
	return 0;
}
EOF
		${CC:-cc} -w -I"$SID/usr/include/python$m" -I"$tmp/inc" "$tmp/hdr.c" -o "$tmp/hdr"
		echo "# $m tstate_cur_exc and gc_collecting: offsetof from $SID/usr/include/python$m" >>"$tmp/out"
		"$tmp/hdr" | sed "s/^/$m /" >>"$tmp/out"
		gc_at=$(awk '$2 == "gc_collecting" { print $3 }' "$tmp/out" | tail -n 1)
		grep '^gc_candidates' "$tmp/live" | tr ' ' '\n' | grep -qx "$gc_at" ||
			{ echo "measure_offsets: $m: gc.collecting at $gc_at is not 1 in a gc callback" >&2; exit 1; }
	else
		echo "measure_offsets: $SID/usr/bin/python$m absent, $m skipped" >&2
	fi
done
mkdir -p "$(dirname "$OUT")"
mv "$tmp/out" "$OUT"
echo "measure_offsets: wrote $OUT" >&2
