// SPDX-License-Identifier: MIT
/*
 * py_offsets: the 3.8-3.12 tables against what pahole measured on the real
 * builds (tests/data/pahole_offsets.txt, from scripts/measure_offsets.sh),
 * and the 3.13+ parser against _Py_DebugOffsets bytes dumped from real
 * interpreters (tests/data/debug_offsets_3.X.bin, from
 * scripts/dump_debug_offsets.sh), intact and corrupted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "py_offsets.h"

static char data_dir[512];

static void find_data_dir(void)
{
	const char *env = getenv("BPFPY_TEST_DATA");
	const char *slash = strrchr(__FILE__, '/');
	FILE *f;

	if (env) {
		snprintf(data_dir, sizeof(data_dir), "%s", env);
		return;
	}
	snprintf(data_dir, sizeof(data_dir), "tests/data");
	snprintf(data_dir + strlen(data_dir), sizeof(data_dir) - strlen(data_dir),
		 "/pahole_offsets.txt");
	f = fopen(data_dir, "r");
	if (f) {
		fclose(f);
		snprintf(data_dir, sizeof(data_dir), "tests/data");
		return;
	}
	snprintf(data_dir, sizeof(data_dir), "%.*s/../data", slash ? (int)(slash - __FILE__) : 1,
		 slash ? __FILE__ : ".");
}

/* Read a whole data file; NULL if absent. */
static uint8_t *slurp(const char *name, size_t *len)
{
	char path[768];
	uint8_t *buf;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/%s", data_dir, name);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = 0;
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* The key names of pahole_offsets.txt and where each lives. */
struct key {
	const char *name;
	int extra; /* 0: struct py_offsets, 1: struct py_extra */
	size_t off;
	size_t size;
};

#define KO(f)                                                                                      \
	{                                                                                          \
#f, 0, offsetof(struct py_offsets, f), sizeof(((struct py_offsets *)0)->f)         \
	}
#define KX(f)                                                                                      \
	{                                                                                          \
#f, 1, offsetof(struct py_extra, f), sizeof(((struct py_extra *)0)->f)             \
	}

static const struct key keys[] = {
    KO(runtime_interpreters_head),
    KO(interp_next),
    KO(interp_threads_head),
    KO(tstate_next),
    KO(tstate_frame),
    KO(cframe_current_frame),
    KO(cframe_previous),
    KO(tstate_native_thread_id),
    KO(tstate_thread_id),
    KO(frame_code),
    KO(frame_previous),
    KO(frame_instr),
    KO(frame_owner),
    KO(code_argcount),
    KO(code_flags),
    KO(code_firstlineno),
    KO(code_filename),
    KO(code_name),
    KO(code_qualname),
    KO(code_linetable),
    KO(code_adaptive),
    KO(code_code),
    KO(code_units),
    KO(ob_type),
    KO(unicode_state),
    KO(unicode_length),
    KO(ascii_data_off),
    KO(compact_data_off),
    KO(bytes_size),
    KO(bytes_data),
    KO(tstate_cur_exc),
    KO(cur_exc_is_type),
    KO(tstate_exc_info),
    KO(stackitem_exc_value),
    KO(boot_tstate),
    KX(interp_id),
    KX(gc_collecting),
    KX(gc_in_runtime),
    KX(interp_ceval_gil),
    KX(gil_locked),
    KX(gil_holder),
    KX(frame_size),
    KX(code_size),
    KX(obj.interp_modules),
    KX(obj.module_dict),
    KX(obj.dict_used),
    KX(obj.dict_keys),
    KX(obj.dict_values),
    KX(obj.keys_size),
    KX(obj.keys_index_bytes),
    KX(obj.keys_kind),
    KX(obj.keys_nentries),
    KX(obj.keys_indices),
    KX(async.task_size),
    KX(async.task_state),
    KX(async.task_fut_waiter),
    KX(async.task_coro),
    KX(async.task_name),
    KX(async.task_callback0),
    KX(async.coro.gen_iframe),
    KX(async.coro.gen_frame_state),
    KX(async.coro.frame_stack),
    KX(async.coro.frame_localsplus),
    KX(async.set_mask),
    KX(async.set_table),
    KX(async.list_size),
    KX(async.list_items),
    KX(async.weakref_object),
    KX(async.method_self),
    KX(async.task_callbacks),
    KX(async.cfunc_ml),
    KX(async.cfunc_self),
    KX(obj.values_capacity),
    KX(obj.values_valid),
    KX(obj.values_items),
    KX(obj.long_size),
    KX(obj.long_digits),
    KX(obj.type_basicsize),
    KX(obj.type_flags),
    KX(obj.type_dictoffset),
    KX(obj.type_cached_keys),
    KX(obj.code_consts),
    KX(obj.tuple_size),
    KX(obj.tuple_items),
    KX(locals.frame_localsplus),
    KX(locals.code_varnames),
    KX(locals.code_cellvars),
    KX(locals.code_freevars),
    KX(locals.code_localsplusnames),
    KX(locals.code_localspluskinds),
    KX(locals.type_name),
    KX(locals.float_value),
    KX(locals.cell_ref),
};

static const struct key *key_of(const char *name)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(keys[i].name, name))
			return &keys[i];
	return NULL;
}

static uint64_t key_val(const struct key *k, const struct py_offsets *o, const struct py_extra *x)
{
	const uint8_t *p = (const uint8_t *)(k->extra ? (const void *)x : (const void *)o) + k->off;
	uint32_t v32;
	uint16_t v16;

	switch (k->size) {
	case 1:
		return *p;
	case 2:
		memcpy(&v16, p, 2);
		return v16;
	case 4:
		memcpy(&v32, p, 4);
		return v32;
	}
	fail_msg("key %s has size %zu", k->name, k->size);
	return 0;
}

/* x->async the way the product gets it (py_async_offsets): the measured
 * row up to 3.13, the dumped .AsyncioDebug section from 3.14 (skipped
 * when this machine has no dump). */
static void async_layout(unsigned minor, const struct py_offsets *o, struct py_extra *x)
{
	struct diag d = {0};
	char name[64];
	uint8_t *sec = NULL;
	size_t len = 0;

	if (minor >= 14) {
		snprintf(name, sizeof(name), "asyncio_debug_3.%u.bin", minor);
		if (!(sec = slurp(name, &len)))
			return;
	}
	if (py_async_offsets(o, sec, len, x, &d))
		fail_msg("3.%u async: %s", minor, d.msg);
	free(sec);
}

/* Layout of a minor the way the product gets it: the table up to 3.12, the
 * dumped debug offsets from 3.13. 0 if this machine has no dump. */
static int layout_of(unsigned minor, struct py_offsets *o, struct py_extra *x)
{
	struct diag d = {0};
	char name[64];
	uint8_t *buf;
	size_t len;
	int rc;

	if (minor <= 12) {
		rc = py_offsets_for_version(0x030000f0u | (minor << 16), o, x, &d);
		if (rc)
			fail_msg("3.%u: %s", minor, d.msg);
		if (minor == 11 || minor == 12)
			async_layout(minor, o, x);
		return 1;
	}
	snprintf(name, sizeof(name), "debug_offsets_3.%u.bin", minor);
	buf = slurp(name, &len);
	if (!buf)
		return 0;
	rc = py_offsets_from_debug(buf, len, o, x, &d);
	free(buf);
	if (rc)
		fail_msg("3.%u: %s", minor, d.msg);
	async_layout(minor, o, x);
	return 1;
}

/*
 * Every measured number equals the product's, for every version measured,
 * and every field the measurement says a version lacks is 0 (which the
 * walker reads as "none") in the tables.
 */
static void test_tables_match_measurement(void **state)
{
	unsigned checked[16] = {0}, seen[16][sizeof(keys) / sizeof(keys[0])];
	char *text, *line, *save = NULL;
	size_t len;

	(void)state;
	memset(seen, 0, sizeof(seen));
	text = (char *)slurp("pahole_offsets.txt", &len);
	if (!text)
		skip();
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned major, minor;
		char name[64];
		unsigned long val;
		struct py_offsets o;
		struct py_extra x;
		const struct key *k;

		if (line[0] == '#' || !line[0])
			continue;
		assert_int_equal(sscanf(line, "%u.%u %63s %lu", &major, &minor, name, &val), 4);
		assert_int_equal(major, 3);
		assert_true(minor >= 8 && minor <= 15);
		k = key_of(name);
		if (!k)
			fail_msg("pahole_offsets.txt: unknown key %s", name);
		if (!layout_of(minor, &o, &x))
			continue;
		if (key_val(k, &o, &x) != val)
			fail_msg("3.%u %s: table/parser says %llu, measured %lu", minor, name,
				 (unsigned long long)key_val(k, &o, &x), val);
		seen[minor][k - keys] = 1;
		checked[minor]++;
	}
	free(text);
	/* The tables must have been checked in full, not just touched. */
	for (unsigned m = 8; m <= 13; m++) {
		struct py_offsets o;
		struct py_extra x;

		if (!checked[m])
			continue;
		assert_true(checked[m] >= 25);
		if (m > 12)
			continue;
		layout_of(m, &o, &x);
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (!seen[m][i] && key_val(&keys[i], &o, &x))
				fail_msg("3.%u %s = %llu but 3.%u has no such field", m,
					 keys[i].name,
					 (unsigned long long)key_val(&keys[i], &o, &x), m);
	}
	/* This machine has the pyenv builds: all five tables were measured. */
	for (unsigned m = 8; m <= 12; m++)
		if (!checked[m])
			print_message("note: 3.%u not measured here\n", m);
}

/* The walker reads frame_read_size bytes of a frame and code_read_size of a
 * code object: every field it uses must fall inside, within the buffers. */
static void check_read_sizes(unsigned minor, const struct py_offsets *o, const struct py_extra *x)
{
	unsigned name = o->code_qualname ? o->code_qualname : o->code_name;
	unsigned code_fields[] = {o->ob_type,	       o->code_argcount, o->code_flags,
				  o->code_firstlineno, o->code_filename, name,
				  o->code_linetable};
	unsigned f = o->frame_read_size, c = o->code_read_size;

	assert_true(f <= BPFPY_FRAME_BUF);
	assert_true(f <= x->frame_size);
	assert_true(o->frame_previous + 8u <= f);
	assert_true(o->frame_code + 8u <= f);
	if (o->frame_model == FRAME_MODEL_OBJECT) {
		assert_true(o->frame_instr + 4u <= f);
	} else {
		assert_true(o->frame_instr + 8u <= f);
		assert_true(o->frame_owner + 1u <= f);
	}
	assert_true(c <= BPFPY_CODE_BUF);
	for (size_t i = 0; i < sizeof(code_fields) / sizeof(code_fields[0]); i++)
		if (code_fields[i] + 8u > c)
			fail_msg("3.%u: code field at %u beyond code_read_size %u", minor,
				 code_fields[i], c);
}

static void test_version_properties(void **state)
{
	static const struct {
		unsigned minor;
		uint8_t model, lasti_bytes, skip, tagged, other, base, per_interp;
	} want[] = {
	    {8, FRAME_MODEL_OBJECT, 1, 0, 0, 0, 0, 0},
	    {9, FRAME_MODEL_OBJECT, 1, 0, 0, 0, 0, 0},
	    {10, FRAME_MODEL_OBJECT, 0, 0, 0, 0, 0, 0},
	    {11, FRAME_MODEL_CFRAME, 0, 0, 0, 0, 0, 0},
	    {12, FRAME_MODEL_CFRAME, 0, 1 << 3, 0, 0, 0, 1},
	    {13, FRAME_MODEL_DIRECT, 0, 1 << 3, 0, 1, 0, 1},
	    {14, FRAME_MODEL_DIRECT, 0, (1 << 3) | (1 << 4), 1, 1, 0, 1},
	    {15, FRAME_MODEL_DIRECT, 0, 1 << 3, 1, 1, 1, 1},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct py_offsets o;
		struct py_extra x;

		if (!layout_of(want[i].minor, &o, &x)) {
			print_message("note: no debug offsets dump of 3.%u\n", want[i].minor);
			continue;
		}
		assert_int_equal((o.version_hex >> 16) & 0xff, want[i].minor);
		assert_int_equal(o.frame_model, want[i].model);
		assert_int_equal(o.lasti_is_bytes, want[i].lasti_bytes);
		assert_int_equal(o.skip_owner_mask, want[i].skip);
		assert_int_equal(o.tagged_code, want[i].tagged);
		assert_int_equal(o.code_may_be_other, want[i].other);
		assert_int_equal(o.has_base_frame, want[i].base);
		assert_int_equal(x.gil_per_interp, want[i].per_interp);
		assert_int_equal(o.tstate_next, 8);
		assert_true(x.gil_locked != x.gil_holder);
		check_read_sizes(want[i].minor, &o, &x);
	}
}

static struct py_offsets po;
static struct py_extra px;

static uint8_t *blob(unsigned minor, size_t *len)
{
	char name[64];
	uint8_t *b;

	snprintf(name, sizeof(name), "debug_offsets_3.%u.bin", minor);
	b = slurp(name, len);
	if (!b)
		skip();
	return b;
}

static void parse_ok(unsigned minor)
{
	struct diag d = {0};
	size_t len;
	uint8_t *b = blob(minor, &len);

	assert_int_equal(len, PY_DEBUG_OFFSETS_READ_SIZE);
	if (py_offsets_from_debug(b, len, &po, &px, &d))
		fail_msg("3.%u: %s", minor, d.msg);
	free(b);
}

/* The numbers in the reference (cpython-frames.md), taken from real
 * builds independently of this parser. */
static void test_debug_313(void **state)
{
	(void)state;
	parse_ok(13);
	assert_int_equal(po.version_hex, 0x030d00f0);
	assert_int_equal(px.debug_size, 584);
	assert_int_equal(po.runtime_interpreters_head, 632);
	assert_int_equal(po.interp_threads_head, 7344);
	assert_int_equal(po.tstate_frame, 72);
	assert_int_equal(po.tstate_native_thread_id, 160);
	assert_int_equal(po.tstate_thread_id, 152);
	assert_int_equal(po.frame_code, 0);
	assert_int_equal(po.frame_previous, 8);
	assert_int_equal(po.frame_instr, 56);
	assert_int_equal(po.frame_owner, 70);
	assert_int_equal(px.frame_size, 80);
	assert_int_equal(po.code_firstlineno, 68);
	assert_int_equal(po.code_filename, 112);
	assert_int_equal(po.code_name, 120);
	assert_int_equal(po.code_qualname, 128);
	assert_int_equal(po.code_linetable, 136);
	assert_int_equal(po.code_adaptive, 200);
	assert_int_equal(po.ascii_data_off, 40);
	assert_int_equal(po.compact_data_off, 56);
	assert_int_equal(po.bytes_size, 16);
	assert_int_equal(po.bytes_data, 32);
	assert_int_equal(po.tstate_base_frame, 0);
	/* thread spawns: bootstate {tstate, ...}, a new state unbound */
	assert_int_equal(po.thread_hooks, 1);
	assert_int_equal(po.boot_tstate, 0);
	assert_int_equal(po.boot_tid_parent, 0);
}

static void test_debug_314(void **state)
{
	(void)state;
	parse_ok(14);
	assert_int_equal((po.version_hex >> 16) & 0xffff, 0x030e);
	assert_int_equal(px.debug_size, 760);
	assert_int_equal(po.runtime_interpreters_head, 808);
	assert_int_equal(po.tstate_frame, 72);
	assert_int_equal(po.tstate_native_thread_id, 160);
	assert_int_equal(po.frame_code, 0);
	assert_int_equal(po.frame_previous, 8);
	assert_int_equal(po.frame_instr, 56);
	assert_int_equal(po.frame_owner, 74);
	assert_int_equal(px.frame_size, 88);
	assert_int_equal(po.code_firstlineno, 68);
	assert_int_equal(po.code_filename, 112);
	assert_int_equal(po.code_qualname, 128);
	assert_int_equal(po.code_linetable, 136);
	assert_int_equal(po.code_adaptive, 208);
	assert_true(px.interp_threads_main != 0);
}

static void test_debug_315(void **state)
{
	(void)state;
	parse_ok(15);
	assert_int_equal((po.version_hex >> 16) & 0xffff, 0x030f);
	assert_int_equal(px.debug_size, 888);
	assert_int_equal(po.tstate_frame, 72);
	assert_int_equal(po.tstate_base_frame, 80);
	assert_int_equal(po.tstate_native_thread_id, 184);
	assert_int_equal(po.frame_owner, 74);
	assert_int_equal(po.frame_previous, 8);
	assert_int_equal(po.frame_instr, 56);
	assert_int_equal(po.code_filename, 112);
	assert_int_equal(po.code_adaptive, 208);
	/* Given by 3.15 itself (compactunicodeobject_size). */
	assert_int_equal(po.compact_data_off, 56);
}

/* Refusals, on corrupted copies of the real 3.13 dump. Slots are u64
 * indices in the 3.13 layout (pycore_runtime.h). */
#define S313_IFRAME_SIZE	  28
#define S313_IFRAME_OWNER	  33
#define S313_TSTATE_CURRENT_FRAME 23
#define S313_CODE_ARGCOUNT	  40

static void expect_refusal(const uint8_t *b, size_t len, int code, const char *needle)
{
	struct diag d = {0};

	assert_int_equal(py_offsets_from_debug(b, len, &po, &px, &d), -1);
	if (d.code != code || !strstr(d.msg, needle))
		fail_msg("want code %d and \"%s\", got code %d: %s", code, needle, d.code, d.msg);
}

static void put64(uint8_t *b, int slot, uint64_t v)
{
	memcpy(b + slot * 8, &v, 8);
}

static void test_debug_refusals(void **state)
{
	size_t len;
	uint8_t *orig = blob(13, &len), *b = malloc(len);
	struct diag d = {0};

	(void)state;
	assert_non_null(b);
	/* Sanity of the slot numbers used below. */
	assert_int_equal(memcmp(orig + S313_IFRAME_SIZE * 8, &(uint64_t){80}, 8), 0);
	assert_int_equal(memcmp(orig + S313_IFRAME_OWNER * 8, &(uint64_t){70}, 8), 0);
	assert_int_equal(memcmp(orig + S313_TSTATE_CURRENT_FRAME * 8, &(uint64_t){72}, 8), 0);
	assert_int_equal(memcmp(orig + S313_CODE_ARGCOUNT * 8, &(uint64_t){52}, 8), 0);

	memcpy(b, orig, len);
	b[0] = 'X';
	expect_refusal(b, len, EXIT_NOT_PYTHON, "cookie");

	memcpy(b, orig, len);
	put64(b, 2, 1);
	expect_refusal(b, len, EXIT_UNSUPPORTED,
		       "free-threaded build (Py_GIL_DISABLED) is not supported");

	memcpy(b, orig, len);
	put64(b, 1, 0x031000f0);
	expect_refusal(b, len, EXIT_UNSUPPORTED, "Python 3.16 debug offsets layout unknown");

	memcpy(b, orig, len);
	put64(b, 1, 0x030d00c2);
	expect_refusal(b, len, EXIT_UNSUPPORTED, "3.13.0rc2 is a pre-release");

	memcpy(b, orig, len);
	put64(b, 1, 0x030c01f0);
	expect_refusal(b, len, EXIT_FAIL, "not a CPython 3.13+ version");

	expect_refusal(orig, 583, EXIT_FAIL, "needs 584");
	expect_refusal(orig, 16, EXIT_FAIL, "truncated");
	expect_refusal(NULL, 0, EXIT_FAIL, "truncated");

	memcpy(b, orig, len);
	put64(b, S313_IFRAME_SIZE, 4096);
	expect_refusal(b, len, EXIT_FAIL, "interpreter_frame.size = 4096 is implausible");

	memcpy(b, orig, len);
	put64(b, S313_IFRAME_SIZE, 0);
	expect_refusal(b, len, EXIT_FAIL, "interpreter_frame.size = 0");

	memcpy(b, orig, len);
	put64(b, S313_IFRAME_OWNER, 80);
	expect_refusal(b, len, EXIT_FAIL, "interpreter_frame.owner = 80 is past the end");

	memcpy(b, orig, len);
	put64(b, S313_TSTATE_CURRENT_FRAME, 1ull << 40);
	expect_refusal(b, len, EXIT_FAIL, "thread_state.current_frame");

	memcpy(b, orig, len);
	put64(b, S313_CODE_ARGCOUNT, 60);
	expect_refusal(b, len, EXIT_UNSUPPORTED, "code_object.argcount = 60");

	/* And the intact copy still parses: the refusals came from the edits. */
	memcpy(b, orig, len);
	assert_int_equal(py_offsets_from_debug(b, len, &po, &px, &d), 0);
	free(b);
	free(orig);
}

/*
 * Issue 11 row 10: an offset near 2^64 made v + width wrap to a small sum,
 * so interpreter_state.id = 2^64-8 was accepted and truncated to 32 bits
 * (and ceval_gil the same: the GIL state silently lost). Every slot of
 * every committed image, set to each hostile value in turn, is either
 * refused with a message naming a field and the value, or not used at all
 * (the parse is then exactly the intact one's).
 */
static void test_debug_huge_offsets(void **state)
{
	static const uint64_t hostile[] = {UINT64_MAX - 7, UINT64_MAX, 1ull << 32,
					   (1ull << 32) + 4};
	struct py_offsets want_o;
	struct py_extra want_x;
	int refused = 0, unused = 0;

	(void)state;
	for (unsigned minor = 13; minor <= 15; minor++) {
		size_t len;
		uint8_t *orig = blob(minor, &len), *b = malloc(len);
		struct diag d = {0};
		size_t need;

		assert_non_null(b);
		assert_int_equal(py_offsets_from_debug(orig, len, &want_o, &want_x, &d), 0);
		need = want_x.debug_size;
		for (size_t slot = 3; slot < need / 8; slot++) {
			for (size_t h = 0; h < sizeof(hostile) / sizeof(hostile[0]); h++) {
				char val[32];

				memcpy(b, orig, len);
				put64(b, (int)slot, hostile[h]);
				memset(&d, 0, sizeof(d));
				snprintf(val, sizeof(val), "%llu", (unsigned long long)hostile[h]);
				if (py_offsets_from_debug(b, len, &po, &px, &d)) {
					if (!strstr(d.msg, val) || !strchr(d.msg, '.'))
						fail_msg("3.%u slot %zu = %s: refused without "
							 "naming the field and value: %s",
							 minor, slot, val, d.msg);
					refused++;
					continue;
				}
				if (memcmp(&po, &want_o, sizeof(po)) ||
				    memcmp(&px, &want_x, sizeof(px)))
					fail_msg("3.%u slot %zu = %s: accepted, and the "
						 "layout changed",
						 minor, slot, val);
				unused++;
			}
		}
		free(b);
		free(orig);
	}
	assert_true(refused > 0);
	assert_true(unused > 0);

	/* The two of the issue, by name. */
	{
		size_t len;
		uint8_t *b = blob(13, &len);

		put64(b, 7, UINT64_MAX - 7); /* interpreter_state.id */
		expect_refusal(b, len, EXIT_FAIL,
			       "interpreter_state.id = 18446744073709551608 is past the end");
		put64(b, 7, 8);
		put64(b, 14, UINT64_MAX - 7); /* interpreter_state.ceval_gil */
		expect_refusal(
		    b, len, EXIT_FAIL,
		    "interpreter_state.ceval_gil = 18446744073709551608 is past the end");
		free(b);
	}
}

/* The facts other files ask instead of comparing versions, minor by minor
 * (cpython-frames.md: "USDT probes", "Line numbers"), and their agreement
 * with the tables where a table says the same thing another way. */
static void test_version_facts(void **state)
{
	static const struct {
		unsigned minor;
		enum py_linetable_format lt;
		int debug, calls, complete, line_probe;
	} want[] = {
	    {8, PY_LINETABLE_LNOTAB, 0, 1, 1, 1},  {9, PY_LINETABLE_LNOTAB, 0, 1, 1, 1},
	    {10, PY_LINETABLE_PEP626, 0, 1, 1, 1}, {11, PY_LINETABLE_PEP657, 0, 1, 0, 1},
	    {12, PY_LINETABLE_PEP657, 0, 0, 0, 0}, {13, PY_LINETABLE_PEP657, 1, 0, 0, 0},
	    {14, PY_LINETABLE_PEP657, 1, 0, 0, 0}, {15, PY_LINETABLE_PEP657, 1, 1, 1, 0},
	};
	struct diag d = {0};

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		uint32_t hex = PY_VERSION(3, want[i].minor) | 0x02f0;

		assert_int_equal(PY_MINOR(hex), want[i].minor);
		assert_int_equal(PY_MAJOR_MINOR(hex), 0x0300 | want[i].minor);
		assert_int_equal(py_linetable_format(hex), want[i].lt);
		assert_int_equal(py_has_debug_offsets(hex), want[i].debug);
		assert_int_equal(py_usdt_has_call_probes(hex), want[i].calls);
		assert_int_equal(py_usdt_calls_complete(hex), want[i].complete);
		assert_int_equal(py_usdt_has_line_probe(hex), want[i].line_probe);
		assert_string_equal(py_eval_frame_symbol(hex), want[i].minor >= 11
								   ? "_PyEval_EvalFrameDefault"
								   : "PyEval_EvalFrameEx");
		assert_int_equal(py_version_final_of(PY_VERSION(3, want[i].minor)),
				 PY_VERSION(3, want[i].minor) | 0xf0);
		/* Thread spawns (bpf/thread_watch.bpf.h): _thread's spawn
		 * function, and whether a new state holds its creator's id. */
		assert_string_equal(py_thread_spawn_symbol(hex),
				    want[i].minor >= 13 ? "PyThread_start_joinable_thread"
							: "PyThread_start_new_thread");
		if (want[i].debug)
			continue;
		assert_int_equal(py_offsets_for_version(hex, &po, &px, &d), 0);
		assert_int_equal(po.thread_hooks, 1);
		assert_int_equal(po.boot_tid_parent, want[i].minor <= 11);
		/* 3.11's older bootstate: the state just before &_PyRuntime */
		assert_int_equal(po.boot_runtime, want[i].minor == 11 ? 40 : 0);
		/* The tables agree: frame objects up to 3.10, lnotab counting
		 * bytes up to 3.9, and the co_flags/co_argcount gap (8 bytes
		 * in 3.11, 4 from 3.12, which the debug path relies on). */
		assert_int_equal(py_offsets_for_version(hex, &po, &px, &d), 0);
		assert_int_equal(po.frame_model == FRAME_MODEL_OBJECT, want[i].minor <= 10);
		assert_int_equal(po.lasti_is_bytes, want[i].lt == PY_LINETABLE_LNOTAB);
		if (want[i].minor == 11)
			assert_int_equal(po.code_argcount - po.code_flags, 8);
		if (want[i].minor == 12)
			assert_int_equal(po.code_argcount - po.code_flags, 4);
	}
	assert_null(py_thread_spawn_symbol(PY_VERSION(3, 16)));
	assert_false(py_version_plausible(0x020712f0));
	assert_true(py_version_plausible(0x030c01f0));
	assert_true(py_version_too_old(PY_VERSION(3, 7)));
	assert_false(py_version_too_old(PY_VERSION(3, 8)));
	assert_true(py_version_too_old(PY_VERSION(2, 9)));
}

static void expect_version_refusal(uint32_t hex, const char *needle)
{
	struct diag d = {0};

	assert_int_equal(py_offsets_for_version(hex, &po, &px, &d), -1);
	assert_int_equal(d.code, EXIT_UNSUPPORTED);
	if (!strstr(d.msg, needle))
		fail_msg("want \"%s\", got: %s", needle, d.msg);
}

static void test_version_refusals(void **state)
{
	struct diag d = {0};

	(void)state;
	expect_version_refusal(0x030710f0, "Python 3.7.16 is not supported");
	expect_version_refusal(0x020712f0, "Python 2.7.18 is not supported");
	expect_version_refusal(0x030d00f0, "_Py_DebugOffsets");
	expect_version_refusal(0x031000f0, "Python 3.16.0 is not supported");
	expect_version_refusal(0x030c00b1, "3.12.0b1 is a pre-release");
	/* Any final micro release of a tabled minor shares its layout. */
	assert_int_equal(py_offsets_for_version(0x030b02f0, &po, &px, &d), 0);
	assert_int_equal(po.version_hex, 0x030b02f0);
	assert_int_equal(po.frame_owner, 69);
}

static void test_version_str(void **state)
{
	char buf[32];

	(void)state;
	assert_string_equal(py_version_str(0x030c01f0, buf, sizeof(buf)), "3.12.1");
	assert_string_equal(py_version_str(0x030d00c2, buf, sizeof(buf)), "3.13.0rc2");
	assert_string_equal(py_version_str(0x030e00a1, buf, sizeof(buf)), "3.14.0a1");
	assert_string_equal(py_version_str(0x030f02b3, buf, sizeof(buf)), "3.15.2b3");
	assert_string_equal(py_version_str(0x030b07f0, buf, 4), "3.1");
}

/*
 * asyncio on 3.14 and 3.15 from the sections CPython wrote (dumped by
 * scripts/dump_debug_offsets.sh), checked against the offsets
 * ../shared/reference/async-opcodes-2026-12.md measured on the same sid
 * binaries, and every refusal of a hostile section.
 */
static void test_async_offsets(void **state)
{
	static const struct {
		unsigned minor;
		uint32_t running_task, tasks_head, interp_tasks_head;
		int8_t awaiting, awaiting2;
		uint8_t slot;
	} want[] = {{14, 872, 880, 10880, -1, -1, 1}, {15, 1032, 1048, 10856, 2, 3, 2}};
	struct py_offsets o;
	struct py_extra x;
	struct diag d = {0};
	uint8_t sec[PY_ASYNCIO_DEBUG_SIZE];
	uint64_t v[13];

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct py_async *a = &x.async;

		if (!layout_of(want[i].minor, &o, &x) || !x.async.model) {
			print_message("3.%u: no dumps on this machine, skipped\n", want[i].minor);
			continue;
		}
		assert_int_equal(a->model, PY_ASYNC_DEBUG);
		assert_int_equal(a->task_size, 168);
		assert_int_equal(a->task_coro, 128);
		assert_int_equal(a->task_name, 136);
		assert_int_equal(a->task_awaited_by, 96);
		assert_int_equal(a->task_is_task, 108);
		assert_int_equal(a->task_awaited_by_is_set, 109);
		assert_int_equal(a->task_node, 152);
		assert_int_equal(a->task_state, 104);
		assert_int_equal(a->task_fut_waiter, 120);
		assert_int_equal(a->tstate_running_task, want[i].running_task);
		assert_int_equal(a->tstate_tasks_head, want[i].tasks_head);
		assert_int_equal(a->interp_tasks_head, want[i].interp_tasks_head);
		assert_int_equal(a->coro.state_awaiting, want[i].awaiting);
		assert_int_equal(a->coro.state_awaiting2, want[i].awaiting2);
		assert_int_equal(a->coro.await_slot, want[i].slot);
		assert_true(a->coro.stack_is_pointer);
		assert_true(a->coro.ref_mask == ~3ULL);
		assert_true(a->coro.gen_iframe >= 48 && a->coro.gen_iframe < 128);
		assert_true(a->set_table && a->set_mask && a->list_items);
		/* The kernel's first awaiter: awaited_by and its set's size
		 * (PySetObject.used, measured live on both: 24). */
		assert_int_equal(a->set_used, 24);
		assert_int_equal(a->task_callbacks, 0);
	}

	/* <= 3.10: refused with a usage error naming the version. */
	assert_int_equal(py_offsets_for_version(0x030a00f0u, &o, &x, &d), 0);
	assert_int_equal(py_async_offsets(&o, NULL, 0, &x, &d), -1);
	assert_int_equal(d.code, EXIT_USAGE);
	assert_non_null(strstr(d.msg, "3.10"));

	/* 3.14 with no section, a short one, fields outside the task, a
	 * thread-state offset past the thread state, a moved Future header. */
	if (!layout_of(14, &o, &x))
		return;
	assert_int_equal(py_async_offsets(&o, NULL, 0, &x, &d), -1);
	assert_int_equal(d.code, EXIT_FAIL);
	{
		uint8_t *real;
		size_t len;

		real = slurp("asyncio_debug_3.14.bin", &len);
		if (!real)
			return;
		assert_int_equal(len, sizeof(sec));
		memcpy(sec, real, sizeof(sec));
		free(real);
	}
	assert_int_equal(py_async_offsets(&o, sec, sizeof(sec) - 1, &x, &d), -1);
	assert_int_equal(d.code, EXIT_FAIL);
	memcpy(v, sec, sizeof(v));
	v[5] = 1ULL << 40; /* task_coro */
	assert_int_equal(py_async_offsets(&o, v, sizeof(v), &x, &d), -1);
	assert_int_equal(d.code, EXIT_FAIL);
	memcpy(v, sec, sizeof(v));
	v[11] = v[9]; /* running task at the thread state's size */
	assert_int_equal(py_async_offsets(&o, v, sizeof(v), &x, &d), -1);
	assert_int_equal(d.code, EXIT_FAIL);
	memcpy(v, sec, sizeof(v));
	v[3] += 8; /* is_task no longer after state */
	assert_int_equal(py_async_offsets(&o, v, sizeof(v), &x, &d), -1);
	assert_int_equal(d.code, EXIT_UNSUPPORTED);
	memcpy(v, sec, sizeof(v));
	v[0] = UINT64_MAX; /* task size */
	assert_int_equal(py_async_offsets(&o, v, sizeof(v), &x, &d), -1);
	assert_int_equal(d.code, EXIT_FAIL);
}

static void test_gil_addrs(void **state)
{
	struct diag d = {0};
	uint64_t locked, holder;

	(void)state;
	assert_int_equal(py_offsets_for_version(0x030b07f0, &po, &px, &d), 0);
	assert_int_equal(py_gil_addrs(&px, 0x1000, 0, &locked, &holder), 0);
	assert_int_equal(locked, 0x1000 + 376);
	assert_int_equal(holder, 0x1000 + 368);

	assert_int_equal(py_offsets_for_version(0x030c01f0, &po, &px, &d), 0);
	assert_int_equal(py_gil_addrs(&px, 0x1000, 0x7000, &locked, &holder), 0);
	assert_int_equal(locked, 0x7000 + 16);
	assert_int_equal(holder, 0x7000 + 8);
	/* Per-interpreter GIL whose pointer could not be read: unknown. */
	assert_int_equal(py_gil_addrs(&px, 0x1000, 0, &locked, &holder), -1);
	assert_int_equal(locked, 0);
	assert_int_equal(holder, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tables_match_measurement),
	    cmocka_unit_test(test_version_properties),
	    cmocka_unit_test(test_debug_313),
	    cmocka_unit_test(test_debug_314),
	    cmocka_unit_test(test_debug_315),
	    cmocka_unit_test(test_debug_refusals),
	    cmocka_unit_test(test_debug_huge_offsets),
	    cmocka_unit_test(test_version_facts),
	    cmocka_unit_test(test_version_refusals),
	    cmocka_unit_test(test_version_str),
	    cmocka_unit_test(test_gil_addrs),
	    cmocka_unit_test(test_async_offsets),
	};

	find_data_dir();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
