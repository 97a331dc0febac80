// SPDX-License-Identifier: MIT
/*
 * Code-object cache: memory images of code objects laid out as pahole
 * measured them, an address reused by another code object, stale
 * fingerprints, unreadable objects, the eviction bound, and finally real
 * code objects of live interpreters, line by line against co_lines().
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "code_cache.h"
#include "py_offsets.h"
#include "pystr.h"
#include "walker_user.h"

#define V312 0x030c01f0u
#define V38  0x030812f0u

/*
 * Layouts from pahole on the pyenv builds, e.g.
 *   pahole -C PyCodeObject /root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0
 * 3.12: co_flags 48, co_argcount 52, co_firstlineno 68, co_filename 112,
 * co_name 120, co_qualname 128, co_linetable 136. 3.8: co_argcount 16,
 * co_flags 36, co_firstlineno 40, co_filename 104, co_name 112, co_lnotab
 * 120, no co_qualname. str: length 16, state 32, data 40/56 (3.12) or
 * 48/72 (3.8); bytes: ob_size 16, ob_sval 32.
 */
static struct py_offsets measured(uint32_t version)
{
	struct py_offsets o;

	memset(&o, 0, sizeof(o));
	o.version_hex = version;
	o.ob_type = 8;
	o.code_adaptive = version >= 0x030c0000 ? 192 : 0; /* co_code_adaptive */
	o.unicode_length = 16;
	o.unicode_state = 32;
	o.bytes_size = 16;
	o.bytes_data = 32;
	if (version >= 0x030c0000) {
		o.code_flags = 48;
		o.code_argcount = 52;
		o.code_firstlineno = 68;
		o.code_filename = 112;
		o.code_name = 120;
		o.code_qualname = 128;
		o.code_linetable = 136;
		o.code_read_size = 144;
		o.ascii_data_off = 40;
		o.compact_data_off = 56;
	} else {
		o.code_argcount = 16;
		o.code_flags = 36;
		o.code_firstlineno = 40;
		o.code_filename = 104;
		o.code_name = 112;
		o.code_linetable = 120;
		o.code_read_size = 128;
		o.ascii_data_off = 48;
		o.compact_data_off = 72;
	}
	return o;
}

/* The offsets the program really uses (user/python/py_offsets.c), held to what
 * pahole measured for every field this cache reads. */
static struct py_offsets offsets(uint32_t version)
{
	struct py_offsets m = measured(version), o;
	struct py_extra x;
	struct diag d;

	assert_int_equal(py_offsets_for_version(version, &o, &x, &d), 0);
	assert_int_equal(o.code_argcount, m.code_argcount);
	assert_int_equal(o.code_flags, m.code_flags);
	assert_int_equal(o.code_firstlineno, m.code_firstlineno);
	assert_int_equal(o.code_filename, m.code_filename);
	assert_int_equal(o.code_name, m.code_name);
	assert_int_equal(o.code_qualname, m.code_qualname);
	assert_int_equal(o.code_linetable, m.code_linetable);
	assert_int_equal(o.code_adaptive, m.code_adaptive);
	assert_true(o.code_read_size >= m.code_linetable + 8);
	assert_int_equal(o.unicode_length, m.unicode_length);
	assert_int_equal(o.unicode_state, m.unicode_state);
	assert_int_equal(o.ascii_data_off, m.ascii_data_off);
	assert_int_equal(o.compact_data_off, m.compact_data_off);
	assert_int_equal(o.bytes_size, m.bytes_size);
	assert_int_equal(o.bytes_data, m.bytes_data);
	return o;
}

/* --- a memory image with a bump allocator ------------------------------ */

#define BASE 0x7f3000000000ull

struct image {
	uint8_t *mem;
	size_t len, used;
	struct mem_region reg;
	struct mem_reader r;
};

static void image_init(struct image *im, size_t len)
{
	im->mem = calloc(1, len);
	assert_non_null(im->mem);
	im->len = len;
	im->used = 0;
	im->reg = (struct mem_region){BASE, im->mem, len};
	mem_reader_init_image(&im->r, &im->reg, 1);
}

static uint64_t image_alloc(struct image *im, size_t n)
{
	uint64_t a = BASE + im->used;

	im->used += (n + 15) & ~(size_t)15;
	assert_true(im->used <= im->len);
	return a;
}

static uint8_t *at(struct image *im, uint64_t addr)
{
	return im->mem + (addr - BASE);
}

static void put32(struct image *im, uint64_t addr, uint32_t v)
{
	memcpy(at(im, addr), &v, 4);
}

static void put64(struct image *im, uint64_t addr, uint64_t v)
{
	memcpy(at(im, addr), &v, 8);
}

static uint64_t new_ascii(struct image *im, const struct py_offsets *o, const char *s)
{
	size_t n = strlen(s);
	uint64_t a = image_alloc(im, o->ascii_data_off + n + 1);

	put64(im, a + o->unicode_length, n);
	put32(im, a + o->unicode_state, 1u << 2 | 1u << 5 | 1u << 6);
	memcpy(at(im, a + o->ascii_data_off), s, n + 1);
	return a;
}

static uint64_t new_bytes(struct image *im, const struct py_offsets *o, const uint8_t *b, size_t n)
{
	uint64_t a = image_alloc(im, o->bytes_data + n + 1);

	put64(im, a + o->bytes_size, n);
	memcpy(at(im, a + o->bytes_data), b, n);
	return a;
}

struct code_spec {
	const char *qualname, *file;
	int firstlineno, argcount, flags;
	const uint8_t *table;
	size_t table_len;
};

/* Write a code object at addr (allocating its strings and table). */
static void put_code(struct image *im, const struct py_offsets *o, uint64_t addr,
		     const struct code_spec *s)
{
	uint32_t name_off = o->code_qualname ? o->code_qualname : o->code_name;

	memset(at(im, addr), 0, 256);
	put32(im, addr + o->code_argcount, (uint32_t)s->argcount);
	put32(im, addr + o->code_flags, (uint32_t)s->flags);
	put32(im, addr + o->code_firstlineno, (uint32_t)s->firstlineno);
	put64(im, addr + name_off, new_ascii(im, o, s->qualname));
	put64(im, addr + o->code_filename, new_ascii(im, o, s->file));
	put64(im, addr + o->code_linetable, new_bytes(im, o, s->table, s->table_len));
}

/* What the walker records in frame_rec.instr for instruction index i. */
static int32_t raw_instr(const struct py_offsets *o, int i)
{
	if (o->frame_model == FRAME_MODEL_OBJECT)
		return o->lasti_is_bytes ? 2 * i : i;
	return (int32_t)o->code_adaptive + 2 * i;
}

/* The fingerprint the walker (BPF or user space) would report. */
static uint32_t walker_fp(struct image *im, const struct py_offsets *o, uint64_t addr)
{
	uint8_t cbuf[WALK_CBUF_SIZE + 8] = {0};

	memcpy(cbuf, at(im, addr), o->code_read_size);
	return walk_fingerprint(cbuf, o);
}

/* PEP 657 table (see test_linetable.c): instrs 0 -> +0, 1-5 -> +1, 6 none,
 * 7-8 -> +201, 9 -> -4, relative to firstlineno. */
static const uint8_t pep657[] = {0xE8, 0x00, 0xD9, 0x03, 0x07, 0x82, 0x04, 0xF8, 0xF1,
				 0x50, 0x06, 0x00, 0x05, 0x09, 0xE8, 0x5B, 0x06};
/* 3.12: "one line per instruction" */
static const uint8_t pep657_steps[] = {0xE8, 0x00, 0xE8, 0x02, 0xE8, 0x02, 0xE8, 0x02};

static const struct code_spec spec_x = {"Outer.func_x", "/src/x.py",   10, 2, 3,
					pep657,		sizeof(pep657)};
static const struct code_spec spec_y = {"func_y",     "/src/y.py",	   500, 1, 3,
					pep657_steps, sizeof(pep657_steps)};

static void test_hit_and_line(void **state)
{
	struct py_offsets o = offsets(V312);
	struct image im;
	struct code_cache *c;
	struct code_cache_stats st;
	const struct code_entry *e;
	struct sym_frame sf;
	uint64_t a, reads;
	uint32_t fp;
	(void)state;

	image_init(&im, 1 << 16);
	a = image_alloc(&im, 256);
	put_code(&im, &o, a, &spec_x);
	fp = walker_fp(&im, &o, a);
	c = code_cache_new(&im.r, &o, 0);
	assert_non_null(c);

	e = code_cache_lookup(c, a, fp);
	assert_int_equal(e->status, CODE_OK);
	assert_string_equal(e->name, "Outer.func_x");
	assert_string_equal(e->file, "/src/x.py");
	assert_int_equal(e->firstlineno, 10);
	assert_int_equal(e->fingerprint, fp);
	assert_int_equal(code_cache_line(e, 0), 10);
	assert_int_equal(code_cache_line(e, -1), 10);
	assert_int_equal(code_cache_line(e, 4), 11);
	assert_int_equal(code_cache_line(e, 6), -1);
	assert_int_equal(code_cache_line(e, 8), 211);
	assert_int_equal(code_cache_line(e, 10), -1);

	/* A hit costs no read of target memory at all. */
	reads = im.r.reads;
	assert_int_equal(code_cache_symbolize(c, &(struct frame_rec){a, raw_instr(&o, 9), fp}, &sf),
			 CODE_OK);
	assert_int_equal(im.r.reads, reads);
	assert_string_equal(sf.name, "Outer.func_x");
	assert_string_equal(sf.file, "/src/x.py");
	assert_int_equal(sf.line, 6);
	assert_int_equal(sf.firstlineno, 10);

	code_cache_get_stats(c, &st);
	assert_int_equal(st.misses, 1);
	assert_int_equal(st.hits, 1);
	assert_int_equal(st.refreshes, 0);
	assert_int_equal(st.size, 1);
	assert_int_equal(st.cap, CODE_CACHE_DEFAULT_CAP);
	code_cache_free(c);
	free(im.mem);
}

static void test_address_reuse(void **state)
{
	struct py_offsets o = offsets(V312);
	struct image im;
	struct code_cache *c;
	struct code_cache_stats st;
	const struct code_entry *e;
	struct sym_frame sf;
	uint64_t a;
	uint32_t fpx, fpy;
	(void)state;

	image_init(&im, 1 << 16);
	a = image_alloc(&im, 256);
	put_code(&im, &o, a, &spec_x);
	fpx = walker_fp(&im, &o, a);
	c = code_cache_new(&im.r, &o, 0);
	assert_string_equal(code_cache_lookup(c, a, fpx)->name, "Outer.func_x");

	/* X dies, Y is allocated at the same address. */
	put_code(&im, &o, a, &spec_y);
	fpy = walker_fp(&im, &o, a);
	assert_int_not_equal(fpx, fpy);
	e = code_cache_lookup(c, a, fpy);
	assert_int_equal(e->status, CODE_OK);
	assert_string_equal(e->name, "func_y");
	assert_string_equal(e->file, "/src/y.py");
	assert_int_equal(e->firstlineno, 500);
	assert_int_equal(code_cache_line(e, 3), 503);
	code_cache_get_stats(c, &st);
	assert_int_equal(st.refreshes, 1);
	assert_int_equal(st.size, 1);

	/* A sample taken while X lived, symbolized now: X is gone, and the
	 * frame must not be given X's name nor Y's. */
	assert_int_equal(
	    code_cache_symbolize(c, &(struct frame_rec){a, raw_instr(&o, 8), fpx}, &sf),
	    CODE_STALE);
	assert_string_equal(sf.name, CODE_CACHE_UNKNOWN);
	assert_string_equal(sf.file, CODE_CACHE_UNKNOWN);
	assert_int_equal(sf.line, -1);
	code_cache_get_stats(c, &st);
	assert_int_equal(st.stale, 1);
	assert_int_equal(st.refreshes, 1); /* Y's entry was still right */
	/* ... and Y is still served from the cache afterwards. */
	assert_string_equal(code_cache_lookup(c, a, fpy)->name, "func_y");
	code_cache_get_stats(c, &st);
	assert_int_equal(st.hits, 1);
	code_cache_free(c);

	/* Stale on first sight: nothing cached yet, the object already
	 * replaced. What is there now is not cached (it may be freed memory
	 * whose header still reads): the samples naming it read it then. */
	c = code_cache_new(&im.r, &o, 0);
	e = code_cache_lookup(c, a, fpx);
	assert_int_equal(e->status, CODE_STALE);
	assert_string_equal(e->name, CODE_CACHE_UNKNOWN);
	code_cache_get_stats(c, &st);
	assert_int_equal(st.size, 0);
	assert_int_equal(st.misses, 0);
	e = code_cache_lookup(c, a, fpy);
	assert_string_equal(e->name, "func_y");
	code_cache_get_stats(c, &st);
	assert_int_equal(st.stale, 1);
	assert_int_equal(st.misses, 1);
	assert_int_equal(st.hits, 0);
	code_cache_free(c);
	free(im.mem);
}

/* One stack names an address twice under two fingerprints (a torn live
 * read while code objects die and are born at one address): the second
 * frame refills the entry the first points into, and the first frame's
 * strings must stay valid until the caller ends the sample. ASan (make
 * test SAN=1) turns a regression into a use-after-free report; the soak
 * found it as a crash of record -a --clock wall. */
static void test_strings_live_until_end_of_sample(void **state)
{
	struct py_offsets o = offsets(V312);
	struct image im;
	struct code_cache *c;
	struct sym_frame f1, f2, f3;
	uint64_t a, xa, ya;
	uint32_t fpx, fpy;
	(void)state;

	/* X and Y built once; "allocating" one at a is copying its header. */
	image_init(&im, 1 << 16);
	a = image_alloc(&im, 256);
	xa = image_alloc(&im, 256);
	ya = image_alloc(&im, 256);
	put_code(&im, &o, xa, &spec_x);
	put_code(&im, &o, ya, &spec_y);
	memcpy(at(&im, a), at(&im, xa), 256);
	fpx = walker_fp(&im, &o, a);
	memcpy(at(&im, a), at(&im, ya), 256);
	fpy = walker_fp(&im, &o, a);
	assert_int_not_equal(fpx, fpy);

	c = code_cache_new(&im.r, &o, 0);
	memcpy(at(&im, a), at(&im, xa), 256);
	assert_int_equal(
	    code_cache_symbolize(c, &(struct frame_rec){a, raw_instr(&o, 3), fpx}, &f1), CODE_OK);
	memcpy(at(&im, a), at(&im, ya), 256);
	assert_int_equal(
	    code_cache_symbolize(c, &(struct frame_rec){a, raw_instr(&o, 3), fpy}, &f2), CODE_OK);
	memcpy(at(&im, a), at(&im, xa), 256);
	assert_int_equal(
	    code_cache_symbolize(c, &(struct frame_rec){a, raw_instr(&o, 3), fpx}, &f3), CODE_OK);
	/* Three refills of one entry within one sample: every frame intact. */
	assert_string_equal(f1.name, "Outer.func_x");
	assert_string_equal(f1.file, "/src/x.py");
	assert_string_equal(f2.name, "func_y");
	assert_string_equal(f2.file, "/src/y.py");
	assert_string_equal(f3.name, "Outer.func_x");
	code_cache_end_sample(c);
	/* Retired strings stay bounded without end_sample too (ASan and
	 * valgrind would see the leak or the overrun). */
	for (int i = 0; i < 20000; i++) {
		memcpy(at(&im, a), at(&im, i % 2 ? xa : ya), 256);
		code_cache_symbolize(c, &(struct frame_rec){a, 0, i % 2 ? fpx : fpy}, &f1);
	}
	assert_string_equal(f1.name, "Outer.func_x");
	code_cache_free(c);
	free(im.mem);
}

static void test_unknown_fingerprint(void **state)
{
	struct py_offsets o = offsets(V312);
	struct image im;
	struct code_cache *c;
	struct code_cache_stats st;
	const struct code_entry *e;
	uint64_t a, reads;
	(void)state;

	image_init(&im, 1 << 16);
	a = image_alloc(&im, 256);
	put_code(&im, &o, a, &spec_x);
	c = code_cache_new(&im.r, &o, 0);
	e = code_cache_lookup(c, a, 0);
	assert_string_equal(e->name, "Outer.func_x");
	assert_int_equal(e->fingerprint, walker_fp(&im, &o, a));
	/* Fingerprint 0 always re-reads the header (one read), and then
	 * trusts the entry only if the object is the same. */
	reads = im.r.reads;
	e = code_cache_lookup(c, a, 0);
	assert_string_equal(e->name, "Outer.func_x");
	assert_int_equal(im.r.reads, reads + 1);
	put_code(&im, &o, a, &spec_y);
	assert_string_equal(code_cache_lookup(c, a, 0)->name, "func_y");
	code_cache_get_stats(c, &st);
	assert_int_equal(st.misses, 1);
	assert_int_equal(st.revalidated, 1);
	assert_int_equal(st.refreshes, 1);
	assert_int_equal(st.hits, 0);
	code_cache_free(c);
	free(im.mem);
}

static void test_unreadable(void **state)
{
	struct py_offsets o = offsets(V312);
	struct image im;
	struct code_cache *c;
	struct code_cache_stats st;
	struct sym_frame sf;
	uint64_t a;
	uint32_t fp;
	(void)state;

	image_init(&im, 1 << 16);
	c = code_cache_new(&im.r, &o, 0);
	assert_int_equal(code_cache_symbolize(c, &(struct frame_rec){0x1000, 3, 77}, &sf),
			 CODE_UNREADABLE);
	assert_string_equal(sf.name, CODE_CACHE_UNKNOWN);
	assert_int_equal(sf.line, -1);
	assert_int_equal(code_cache_symbolize(c, &(struct frame_rec){0, 3, 0}, &sf),
			 CODE_UNREADABLE);

	/* Header readable, strings and table not: the frame keeps its place
	 * with unknown names instead of being dropped. */
	a = image_alloc(&im, 256);
	put_code(&im, &o, a, &spec_x);
	put64(&im, a + o.code_qualname, 0xdead0000);
	put64(&im, a + o.code_linetable, 0xdead0000);
	fp = walker_fp(&im, &o, a);
	assert_int_equal(code_cache_symbolize(c, &(struct frame_rec){a, raw_instr(&o, 3), fp}, &sf),
			 CODE_OK);
	assert_string_equal(sf.name, CODE_CACHE_UNKNOWN);
	assert_string_equal(sf.file, "/src/x.py");
	assert_int_equal(sf.firstlineno, 10);
	assert_int_equal(sf.line, -1);
	code_cache_get_stats(c, &st);
	assert_int_equal(st.unreadable, 2);
	assert_int_equal(st.size, 1);
	code_cache_free(c);
	free(im.mem);
}

/* 3.8: co_name instead of co_qualname, co_lnotab instead of PEP 657. */
static void test_pre311(void **state)
{
	static const uint8_t lnotab[] = {0, 2, 6, 1, 255, 0, 45, 0xfe};
	struct code_spec s = {"method", "/src/old.py", 1, 1, 0x43, lnotab, sizeof(lnotab)};
	struct py_offsets o = offsets(V38);
	struct image im;
	struct code_cache *c;
	const struct code_entry *e;
	uint64_t a;
	(void)state;

	assert_int_equal(o.code_qualname, 0);
	image_init(&im, 1 << 16);
	a = image_alloc(&im, 256);
	put_code(&im, &o, a, &s);
	c = code_cache_new(&im.r, &o, 0);
	e = code_cache_lookup(c, a, walker_fp(&im, &o, a));
	assert_int_equal(e->status, CODE_OK);
	assert_string_equal(e->name, "method");
	assert_int_equal(code_cache_line(e, 2), 3);
	assert_int_equal(code_cache_line(e, 3), 4);
	assert_int_equal(code_cache_line(e, 153), 2);
	code_cache_free(c);
	free(im.mem);
}

/*
 * Issue 11 row 8: a 40,000-line function on 3.9 has an 80,000-byte
 * co_lnotab; the cache copies the first PYBYTES_DEFAULT_CAP bytes. Lines
 * inside the copy are exact; past it, the line is unknown and counted,
 * never the line where the copy ends (32769 before).
 */
static void test_cut_lnotab(void **state)
{
	enum { LINES = 40000 };
	uint8_t *tab = malloc(2 * LINES);
	struct py_offsets o = offsets(0x030912f0u);
	struct code_spec s = {"long_fn", "/src/long.py", 1, 0, 0x43, tab, 2 * LINES};
	struct code_cache_stats st;
	struct sym_frame sf;
	struct image im;
	struct code_cache *c;
	const struct code_entry *e;
	uint32_t fp;
	uint64_t a;
	(void)state;

	assert_non_null(tab);
	/* Line i + 1 starts at byte 8 * i: pairs (8, +1), the first (0, +1). */
	for (int i = 0; i < LINES; i++) {
		tab[2 * i] = i ? 8 : 0;
		tab[2 * i + 1] = 1;
	}
	image_init(&im, 1 << 18);
	a = image_alloc(&im, 256);
	put_code(&im, &o, a, &s);
	c = code_cache_new(&im.r, &o, 0);
	fp = walker_fp(&im, &o, a);
	e = code_cache_lookup(c, a, fp);
	assert_int_equal(e->status, CODE_OK);
	assert_int_equal(e->table_truncated, 1);
	assert_int_equal(e->linetable_len, PYBYTES_DEFAULT_CAP);
	/* Inside the copy: exact (instruction index = byte / 2). */
	assert_int_equal(code_cache_line(e, 0), 2);
	assert_int_equal(code_cache_line(e, 4 * 1000), 1002);
	assert_int_equal(code_cache_line(e, 4 * 32000), 32002);
	/* The last pair of the copy starts line 32769; a later pair, unseen,
	 * may start a later line at any byte: unknown from there on. */
	assert_int_equal(code_cache_line(e, 4 * 32766), 32768);
	assert_int_equal(code_cache_line(e, 4 * 32767), -1);
	assert_int_equal(code_cache_line(e, 4 * 39998), -1);
	code_cache_get_stats(c, &st);
	assert_int_equal(st.lines_cut, 0); /* code_cache_line does not count */

	assert_int_equal(code_cache_symbolize(c, &(struct frame_rec){a, 2 * 4 * 39998, fp}, &sf),
			 CODE_OK);
	assert_int_equal(sf.line, -1);
	assert_int_equal(code_cache_symbolize(c, &(struct frame_rec){a, 2 * 4 * 100, fp}, &sf),
			 CODE_OK);
	assert_int_equal(sf.line, 102);
	code_cache_get_stats(c, &st);
	assert_int_equal(st.lines_cut, 1);
	code_cache_free(c);
	free(im.mem);
	free(tab);
}

static void test_eviction_bound(void **state)
{
	enum { N = 10000 };
	struct py_offsets o = offsets(V312);
	struct image im;
	struct code_cache *c;
	struct code_cache_stats st;
	static uint64_t addr[N];
	static uint32_t fp[N];
	char name[32];
	(void)state;

	image_init(&im, (size_t)N * 512);
	for (int i = 0; i < N; i++) {
		struct code_spec s = {name, "/src/many.py", i + 1, 0, 3, pep657, sizeof(pep657)};

		snprintf(name, sizeof(name), "f%05d", i);
		addr[i] = image_alloc(&im, 256);
		put_code(&im, &o, addr[i], &s);
		fp[i] = walker_fp(&im, &o, addr[i]);
	}
	c = code_cache_new(&im.r, &o, 0);
	for (int i = 0; i < N; i++) {
		const struct code_entry *e = code_cache_lookup(c, addr[i], fp[i]);

		snprintf(name, sizeof(name), "f%05d", i);
		assert_string_equal(e->name, name);
		assert_int_equal(code_cache_line(e, 8), i + 1 + 201);
		/* one hot function, used all along: LRU must keep it */
		assert_string_equal(code_cache_lookup(c, addr[0], fp[0])->name, "f00000");
		code_cache_get_stats(c, &st);
		assert_true(st.size <= CODE_CACHE_DEFAULT_CAP);
	}
	code_cache_get_stats(c, &st);
	assert_int_equal(st.size, CODE_CACHE_DEFAULT_CAP);
	assert_int_equal(st.misses, N);
	assert_int_equal(st.evictions, N - CODE_CACHE_DEFAULT_CAP);
	assert_int_equal(st.hits, N);
	/* the most recent cap-1 addresses are still there, the oldest not */
	assert_int_equal(code_cache_lookup(c, addr[N - 1], fp[N - 1])->status, CODE_OK);
	code_cache_get_stats(c, &st);
	assert_int_equal(st.hits, N + 1);
	code_cache_lookup(c, addr[1], fp[1]);
	code_cache_get_stats(c, &st);
	assert_int_equal(st.misses, N + 1);
	code_cache_clear(c);
	code_cache_get_stats(c, &st);
	assert_int_equal(st.size, 0);
	assert_string_equal(code_cache_lookup(c, addr[5], fp[5])->name, "f00005");
	code_cache_free(c);

	/* a small bound holds too */
	c = code_cache_new(&im.r, &o, 3);
	for (int i = 0; i < 100; i++)
		code_cache_lookup(c, addr[i % 7], fp[i % 7]);
	code_cache_get_stats(c, &st);
	assert_int_equal(st.size, 3);
	assert_int_equal(st.cap, 3);
	assert_int_equal(st.evictions, st.misses - 3);
	code_cache_free(c);
	free(im.mem);
}

/* --- live interpreters ------------------------------------------------ */

static const char live_src[] =
    "import sys, dis\n"
    "class K:\n"
    "    def method(self, n):\n"
    "        x = [i for i in range(n)]\n"
    "        try:\n"
    "            y = (x[0] +\n"
    "                 len(x))\n"
    "        except IndexError:\n"
    "            y = 0\n"
    "        return y\n"
    "co = K.method.__code__\n"
    "n = len(co.co_code) // 2\n"
    "L = [-1] * n\n"
    "if hasattr(co, 'co_lines'):\n"
    "    for s, e, l in co.co_lines():\n"
    "        for b in range(s, e, 2):\n"
    "            L[b // 2] = -1 if l is None else l\n"
    "else:\n"
    "    st = list(dis.findlinestarts(co))\n"
    "    for k, (off, l) in enumerate(st):\n"
    "        end = st[k + 1][0] if k + 1 < len(st) else 2 * n\n"
    "        for b in range(off, end, 2):\n"
    "            L[b // 2] = l\n"
    "print(sys.hexversion, id(co), co.co_firstlineno, ','.join(map(str, L)), flush=True)\n"
    "sys.stdin.read()\n";

static void check_live(const char *python)
{
	const char *argv[] = {python, "-c", live_src, NULL};
	static char line[1 << 16];
	int in[2], out[2], status, n = 0;
	unsigned long long id;
	unsigned version;
	int firstlineno, off;
	struct py_offsets o;
	struct py_extra x;
	struct diag d;
	struct mem_reader r;
	struct code_cache *c;
	const struct code_entry *e;
	FILE *from;
	pid_t pid;

	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	from = fdopen(out[0], "r");
	assert_non_null(fgets(line, sizeof(line), from));
	assert_int_equal(sscanf(line, "%u %llu %d %n", &version, &id, &firstlineno, &off), 3);
	assert_int_equal(py_offsets_for_version(version, &o, &x, &d), 0);
	mem_reader_init_pid(&r, pid);
	c = code_cache_new(&r, &o, 0);
	e = code_cache_lookup(c, id, 0);
	assert_int_equal(e->status, CODE_OK);
	assert_string_equal(e->name, version >= 0x030b0000 ? "K.method" : "method");
	assert_string_equal(e->file, "<string>");
	assert_int_equal(e->firstlineno, firstlineno);
	for (char *p = line + off; *p && *p != '\n'; n++) {
		char *end;
		long want = strtol(p, &end, 10);

		assert_true(end != p);
		if (code_cache_line(e, n) != want)
			fail_msg("%s: instr %d: line %d, CPython says %ld", python, n,
				 code_cache_line(e, n), want);
		p = *end == ',' ? end + 1 : end;
	}
	assert_true(n > 10);
	/* the fingerprint now known: a pure hit */
	assert_ptr_equal(code_cache_lookup(c, id, e->fingerprint), e);
	code_cache_free(c);
	close(in[1]);
	fclose(from);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_live(void **state)
{
	/* 3.13+ take their layout from the target's _Py_DebugOffsets, which
	 * needs the process layer; the measured tables cover 3.8-3.12. */
	static const char *pys[] = {
	    "/root/.pyenv/versions/3.8.18/bin/python3.8",
	    "/root/.pyenv/versions/3.9.18/bin/python3.9",
	    "/root/.pyenv/versions/3.10.13/bin/python3.10",
	    "/root/.pyenv/versions/3.11.7/bin/python3.11",
	    "/root/.pyenv/versions/3.12.1/bin/python3.12",
	};
	int ran = 0;
	(void)state;

	signal(SIGPIPE, SIG_IGN);
	for (size_t i = 0; i < sizeof(pys) / sizeof(pys[0]); i++) {
		if (access(pys[i], X_OK))
			continue;
		check_live(pys[i]);
		ran++;
	}
	assert_true(ran >= 1);
	print_message("symbolized live code objects of %d interpreters\n", ran);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hit_and_line),
	    cmocka_unit_test(test_address_reuse),
	    cmocka_unit_test(test_strings_live_until_end_of_sample),
	    cmocka_unit_test(test_unknown_fingerprint),
	    cmocka_unit_test(test_unreadable),
	    cmocka_unit_test(test_pre311),
	    cmocka_unit_test(test_cut_lnotab),
	    cmocka_unit_test(test_eviction_bound),
	    cmocka_unit_test(test_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
