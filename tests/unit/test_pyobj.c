// SPDX-License-Identifier: MIT
/*
 * pyobj.c over synthetic memory: dicts of both key layouts (3.8-3.10's
 * dk_size, 3.11+'s dk_log2_size with general, unicode and split kinds),
 * instance attributes of every storage model (tp_dictoffset, 3.11 values
 * pointer, 3.12 tagged dict-or-values, 3.13 inline values), ints of both
 * layouts, with the product's own layouts (the 3.10/3.11/3.12 tables and
 * the 3.13 debug offsets in tests/data). Then what a hostile target can
 * build: sizes that do not add up, counts past any bound, keys that point
 * at their own dict, a dict that is its own value and its own key, an
 * instance that is its own dict: each gives -1 or a bounded answer, within
 * a bounded number of reads.
 *
 * Every case runs twice: over the image reader, and over a live reader of
 * this very process (process_vm_readv), the memory mapped at the addresses
 * it claims with an unmapped guard after it, so that the batched key reads
 * (mem_read_each) meet the same failures a target's would.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "pyobj.h"

#define BASE	 0x7f0000200000ull
#define MEM_SIZE (1u << 20)

static uint8_t *mem;
static uint64_t top;
static struct mem_region region;
static struct mem_reader rd;
static int live; /* the second pass: read this process, not the image */
static struct py_offsets po;
static struct py_extra px;

static uint64_t alloc(size_t n)
{
	uint64_t a = BASE + top;

	top += (n + 15) & ~(size_t)15;
	assert_true(top <= MEM_SIZE);
	return a;
}

static uint8_t *at(uint64_t a)
{
	return mem + (a - BASE);
}

static void put64(uint64_t a, uint64_t v)
{
	memcpy(at(a), &v, 8);
}

static void put32(uint64_t a, uint32_t v)
{
	memcpy(at(a), &v, 4);
}

static void reset(void)
{
	memset(mem, 0, MEM_SIZE);
	top = 64; /* room below the first object for pre-header words */
	region = (struct mem_region){BASE, mem, MEM_SIZE};
	if (live)
		mem_reader_init_pid(&rd, getpid());
	else
		mem_reader_init_image(&rd, &region, 1);
}

static void layout(unsigned minor)
{
	struct diag d = {0};

	reset();
	if (minor <= 12) {
		assert_int_equal(py_offsets_for_version(0x030000f0u | (minor << 16), &po, &px, &d),
				 0);
		return;
	}
	char path[64];
	FILE *f;
	static uint8_t buf[4096];
	size_t n;

	snprintf(path, sizeof(path), "tests/data/debug_offsets_3.%u.bin", minor);
	f = fopen(path, "rb");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	assert_int_equal(py_offsets_from_debug(buf, n, &po, &px, &d), 0);
}

/* A compact ASCII str. */
static uint64_t str(const char *s)
{
	size_t n = strlen(s);
	uint64_t a = alloc(po.ascii_data_off + n + 1);

	put64(a + po.unicode_length, n);
	put32(a + po.unicode_state, PY_STR_ASCII_VALUE);
	memcpy(at(a + po.ascii_data_off), s, n);
	return a;
}

/* An int of up to 3 digits, value v, in the version's layout. */
static uint64_t pyint(uint64_t v, int negative)
{
	const struct py_objlayout *L = &px.obj;
	uint64_t a = alloc(L->long_digits + 12);
	unsigned nd = 0;

	for (uint64_t w = v; w; w >>= 30)
		put32(a + L->long_digits + 4 * nd++, (uint32_t)(w & ((1u << 30) - 1)));
	if (L->long_tagged)
		put64(a + L->long_size, v ? (uint64_t)nd << 3 | (negative ? 2 : 0) : 1);
	else
		put64(a + L->long_size, negative ? (uint64_t) - (int64_t)nd : nd);
	return a;
}

/* Keys with 8 slots holding n (key, value) pairs; kind for 3.11+ (0
 * general, 1 unicode, 2 split: the values then go nowhere). */
static uint64_t keys(const uint64_t *k, const uint64_t *v, unsigned n, unsigned kind)
{
	const struct py_objlayout *L = &px.obj;
	unsigned es = (L->keys_model == PY_KEYS_LOG2 && kind) ? 16 : 24;
	uint64_t a = alloc(L->keys_indices + 8 + 8 * es), e = a + L->keys_indices + 8;

	assert_true(n <= 5);
	if (L->keys_model == PY_KEYS_SIZE) {
		put64(a + L->keys_size, 8);
	} else {
		at(a + L->keys_size)[0] = 3;
		at(a + L->keys_index_bytes)[0] = 3;
		at(a + L->keys_kind)[0] = (uint8_t)kind;
	}
	put64(a + L->keys_nentries, n);
	for (unsigned i = 0; i < n; i++) {
		uint64_t ea = e + i * es;

		if (es == 24) {
			put64(ea, 0x1234 + i); /* hash */
			ea += 8;
		}
		put64(ea, k[i]);
		if (kind != 2)
			put64(ea + 8, v[i]);
	}
	return a;
}

static uint64_t dict(uint64_t k, uint64_t values)
{
	uint64_t a = alloc(48);

	put64(a + px.obj.dict_keys, k);
	put64(a + px.obj.dict_values, values);
	return a;
}

/* A values array (with the 3.13+ header when the layout has one). */
static uint64_t values(const uint64_t *v, unsigned n)
{
	const struct py_objlayout *L = &px.obj;
	uint64_t a = alloc(8 + 8 * n);

	if (L->values_header) {
		at(a + L->values_capacity)[0] = (uint8_t)n;
		at(a + L->values_valid)[0] = 1;
	}
	for (unsigned i = 0; i < n; i++)
		put64(a + L->values_items + 8 * i, v[i]);
	return a;
}

static int get1(uint64_t d, const char *name, uint64_t *v)
{
	const char *names[] = {name};

	return pydict_get(&rd, &po, &px.obj, d, names, v, 1);
}

static void check_dicts(unsigned minor)
{
	uint64_t k[4], v[4], got;

	layout(minor);
	k[0] = str("alpha");
	k[1] = 0; /* a deleted entry */
	k[2] = str("_name");
	k[3] = str("_native_id");
	v[0] = 0x1001;
	v[1] = 0x1002;
	v[2] = str("worker");
	v[3] = pyint(4242, 0);
	for (unsigned kind = 0; kind <= (px.obj.keys_model == PY_KEYS_LOG2 ? 1u : 0u); kind++) {
		uint64_t d = dict(keys(k, v, 4, kind), 0);

		assert_int_equal(get1(d, "_name", &got), 1);
		assert_int_equal(got, v[2]);
		assert_int_equal(get1(d, "missing", &got), 0);
		assert_int_equal(got, 0);
		assert_int_equal(get1(d, "alph", &got), 0); /* a prefix is not the key */
	}
	/* Split: the keys' values live in the dict's values array. */
	{
		uint64_t sv[4] = {0x2001, 0, 0x2003, 0x2004};
		uint64_t d =
		    dict(keys(k, v, 4, px.obj.keys_model == PY_KEYS_LOG2 ? 2 : 0), values(sv, 4));

		assert_int_equal(get1(d, "_name", &got), 1);
		assert_int_equal(got, 0x2003);
	}
}

static void test_ints(void **state)
{
	static const unsigned minors[] = {8, 11, 12, 15};
	uint64_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(minors) / sizeof(minors[0]); i++) {
		layout(minors[i]);
		assert_int_equal(pylong_read_u64(&rd, &px.obj, pyint(0, 0), &v), 0);
		assert_int_equal(v, 0);
		assert_int_equal(pylong_read_u64(&rd, &px.obj, pyint(123456, 0), &v), 0);
		assert_int_equal(v, 123456);
		/* A pthread_t: 47 bits, two digits. */
		assert_int_equal(pylong_read_u64(&rd, &px.obj, pyint(0x7f12345678c0ull, 0), &v), 0);
		assert_int_equal(v, 0x7f12345678c0ull);
		assert_int_equal(pylong_read_u64(&rd, &px.obj, pyint(UINT64_MAX, 0), &v), 0);
		assert_int_equal(v, UINT64_MAX);
		assert_int_equal(pylong_read_u64(&rd, &px.obj, pyint(5, 1), &v), -1);
		/* Four digits: more than 64 bits, refused. */
		uint64_t a = pyint(1, 0);

		put64(a + px.obj.long_size, px.obj.long_tagged ? 4u << 3 : 4);
		assert_int_equal(pylong_read_u64(&rd, &px.obj, a, &v), -1);
		/* A digit with bits past 30. */
		a = pyint(1, 0);
		put32(a + px.obj.long_digits, 1u << 31);
		assert_int_equal(pylong_read_u64(&rd, &px.obj, a, &v), -1);
		assert_int_equal(pylong_read_u64(&rd, &px.obj, BASE + MEM_SIZE + 64, &v), -1);
	}
}

/* A heap type: flags, basicsize, dictoffset and cached keys. */
static uint64_t type(uint64_t flags, int64_t basicsize, int64_t dictoffset, uint64_t cached)
{
	const struct py_objlayout *L = &px.obj;
	uint64_t a = alloc(1024);

	put64(a + L->type_flags, flags);
	put64(a + L->type_basicsize, (uint64_t)basicsize);
	put64(a + L->type_dictoffset, (uint64_t)dictoffset);
	put64(a + L->type_cached_keys, cached);
	return a;
}

/* An instance of tp (basicsize 16, then room for inline values), with 4
 * words of pre-header below it. */
static uint64_t instance(uint64_t tp)
{
	uint64_t a = alloc(32 + 16 + 8 + 8 * 8) + 32;

	put64(a + po.ob_type, tp);
	return a;
}

/* Minor's layout, and three attributes a Thread has: _target, _name (a
 * str of the given text) and _native_id (an int). */
static const struct py_objlayout *thread_attrs(unsigned minor, uint64_t *k, uint64_t *v,
					       const char *name)
{
	layout(minor);
	k[0] = str("_target");
	k[1] = str("_name");
	k[2] = str("_native_id");
	v[0] = 0x3001;
	v[1] = str(name);
	v[2] = pyint(77, 0);
	return &px.obj;
}

static void check_attrs(unsigned minor)
{
	static const char *const names[] = {"_name", "_native_id"};
	uint64_t k[3], v[3], got[2], sk, obj, tp;
	const struct py_objlayout *L;

	L = thread_attrs(minor, k, v, "the-name");
	/* A __dict__ (every version can have one). */
	if (L->attrs_model == PY_ATTRS_DICTOFFSET) {
		tp = type(0, 32, 16, 0);
		obj = instance(tp);
		put64(obj + 16, dict(keys(k, v, 3, 0), 0));
	} else {
		tp = type(L->flag_managed_dict, 16, -1, 0);
		obj = instance(tp);
		put64(obj + (uint64_t)(int64_t)L->managed_dict, dict(keys(k, v, 3, 1), 0));
	}
	assert_int_equal(pyobj_attrs(&rd, &po, L, NULL, obj, names, got, 2), 2);
	assert_int_equal(got[0], v[1]);
	assert_int_equal(got[1], v[2]);
	if (L->attrs_model == PY_ATTRS_DICTOFFSET) {
		/* The instance as its own dict: its "keys" are its type. */
		put64(obj + 16, obj);
		assert_true(pyobj_attrs(&rd, &po, L, NULL, obj, names, got, 2) <= 0);
		/* A negative or absurd tp_dictoffset is refused. */
		put64(tp + L->type_dictoffset, (uint64_t)-8);
		assert_int_equal(pyobj_attrs(&rd, &po, L, NULL, obj, names, got, 2), -1);
		return;
	}
	/* Values shared with the class's keys, no dict. */
	sk = keys(k, v, 3, 2);
	put64(tp + L->type_cached_keys, sk);
	obj = instance(tp);
	{
		uint64_t vv[3] = {0x4001, str("from-values"), pyint(88, 0)};
		uint64_t va = 0;

		if (L->attrs_model == PY_ATTRS_INLINE) {
			put64(tp + L->type_flags, L->flag_managed_dict | L->flag_inline_values);
			va = obj + 16;
			at(va + L->values_capacity)[0] = 3;
			at(va + L->values_valid)[0] = 1;
			for (int i = 0; i < 3; i++)
				put64(va + L->values_items + 8 * i, vv[i]);
		} else {
			va = values(vv, 3);
		}
		if (L->attrs_model == PY_ATTRS_VALUES_PTR)
			put64(obj + (uint64_t)(int64_t)L->managed_values, va);
		else if (L->attrs_model == PY_ATTRS_DORV)
			put64(obj + (uint64_t)(int64_t)L->managed_dict, va - 1);
		assert_int_equal(pyobj_attrs(&rd, &po, L, NULL, obj, names, got, 2), 2);
		assert_int_equal(got[0], vv[1]);
		assert_int_equal(got[1], vv[2]);
		if (L->attrs_model == PY_ATTRS_INLINE) {
			/* Capacity 2: the value past it is not this object's. */
			at(va + L->values_capacity)[0] = 2;
			assert_int_equal(pyobj_attrs(&rd, &po, L, NULL, obj, names, got, 2), 1);
			/* Values no longer in use, and no dict: torn. */
			at(va + L->values_valid)[0] = 0;
			assert_int_equal(pyobj_attrs(&rd, &po, L, NULL, obj, names, got, 2), -1);
		}
	}
	/* The class's shared keys pointing at the class itself. */
	put64(tp + L->type_cached_keys, tp);
	assert_true(pyobj_attrs(&rd, &po, L, NULL, obj, names, got, 2) <= 0);
}

static int count_pairs(void *ctx, uint64_t k, uint64_t v)
{
	(void)k;
	(void)v;
	++*(int *)ctx;
	return 0;
}

/* Every malformed shape: -1, or a bounded answer, and few reads. */
static void check_corrupt(unsigned minor)
{
	const struct py_objlayout *L;
	uint64_t k[2], v[2], kk, d, got;
	int n;

	layout(minor);
	L = &px.obj;
	k[0] = str("_name");
	k[1] = str("x");
	v[0] = 0x5001;
	v[1] = 0x5002;
	kk = keys(k, v, 2, 0);
	d = dict(kk, 0);
	assert_int_equal(get1(d, "_name", &got), 1);

	/* More entries than slots. */
	put64(kk + L->keys_nentries, 9);
	assert_int_equal(get1(d, "_name", &got), -1);
	/* A count past any bound. */
	put64(kk + L->keys_nentries, 1ull << 40);
	assert_int_equal(get1(d, "_name", &got), -1);
	put64(kk + L->keys_nentries, (uint64_t)-1);
	assert_int_equal(get1(d, "_name", &got), -1);
	put64(kk + L->keys_nentries, 2);
	if (L->keys_model == PY_KEYS_SIZE) {
		put64(kk + L->keys_size, 12); /* not a power of two */
		assert_int_equal(get1(d, "_name", &got), -1);
		put64(kk + L->keys_size, 1ull << 40); /* a read of terabytes */
		assert_int_equal(get1(d, "_name", &got), -1);
		put64(kk + L->keys_size, 8);
	} else {
		at(kk + L->keys_index_bytes)[0] = 40; /* does not follow from the size */
		assert_int_equal(get1(d, "_name", &got), -1);
		at(kk + L->keys_index_bytes)[0] = 3;
		at(kk + L->keys_size)[0] = 63;
		assert_int_equal(get1(d, "_name", &got), -1);
		at(kk + L->keys_size)[0] = 3;
		at(kk + L->keys_kind)[0] = 7;
		assert_int_equal(get1(d, "_name", &got), -1);
		at(kk + L->keys_kind)[0] = 0;
	}
	assert_int_equal(get1(d, "_name", &got), 1);

	/* Keys pointing at their own dict, and a dict that is its own keys. */
	put64(d + L->dict_keys, d);
	assert_int_equal(get1(d, "_name", &got), -1);
	/* Unmapped keys: a read error, errno kept. */
	put64(d + L->dict_keys, BASE + MEM_SIZE + 4096);
	assert_int_equal(get1(d, "_name", &got), -1);
	assert_int_not_equal(rd.last_errno, 0);

	/* A dict that is its own only key and value: visited once, no loop. */
	{
		uint64_t self_k[1], self_v[1];
		uint64_t d2 = alloc(48);

		self_k[0] = d2;
		self_v[0] = d2;
		put64(d2 + L->dict_keys, keys(self_k, self_v, 1, 0));
		n = 0;
		rd.reads = 0;
		assert_int_equal(pydict_scan(&rd, L, d2, count_pairs, &n), 0);
		assert_int_equal(n, 1);
		assert_true(rd.reads <= 4);
		assert_int_equal(get1(d2, "_name", &got), 0);
	}
	/* Entries that point into the keys header (a torn table): bounded. */
	{
		uint64_t junk[5] = {kk, kk + 8, kk + 16, d, d};

		put64(kk + L->keys_nentries, 5);
		memcpy(at(kk + L->keys_indices + 8), junk, sizeof(junk));
		rd.reads = 0;
		assert_true(get1(d, "_name", &got) >= -1);
		assert_true(rd.reads <= 16);
	}
	/* The split values array unmapped. */
	put64(kk + L->keys_nentries, 2);
	put64(d + L->dict_values, BASE + MEM_SIZE + 64);
	assert_int_equal(get1(d, "_name", &got), -1);
}

/* A big dict (300 entries of 512 slots): read in chunks, every key found. */
static void test_big_dict(void **state)
{
	const struct py_objlayout *L;
	uint64_t a, e, d, got;
	char name[16];

	(void)state;
	for (unsigned minor = 10; minor <= 12; minor += 2) {
		layout(minor);
		L = &px.obj;
		a = alloc(L->keys_indices + 1024 + 300 * 24);
		if (L->keys_model == PY_KEYS_SIZE) {
			put64(a + L->keys_size, 512);
			e = a + L->keys_indices + 1024; /* 2-byte indices */
		} else {
			at(a + L->keys_size)[0] = 9;
			at(a + L->keys_index_bytes)[0] = 10;
			at(a + L->keys_kind)[0] = 0;
			e = a + L->keys_indices + 1024;
		}
		put64(a + L->keys_nentries, 300);
		for (int i = 0; i < 300; i++) {
			snprintf(name, sizeof(name), "mod%d", i);
			put64(e + 24 * i + 8, str(name));
			put64(e + 24 * i + 16, 0x6000 + i);
		}
		d = dict(a, 0);
		assert_int_equal(get1(d, "mod299", &got), 1);
		assert_int_equal(got, 0x6000 + 299);
		assert_int_equal(get1(d, "mod130", &got), 1);
		assert_int_equal(got, 0x6000 + 130);
	}
}

/* pydict_scan_new: only what was appended, unless the table was rebuilt. */
static void test_scan_new(void **state)
{
	(void)state;
	for (unsigned minor = 10; minor <= 12; minor += 2) {
		const struct py_objlayout *L;
		struct pydict_pos pos = {0};
		uint64_t k[5], v[5], kk, d;
		int n = 0;

		layout(minor);
		L = &px.obj;
		for (int i = 0; i < 5; i++) {
			k[i] = str(i == 3 ? "three" : "key");
			v[i] = 0x7000 + (uint64_t)i;
		}
		kk = keys(k, v, 5, 0);
		d = dict(kk, 0);
		put64(kk + L->keys_nentries, 3);
		assert_int_equal(pydict_scan_new(&rd, L, d, &pos, count_pairs, &n), 0);
		assert_int_equal(n, 3);
		assert_true(pos.full);
		/* Two appended: two visited. */
		put64(kk + L->keys_nentries, 5);
		n = 0;
		assert_int_equal(pydict_scan_new(&rd, L, d, &pos, count_pairs, &n), 0);
		assert_int_equal(n, 2);
		assert_false(pos.full);
		n = 0;
		assert_int_equal(pydict_scan_new(&rd, L, d, &pos, count_pairs, &n), 0);
		assert_int_equal(n, 0);
		/* Rebuilt (new keys object): all again. */
		put64(d + L->dict_keys, keys(k, v, 4, 0));
		n = 0;
		assert_int_equal(pydict_scan_new(&rd, L, d, &pos, count_pairs, &n), 0);
		assert_int_equal(n, 4);
		assert_true(pos.full);
		/* Fewer entries than before in the same keys (torn): all again. */
		put64(d + L->dict_keys, kk);
		pos.next = 5;
		pos.keys = kk;
		put64(kk + L->keys_nentries, 2);
		n = 0;
		assert_int_equal(pydict_scan_new(&rd, L, d, &pos, count_pairs, &n), 0);
		assert_int_equal(n, 2);
		assert_true(pos.full);
	}
}

/* The memo: the second instance of a class costs no key or type reads,
 * and gives the same answers; one of another class is still read right. */
static void test_memo(void **state)
{
	static const char *const names[] = {"_name", "_native_id"};
	struct pyobj_memo memo = {0};
	uint64_t k[3], v[3], got[2], tp, a, b, c2;
	const struct py_objlayout *L;
	uint64_t r1, r2;

	(void)state;
	L = thread_attrs(12, k, v, "first");
	tp = type(L->flag_managed_dict, 16, -1, 0);
	a = instance(tp);
	b = instance(tp);
	put64(a + (uint64_t)(int64_t)L->managed_dict, dict(keys(k, v, 3, 1), 0));
	v[1] = str("second");
	put64(b + (uint64_t)(int64_t)L->managed_dict, dict(keys(k, v, 3, 1), 0));
	rd.reads = 0;
	assert_int_equal(pyobj_attrs(&rd, &po, L, &memo, a, names, got, 2), 2);
	r1 = rd.reads;
	rd.reads = 0;
	assert_int_equal(pyobj_attrs(&rd, &po, L, &memo, b, names, got, 2), 2);
	r2 = rd.reads;
	assert_int_equal(got[0], v[1]);
	assert_int_equal(got[1], v[2]);
	assert_true(r2 + 4 + 3 <= r1); /* 4 type words, 3 key strs */
	/* Another class, other key objects: read, and right. */
	k[1] = str("_name");
	v[1] = str("third");
	c2 = instance(type(L->flag_managed_dict, 16, -1, 0));
	put64(c2 + (uint64_t)(int64_t)L->managed_dict, dict(keys(k, v, 3, 1), 0));
	assert_int_equal(pyobj_attrs(&rd, &po, L, &memo, c2, names, got, 2), 2);
	assert_int_equal(got[0], v[1]);
}

/* Dicts, attributes and corrupt shapes in the layouts of 3.10 (dk_size
 * keys, tp_dictoffset), 3.11, 3.12 and 3.13 (from its debug offsets). */
static void test_layouts(void **state)
{
	(void)state;
	for (unsigned m = 10; m <= 13; m++) {
		check_dicts(m);
		check_attrs(m);
		check_corrupt(m);
	}
}

/* mem_read_each: whole reads only, the failed ones (unmapped, or running
 * into the guard page) marked and skipped, the rest still read. */
static void test_read_each(void **state)
{
	uint64_t addrs[] = {BASE, BASE + MEM_SIZE + 64, BASE + MEM_SIZE - 8, BASE + 64,
			    BASE + 4096};
	uint8_t out[5 * 16], ok[5];
	uint64_t r0;

	(void)state;
	reset();
	for (int i = 0; i < 5; i++)
		if (addrs[i] + 16 <= BASE + MEM_SIZE)
			memset(at(addrs[i]), 'a' + i, 16);
	r0 = rd.reads;
	assert_int_equal(mem_read_each(&rd, out, 16, addrs, 5, ok), 3);
	assert_memory_equal(ok, ((uint8_t[]){1, 0, 0, 1, 1}), 5);
	for (int i = 0; i < 5; i++)
		for (int k = 0; ok[i] && k < 16; k++)
			assert_int_equal(out[i * 16 + k], 'a' + i);
	/* Live: one call to the first failure, one for the read that runs into
	 * the guard, one for the rest. */
	if (live)
		assert_int_equal(rd.reads - r0, 3);
	assert_int_equal(mem_read_each(&rd, out, 16, addrs + 3, 2, ok), 2);
	assert_int_equal(mem_read_each(&rd, out, 0, addrs, 5, ok), 0);
}

static int setup(void **state)
{
	void *m;

	(void)state;
	/* The addresses the objects claim, and an unreadable page after. */
	m = mmap((void *)(uintptr_t)BASE, MEM_SIZE + 4096, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (m != (void *)(uintptr_t)BASE)
		return -1;
	if (mprotect((char *)m + MEM_SIZE, 4096, PROT_NONE))
		return -1;
	mem = m;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	munmap(mem, MEM_SIZE + 4096);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_layouts),  cmocka_unit_test(test_ints),
	    cmocka_unit_test(test_big_dict), cmocka_unit_test(test_scan_new),
	    cmocka_unit_test(test_memo),     cmocka_unit_test(test_read_each),
	};
	int failed = cmocka_run_group_tests_name("image reader", tests, setup, teardown);

	live = 1;
	return failed + cmocka_run_group_tests_name("live reader", tests, setup, teardown);
}
