/* SPDX-License-Identifier: MIT */
/*
 * Everything bpfpy knows about CPython layouts, in one place.
 *
 * Up to 3.12 the layouts come from tables measured with pahole on real
 * builds (scripts/measure_offsets.sh re-measures them; the unit test holds
 * the tables to that file). From 3.13 the target describes itself: _PyRuntime
 * begins with _Py_DebugOffsets, and py_offsets_from_debug() turns those bytes
 * into the same struct py_offsets, so nothing below the caller cares which
 * path a version took.
 */
#ifndef PY_OFFSETS_H
#define PY_OFFSETS_H

#include <stddef.h>
#include <stdint.h>

#include "bpfpy.h"
#include "diag.h"

/* Bytes to read at &_PyRuntime for py_offsets_from_debug(). The struct is
 * 584 bytes in 3.13, 760 in 3.14 and 888 in 3.15; the slack lets a future
 * minor be recognised (and refused by name) rather than reported truncated.
 * _PyRuntime itself is far larger, so the read never leaves it. */
#define PY_DEBUG_OFFSETS_READ_SIZE 2048

/* Oldest and newest minor versions with a known layout. */
#define PY_OFFSETS_MIN_MINOR 8
#define PY_OFFSETS_MAX_MINOR 15

/*
 * PY_VERSION_HEX, decoded here and nowhere else: 0xMMmmuuLS (major, minor,
 * micro, level 0xa/0xb/0xc/0xf, serial). Every other file asks the
 * predicates below, or a field of struct py_offsets, instead of comparing
 * versions itself, so that a fact about a release is written down once.
 */
#define PY_MAJOR(h)	  (((uint32_t)(h) >> 24) & 0xff)
#define PY_MINOR(h)	  (((uint32_t)(h) >> 16) & 0xff)
#define PY_MICRO(h)	  (((uint32_t)(h) >> 8) & 0xff)
#define PY_LEVEL(h)	  (((uint32_t)(h) >> 4) & 0xf)
#define PY_SERIAL(h)	  ((uint32_t)(h)&0xf)
#define PY_LEVEL_FINAL	  0xf
#define PY_MAJOR_MINOR(h) (((uint32_t)(h) >> 16) & 0xffff) /* major << 8 | minor */
/* The PY_VERSION_HEX of major.minor.0 with level and serial 0: compares
 * below every release of that minor. */
#define PY_VERSION(major, minor) ((uint32_t)(major) << 24 | (uint32_t)(minor) << 16)

/* A 3.x minor at least / at most m (false for any other major). */
static inline int py_at_least(uint32_t hex, unsigned minor)
{
	return PY_MAJOR(hex) > 3 || (PY_MAJOR(hex) == 3 && PY_MINOR(hex) >= minor);
}

/* Looks like a CPython 3 PY_VERSION_HEX (a value read from Py_Version). */
static inline int py_version_plausible(uint32_t hex)
{
	return PY_MAJOR(hex) == 3 && PY_MINOR(hex) < 100;
}

/* Old enough to have no layout here at all (before 3.8, or not 3.x). */
static inline int py_version_too_old(uint32_t hex)
{
	return PY_MAJOR(hex) != 3 || PY_MINOR(hex) < PY_OFFSETS_MIN_MINOR;
}

/* The final release of hex's minor: what a version known only as "3.X"
 * (from a file name or from API symbols) is read as. */
static inline uint32_t py_version_final_of(uint32_t hex)
{
	return (hex & 0xffff0000u) | (PY_LEVEL_FINAL << 4);
}

/*
 * 3.13+: _PyRuntime starts with _Py_DebugOffsets and the layout comes from
 * py_offsets_from_debug(); before, from the measured tables.
 */
static inline int py_has_debug_offsets(uint32_t hex)
{
	return py_at_least(hex, 13);
}

/*
 * PyASCIIObject.state, identical in every GIL build from 3.8 to 3.15
 * (checked in Include/cpython/unicodeobject.h of each): interned:2, kind:3,
 * compact:1, ascii:1, then ready (<= 3.11) or statically_allocated (3.12+).
 * Free-threaded 3.13+ builds make interned a whole byte and shift the rest;
 * those builds are refused before we get here. pystr.c reads strings with
 * these; the kernel gets the compact-ASCII test as str_ascii_mask/value.
 */
#define PY_STR_STATE_KIND(s)	(((s) >> 2) & 7)
#define PY_STR_STATE_COMPACT(s) (((s) >> 5) & 1)
#define PY_STR_STATE_ASCII(s)	(((s) >> 6) & 1)
#define PY_STR_ASCII_MASK	(7u << 2 | 1u << 5 | 1u << 6)
#define PY_STR_ASCII_VALUE	(1u << 2 | 1u << 5 | 1u << 6) /* kind 1, compact, ascii */

/* Line-table formats (linetable.h decodes them). */
enum py_linetable_format {
	PY_LINETABLE_LNOTAB, /* <= 3.9: co_lnotab */
	PY_LINETABLE_PEP626, /* 3.10: co_linetable, PEP 626 */
	PY_LINETABLE_PEP657, /* 3.11+: co_linetable, PEP 657 location table */
};

static inline enum py_linetable_format py_linetable_format(uint32_t hex)
{
	if (py_at_least(hex, 11))
		return PY_LINETABLE_PEP657;
	if (py_at_least(hex, 10))
		return PY_LINETABLE_PEP626;
	return PY_LINETABLE_LNOTAB;
}

/*
 * USDT probes of provider "python" (Include/pydtrace.d), for builds
 * configured --with-dtrace (Debian's are; pyenv's are not). 3.12 dropped
 * function__entry/return and line with the old tracing machinery (PEP
 * 669); 3.15 restored function__entry/return on top of sys.monitoring.
 */
static inline int py_usdt_has_call_probes(uint32_t hex)
{
	return !py_at_least(hex, 12) || py_at_least(hex, 15);
}

static inline int py_usdt_has_line_probe(uint32_t hex)
{
	return !py_at_least(hex, 12);
}

/*
 * Whether function__entry/return fire for every Python call. Up to 3.10
 * every Python frame runs its own _PyEval_EvalFrameDefault, which fires
 * them; 3.11 inlined Python-to-Python calls into the caller's evaluation
 * loop, so they fire only for frames entered from C; 3.15 fires them for
 * every call again.
 */
static inline int py_usdt_calls_complete(uint32_t hex)
{
	return py_usdt_has_call_probes(hex) && PY_MAJOR_MINOR(hex) != 0x030b;
}

/* A function every Python frame runs through, for --uprobe examples. */
static inline const char *py_eval_frame_symbol(uint32_t hex)
{
	return py_at_least(hex, 11) ? "_PyEval_EvalFrameDefault" : "PyEval_EvalFrameEx";
}

/*
 * --native splicing (user/native/splice.c): is native function sym one
 * C-level call of the evaluation loop, which runs the Python frames up to
 * the next entry marker (FRAME_INSTR_ENTRY)? On 3.8-3.15 that is
 * _PyEval_EvalFrameDefault, with any compiler-made part of it (GCC's
 * ".cold", ".part.N", ".lto_priv.N", ".constprop.N", ".isra.N"). Its
 * callers (_PyEval_EvalFrame, _PyEval_Vector, PyEval_EvalFrameEx) own no
 * frame and stay native frames.
 */
int py_native_is_eval(uint32_t hex, const char *sym);
/* The i-th name of an eval-loop function of any version, NULL past the
 * last: for the symbolizer, which names parts of them in stripped files
 * before it knows a process's version. */
const char *py_native_eval_name(size_t i);

/*
 * Threads born and ended while sampled (bpf/thread_watch.bpf.h): the
 * function _thread spawns a thread with (PyThread_start_new_thread up to
 * 3.12, PyThread_start_joinable_thread from 3.13; NULL for a version whose
 * facts are not known), and the one every thread state goes through before
 * it is freed. py_thread_hook_names lists every name either may be, NULL
 * ended (py_binary looks them up once per file). The bootstate layouts are
 * struct py_offsets' boot_* fields.
 */
#define PY_TSTATE_CLEAR_SYMBOL "PyThreadState_Clear"
#define PY_THREAD_HOOK_NAMES   3
const char *py_thread_spawn_symbol(uint32_t hex);
extern const char *const py_thread_hook_names[PY_THREAD_HOOK_NAMES + 1];

/*
 * API symbols each release added, newest first: the major.minor of a
 * binary without Py_Version (before 3.11) when its file name says nothing.
 * A binary with _PyRuntime but none of them is PY_RUNTIME_FIRST (3.7).
 */
struct py_api_marker {
	const char *sym;
	uint32_t hex;
};
extern const struct py_api_marker py_api_markers[];
extern const size_t py_api_nmarkers;
#define PY_RUNTIME_FIRST PY_VERSION(3, 7)

/*
 * Layouts for reading Python objects (dicts, ints, instance attributes) out
 * of a live target: user/python/pyobj.c, which reads the threading module's
 * names (py_threads.c). None of this reaches the kernel. 3.8-3.12 from the
 * tables (pahole on the pyenv builds); 3.13+ from _Py_DebugOffsets where it
 * carries the field, else from the constants of that minor, measured.
 * Entries of a dict's keys are (hash, key, value), 24 bytes, in every
 * version; 3.11+ unicode and split keys drop the hash (16 bytes).
 */
enum py_keys_model {
	PY_KEYS_NONE = 0, /* unknown: nothing is read */
	PY_KEYS_SIZE,	  /* 3.8-3.10: dk_size slots, the index width follows from it */
	PY_KEYS_LOG2,	  /* 3.11+: dk_log2_size, dk_log2_index_bytes, dk_kind */
};
#define PY_DICT_ENTRY_SIZE	   24
#define PY_DICT_UNICODE_ENTRY_SIZE 16
#define PY_DICT_KIND_GENERAL	   0 /* 3.11+ dk_kind; 1 unicode and 2 split keep no hash */

/* Where an instance keeps its attributes. */
enum py_attrs_model {
	PY_ATTRS_NONE = 0,
	PY_ATTRS_DICTOFFSET, /* <= 3.10: a dict at obj + tp_dictoffset */
	/* 3.11 (flag managed_dict): a values array at obj + managed_values, or
	 * else a dict at obj + managed_dict (both in the pre-header). */
	PY_ATTRS_VALUES_PTR,
	/* 3.12: one word at obj + managed_dict: a dict, or a values array's
	 * address - 1 (low bit set). */
	PY_ATTRS_DORV,
	/* 3.13+: a dict at obj + managed_dict, or else (flag inline_values)
	 * the values inline at obj + tp_basicsize, used while "valid". */
	PY_ATTRS_INLINE,
};

struct py_objlayout {
	uint32_t interp_modules; /* PyInterpreterState: sys.modules (3.12+ imports.modules) */
	uint16_t module_dict;	 /* PyModuleObject.md_dict */
	uint16_t dict_used, dict_keys, dict_values; /* PyDictObject ma_used, ma_keys, ma_values */
	uint8_t keys_model;			    /* enum py_keys_model */
	uint8_t attrs_model;			    /* enum py_attrs_model */
	uint8_t long_tagged; /* 3.12+: lv_tag = ndigits << 3 | sign (0 +, 1 zero, 2 -) */
	/* 3.13+: PyDictValues starts with capacity, size, embedded, valid
	 * bytes; 0 before (no header, values_items 0). */
	uint8_t values_header;
	uint8_t values_capacity, values_valid, values_items;
	uint8_t pad0;
	uint16_t keys_size;	   /* dk_size (SIZE) or dk_log2_size (LOG2, a byte) */
	uint16_t keys_index_bytes; /* LOG2: dk_log2_index_bytes (a byte) */
	uint16_t keys_kind;	   /* LOG2: dk_kind (a byte) */
	uint16_t keys_nentries;
	uint16_t keys_indices; /* dk_indices: the index table, then the entries */
	uint16_t long_size;    /* ob_size (<= 3.11) or lv_tag */
	uint16_t long_digits;  /* ob_digit: 30-bit digits in uint32, least first */
	uint16_t type_basicsize, type_flags, type_dictoffset;
	uint16_t type_cached_keys;   /* PyHeapTypeObject.ht_cached_keys (shared keys) */
	int16_t managed_dict;	     /* 3.11+: from the object (negative: pre-header) */
	int16_t managed_values;	     /* 3.11: the values pointer */
	uint32_t flag_managed_dict;  /* tp_flags bit: Py_TPFLAGS_MANAGED_DICT (3.11+) */
	uint32_t flag_inline_values; /* Py_TPFLAGS_INLINE_VALUES (3.13+) */
	/* Constants of code objects, for naming code before it runs
	 * (bpf_sampler_seed): PyCodeObject.co_consts, a tuple, whose ob_size
	 * and ob_item (3.14 put ob_hash before the items). 0: unknown. */
	uint16_t code_consts;
	uint16_t tuple_size, tuple_items;
	uint16_t pad1;
};

/*
 * asyncio (record --async, dump --async: user/python/py_asyncio.c and
 * bpf/task_walker.h). Two models:
 *   PY_ASYNC_SETS  3.11-3.13: tasks are found through the asyncio.tasks
 *                  module's sets (the _all_tasks WeakSet on 3.11,
 *                  _scheduled_tasks and _eager_tasks on 3.12/3.13), the
 *                  running ones through its _current_tasks dict, and who
 *                  awaits whom through each task's fut_waiter.
 *   PY_ASYNC_DEBUG 3.14+: the _asyncio module describes itself in its
 *                  .AsyncioDebug section (py_async_from_section): per-thread
 *                  task lists and running task, each task's awaited_by.
 * The C TaskObj layout of 3.11-3.13 is measured with pahole on the pyenv
 * builds (scripts/measure_offsets.sh, "async." keys of
 * tests/data/pahole_offsets.txt). Offsets a version lacks are 0.
 */
enum py_async_model {
	PY_ASYNC_NONE = 0, /* <= 3.10, or not described */
	PY_ASYNC_SETS,
	PY_ASYNC_DEBUG,
};

/* fut_state in every version: PENDING, CANCELLED, FINISHED. */
#define PY_FUT_PENDING	 0
#define PY_FUT_CANCELLED 1
#define PY_FUT_FINISHED	 2

struct py_async {
	uint8_t model;	   /* enum py_async_model */
	uint8_t gen_owner; /* _PyInterpreterFrame.owner of a generator's frame */
	uint16_t task_size;
	uint16_t task_state, task_fut_waiter, task_coro, task_name;
	uint16_t task_awaited_by, task_is_task, task_awaited_by_is_set, task_node; /* 3.14+ */
	uint32_t tstate_running_loop, tstate_running_task, tstate_tasks_head;	   /* 3.14+ */
	uint32_t interp_tasks_head;						   /* 3.14+ */
	/* PySetObject (mask, table; entries are (key, hash), 16 bytes), a
	 * list's size and items, a weakref's referent. */
	uint16_t set_mask, set_table;
	uint16_t list_size, list_items;
	uint16_t weakref_object;
	/* FutureObj's first done callback, and a bound method's self: how a
	 * TaskGroup's child names its group (py_asyncio.c). */
	uint16_t task_callback0, method_self;
	/* 3.11-3.13, the kernel's first awaiter (bpf/task_walker.h): the
	 * further done callbacks (a list of (callback, context) tuples), and
	 * a built-in method's definition and self: the awaiting task's
	 * task_wakeup, whose definition is named wakeup_name. */
	uint16_t task_callbacks, cfunc_ml, cfunc_self;
	/* 3.14+: PySetObject.used, an awaited_by set's size. */
	uint16_t set_used;
	char wakeup_name[TASK_WAKEUP_NAME];
	struct coro_layout coro;
};

/*
 * dump --locals (user/python/pylocals.c): where a frame keeps its fast
 * locals, where their names are, and the few value layouts shown. None of
 * this reaches the kernel. Two models:
 *   PY_LOCALS_SPLIT  3.8-3.10: PyFrameObject.f_localsplus holds
 *                    len(co_varnames) locals, then len(co_cellvars) cells,
 *                    then len(co_freevars) cells (three name tuples).
 *   PY_LOCALS_KINDS  3.11+: _PyInterpreterFrame.localsplus holds one slot
 *                    per name of co_localsplusnames, whose kind is the byte
 *                    of co_localspluskinds (a bytes object): CO_FAST_*.
 * 3.8-3.12 from the tables (pahole: scripts/measure_offsets.sh, "locals."
 * keys); 3.13+ from _Py_DebugOffsets, except the cell's ob_ref (16 in every
 * version: the field after the object header; measured live on 3.14/3.15).
 */
enum py_locals_model {
	PY_LOCALS_NONE = 0,
	PY_LOCALS_SPLIT,
	PY_LOCALS_KINDS,
};

/* co_localspluskinds bits, the same from 3.11 to 3.15
 * (Include/internal/pycore_code.h; HIDDEN since 3.12: a comprehension's
 * variable inlined into its function, PEP 709). */
#define PY_FAST_HIDDEN 0x10
#define PY_FAST_LOCAL  0x20
#define PY_FAST_CELL   0x40
#define PY_FAST_FREE   0x80
/* Py_TPFLAGS_HEAPTYPE, 3.8-3.15: the value readers trust only static
 * (built-in) types, which a program cannot define with a borrowed name. */
#define PY_TPFLAGS_HEAPTYPE (1ul << 9)

struct py_locals {
	uint8_t model; /* enum py_locals_model */
	/* 3.14+: a slot is a _PyStackRef, the low two bits a tag: 0 after
	 * masking is unbound (PyStackRef_NULL is 1), tag 3 a tagged int. */
	uint8_t ref_tagged;
	uint16_t frame_localsplus; /* f_localsplus (<= 3.10) or localsplus */
	uint16_t code_varnames, code_cellvars, code_freevars; /* SPLIT */
	uint16_t code_localsplusnames, code_localspluskinds;  /* KINDS */
	uint16_t type_name;   /* PyTypeObject.tp_name (const char *) */
	uint16_t float_value; /* PyFloatObject.ob_fval (double) */
	uint16_t cell_ref;    /* PyCellObject.ob_ref */
	uint16_t pad;
};

struct py_extra;

/* Bytes of _Py_AsyncioModuleDebugOffsets: 13 u64, in 3.14 and 3.15. */
#define PY_ASYNCIO_DEBUG_SIZE 104

/*
 * Fill x->async for o's version: 3.11-3.13 from the measured tables, 3.14+
 * from sec, the len bytes of the .AsyncioDebug section (in the _asyncio
 * module's file on 3.14, in the interpreter's on 3.15), on top of what
 * py_offsets_from_debug() left in x (generator and frame fields). Returns
 * 0, or -1 with d set: exit 2 (EXIT_USAGE) naming the version for <= 3.10,
 * EXIT_FAIL for a section that is missing, short or implausible.
 */
int py_async_offsets(const struct py_offsets *o, const void *sec, size_t len, struct py_extra *x,
		     struct diag *d);

/*
 * What the walker does not need but the caller does: where the GIL state
 * lives (for proc_config.gil_locked_addr / gil_holder_addr, see
 * py_gil_addrs()), and a few sizes for sanity checks of target memory.
 * Offsets that a version lacks are 0.
 */
struct py_extra {
	uint32_t interp_id; /* PyInterpreterState.id (int64) */
	/* 0: the GIL is global, in _PyRuntime.ceval.gil (<=3.11).
	 * 1: per interpreter (3.12+): interp->ceval.gil points to it. */
	uint8_t gil_per_interp;
	uint8_t pad[3];
	uint32_t interp_ceval_gil; /* 3.12+: interp offset of the gil pointer */
	/* <=3.11: offsets from &_PyRuntime; 3.12+: inside the GIL state. */
	uint32_t gil_locked;	      /* int, nonzero while some thread holds it */
	uint32_t gil_holder;	      /* PyThreadState *, last thread to take it */
	uint32_t frame_size;	      /* sizeof the frame struct */
	uint32_t code_size;	      /* sizeof PyCodeObject (fixed part) */
	uint32_t tstate_size;	      /* 3.13+: sizeof PyThreadState; 0 before */
	uint32_t interp_threads_main; /* 3.14+: interp->threads.main; 0 before */
	uint32_t debug_size;	      /* 3.13+: bytes of _Py_DebugOffsets; 0 before */
	/* [gc] frames: gc.collecting (an int) at this offset from &_PyRuntime
	 * (gc_in_runtime, 3.8) or from the main interpreter (3.9+); 0 unknown. */
	uint32_t gc_collecting;
	uint8_t gc_in_runtime;
	/* Objects, for threading names (obj.keys_model 0 when unknown) and
	 * code constants (obj.code_consts 0 when unknown). */
	struct py_objlayout obj;
	/* asyncio: only after py_async_offsets() (model 0 before). */
	struct py_async async;
	/* dump --locals (model 0 when unknown). */
	struct py_locals locals;
};

/*
 * Fill o and x for a target whose PY_VERSION_HEX is version_hex, from the
 * measured tables (3.8 to 3.12, final releases only). Returns 0, or -1 with
 * d set: EXIT_UNSUPPORTED for a version out of range, a pre-release, or
 * 3.13+ (whose layout must come from py_offsets_from_debug()).
 */
int py_offsets_for_version(uint32_t version_hex, struct py_offsets *o, struct py_extra *x,
			   struct diag *d);

/*
 * Fill o and x from len bytes read at &_PyRuntime of a 3.13+ target (read
 * PY_DEBUG_OFFSETS_READ_SIZE bytes, fewer if that faults: the parser says
 * how many it needed). Everything used is validated first; on failure d
 * names the offending field: EXIT_NOT_PYTHON for a missing cookie,
 * EXIT_UNSUPPORTED for a free-threaded build, a pre-release or a minor whose
 * layout is unknown, EXIT_FAIL for a truncated or implausible table.
 */
int py_offsets_from_debug(const void *buf, size_t len, struct py_offsets *o, struct py_extra *x,
			  struct diag *d);

/*
 * Absolute addresses of the GIL's "locked" flag and "last holder" pointer.
 * For gil_per_interp, gil_state is the pointer the caller read at
 * main_interp + x->interp_ceval_gil (ignored otherwise). Returns 0, or -1
 * with both set to 0 when the location is unknown (gil_state is 0).
 */
int py_gil_addrs(const struct py_extra *x, uint64_t runtime_addr, uint64_t gil_state,
		 uint64_t *locked_addr, uint64_t *holder_addr);

/*
 * The bytes of the GIL's state a thread sleeps on while it waits for the
 * GIL (its mutex, its condition variables), from the holder address
 * py_gil_addrs() gave: [*lo, *hi), for proc_config.gil_wait_lo/hi. 0, or
 * -1 with both 0 when holder_addr is 0.
 */
int py_gil_wait_range(uint64_t holder_addr, uint64_t *lo, uint64_t *hi);

/* The opcode names of hex's minor (py_opcodes.h), or NULL for a minor
 * with no generated table. */
struct py_opcode_table;
const struct py_opcode_table *py_opcodes_for(uint32_t hex);

/* "3.12.1", "3.13.0rc2", "3.14.0a1" into buf; returns buf. */
const char *py_version_str(uint32_t hex, char *buf, size_t len);

/* "3.10": only the major.minor of hex, for versions known approximately. */
const char *py_version_minor_str(uint32_t hex, char *buf, size_t len);

#endif /* PY_OFFSETS_H */
