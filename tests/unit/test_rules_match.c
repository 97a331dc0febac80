// SPDX-License-Identifier: MIT
/*
 * The rules matcher: the forward reachability matcher of rules.c answers
 * exactly as the backtracking matcher it replaced (kept below, only here,
 * as the reference) on many random patterns and stacks, including how far
 * from the root a failed match got (the "closest miss" of the report); and
 * its work is bounded by C·k·n, measured with its step counter, never with
 * a clock.
 *
 * rules.c is included, not linked, to reach the parsed patterns.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../user/oracle/rules.c"

/* ------------------------------------- the old matcher, as the reference */

struct old_matcher {
	const struct rules *r;
	const struct pattern *pat;
	const struct rule_frame *f; /* leaf first */
	int n;
	uint8_t *failed; /* per (item, frame) */
	int *any_fail;	 /* per item: lowest start of an unbounded "." that failed */
	int deepest;
};

static bool old_match_from(struct old_matcher *m, int pi, int fi)
{
	const struct item *it;
	size_t slot;
	int run, lim, k;

	if (pi == m->pat->n)
		return fi == m->n;
	slot = (size_t)pi * (size_t)(m->n + 1) + (size_t)fi;
	if (m->failed[slot])
		return false;
	it = &m->pat->item[pi];
	lim = m->n - fi < it->max ? m->n - fi : it->max;
	if (it->atom.kind == ATOM_ANY && it->max == INT_MAX) {
		int hi = m->n;

		if (m->any_fail[pi] <= m->n)
			hi = m->any_fail[pi] + it->min - 1;
		if (hi > m->n)
			hi = m->n;
		if (hi > m->deepest)
			m->deepest = hi;
		for (k = hi; k >= fi + it->min; k--)
			if (old_match_from(m, pi + 1, k))
				return true;
		if (fi < m->any_fail[pi])
			m->any_fail[pi] = fi;
		m->failed[slot] = 1;
		return false;
	}
	if (it->atom.kind == ATOM_ANY)
		run = lim;
	else
		for (run = 0;
		     run < lim && atom_match(m->r, &it->atom, rf(m->f, m->n, fi + run), RULE_ALLOW);
		     run++)
			;
	if (fi + run > m->deepest)
		m->deepest = fi + run;
	for (k = run; k >= it->min; k--)
		if (old_match_from(m, pi + 1, fi + k))
			return true;
	m->failed[slot] = 1;
	return false;
}

static bool old_pattern_match(const struct rules *r, const struct pattern *pat,
			      const struct rule_frame *f, int n, int *deepest)
{
	struct old_matcher m = {.r = r, .pat = pat, .f = f, .n = n};
	bool ok;

	m.failed = calloc((size_t)(pat->n + 1) * (size_t)(n + 1), 1);
	m.any_fail = malloc((size_t)(pat->n + 1) * sizeof(int));
	assert_non_null(m.failed);
	assert_non_null(m.any_fail);
	for (int i = 0; i < pat->n; i++)
		m.any_fail[i] = INT_MAX;
	ok = old_match_from(&m, 0, 0);
	*deepest = m.deepest;
	free(m.failed);
	free(m.any_fail);
	return ok;
}

/* ------------------------------------------------------- random patterns */

static uint64_t rng = 0x9E3779B97F4A7C15ULL;

static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static void random_pattern(char *buf, size_t len, int items)
{
	static const char *const atoms[] = {".",   "~",		 "a",	  "b",
					    "c",   "a@other.py", "b:1-2", "c@*",
					    "run", "x*y@*",	 "a:3",	  "b@other.py:1-3"};
	static const char *const quant[] = {"",	     "",      "",    "*",    "+",    "?",
					    "{0,2}", "{1,3}", "{2}", "{0,}", "{2,}", "{1}"};
	size_t pos = 0;

	pos += (size_t)snprintf(buf + pos, len - pos, "allow");
	for (int i = 0; i < items; i++) {
		const char *a = atoms[rnd(sizeof(atoms) / sizeof(atoms[0]))];
		const char *q = quant[rnd(sizeof(quant) / sizeof(quant[0]))];

		/* "c@*" + "*" would read as a file glob "*" then a star. */
		if (strchr(a, '@') && a[strlen(a) - 1] == '*')
			q = "";
		if (rnd(10) == 0) {
			a = "*";
			q = "";
		}
		pos += (size_t)snprintf(buf + pos, len - pos, " %s%s", a, q);
	}
	snprintf(buf + pos, len - pos, "\n");
}

static void random_stack(struct rule_frame *f, int n)
{
	static const char *const names[] = {"a", "b", "c", "run", "Thread.run", "xzy", "a.b"};
	static const char *const files[] = {"own.py", "own.py", "/x/other.py", "", NULL};

	for (int i = 0; i < n; i++) {
		f[i].name = names[rnd(sizeof(names) / sizeof(names[0]))];
		f[i].file = files[rnd(sizeof(files) / sizeof(files[0]))];
		f[i].line = (int)rnd(5);
	}
}

static void test_same_as_backtracking(void **state)
{
	struct rules_state *st = rules_state_new();
	struct rule_frame f[40];
	int compared = 0, matched = 0;

	(void)state;
	assert_non_null(st);
	for (int round = 0; round < 3000; round++) {
		char text[1024];
		struct rules *r = NULL;
		struct diag d = {0};
		int items = 1 + (int)rnd(7);

		random_pattern(text, sizeof(text), items);
		if (rules_parse(text, "random", "own.py", &r, &d)) {
			fail_msg("pattern did not parse: %s: %s", text, d.msg);
			continue;
		}
		for (int s = 0; s < 20; s++) {
			int n = (int)rnd(12);
			int d_old = -7, d_new = -7;
			bool m_old, m_new;

			random_stack(f, n);
			m_old = old_pattern_match(r, &r->rule[0].pat, f, n, &d_old);
			m_new = pattern_match(r, st, &r->rule[0].pat, RULE_ALLOW, f, n, &d_new);
			if (m_old != m_new || (!m_old && d_old != d_new))
				fail_msg(
				    "%s over %d frames: old %d (deepest %d), new %d (deepest %d)",
				    text, n, m_old, d_old, m_new, d_new);
			compared++;
			matched += m_new;
		}
		rules_free(r);
	}
	/* Both outcomes are well represented, or the comparison proves little. */
	assert_true(matched > compared / 20);
	assert_true(matched < compared - compared / 20);
	rules_state_free(st);
}

/*
 * Issue 11 row 14: 127 ".{0,100000}" items and a last item that never
 * matches, against 1024 frames. The backtracking matcher tried every end
 * from every start of every item (0.94 s a match); the work now grows as
 * k·n, which the step counter shows.
 */
static void test_adversarial_work_is_linear(void **state)
{
	enum { K = 127, N = 1024 };
	size_t len = 16 + (K + 1) * 16;
	char *text = malloc(len);
	struct rule_frame *f = calloc(N, sizeof(*f));
	struct rules_state *st = rules_state_new();
	struct rules *r = NULL;
	struct diag d = {0};
	struct rule_verdict v;
	size_t pos = 0;
	uint64_t before, steps;

	(void)state;
	assert_non_null(text);
	assert_non_null(f);
	assert_non_null(st);
	pos += (size_t)snprintf(text + pos, len - pos, "allow");
	for (int i = 0; i < K; i++)
		pos += (size_t)snprintf(text + pos, len - pos, " .{0,100000}");
	snprintf(text + pos, len - pos, " never\n");
	assert_int_equal(rules_parse(text, "adversarial", "own.py", &r, &d), 0);
	for (int i = 0; i < N; i++)
		f[i] = (struct rule_frame){"busy", "own.py", 1, 0, 0};

	before = rules_state_steps(st);
	assert_false(rules_match(r, st, f, N, 1, 0x030c01f0u, &v));
	steps = rules_state_steps(st) - before;
	print_message("adversarial: %llu steps for k=%d, n=%d\n", (unsigned long long)steps, K + 1,
		      N);
	assert_true(steps > 0);
	assert_true(steps <= 2ull * (K + 2) * (N + 2));
	/* It did not match, and it says where it stopped: the whole stack. */
	assert_non_null(strstr(v.why, "wants more than"));

	/* The leaf is "never": now it matches, with the same bound. */
	f[0].name = "never";
	before = rules_state_steps(st);
	assert_true(rules_match(r, st, f, N, 1, 0x030c01f0u, &v));
	assert_true(rules_state_steps(st) - before <= 2ull * (K + 2) * (N + 2));

	rules_free(r);
	rules_state_free(st);
	free(f);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_same_as_backtracking),
	    cmocka_unit_test(test_adversarial_work_is_linear),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
