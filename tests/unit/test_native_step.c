// SPDX-License-Identifier: MIT
/*
 * The one native unwinder (bpf/native_step.h), on its host build
 * (user/native/native_walk.c, which bpfpy dump runs; the sampler runs the
 * same step in BPF): synthetic mappings, rows and a synthetic stack, one
 * case per rule and per way a walk ends. CFA from rsp and from rbp (with
 * the caller's rbp restored from the frame), large offsets in 8-byte
 * words, the .plt pattern on both sides of its threshold, the outermost
 * frame (an END row, a zero return address), unsupported rows, frame
 * pointers where there is no CFI (a file's gap, anonymous code) and where
 * rbp is 0, a return address into no mapping, unreadable stack, a frame
 * pointer chain that loops and an rsp that does not advance, the depth
 * bound, mappings just below [vsyscall] (above 2^63).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "mem_reader.h"
#include "native_walk.h"

/* File A, mapped at LIB_A with its vaddr 0 there (bias LIB_A). Its rows
 * sit after those of another file, so a search that ignored first would
 * land in the wrong table. */
#define LIB_A	0x10000000ull
#define LIB_Z	0x0f000000ull /* the other file, mapped below A */
#define ANON	0x20000000ull /* anonymous code (a trampoline): no table */
#define UNKNOWN 0x30000000ull /* in no mapping */
#define STACK	0x7ff000000000ull
#define NSTACK	1024 /* __u64 words */

enum {
	R_ENTRY = 0x000,
	R_RSP16 = 0x010,
	R_RBP = 0x020,
	R_BIG = 0x080,
	R_PLT = 0x100,
	R_NOCFI = 0x200,
	R_END = 0x300,
	R_UNSUP = 0x400,
	R_SPIN = 0x500,
	R_LAST = 0x600
};

static struct unwind_row rows[16];
static uint32_t nrows;
static struct native_proc proc;
static uint64_t stack[NSTACK];
static struct mem_region region = {.addr = STACK, .data = stack, .len = sizeof(stack)};
static struct mem_reader mem;
static struct native_walk_env env;
static uint32_t a_first; /* file A's first row */

static void row(uint32_t pc, uint8_t kind, int8_t rbp_off, uint16_t cfa_off)
{
	rows[nrows++] =
	    (struct unwind_row){.pc = pc, .kind = kind, .rbp_off = rbp_off, .cfa_off = cfa_off};
}

static void map(uint64_t start, uint64_t end, uint64_t bias, uint32_t first, uint32_t count)
{
	proc.maps[proc.nmaps++] = (struct native_map){
	    .start = start, .end = end, .bias = bias, .first = first, .count = count};
}

static int setup(void **state)
{
	uint32_t first;

	(void)state;
	memset(&proc, 0, sizeof(proc));
	memset(stack, 0, sizeof(stack));
	nrows = 0;
	/* File Z: rows that would give nonsense for A's addresses. */
	row(0x000, UNW_CFA_UNSUPPORTED, 0, 0);
	row(0x800, UNW_CFA_END, 0, 0);
	first = nrows;
	row(R_ENTRY, UNW_CFA_RSP, 0, 8); /* at entry: the return address on top */
	row(R_RSP16, UNW_CFA_RSP, 0, 16);
	row(R_RBP, UNW_CFA_RBP | UNW_RBP_CFA << 4, -2, 16); /* rbp saved at CFA-16 */
	row(R_BIG, UNW_CFA_RSP | UNW_CFA_SCALED, 0, 0x201); /* rsp + 0x1008 */
	row(R_PLT, UNW_CFA_PLT, 0, 11);
	row(R_NOCFI, UNW_CFA_NONE, 0, 0);
	row(R_END, UNW_CFA_END, 0, 0);
	row(R_UNSUP, UNW_CFA_UNSUPPORTED, 0, 0);
	row(R_SPIN, UNW_CFA_RSP, 0, 0); /* CFA = rsp: no progress */
	row(R_LAST, UNW_CFA_NONE, 0, 0);
	/* Many mappings, sorted, so the map search takes several halvings. */
	for (int i = 0; i < 40; i++)
		map(0x1000000ull + (uint64_t)i * 0x10000,
		    0x1000000ull + (uint64_t)i * 0x10000 + 0x1000, 0, 0, 0);
	map(LIB_Z, LIB_Z + 0x1000, LIB_Z, 0, first);
	map(LIB_A, LIB_A + 0x1000, LIB_A, first, nrows - first);
	a_first = first;
	map(ANON, ANON + 0x1000, 0, 0, 0);
	mem_reader_init_image(&mem, &region, 1);
	env = (struct native_walk_env){.proc = &proc, .rows = rows, .nrows = nrows, .mem = &mem};
	return 0;
}

/* Stack word i's address, and setting it. */
#define AT(i)	    (STACK + 8ull * (i))
#define PUT(i, v)   (stack[(i)] = (v))
#define RET(off)    (LIB_A + (off) + 1) /* a return address into row off's range */
#define CAUSE(o)    NATIVE_CAUSE((o)->flags)
#define LOST(o, c_) (((o)->flags & NATIVE_LOST) && CAUSE(o) == (c_))

static void walk(uint64_t ip, uint64_t sp, uint64_t bp, struct native_walk_out *o)
{
	memset(o, 0xa5, sizeof(*o));
	native_walk(&env, ip, sp, bp, o);
}

static void test_cfa_from_rsp(void **state)
{
	struct native_walk_out o;

	(void)state;
	/* leaf at entry (rsp+8) -> caller in its body (rsp+16) -> END. */
	PUT(0, RET(R_RSP16));
	PUT(2, RET(R_END));
	walk(LIB_A + R_ENTRY, AT(0), 0, &o);
	assert_int_equal(o.n, 3);
	assert_int_equal(o.ips[0], LIB_A + R_ENTRY);
	assert_int_equal(o.ips[1], RET(R_RSP16));
	assert_int_equal(o.ips[2], RET(R_END));
	assert_int_equal(o.flags, 0); /* the stack's end: no flag */
	assert_int_equal(o.fp_frames, 0);
}

static void test_cfa_from_rbp(void **state)
{
	struct native_walk_out o;

	(void)state;
	/* Two rbp frames: the first restores rbp from its frame, which the
	 * second's CFA depends on. */
	PUT(8, AT(32));	       /* saved rbp at CFA-16 = bp */
	PUT(9, RET(R_RBP));    /* return address at CFA-8 */
	PUT(32, AT(64));       /* the caller's saved rbp */
	PUT(33, RET(R_RSP16)); /* CFA = AT(34) */
	PUT(35, RET(R_END));   /* rsp + 16 */
	walk(LIB_A + R_RBP + 3, AT(2), AT(8), &o);
	assert_int_equal(o.n, 4);
	assert_int_equal(o.ips[1], RET(R_RBP));
	assert_int_equal(o.ips[2], RET(R_RSP16));
	assert_int_equal(o.ips[3], RET(R_END));
	assert_int_equal(o.flags, 0);
}

static void test_scaled_offset(void **state)
{
	struct native_walk_out o;

	(void)state;
	/* cfa_off 0x201 words = 0x1008 bytes: the return address 0x1000 up. */
	PUT(0x1000 / 8, RET(R_END));
	walk(LIB_A + R_BIG, AT(0), 0, &o);
	assert_int_equal(o.n, 2);
	assert_int_equal(o.ips[1], RET(R_END));
	assert_int_equal(o.flags, 0);
}

static void test_plt(void **state)
{
	struct native_walk_out o;

	(void)state;
	/* Before the push of the .plt entry (ip & 15 < 11): rsp + 8. */
	PUT(0, RET(R_END));
	walk(LIB_A + R_PLT + 6, AT(0), 0, &o);
	assert_int_equal(o.n, 2);
	assert_int_equal(o.ips[1], RET(R_END));
	assert_int_equal(o.flags, 0);
	/* After it (ip & 15 >= 11): rsp + 16. */
	PUT(0, 0x1234);
	PUT(1, RET(R_END));
	walk(LIB_A + R_PLT + 11, AT(0), 0, &o);
	assert_int_equal(o.n, 2);
	assert_int_equal(o.ips[1], RET(R_END));
	assert_int_equal(o.flags, 0);
}

static void test_end_of_stack(void **state)
{
	struct native_walk_out o;

	(void)state;
	/* The leaf itself is the outermost frame. */
	walk(LIB_A + R_END + 4, AT(0), 0, &o);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.flags, 0);
	/* A zero return address ends the chain too. */
	PUT(1, 0);
	walk(LIB_A + R_RSP16, AT(0), 0, &o);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.flags, 0);
}

static void test_unsupported(void **state)
{
	struct native_walk_out o;

	(void)state;
	PUT(1, RET(R_UNSUP));
	walk(LIB_A + R_RSP16, AT(0), 0, &o);
	/* The frame whose rule is not followed is in the stack, its callers not. */
	assert_int_equal(o.n, 2);
	assert_int_equal(o.ips[1], RET(R_UNSUP));
	assert_true(LOST(&o, NATIVE_UNSUPPORTED));
	assert_false(o.flags & NATIVE_TRUNCATED);
}

static void test_frame_pointer_fallback(void **state)
{
	struct native_walk_out o;

	(void)state;
	/* Anonymous code (no table), then a gap of A without CFI, each
	 * followed by frame pointer: CFA = rbp + 16, rbp at CFA-16. */
	PUT(4, AT(16));
	PUT(5, RET(R_NOCFI));
	PUT(16, AT(40));
	PUT(17, RET(R_RSP16)); /* sp = AT(18) */
	PUT(19, RET(R_END));
	walk(ANON + 0x40, AT(0), AT(4), &o);
	assert_int_equal(o.n, 4);
	assert_int_equal(o.ips[0], ANON + 0x40);
	assert_int_equal(o.ips[1], RET(R_NOCFI));
	assert_int_equal(o.ips[2], RET(R_RSP16));
	assert_int_equal(o.ips[3], RET(R_END));
	assert_int_equal(o.flags, NATIVE_FP_FALLBACK); /* whole, but flagged */
	assert_int_equal(o.fp_frames, 2);
	/* No frame pointer to follow: a bad frame, not a guess. */
	walk(ANON + 0x40, AT(0), 0, &o);
	assert_int_equal(o.n, 1);
	assert_true(LOST(&o, NATIVE_BAD_FRAME));
	assert_false(o.flags & NATIVE_FP_FALLBACK);
}

static void test_unknown_mapping(void **state)
{
	struct native_walk_out o;

	(void)state;
	PUT(1, UNKNOWN + 0x10);
	walk(LIB_A + R_RSP16, AT(0), 0, &o);
	/* The address in no mapping is the last one: its callers are lost. */
	assert_int_equal(o.n, 2);
	assert_int_equal(o.ips[1], UNKNOWN + 0x10);
	assert_true(LOST(&o, NATIVE_NO_MAP));
	/* Between two mappings, and the leaf itself. */
	walk(LIB_A + 0x1000, AT(0), 0, &o);
	assert_int_equal(o.n, 1);
	assert_true(LOST(&o, NATIVE_NO_MAP));
	walk(0x10, AT(0), 0, &o); /* below every mapping */
	assert_true(LOST(&o, NATIVE_NO_MAP));
}

static void test_unreadable(void **state)
{
	struct native_walk_out o;

	(void)state;
	/* The return address would be just past the stack's end. */
	walk(LIB_A + R_RSP16, AT(NSTACK - 1), 0, &o);
	assert_int_equal(o.n, 1);
	assert_true(LOST(&o, NATIVE_READ));
	/* The return address readable, the saved rbp below it (CFA-16) not. */
	PUT(0, RET(R_END));
	walk(LIB_A + R_RBP, STACK - 16, STACK - 8, &o);
	assert_int_equal(o.n, 1);
	assert_true(LOST(&o, NATIVE_READ));
}

static void test_no_progress(void **state)
{
	struct native_walk_out o;

	(void)state;
	/* A row that leaves rsp where it is. */
	walk(LIB_A + R_SPIN, AT(4), 0, &o);
	assert_int_equal(o.n, 1);
	assert_true(LOST(&o, NATIVE_BAD_FRAME));
	/* A frame-pointer chain that points at itself: the second frame's
	 * CFA is not above its rsp, so the walk stops instead of looping. */
	PUT(8, AT(8));
	PUT(9, ANON + 0x80);
	walk(ANON + 0x40, AT(0), AT(8), &o);
	assert_int_equal(o.n, 2);
	assert_true(LOST(&o, NATIVE_BAD_FRAME));
	/* And one that points back down the stack. */
	PUT(8, AT(2));
	walk(ANON + 0x40, AT(0), AT(8), &o);
	assert_int_equal(o.n, 2);
	assert_true(LOST(&o, NATIVE_BAD_FRAME));
}

static void test_depth_bound(void **state)
{
	struct native_walk_out o;

	(void)state;
	/* 300 frames of a recursion (rsp + 16 each): cut at the limit. */
	for (int i = 0; i < 300 && 2 * i + 1 < NSTACK; i++)
		PUT(2 * i + 1, RET(R_RSP16));
	mem.reads = 0;
	walk(LIB_A + R_RSP16, AT(0), 0, &o);
	assert_int_equal(o.n, NATIVE_MAX_DEPTH);
	assert_int_equal(o.flags, NATIVE_TRUNCATED);
	/* 128 return addresses in one page: copied once (after a span that
	 * runs off the image fails), not read word by word. */
	assert_true(mem.reads <= 2);
	for (uint32_t i = 1; i < o.n; i++)
		assert_int_equal(o.ips[i], RET(R_RSP16));
}

/*
 * Real processes end their sorted mappings with [vsyscall], at
 * 0xffffffffff600000: above 2^63. Every mapping below it must still be
 * found, whatever the number of mappings (each count takes the search
 * through different halvings; 13 mappings and [vsyscall] lost ld.so, the
 * one just below it, and with it every sample in __tls_get_addr).
 */
static void test_high_mappings(void **state)
{
	struct native_walk_out o;

	(void)state;
	for (uint32_t n = 1; n <= 80; n++) {
		proc.nmaps = 0;
		for (uint32_t i = 0; i < n; i++) {
			uint64_t at = 0x7f0000000000ull + (uint64_t)i * 0x10000;

			map(at, at + 0x1000, at, a_first, nrows - a_first);
		}
		map(0xffffffffff600000ull, 0xffffffffff601000ull, 0, 0, 0);
		for (uint32_t i = 0; i < n; i++) {
			/* An END row: found, the walk ends cleanly after it. */
			walk(0x7f0000000000ull + (uint64_t)i * 0x10000 + R_END, AT(0), 0, &o);
			if (o.n != 1 || o.flags != 0)
				fail_msg("%u mappings and [vsyscall]: mapping %u not found "
					 "(n %u, flags %#x)",
					 n, i, o.n, o.flags);
		}
		/* Above the last user mapping, in none: still no mapping. */
		walk(0x7f0000000000ull + (uint64_t)n * 0x10000 + R_END, AT(0), 0, &o);
		assert_true(LOST(&o, NATIVE_NO_MAP));
	}
}

static void test_cause_names(void **state)
{
	(void)state;
	for (unsigned c = 0; c < NATIVE_CAUSE__COUNT; c++)
		assert_string_not_equal(native_cause_name(c), "unknown");
	assert_string_equal(native_cause_name(NATIVE_CAUSE__COUNT), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_cfa_from_rsp, setup),
	    cmocka_unit_test_setup(test_cfa_from_rbp, setup),
	    cmocka_unit_test_setup(test_scaled_offset, setup),
	    cmocka_unit_test_setup(test_plt, setup),
	    cmocka_unit_test_setup(test_end_of_stack, setup),
	    cmocka_unit_test_setup(test_unsupported, setup),
	    cmocka_unit_test_setup(test_frame_pointer_fallback, setup),
	    cmocka_unit_test_setup(test_unknown_mapping, setup),
	    cmocka_unit_test_setup(test_unreadable, setup),
	    cmocka_unit_test_setup(test_no_progress, setup),
	    cmocka_unit_test_setup(test_depth_bound, setup),
	    cmocka_unit_test_setup(test_high_mappings, setup),
	    cmocka_unit_test_setup(test_cause_names, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
