// SPDX-License-Identifier: MIT
/*
 * bpf/py_sample.bpf.h compiled for the host: the BPF programs' sample path
 * (find the thread state, walk, GIL flags, the record, the counters) run
 * on memory images laid out with the real per-version offsets. The BPF
 * helpers it calls are replaced by a few lines below (maps become plain
 * storage, bpf_loop a loop, the ring buffer a capture), so what is tested
 * is the logic the kernel runs, byte for byte the same source.
 *
 * Also the thread-list loop check of every reader (issue 11 row 9): the
 * BPF search and stack_read_all on a list whose tstate->next points back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/bpf.h>
#include <cmocka.h>

#include "code_cache.h"
#include "diag.h"
#include "py_offsets.h"
#include "py_opcodes.h"
#include "pystr.h"
#include "stack_reader.h"
#include "walker_user.h"

/* ---- the BPF side's environment, for the host ---- */

/* libbpf's own map-definition macros (bpf_helpers.h): maps become structs
 * of typed pointers, i.e. ordinary globals we can recognise by address. */
#define SEC(name)
#define __uint(name, val) int(*name)[val]
#define __type(name, val) typeof(val) *name
#define SCRATCH_SLOT	  0

static void *bpf_map_lookup_elem(void *map, const void *key);
static long bpf_map_update_elem(void *map, const void *key, const void *value, __u64 flags);
static long bpf_loop(__u32 nr, int (*fn)(__u32, void *), void *ctx, __u64 flags);
static long bpf_ringbuf_output(void *rb, void *data, __u64 size, __u64 flags);
static __u64 bpf_ktime_get_ns(void);
static __u32 bpf_get_smp_processor_id(void);

#include "py_sample.bpf.h"

#define CACHE_MAX 64
static struct sample_scratch scratch_mem;
static __u64 counter_mem[CNT__COUNT];
/* tid_tstates and tstate_owners: plain arrays. */
static struct {
	__u32 tid;
	struct thread_entry e;
} cache_mem[CACHE_MAX];
static int ncache;
static struct {
	struct tstate_owner_key k;
	__u32 tid;
} owner_mem[CACHE_MAX];
static int nowners;
/* code_names: a plain array, no eviction (tests stay far below the bound). */
#define NAMES_MAX 16
static struct {
	struct code_name_key k;
	struct code_name v;
} names_mem[NAMES_MAX];
static int nnames;
/* code_tables: the same, and a chunk can be made to fail its insert. */
#define TABLES_MAX 64
static struct {
	struct code_table_key k;
	struct code_table_chunk v;
} tables_mem[TABLES_MAX];
static int ntables, tables_fail_at = -1;
/* What the next tick's task says of itself: its CPU time, and whether it
 * is exiting (sample_req_task). */
static __u64 tick_cpu_ns;
static int tick_exiting;
static unsigned char rb_mem[sizeof(struct sample_buf)];
static __u64 rb_size;
static int rb_records;
static __u64 loop_turns;

static void *bpf_map_lookup_elem(void *map, const void *key)
{
	__u32 k = *(const __u32 *)key;

	if (map == &scratch)
		return k == 0 ? &scratch_mem : NULL;
	if (map == &counters)
		return k < CNT__COUNT ? &counter_mem[k] : NULL;
	if (map == &code_names) {
		for (int i = 0; i < nnames; i++)
			if (!memcmp(&names_mem[i].k, key, sizeof(names_mem[i].k)))
				return &names_mem[i].v;
		return NULL;
	}
	if (map == &code_tables) {
		for (int i = 0; i < ntables; i++)
			if (!memcmp(&tables_mem[i].k, key, sizeof(tables_mem[i].k)))
				return &tables_mem[i].v;
		return NULL;
	}
	if (map == &tid_tstates) {
		for (int i = 0; i < ncache; i++)
			if (cache_mem[i].tid == k && k)
				return &cache_mem[i].e;
		return NULL;
	}
	if (map == &tstate_owners) {
		for (int i = 0; i < nowners; i++)
			if (!memcmp(&owner_mem[i].k, key, sizeof(owner_mem[i].k)))
				return &owner_mem[i].tid;
		return NULL;
	}
	fail_msg("lookup in an unexpected map");
	return NULL;
}

static long bpf_map_update_elem(void *map, const void *key, const void *value, __u64 flags)
{
	struct thread_entry *e;

	if (map == &code_names) {
		assert_int_equal(flags, BPF_NOEXIST);
		if (bpf_map_lookup_elem(map, key))
			return -17; /* -EEXIST */
		assert_true(nnames < NAMES_MAX);
		memcpy(&names_mem[nnames].k, key, sizeof(names_mem[nnames].k));
		memcpy(&names_mem[nnames++].v, value, sizeof(names_mem[0].v));
		return 0;
	}
	if (map == &code_tables) {
		const struct code_table_key *tk = key;
		struct code_table_chunk *c;

		assert_int_equal(flags, BPF_ANY);
		if ((int)tk->chunk == tables_fail_at)
			return -12; /* -ENOMEM */
		c = bpf_map_lookup_elem(map, key);
		if (!c) {
			assert_true(ntables < TABLES_MAX);
			memcpy(&tables_mem[ntables].k, key, sizeof(tables_mem[0].k));
			c = &tables_mem[ntables++].v;
		}
		memcpy(c, value, sizeof(*c));
		return 0;
	}
	if (map == &tstate_owners) {
		__u32 *t = bpf_map_lookup_elem(map, key);

		if (!t) {
			assert_true(nowners < CACHE_MAX);
			memcpy(&owner_mem[nowners].k, key, sizeof(owner_mem[0].k));
			t = &owner_mem[nowners++].tid;
		}
		*t = *(const __u32 *)value;
		return 0;
	}
	assert_ptr_equal(map, &tid_tstates);
	e = bpf_map_lookup_elem(map, key);
	if (!e) {
		assert_true(ncache < CACHE_MAX);
		cache_mem[ncache].tid = *(const __u32 *)key;
		e = &cache_mem[ncache++].e;
	}
	memcpy(e, value, sizeof(*e));
	return 0;
}

static long bpf_loop(__u32 nr, int (*fn)(__u32, void *), void *ctx, __u64 flags)
{
	__u32 i;

	(void)flags;
	for (i = 0; i < nr; i++) {
		loop_turns++;
		if (fn(i, ctx))
			return i + 1;
	}
	return i;
}

static long bpf_ringbuf_output(void *rb, void *data, __u64 size, __u64 flags)
{
	(void)flags;
	assert_ptr_equal(rb, &events);
	assert_true(size <= sizeof(rb_mem));
	memcpy(rb_mem, data, size);
	rb_size = size;
	rb_records++;
	return 0;
}

static __u64 bpf_ktime_get_ns(void)
{
	static __u64 t = 1000;

	return t += 10;
}

static __u32 bpf_get_smp_processor_id(void)
{
	return 1;
}

/* ---- memory images ---- */

#define RUNTIME	  0x10000ull
#define INTERP	  0x20000ull
#define TSTATE(k) (0x40000ull + (uint64_t)(k)*0x2000ull)
#define CFRAME(k) (0x60000ull + (uint64_t)(k)*0x100ull)
#define FRAME(i)  (0x80000ull + (uint64_t)(i)*0x200ull)
#define CODE(i)	  (0x100000ull + (uint64_t)(i)*0x400ull)
#define CODE_TYPE 0x200000ull
#define NOT_CODE  0x200100ull
#define GIL	  0x300000ull /* locked int at +0, holder at +8 */
#define STRS	  0x400000ull /* str and bytes objects, see put_str */
#define NFRAMES	  (WALK_FRESH + 16)
#define NTHREADS  3

static uint8_t runtime_b[0x1000], interp_b[0x8000], tstate_b[NTHREADS][0x2000];
static uint8_t cframe_b[0x400], frame_b[NFRAMES * 0x200], code_b[NFRAMES * 0x400], gil_b[16];
static uint8_t strs_b[0x10000]; /* slots of 0x400; from slot 8 on, long tables */

struct image {
	struct proc_config cfg;
	struct mem_region regions[8];
	struct mem_reader r;
};

static void put64(uint8_t *base, uint64_t off, uint64_t v)
{
	memcpy(base + off, &v, sizeof(v));
}

static void put32(uint8_t *base, uint64_t off, uint32_t v)
{
	memcpy(base + off, &v, sizeof(v));
}

static void load_offsets(struct proc_config *cfg, uint32_t version)
{
	struct py_extra x;
	struct diag d = {0};

	memset(cfg, 0, sizeof(*cfg));
	assert_int_equal(py_offsets_for_version(version, &cfg->off, &x, &d), 0);
}

/*
 * nthreads thread states on one interpreter, thread k with OS tid 100 + k
 * (as the target sees it) and pthread_self 0x7000 + k; thread k has
 * depth[k] frames, each with its own code object.
 */
static void build(struct image *im, uint32_t version, int nthreads, const int *depth)
{
	const struct py_offsets *o;
	int f = 0;

	memset(runtime_b, 0, sizeof(runtime_b));
	memset(interp_b, 0, sizeof(interp_b));
	memset(tstate_b, 0, sizeof(tstate_b));
	memset(cframe_b, 0, sizeof(cframe_b));
	memset(frame_b, 0, sizeof(frame_b));
	memset(code_b, 0, sizeof(code_b));
	memset(gil_b, 0, sizeof(gil_b));
	memset(strs_b, 0, sizeof(strs_b));
	load_offsets(&im->cfg, version);
	o = &im->cfg.off;
	im->cfg.runtime_addr = RUNTIME;
	im->cfg.code_type_addr = CODE_TYPE;
	im->cfg.gil_locked_addr = GIL;
	im->cfg.gil_holder_addr = GIL + 8;
	im->cfg.max_depth = BPFPY_DEFAULT_DEPTH;
	assert_true((size_t)o->interp_threads_head + 8 <= sizeof(interp_b));
	put64(runtime_b, o->runtime_interpreters_head, INTERP);
	put64(interp_b, o->interp_threads_head, TSTATE(0));
	for (int k = 0; k < nthreads; k++) {
		uint8_t *ts = tstate_b[k];
		uint64_t next = 0;
		/* 3.11-3.14: the chain ends at an entry frame; 3.12+ makes it a
		 * shim of its own (skipped, so one more frame than depth). */
		int entry = o->frame_bottom_off ? __builtin_ctz(o->frame_bottom_mask) : -1;
		int shim = entry >= 0 && ((o->skip_owner_mask >> entry) & 1);
		int nf = depth[k] + shim;

		put64(ts, o->tstate_next, k + 1 < nthreads ? TSTATE(k + 1) : 0);
		if (o->tstate_native_thread_id)
			put64(ts, o->tstate_native_thread_id, 100 + (uint64_t)k);
		put64(ts, o->tstate_thread_id, 0x7000 + (uint64_t)k);
		for (int i = nf - 1; i >= 0; i--) {
			uint8_t *fr = frame_b + (f + i) * 0x200;
			uint8_t *co = code_b + (f + i) * 0x400;

			put64(co, o->ob_type, CODE_TYPE);
			put32(co, o->code_firstlineno, 10 * (uint32_t)(f + i));
			put64(fr, o->frame_code, CODE(f + i));
			put64(fr, o->frame_previous, next);
			put64(fr, o->frame_instr,
			      o->frame_model == FRAME_MODEL_OBJECT
				  ? 4
				  : CODE(f + i) + o->code_adaptive);
			if (entry >= 0 && i == nf - 1)
				fr[o->frame_bottom_off] = (uint8_t)entry;
			next = FRAME(f + i);
		}
		if (o->frame_model == FRAME_MODEL_CFRAME) {
			put64(ts, o->tstate_frame, CFRAME(k));
			put64(cframe_b + k * 0x100, o->cframe_current_frame, next);
		} else {
			put64(ts, o->tstate_frame, next);
		}
		f += nf;
	}
	im->regions[0] = (struct mem_region){RUNTIME, runtime_b, sizeof(runtime_b)};
	im->regions[1] = (struct mem_region){INTERP, interp_b, sizeof(interp_b)};
	im->regions[2] = (struct mem_region){TSTATE(0), tstate_b, sizeof(tstate_b)};
	im->regions[3] = (struct mem_region){CFRAME(0), cframe_b, sizeof(cframe_b)};
	im->regions[4] = (struct mem_region){FRAME(0), frame_b, sizeof(frame_b)};
	im->regions[5] = (struct mem_region){CODE(0), code_b, sizeof(code_b)};
	im->regions[6] = (struct mem_region){GIL, gil_b, sizeof(gil_b)};
	im->regions[7] = (struct mem_region){STRS, strs_b, sizeof(strs_b)};
	mem_reader_init_image(&im->r, im->regions, 8);
	memset(&scratch_mem, 0, sizeof(scratch_mem));
	memset(counter_mem, 0, sizeof(counter_mem));
	ncache = 0;
	nowners = 0;
	nnames = 0;
	ntables = 0;
	tables_fail_at = -1;
	rb_records = 0;
	rb_size = 0;
	loop_turns = 0;
	tick_cpu_ns = 0;
	tick_exiting = 0;
}

static void gil(int locked, uint64_t holder)
{
	put32(gil_b, 0, (uint32_t)locked);
	put64(gil_b, 8, holder);
}

/* A tick on thread k as the kernel sees it: host tid 5000 + k; the target
 * knows it as 100 + k (its PID namespace), pthread_self 0x7000 + k. */
static const struct sample_hdr *tick(struct image *im, int k, int in_container)
{
	struct sample_req q = {.cfg = &im->cfg, .reader = &im->r, .start_ns = 1, .pid = 4242};

	q.young = tick_cpu_ns < THREAD_STARTING_MAX_NS;
	q.exiting = (__u8)tick_exiting;
	q.tid = 5000 + (uint32_t)k;
	q.ns_tid = in_container ? 100 + (uint32_t)k : q.tid;
	q.pthread_self = 0x7000 + (uint64_t)k;
	rb_records = 0;
	if (sample_thread(&q))
		return NULL;
	assert_int_equal(rb_records, 1);
	return (const struct sample_hdr *)rb_mem;
}

static const struct frame_rec *frames_of(const struct sample_hdr *h)
{
	return (const struct frame_rec *)(h + 1);
}

#define V310 0x030a0df0u
#define V311 0x030b07f0u
#define V312 0x030c01f0u

/* 3.12: the namespace tid finds the thread, leaf first, GIL held. */
static void test_sample_in_container(void **state)
{
	static const int depth[] = {2, 3};
	struct image im;
	const struct sample_hdr *h;

	(void)state;
	build(&im, V312, 2, depth);
	gil(1, TSTATE(1));
	h = tick(&im, 1, 1);
	assert_non_null(h);
	assert_int_equal(h->pid, 4242);
	assert_int_equal(h->tid, 5001); /* host tid in the record */
	assert_int_equal(h->tstate, TSTATE(1));
	assert_int_equal(h->nframes, 3);
	assert_int_equal(rb_size, sizeof(*h) + 3 * sizeof(struct frame_rec));
	/* leaf: first frame of thread 1, after thread 0's 2 frames and shim */
	assert_int_equal(frames_of(h)[0].code, CODE(3));
	assert_int_equal(frames_of(h)[2].code, CODE(5));
	assert_int_equal(walk_instr_index(&im.cfg.off, frames_of(h)[0].instr), 0);
	assert_int_equal(h->flags, SAMPLE_GIL_KNOWN | SAMPLE_GIL_HELD);
	assert_int_equal(h->err, 0);
	assert_int_equal(counter_mem[CNT_EMITTED], 1);
	assert_int_equal(counter_mem[CNT_FRAMES], 4); /* the entry shim is visited too */
	/* cached under the host tid, and the hint is used next time */
	assert_int_equal(ncache, 1);
	assert_int_equal(cache_mem[0].tid, 5001);
	loop_turns = 0;
	h = tick(&im, 1, 1);
	assert_non_null(h);
	assert_int_equal(h->nframes, 3);
	assert_true(loop_turns <= WALK_TURNS(BPFPY_DEFAULT_DEPTH)); /* no search loop */
}

/* The bug of issue 11 row 15: comparing the host tid finds nothing. */
static void test_host_tid_does_not_match_3_11(void **state)
{
	static const int depth[] = {2};
	struct image im;

	(void)state;
	build(&im, V311, 1, depth);
	assert_null(tick(&im, 0, 0));
	assert_int_equal(counter_mem[CNT_NO_PYTHON], 1);
	assert_int_equal(counter_mem[CNT_EMITTED], 0);
	assert_non_null(tick(&im, 0, 1));
}

/* <= 3.10: pthread_self matches, the namespace does not matter. */
static void test_pthread_match_3_10(void **state)
{
	static const int depth[] = {1, 4};
	struct image im;
	const struct sample_hdr *h;

	(void)state;
	build(&im, V310, 2, depth);
	gil(1, TSTATE(0)); /* another thread holds it */
	h = tick(&im, 1, 0);
	assert_non_null(h);
	assert_int_equal(h->nframes, 4);
	assert_int_equal(h->flags, SAMPLE_GIL_KNOWN);
	assert_int_equal(walk_instr_index(&im.cfg.off, frames_of(h)[0].instr), 4);
	/* <= 3.10: one eval call per frame, so every frame ends one (splice mark) */
	assert_true(frames_of(h)[0].instr & (__s32)FRAME_INSTR_ENTRY);
	h = tick(&im, 1, 1);
	assert_non_null(h);
	assert_int_equal(h->nframes, 4);
}

/* Deeper than max_depth: the leaf part, flagged, counted. GIL unknown
 * without its addresses. */
static void test_truncated(void **state)
{
	static const int depth[] = {6};
	struct image im;
	const struct sample_hdr *h;

	(void)state;
	build(&im, V312, 1, depth);
	im.cfg.max_depth = 4;
	im.cfg.gil_holder_addr = 0;
	h = tick(&im, 0, 1);
	assert_non_null(h);
	assert_int_equal(h->nframes, 4);
	assert_int_equal(h->flags, SAMPLE_TRUNCATED);
	assert_int_equal(frames_of(h)[0].code, CODE(0));
	assert_int_equal(counter_mem[CNT_TRUNCATED], 1);
}

/* Failed walks: an error record with the cause, no frames. */
static void test_error_causes(void **state)
{
	static const int depth[] = {3};
	struct image im;
	const struct sample_hdr *h;

	(void)state;
	build(&im, V312, 1, depth);
	put64(code_b + 1 * 0x400, im.cfg.off.ob_type, NOT_CODE);
	h = tick(&im, 0, 1);
	assert_non_null(h);
	assert_int_equal(h->flags & SAMPLE_ERROR, SAMPLE_ERROR);
	assert_int_equal(h->err, WALK_ERR_BAD_CODE);
	assert_int_equal(h->nframes, 0);
	assert_int_equal(rb_size, sizeof(*h));
	assert_int_equal(counter_mem[CNT_ERR_BASE + WALK_ERR_BAD_CODE], 1);

	build(&im, V312, 1, depth);
	put64(frame_b + 1 * 0x200, im.cfg.off.frame_previous, 0xdead0000ull);
	h = tick(&im, 0, 1);
	assert_non_null(h);
	assert_int_equal(h->err, WALK_ERR_READ_FRAME);

	build(&im, V312, 1, depth);
	put64(frame_b + 1 * 0x200, im.cfg.off.frame_previous, FRAME(1));
	h = tick(&im, 0, 1);
	assert_non_null(h);
	assert_int_equal(h->err, WALK_ERR_CYCLE);
}

/* Issue 12: a chain that ends where no real chain ends (here: cut above
 * its entry frame, as a torn read would) is an error, in both readers. */
static void test_chain_must_end_at_entry(void **state)
{
	static const int depth[] = {3};
	struct thread_stack *ts = calloc(1, sizeof(*ts));
	struct image im;
	const struct sample_hdr *h;

	(void)state;
	assert_non_null(ts);
	for (int v = 0; v < 2; v++) {
		build(&im, v ? V312 : V311, 1, depth);
		assert_non_null(tick(&im, 0, 1));
		assert_int_equal(((const struct sample_hdr *)rb_mem)->err, 0);
		/* frame 1's previous (the frame below it) now ends the chain */
		put64(frame_b + 1 * 0x200, im.cfg.off.frame_previous, 0);
		h = tick(&im, 0, 1);
		assert_non_null(h);
		assert_int_equal(h->err, WALK_ERR_NO_ENTRY);
		assert_int_equal(h->nframes, 0);
		assert_int_equal(stack_read_thread(&im.r, &im.cfg, TSTATE(0), ts), -1);
		assert_int_equal(ts->err, WALK_ERR_NO_ENTRY);
		assert_string_equal(walk_error_name(ts->err),
				    "chain does not end at an entry frame");
	}
	/* <= 3.10 has no such rule */
	build(&im, V310, 1, depth);
	put64(frame_b + 1 * 0x200, im.cfg.off.frame_previous, 0);
	h = tick(&im, 0, 1);
	assert_non_null(h);
	assert_int_equal(h->err, 0);
	assert_int_equal(h->nframes, 2);
	free(ts);
}

/*
 * 3.11/3.12: a thread caught while an eval call is being entered
 * (walk_entry_expect()). Thread 0's cframe has a caller's, slot 3, whose
 * current frame is the one the innermost call's entry must link to; the
 * walk that finds it otherwise is taken again from there, in both
 * readers, and counted once it gives a stack.
 */
static void walk_both(struct image *im, struct thread_stack *ts, int err, int nframes,
		      uint64_t leaf, uint64_t retries)
{
	const struct sample_hdr *h = tick(im, 0, 1);

	assert_non_null(h);
	assert_int_equal(h->err, err);
	assert_int_equal(h->nframes, nframes);
	if (nframes)
		assert_int_equal(frames_of(h)[0].code, leaf);
	assert_int_equal(counter_mem[CNT_ENTRY_RETRY], retries);
	assert_int_equal(stack_read_thread(&im->r, &im->cfg, TSTATE(0), ts), err ? -1 : 0);
	assert_int_equal(ts->err, err);
	assert_int_equal(ts->nframes, h->nframes);
	assert_memory_equal(ts->frames, frames_of(h), h->nframes * sizeof(struct frame_rec));
}

static void test_eval_call_entry(void **state)
{
	static const int depth[] = {3};
	struct thread_stack *ts = calloc(1, sizeof(*ts));
	struct image im;

	(void)state;
	assert_non_null(ts);
	for (int v = 0; v < 2; v++) {
		const struct py_offsets *o;
		uint8_t *outer = cframe_b + 3 * 0x100;

		/* Consistent: 3.11's frame 0 is the entry of the inner call,
		 * linked to frame 1; 3.12's one shim, at the bottom, links to
		 * nothing, and so does the caller's cframe. */
		build(&im, v ? V312 : V311, 1, depth);
		o = &im.cfg.off;
		assert_int_not_equal(o->cframe_previous, 0);
		put64(cframe_b, o->cframe_previous, CFRAME(3));
		if (v) {
			put64(outer, o->cframe_current_frame, 0);
		} else {
			frame_b[o->frame_bottom_off] = (uint8_t)__builtin_ctz(o->frame_bottom_mask);
			put64(outer, o->cframe_current_frame, FRAME(1));
		}
		walk_both(&im, ts, 0, 3, CODE(0), 0);
		if (!v)
			assert_true(frames_of((const struct sample_hdr *)rb_mem)[0].instr &
				    (__s32)FRAME_INSTR_ENTRY);

		/* The stale frame of the call before, reinitialized by the new
		 * one (3.11: not yet is_entry): its chain ends at an entry that
		 * does not link to the caller's frame. Taken from frame 1. */
		build(&im, v ? V312 : V311, 1, depth);
		put64(cframe_b, o->cframe_previous, CFRAME(3));
		put64(outer, o->cframe_current_frame, FRAME(1));
		walk_both(&im, ts, 0, 2, CODE(1), 1);

		/* current_frame not yet set: a word of nothing. */
		build(&im, v ? V312 : V311, 1, depth);
		put64(cframe_b, o->cframe_previous, CFRAME(3));
		put64(outer, o->cframe_current_frame, FRAME(1));
		put64(cframe_b, o->cframe_current_frame, 0xdead0000ull);
		walk_both(&im, ts, 0, 2, CODE(1), 1);
		put64(cframe_b, o->cframe_current_frame, 0);
		walk_both(&im, ts, 0, 2, CODE(1), 2);

		/* Stale, and the caller's cframe too (its current frame no
		 * frame): the chain stands, its innermost frame the call being
		 * entered (3.11 marks it; 3.12's shim below it does). */
		build(&im, v ? V312 : V311, 1, depth);
		put64(cframe_b, o->cframe_previous, CFRAME(3));
		put64(outer, o->cframe_current_frame, 0xdead1000ull);
		walk_both(&im, ts, 0, 3, CODE(0), 0);
		assert_int_equal(!!(frames_of((const struct sample_hdr *)rb_mem)[0].instr &
				    (__s32)FRAME_INSTR_ENTRY),
				 !v);

		/* The caller's frame unreadable too: the first error stands
		 * (the walk is taken again once, not counted). */
		build(&im, v ? V312 : V311, 1, depth);
		put64(cframe_b, o->cframe_previous, CFRAME(3));
		put64(outer, o->cframe_current_frame, 0xdead1000ull);
		put64(cframe_b, o->cframe_current_frame, 0xdead0000ull);
		walk_both(&im, ts, WALK_ERR_READ_FRAME, 0, 0, 0);

		/* The target's own bad links are reported, not walked around:
		 * frame 0 linked to itself, to no frame, or to none. */
		build(&im, v ? V312 : V311, 1, depth);
		put64(cframe_b, o->cframe_previous, CFRAME(3));
		put64(outer, o->cframe_current_frame, FRAME(1));
		put64(frame_b, o->frame_previous, FRAME(0));
		walk_both(&im, ts, WALK_ERR_CYCLE, 0, 0, 0);
		put64(frame_b, o->frame_previous, 0xdead0000ull);
		walk_both(&im, ts, WALK_ERR_READ_FRAME, 0, 0, 0);
		put64(frame_b, o->frame_previous, 0);
		walk_both(&im, ts, WALK_ERR_NO_ENTRY, 0, 0, 0);

		/* A depth bound met before the entry: truncated, as it is. */
		build(&im, v ? V312 : V311, 1, depth);
		put64(cframe_b, o->cframe_previous, CFRAME(3));
		put64(outer, o->cframe_current_frame, FRAME(1));
		im.cfg.max_depth = 1;
		walk_both(&im, ts, 0, 1, CODE(0), 0);
		assert_true(((const struct sample_hdr *)rb_mem)->flags & SAMPLE_TRUNCATED);
	}
	free(ts);
}

/* tstate->next pointing to itself: the search stops at once with the
 * cause instead of turning TSTATE_SEARCH_MAX times. */
static void test_thread_list_loop_bpf(void **state)
{
	static const int depth[] = {1, 1, 1};
	struct image im;
	const struct sample_hdr *h;

	(void)state;
	build(&im, V312, 3, depth);
	put64(tstate_b[1], im.cfg.off.tstate_next, TSTATE(1));
	h = tick(&im, 2, 1); /* thread 2 is behind the loop */
	assert_non_null(h);
	assert_int_equal(h->err, WALK_ERR_THREAD_CYCLE);
	assert_int_equal(h->flags & SAMPLE_ERROR, SAMPLE_ERROR);
	assert_int_equal(h->tstate, 0);
	assert_int_equal(counter_mem[CNT_ERR_BASE + WALK_ERR_THREAD_CYCLE], 1);
	assert_true(loop_turns < 10);
	/* a thread before the loop is still found */
	h = tick(&im, 0, 1);
	assert_non_null(h);
	assert_int_equal(h->err, 0);
	assert_int_equal(h->nframes, 1);
}

/* A longer loop (0 -> 1 -> 2 -> 0): user space reports it once, each
 * thread once. */
static void test_thread_list_loop_user(void **state)
{
	static const int depth[] = {1, 2, 3};
	struct thread_stack *out = calloc(16, sizeof(*out));
	struct image im;
	struct diag d = {0};
	int count = -1;

	(void)state;
	assert_non_null(out);
	build(&im, V312, 3, depth);
	put64(tstate_b[2], im.cfg.off.tstate_next, TSTATE(0));
	assert_int_equal(stack_read_all(&im.r, &im.cfg, out, 16, &count, &d), -1);
	assert_int_equal(count, 3);
	assert_non_null(strstr(d.msg, "thread list loops at 0x"));
	for (int i = 0; i < 3; i++) {
		assert_int_equal(out[i].tstate, TSTATE(i));
		assert_int_equal(out[i].nframes, (uint32_t)depth[i]);
	}
	/* and a self-loop on the first thread */
	build(&im, V312, 3, depth);
	put64(tstate_b[0], im.cfg.off.tstate_next, TSTATE(0));
	assert_int_equal(stack_read_all(&im.r, &im.cfg, out, 16, &count, &d), -1);
	assert_int_equal(count, 1);
	/* an intact list is no error */
	build(&im, V312, 3, depth);
	assert_int_equal(stack_read_all(&im.r, &im.cfg, out, 16, &count, &d), 0);
	assert_int_equal(count, 3);
	free(out);
}

/* The same walk from both builds: the user-space reader and the BPF path
 * agree frame for frame. */
static void test_user_and_bpf_agree(void **state)
{
	static const int depth[] = {5};
	struct thread_stack *ts = calloc(1, sizeof(*ts));
	struct image im;
	const struct sample_hdr *h;

	(void)state;
	assert_non_null(ts);
	build(&im, V311, 1, depth);
	gil(1, TSTATE(0));
	h = tick(&im, 0, 1);
	assert_non_null(h);
	assert_int_equal(stack_read_thread(&im.r, &im.cfg, TSTATE(0), ts), 0);
	assert_int_equal(ts->nframes, h->nframes);
	assert_int_equal(ts->flags, h->flags);
	assert_int_equal(ts->tid, 100);
	assert_memory_equal(ts->frames, frames_of(h), h->nframes * sizeof(struct frame_rec));
	free(ts);
}

/* ---- issue 12 item 2: names of short-lived code, from the kernel ---- */

#define STR(slot) (STRS + (uint64_t)(slot)*0x400ull)

static void put_str(const struct py_offsets *o, int slot, const char *text, uint32_t state)
{
	uint8_t *b = strs_b + slot * 0x400;
	size_t n = strlen(text);

	put32(b, o->unicode_state, state);
	put64(b, o->unicode_length, n);
	memcpy(b + o->ascii_data_off, text, n);
}

static void put_table(const struct py_offsets *o, int slot, size_t n)
{
	uint8_t *b = strs_b + slot * 0x400;

	put64(b, o->bytes_size, n);
	for (size_t i = 0; i < n; i++)
		b[o->bytes_data + i] = (uint8_t)(i * 7 + (i >> 8) * 101); /* no 256-byte period */
}

static void point_code(const struct py_offsets *o, int code, int name, int file, int table)
{
	uint8_t *co = code_b + code * 0x400;

	put64(co, o->code_qualname ? o->code_qualname : o->code_name, STR(name));
	put64(co, o->code_filename, STR(file));
	put64(co, o->code_linetable, STR(table));
}

static int chunk_from_map(void *ctx, uint32_t i, struct code_table_chunk *buf)
{
	struct code_table_key k = {.name = *(const struct code_name_key *)ctx, .chunk = i};
	const struct code_table_chunk *v = bpf_map_lookup_elem(&code_tables, &k);

	if (!v)
		return -1;
	*buf = *v;
	return 0;
}

/* What bpf_loader_code_name() does with the maps, here the test's. */
static int names_from_map(void *ctx, uint32_t pid, uint64_t addr, uint32_t fp,
			  struct code_copy *out)
{
	struct code_name_key k = {.pid = pid, .fingerprint = fp, .code = addr};
	const struct code_name *v = bpf_map_lookup_elem(&code_names, &k);

	(void)ctx;
	if (!v)
		return -1;
	out->n = *v;
	code_copy_gather(out, chunk_from_map, &k);
	return 0;
}

/* The kernel names a code object on first sight, once: compact ASCII only,
 * the line table's first CODE_TABLE_MAX bytes; user space names the frame
 * from that copy after the object is gone, and only then. */
/* test_kernel_names, the kernel's side: the walk copies an ASCII name, its
 * file and line table into code_names once per (code, fingerprint); a
 * non-ASCII or over-long name is left to user space. fr gets the frames. */
static void kernel_names_copied(struct image *im, struct frame_rec *fr)
{
	const uint32_t non_ascii = 1u << 2 | 1u << 5; /* compact Latin-1 */
	const struct py_offsets *o = &im->cfg.off;
	const struct sample_hdr *h;

	put_str(o, 0, "func_a", PY_STR_ASCII_VALUE);
	put_str(o, 1, "A_file.py", PY_STR_ASCII_VALUE);
	put_table(o, 2, 20);
	put_str(o, 3, "caf\xe9", non_ascii);
	put_table(o, 4, CODE_TABLE_MAX + 44);
	point_code(o, 0, 0, 1, 2);
	point_code(o, 1, 3, 1, 4);
	h = tick(im, 0, 1);
	assert_non_null(h);
	assert_int_equal(h->nframes, 2);
	memcpy(fr, frames_of(h), 2 * sizeof(*fr));
	assert_int_equal(fr[0].code, CODE(0));
	/* frame 1's name is not ASCII: left to user space */
	assert_int_equal(nnames, 1);
	assert_int_equal(names_mem[0].k.pid, 4242);
	assert_int_equal(names_mem[0].k.code, CODE(0));
	assert_int_equal(names_mem[0].k.fingerprint, fr[0].fingerprint);
	assert_int_equal(names_mem[0].v.name_len, 6);
	assert_memory_equal(names_mem[0].v.name, "func_a", 6);
	assert_int_equal(names_mem[0].v.file_len, 9);
	assert_memory_equal(names_mem[0].v.file, "A_file.py", 9);
	assert_int_equal(names_mem[0].v.flags, CODE_NAME_FILE | CODE_NAME_TABLE);
	assert_int_equal(names_mem[0].v.table_len, 20);
	assert_int_equal(names_mem[0].v.table[3], 21);
	assert_int_equal(counter_mem[CNT_NAMED], 1);
	/* seen again: one lookup, nothing copied */
	assert_non_null(tick(im, 0, 1));
	assert_int_equal(nnames, 1);
	assert_int_equal(counter_mem[CNT_NAMED], 1);
	/* frame 1 with an ASCII name (same object, same fingerprint): its
	 * line table, longer than table[], is copied whole, the rest in
	 * a chunk of code_tables */
	put_str(o, 3, "func_b", PY_STR_ASCII_VALUE);
	assert_non_null(tick(im, 0, 1));
	assert_int_equal(nnames, 2);
	assert_int_equal(names_mem[1].v.table_len, CODE_TABLE_MAX + 44);
	assert_int_equal(names_mem[1].v.flags, CODE_NAME_FILE | CODE_NAME_TABLE);
	assert_int_equal(ntables, 1);
	assert_memory_equal(&tables_mem[0].k.name, &names_mem[1].k, sizeof(names_mem[1].k));
	assert_int_equal(tables_mem[0].k.chunk, 0);
	assert_memory_equal(tables_mem[0].v.bytes,
			    strs_b + 4 * 0x400 + o->bytes_data + CODE_TABLE_MAX, 44);
	/* a name as long as the buffer is left to user space */
	{
		char longname[CODE_NAME_MAX + 1];

		memset(longname, 'x', CODE_NAME_MAX);
		longname[CODE_NAME_MAX] = '\0';
		put_str(o, 5, longname, PY_STR_ASCII_VALUE);
		point_code(o, 0, 5, 1, 2); /* a new fingerprint */
		assert_non_null(tick(im, 0, 1));
		assert_int_equal(nnames, 2);
		point_code(o, 0, 0, 1, 2);
	}
}

/* test_kernel_names, user space's side: the kernel's copies name the frames
 * of fr even when the objects are gone, and are checked like any read. */
static void kernel_names_read(struct image *im, struct frame_rec *fr)
{
	const struct py_offsets *o = &im->cfg.off;
	struct code_cache *c;
	struct code_cache_stats st;
	struct sym_frame sf;
	uint32_t fp;

	/* on a miss, a whole kernel copy wins over the object: its line
	 * table may already be freed (here: emptied) while the header
	 * still matches */
	c = code_cache_new(&im->r, o, 0);
	assert_non_null(c);
	code_cache_set_names(c, names_from_map, NULL, 4242);
	put_table(o, 2, 0);
	assert_int_equal(code_cache_lookup(c, CODE(0), fr[0].fingerprint)->linetable_len, 20);
	/* frame 1's copy is whole too, chunk and all */
	put_table(o, 4, 0);
	assert_int_equal(code_cache_lookup(c, CODE(1), fr[1].fingerprint)->linetable_len,
			 CODE_TABLE_MAX + 44);
	code_cache_get_stats(c, &st);
	assert_int_equal(st.kernel_filled, 2);
	code_cache_free(c);

	/* both objects freed (here: zeroed) before user space reads them */
	memset(code_b, 0, 2 * 0x400);
	c = code_cache_new(&im->r, o, 0);
	assert_non_null(c);
	assert_int_equal(code_cache_symbolize(c, &fr[0], &sf), CODE_STALE);
	assert_string_equal(sf.name, CODE_CACHE_UNKNOWN);
	code_cache_set_names(c, names_from_map, NULL, 4242);
	assert_int_equal(code_cache_symbolize(c, &fr[0], &sf), CODE_OK);
	assert_string_equal(sf.name, "func_a");
	assert_string_equal(sf.file, "A_file.py");
	assert_int_equal(code_cache_symbolize(c, &fr[1], &sf), CODE_OK);
	assert_string_equal(sf.name, "func_b");
	assert_int_equal(sf.firstlineno, 10);
	/* a byte the kernel copied that is not ASCII after all (a hostile
	 * or torn str) is replaced, as pystr_read does: output is UTF-8 */
	names_mem[1].v.name[1] = (char)0xff;
	names_mem[1].v.name[2] = '\0';
	code_cache_clear(c);
	assert_int_equal(code_cache_symbolize(c, &fr[1], &sf), CODE_OK);
	assert_string_equal(sf.name, "f" PYSTR_REPLACEMENT PYSTR_REPLACEMENT "c_b");
	/* a fingerprint the kernel never saw, an unreadable address, another
	 * process: still unknown, which readers count as errors */
	fp = fr[0].fingerprint;
	fr[0].fingerprint = fp ^ 2;
	assert_int_equal(code_cache_symbolize(c, &fr[0], &sf), CODE_STALE);
	assert_string_equal(sf.name, CODE_CACHE_UNKNOWN);
	fr[0].fingerprint = fp;
	fr[0].code = 0xdead0000ull;
	assert_int_equal(code_cache_symbolize(c, &fr[0], &sf), CODE_UNREADABLE);
	code_cache_set_names(c, names_from_map, NULL, 4243);
	assert_int_equal(code_cache_symbolize(c, &fr[1], &sf), CODE_STALE);
	code_cache_end_sample(c);
	code_cache_get_stats(c, &st);
	assert_int_equal(st.kernel_named, 3);
	code_cache_free(c);
}

static void test_kernel_names(void **state)
{
	static const int depth[] = {2};
	static const uint32_t versions[] = {0x030807f0u, V310, V311, V312};

	(void)state;
	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		struct image im;
		struct frame_rec fr[2];

		build(&im, versions[v], 1, depth);
		kernel_names_copied(&im, fr);
		kernel_names_read(&im, fr);
	}
}

/* The process's own thread-state slots (proc_config.tstates) come before
 * tid_tstates: after a search the thread's slot holds its state and the
 * next sample finds it there without the map. A wrong slot (another
 * thread's state, an address that reads nothing) costs a search, never a
 * wrong stack, and the search corrects it. <= 3.10 (pthread_self) too. */
static void test_proc_tstate_slots(void **state)
{
	static const int depth[] = {2, 3};
	static const uint32_t versions[] = {V310, V312};
	const uint32_t slot = 5001 & (PROC_TSTATE_SLOTS - 1);

	(void)state;
	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		static const uint64_t wrong[] = {TSTATE(0), 0xdead0000ull};
		struct image im;
		const struct sample_hdr *h;

		build(&im, versions[v], 2, depth);
		h = tick(&im, 1, 1);
		assert_non_null(h);
		assert_int_equal(im.cfg.tstates[slot], TSTATE(1));
		ncache = 0; /* the map forgot it: the slot alone finds it, no search */
		h = tick(&im, 1, 1);
		assert_non_null(h);
		assert_int_equal(h->tstate, TSTATE(1));
		assert_int_equal(ncache, 0);
		for (size_t w = 0; w < 2; w++) {
			im.cfg.tstates[slot] = wrong[w];
			h = tick(&im, 1, 1);
			assert_non_null(h);
			assert_int_equal(h->tstate, TSTATE(1));
			assert_int_equal(h->nframes, 3);
			assert_int_equal(h->err, 0);
			assert_int_equal(im.cfg.tstates[slot], TSTATE(1));
		}
	}
}

/* Issue 28: the entry the hooks (bpf/thread_watch.bpf.h) leave for thread k
 * of the image, host tid 5000 + k. */
static struct thread_entry *entry_of(int k)
{
	__u32 tid = 5000 + (__u32)k;

	return bpf_map_lookup_elem(&tid_tstates, &tid);
}

static void put_entry(int k, __u64 tstate, __u8 phase, __u8 flags)
{
	struct thread_entry e = {.tstate = tstate, .pid = 4242, .phase = phase, .flags = flags};
	__u32 tid = 5000 + (__u32)k;

	assert_int_equal(bpf_map_update_elem(&tid_tstates, &tid, &e, BPF_ANY), 0);
}

/* A thread spawned and not bound yet: [thread starting], its state read
 * only for its id; once bound, an ordinary sample, and its entry live.
 * A "spawned" thread that binds nothing for longer than any CPython takes
 * is searched for like any other. 3.10 (pthread_self) and 3.12. */
static void test_thread_starting(void **state)
{
	static const int depth[] = {2, 3};
	static const uint32_t versions[] = {V310, V312};

	(void)state;
	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		struct image im;
		const struct sample_hdr *h;
		const struct py_offsets *o;

		build(&im, versions[v], 2, depth);
		o = &im.cfg.off;
		/* unbound: the creator's ids (<= 3.11) or 0 (3.12+) */
		put64(tstate_b[1], o->tstate_thread_id, 0x7000);
		if (o->tstate_native_thread_id)
			put64(tstate_b[1], o->tstate_native_thread_id, 0);
		put_entry(1, TSTATE(1), THREAD_PHASE_STARTING, THREAD_SPAWNED);
		loop_turns = 0;
		h = tick(&im, 1, 1);
		assert_non_null(h);
		assert_int_equal(h->thread_phase, THREAD_PHASE_STARTING);
		assert_int_equal(h->nframes, 0);
		assert_int_equal(h->flags & SAMPLE_ERROR, 0);
		assert_int_equal(h->tstate, 0);
		assert_int_equal(loop_turns, 0); /* no search, no walk */
		/* long past any CPython's start: searched, and not found */
		tick_cpu_ns = THREAD_STARTING_MAX_NS;
		assert_null(tick(&im, 1, 1));
		assert_int_equal(counter_mem[CNT_NO_PYTHON], 1);
		/* bound: its own ids */
		tick_cpu_ns = 0;
		put64(tstate_b[1], o->tstate_thread_id, 0x7001);
		if (o->tstate_native_thread_id)
			put64(tstate_b[1], o->tstate_native_thread_id, 101);
		h = tick(&im, 1, 1);
		assert_non_null(h);
		assert_int_equal(h->thread_phase, 0);
		assert_int_equal(h->nframes, 3);
		assert_int_equal(h->tstate, TSTATE(1));
		assert_int_equal(entry_of(1)->phase, 0);
		assert_int_equal(entry_of(1)->flags, THREAD_SPAWNED | THREAD_FRAMES);
		assert_int_equal(im.cfg.tstates[5001 & (PROC_TSTATE_SLOTS - 1)], TSTATE(1));
	}
}

/* A state cleared (PyThreadState_Clear seen) is never read again: the
 * thread's ticks are [thread exiting] with no read at all (its state here
 * is unreadable, as freed memory may be), as are those of a task the
 * kernel is tearing down. A thread not spawned by _thread may make
 * another state (PyGILState_Ensure): searched for, never finding the
 * cleared one. */
static void test_thread_exiting(void **state)
{
	static const int depth[] = {2, 3};
	struct image im;
	const struct sample_hdr *h;

	(void)state;
	build(&im, V312, 2, depth);
	put_entry(1, 0xdead0000ull, THREAD_PHASE_EXITING, THREAD_SPAWNED);
	loop_turns = 0;
	h = tick(&im, 1, 1);
	assert_non_null(h);
	assert_int_equal(h->thread_phase, THREAD_PHASE_EXITING);
	assert_int_equal(h->nframes, 0);
	assert_int_equal(h->flags & SAMPLE_ERROR, 0);
	assert_int_equal(loop_turns, 0);

	/* not spawned: the list still holds the cleared state, skipped */
	put_entry(1, TSTATE(1), THREAD_PHASE_EXITING, 0);
	h = tick(&im, 1, 1);
	assert_non_null(h);
	assert_int_equal(h->thread_phase, THREAD_PHASE_EXITING);
	assert_int_equal(h->tstate, 0);
	/* a new state of the thread (here: thread 0's, given its ids) */
	put64(tstate_b[0], im.cfg.off.tstate_native_thread_id, 101);
	h = tick(&im, 1, 1);
	assert_non_null(h);
	assert_int_equal(h->thread_phase, 0);
	assert_int_equal(h->tstate, TSTATE(0));
	assert_int_equal(h->nframes, 2);
	assert_int_equal(entry_of(1)->phase, 0);
	assert_int_equal(entry_of(1)->tstate, TSTATE(0));

	/* the kernel's exit: nothing of the target is read */
	build(&im, V312, 2, depth);
	tick_exiting = 1;
	loop_turns = 0;
	h = tick(&im, 1, 1);
	assert_non_null(h);
	assert_int_equal(h->thread_phase, THREAD_PHASE_EXITING);
	assert_int_equal(loop_turns, 0);
	assert_int_equal(ncache, 0);
}

/* A state without frames: before its thread's first Python frame
 * ([thread starting]) or after its last ([thread exiting]), told by
 * whether a sample of it had frames. Under --exception, not sampled. */
static void test_thread_no_frames(void **state)
{
	static const int depth[] = {2, 0};
	struct image im;
	const struct sample_hdr *h;

	(void)state;
	build(&im, V312, 2, depth);
	h = tick(&im, 1, 1);
	assert_non_null(h);
	assert_int_equal(h->tstate, TSTATE(1));
	assert_int_equal(h->nframes, 0);
	assert_int_equal(h->thread_phase, THREAD_PHASE_STARTING);
	entry_of(1)->flags |= THREAD_FRAMES;
	h = tick(&im, 1, 1);
	assert_non_null(h);
	assert_int_equal(h->thread_phase, THREAD_PHASE_EXITING);
	/* the slot of a thread that showed frames says so too */
	im.cfg.tstates[5001 & (PROC_TSTATE_SLOTS - 1)] = TSTATE(1);
	h = tick(&im, 1, 1);
	assert_non_null(h);
	assert_int_equal(h->thread_phase, THREAD_PHASE_EXITING);
	h = tick(&im, 0, 1);
	assert_non_null(h);
	assert_int_equal(h->thread_phase, 0);
	assert_int_equal(h->nframes, 2);

	im.cfg.flags |= PROC_EXCEPTION;
	put_entry(1, TSTATE(1), THREAD_PHASE_EXITING, THREAD_SPAWNED);
	assert_null(tick(&im, 1, 1));
	assert_int_equal(counter_mem[CNT_NO_EXCEPTION], 1);
}

/* The filter is two-way: two tags of one set both stay; a third only
 * takes a way when asked to (a kernel insert, not a seeded constant), and
 * then leaves one of the two; other sets are untouched. */
static void test_named_sets(void **state)
{
	__u64 named[PROC_NAMED_SLOTS] = {0};
	__u64 set5 = 5ull << 61, a = set5 | 0x11, b = set5 | 0x21, c = set5 | 0x33;
	__u64 other = (2ull << 61) | 0x41;

	(void)state;
	assert_int_equal(code_named_set(a), 10);
	assert_int_equal(code_named_set(c), code_named_set(a));
	code_named_put(named, a, 0);
	code_named_put(named, b, 1); /* an empty way: taken even so */
	code_named_put(named, other, 0);
	assert_true(code_named_has(named, a) && code_named_has(named, b));
	code_named_put(named, a, 0); /* already there: no second copy */
	assert_true(named[10] != named[11]);
	code_named_put(named, c, 1);
	assert_false(code_named_has(named, c));
	assert_true(code_named_has(named, a) && code_named_has(named, b));
	code_named_put(named, c, 0);
	assert_true(code_named_has(named, c));
	assert_true(code_named_has(named, a) != code_named_has(named, b));
	assert_true(code_named_has(named, other));
	for (__u32 i = 0; i < PROC_NAMED_SLOTS; i++)
		if (i != 10 && i != 11 && i != code_named_set(other))
			assert_int_equal(named[i], 0);
	assert_false(code_named_has(named, 0x1234)); /* an empty slot matches nothing */
}

/* Code object 0 gets an ASCII name, a file and a line table. */
static void name_code0(const struct py_offsets *o)
{
	put_str(o, 0, "func_a", PY_STR_ASCII_VALUE);
	put_str(o, 1, "A_file.py", PY_STR_ASCII_VALUE);
	put_table(o, 2, 20);
	point_code(o, 0, 0, 1, 2);
}

/* The entry of code_names for code object code, or NULL. */
static const struct code_name *named(uint64_t code)
{
	for (int i = 0; i < nnames; i++)
		if (names_mem[i].k.code == code)
			return &names_mem[i].v;
	return NULL;
}

/* Line tables past code_name.table: the kernel copies them in chunks into
 * code_tables (CODE_TABLE_LIMIT bytes at most) and user space gathers them
 * back whole; a chunk the kernel cannot store, or one the LRU evicted,
 * cuts the copy where it starts. A cut copy gives way to the object only
 * where the two agree: a freed module's code once read as "\x7f". */
static void test_kernel_tables(void **state)
{
	static const int depth[] = {2};
	static const uint32_t versions[] = {0x030807f0u, V312};
	const size_t longest = CODE_TABLE_LIMIT + 100;
	struct code_copy *k = malloc(sizeof(*k));

	(void)state;
	assert_non_null(k);
	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		struct image im;
		const struct py_offsets *o;
		const struct sample_hdr *h;
		const struct code_name *n;
		const struct code_entry *e;
		struct frame_rec fr[2];
		struct code_cache *c;
		struct code_cache_stats st;
		uint8_t *table;
		int gone = -1;

		build(&im, versions[v], 1, depth);
		o = &im.cfg.off;
		name_code0(o);
		put_str(o, 3, "func_b", PY_STR_ASCII_VALUE);
		put_table(o, 8, longest); /* slots 8 on: room for it */
		point_code(o, 1, 3, 1, 8);
		table = strs_b + 8 * 0x400 + o->bytes_data;
		h = tick(&im, 0, 1);
		assert_non_null(h);
		memcpy(fr, frames_of(h), 2 * sizeof(*fr));
		n = named(CODE(1));
		assert_non_null(n);
		assert_int_equal(n->table_len, CODE_TABLE_LIMIT);
		assert_int_equal(n->flags, CODE_NAME_FILE | CODE_NAME_TABLE | CODE_NAME_CUT);
		assert_int_equal(ntables, CODE_TABLE_CHUNKS);
		/* gathered back: the first CODE_TABLE_LIMIT bytes, in order */
		assert_int_equal(names_from_map(NULL, 4242, CODE(1), fr[1].fingerprint, k), 0);
		assert_int_equal(k->n.table_len, CODE_TABLE_LIMIT);
		assert_memory_equal(k->table, table, CODE_TABLE_LIMIT);

		/* the object agrees with the cut copy: read, table and all */
		c = code_cache_new(&im.r, o, 0);
		assert_non_null(c);
		code_cache_set_names(c, names_from_map, NULL, 4242);
		e = code_cache_lookup(c, CODE(1), fr[1].fingerprint);
		assert_int_equal(e->linetable_len, longest);
		assert_int_equal(e->from_copy, 0);
		/* freed, its name reading otherwise: the copy, cut */
		code_cache_clear(c);
		put_str(o, 3, "\x7f", PY_STR_ASCII_VALUE);
		e = code_cache_lookup(c, CODE(1), fr[1].fingerprint);
		assert_string_equal(e->name, "func_b");
		assert_int_equal(e->from_copy, 1);
		assert_int_equal(e->linetable_len, CODE_TABLE_LIMIT);
		assert_int_equal(e->table_truncated, 1);
		/* freed, a byte of its table's second chunk changed: the copy */
		code_cache_clear(c);
		put_str(o, 3, "func_b", PY_STR_ASCII_VALUE);
		table[CODE_TABLE_MAX + CODE_TABLE_CHUNK + 5] ^= 0xff;
		e = code_cache_lookup(c, CODE(1), fr[1].fingerprint);
		assert_int_equal(e->from_copy, 1);
		assert_int_equal(e->linetable_len, CODE_TABLE_LIMIT);
		table[CODE_TABLE_MAX + CODE_TABLE_CHUNK + 5] ^= 0xff;
		code_cache_get_stats(c, &st);
		assert_int_equal(st.kernel_filled, 2);
		code_cache_free(c);

		/* a chunk the LRU evicted cuts the gathered copy where it starts */
		for (int i = 0; i < ntables; i++)
			if (tables_mem[i].k.name.code == CODE(1) && tables_mem[i].k.chunk == 3)
				gone = i;
		assert_true(gone >= 0);
		tables_mem[gone].k.chunk = 99;
		assert_int_equal(names_from_map(NULL, 4242, CODE(1), fr[1].fingerprint, k), 0);
		assert_int_equal(k->n.table_len, CODE_TABLE_MAX + 3 * CODE_TABLE_CHUNK);
		assert_true(k->n.flags & CODE_NAME_CUT);
		assert_memory_equal(k->table, table, k->n.table_len);

		/* a chunk the kernel cannot store cuts the copy it stores */
		nnames = 0;
		ntables = 0;
		tables_fail_at = 2;
		memset(im.cfg.named, 0, sizeof(im.cfg.named));
		assert_non_null(tick(&im, 0, 1));
		n = named(CODE(1));
		assert_non_null(n);
		assert_int_equal(n->table_len, CODE_TABLE_MAX + 2 * CODE_TABLE_CHUNK);
		assert_int_equal(n->flags, CODE_NAME_FILE | CODE_NAME_TABLE | CODE_NAME_CUT);
		assert_int_equal(ntables, 2);
	}
	free(k);
}

/* The filter in front of code_names (proc_config.named): a code object
 * named, or found named, has its tag set, and a sample that finds the tag
 * looks nothing up and copies nothing. The user-space fill that
 * bpf_sampler_seed() runs copies exactly what the kernel copied. */
static void test_named_filter(void **state)
{
	static const int depth[] = {2};
	struct image im;
	const struct py_offsets *o;
	const struct sample_hdr *h;
	const struct code_name *k0;
	struct frame_rec fr[2];
	struct code_name n;
	__u8 cbuf[WALK_CBUF_SIZE + 8];
	__u64 tag;

	(void)state;
	build(&im, V312, 1, depth);
	o = &im.cfg.off;
	name_code0(o);
	point_code(o, 1, 0, 1, 2);
	h = tick(&im, 0, 1);
	assert_non_null(h);
	assert_int_equal(h->nframes, 2);
	memcpy(fr, frames_of(h), 2 * sizeof(*fr));
	assert_int_equal(nnames, 2);
	for (int i = 0; i < 2; i++) {
		tag = code_named_tag(fr[i].code, fr[i].fingerprint);
		assert_int_not_equal(tag, 0);
		assert_true(code_named_has(im.cfg.named, tag));
	}
	/* the map evicted them: the filter still knows, nothing is copied */
	nnames = 0;
	assert_non_null(tick(&im, 0, 1));
	assert_int_equal(nnames, 0);
	assert_int_equal(counter_mem[CNT_NAMED], 2);
	/* an empty filter (a new registration): looked up, copied again */
	memset(im.cfg.named, 0, sizeof(im.cfg.named));
	assert_non_null(tick(&im, 0, 1));
	assert_int_equal(nnames, 2);
	/* user space's copy of frame 0 is the kernel's */
	k0 = names_mem[0].k.code == fr[0].code ? &names_mem[0].v : &names_mem[1].v;
	memset(&n, 0x5a, sizeof(n));
	assert_int_equal(code_name_fill(&im.r, o, fr[0].code, fr[0].fingerprint, cbuf, &n), 0);
	assert_int_equal(n.firstlineno, k0->firstlineno);
	assert_int_equal(n.flags, k0->flags);
	assert_int_equal(n.name_len, 6);
	assert_int_equal(n.name_len, k0->name_len);
	assert_memory_equal(n.name, k0->name, n.name_len);
	assert_int_equal(n.file_len, k0->file_len);
	assert_memory_equal(n.file, k0->file, n.file_len);
	assert_int_equal(n.table_len, 20);
	assert_memory_equal(n.table, k0->table, n.table_len);
	/* not the object it claims to be, or not readable: nothing */
	assert_int_equal(code_name_fill(&im.r, o, fr[0].code, fr[0].fingerprint ^ 2, cbuf, &n), -1);
	assert_int_equal(code_name_fill(&im.r, o, 0xdead0000ull, fr[0].fingerprint, cbuf, &n), -1);
	/* a hostile length (negative, or past the buffer) names nothing */
	put64(strs_b, o->unicode_length, (uint64_t)-5);
	assert_int_equal(code_name_fill(&im.r, o, fr[0].code, fr[0].fingerprint, cbuf, &n), -1);
	put64(strs_b, o->unicode_length, CODE_NAME_MAX);
	assert_int_equal(code_name_fill(&im.r, o, fr[0].code, fr[0].fingerprint, cbuf, &n), -1);
}

/* Every frame of thread 0 runs code object 0, as a recursion does. */
static void one_code_for_all(const struct py_offsets *o, int nframes)
{
	for (int i = 0; i < nframes; i++) {
		uint8_t *fr = frame_b + i * 0x200;

		put64(fr, o->frame_code, CODE(0));
		if (o->frame_model != FRAME_MODEL_OBJECT)
			put64(fr, o->frame_instr, CODE(0) + o->code_adaptive);
	}
}

/* The naming pass visits the frames whose code object the walk read anew
 * (walk_scratch.fresh_at), not every frame: naming a 12-deep recursion
 * takes 2 turns of its loop where 12 code objects take 13. Past WALK_FRESH
 * code objects the list is incomplete and every frame is visited, so that
 * the outermost code object is named all the same. */
static void test_name_pass_turns(void **state)
{
	static const int deep[] = {12}, wide[] = {WALK_FRESH + 6};
	static const uint32_t versions[] = {V310, V311, V312};

	(void)state;
	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		const int outer = WALK_FRESH + 5;
		struct image im;
		const struct py_offsets *o;
		const struct sample_hdr *h;
		__u64 turns_one;
		int found = 0;

		build(&im, versions[v], 1, deep);
		o = &im.cfg.off;
		one_code_for_all(o, deep[0] + 1); /* the shim too, where there is one */
		name_code0(o);
		h = tick(&im, 0, 1);
		assert_non_null(h);
		assert_int_equal(h->nframes, deep[0]);
		assert_int_equal(scratch_mem.ws.nfresh, 1);
		assert_int_equal(nnames, 1);
		turns_one = loop_turns;

		/* the same stack, a code object for each frame */
		build(&im, versions[v], 1, deep);
		name_code0(o);
		h = tick(&im, 0, 1);
		assert_non_null(h);
		assert_int_equal(scratch_mem.ws.nfresh, deep[0]);
		assert_int_equal(nnames, 1);
		assert_int_equal(loop_turns - turns_one, deep[0] - 1);

		/* more code objects than fresh_at holds: the outermost is named */
		build(&im, versions[v], 1, wide);
		name_code0(o);
		put_str(o, 3, "outer", PY_STR_ASCII_VALUE);
		point_code(o, outer, 3, 1, 2);
		h = tick(&im, 0, 1);
		assert_non_null(h);
		assert_int_equal(h->nframes, wide[0]);
		assert_int_equal(scratch_mem.ws.nfresh, wide[0]);
		assert_int_equal(nnames, 2);
		for (int i = 0; i < nnames; i++)
			found |= names_mem[i].k.code == CODE(outer) &&
				 names_mem[i].v.name_len == 5 &&
				 !memcmp(names_mem[i].v.name, "outer", 5);
		assert_true(found);
	}
}

/* ---- record --async: the running task, captured with the frames ---- */

#define TASKS 0x500000ull
static uint8_t tasks_b[0x4000];
#define TASK(i)	 (TASKS + 0x400ull + (uint64_t)(i)*0x200ull)
#define TDICT	 (TASKS + 0x0ull)
#define TKEYS	 (TASKS + 0x100ull)
#define TSLOT_RT 0x1800 /* a running-task field inside the thread state */
/* Objects around tasks: done callbacks (built-in methods), their method
 * definitions and names, lists, tuples, sets, coroutines. */
#define AUX	  0x580000ull
#define CB(i)	  (AUX + (uint64_t)(i)*0x40ull) /* i < 16 */
#define MDEF(i)	  (AUX + 0x400ull + (uint64_t)(i)*0x10ull)
#define MNAME(i)  (AUX + 0x480ull + (uint64_t)(i)*0x20ull)
#define CBLIST	  (AUX + 0x500ull)
#define CBITEMS	  (AUX + 0x580ull)
#define TUP(i)	  (AUX + 0x600ull + (uint64_t)(i)*0x40ull) /* i < 8 */
#define AWSET	  (AUX + 0x800ull)
#define AWTABLE	  (AUX + 0x900ull)
#define CORO(i)	  (AUX + 0x1000ull + (uint64_t)(i)*0x200ull) /* i < 20 */
#define CORO_TYPE 0x9c0000ull
static uint8_t aux_b[0x4000];

/*
 * Thread 0 of a 3.12 image with 4 frames (+ the entry shim), frame
 * gen_at owned by a generator: the coroutine frame of task gen_task (of
 * ntasks in the current-tasks dict, whose keys claim nentries).
 */
static void build_async(struct image *im, int gen_at, int gen_task, int ntasks, uint64_t nentries)
{
	static const int depth[] = {4};
	struct async_config *a = &im->cfg.async;
	struct py_extra x;
	struct diag d = {0};
	const struct py_offsets *o;
	uint64_t entries;

	build(im, V312, 1, depth);
	o = &im->cfg.off;
	assert_int_equal(py_offsets_for_version(V312, &im->cfg.off, &x, &d), 0);
	assert_int_equal(py_async_offsets(&im->cfg.off, NULL, 0, &x, &d), 0);
	memset(tasks_b, 0, sizeof(tasks_b));
	im->cfg.flags |= PROC_ASYNC;
	a->current_tasks = TDICT;
	a->task_coro = x.async.task_coro;
	a->task_name = x.async.task_name;
	a->gen_iframe = x.async.coro.gen_iframe;
	a->gen_owner = x.async.gen_owner;
	a->dict_keys = x.obj.dict_keys;
	a->keys_log2_index_bytes = x.obj.keys_index_bytes;
	a->keys_nentries = x.obj.keys_nentries;
	a->keys_indices = x.obj.keys_indices;
	/* The first awaiter, 3.11-3.13's way (test_async_awaiter_* below). */
	a->task_callback0 = x.async.task_callback0;
	a->task_callbacks = x.async.task_callbacks;
	a->list_size = x.async.list_size;
	a->list_items = x.async.list_items;
	a->tuple_items = x.obj.tuple_items;
	a->cfunc_ml = x.async.cfunc_ml;
	a->cfunc_self = x.async.cfunc_self;
	memcpy(a->wakeup_name, x.async.wakeup_name, sizeof(a->wakeup_name));
	a->ob_type = o->ob_type;
	a->coro = x.async.coro;
	memset(aux_b, 0, sizeof(aux_b));
	frame_b[gen_at * 0x200 + o->frame_owner] = 1;
	put64(tasks_b, x.obj.dict_keys, TKEYS);
	tasks_b[0x100 + x.obj.keys_index_bytes] = 3; /* 8 bytes of indices */
	put64(tasks_b, 0x100 + x.obj.keys_nentries, nentries);
	entries = 0x100 + x.obj.keys_indices + 8;
	for (int i = 0; i < ntasks; i++) {
		uint64_t t = TASK(i) - TASKS;

		put64(tasks_b, entries + 24 * (uint64_t)i + 8, 0x9000 + (uint64_t)i); /* a loop */
		put64(tasks_b, entries + 24 * (uint64_t)i + 16, TASK(i));
		put64(tasks_b, t + a->task_coro,
		      i == gen_task ? FRAME(gen_at) - a->gen_iframe : 0x777000 + (uint64_t)i);
		put64(tasks_b, t + a->task_name, STR(1));
	}
	put_str(o, 1, "fetch-2", PY_STR_ASCII_VALUE);
	im->regions[7] = (struct mem_region){STRS, strs_b, sizeof(strs_b)};
	im->regions[0] = (struct mem_region){RUNTIME, runtime_b, sizeof(runtime_b)};
	{
		static struct mem_region regs[10];

		memcpy(regs, im->regions, sizeof(im->regions));
		regs[8] = (struct mem_region){TASKS, tasks_b, sizeof(tasks_b)};
		regs[9] = (struct mem_region){AUX, aux_b, sizeof(aux_b)};
		mem_reader_init_image(&im->r, regs, 10);
	}
}

static const struct task_rec *task_of(const struct sample_hdr *h)
{
	if (!(h->task_flags & TASK_REC_PRESENT))
		return NULL;
	assert_int_equal(rb_size, sizeof(*h) + h->nframes * sizeof(struct frame_rec) +
				      sizeof(struct task_rec));
	return (const struct task_rec *)(frames_of(h) + h->nframes);
}

/* 3.11-3.13: of three running tasks (three loops), the one whose coroutine
 * frame is this thread's generator frame; its name copied raw. */
static void test_async_running_task_dict(void **state)
{
	struct image im;
	const struct sample_hdr *h;
	const struct task_rec *tr;

	(void)state;
	build_async(&im, 1, 1, 3, 3);
	h = tick(&im, 0, 1);
	assert_non_null(h);
	assert_int_equal(h->nframes, 4);
	tr = task_of(h);
	assert_non_null(tr);
	assert_int_equal(tr->task, TASK(1));
	assert_int_equal(tr->coro, FRAME(1) - im.cfg.async.gen_iframe);
	assert_int_equal(tr->frame_idx, 1);
	assert_int_equal(tr->flags, TASK_AT_FRAME | TASK_NAME_READ);
	assert_memory_equal(tr->name_raw + im.cfg.off.ascii_data_off, "fetch-2", 7);
	assert_int_equal(counter_mem[CNT_TASK_FOUND], 1);

	/* No entry's coroutine is this thread's: no task, and said so. */
	build_async(&im, 1, -1, 3, 3);
	tr = task_of(tick(&im, 0, 1));
	assert_non_null(tr);
	assert_int_equal(tr->task, 0);
	assert_int_equal(tr->flags, TASK_NOT_FOUND);
	assert_int_equal(counter_mem[CNT_TASK_NONE], 1);

	/* More loops than scanned: the first TASK_SCAN_MAX only, flagged. */
	build_async(&im, 2, 9, 10, 10);
	tr = task_of(tick(&im, 0, 1));
	assert_int_equal(tr->task, 0);
	assert_true(tr->flags & TASK_SCAN_CUT);
	assert_int_equal(counter_mem[CNT_TASK_CUT], 1);
	build_async(&im, 2, 7, 10, 10);
	tr = task_of(tick(&im, 0, 1));
	assert_int_equal(tr->task, TASK(7));
	assert_int_equal(tr->frame_idx, 2);

	/* Hostile: keys unreadable, an absurd index size, a name pointer to
	 * nowhere: no task or no name, never a wrong one. */
	build_async(&im, 1, 1, 3, 3);
	put64(tasks_b, im.cfg.async.dict_keys, 0xdead0000ull);
	tr = task_of(tick(&im, 0, 1));
	assert_int_equal(tr->task, 0);
	build_async(&im, 1, 1, 3, 3);
	tasks_b[0x100 + im.cfg.async.keys_log2_index_bytes] = 63;
	tr = task_of(tick(&im, 0, 1));
	assert_int_equal(tr->task, 0);
	build_async(&im, 1, 1, 3, 3);
	put64(tasks_b, TASK(1) - TASKS + im.cfg.async.task_name, 0xdead0000ull);
	tr = task_of(tick(&im, 0, 1));
	assert_int_equal(tr->task, TASK(1));
	assert_int_equal(tr->flags, TASK_AT_FRAME);

	/* Without PROC_ASYNC the record is what it always was. */
	build_async(&im, 1, 1, 3, 3);
	im.cfg.flags &= ~PROC_ASYNC;
	h = tick(&im, 0, 1);
	assert_int_equal(h->task_flags, 0);
	assert_int_equal(rb_size, sizeof(*h) + h->nframes * sizeof(struct frame_rec));
}

/* 3.14+: the thread state names the task; its frame found the same way,
 * and a running task whose coroutine is not on the stack has no index. */
static void test_async_running_task_tstate(void **state)
{
	struct image im;
	const struct task_rec *tr;

	(void)state;
	build_async(&im, 3, 0, 1, 1);
	im.cfg.async.current_tasks = 0;
	im.cfg.async.tstate_running_task = TSLOT_RT;
	put64(tstate_b[0], TSLOT_RT, TASK(0));
	tr = task_of(tick(&im, 0, 1));
	assert_int_equal(tr->task, TASK(0));
	assert_int_equal(tr->frame_idx, 3);
	assert_true(tr->flags & TASK_AT_FRAME);
	put64(tasks_b, TASK(0) - TASKS + im.cfg.async.task_coro, 0x123000);
	tr = task_of(tick(&im, 0, 1));
	assert_int_equal(tr->task, TASK(0));
	assert_int_equal(tr->frame_idx, 0xffff);
	assert_false(tr->flags & TASK_AT_FRAME);
	put64(tstate_b[0], TSLOT_RT, 0);
	tr = task_of(tick(&im, 0, 1));
	assert_int_equal(tr->task, 0);
}

static void aux64(uint64_t addr, uint64_t v)
{
	put64(aux_b, addr - AUX, v);
}

/* Method definition i named name, and a built-in method of it at CB(cb)
 * whose self is self. */
static void put_cfunc(const struct async_config *a, int cb, int def, const char *name,
		      uint64_t self)
{
	memcpy(aux_b + (MNAME(def) - AUX), name, strlen(name) + 1);
	aux64(MDEF(def), MNAME(def));
	aux64(CB(cb) + a->cfunc_ml, MDEF(def));
	aux64(CB(cb) + a->cfunc_self, self);
}

/* Coroutine i: its frame runs code (an image code object) suspended in an
 * await of awaits (3.12's stack model: a count of slots). */
static void put_coro(const struct async_config *a, int i, uint64_t code, uint64_t awaits)
{
	const struct coro_layout *L = &a->coro;
	uint64_t c = CORO(i);

	aux64(c + a->ob_type, CORO_TYPE);
	aux_b[c - AUX + L->gen_frame_state] = (uint8_t)L->state_awaiting;
	aux64(c + L->gen_iframe + L->frame_code, code);
	aux64(c + L->gen_iframe + L->frame_instr, code + 0x60);
	put32(aux_b, c - AUX + L->gen_iframe + L->frame_stack, 3);
	aux64(c + L->gen_iframe + L->frame_localsplus + (3 - (uint64_t)L->await_slot) * 8, awaits);
}

/* Task i's coroutine and name (str slot). */
static void put_task(const struct async_config *a, int i, uint64_t coro, int name_slot)
{
	put64(tasks_b, TASK(i) - TASKS + a->task_coro, coro);
	put64(tasks_b, TASK(i) - TASKS + a->task_name, STR(name_slot));
}

/*
 * 3.11-3.13: the running task's awaiter is the self of its task_wakeup
 * done callback, fut_callback0 or one in fut_callbacks (the lowest of
 * those looked at), read at the sample with its coroutine, its name and
 * the coroutine frames where it is suspended (an await through a helper
 * coroutine, 2 frames, outermost first). Hostile: other callbacks, a
 * name that only starts like task_wakeup, definitions to nowhere.
 */
static void test_async_awaiter_callbacks(void **state)
{
	struct image im;
	const struct task_rec *tr;
	struct async_config *a = &im.cfg.async;

	(void)state;
	build_async(&im, 1, 1, 3, 3);
	put_str(&im.cfg.off, 2, "worker-2", PY_STR_ASCII_VALUE);
	put_task(a, 5, CORO(5), 2);
	put_coro(a, 5, CODE(7), CORO(6)); /* worker awaits a helper coroutine */
	put_coro(a, 6, CODE(8), TASK(1)); /* which awaits the running task */
	put_cfunc(a, 0, 0, "task_wakeup", TASK(5));
	put64(tasks_b, TASK(1) - TASKS + a->task_callback0, CB(0));
	tr = task_of(tick(&im, 0, 1));
	assert_int_equal(tr->task, TASK(1));
	assert_int_equal(tr->awaiter, TASK(5));
	assert_int_equal(tr->awaiter_coro, CORO(5));
	assert_int_equal(tr->nawaiters, 1);
	assert_int_equal(tr->aw_flags, TASK_AW_READ | TASK_AW_NAME_READ);
	assert_memory_equal(tr->awaiter_name_raw + im.cfg.off.ascii_data_off, "worker-2", 8);
	assert_int_equal(tr->naw_frames, 2);
	assert_int_equal(tr->aw_frames[0].code, CODE(7));
	assert_int_equal(tr->aw_frames[0].instr, 0x60);
	assert_int_equal(tr->aw_frames[1].code, CODE(8));

	/* A second awaiter at a lower address in fut_callbacks (a list of
	 * (callback, context) tuples), after a callback that is no
	 * task_wakeup: the lower taken, both counted. */
	put_task(a, 4, CORO(4), 2);
	put_coro(a, 4, CODE(9), TASK(1));
	put_cfunc(a, 1, 1, "_on_task_done", TASK(2));
	put_cfunc(a, 2, 0, "task_wakeup", TASK(4));
	aux64(CBLIST + a->list_size, 2);
	aux64(CBLIST + a->list_items, CBITEMS);
	aux64(CBITEMS, TUP(0));
	aux64(CBITEMS + 8, TUP(1));
	aux64(TUP(0) + a->tuple_items, CB(1));
	aux64(TUP(1) + a->tuple_items, CB(2));
	put64(tasks_b, TASK(1) - TASKS + a->task_callbacks, CBLIST);
	tr = task_of(tick(&im, 0, 1));
	assert_int_equal(tr->awaiter, TASK(4));
	assert_int_equal(tr->nawaiters, 2);
	assert_int_equal(tr->naw_frames, 1);
	assert_int_equal(tr->aw_frames[0].code, CODE(9));
	assert_false(tr->aw_flags & TASK_AW_CUT);
	/* A list longer than looked at: the lowest of those seen, flagged. */
	aux64(CBLIST + a->list_size, 1000000);
	tr = task_of(tick(&im, 0, 1));
	assert_int_equal(tr->awaiter, TASK(4));
	assert_true(tr->aw_flags & TASK_AW_CUT);

	/* No task_wakeup at all: a name that only starts like it, a method
	 * definition to nowhere, a callback to nowhere. None, but read. */
	put64(tasks_b, TASK(1) - TASKS + a->task_callbacks, 0);
	put_cfunc(a, 0, 0, "task_wakeupX", TASK(5));
	tr = task_of(tick(&im, 0, 1));
	assert_int_equal(tr->awaiter, 0);
	assert_int_equal(tr->aw_flags, TASK_AW_READ);
	assert_int_equal(tr->naw_frames, 0);
	aux64(CB(0) + a->cfunc_ml, 0xdead0000ull);
	assert_int_equal(task_of(tick(&im, 0, 1))->awaiter, 0);
	put64(tasks_b, TASK(1) - TASKS + a->task_callback0, 0xdead0000ull);
	assert_int_equal(task_of(tick(&im, 0, 1))->awaiter, 0);
}

/*
 * 3.14+: awaited_by holds the awaiter, or a set of them: the lowest of
 * the live entries among the first TASK_AW_SLOTS slots (a dummy has hash
 * -1), the set's size as the count; a set larger than looked at is
 * flagged; an awaiter whose is_task byte is not 1 is dropped. Its chain:
 * a coroutine awaiting itself ends it, and more than TASK_AW_FRAMES
 * links cut it.
 */
static void test_async_awaiter_awaited_by(void **state)
{
	struct image im;
	const struct task_rec *tr;
	struct async_config *a = &im.cfg.async;

	(void)state;
	build_async(&im, 1, 1, 3, 3);
	/* Fields of a task of this image used as 3.14's. */
	a->task_callbacks = 0;
	a->task_awaited_by = 0x20;
	a->task_awaited_by_is_set = 0x2c;
	a->task_is_task = 0x2d;
	a->set_used = 24;
	a->set_mask = 32;
	a->set_table = 40;
	put_str(&im.cfg.off, 2, "parent", PY_STR_ASCII_VALUE);
	for (int i = 4; i <= 7; i++) {
		put_task(a, i, CORO(i), 2);
		tasks_b[TASK(i) - TASKS + a->task_is_task] = 1;
		put_coro(a, i, CODE(i), TASK(1));
	}
	/* Awaited by itself (hostile): none. */
	put64(tasks_b, TASK(1) - TASKS + a->task_awaited_by, TASK(1));
	tr = task_of(tick(&im, 0, 1));
	assert_int_equal(tr->awaiter, 0);
	assert_int_equal(tr->nawaiters, 0);
	put64(tasks_b, TASK(1) - TASKS + a->task_awaited_by, TASK(6));
	tr = task_of(tick(&im, 0, 1));
	assert_int_equal(tr->awaiter, TASK(6));
	assert_int_equal(tr->nawaiters, 1);
	assert_int_equal(tr->aw_flags, TASK_AW_READ | TASK_AW_NAME_READ);
	assert_int_equal(tr->naw_frames, 1);
	assert_int_equal(tr->aw_frames[0].code, CODE(6));

	/* A set of 3 (table of 8): a dummy at a lower address, skipped. */
	put64(tasks_b, TASK(1) - TASKS + a->task_awaited_by, AWSET);
	tasks_b[TASK(1) - TASKS + a->task_awaited_by_is_set] = 1;
	aux64(AWSET + a->set_used, 3);
	aux64(AWSET + a->set_mask, 7);
	aux64(AWSET + a->set_table, AWTABLE);
	aux64(AWTABLE + 1 * 16, TASK(6));
	aux64(AWTABLE + 1 * 16 + 8, 1234);
	aux64(AWTABLE + 3 * 16, TASK(2)); /* a dummy */
	aux64(AWTABLE + 3 * 16 + 8, (uint64_t)-1);
	aux64(AWTABLE + 4 * 16, TASK(5));
	aux64(AWTABLE + 4 * 16 + 8, 99);
	aux64(AWTABLE + 7 * 16, TASK(7));
	aux64(AWTABLE + 7 * 16 + 8, 5);
	tr = task_of(tick(&im, 0, 1));
	assert_int_equal(tr->awaiter, TASK(5));
	assert_int_equal(tr->nawaiters, 3);
	assert_false(tr->aw_flags & TASK_AW_CUT);
	/* A million awaiters: the first slots only, the set's own count. */
	aux64(AWSET + a->set_used, 1000000);
	aux64(AWSET + a->set_mask, (1u << 21) - 1);
	tr = task_of(tick(&im, 0, 1));
	assert_int_equal(tr->awaiter, TASK(5));
	assert_int_equal(tr->nawaiters, 1000000);
	assert_true(tr->aw_flags & TASK_AW_CUT);
	/* The lowest is no task: dropped, and said so. */
	tasks_b[TASK(5) - TASKS + a->task_is_task] = 0;
	tr = task_of(tick(&im, 0, 1));
	assert_int_equal(tr->awaiter, 0);
	assert_true(tr->aw_flags & TASK_AW_NOT_TASK);

	/* One awaiter again; its coroutine awaits itself: one frame. A chain
	 * of five coroutines: TASK_AW_FRAMES, cut. None at all: read, none. */
	tasks_b[TASK(1) - TASKS + a->task_awaited_by_is_set] = 0;
	put64(tasks_b, TASK(1) - TASKS + a->task_awaited_by, TASK(6));
	put_coro(a, 6, CODE(6), CORO(6));
	tr = task_of(tick(&im, 0, 1));
	assert_int_equal(tr->naw_frames, 1);
	assert_false(tr->aw_flags & TASK_AW_FRAMES_CUT);
	for (int i = 0; i < 5; i++)
		put_coro(a, 10 + i, CODE(10 + i), i < 4 ? CORO(11 + i) : TASK(1));
	put_task(a, 6, CORO(10), 2);
	tr = task_of(tick(&im, 0, 1));
	assert_int_equal(tr->naw_frames, TASK_AW_FRAMES);
	assert_int_equal(tr->aw_frames[TASK_AW_FRAMES - 1].code, CODE(13));
	assert_true(tr->aw_flags & TASK_AW_FRAMES_CUT);
	/* A link of another type (a Task, a Future) ends the chain there. */
	aux64(CORO(12) + a->ob_type, CORO_TYPE + 0x100);
	tr = task_of(tick(&im, 0, 1));
	assert_int_equal(tr->naw_frames, 2);
	assert_false(tr->aw_flags & TASK_AW_FRAMES_CUT);
	put64(tasks_b, TASK(1) - TASKS + a->task_awaited_by, 0);
	tr = task_of(tick(&im, 0, 1));
	assert_int_equal(tr->awaiter, 0);
	assert_int_equal(tr->aw_flags, TASK_AW_READ);
	/* awaited_by unreadable (outside the task's memory): not read. */
	a->task_awaited_by = 0x7000;
	tr = task_of(tick(&im, 0, 1));
	assert_int_equal(tr->awaiter, 0);
	assert_int_equal(tr->aw_flags, 0);
}

/* coro_step on a suspended chain of both stack models, tagged refs. */
static void test_coro_step(void **state)
{
	struct coro_layout L = {.gen_iframe = 72,
				.gen_frame_state = 67,
				.frame_code = 0,
				.frame_instr = 56,
				.frame_stack = 64,
				.frame_localsplus = 72,
				.await_slot = 1,
				.state_awaiting = -1,
				.state_awaiting2 = -1,
				.ref_mask = ~0ULL};
	static uint8_t g[0x400];
	struct mem_region reg = {0x800000, g, sizeof(g)};
	struct mem_reader r;
	uint8_t buf[CORO_BLOCK + 8];
	struct coro_link l;
	__u64 type;

	(void)state;
	mem_reader_init_image(&r, &reg, 1);
	put64(g, 8, 0xabc000);		     /* ob_type */
	g[67] = (uint8_t)-1;		     /* suspended in an await */
	put64(g, 72 + 0, 0x555000);	     /* f_code */
	put64(g, 72 + 56, 0x555000 + 0x60);  /* prev_instr */
	put32(g, 72 + 64, 3);		     /* stacktop: 3 slots */
	put64(g, 72 + 72 + 2 * 8, 0x800200); /* localsplus[2]: what it awaits */
	assert_int_equal(coro_step(&r, &L, 8, 0x800000, buf, &type, &l), 0);
	assert_int_equal(type, 0xabc000);
	assert_int_equal(l.code, 0x555000);
	assert_int_equal(l.instr, 0x555060);
	assert_int_equal(l.awaits, 0x800200);
	/* Not in an await: nothing awaited. A hostile stacktop: none either. */
	g[67] = 0;
	assert_int_equal(coro_step(&r, &L, 8, 0x800000, buf, &type, &l), 0);
	assert_int_equal(l.awaits, 0);
	g[67] = (uint8_t)-1;
	put32(g, 72 + 64, 0x7fffffff);
	assert_int_equal(coro_step(&r, &L, 8, 0x800000, buf, &type, &l), 0);
	assert_int_equal(l.awaits, 0);
	/* 3.15's model: a stack pointer, two slots down, tagged refs. */
	L.stack_is_pointer = 1;
	L.await_slot = 2;
	L.state_awaiting = 2;
	L.state_awaiting2 = 3;
	L.ref_mask = ~3ULL;
	g[67] = 3;
	put64(g, 72 + 0, 0x555001);	     /* a tagged f_executable */
	put64(g, 72 + 64, 0x800000 + 0x300); /* stack pointer */
	put64(g, 0x300 - 16, 0x800201);	     /* two slots below: tagged */
	assert_int_equal(coro_step(&r, &L, 8, 0x800000, buf, &type, &l), 0);
	assert_int_equal(l.code, 0x555000);
	assert_int_equal(l.awaits, 0x800200);
	/* A generator at the end of its mapping cannot be read as a block. */
	assert_int_equal(coro_step(&r, &L, 8, 0x800000 + sizeof(g) - 64, buf, &type, &l), -1);
}

/*
 * [gc] and --exception in the kernel's sample, on 3.10 (exc_info with a
 * type triple), 3.11 (current exception still a type) and 3.12 (one value
 * object): GC_COLLECTING only for the GIL holder; with PROC_EXCEPTION a
 * thread with none is counted and not walked, a handled one carries its
 * value's type, one in flight wins over one being handled, None is none.
 */
#define EXC_INFO  (STRS + 0xe000) /* the exc_info stack item */
#define EXC_VALUE (STRS + 0xe100) /* an exception object */
#define EXC_TYPE  (STRS + 0xe200) /* its type */
#define EXC_NONE  (STRS + 0xe300)
#define GC_FLAG	  (INTERP + 0x7f00)

static void test_gc_and_exception(void **state)
{
	static const uint32_t versions[] = {V310, V311, V312};
	static const int depth[] = {2, 1};
	struct image im;
	const struct sample_hdr *h;

	(void)state;
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		const struct py_offsets *o;

		build(&im, versions[i], 2, depth);
		o = &im.cfg.off;
		assert_true(o->tstate_exc_info != 0);
		im.cfg.none_addr = EXC_NONE;
		im.cfg.gc_collecting_addr = GC_FLAG;
		put32(interp_b, GC_FLAG - INTERP, 1);
		gil(1, TSTATE(0));
		h = tick(&im, 0, 1);
		assert_non_null(h);
		assert_int_equal(h->gc_flags, GC_COLLECTING);
		assert_int_equal(h->exc_flags, 0);
		h = tick(&im, 1, 1); /* collecting, but not this thread */
		assert_non_null(h);
		assert_int_equal(h->gc_flags, 0);
		put32(interp_b, GC_FLAG - INTERP, 0);
		assert_int_equal(tick(&im, 0, 1)->gc_flags, 0);
		im.cfg.gc_collecting_addr = 0; /* --no-gc */
		put32(interp_b, GC_FLAG - INTERP, 1);
		assert_int_equal(tick(&im, 0, 1)->gc_flags, 0);

		im.cfg.flags |= PROC_EXCEPTION;
		assert_null(tick(&im, 0, 1));
		assert_int_equal(counter_mem[CNT_NO_EXCEPTION], 1);
		/* being handled: exc_info -> item -> value -> type */
		put64(tstate_b[0], o->tstate_exc_info, EXC_INFO);
		put64(strs_b, EXC_INFO - STRS + o->stackitem_exc_value, EXC_VALUE);
		put64(strs_b, EXC_VALUE - STRS + o->ob_type, EXC_TYPE);
		h = tick(&im, 0, 1);
		assert_non_null(h);
		assert_int_equal(h->exc_flags, EXC_HANDLED);
		assert_int_equal(h->exc_type, EXC_TYPE);
		assert_true(h->nframes >= 2);
		/* handled None: none */
		put64(strs_b, EXC_INFO - STRS + o->stackitem_exc_value, EXC_NONE);
		assert_null(tick(&im, 0, 1));
		/* in flight, as a type (<= 3.11) or as a value (3.12+) */
		put64(tstate_b[0], o->tstate_cur_exc, o->cur_exc_is_type ? EXC_TYPE : EXC_VALUE);
		h = tick(&im, 0, 1);
		assert_non_null(h);
		assert_int_equal(h->exc_flags, EXC_IN_FLIGHT);
		assert_int_equal(h->exc_type, EXC_TYPE);
		/* in flight wins over handled */
		put64(strs_b, EXC_INFO - STRS + o->stackitem_exc_value, EXC_VALUE);
		assert_int_equal(tick(&im, 0, 1)->exc_flags, EXC_IN_FLIGHT);
		/* an unreadable exception is none, not a guess (a type word,
		 * <= 3.11, is not read here: user space checks it is a type) */
		put64(tstate_b[0], o->tstate_cur_exc, o->cur_exc_is_type ? 0 : 0xdead0000);
		put64(tstate_b[0], o->tstate_exc_info, 0xdead0000);
		assert_null(tick(&im, 0, 1));
		assert_int_equal(counter_mem[CNT_NO_EXCEPTION], 3);
	}
}

/*
 * record --opcodes (walk_leaf_op): the byte at the leaf frame's instruction.
 * 3.11+: in the code object, its length the var header's ob_size; 3.8-3.10:
 * in co_code, a bytes object, with f_lasti in bytes (3.8, 3.9) or code
 * units (3.10), stepping over EXTENDED_ARG prefixes. Not read: a frame
 * that started nothing, an index past the end, a read that faults, a
 * process without PROC_OPCODES.
 */
#define CO_CODE (STRS + 0xd000) /* <= 3.10: the co_code bytes object */
#define V38	0x030812f0u

static void set_instr(struct image *im, int32_t index)
{
	const struct py_offsets *o = &im->cfg.off;

	if (o->frame_model == FRAME_MODEL_OBJECT)
		put32(frame_b, o->frame_instr,
		      (uint32_t)(o->lasti_is_bytes && index > 0 ? 2 * index : index));
	else
		put64(frame_b, o->frame_instr, CODE(0) + o->code_adaptive + 2 * (int64_t)index);
}

static void put_code(struct image *im, const uint8_t *units, uint32_t n)
{
	const struct py_offsets *o = &im->cfg.off;

	if (o->frame_model == FRAME_MODEL_OBJECT) {
		put64(code_b, o->code_code, CO_CODE);
		put64(strs_b, CO_CODE - STRS + o->bytes_size, 2 * (uint64_t)n);
		memcpy(strs_b + (CO_CODE - STRS) + o->bytes_data, units, 2 * (size_t)n);
	} else {
		put64(code_b, o->code_units, n);
		memcpy(code_b + o->code_adaptive, units, 2 * (size_t)n);
	}
}

static void expect_op(struct image *im, int32_t index, uint8_t flags, uint8_t op)
{
	const struct sample_hdr *h;

	set_instr(im, index);
	h = tick(im, 0, 1);
	assert_non_null(h);
	assert_int_equal(h->err, 0);
	assert_true(h->nframes >= 1);
	if (h->op_flags != flags || h->leaf_op != op)
		fail_msg("0x%08x index %d: flags %#x op %u, want %#x %u", im->cfg.off.version_hex,
			 index, h->op_flags, h->leaf_op, flags, op);
}

static void test_leaf_opcode(void **state)
{
	static const uint32_t versions[] = {V38, V310, V311, V312};
	static const int depth[] = {2};
	struct image im;

	(void)state;
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		const struct py_opcode_table *t = py_opcodes_for(versions[i]);
		const struct py_offsets *o;
		uint8_t ext, u[12];

		assert_non_null(t);
		ext = t->extended_arg;
		build(&im, versions[i], 1, depth);
		o = &im.cfg.off;
		assert_int_equal(o->op_prefix, o->frame_model == FRAME_MODEL_OBJECT ? ext : 0);
		/* units: 7, EXT, EXT, 9, EXT, 11 */
		memcpy(u, (uint8_t[]){7, 0, ext, 1, ext, 2, 9, 3, ext, 4, 11, 5}, sizeof(u));
		put_code(&im, u, 6);
		expect_op(&im, 0, 0, 0); /* not asked */
		im.cfg.flags |= PROC_OPCODES;
		expect_op(&im, 0, OP_READ, 7);
		expect_op(&im, 3, OP_READ, 9);
		expect_op(&im, 5, OP_READ, 11);
		expect_op(&im, -1, OP_NOT_STARTED, 0);
		expect_op(&im, 6, OP_OUTSIDE, 0); /* one past the last unit */
		if (o->op_prefix) { /* f_lasti on the prefixes: the instruction they extend */
			expect_op(&im, 1, OP_READ | 2 << OP_PREFIX_SHIFT, 9);
			expect_op(&im, 2, OP_READ | 1 << OP_PREFIX_SHIFT, 9);
			/* two units left: the last prefix, then what follows it */
			expect_op(&im, 4, OP_READ | 1 << OP_PREFIX_SHIFT, 11);
		} else { /* 3.11+: the pointer is never left on a prefix */
			expect_op(&im, 1, OP_READ, ext);
		}
		/* the bytecode's length as the target states it bounds the index */
		put_code(&im, u, 2);
		expect_op(&im, 3, OP_OUTSIDE, 0);
		if (o->op_prefix) /* a prefix at the end: not stepped past the end */
			expect_op(&im, 1, OP_READ, ext);
		/* unreadable bytecode: no flag at all */
		if (o->frame_model == FRAME_MODEL_OBJECT)
			put64(code_b, o->code_code, 0xdead0000);
		else
			put64(code_b, o->code_units, 1ull << 40); /* the units run off the region */
		expect_op(&im, o->frame_model == FRAME_MODEL_OBJECT ? 0 : 0x10000, 0, 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sample_in_container),
	    cmocka_unit_test(test_host_tid_does_not_match_3_11),
	    cmocka_unit_test(test_pthread_match_3_10),
	    cmocka_unit_test(test_truncated),
	    cmocka_unit_test(test_error_causes),
	    cmocka_unit_test(test_eval_call_entry),
	    cmocka_unit_test(test_chain_must_end_at_entry),
	    cmocka_unit_test(test_thread_list_loop_bpf),
	    cmocka_unit_test(test_thread_list_loop_user),
	    cmocka_unit_test(test_user_and_bpf_agree),
	    cmocka_unit_test(test_kernel_names),
	    cmocka_unit_test(test_kernel_tables),
	    cmocka_unit_test(test_proc_tstate_slots),
	    cmocka_unit_test(test_thread_starting),
	    cmocka_unit_test(test_thread_exiting),
	    cmocka_unit_test(test_thread_no_frames),
	    cmocka_unit_test(test_named_filter),
	    cmocka_unit_test(test_named_sets),
	    cmocka_unit_test(test_name_pass_turns),
	    cmocka_unit_test(test_async_running_task_dict),
	    cmocka_unit_test(test_async_running_task_tstate),
	    cmocka_unit_test(test_async_awaiter_callbacks),
	    cmocka_unit_test(test_async_awaiter_awaited_by),
	    cmocka_unit_test(test_coro_step),
	    cmocka_unit_test(test_gc_and_exception),
	    cmocka_unit_test(test_leaf_opcode),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
