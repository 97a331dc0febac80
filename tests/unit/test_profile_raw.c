// SPDX-License-Identifier: MIT
/*
 * profile_add_raw(): samples aggregated by their raw frame records. The
 * symbolizer here is a table, and counts its calls, so the tests see both
 * what the profile holds and how often anything was named. The reference
 * for what a sample must become is profile_add() fed the same frames by
 * hand, and the raw stream as raw_write_sample() writes it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

#define UNNAMED_CODE 0xdead0ull /* the symbolizer cannot name it */

struct fake_sym {
	unsigned calls;
};

/* Name from the code address, line from the instruction (two instructions
 * per line, so that two raw records can make one symbolized frame). */
static int fake_sym(void *ctx, const struct frame_rec *f, struct sym_frame *out)
{
	static char names[64][32];
	static unsigned k;
	struct fake_sym *s = ctx;
	char *name = names[k++ % 64];

	s->calls++;
	if (f->code == UNNAMED_CODE)
		return 1;
	snprintf(name, 32, "f%llx", (unsigned long long)f->code);
	*out = (struct sym_frame){.kind = FRAME_KIND_PYTHON};
	out->name = name;
	out->file = "/srv/x.py";
	out->firstlineno = 1;
	out->line = f->instr / 2;
	return 0;
}

struct rec {
	struct sample_hdr h;
	struct frame_rec f[BPFPY_MAX_DEPTH];
};

static void mk(struct rec *r, uint64_t ts, uint32_t tid, uint8_t flags, uint32_t n,
	       const struct frame_rec *f)
{
	memset(r, 0, sizeof(*r));
	r->h.ts_ns = ts;
	r->h.pid = 100;
	r->h.tid = tid;
	r->h.cpu = (uint32_t)(ts & 1);
	r->h.flags = flags;
	r->h.nframes = (uint16_t)n;
	memcpy(r->f, f, n * sizeof(*f));
}

static int add(struct profile *p, uint64_t epoch, const struct rec *r, struct fake_sym *fs)
{
	return profile_add_raw(p, epoch, &r->h, r->f, fake_sym, fs);
}

static const struct frame_rec A[3] = {{0x1000, 4, 11}, {0x2000, 8, 22}, {0x3000, 2, 33}};

static void test_same_stacks_merge(void **state)
{
	struct profile *p = profile_new(1000, "cpu");
	struct fake_sym fs = {0};
	struct profile_raw_stats st;
	struct rec r;

	(void)state;
	for (int i = 0; i < 5; i++) {
		mk(&r, 10 + i, 101, 0, 3, A);
		assert_int_equal(add(p, 1, &r, &fs), 0);
	}
	assert_int_equal(p->nstacks, 1);
	assert_int_equal(p->stacks[0].count, 5);
	assert_int_equal(p->stacks[0].nframes, 3);
	assert_int_equal(p->total, 5);
	assert_int_equal(fs.calls, 3); /* each frame named once, ever */
	profile_raw_stats(p, &st);
	assert_int_equal(st.stack_hits, 4);
	assert_int_equal(st.stack_misses, 1);
	assert_string_equal(profile_str(p, p->funcs[p->frames[p->stacks[0].frames[0]].func].name),
			    "f1000");
	assert_int_equal(p->frames[p->stacks[0].frames[1]].line, 4);
	profile_free(p);
}

static void test_instr_fingerprint_epoch_thread_apart(void **state)
{
	struct profile *p = profile_new(1000, "cpu");
	struct fake_sym fs = {0};
	struct frame_rec b[3];
	struct rec r;
	uint32_t s0, s1;

	(void)state;
	mk(&r, 1, 101, 0, 3, A);
	assert_int_equal(add(p, 1, &r, &fs), 0);
	s0 = p->last_stack;

	/* Another instruction, another line: another frame and stack. */
	memcpy(b, A, sizeof(b));
	b[0].instr = 6;
	mk(&r, 2, 101, 0, 3, b);
	assert_int_equal(add(p, 1, &r, &fs), 0);
	assert_int_not_equal(p->last_stack, s0);
	assert_int_equal(fs.calls, 4);

	/* Another instruction on the same line: named again (the raw records
	 * differ), but the symbolized stack is the same one. */
	b[0].instr = 5;
	mk(&r, 3, 101, 0, 3, b);
	assert_int_equal(add(p, 1, &r, &fs), 0);
	assert_int_equal(fs.calls, 5);
	assert_int_equal(p->stacks[p->last_stack].count, 2);
	s1 = p->last_stack;

	/* Another fingerprint at the same address: another code object. */
	memcpy(b, A, sizeof(b));
	b[1].fingerprint = 23;
	mk(&r, 4, 101, 0, 3, b);
	assert_int_equal(add(p, 1, &r, &fs), 0);
	assert_int_equal(fs.calls, 6);

	/* Another epoch (the pid exec'd): nothing carried over. */
	mk(&r, 5, 101, 0, 3, A);
	assert_int_equal(add(p, 2, &r, &fs), 0);
	assert_int_equal(fs.calls, 9);
	assert_int_equal(p->last_stack, s0); /* same names, so the same stack */

	/* Another thread: its own stack, frames reused. */
	mk(&r, 6, 102, 0, 3, A);
	assert_int_equal(add(p, 1, &r, &fs), 0);
	assert_int_equal(fs.calls, 9);
	assert_int_not_equal(p->last_stack, s0);
	assert_int_not_equal(p->last_stack, s1);
	assert_int_equal(p->nthreads, 2);

	/* Truncated: the marker at the root, apart from the complete one. */
	mk(&r, 7, 101, SAMPLE_TRUNCATED, 3, A);
	assert_int_equal(add(p, 1, &r, &fs), 0);
	assert_int_equal(p->stacks[p->last_stack].nframes, 4);
	assert_int_equal(p->ntruncated, 1);
	assert_int_equal(p->total, 7);
	profile_free(p);
}

static void test_recursion_named_once_unnamed_fails(void **state)
{
	struct profile *p = profile_new(1000, "cpu");
	struct fake_sym fs = {0};
	struct frame_rec deep[300];
	struct rec r;

	(void)state;
	deep[0] = (struct frame_rec){0x9000, 10, 99};
	for (int i = 1; i < 299; i++)
		deep[i] = (struct frame_rec){0x8000, 20, 88};
	deep[299] = (struct frame_rec){0x7000, 2, 77};
	mk(&r, 1, 101, 0, 300, deep);
	assert_int_equal(add(p, 1, &r, &fs), 0);
	assert_int_equal(fs.calls, 3);
	assert_int_equal(p->stacks[p->last_stack].nframes, 300);

	/* One frame that cannot be named: nothing counted, and the frames
	 * named before it in that sample are not kept half-done. */
	deep[5].code = UNNAMED_CODE;
	deep[7] = (struct frame_rec){0x6000, 4, 66};
	mk(&r, 2, 101, 0, 300, deep);
	fs.calls = 0;
	assert_int_equal(add(p, 1, &r, &fs), 1);
	assert_int_equal(p->total, 1);
	assert_int_equal(p->nstacks, 1);
	/* The same records again, named this time: the stale entry of the
	 * failed sample is a plain miss. */
	deep[5] = (struct frame_rec){0x8000, 20, 88};
	mk(&r, 3, 101, 0, 300, deep);
	assert_int_equal(add(p, 1, &r, &fs), 0);
	assert_int_equal(p->total, 2);
	assert_int_equal(p->nstacks, 2);
	profile_free(p);
}

/* Time order: the thread's order references the stacks in arrival order,
 * and the raw writers give what raw_write_sample() gives for the same
 * samples symbolized by hand. */
static void test_time_order_and_raw(void **state)
{
	struct profile *p = profile_new(1000, "cpu"), *q = profile_new(1000, "cpu");
	struct fake_sym fs = {0};
	struct frame_rec b[3];
	struct sym_frame sf[4];
	struct raw_stream rs = {0};
	char *want = NULL, *got = NULL, *replay = NULL, *replay_ref = NULL;
	size_t nw = 0, ng = 0, nr = 0, nrr = 0;
	FILE *fw = open_memstream(&want, &nw), *fg = open_memstream(&got, &ng);
	FILE *fr = open_memstream(&replay, &nr), *frr = open_memstream(&replay_ref, &nrr);
	struct rec r;

	(void)state;
	assert_non_null(fw);
	assert_non_null(fg);
	memcpy(b, A, sizeof(b));
	b[0].code = 0x1100;
	rs.f = fg;
	for (int i = 0; i < 12; i++) {
		const struct frame_rec *f = i % 3 == 1 ? b : A;
		uint8_t flags = i == 7 ? SAMPLE_TRUNCATED : i % 4 == 0 ? SAMPLE_GIL_KNOWN : 0;
		struct sym_sample s;

		mk(&r, 1000 + i, 101, flags, 3, f);
		assert_int_equal(add(p, 1, &r, &fs), 0);
		assert_int_equal(raw_stream_sample(&rs, p, p->last_stack,
						   &(struct sym_sample){.ts_ns = r.h.ts_ns,
									.pid = r.h.pid,
									.tid = r.h.tid,
									.cpu = r.h.cpu,
									.flags = r.h.flags}),
				 0);
		for (int j = 0; j < 3; j++)
			assert_int_equal(fake_sym(&fs, &f[j], &sf[j]), 0);
		s = (struct sym_sample){r.h.ts_ns, 100, 101, r.h.cpu, flags, 3, sf};
		raw_write_sample(fw, &s);
		assert_int_equal(profile_add(q, &s), 0);
	}
	fclose(fw);
	fclose(fg);
	assert_string_equal(got, want);
	assert_int_equal(p->nthreads, 1);
	assert_int_equal(p->threads[0].norder, 12);
	for (uint64_t i = 1; i < p->threads[0].norder; i++)
		assert_true(p->threads[0].order[i].ts_ns > p->threads[0].order[i - 1].ts_ns);
	assert_int_equal(p->threads[0].order[1].stack, p->threads[0].order[4].stack);
	assert_int_not_equal(p->threads[0].order[0].stack, p->threads[0].order[1].stack);
	/* Made a few ns apart: the same origin, so that the headers match. */
	profile_set_realtime_off(q, p->realtime_off);
	assert_int_equal(raw_write_profile(fr, p, NULL), 0);
	assert_int_equal(raw_write_profile(frr, q, NULL), 0);
	fclose(fr);
	fclose(frr);
	assert_string_equal(replay, replay_ref);
	/* raw_write_profile() writes version 2: its samples are the stream's. */
	{
		char *w = replay;

		for (char *r = replay, *e; *r; r = e) {
			e = strchr(r, '\n');
			e = e ? e + 1 : r + strlen(r);
			if (*r != '#') {
				memmove(w, r, (size_t)(e - r));
				w += e - r;
			}
		}
		*w = 0;
	}
	assert_string_equal(replay, want);
	raw_stream_free(&rs);
	free(want);
	free(got);
	free(replay);
	free(replay_ref);
	profile_free(p);
	profile_free(q);
}

/* More distinct stacks than the memo holds: it starts afresh, and every
 * count stays right. */
static void test_memo_bound(void **state)
{
	struct profile *p = profile_new(1000, "cpu");
	struct fake_sym fs = {0};
	struct profile_raw_stats st;
	struct rec r;
	const uint32_t n = 40000;

	(void)state;
	profile_set_max_ordered(p, 0);
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t i = 0; i < n; i++) {
			struct frame_rec f[2] = {{0x1000 + 16 * (uint64_t)i, 2, 5}, {0x40, 0, 1}};

			mk(&r, i, 101, 0, 2, f);
			assert_int_equal(add(p, 1, &r, &fs), 0);
		}
	profile_raw_stats(p, &st);
	assert_true(st.resets >= 1);
	assert_int_equal(p->total, 2 * n);
	assert_int_equal(p->nstacks, n);
	for (uint32_t i = 0; i < n; i += 997)
		assert_int_equal(p->stacks[i].count, 2);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_same_stacks_merge),
	    cmocka_unit_test(test_instr_fingerprint_epoch_thread_apart),
	    cmocka_unit_test(test_recursion_named_once_unnamed_fails),
	    cmocka_unit_test(test_time_order_and_raw),
	    cmocka_unit_test(test_memo_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
