// SPDX-License-Identifier: MIT
/*
 * The regression gate's tests of a difference (oracle_stats.h, issue 27)
 * against values worked out by hand or from closed forms (in the comments).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "oracle_stats.h"

#include <math.h>
#include <stdio.h>

#define assert_double_equal(a, b, eps) near((a), (b), (eps), #a, __FILE__, __LINE__)

static void near(double a, double b, double eps, const char *what, const char *file, int line)
{
	if (fabs(a - b) <= eps)
		return;
	print_error("%s = %.12g, expected %.12g (within %g)\n", what, a, b, eps);
	_fail(file, line);
}

/* Fisher's tea-tasting table [[3,1],[1,3]]: with margins 4,4 and 4 cups
 * of each, P(k) = C(4,k) C(4,4-k) / 70 = 1,16,36,16,1 over 70; the tables
 * no likelier than k=3 are 0,1,3,4: 34/70. */
static void test_fisher_tea(void **s)
{
	(void)s;
	assert_double_equal(oracle_fisher_p(3, 4, 1, 4), 34.0 / 70, 1e-12);
	assert_double_equal(oracle_fisher_p(1, 4, 3, 4), 34.0 / 70, 1e-12);
	assert_double_equal(oracle_fisher_p(2, 4, 2, 4), 1.0, 1e-12);
}

/* 0/10 against 5/10: K = 5 of N = 20, P(0) = P(5) = C(15,10)/C(20,10) =
 * 3003/184756, every other table likelier: p = 6006/184756. */
static void test_fisher_zero(void **s)
{
	(void)s;
	assert_double_equal(oracle_fisher_p(0, 10, 5, 10), 6006.0 / 184756, 1e-12);
	assert_double_equal(oracle_fisher_p(0, 3000, 0, 3000), 1.0, 1e-12);
	assert_double_equal(oracle_fisher_p(0, 0, 0, 0), 1.0, 0);
	assert_true(isnan(oracle_fisher_p(5, 4, 0, 4))); /* more than n */
	/* The gate's sizes: 0 of 3000 against 150 of 3000 is far beyond
	 * 1e-30; 3 of 3000 against 3 of 3000 is no difference. */
	assert_true(oracle_fisher_p(0, 3000, 150, 3000) < 1e-30);
	assert_double_equal(oracle_fisher_p(3, 3000, 3, 3000), 1.0, 1e-9);
}

/* Student t closed forms: df 1 is Cauchy, P(|T| >= 1) = 1/2; df 2:
 * P(|T| >= t) = 1 - t / sqrt(2 + t^2), at t = 2 1 - 2/sqrt(6). And the
 * 0.975 quantiles the slowdown interval uses give p = 0.05. */
static void test_t(void **s)
{
	(void)s;
	assert_double_equal(oracle_t_p2(1, 1), 0.5, 1e-10);
	assert_double_equal(oracle_t_p2(-1, 1), 0.5, 1e-10);
	assert_double_equal(oracle_t_p2(2, 2), 1 - 2 / sqrt(6), 1e-10);
	assert_double_equal(oracle_t_p2(0, 7), 1.0, 1e-12);
	assert_double_equal(oracle_t_p2(2.228138852, 10), 0.05, 1e-7);
	assert_double_equal(oracle_t_p2(2.042272456, 30), 0.05, 1e-7);
	assert_double_equal(oracle_t_p2(INFINITY, 5), 0.0, 0);
	/* I_x(1, 1) = x; I_x(a, b) = 1 - I_(1-x)(b, a). */
	assert_double_equal(oracle_betai(1, 1, 0.3), 0.3, 1e-12);
	assert_double_equal(oracle_betai(2.5, 4, 0.2) + oracle_betai(4, 2.5, 0.8), 1, 1e-12);
}

/* Welch by hand: means 10 and 12, sd 2 (n 10) and 4 (n 20): v = 0.4 and
 * 0.8, t = 2 / sqrt(1.2) = 1.8257418584, df = 1.44 / (0.16/9 + 0.64/19)
 * = 27.9818181818. */
static void test_welch(void **s)
{
	double t, df, p;

	(void)s;
	p = oracle_welch(10, 2, 10, 12, 4, 20, &t, &df);
	assert_double_equal(t, 1.8257418583505538, 1e-12);
	assert_double_equal(df, 27.98181818181818, 1e-9);
	assert_double_equal(p, oracle_t_p2(t, df), 1e-15);
	assert_true(p > 0.05 && p < 0.1);
	/* Swapped: the same p, t negative. */
	assert_double_equal(oracle_welch(12, 4, 20, 10, 2, 10, &t, &df), p, 1e-15);
	assert_true(t < 0);
	/* One value a side is no test; no spread is exact. */
	assert_true(isnan(oracle_welch(1, 0, 1, 2, 0, 5, NULL, NULL)));
	assert_double_equal(oracle_welch(3, 0, 5, 3, 0, 5, NULL, NULL), 1.0, 0);
	assert_double_equal(oracle_welch(3, 0, 5, 4, 0, 5, &t, NULL), 0.0, 0);
	assert_true(t > 0 && isinf(t));
}

static void test_normal(void **s)
{
	(void)s;
	assert_double_equal(oracle_norm_q(0.975), 1.959963984540054, 1e-9);
	assert_double_equal(oracle_norm_q(0.8), 0.8416212335729143, 1e-9);
	assert_double_equal(oracle_norm_q(0.5), 0.0, 1e-12);
	assert_double_equal(oracle_norm_p2(1.96), 0.04999579029644087, 1e-12);
	assert_double_equal(oracle_norm_p2(-1.96), 0.04999579029644087, 1e-12);
	assert_true(isnan(oracle_norm_q(1)));
}

/* Holm: p 0.01 0.04 0.03 0.005 sorted 0.005 0.01 0.03 0.04, times 4 3 2 1:
 * 0.02 0.03 0.06 0.04, kept non-decreasing: 0.02 0.03 0.06 0.06. */
static void test_holm(void **s)
{
	const double p[4] = {0.01, 0.04, 0.03, 0.005}, q[3] = {0.01, NAN, 0.02};
	double adj[4];

	(void)s;
	oracle_holm(p, 4, adj);
	assert_double_equal(adj[0], 0.03, 1e-15);
	assert_double_equal(adj[1], 0.06, 1e-15);
	assert_double_equal(adj[2], 0.06, 1e-15);
	assert_double_equal(adj[3], 0.02, 1e-15);
	/* A NAN is out of the family: m = 2. */
	oracle_holm(q, 3, adj);
	assert_double_equal(adj[0], 0.02, 1e-15);
	assert_true(isnan(adj[1]));
	assert_double_equal(adj[2], 0.02, 1e-15);
}

/* Arcsine MDD: z = 1.959964 + 0.841621 = 2.801585; from p1 = 0 with 3000
 * a side, h = z sqrt(2/3000) = 0.0723370, p2 = sin^2(h/2) = 0.00130758;
 * from p1 = 0.05, p2 - p1 = 0.0169285 (python3: math.asin, math.sin). */
static void test_mdd(void **s)
{
	(void)s;
	assert_double_equal(oracle_mdd_prop(0, 3000, 3000, 0.05, 0.8), 0.0013075763060120052, 1e-9);
	assert_double_equal(oracle_mdd_prop(0.05, 3000, 3000, 0.05, 0.8), 0.01692847397068159,
			    1e-9);
	assert_double_equal(oracle_mdd_prop(0.99, 2, 2, 0.05, 0.8), 0.01, 1e-12); /* capped */
	assert_double_equal(oracle_mdd_se(1, 0.05, 0.8), 2.801585218112969, 1e-8);
}

static struct keydist *one(const char *key)
{
	struct keydist *kd = keydist_new();

	assert_non_null(kd);
	assert_non_null(keydist_add(kd, key, 1));
	return kd;
}

/* Blocks of one sample each, half "a" half "b", on both sides: the raw
 * TVD is |p_A - p_R|, p ~ Bin(20, 1/2)/20 each, so p_A - p_R has sd
 * sqrt(2 * 0.25 / 20) = 0.1581 and its absolute value (nearly normal) sd
 * 0.1581 sqrt(1 - 2/pi) = 0.0953. 4000 resamples: within 10%. Identical
 * blocks give 0; one block a side is no bootstrap. */
static void test_boot(void **s)
{
	struct keydist *m[20], *r[20], *same[4];
	double se;

	(void)s;
	for (int i = 0; i < 20; i++) {
		m[i] = one(i % 2 ? "a" : "b");
		r[i] = one(i % 2 ? "b" : "a");
	}
	se = oracle_tvd_boot_se(m, 20, r, 20, 0, 4000, 42);
	assert_true(fabs(se - 0.0953) < 0.0095);
	/* The same seed, the same figure. */
	assert_double_equal(oracle_tvd_boot_se(m, 20, r, 20, 0, 4000, 42), se, 0);
	for (int i = 0; i < 4; i++)
		same[i] = m[1];
	assert_double_equal(oracle_tvd_boot_se(same, 4, same, 4, 1, 100, 1), 0.0, 1e-12);
	assert_true(isnan(oracle_tvd_boot_se(m, 1, r, 20, 0, 100, 1)));
	for (int i = 0; i < 20; i++) {
		keydist_free(m[i]);
		keydist_free(r[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fisher_tea), cmocka_unit_test(test_fisher_zero),
	    cmocka_unit_test(test_t),	       cmocka_unit_test(test_welch),
	    cmocka_unit_test(test_normal),     cmocka_unit_test(test_holm),
	    cmocka_unit_test(test_mdd),	       cmocka_unit_test(test_boot),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
