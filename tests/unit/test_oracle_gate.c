// SPDX-License-Identifier: MIT
/*
 * The slowdown statistics of oracle_gate.c on made-up boundaries: the mean
 * over pairs of 100 * (1 - on/off) whichever half of a pair came first, the
 * Student t 95% half-width on those figures, pairs with an idle off half
 * left out, an incomplete window using only its complete pairs; and the
 * unpaired figure from a progress log (Welch's interval).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "oracle_gate.h"

/* A gate whose boundaries are filled by hand: rates[k] is the progress
 * rate of sub-window k (each 1 s long). */
static void fill(struct oracle_gate *g, int npairs, const double *rates, int nsub)
{
	static uint64_t counter;
	uint64_t v = 0;

	oracle_gate_init(g, 0, 2.0 * npairs, npairs, 42, &counter, NULL, NULL);
	g->t[0] = 0;
	g->prog[0] = 0;
	for (int k = 0; k < nsub; k++) {
		v += (uint64_t)rates[k];
		g->t[k + 1] = k + 1;
		g->prog[k + 1] = v;
	}
	g->nb = nsub + 1;
}

static void test_pairs(void **state)
{
	struct oracle_gate g;
	double rates[8], mean, ci, on, off, want[4] = {10, 20, 30, 40}, m = 25, sd = 0;
	(void)state;

	/* Off at 1000/s; on at 900, 800, 700, 600: slowdowns 10..40. */
	oracle_gate_init(&g, 0, 8, 4, 42, NULL, NULL, NULL);
	for (int p = 0; p < 4; p++) {
		int first_on = g.first_on[p];

		rates[2 * p + (first_on ? 0 : 1)] = 1000 - 100 * (p + 1);
		rates[2 * p + (first_on ? 1 : 0)] = 1000;
	}
	{
		unsigned char order[4];

		memcpy(order, g.first_on, sizeof(order));
		fill(&g, 4, rates, 8);
		/* fill() re-inits with the same seed: the same order */
		assert_memory_equal(order, g.first_on, sizeof(order));
	}
	assert_int_equal(oracle_gate_slowdown(&g, &mean, &ci, &on, &off), 4);
	assert_true(fabs(mean - m) < 1e-9);
	for (int i = 0; i < 4; i++)
		sd += (want[i] - m) * (want[i] - m);
	sd = sqrt(sd / 3);
	assert_true(fabs(ci - 3.182 * sd / 2) < 1e-6);
	assert_true(fabs(off - 1000) < 1e-9);
	assert_true(fabs(on - 750) < 1e-9);
	assert_true(mean - ci <= mean && mean <= mean + ci);
}

static void test_idle_and_incomplete(void **state)
{
	struct oracle_gate g;
	double rates[6] = {500, 500, 0, 0, 500, 500}, mean, ci, on, off;
	(void)state;

	/* Pair 1 made no progress at all: left out. Only 2 of 3 pairs' worth
	 * of sub-windows recorded beyond that: the third is incomplete. */
	fill(&g, 4, rates, 6);
	assert_int_equal(oracle_gate_slowdown(&g, &mean, &ci, &on, &off), 2);
	assert_true(fabs(mean) < 1e-9);
	assert_true(fabs(ci) < 1e-9);
	/* One pair: a mean, no interval. */
	fill(&g, 1, rates, 2);
	assert_int_equal(oracle_gate_slowdown(&g, &mean, &ci, &on, &off), 1);
	assert_true(isnan(ci));
	/* No counter: nothing. */
	g.progress = NULL;
	assert_int_equal(oracle_gate_slowdown(&g, &mean, &ci, &on, &off), 0);
	assert_true(isnan(mean));
}

static void test_t975(void **state)
{
	(void)state;
	assert_true(isnan(oracle_t975(0)));
	assert_true(fabs(oracle_t975(1) - 12.706) < 1e-9);
	assert_true(fabs(oracle_t975(9) - 2.262) < 1e-9);
	assert_true(oracle_t975(200) == 1.96);
}

static void test_plog(void **state)
{
	static struct oracle_plog l;
	double mean, ci, on, off;
	(void)state;

	/* 1 s off at 1000/s, then 1 s on at 800/s, logged every 5 ms. */
	memset(&l, 0, sizeof(l));
	for (int i = 0; i <= 400; i++) {
		double t = i * 0.005;

		l.t[i] = t;
		l.v[i] = (uint64_t)(t <= 1 ? 1000 * t : 1000 + 800 * (t - 1));
	}
	l.n = 401;
	assert_int_equal(oracle_plog_slowdown(&l, 0, 1, 1, 2, &mean, &ci, &on, &off), 0);
	assert_true(fabs(mean - 20) < 0.5);
	assert_true(ci >= 0 && isfinite(ci) && ci < 5);
	/* A span the log does not cover. */
	assert_int_equal(oracle_plog_slowdown(&l, 0, 1, 5, 6, &mean, &ci, &on, &off), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pairs),
	    cmocka_unit_test(test_idle_and_incomplete),
	    cmocka_unit_test(test_t975),
	    cmocka_unit_test(test_plog),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
