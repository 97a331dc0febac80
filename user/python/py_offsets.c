// SPDX-License-Identifier: MIT
/*
 * CPython layouts: measured tables up to 3.12, the target's own
 * _Py_DebugOffsets from 3.13. See py_offsets.h.
 *
 * A word on trust. CPython keeps struct layouts stable within a minor
 * version for final releases, and only for those: alphas, betas and even
 * release candidates have moved fields (3.13.0rc2 grew _Py_DebugOffsets), so
 * pre-releases are refused rather than read with a layout that is probably
 * right. The debug offsets are still bytes of a live process, possibly torn
 * or corrupted; every value used is checked against the size of the struct
 * it indexes before it reaches the BPF side.
 */
#include "py_offsets.h"
#include "py_opcodes.h"

#include <stdio.h>
#include <string.h>

#define ROUND8(n) (((n) + 7u) & ~7u)

/* Owner values of _PyInterpreterFrame (Include/internal/pycore_frame.h,
 * pycore_interpframe_structs.h from 3.14). */
#define OWNER_CSTACK_312 3 /* 3.12, 3.13: C-stack shim frame */
#define OWNER_INTERP_314 3 /* 3.14+: interpreter-owned entry frame */
#define OWNER_CSTACK_314 4 /* 3.14: C stack */

/* Newest first: the first one a binary defines is its minor. */
const struct py_api_marker py_api_markers[] = {
    {"Py_NewRef", PY_VERSION(3, 10)},
    {"PyFrame_GetBack", PY_VERSION(3, 9)},
    {"PyConfig_InitPythonConfig", PY_VERSION(3, 8)},
};
const size_t py_api_nmarkers = sizeof(py_api_markers) / sizeof(py_api_markers[0]);

const char *py_version_minor_str(uint32_t hex, char *buf, size_t len)
{
	if (buf && len)
		snprintf(buf, len, "%u.%u", PY_MAJOR(hex), PY_MINOR(hex));
	return buf;
}

const char *py_version_str(uint32_t hex, char *buf, size_t len)
{
	static const char *const level[16] = {[0xa] = "a", [0xb] = "b", [0xc] = "rc"};
	unsigned lv = PY_LEVEL(hex);

	if (!buf || !len)
		return buf;
	if (lv == PY_LEVEL_FINAL)
		snprintf(buf, len, "%u.%u.%u", PY_MAJOR(hex), PY_MINOR(hex), PY_MICRO(hex));
	else
		snprintf(buf, len, "%u.%u.%u%s%u", PY_MAJOR(hex), PY_MINOR(hex), PY_MICRO(hex),
			 level[lv] ? level[lv] : "?", PY_SERIAL(hex));
	return buf;
}

/*
 * Derive the read sizes from the fields the walker reads, so that a table
 * and a parsed debug table can never disagree with the walker about how
 * much is needed. Frames: each field's real width, and never past the
 * struct, because a frame may end a data-stack chunk. Code objects: 8 bytes
 * past the highest field (the walker's code fields are all at offsets well
 * inside the struct, whose fixed part is ~200 bytes).
 */
static void read_sizes(struct py_offsets *o, uint32_t frame_size)
{
	uint32_t f = o->frame_previous + 8u, c = o->ob_type + 8u;
	uint32_t name = o->code_qualname ? o->code_qualname : o->code_name;
	const uint16_t cf[] = {o->code_argcount, o->code_flags,	 o->code_firstlineno,
			       o->code_filename, (uint16_t)name, o->code_linetable};

	o->str_ascii_mask = PY_STR_ASCII_MASK;
	o->str_ascii_value = PY_STR_ASCII_VALUE;
	if (o->frame_code + 8u > f)
		f = o->frame_code + 8u;
	if (o->frame_model == FRAME_MODEL_OBJECT) {
		if (o->frame_instr + 4u > f)
			f = o->frame_instr + 4u;
	} else {
		if (o->frame_instr + 8u > f)
			f = o->frame_instr + 8u;
		if (o->frame_owner + 1u > f)
			f = o->frame_owner + 1u;
	}
	f = ROUND8(f);
	if (frame_size && f > frame_size)
		f = frame_size;
	o->frame_read_size = (uint16_t)f;

	for (size_t i = 0; i < sizeof(cf) / sizeof(cf[0]); i++)
		if (cf[i] + 8u > c)
			c = cf[i] + 8u;
	o->code_read_size = (uint16_t)ROUND8(c);
}

/*
 * Measured tables, 3.8 to 3.12. Every number below was read with
 * `pahole -E` from the DWARF of the pyenv build named above each table;
 * scripts/measure_offsets.sh repeats the measurement and
 * tests/unit/test_py_offsets.c compares. The read sizes are derived, see
 * read_sizes().
 */
struct vtable {
	unsigned minor;
	struct py_offsets o;
	struct py_extra x;
};

/* Shared by 3.8-3.10: same str, bytes and object header. */
#define STR_BYTES_PRE312                                                                           \
	.ob_type = 8, .unicode_state = 32, .unicode_length = 16, .ascii_data_off = 48,             \
	.compact_data_off = 72, .bytes_size = 16, .bytes_data = 32

/*
 * Object layouts (struct py_objlayout), pahole on the same builds. The
 * object, type and module headers and PyDictObject are the same in 3.8 to
 * 3.15; ht_cached_keys moves with the size of PyTypeObject. co_consts
 * (56 before 3.11, 24 after: the first field past the var header) and the
 * tuple's ob_size and ob_item were also checked live on 3.8-3.15, reading
 * id(code.co_consts) and a tuple's items at them through ctypes; 3.14 put
 * ob_hash before the items (32), which its debug offsets give.
 */
#define OBJ_COMMON                                                                                 \
	.module_dict = 16, .dict_used = 16, .dict_keys = 32, .dict_values = 40, .long_size = 16,   \
	.long_digits = 24, .type_basicsize = 32, .type_flags = 168, .type_dictoffset = 288,        \
	.tuple_size = 16, .tuple_items = 24
/* 3.8-3.10: dk_size, dk_nentries, dk_indices; a dict at tp_dictoffset. */
#define OBJ_PRE311(modules, cached_keys)                                                           \
	.obj = {OBJ_COMMON,                                                                        \
		.interp_modules = (modules),                                                       \
		.code_consts = 56,                                                                 \
		.keys_model = PY_KEYS_SIZE,                                                        \
		.attrs_model = PY_ATTRS_DICTOFFSET,                                                \
		.keys_size = 8,                                                                    \
		.keys_nentries = 32,                                                               \
		.keys_indices = 40,                                                                \
		.type_cached_keys = (cached_keys)}
/* 3.11+ keys: dk_log2_size, dk_log2_index_bytes, dk_kind, dk_nentries. */
#define KEYS_LOG2                                                                                  \
	.keys_model = PY_KEYS_LOG2, .keys_size = 8, .keys_index_bytes = 9, .keys_kind = 10,        \
	.keys_nentries = 24, .keys_indices = 32, .managed_dict = -24, .flag_managed_dict = 1u << 4

/* dump --locals (struct py_locals): tp_name, ob_fval and ob_ref sit
 * right after the var header or the object header in every version. */
#define LOCALS_VALUES .type_name = 24, .float_value = 16, .cell_ref = 16
/* 3.8-3.10: co_varnames 72, co_freevars 80, co_cellvars 88. */
#define LOCALS_PRE311(localsplus)                                                                  \
	.locals = {.model = PY_LOCALS_SPLIT,                                                       \
		   .frame_localsplus = (localsplus),                                               \
		   .code_varnames = 72,                                                            \
		   .code_cellvars = 88,                                                            \
		   .code_freevars = 80,                                                            \
		   LOCALS_VALUES}
/* 3.11/3.12: localsplus 72, co_localsplusnames 96, co_localspluskinds 104. */
#define LOCALS_311                                                                                 \
	.locals = {.model = PY_LOCALS_KINDS,                                                       \
		   .frame_localsplus = 72,                                                         \
		   .code_localsplusnames = 96,                                                     \
		   .code_localspluskinds = 104,                                                    \
		   LOCALS_VALUES}

/* record --exception: tstate's curexc_type (<= 3.11, a type) or
 * current_exception (3.12+), its exc_info, and exc_value's place in a
 * _PyErr_StackItem (after exc_type up to 3.10). pahole on each library. */
#define EXC(cur, is_type, info, item)                                                              \
	.tstate_cur_exc = (cur), .cur_exc_is_type = (is_type), .tstate_exc_info = (info),          \
	.stackitem_exc_value = (item)
/* [gc] frames: gc.collecting, in _PyRuntime (3.8) or in the interpreter
 * (3.9+). pahole on each library. */
#define GC(in_runtime, collecting) .gc_in_runtime = (in_runtime), .gc_collecting = (collecting)

static const struct vtable tables[] = {
    /* /root/.pyenv/versions/3.8.18/lib/libpython3.8.so.1.0 */
    {8,
     {.frame_model = FRAME_MODEL_OBJECT,
      .lasti_is_bytes = 1,
      .runtime_interpreters_head = 32,
      .interp_next = 0,
      .interp_threads_head = 8,
      .tstate_next = 8,
      .tstate_frame = 24,
      .tstate_thread_id = 176,
      .frame_code = 32,
      .frame_previous = 24,
      .frame_instr = 104,
      .code_argcount = 16,
      .code_flags = 36,
      .code_firstlineno = 40,
      .code_filename = 104,
      .code_name = 112,
      .code_linetable = 120, /* co_lnotab */
      .code_code = 48,
      STR_BYTES_PRE312,
      EXC(88, 1, 144, 8)},
     {.interp_id = 16,
      .gil_locked = 1168,
      .gil_holder = 1160,
      .frame_size = 368,
      .code_size = 176,
      OBJ_PRE311(56, 872),
      LOCALS_PRE311(360),
      GC(1, 544)}},
    /* /root/.pyenv/versions/3.9.18/lib/libpython3.9.so.1.0 */
    {9,
     {.frame_model = FRAME_MODEL_OBJECT,
      .lasti_is_bytes = 1,
      .runtime_interpreters_head = 32,
      .interp_next = 0,
      .interp_threads_head = 8,
      .tstate_next = 8,
      .tstate_frame = 24,
      .tstate_thread_id = 176,
      .frame_code = 32,
      .frame_previous = 24,
      .frame_instr = 104,
      .code_argcount = 16,
      .code_flags = 36,
      .code_firstlineno = 40,
      .code_filename = 104,
      .code_name = 112,
      .code_linetable = 120, /* co_lnotab */
      .code_code = 48,
      STR_BYTES_PRE312,
      EXC(88, 1, 144, 8)},
     {.interp_id = 24,
      .gil_locked = 368,
      .gil_holder = 360,
      .frame_size = 368,
      .code_size = 176,
      OBJ_PRE311(856, 864),
      LOCALS_PRE311(360),
      GC(0, 816)}},
    /* /root/.pyenv/versions/3.10.13/lib/libpython3.10.so.1.0. f_lasti now
     * counts code units; tstate->frame is still the frame object chain
     * (3.10's cframe only carries use_tracing). */
    {10,
     {.frame_model = FRAME_MODEL_OBJECT,
      .runtime_interpreters_head = 32,
      .interp_next = 0,
      .interp_threads_head = 8,
      .tstate_next = 8,
      .tstate_frame = 24,
      .tstate_thread_id = 176,
      .frame_code = 32,
      .frame_previous = 24,
      .frame_instr = 96,
      .code_argcount = 16,
      .code_flags = 36,
      .code_firstlineno = 40,
      .code_filename = 104,
      .code_name = 112,
      .code_linetable = 120, /* co_linetable, PEP 626 */
      .code_code = 48,
      STR_BYTES_PRE312,
      EXC(88, 1, 144, 8)},
     {.interp_id = 24,
      .gil_locked = 368,
      .gil_holder = 360,
      .frame_size = 360,
      .code_size = 176,
      OBJ_PRE311(856, 872),
      LOCALS_PRE311(352),
      GC(0, 816)}},
    /* /root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0. Debian
     * bookworm's stripped /usr/bin/python3.11 (3.11.2) has the same layout:
     * checked on a live process by following _PyRuntime -> interpreter ->
     * thread -> cframe -> frames -> code -> co_name with these numbers. */
    {11,
     {.frame_model = FRAME_MODEL_CFRAME,
      .runtime_interpreters_head = 40,
      .interp_next = 0,
      .interp_threads_head = 16,
      .tstate_next = 8,
      .tstate_frame = 56, /* cframe */
      .cframe_current_frame = 8,
      .cframe_previous = 16,
      .tstate_native_thread_id = 160,
      .tstate_thread_id = 152,
      .frame_code = 32,
      .frame_previous = 48,
      .frame_instr = 56, /* prev_instr */
      .frame_owner = 69,
      .frame_bottom_off = 68, /* is_entry */
      .frame_bottom_mask = 1u << 1,
      .code_argcount = 56,
      .code_flags = 48,
      .code_firstlineno = 72,
      .code_filename = 112,
      .code_name = 120,
      .code_qualname = 128,
      .code_linetable = 136,
      .code_adaptive = 184,
      .code_units = 16,
      .ob_type = 8,
      .unicode_state = 32,
      .unicode_length = 16,
      .ascii_data_off = 48,
      .compact_data_off = 72,
      .bytes_size = 16,
      .bytes_data = 32,
      EXC(96, 1, 120, 0)},
     {.interp_id = 48,
      .gil_locked = 376,
      .gil_holder = 368,
      .frame_size = 80,
      .code_size = 192,
      /* 3.11 pre-header: values pointer, dict pointer, GC links. */
      .obj = {OBJ_COMMON, KEYS_LOG2, .interp_modules = 888, .attrs_model = PY_ATTRS_VALUES_PTR,
	      .code_consts = 24, .managed_values = -32, .type_cached_keys = 872},
      LOCALS_311,
      GC(0, 848)}},
    /* /root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0. The GIL moved
     * into the interpreter (PEP 684): interp->ceval.gil points to it. */
    {12,
     {.frame_model = FRAME_MODEL_CFRAME,
      .skip_owner_mask = 1u << OWNER_CSTACK_312,
      .runtime_interpreters_head = 40,
      .interp_next = 0,
      .interp_threads_head = 72,
      .tstate_next = 8,
      .tstate_frame = 56, /* cframe */
      .cframe_current_frame = 0,
      .cframe_previous = 8,
      .tstate_native_thread_id = 144,
      .tstate_thread_id = 136,
      .frame_code = 0,
      .frame_previous = 8,
      .frame_instr = 56, /* prev_instr */
      .frame_owner = 70,
      .frame_bottom_off = 70,
      .frame_bottom_mask = 1u << OWNER_CSTACK_312,
      .code_argcount = 52,
      .code_flags = 48,
      .code_firstlineno = 68,
      .code_filename = 112,
      .code_name = 120,
      .code_qualname = 128,
      .code_linetable = 136,
      .code_adaptive = 192,
      .code_units = 16,
      .ob_type = 8,
      .unicode_state = 32,
      .unicode_length = 16,
      .ascii_data_off = 40,
      .compact_data_off = 56,
      .bytes_size = 16,
      .bytes_data = 32,
      EXC(96, 0, 104, 0)},
     {.interp_id = 8,
      .gil_per_interp = 1,
      .interp_ceval_gil = 384,
      .gil_locked = 16,
      .gil_holder = 8,
      .frame_size = 80,
      .code_size = 200,
      .obj = {OBJ_COMMON, KEYS_LOG2, .interp_modules = 944, .attrs_model = PY_ATTRS_DORV,
	      .code_consts = 24, .long_tagged = 1, .type_cached_keys = 880},
      LOCALS_311,
      GC(0, 312)}},
};

const struct py_opcode_table *py_opcodes_for(uint32_t hex)
{
	for (size_t i = 0; i < py_opcode_ntables; i++)
		if (py_opcode_tables[i]->major_minor == PY_MAJOR_MINOR(hex))
			return py_opcode_tables[i];
	return NULL;
}

/*
 * record --opcodes: the byte walk_leaf_op() steps over. Up to 3.10 the eval
 * loop sets f_lasti once per dispatch, before an EXTENDED_ARG, and not again
 * for the instruction that prefix extends (ceval.c's EXTENDED_ARG case
 * goes straight to the next dispatch_opcode): f_lasti then names the
 * prefix while the instruction runs. 3.11+ sets the frame's instruction
 * pointer at the start of every instruction, the extended one included.
 */
static uint8_t op_prefix(const struct py_offsets *o)
{
	const struct py_opcode_table *t = py_opcodes_for(o->version_hex);

	return o->frame_model == FRAME_MODEL_OBJECT && t ? t->extended_arg : 0;
}

static int check_release(uint32_t hex, struct diag *d)
{
	char v[32];

	if (py_version_too_old(hex))
		return diag_set(
		    d, EXIT_UNSUPPORTED, "Python %s is not supported (bpfpy reads 3.%d to 3.%d)",
		    py_version_str(hex, v, sizeof(v)), PY_OFFSETS_MIN_MINOR, PY_OFFSETS_MAX_MINOR);
	if (PY_LEVEL(hex) != PY_LEVEL_FINAL)
		return diag_set(
		    d, EXIT_UNSUPPORTED,
		    "Python %s is a pre-release: only final releases have a known layout",
		    py_version_str(hex, v, sizeof(v)));
	return 0;
}

/*
 * Thread spawns and ends (issue 28, bpf/thread_watch.bpf.h). _thread makes
 * a new thread's state in the creator, then hands its bootstrap (t_bootstrap
 * or thread_run) and a struct bootstate to the spawn function; the new
 * thread binds the state, runs, then calls PyThreadState_Clear on it before
 * it is freed. Every name below is in .dynsym of every build, and every
 * call from _thread is a real call, not inlined (gdb breakpoints on the
 * pyenv builds, Debian's 3.11.2 and sid's 3.14 and 3.15, each state the
 * same as the one PyEval_AcquireThread got in the new thread).
 * Where bootstate keeps the state (pahole on the pyenv builds: the
 * "boot_tstate" key of tests/data/pahole_offsets.txt; gdb on the others):
 * {interp, func, args, kwargs, tstate[, runtime]} up to 3.10 and in
 * Debian's 3.11.2, the state at 32 and from 3.9 &_PyRuntime at 40;
 * {tstate, ...} in a later 3.11 (the pyenv 3.11.7) and in 3.12-3.15. A
 * 3.11 is told apart at each spawn by the word at 40. Up to 3.11 a new
 * state carries its creator's thread id until its thread sets its own;
 * from 3.12 it is unbound, thread id 0.
 */
static const struct {
	unsigned min_minor, max_minor;
	uint8_t tstate, runtime, tid_parent;
	const char *spawn;
} thread_facts[] = {
    {8, 10, 32, 0, 1, "PyThread_start_new_thread"},
    {11, 11, 0, 40, 1, "PyThread_start_new_thread"},
    {12, 12, 0, 0, 0, "PyThread_start_new_thread"},
    {13, PY_OFFSETS_MAX_MINOR, 0, 0, 0, "PyThread_start_joinable_thread"},
};

const char *const py_thread_hook_names[PY_THREAD_HOOK_NAMES + 1] = {
    "PyThread_start_new_thread", "PyThread_start_joinable_thread", PY_TSTATE_CLEAR_SYMBOL, NULL};

static void thread_hook_facts(struct py_offsets *o)
{
	unsigned minor = PY_MINOR(o->version_hex);

	for (size_t i = 0; i < sizeof(thread_facts) / sizeof(thread_facts[0]); i++)
		if (PY_MAJOR(o->version_hex) == 3 && minor >= thread_facts[i].min_minor &&
		    minor <= thread_facts[i].max_minor) {
			o->boot_tstate = thread_facts[i].tstate;
			o->boot_runtime = thread_facts[i].runtime;
			o->boot_tid_parent = thread_facts[i].tid_parent;
			o->thread_hooks = 1;
		}
}

const char *py_thread_spawn_symbol(uint32_t hex)
{
	for (size_t i = 0; i < sizeof(thread_facts) / sizeof(thread_facts[0]); i++)
		if (PY_MAJOR(hex) == 3 && PY_MINOR(hex) >= thread_facts[i].min_minor &&
		    PY_MINOR(hex) <= thread_facts[i].max_minor)
			return thread_facts[i].spawn;
	return NULL;
}

int py_offsets_for_version(uint32_t version_hex, struct py_offsets *o, struct py_extra *x,
			   struct diag *d)
{
	char v[32];

	if (check_release(version_hex, d))
		return -1;
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		if (tables[i].minor != PY_MINOR(version_hex))
			continue;
		*o = tables[i].o;
		*x = tables[i].x;
		o->version_hex = version_hex;
		read_sizes(o, x->frame_size);
		o->op_prefix = op_prefix(o);
		thread_hook_facts(o);
		return 0;
	}
	if (PY_MINOR(version_hex) <= PY_OFFSETS_MAX_MINOR)
		return diag_set(d, EXIT_UNSUPPORTED,
				"Python %s: layout comes from the target's _Py_DebugOffsets, "
				"not from a table",
				py_version_str(version_hex, v, sizeof(v)));
	return diag_set(
	    d, EXIT_UNSUPPORTED, "Python %s is not supported (bpfpy reads 3.%d to 3.%d)",
	    py_version_str(version_hex, v, sizeof(v)), PY_OFFSETS_MIN_MINOR, PY_OFFSETS_MAX_MINOR);
}

int py_gil_addrs(const struct py_extra *x, uint64_t runtime_addr, uint64_t gil_state,
		 uint64_t *locked_addr, uint64_t *holder_addr)
{
	uint64_t base = x->gil_per_interp ? gil_state : runtime_addr;

	*locked_addr = 0;
	*holder_addr = 0;
	if (!base || (!x->gil_locked && !x->gil_holder))
		return -1;
	*locked_addr = base + x->gil_locked;
	*holder_addr = base + x->gil_holder;
	return 0;
}

/*
 * struct _gil_runtime_state, the same in 3.8 to 3.15 (Python/condvar.h,
 * Include/internal/pycore_gil.h; FORCE_SWITCHING is always defined):
 * unsigned long interval; PyThreadState *last_holder; int locked; unsigned
 * long switch_number; then cond, mutex, switch_cond, switch_mutex, glibc's
 * pthread_cond_t (48 bytes) and pthread_mutex_t (40) on x86_64. take_gil()
 * sleeps on cond or mutex, drop_gil() on switch_cond: a futex word
 * anywhere in the struct is a GIL wait. last_holder is its second word.
 */
#define GIL_STATE_HOLDER_OFF 8
#define GIL_STATE_SIZE	     (32 + 2 * (48 + 40))

int py_gil_wait_range(uint64_t holder_addr, uint64_t *lo, uint64_t *hi)
{
	*lo = *hi = 0;
	if (holder_addr < GIL_STATE_HOLDER_OFF)
		return -1;
	*lo = holder_addr - GIL_STATE_HOLDER_OFF;
	*hi = *lo + GIL_STATE_SIZE;
	return 0;
}

/*
 * _Py_DebugOffsets, 3.13+. The struct is a cookie, version, free_threaded
 * and then groups of u64, one group per CPython struct, most starting with
 * that struct's size. Each known minor's field order is written out below as
 * in its header, which is the only thing we copy from CPython: the values
 * come from the target. Sources: 3.13.0 pyenv
 * include/python3.13/internal/pycore_runtime.h; 3.14.10 and 3.15.2 Debian
 * sid include/python3.1X/internal/pycore_debug_offsets.h.
 */
struct dgroup {
	const char *name;
	const char *fields; /* space separated, in order */
};

struct dlayout {
	unsigned minor;
	const struct dgroup *groups;
	size_t ngroups;
	/* What the debug offsets do not carry, from the headers of that minor.
	 * co_flags is the int right before co_argcount in 3.12+ code objects
	 * (3.11 had two shorts, co_warmup and _co_linearray_entry_size, in
	 * between: flags 48, argcount 56 in its table above);
	 * py_offsets_from_debug() checks argcount == code_flags + 4. */
	uint16_t code_flags;
	uint16_t compact_data_off; /* 0: given as compactunicodeobject_size */
	uint8_t skip_owner_mask;
	uint8_t tagged_code;
	uint8_t has_base_frame;
	uint8_t bottom_owner_mask; /* owners a chain's last frame may have */
	/* PyHeapTypeObject.ht_cached_keys where the table lacks it (0: it has
	 * it): found in 3.13.0 and 3.14.10 as the pointer to the split keys of
	 * a class's instances (3.13.0's DWARF says the same). */
	uint16_t type_cached_keys;
	/* thread_state.current_exception and exc_info where the table lacks
	 * them (0: it has current_exception, and exc_info is the next word,
	 * as in every PyThreadState since 3.12). pahole on 3.13.0; on 3.14.10
	 * offsetof in its own headers (libpython3.14-dev), and exc_info found
	 * live as the word that points to the thread's exc_state while an
	 * except block runs (scripts/measure_offsets.sh; test_py_offsets
	 * holds the numbers to it, and 3.15's to the same measurement). */
	uint16_t tstate_cur_exc;
	uint16_t tstate_exc_info;
};

static const struct dgroup g313[] = {
    {"runtime_state", "size finalizing interpreters_head"},
    {"interpreter_state", "size id next threads_head gc imports_modules sysdict builtins ceval_gil "
			  "gil_runtime_state gil_runtime_state_enabled gil_runtime_state_locked "
			  "gil_runtime_state_holder"},
    {"thread_state",
     "size prev next interp current_frame thread_id native_thread_id datastack_chunk status"},
    {"interpreter_frame", "size previous executable instr_ptr localsplus owner"},
    {"code_object", "size filename name qualname linetable firstlineno argcount localsplusnames "
		    "localspluskinds co_code_adaptive"},
    {"pyobject", "size ob_type"},
    {"type_object", "size tp_name tp_repr tp_flags"},
    {"tuple_object", "size ob_item ob_size"},
    {"list_object", "size ob_item ob_size"},
    {"dict_object", "size ma_keys ma_values"},
    {"float_object", "size ob_fval"},
    {"long_object", "size lv_tag ob_digit"},
    {"bytes_object", "size ob_size ob_sval"},
    {"unicode_object", "size state length asciiobject_size"},
    {"gc", "size collecting"},
};

static const struct dgroup g314[] = {
    {"runtime_state", "size finalizing interpreters_head"},
    {"interpreter_state",
     "size id next threads_head threads_main gc imports_modules sysdict builtins ceval_gil "
     "gil_runtime_state gil_runtime_state_enabled gil_runtime_state_locked "
     "gil_runtime_state_holder code_object_generation tlbc_generation"},
    {"thread_state",
     "size prev next interp current_frame thread_id native_thread_id datastack_chunk status"},
    {"interpreter_frame", "size previous executable instr_ptr localsplus owner stackpointer "
			  "tlbc_index"},
    {"code_object", "size filename name qualname linetable firstlineno argcount localsplusnames "
		    "localspluskinds co_code_adaptive co_tlbc"},
    {"pyobject", "size ob_type"},
    {"type_object", "size tp_name tp_repr tp_flags"},
    {"tuple_object", "size ob_item ob_size"},
    {"list_object", "size ob_item ob_size"},
    {"set_object", "size used table mask"},
    {"dict_object", "size ma_keys ma_values"},
    {"float_object", "size ob_fval"},
    {"long_object", "size lv_tag ob_digit"},
    {"bytes_object", "size ob_size ob_sval"},
    {"unicode_object", "size state length asciiobject_size"},
    {"gc", "size collecting"},
    {"gen_object", "size gi_name gi_iframe gi_frame_state"},
    {"llist_node", "next prev"},
    {"debugger_support", "eval_breaker remote_debugger_support remote_debugging_enabled "
			 "debugger_pending_call debugger_script_path debugger_script_path_size"},
};

static const struct dgroup g315[] = {
    {"runtime_state", "size finalizing interpreters_head"},
    {"interpreter_state",
     "size id next threads_head threads_main gc imports_modules sysdict builtins ceval_gil "
     "gil_runtime_state gil_runtime_state_enabled gil_runtime_state_locked "
     "gil_runtime_state_holder code_object_generation tlbc_generation"},
    {"thread_state", "size prev next interp current_frame base_frame last_profiled_frame "
		     "last_profiled_frame_seq thread_id native_thread_id datastack_chunk status "
		     "holds_gil gil_requested current_exception exc_state"},
    {"err_stackitem", "exc_value"},
    {"interpreter_frame", "size previous executable instr_ptr localsplus owner stackpointer "
			  "tlbc_index"},
    {"code_object", "size filename name qualname linetable firstlineno argcount localsplusnames "
		    "localspluskinds co_code_adaptive co_tlbc"},
    {"pyobject", "size ob_type"},
    {"type_object", "size tp_name tp_repr tp_flags tp_basicsize tp_dictoffset"},
    {"heap_type_object", "size ht_cached_keys"},
    {"tuple_object", "size ob_item ob_size"},
    {"list_object", "size ob_item ob_size"},
    {"set_object", "size used table mask"},
    {"dict_object", "size ma_keys ma_values"},
    {"float_object", "size ob_fval"},
    {"long_object", "size lv_tag ob_digit"},
    {"bytes_object", "size ob_size ob_sval"},
    {"unicode_object", "size state length asciiobject_size compactunicodeobject_size"},
    {"gc", "size collecting frame generation_stats_size generation_stats"},
    {"gen_object", "size gi_name gi_iframe gi_frame_state"},
    {"llist_node", "next prev"},
    {"debugger_support", "eval_breaker remote_debugger_support remote_debugging_enabled "
			 "debugger_pending_call debugger_script_path debugger_script_path_size"},
};

#define NG(a) (sizeof(a) / sizeof((a)[0]))

static const struct dlayout layouts[] = {
    /* 3.13: owner 3 is the C-stack shim, whose f_executable may be None. */
    {13, g313, NG(g313), 48, 56, 1u << OWNER_CSTACK_312, 0, 0, 1u << OWNER_CSTACK_312, 880, 112,
     120},
    /* 3.14: f_executable is a tagged _PyStackRef; owners 3 and 4 are
     * entry/C-stack frames without Python code of their own. */
    {14, g314, NG(g314), 48, 56, (1u << OWNER_INTERP_314) | (1u << OWNER_CSTACK_314), 1, 0,
     1u << OWNER_INTERP_314, 880, 112, 120},
    /* 3.15: the C-stack owner is gone; every chain ends at base_frame. */
    {15, g315, NG(g315), 48, 0, 1u << OWNER_INTERP_314, 1, 1, 0, 0, 0, 0},
};

/* Slot (u64 index into the blob) of group.field; -1 if the layout lacks it.
 * Slots 0-2 are cookie, version and free_threaded. */
static int slot_of(const struct dlayout *L, const char *group, const char *field)
{
	size_t flen = strlen(field);
	int slot = 3;

	for (size_t g = 0; g < L->ngroups; g++) {
		const char *p = L->groups[g].fields;
		int match = !strcmp(L->groups[g].name, group);

		while (*p) {
			const char *e = strchr(p, ' ');
			size_t n = e ? (size_t)(e - p) : strlen(p);

			if (match && n == flen && !memcmp(p, field, n))
				return slot;
			slot++;
			p += n;
			while (*p == ' ')
				p++;
		}
	}
	return -1;
}

static size_t layout_bytes(const struct dlayout *L)
{
	size_t n = 3;

	for (size_t g = 0; g < L->ngroups; g++)
		for (const char *p = L->groups[g].fields; *p; p++)
			if (*p != ' ' && (p == L->groups[g].fields || p[-1] == ' '))
				n++;
	return n * 8;
}

struct dparse {
	const struct dlayout *L;
	const uint8_t *buf;
	char ver[32];
	struct diag *d;
};

static uint64_t slot_val(const struct dparse *p, int slot)
{
	uint64_t v;

	memcpy(&v, p->buf + (size_t)slot * 8, sizeof(v));
	return v;
}

/* Plausible sizes of the structs whose fields are used. Generous: they are
 * there to catch a table read at the wrong address or with the wrong
 * layout, not to second-guess CPython. */
static const struct {
	const char *group;
	uint64_t min, max;
} size_range[] = {
    {"runtime_state", 1024, 64u << 20}, {"interpreter_state", 1024, 64u << 20},
    {"thread_state", 128, 64u << 10},	{"interpreter_frame", 80, 256},
    {"code_object", 128, 1024},		{"pyobject", 16, 64},
    {"bytes_object", 24, 128},		{"unicode_object", 32, 256},
};

static int group_size(const struct dparse *p, const char *group, uint64_t *size)
{
	int s = slot_of(p->L, group, "size");

	if (s < 0)
		return diag_set(p->d, EXIT_FAIL, "bpfpy: no %s.size in the 3.%u layout", group,
				p->L->minor);
	*size = slot_val(p, s);
	for (size_t i = 0; i < NG(size_range); i++) {
		if (strcmp(size_range[i].group, group))
			continue;
		if (*size < size_range[i].min || *size > size_range[i].max)
			return diag_set(
			    p->d, EXIT_FAIL,
			    "_Py_DebugOffsets of Python %s: %s.size = %llu is implausible "
			    "(expected %llu..%llu)",
			    p->ver, group, (unsigned long long)*size,
			    (unsigned long long)size_range[i].min,
			    (unsigned long long)size_range[i].max);
	}
	return 0;
}

/*
 * group.field, a width-byte member of the group's struct: it must lie
 * inside the struct, and fit the u16 of struct py_offsets unless wide (a
 * py_extra field).
 */
static int field(const struct dparse *p, const char *group, const char *name, unsigned width,
		 int wide, uint32_t *out)
{
	int s = slot_of(p->L, group, name);
	uint64_t size, v;

	if (s < 0)
		return diag_set(p->d, EXIT_FAIL, "bpfpy: no %s.%s in the 3.%u layout", group, name,
				p->L->minor);
	if (group_size(p, group, &size))
		return -1;
	v = slot_val(p, s);
	/* Not v + width > size: a hostile v near 2^64 wraps that sum to a
	 * small number and would pass, truncated to 32 bits below. */
	if (v > size || width > size - v)
		return diag_set(p->d, EXIT_FAIL,
				"_Py_DebugOffsets of Python %s: %s.%s = %llu is past the end of "
				"the struct (%s.size %llu)",
				p->ver, group, name, (unsigned long long)v, group,
				(unsigned long long)size);
	if (!wide && v > UINT16_MAX)
		return diag_set(p->d, EXIT_UNSUPPORTED,
				"_Py_DebugOffsets of Python %s: %s.%s = %llu does not fit bpfpy's "
				"16-bit offsets",
				p->ver, group, name, (unsigned long long)v);
	*out = (uint32_t)v;
	return 0;
}

#define F16(grp, name, width, dst)                                                                 \
	do {                                                                                       \
		uint32_t v_;                                                                       \
		if (field(&p, grp, name, width, 0, &v_))                                           \
			return -1;                                                                 \
		(dst) = (uint16_t)v_;                                                              \
	} while (0)

#define F32(grp, name, width, dst)                                                                 \
	do {                                                                                       \
		if (field(&p, grp, name, width, 1, &(dst)))                                        \
			return -1;                                                                 \
	} while (0)

/*
 * x->obj for 3.13+: what the debug offsets carry, the rest from the
 * headers of 3.13 to 3.15 (the same there). Checked like every other field
 * (a value outside its struct refuses the target, naming it); a minor
 * whose ht_cached_keys is unknown leaves obj zeroed: names not read.
 */
static int obj_from_debug(const struct dparse *p0, struct py_objlayout *ob)
{
	struct dparse p = *p0;

	/* The 3.12 shapes, with 3.13's inline values and PyDictValues header. */
	*ob = (struct py_objlayout){OBJ_COMMON,
				    KEYS_LOG2,
				    .attrs_model = PY_ATTRS_INLINE,
				    .long_tagged = 1,
				    .values_header = 1,
				    .values_capacity = 0,
				    .values_valid = 3,
				    .values_items = 8,
				    .flag_inline_values = 1u << 2,
				    .code_consts = 24, /* right after the var header */
				    .type_cached_keys = p.L->type_cached_keys};
	F32("interpreter_state", "imports_modules", 8, ob->interp_modules);
	F16("dict_object", "ma_keys", 8, ob->dict_keys);
	F16("dict_object", "ma_values", 8, ob->dict_values);
	F16("long_object", "lv_tag", 8, ob->long_size);
	F16("long_object", "ob_digit", 4, ob->long_digits);
	F16("tuple_object", "ob_size", 8, ob->tuple_size);
	F16("tuple_object", "ob_item", 8, ob->tuple_items);
	F16("type_object", "tp_flags", 8, ob->type_flags);
	if (slot_of(p.L, "type_object", "tp_basicsize") >= 0) {
		F16("type_object", "tp_basicsize", 8, ob->type_basicsize);
		F16("type_object", "tp_dictoffset", 8, ob->type_dictoffset);
	}
	if (slot_of(p.L, "heap_type_object", "ht_cached_keys") >= 0)
		F16("heap_type_object", "ht_cached_keys", 8, ob->type_cached_keys);
	if (!ob->type_cached_keys)
		memset(ob, 0, sizeof(*ob));
	return 0;
}

/*
 * x->locals for 3.13+: the frame's localsplus, the code object's names and
 * kinds, tp_name and ob_fval from the debug offsets (every minor from 3.13
 * carries them); the cell's ob_ref from LOCALS_VALUES (measured live on
 * 3.14 and 3.15). 3.14 made the slots _PyStackRefs.
 */
static int locals_from_debug(const struct dparse *p0, struct py_locals *l)
{
	struct dparse p = *p0;

	*l = (struct py_locals){
	    .model = PY_LOCALS_KINDS, .ref_tagged = p.L->tagged_code, LOCALS_VALUES};
	F16("interpreter_frame", "localsplus", 8, l->frame_localsplus);
	F16("code_object", "localsplusnames", 8, l->code_localsplusnames);
	F16("code_object", "localspluskinds", 8, l->code_localspluskinds);
	F16("type_object", "tp_name", 8, l->type_name);
	F16("float_object", "ob_fval", 8, l->float_value);
	return 0;
}

/*
 * What asyncio needs of 3.14+ from the debug offsets: generators, the
 * frame's stack pointer and locals, sets and lists. py_async_offsets()
 * adds the task layout from the _asyncio module's own section and sets
 * the model; 3.13 carries none of these and takes its measured row.
 */
static int async_from_debug(const struct dparse *p0, struct py_async *a)
{
	struct dparse p = *p0;

	memset(a, 0, sizeof(*a));
	if (slot_of(p.L, "gen_object", "gi_iframe") < 0 ||
	    slot_of(p.L, "interpreter_frame", "stackpointer") < 0 ||
	    slot_of(p.L, "set_object", "table") < 0)
		return 0;
	F16("gen_object", "gi_iframe", 8, a->coro.gen_iframe);
	F16("gen_object", "gi_frame_state", 1, a->coro.gen_frame_state);
	F16("interpreter_frame", "executable", 8, a->coro.frame_code);
	F16("interpreter_frame", "instr_ptr", 8, a->coro.frame_instr);
	F16("interpreter_frame", "stackpointer", 8, a->coro.frame_stack);
	F16("interpreter_frame", "localsplus", 8, a->coro.frame_localsplus);
	F16("set_object", "used", 8, a->set_used);
	F16("set_object", "mask", 8, a->set_mask);
	F16("set_object", "table", 8, a->set_table);
	F16("list_object", "ob_size", 8, a->list_size);
	F16("list_object", "ob_item", 8, a->list_items);
	a->coro.stack_is_pointer = 1;
	return 0;
}

/*
 * The header: cookie, version, build kind and this minor's layout, and
 * that the buffer holds all of it. Sets p->L and p->ver; *need is the
 * layout's size.
 */
static int debug_header(struct dparse *p, size_t len, uint64_t *version, size_t *need)
{
	struct diag *d = p->d;
	uint64_t ft;

	if (!p->buf || len < 24)
		return diag_set(d, EXIT_FAIL,
				"_Py_DebugOffsets truncated: %zu bytes, the header alone needs 24",
				len);
	if (memcmp(p->buf, "xdebugpy", 8))
		return diag_set(d, EXIT_NOT_PYTHON,
				"no _Py_DebugOffsets at _PyRuntime (cookie is not \"xdebugpy\"): "
				"not a CPython 3.13+ runtime, or a wrong address");
	*version = slot_val(p, 1);
	ft = slot_val(p, 2);
	if (*version > UINT32_MAX || PY_MAJOR(*version) != 3 ||
	    !py_has_debug_offsets((uint32_t)*version))
		return diag_set(d, EXIT_FAIL,
				"_Py_DebugOffsets: version = %#llx is not a CPython 3.13+ version",
				(unsigned long long)*version);
	py_version_str((uint32_t)*version, p->ver, sizeof(p->ver));
	if (ft)
		return diag_set(d, EXIT_UNSUPPORTED,
				"Python %s: free-threaded build (Py_GIL_DISABLED) is not supported",
				p->ver);
	for (size_t i = 0; i < NG(layouts); i++)
		if (layouts[i].minor == PY_MINOR(*version))
			p->L = &layouts[i];
	if (!p->L)
		return diag_set(d, EXIT_UNSUPPORTED, "Python 3.%u debug offsets layout unknown",
				(unsigned)PY_MINOR(*version));
	if (check_release((uint32_t)*version, d))
		return -1;
	*need = layout_bytes(p->L);
	if (len < *need)
		return diag_set(d, EXIT_FAIL,
				"_Py_DebugOffsets of Python %s truncated: %zu bytes, the 3.%u "
				"layout needs %zu",
				p->ver, len, p->L->minor, *need);
	return 0;
}

/* The runtime's and the interpreter's fields, with the GIL's. */
static int interp_from_debug(const struct dparse *p0, struct py_offsets *o, struct py_extra *x)
{
	struct dparse p = *p0;
	struct diag *d = p.d;
	uint32_t gil, locked, holder;

	F16("runtime_state", "interpreters_head", 8, o->runtime_interpreters_head);

	F16("interpreter_state", "next", 8, o->interp_next);
	F16("interpreter_state", "threads_head", 8, o->interp_threads_head);
	F32("interpreter_state", "id", 8, x->interp_id);
	if (slot_of(p.L, "interpreter_state", "threads_main") >= 0)
		F32("interpreter_state", "threads_main", 8, x->interp_threads_main);
	/* The debug offsets give the interpreter's own GIL state (_gil), but a
	 * subinterpreter sharing the main GIL points ceval.gil elsewhere: so
	 * keep the pointer's offset and make locked/holder relative to the
	 * state, as in 3.12. */
	F32("interpreter_state", "ceval_gil", 8, x->interp_ceval_gil);
	F32("interpreter_state", "gil_runtime_state", 0, gil);
	F32("interpreter_state", "gil_runtime_state_locked", 4, locked);
	F32("interpreter_state", "gil_runtime_state_holder", 8, holder);
	if (locked < gil || holder < gil || locked - gil > 512 || holder - gil > 512)
		return diag_set(d, EXIT_FAIL,
				"_Py_DebugOffsets of Python %s: interpreter_state."
				"gil_runtime_state_locked/holder (%u/%u) are not inside "
				"gil_runtime_state (%u)",
				p.ver, locked, holder, gil);
	x->gil_per_interp = 1;
	x->gil_locked = locked - gil;
	x->gil_holder = holder - gil;
	/* [gc] frames: the interpreter's struct _gc_runtime_state, and its
	 * collecting flag inside it. */
	{
		uint32_t gc_at, coll;

		F32("interpreter_state", "gc", 8, gc_at);
		F32("gc", "collecting", 4, coll);
		x->gc_in_runtime = 0;
		x->gc_collecting = gc_at + coll;
	}
	return 0;
}

/* The thread state's and the interpreter frame's fields, and their sizes. */
static int frames_from_debug(const struct dparse *p0, struct py_offsets *o, struct py_extra *x)
{
	struct dparse p = *p0;
	uint64_t size;

	if (group_size(&p, "thread_state", &size))
		return -1;
	x->tstate_size = (uint32_t)size;
	F16("thread_state", "next", 8, o->tstate_next);
	F16("thread_state", "current_frame", 8, o->tstate_frame);
	F16("thread_state", "thread_id", 8, o->tstate_thread_id);
	F16("thread_state", "native_thread_id", 8, o->tstate_native_thread_id);
	if (o->has_base_frame)
		F16("thread_state", "base_frame", 8, o->tstate_base_frame);
	/* record --exception: exc_value is the first field of a
	 * _PyErr_StackItem from 3.11 (err_stackitem.exc_value, 3.15, says so
	 * too, checked). */
	if (p.L->tstate_exc_info) {
		o->tstate_cur_exc = p.L->tstate_cur_exc;
		o->tstate_exc_info = p.L->tstate_exc_info;
	} else {
		int s = slot_of(p.L, "err_stackitem", "exc_value");

		F16("thread_state", "current_exception", 8, o->tstate_cur_exc);
		o->tstate_exc_info = (uint16_t)(o->tstate_cur_exc + 8);
		if (s >= 0 && slot_val(&p, s) != 0)
			return diag_set(
			    p.d, EXIT_UNSUPPORTED,
			    "_Py_DebugOffsets of Python %s: err_stackitem.exc_value is %llu, "
			    "not the struct's first field",
			    p.ver, (unsigned long long)slot_val(&p, s));
	}
	o->stackitem_exc_value = 0;
	if ((uint64_t)o->tstate_exc_info + 8 > x->tstate_size)
		o->tstate_cur_exc = o->tstate_exc_info = 0; /* not read: --exception refused */

	if (group_size(&p, "interpreter_frame", &size))
		return -1;
	x->frame_size = (uint32_t)size;
	F16("interpreter_frame", "previous", 8, o->frame_previous);
	F16("interpreter_frame", "executable", 8, o->frame_code);
	F16("interpreter_frame", "instr_ptr", 8, o->frame_instr);
	F16("interpreter_frame", "owner", 1, o->frame_owner);
	/* Measured on 3.13.0 and 3.14.10: every chain's last frame is the entry
	 * frame _PyEval_EvalFrameDefault pushed (owner 3 in both). */
	if (p.L->bottom_owner_mask) {
		o->frame_bottom_off = o->frame_owner;
		o->frame_bottom_mask = p.L->bottom_owner_mask;
	}
	return 0;
}

/* The code object's fields; co_flags from the layout, checked. */
static int code_from_debug(const struct dparse *p0, struct py_offsets *o, struct py_extra *x)
{
	struct dparse p = *p0;
	struct diag *d = p.d;
	uint64_t size;

	if (group_size(&p, "code_object", &size))
		return -1;
	x->code_size = (uint32_t)size;
	F16("code_object", "filename", 8, o->code_filename);
	F16("code_object", "name", 8, o->code_name);
	F16("code_object", "qualname", 8, o->code_qualname);
	F16("code_object", "linetable", 8, o->code_linetable);
	F16("code_object", "firstlineno", 4, o->code_firstlineno);
	F16("code_object", "argcount", 4, o->code_argcount);
	F16("code_object", "co_code_adaptive", 2, o->code_adaptive);
	/* record --opcodes: a code object's ob_size counts its code units;
	 * it sits in the var header every var object shares, which the table
	 * gives for bytes (and tuples). */
	F16("bytes_object", "ob_size", 8, o->code_units);
	/* co_flags is not in the table. It is the int right before
	 * co_argcount in every layout since 3.12 (see struct dlayout); if
	 * argcount moved, so may have flags. */
	if (o->code_argcount != p.L->code_flags + 4)
		return diag_set(
		    d, EXIT_UNSUPPORTED,
		    "_Py_DebugOffsets of Python %s: code_object.argcount = %u, expected "
		    "%u: the code object layout changed, co_flags unknown",
		    p.ver, o->code_argcount, p.L->code_flags + 4);
	o->code_flags = p.L->code_flags;
	return 0;
}

/* ob_type, bytes and str: what naming a frame reads. */
static int strings_from_debug(const struct dparse *p0, struct py_offsets *o)
{
	struct dparse p = *p0;
	struct diag *d = p.d;
	uint32_t ascii, compact = 0;

	F16("pyobject", "ob_type", 8, o->ob_type);
	F16("bytes_object", "ob_size", 8, o->bytes_size);
	F16("bytes_object", "ob_sval", 1, o->bytes_data);
	F16("unicode_object", "state", 4, o->unicode_state);
	F16("unicode_object", "length", 8, o->unicode_length);
	/* Sizes, not offsets: the data of a compact str follows its header. */
	F32("unicode_object", "asciiobject_size", 0, ascii);
	if (slot_of(p.L, "unicode_object", "compactunicodeobject_size") >= 0)
		F32("unicode_object", "compactunicodeobject_size", 0, compact);
	else
		compact = p.L->compact_data_off;
	if (ascii < 24 || ascii > UINT8_MAX || compact <= ascii || compact > UINT8_MAX)
		return diag_set(d, EXIT_FAIL,
				"_Py_DebugOffsets of Python %s: unicode_object.asciiobject_size = "
				"%u (compact %u) is implausible",
				p.ver, ascii, compact);
	o->ascii_data_off = (uint8_t)ascii;
	o->compact_data_off = (uint8_t)compact;
	return 0;
}

int py_offsets_from_debug(const void *buf, size_t len, struct py_offsets *o, struct py_extra *x,
			  struct diag *d)
{
	struct dparse p = {.buf = buf, .d = d};
	uint64_t version = 0;
	size_t need = 0;

	if (debug_header(&p, len, &version, &need))
		return -1;

	memset(o, 0, sizeof(*o));
	memset(x, 0, sizeof(*x));
	o->version_hex = (uint32_t)version;
	o->frame_model = FRAME_MODEL_DIRECT;
	o->code_may_be_other = 1;
	o->tagged_code = p.L->tagged_code;
	o->skip_owner_mask = p.L->skip_owner_mask;
	o->has_base_frame = p.L->has_base_frame;
	x->debug_size = (uint32_t)need;

	if (interp_from_debug(&p, o, x) || frames_from_debug(&p, o, x) ||
	    code_from_debug(&p, o, x) || strings_from_debug(&p, o) || obj_from_debug(&p, &x->obj) ||
	    async_from_debug(&p, &x->async) || locals_from_debug(&p, &x->locals))
		return -1;
	read_sizes(o, x->frame_size);
	thread_hook_facts(o);
	/* The walker reads a frame and a code object into fixed buffers with
	 * masked offsets: a field beyond them cannot be read at all. */
	if (o->frame_read_size > BPFPY_FRAME_BUF)
		return diag_set(d, EXIT_UNSUPPORTED,
				"Python %s: interpreter frame fields reach byte %u, beyond the %d "
				"bytes the walker reads",
				p.ver, o->frame_read_size, BPFPY_FRAME_BUF);
	if (o->code_read_size > BPFPY_CODE_BUF)
		return diag_set(d, EXIT_UNSUPPORTED,
				"Python %s: code object fields reach byte %u, beyond the %d bytes "
				"the walker reads",
				p.ver, o->code_read_size, BPFPY_CODE_BUF);
	return 0;
}

/* Every supported minor runs Python frames in one C function; a minor that
 * renames it (or the tail-calling interpreter of 3.14+ clang builds, which
 * spreads it over one function per instruction) gets its own row. */
static const struct {
	unsigned min_minor, max_minor;
	const char *name;
} eval_functions[] = {
    {8, PY_OFFSETS_MAX_MINOR, "_PyEval_EvalFrameDefault"},
};

int py_native_is_eval(uint32_t hex, const char *sym)
{
	if (!sym || PY_MAJOR(hex) != 3)
		return 0;
	for (size_t i = 0; i < sizeof(eval_functions) / sizeof(eval_functions[0]); i++) {
		size_t n = strlen(eval_functions[i].name);

		if (PY_MINOR(hex) < eval_functions[i].min_minor ||
		    PY_MINOR(hex) > eval_functions[i].max_minor ||
		    strncmp(sym, eval_functions[i].name, n))
			continue;
		/* The function itself, or a part GCC split off (name.suffix). */
		if (sym[n] == 0 || sym[n] == '.')
			return 1;
	}
	return 0;
}

const char *py_native_eval_name(size_t i)
{
	return i < sizeof(eval_functions) / sizeof(eval_functions[0]) ? eval_functions[i].name
								      : NULL;
}

/*
 * asyncio, 3.11-3.13: measured with pahole on the pyenv builds (TaskObj in
 * the _asyncio module's DWARF; PyGenObject, _PyInterpreterFrame, PySetObject
 * in libpython's): scripts/measure_offsets.sh, checked by
 * tests/unit/test_py_offsets.c. fut_waiter is the field right before coro
 * in every TaskObj from 3.11 to 3.15. Frame states from
 * Include/internal/pycore_frame.h: 3.11 has no SUSPENDED_YIELD_FROM, a
 * coroutine suspends only in an await and is then FRAME_SUSPENDED (-1);
 * 3.12-3.14 FRAME_SUSPENDED_YIELD_FROM is -1; 3.15 renumbered them (2, and
 * 3 while another thread sends into it). The awaited object is the top of
 * the suspended frame's stack (_PyGen_yf), one slot below the stack
 * pointer up to 3.14, two in 3.15 (gen_getyf there).
 */
struct async_row {
	unsigned minor;
	uint16_t task_size, task_state, task_coro, task_name, task_callbacks;
	uint16_t gen_iframe, gen_frame_state, frame_stacktop, frame_localsplus;
};

static const struct async_row async_rows[] = {
    {11, 176, 88, 136, 144, 40, 80, 75, 64, 72},
    {12, 176, 88, 136, 144, 40, 72, 67, 64, 72},
    {13, 144, 96, 120, 128, 40, 72, 67, 64, 72},
};

/* _Py_AsyncioModuleDebugOffsets, 3.14 and 3.15: 13 u64 in this order. */
enum {
	AD_TASK_SIZE,
	AD_TASK_NAME,
	AD_TASK_AWAITED_BY,
	AD_TASK_IS_TASK,
	AD_TASK_AWAITED_BY_IS_SET,
	AD_TASK_CORO,
	AD_TASK_NODE,
	AD_INTERP_SIZE,
	AD_INTERP_TASKS_HEAD,
	AD_TSTATE_SIZE,
	AD_TSTATE_RUNNING_LOOP,
	AD_TSTATE_RUNNING_TASK,
	AD_TSTATE_TASKS_HEAD,
	AD__COUNT,
};
_Static_assert(AD__COUNT * 8 == PY_ASYNCIO_DEBUG_SIZE, "13 u64");

static int async_from_section(uint32_t hex, const void *sec, size_t len, struct py_async *a,
			      struct diag *d)
{
	uint64_t v[AD__COUNT];
	char ver[32];

	py_version_str(hex, ver, sizeof(ver));
	if (!sec || len < PY_ASYNCIO_DEBUG_SIZE)
		return diag_set(d, EXIT_FAIL,
				"Python %s: .AsyncioDebug section %s (%zu bytes, %d needed)", ver,
				sec ? "truncated" : "not found", len, PY_ASYNCIO_DEBUG_SIZE);
	memcpy(v, sec, sizeof(v));
	/* Each field inside its struct, the structs of plausible sizes, and
	 * the Future header's order as the derivations below assume it. */
	if (v[AD_TASK_SIZE] < 64 || v[AD_TASK_SIZE] > 4096 || v[AD_TSTATE_SIZE] < 128 ||
	    v[AD_TSTATE_SIZE] > 65536 || v[AD_INTERP_SIZE] < 1024 ||
	    v[AD_INTERP_SIZE] > (64u << 20))
		return diag_set(d, EXIT_FAIL,
				"Python %s: .AsyncioDebug sizes implausible (task %llu, thread "
				"state %llu, interpreter %llu)",
				ver, (unsigned long long)v[AD_TASK_SIZE],
				(unsigned long long)v[AD_TSTATE_SIZE],
				(unsigned long long)v[AD_INTERP_SIZE]);
	for (int i = AD_TASK_NAME; i <= AD_TASK_NODE; i++)
		if (v[i] + 8 > v[AD_TASK_SIZE] || v[i] < 16)
			return diag_set(d, EXIT_FAIL,
					"Python %s: .AsyncioDebug task field %d = %llu is outside "
					"the task (%llu bytes)",
					ver, i, (unsigned long long)v[i],
					(unsigned long long)v[AD_TASK_SIZE]);
	for (int i = AD_TSTATE_RUNNING_LOOP; i <= AD_TSTATE_TASKS_HEAD; i++)
		if (v[i] + 16 > v[AD_TSTATE_SIZE] || v[i] > UINT16_MAX)
			return diag_set(d, EXIT_FAIL,
					"Python %s: .AsyncioDebug thread-state field %d = %llu is "
					"outside the thread state (%llu bytes)",
					ver, i, (unsigned long long)v[i],
					(unsigned long long)v[AD_TSTATE_SIZE]);
	if (v[AD_INTERP_TASKS_HEAD] + 16 > v[AD_INTERP_SIZE])
		return diag_set(d, EXIT_FAIL,
				"Python %s: .AsyncioDebug interpreter tasks head %llu is outside "
				"the interpreter state",
				ver, (unsigned long long)v[AD_INTERP_TASKS_HEAD]);
	/* fut_state sits right before is_task, after awaited_by. */
	if (v[AD_TASK_IS_TASK] != v[AD_TASK_AWAITED_BY] + 12)
		return diag_set(d, EXIT_UNSUPPORTED,
				"Python %s: .AsyncioDebug task_is_task = %llu, expected "
				"awaited_by + 12: the Future layout changed, its state unknown",
				ver, (unsigned long long)v[AD_TASK_IS_TASK]);
	a->task_size = (uint16_t)v[AD_TASK_SIZE];
	a->task_name = (uint16_t)v[AD_TASK_NAME];
	a->task_awaited_by = (uint16_t)v[AD_TASK_AWAITED_BY];
	a->task_is_task = (uint16_t)v[AD_TASK_IS_TASK];
	a->task_awaited_by_is_set = (uint16_t)v[AD_TASK_AWAITED_BY_IS_SET];
	a->task_coro = (uint16_t)v[AD_TASK_CORO];
	a->task_node = (uint16_t)v[AD_TASK_NODE];
	a->task_state = (uint16_t)(v[AD_TASK_IS_TASK] - 4);
	a->task_fut_waiter = (uint16_t)(v[AD_TASK_CORO] - 8);
	a->interp_tasks_head = (uint32_t)v[AD_INTERP_TASKS_HEAD];
	a->tstate_running_loop = (uint32_t)v[AD_TSTATE_RUNNING_LOOP];
	a->tstate_running_task = (uint32_t)v[AD_TSTATE_RUNNING_TASK];
	a->tstate_tasks_head = (uint32_t)v[AD_TSTATE_TASKS_HEAD];
	return 0;
}

int py_async_offsets(const struct py_offsets *o, const void *sec, size_t len, struct py_extra *x,
		     struct diag *d)
{
	struct py_async *a = &x->async;
	uint32_t hex = o->version_hex;
	char ver[32];

	py_version_str(hex, ver, sizeof(ver));
	if (!py_at_least(hex, 11))
		return diag_set(d, EXIT_USAGE,
				"Python %s: --async needs CPython 3.11 or later (asyncio's C tasks "
				"keep no coroutine frame bpfpy can follow before 3.11)",
				ver);
	a->gen_owner = 1; /* FRAME_OWNED_BY_GENERATOR, 3.11 to 3.15 */
	/* The same in every version from 3.11 (measured to 3.13; 3.14 and
	 * 3.15 keep the object headers and FutureObj_HEAD's start). */
	a->weakref_object = 16;
	a->task_callback0 = 24;
	a->method_self = 24;
	/* PyCFunctionObject's m_ml and m_self (measured to 3.13; only 3.11 to
	 * 3.13 read them), and the name of the method an awaiting task adds
	 * as a done callback of the task it awaits (TaskWakeupDef in
	 * Modules/_asynciomodule.c, 3.11 to 3.15). */
	a->cfunc_ml = 16;
	a->cfunc_self = 24;
	_Static_assert(sizeof("task_wakeup") <= TASK_WAKEUP_NAME, "the kernel compares 12 bytes");
	memcpy(a->wakeup_name, "task_wakeup", sizeof("task_wakeup"));
	a->coro.ref_mask = ~0ULL;
	a->coro.await_slot = 1;
	if (py_at_least(hex, 14)) {
		if (!a->coro.gen_iframe)
			return diag_set(d, EXIT_FAIL,
					"Python %s: _Py_DebugOffsets lack the generator fields",
					ver);
		if (async_from_section(hex, sec, len, a, d))
			return -1;
		a->coro.ref_mask = ~3ULL; /* _PyStackRef tag bits */
		if (py_at_least(hex, 15)) {
			a->coro.await_slot = 2;
			a->coro.state_awaiting = 2;
			a->coro.state_awaiting2 = 3;
		} else {
			a->coro.state_awaiting = -1;
			a->coro.state_awaiting2 = -1;
		}
		a->model = PY_ASYNC_DEBUG;
		return 0;
	}
	for (size_t i = 0; i < NG(async_rows); i++) {
		const struct async_row *r = &async_rows[i];

		if (r->minor != PY_MINOR(hex))
			continue;
		a->task_size = r->task_size;
		a->task_state = r->task_state;
		a->task_coro = r->task_coro;
		a->task_fut_waiter = (uint16_t)(r->task_coro - 8);
		a->task_name = r->task_name;
		a->task_callbacks = r->task_callbacks;
		a->coro.gen_iframe = r->gen_iframe;
		a->coro.gen_frame_state = r->gen_frame_state;
		a->coro.frame_stack = r->frame_stacktop;
		a->coro.frame_localsplus = r->frame_localsplus;
		a->coro.frame_code = o->frame_code;
		a->coro.frame_instr = o->frame_instr;
		a->coro.stack_is_pointer = 0;
		a->coro.state_awaiting = -1;
		a->coro.state_awaiting2 = -1;
		/* PySetObject (3.11-3.13): fill, used, mask, table after the
		 * object header; PyListObject: ob_size, ob_item. */
		a->set_mask = 32;
		a->set_table = 40;
		a->list_size = 16;
		a->list_items = 24;
		a->model = PY_ASYNC_SETS;
		return 0;
	}
	return diag_set(d, EXIT_UNSUPPORTED, "Python %s: asyncio layout unknown", ver);
}
