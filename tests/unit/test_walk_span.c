// SPDX-License-Identifier: MIT
/*
 * The walker's bulk reads (bpf/frame_walker.h: walk_fill, walk_code), on
 * the host build of the one walker: chains laid out as CPython lays them
 * out (3.11+: frames one above the other in data-stack chunks; <= 3.10:
 * frame objects from pymalloc pools, the chain hopping among a few pools),
 * walked through page copies kept for one walk. Each case must give the
 * right stack or the right error, exactly as one read per frame did:
 * chains over two chunks, a previous pointer that leaves the copy (a
 * generator's frame on the heap) or points nowhere, cycles inside one
 * copy, torn chains, pools visited in turn, two pages on one slot, and
 * memory that changed since the last walk.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "diag.h"
#include "py_offsets.h"
#include "walker_user.h"

#define V310 0x030a0df0u
#define V311 0x030b07f0u
#define V312 0x030c01f0u

#define TSTATE	  0x400000ull
#define CFRAME	  0x410000ull
#define CHUNK1	  0x500000ull /* nothing mapped below: no copy may reach there */
#define CHUNK2	  0x900000ull
#define CHUNK_LEN 0x4000ull
#define HEAP	  0xa00040ull /* an image region that starts mid-page */
#define POOLS	  0xb00000ull /* <= 3.10: page-sized pymalloc pools */
#define NPOOLS	  (WALK_PAGES + 2)
#define FOBJ	  0x1a0 /* a 3.10 frame object's size in a recursion */
#define CODES	  0x600000ull
#define CODE(i)	  (CODES + (uint64_t)(i)*0x400ull)
#define CODE_TYPE 0x200000ull
#define NCODES	  8
#define STRIDE	  0x70 /* a frame and its locals */
#define MAXF	  260

/* The target's memory, zeroed by init() in one go. */
static struct {
	uint8_t ts[0x1000], cf[0x100], c1[CHUNK_LEN], c2[CHUNK_LEN], heap[0x1000],
	    code[NCODES * 0x400], pools[NPOOLS * 0x1000];
} mem;
#define ts_b   mem.ts
#define cf_b   mem.cf
#define c1_b   mem.c1
#define c2_b   mem.c2
#define heap_b mem.heap
#define code_b mem.code

struct img {
	struct proc_config cfg;
	struct mem_region regions[7];
	struct mem_reader r;
	uint64_t addr[MAXF]; /* root first */
	int code[MAXF];
	int n;
};

static uint8_t *host(uint64_t a)
{
	if (a >= CHUNK1 && a < CHUNK1 + CHUNK_LEN)
		return c1_b + (a - CHUNK1);
	if (a >= CHUNK2 && a < CHUNK2 + CHUNK_LEN)
		return c2_b + (a - CHUNK2);
	if (a >= HEAP && a < HEAP + sizeof(heap_b))
		return heap_b + (a - HEAP);
	if (a >= POOLS && a < POOLS + sizeof(mem.pools))
		return mem.pools + (a - POOLS);
	fail_msg("address 0x%llx outside the image", (unsigned long long)a);
	return NULL;
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

static void set_prev(struct img *im, int i, uint64_t prev)
{
	put64(host(im->addr[i]) + im->cfg.off.frame_previous, prev);
}

/* Code objects 0..NCODES-1, told apart by their first line. */
static void init(struct img *im, uint32_t version)
{
	struct py_extra x;
	struct diag d = {0};

	memset(im, 0, sizeof(*im));
	memset(&mem, 0, sizeof(mem));
	assert_int_equal(py_offsets_for_version(version, &im->cfg.off, &x, &d), 0);
	im->cfg.code_type_addr = CODE_TYPE;
	im->cfg.max_depth = BPFPY_DEFAULT_DEPTH;
	for (int c = 0; c < NCODES; c++) {
		put64(code_b + c * 0x400 + im->cfg.off.ob_type, CODE_TYPE);
		put64(code_b + c * 0x400 + im->cfg.off.code_firstlineno, 100 + (uint64_t)c);
	}
}

/* Append a frame at addr running code c, linked to the one before. */
static void push(struct img *im, uint64_t addr, int c)
{
	const struct py_offsets *o = &im->cfg.off;
	uint8_t *f = host(addr);

	assert_true(im->n < MAXF);
	put64(f + o->frame_code, CODE(c));
	put64(f + o->frame_previous, im->n ? im->addr[im->n - 1] : 0);
	/* f_lasti in bytes (<= 3.9) or code units, or an instruction pointer */
	if (o->frame_model == FRAME_MODEL_OBJECT)
		put64(f + o->frame_instr, (uint64_t)im->n * (o->lasti_is_bytes ? 2 : 1));
	else
		put64(f + o->frame_instr, CODE(c) + o->code_adaptive + 2 * (uint64_t)im->n);
	im->addr[im->n] = addr;
	im->code[im->n++] = c;
}

/* nlow frames at the bottom of chunk 1, then nhigh at the bottom of chunk
 * 2 (the frame chain crosses chunks as CPython's does when one fills). The
 * root is an entry frame where the version wants one. */
static void stack(struct img *im, int nlow, int nhigh)
{
	const struct py_offsets *o = &im->cfg.off;

	for (int i = 0; i < nlow; i++)
		push(im, CHUNK1 + 0x10 + (uint64_t)i * STRIDE, i % 3);
	for (int i = 0; i < nhigh; i++)
		push(im, CHUNK2 + 0x10 + (uint64_t)i * STRIDE, 3 + i % 5);
	if (o->frame_bottom_off)
		host(im->addr[0])[o->frame_bottom_off] =
		    (uint8_t)__builtin_ctz(o->frame_bottom_mask);
}

static void finish(struct img *im)
{
	const struct py_offsets *o = &im->cfg.off;
	uint64_t leaf = im->addr[im->n - 1];

	if (o->frame_model == FRAME_MODEL_CFRAME) {
		put64(ts_b + o->tstate_frame, CFRAME);
		put64(cf_b + o->cframe_current_frame, leaf);
	} else {
		put64(ts_b + o->tstate_frame, leaf);
	}
	im->regions[0] = (struct mem_region){TSTATE, ts_b, sizeof(ts_b)};
	im->regions[1] = (struct mem_region){CFRAME, cf_b, sizeof(cf_b)};
	im->regions[2] = (struct mem_region){CHUNK1, c1_b, sizeof(c1_b)};
	im->regions[3] = (struct mem_region){CHUNK2, c2_b, sizeof(c2_b)};
	im->regions[4] = (struct mem_region){HEAP, heap_b, sizeof(heap_b)};
	im->regions[5] = (struct mem_region){CODES, code_b, sizeof(code_b)};
	im->regions[6] = (struct mem_region){POOLS, mem.pools, sizeof(mem.pools)};
	mem_reader_init_image(&im->r, im->regions, 7);
}

struct result {
	struct walk_scratch s;
	struct walk_state w;
	struct frame_rec out[BPFPY_MAX_DEPTH];
	int err;
};

static struct result res;

/* Walk again with the scratch as the last walk left it, as BPF's per-CPU
 * scratch is left from one sample to the next. */
static int walk_again(struct img *im)
{
	memset(&res.w, 0, sizeof(res.w));
	im->r.reads = 0;
	res.err = walk_run(&res.w, &im->cfg, &im->r, &res.s, res.out, im->cfg.max_depth, TSTATE);
	return res.err;
}

static int walk(struct img *im)
{
	memset(&res, 0xa5, sizeof(res)); /* stale scratch must not matter */
	return walk_again(im);
}

/* The walk gave frames im->addr[hi] down to im->addr[lo], leaf first. */
static void expect_frames(const struct img *im, int hi, int lo)
{
	const struct py_offsets *o = &im->cfg.off;

	assert_int_equal(res.w.n, hi - lo + 1);
	for (int k = 0, i = hi; i >= lo; i--, k++) {
		int c = im->code[i];

		assert_int_equal(res.out[k].code, CODE(c));
		assert_int_equal(res.out[k].fingerprint, walk_fingerprint(code_b + c * 0x400, o));
		assert_int_equal(walk_instr_index(o, res.out[k].instr), i);
	}
}

/* The lowest frame a version emits: 3.12+ entry frames are shims, skipped. */
static int lowest(const struct img *im)
{
	const struct py_offsets *o = &im->cfg.off;

	return o->frame_bottom_off && ((o->skip_owner_mask & o->frame_bottom_mask) != 0);
}

static const uint32_t versions[] = {V310, V311, V312};

/* 250 frames over two chunks, each chunk wider than one copy. */
static void test_two_chunks(void **state)
{
	struct img im;

	(void)state;
	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		init(&im, versions[v]);
		stack(&im, 140, 110);
		finish(&im);
		assert_int_equal(walk(&im), WALK_OK);
		assert_true(res.w.done);
		assert_false(res.w.truncated);
		expect_frames(&im, im.n - 1, lowest(&im));
		/* A few dozen frames per copy and each code object read once,
		 * where one read per frame and per code object made 500. */
		assert_true(im.r.reads < 40);
	}
}

/* A previous pointer out of the copy: a generator's frame on the heap,
 * then back into the chunk; and one that points to unmapped memory. */
static void test_previous_leaves_copy(void **state)
{
	struct img im;
	int g;

	(void)state;
	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		init(&im, versions[v]);
		stack(&im, 40, 0);
		push(&im, HEAP + 0x200, 6); /* the generator's frame */
		g = im.n - 1;
		for (int i = 0; i < 30; i++)
			push(&im, CHUNK1 + 0x10 + (uint64_t)(40 + i) * STRIDE, i % 3);
		finish(&im);
		assert_int_equal(walk(&im), WALK_OK);
		expect_frames(&im, im.n - 1, lowest(&im));
		assert_int_equal(res.out[im.n - 1 - g].code, CODE(6));

		set_prev(&im, 20, 0x7000000ull);
		assert_int_equal(walk(&im), WALK_ERR_READ_FRAME);
		/* ... and a frame that runs off its copy's end into a hole */
		init(&im, versions[v]);
		stack(&im, 40, 0);
		set_prev(&im, 30, CHUNK1 + CHUNK_LEN - 8);
		finish(&im);
		assert_int_equal(walk(&im), WALK_ERR_READ_FRAME);
	}
}

/* A frame linking to itself inside a copy: the cycle error. Two frames
 * linking to each other: no end, so truncated at the depth bound, never
 * a complete stack (as with one read per frame). */
static void test_cycle_inside_copy(void **state)
{
	struct img im;

	(void)state;
	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		init(&im, versions[v]);
		stack(&im, 60, 0);
		set_prev(&im, 40, im.addr[40]);
		finish(&im);
		assert_int_equal(walk(&im), WALK_ERR_CYCLE);

		set_prev(&im, 40, im.addr[41]);
		assert_int_equal(walk(&im), WALK_OK);
		assert_false(res.w.done);
		assert_true(res.w.truncated);
		assert_int_equal(res.w.n, BPFPY_DEFAULT_DEPTH);
	}
}

/* Torn chains: cut above the entry frame (3.11/3.12), cut or not ending at
 * base_frame (3.15's rule, on 3.12's layout), a frame whose code is not a
 * code object or cannot be read. */
static void test_torn(void **state)
{
	struct img im;

	(void)state;
	for (uint32_t v = V311; v <= V312; v += 0x10000u) {
		init(&im, v);
		stack(&im, 100, 50);
		finish(&im);
		set_prev(&im, 120, 0);
		assert_int_equal(walk(&im), WALK_ERR_NO_ENTRY);
	}

	init(&im, V312);
	im.cfg.off.has_base_frame = 1;
	im.cfg.off.tstate_base_frame = 0x100;
	im.cfg.off.frame_bottom_off = 0;
	im.cfg.off.frame_bottom_mask = 0;
	stack(&im, 100, 50);
	finish(&im);
	put64(ts_b + 0x100, im.addr[0]);
	assert_int_equal(walk(&im), WALK_OK);
	expect_frames(&im, im.n - 1, 1);
	set_prev(&im, 120, 0);
	assert_int_equal(walk(&im), WALK_ERR_NO_BASE);

	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		init(&im, versions[v]);
		stack(&im, 100, 50);
		finish(&im);
		put64(host(im.addr[70]) + im.cfg.off.frame_code, CODES + 0x10000);
		assert_int_equal(walk(&im), WALK_ERR_READ_CODE);
		put64(code_b + 7 * 0x400 + im.cfg.off.ob_type, 0x1234);
		put64(host(im.addr[70]) + im.cfg.off.frame_code, CODE(7));
		assert_int_equal(walk(&im), WALK_ERR_BAD_CODE);
	}
}

/* <= 3.10 after a recursion has run many times: pymalloc hands the frame
 * objects out in an order that hops among a few pools, here a new pool at
 * every frame (pool = frame * 3 mod 8), 9 frames to a pool. Each pool's
 * page is copied once per walk, not once per frame. */
static void test_pool_hops(void **state)
{
	struct img im;
	int per[8] = {0};

	(void)state;
	init(&im, V310);
	for (int i = 0; i < 72; i++) {
		int pool = (i * 3) % 8;

		/* downwards in each pool, as pymalloc's first pass hands out */
		push(&im,
		     POOLS + (uint64_t)pool * 0x1000 + 0x30 + (uint64_t)(8 - per[pool]++) * FOBJ,
		     i % 4);
	}
	finish(&im);
	assert_int_equal(walk(&im), WALK_OK);
	assert_true(res.w.done);
	expect_frames(&im, im.n - 1, 0);
	/* 8 pages, 4 code objects, the thread state: 72 frame reads before */
	assert_true(im.r.reads <= 8 + 1 + 4 + 2);

	/* Over the same scratch, after the leaf's and the root's code changed
	 * in place (their pages are still in the slots): read again. */
	put64(host(im.addr[71]) + im.cfg.off.frame_code, CODE(7));
	put64(host(im.addr[0]) + im.cfg.off.frame_code, CODE(6));
	im.code[71] = 7;
	im.code[0] = 6;
	assert_int_equal(walk_again(&im), WALK_OK);
	expect_frames(&im, im.n - 1, 0);

	/* The leaf linking into page 0, after a walk that filled the slot
	 * page 0 maps to (pool 0's) and before this walk touches it:
	 * unreadable, not the last walk's copy. */
	set_prev(&im, 71, 0x40);
	assert_int_equal(walk_again(&im), WALK_ERR_READ_FRAME);
}

/* Two pools WALK_PAGES pages apart take the same slot: a chain that hops
 * between them is still read right, a copy per hop, and again after the
 * leaf's code and a link changed in place. */
static void test_slot_conflict_and_fresh(void **state)
{
	struct img im;
	int per[2] = {0};

	(void)state;
	init(&im, V310);
	for (int i = 0; i < 16; i++) {
		uint64_t pool = 1 + (uint64_t)(i % 2) * WALK_PAGES;

		push(&im, POOLS + pool * 0x1000 + 0x30 + (uint64_t)(8 - per[i % 2]++) * FOBJ,
		     i % 4);
	}
	finish(&im);
	assert_int_equal(walk(&im), WALK_OK);
	expect_frames(&im, im.n - 1, 0);
	assert_true(im.r.reads >= 16);

	put64(host(im.addr[15]) + im.cfg.off.frame_code, CODE(7));
	im.code[15] = 7;
	assert_int_equal(walk_again(&im), WALK_OK);
	expect_frames(&im, im.n - 1, 0);
	set_prev(&im, 10, 0x7000000ull);
	assert_int_equal(walk_again(&im), WALK_ERR_READ_FRAME);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_two_chunks),
	    cmocka_unit_test(test_previous_leaves_copy),
	    cmocka_unit_test(test_cycle_inside_copy),
	    cmocka_unit_test(test_torn),
	    cmocka_unit_test(test_pool_hops),
	    cmocka_unit_test(test_slot_conflict_and_fresh),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
