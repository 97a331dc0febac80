// SPDX-License-Identifier: MIT
/*
 * The oracle's arithmetic against values worked out by hand (in the
 * comments), on cases small enough to check on paper.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "diag.h"
#include "oracle_stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EPS 1e-9

/* cmocka 1.1 compares floats only; these figures need doubles. */
#define assert_double_equal(a, b, eps) near((a), (b), (eps), #a, __FILE__, __LINE__)

static void near(double a, double b, double eps, const char *what, const char *file, int line)
{
	if (fabs(a - b) <= eps)
		return;
	print_error("%s = %.12g, expected %.12g (within %g)\n", what, a, b, eps);
	_fail(file, line);
}

static struct keydist *kd_of(const char *const *keys, const double *w, size_t n)
{
	struct keydist *kd = keydist_new();
	size_t i;

	assert_non_null(kd);
	for (i = 0; i < n; i++)
		assert_non_null(keydist_add(kd, keys[i], w[i]));
	return kd;
}

static void test_tvd_hand(void **state)
{
	/* p = {a: 3, b: 1} -> (0.75, 0.25, 0)
	 * q = {a: 1, b: 1, c: 2} -> (0.25, 0.25, 0.5)
	 * ½ (|0.75 − 0.25| + |0.25 − 0.25| + |0 − 0.5|) = ½ (0.5 + 0 + 0.5) = 0.5 */
	const char *pk[] = {"a", "b"}, *qk[] = {"a", "b", "c"};
	const double pw[] = {3, 1}, qw[] = {1, 1, 2};
	struct keydist *p = kd_of(pk, pw, 2), *q = kd_of(qk, qw, 3);
	struct keydist *e1 = keydist_new(), *e2 = keydist_new();

	(void)state;
	assert_double_equal(oracle_tvd(p, q), 0.5, EPS);
	assert_double_equal(oracle_tvd(q, p), 0.5, EPS); /* symmetric */
	assert_double_equal(oracle_tvd(p, p), 0, EPS);
	/* Disjoint supports: the maximum, 1. */
	keydist_add(e1, "x", 7);
	assert_double_equal(oracle_tvd(p, e1), 1, EPS);
	/* Empty against empty is no difference; against anything, total. */
	assert_double_equal(oracle_tvd(e2, e2), 0, EPS);
	assert_double_equal(oracle_tvd(p, e2), 1, EPS);
	keydist_free(p);
	keydist_free(q);
	keydist_free(e1);
	keydist_free(e2);
}

static void test_tvd_floor_hand(void **state)
{
	/* ref = {a: 1, b: 1}: p = 0.5 each, Σ sqrt(p(1 − p)) = 0.5 + 0.5 = 1.
	 * ½·sqrt(2/π) = 0.3989422804.
	 * n_mode = n_ref = 100: sqrt(0.02) = 0.1414213562 -> 0.0564189584.
	 * n_ref = ∞ (ground truth): sqrt(0.01) = 0.1 -> 0.0398942280. */
	const char *k[] = {"a", "b"};
	const double w[] = {1, 1};
	struct keydist *ref = kd_of(k, w, 2);
	/* One key: p = 1, sqrt(1·0) = 0: a certain outcome has no noise. */
	const char *k1[] = {"only"};
	const double w1[] = {5};
	struct keydist *one = kd_of(k1, w1, 1);

	(void)state;
	assert_double_equal(oracle_tvd_floor(ref, 100, 100), 0.0564189584, 1e-9);
	assert_double_equal(oracle_tvd_floor(ref, 100, INFINITY), 0.0398942280, 1e-9);
	assert_double_equal(oracle_tvd_floor(one, 100, 100), 0, EPS);
	assert_true(isnan(oracle_tvd_floor(ref, 0, 100)));
	keydist_free(ref);
	keydist_free(one);
}

static void test_noise_block_choice(void **state)
{
	(void)state;
	/* 40 blocks, never shorter than 50 samples. */
	assert_int_equal(oracle_noise_block(0), 50);
	assert_int_equal(oracle_noise_block(100), 50);
	assert_int_equal(oracle_noise_block(2000), 50);
	assert_int_equal(oracle_noise_block(4000), 100);
	assert_int_equal(oracle_noise_block(300000), 7500);
}

static void test_tvd_noise_hand(void **state)
{
	/* 200 samples in blocks of 50: blocks 0 and 2 go to A, 1 and 3 to B.
	 *   block 0: 50 x       -> A
	 *   block 1: 50 x       -> B
	 *   block 2: 50 y       -> A
	 *   block 3: 25 x, 25 y -> B
	 * A = (x 0.5, y 0.5), B = (x 0.75, y 0.25): TVD(A, B) = 0.25.
	 * nA = nB = 100: 1/nA + 1/nB = 0.02. For n_mode = 50, n_ref = 200:
	 * 1/50 + 1/200 = 0.025; scale sqrt(0.025 / 0.02) = 1.1180339887
	 * -> 0.2795084972. Scaled to nA, nB themselves it is 0.25 exactly. */
	const char *seq[200];
	int i;

	(void)state;
	for (i = 0; i < 200; i++)
		seq[i] = i < 100 ? "x" : i < 150 ? "y" : (i < 175 ? "x" : "y");
	assert_double_equal(oracle_tvd_noise(seq, 200, 50, 50, 200), 0.2795084972, 1e-9);
	assert_double_equal(oracle_tvd_noise(seq, 200, 50, 100, 100), 0.25, EPS);
	/* A stationary sequence interleaved finer than the blocks: both halves
	 * identical, floor 0. */
	for (i = 0; i < 200; i++)
		seq[i] = i % 2 ? "x" : "y";
	assert_double_equal(oracle_tvd_noise(seq, 200, 50, 100, 100), 0, EPS);
	/* Fewer than two blocks: no estimate. */
	assert_true(isnan(oracle_tvd_noise(seq, 99, 50, 100, 100)));
	/* block 0 chooses oracle_noise_block(200) = 50, as above. */
	assert_double_equal(oracle_tvd_noise(seq, 200, 0, 100, 100), 0, EPS);
}

static void test_aggregate_hand(void **state)
{
	/* {1, 2, 3, 4}: mean 2.5; squared deviations 2.25 + 0.25 + 0.25 + 2.25
	 * = 5, / (n − 1 = 3) = 1.6667, sd = 1.2909944487; median (2 + 3)/2. */
	const double a[] = {4, 1, 3, 2};
	/* {5, 1, 3}: mean 3; (4 + 4 + 0) / 2 = 4, sd 2; median 3. */
	const double b[] = {5, 1, 3};
	/* NaN runs are skipped: {2} -> n 1, sd 0. */
	const double c[] = {NAN, 2, NAN};
	struct oracle_agg g;

	(void)state;
	oracle_aggregate(a, 4, &g);
	assert_int_equal(g.n, 4);
	assert_double_equal(g.mean, 2.5, EPS);
	assert_double_equal(g.sd, 1.2909944487, 1e-9);
	assert_double_equal(g.median, 2.5, EPS);
	oracle_aggregate(b, 3, &g);
	assert_double_equal(g.mean, 3, EPS);
	assert_double_equal(g.sd, 2, EPS);
	assert_double_equal(g.median, 3, EPS);
	oracle_aggregate(c, 3, &g);
	assert_int_equal(g.n, 1);
	assert_double_equal(g.mean, 2, EPS);
	assert_double_equal(g.sd, 0, EPS);
	assert_double_equal(g.median, 2, EPS);
	oracle_aggregate(NULL, 0, &g);
	assert_int_equal(g.n, 0);
	assert_true(isnan(g.mean));
}

static void test_fn_only(void **state)
{
	char buf[128];
	struct keydist *in = keydist_new(), *out = keydist_new();

	(void)state;
	oracle_key_fn_only("leaf_a:10;hot_a:12;<module>:24", buf, sizeof(buf));
	assert_string_equal(buf, "leaf_a;hot_a;<module>");
	/* No line, or a non-numeric tail, is kept whole. */
	oracle_key_fn_only("<unknown>;x:y;f:", buf, sizeof(buf));
	assert_string_equal(buf, "<unknown>;x:y;f:");
	/* Truncation stays a valid string. */
	oracle_key_fn_only("abcdef:1;ghij:2", buf, 6);
	assert_string_equal(buf, "abcde");

	/* Keys differing only in lines merge: 2 + 3 under "a;m". */
	keydist_add(in, "a:1;m:5", 2);
	keydist_add(in, "a:2;m:5", 3);
	keydist_add(in, "b:1;m:6", 1);
	assert_int_equal(keydist_fn_only(in, out), 0);
	assert_int_equal(keydist_nkeys(out), 2);
	assert_double_equal(keydist_get(out, "a;m"), 5, EPS);
	assert_double_equal(keydist_get(out, "b;m"), 1, EPS);
	assert_double_equal(keydist_total(out), 6, EPS);
	keydist_free(in);
	keydist_free(out);
}

static void test_map_growth(void **state)
{
	struct keydist *kd = keydist_new();
	const char *key, *stable;
	char k[32];
	size_t it = 0, seen = 0;
	double w, sum = 0;
	int i;

	(void)state;
	stable = keydist_add(kd, "first", 1);
	for (i = 0; i < 5000; i++) {
		snprintf(k, sizeof(k), "k%d", i);
		assert_non_null(keydist_add(kd, k, i % 7));
	}
	for (i = 0; i < 5000; i += 3) {
		snprintf(k, sizeof(k), "k%d", i);
		keydist_add(kd, k, 1);
	}
	assert_int_equal(keydist_nkeys(kd), 5001);
	assert_double_equal(keydist_get(kd, "k3"), 3 + 1, EPS);
	assert_double_equal(keydist_get(kd, "k4"), 4, EPS);
	assert_double_equal(keydist_get(kd, "absent"), 0, EPS);
	/* The returned key survives the table growing under it. */
	assert_string_equal(stable, "first");
	while (keydist_next(kd, &it, &key, &w)) {
		seen++;
		sum += w;
	}
	assert_int_equal(seen, 5001);
	assert_double_equal(sum, keydist_total(kd), 1e-6);
	keydist_clear(kd);
	assert_int_equal(keydist_nkeys(kd), 0);
	keydist_add(kd, "again", 2);
	assert_double_equal(keydist_total(kd), 2, EPS);
	keydist_free(kd);
}

static char *write_tmp(const char *text)
{
	static char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/bpfpy-truth-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void test_truth_json(void **state)
{
	struct keydist *kd = keydist_new(), *sampled = keydist_new();
	struct diag d = {0};
	char *path;

	(void)state;
	path = write_tmp("{\"phase_a\": 1.5, \"phase_b\": 3}");
	assert_int_equal(keydist_load_truth(kd, path, &d), 0);
	unlink(path);
	assert_double_equal(keydist_total(kd), 4.5, EPS);
	/* Truth (1/3, 2/3) against samples (1/2, 1/2): TVD 1/6. */
	keydist_add(sampled, "phase_a", 10);
	keydist_add(sampled, "phase_b", 10);
	assert_double_equal(oracle_tvd(sampled, kd), 1.0 / 6, EPS);

	path = write_tmp("{\"phase_a\": \"slow\"}");
	assert_int_equal(keydist_load_truth(kd, path, &d), -1);
	assert_int_equal(d.code, EXIT_FAIL);
	assert_non_null(strstr(d.msg, path));
	assert_non_null(strstr(d.msg, "phase_a"));
	unlink(path);

	path = write_tmp("{\"phase_a\": 1.5");
	assert_int_equal(keydist_load_truth(kd, path, &d), -1);
	assert_non_null(strstr(d.msg, path));
	unlink(path);

	assert_int_equal(keydist_load_truth(kd, "/nonexistent/truth.json", &d), -1);
	assert_non_null(strstr(d.msg, "/nonexistent/truth.json"));
	keydist_free(kd);
	keydist_free(sampled);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tvd_hand),	       cmocka_unit_test(test_tvd_floor_hand),
	    cmocka_unit_test(test_noise_block_choice), cmocka_unit_test(test_tvd_noise_hand),
	    cmocka_unit_test(test_aggregate_hand),     cmocka_unit_test(test_fn_only),
	    cmocka_unit_test(test_map_growth),	       cmocka_unit_test(test_truth_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
