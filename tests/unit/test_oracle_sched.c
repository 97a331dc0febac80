// SPDX-License-Identifier: MIT
/* The oracle's pure pieces: the sampling schedule (absolute, never past the
 * deadline), the stack key, and the external samplers' line protocol. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "oracle_sched.h"

static void regular_is_absolute_and_bounded(void **state)
{
	struct oracle_sched s;
	double t, prev = -1;
	uint64_t n = 0;

	(void)state;
	oracle_sched_init(&s, 100.0, 1.0, 1000, 0, 1);
	while (oracle_sched_next(&s, &t)) {
		/* start + i/rate exactly: no accumulated rounding */
		assert_true(fabs(t - (100.0 + (double)n / 1000)) < 1e-9);
		assert_true(t < 101.0);
		assert_true(t > prev);
		prev = t;
		n++;
	}
	assert_int_equal(n, 1000);
	/* Exhausted stays exhausted. */
	assert_false(oracle_sched_next(&s, &t));
}

static void poisson_is_exponential_and_bounded(void **state)
{
	struct oracle_sched s, s2;
	double t, t2, prev = 50.0, sum = 0, sumsq = 0;
	uint64_t n = 0;

	(void)state;
	oracle_sched_init(&s, 50.0, 10.0, 1000, 1, 42);
	oracle_sched_init(&s2, 50.0, 10.0, 1000, 1, 42);
	while (oracle_sched_next(&s, &t)) {
		double gap = t - prev;

		assert_true(oracle_sched_next(&s2, &t2));
		assert_true(t == t2); /* same seed, same schedule */
		assert_true(t < 60.0);
		assert_true(gap > 0);
		sum += gap;
		sumsq += gap * gap;
		prev = t;
		n++;
	}
	/* 10 000 arrivals expected, sd 100: 5 sd either way. */
	assert_true(n > 9500 && n < 10500);
	/* Exponential: mean 1 ms, coefficient of variation 1 (within 5%). */
	{
		double mean = sum / (double)n, sd = sqrt(sumsq / (double)n - mean * mean);

		assert_true(fabs(mean - 0.001) < 0.00005);
		assert_true(fabs(sd / mean - 1.0) < 0.05);
	}
}

static void poisson_late_sampler_does_not_shift_schedule(void **state)
{
	struct oracle_sched a, b;
	double ta, tb;

	(void)state;
	/* The schedule depends only on the seed, never on when next() is
	 * called: a sampler that is late gets the same (past) arrivals. */
	oracle_sched_init(&a, 0, 1.0, 100, 1, 7);
	oracle_sched_init(&b, 0, 1.0, 100, 1, 7);
	while (oracle_sched_next(&a, &ta)) {
		assert_true(oracle_sched_next(&b, &tb));
		assert_true(ta == tb);
	}
	assert_false(oracle_sched_next(&b, &tb));
}

static void zero_rate_is_always_due(void **state)
{
	struct oracle_sched s;
	double t;

	(void)state;
	oracle_sched_init(&s, 5.0, 1.0, 0, 1, 1);
	for (int i = 0; i < 1000; i++) {
		assert_true(oracle_sched_next(&s, &t));
		assert_true(t == 5.0);
	}
}

static void key_is_leaf_first_name_line(void **state)
{
	struct rule_frame f[] = {{"leaf_a", "x.py", 10, 0, 0},
				 {"hot_a", "x.py", 12, 0, 0},
				 {"main", NULL, 18, 0, 0},
				 {"<module>", "", 24, 0, 0}};
	struct rule_frame odd[] = {{"we;ird", "x.py", 0, 0, 0}, {NULL, NULL, 3, 0, 0}};
	struct rule_frame tasks[] = {{"fetch", "x.py", 5, 0, 0},
				     {"fetch-1", NULL, 0, 1, 0},
				     {"main", "x.py", 9, 0, 0},
				     {"Task;1", NULL, 0, 1, 0}};
	char buf[128], small[12];

	(void)state;
	assert_int_equal(oracle_key_build(f, 4, buf, sizeof(buf)),
			 (int)strlen("leaf_a:10;hot_a:12;main:18;<module>:24"));
	assert_string_equal(buf, "leaf_a:10;hot_a:12;main:18;<module>:24");
	oracle_key_build(odd, 2, buf, sizeof(buf));
	assert_string_equal(buf, "we:ird:?;?:3");
	/* task marks: "[task NAME]", no line, the name escaped like any */
	oracle_key_build(tasks, 4, buf, sizeof(buf));
	assert_string_equal(buf, "fetch:5;[task fetch-1];main:9;[task Task:1]");
	/* instruction marks: "[op NAME]", no line */
	{
		struct rule_frame ops[] = {{"BINARY_OP_ADD_INT", NULL, 0, 0, 1},
					   {"add", "x.py", 26, 0, 0}};

		oracle_key_build(ops, 2, buf, sizeof(buf));
		assert_string_equal(buf, "[op BINARY_OP_ADD_INT];add:26");
	}
	assert_int_equal(oracle_key_build(tasks, 4, small, sizeof(small)), -1);
	assert_true(strlen(small) < sizeof(small));
	assert_int_equal(oracle_key_build(f, 0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	assert_int_equal(oracle_key_build(f, 4, small, sizeof(small)), -1);
	assert_true(strlen(small) < sizeof(small));
}

/* A task chain is keyed up to its root task: the loop's frames below it
 * go, whatever sampler composed it; a stack without a mark stays whole. */
static void task_chain_cut_at_root_task(void **state)
{
	struct rule_frame chain[] = {
	    {"hot_leaf", "x.py", 15, 0, 0}, {"hot", "x.py", 28, 0, 0},
	    {"hot", NULL, 0, 1, 0},	    {"main", "x.py", 43, 0, 0},
	    {"Task-1", NULL, 0, 1, 0},	    {"Handle._run", "events.py", 94, 0, 0},
	    {"<module>", "x.py", 47, 0, 0}};
	struct rule_frame plain[] = {{"_run_once", "b.py", 1, 0, 0},
				     {"<module>", "x.py", 47, 0, 0}};
	char buf[256];

	(void)state;
	assert_int_equal(oracle_task_chain_len(chain, 7), 5);
	oracle_key_build(chain, oracle_task_chain_len(chain, 7), buf, sizeof(buf));
	/* an unnamed task's counter differs between targets: Task-N */
	assert_string_equal(buf, "hot_leaf:15;hot:28;[task hot];main:43;[task Task-N]");
	/* a name that only looks numbered is kept */
	chain[2].name = "Task-7b";
	oracle_key_build(chain, 3, buf, sizeof(buf));
	assert_string_equal(buf, "hot_leaf:15;hot:28;[task Task-7b]");
	/* the rootmost mark decides, wherever it is */
	chain[4].task = 0;
	assert_int_equal(oracle_task_chain_len(chain, 7), 3);
	assert_int_equal(oracle_task_chain_len(plain, 2), 2);
	assert_int_equal(oracle_task_chain_len(plain, 0), 0);
}

static void ext_protocol(void **state)
{
	struct rule_frame fr[8];
	struct ext_line el;
	char l1[] = "tid=77 <module>:24;main:18;hot_a:12;leaf_a:10\n";
	char l2[] = "E torn chain at 0x1234\n";
	char l3[] = ". 12.5\n";
	char l4[] = "# comment\n";
	char l5[] = "a;b;c;d;e;f;g;h;i;j\n";
	char l6[] = "main;noline:x\n";
	char l7[] = ".\n";

	(void)state;
	assert_int_equal(oracle_ext_parse(l1, &el, fr, 8), EXT_STACK);
	assert_int_equal(el.tid, 77);
	assert_int_equal(el.nframes, 4);
	assert_string_equal(fr[0].name, "leaf_a");
	assert_int_equal(fr[0].line, 10);
	assert_string_equal(fr[3].name, "<module>");
	assert_int_equal(fr[3].line, 24);
	assert_int_equal(oracle_ext_parse(l2, &el, fr, 8), EXT_ERROR);
	assert_string_equal(el.text, "torn chain at 0x1234");
	assert_int_equal(oracle_ext_parse(l3, &el, fr, 8), EXT_END);
	assert_true(fabs(el.us - 12.5) < 1e-9);
	assert_int_equal(oracle_ext_parse(l7, &el, fr, 8), EXT_END);
	assert_true(isnan(el.us));
	assert_int_equal(oracle_ext_parse(l4, &el, fr, 8), EXT_SKIP);
	/* Deeper than max: the leaf end is kept. */
	assert_int_equal(oracle_ext_parse(l5, &el, fr, 8), EXT_STACK);
	assert_int_equal(el.nframes, 8);
	assert_string_equal(fr[0].name, "j");
	assert_string_equal(fr[7].name, "c");
	/* A colon not followed by a number is part of the name. */
	assert_int_equal(oracle_ext_parse(l6, &el, fr, 8), EXT_STACK);
	assert_string_equal(fr[0].name, "noline:x");
	assert_int_equal(fr[0].line, 0);
}

/* ptrace-low lowers its rate as it learns what a stop costs: later gaps
 * follow the new rate, arrivals stay bounded by the deadline, and a regular
 * schedule ignores the call (its times are start + i/rate). */
static void set_rate_changes_later_gaps_only(void **state)
{
	struct oracle_sched s;
	double t, last = 0;
	uint64_t before, after = 0;

	(void)state;
	oracle_sched_init(&s, 0.0, 100.0, 1000, 1, 7);
	while (oracle_sched_next(&s, &t) && t < 10.0)
		last = t;
	before = s.n;
	oracle_sched_set_rate(&s, 10);
	oracle_sched_set_rate(&s, 0); /* ignored: a rate must be positive */
	while (oracle_sched_next(&s, &t)) {
		assert_true(t >= last && t < 100.0);
		last = t;
		after++;
	}
	/* ~10000 arrivals in the first 10 s at 1 kHz, ~900 in 90 s at 10 Hz */
	assert_true(before > 9000 && before < 11000);
	assert_true(after > 700 && after < 1100);

	oracle_sched_init(&s, 0.0, 1.0, 100, 0, 1);
	oracle_sched_set_rate(&s, 1);
	after = 0;
	while (oracle_sched_next(&s, &t))
		after++;
	assert_int_equal(after, 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(regular_is_absolute_and_bounded),
	    cmocka_unit_test(poisson_is_exponential_and_bounded),
	    cmocka_unit_test(poisson_late_sampler_does_not_shift_schedule),
	    cmocka_unit_test(set_rate_changes_later_gaps_only),
	    cmocka_unit_test(zero_rate_is_always_due),
	    cmocka_unit_test(key_is_leaf_first_name_line),
	    cmocka_unit_test(task_chain_cut_at_root_task),
	    cmocka_unit_test(ext_protocol),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
