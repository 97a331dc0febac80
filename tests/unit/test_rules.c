// SPDX-License-Identifier: MIT
/*
 * Rules: every shipped snippets/NAME.rules parses, and hand-built stacks, true
 * and false, get the verdicts the cases promise. Stacks are written root
 * first here (as people read them) and reversed into the leaf-first arrays
 * the sampler produces.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "diag.h"
#include "rules.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PY38  0x030812f0u
#define PY311 0x030b07f0u
#define PY312 0x030c01f0u
#define PY315 0x030f02f0u

#define MAXF 1100

static char snippets_dir[PATH_MAX];

/* The snippets directory: $BPFPY_SNIPPETS, ./snippets (make runs tests from
 * the repository), or ../../snippets from build/unit/test_rules. */
static int find_snippets(void **state)
{
	const char *env = getenv("BPFPY_SNIPPETS");
	char exe[PATH_MAX], *slash;
	ssize_t n;

	(void)state;
	if (env && !access(env, R_OK)) {
		snprintf(snippets_dir, sizeof(snippets_dir), "%s", env);
		return 0;
	}
	if (!access("snippets/flat_alternating.rules", R_OK)) {
		snprintf(snippets_dir, sizeof(snippets_dir), "snippets");
		return 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			snprintf(snippets_dir, sizeof(snippets_dir), "%.*s/../../snippets",
				 (int)(sizeof(snippets_dir) - 20), exe);
			if (!access(snippets_dir, R_OK))
				return 0;
		}
	}
	fprintf(stderr, "test_rules: cannot find snippets/ (set BPFPY_SNIPPETS)\n");
	return -1;
}

struct stack {
	struct rule_frame f[MAXF];
	char names[MAXF][64];
	char files[MAXF][96];
	int n;
};

/*
 * Build a stack from "root ... leaf" items "name[@file][:line]"; a plain
 * name is in the case's own file (own), given under a directory as a
 * sampler would report it; "name@=FILE" has FILE as it is, without one
 * (a short path, as Tachyon's collapsed output gives). "name*K" repeats a
 * frame K times. "task=NAME" is an async sampler's [task NAME] mark,
 * "op=NAME" an instruction mark ("op=?": one whose instruction the sampler
 * did not report).
 */
static void build(struct stack *s, const char *own, const char *spec)
{
	char buf[4096], *save = NULL, *tok;
	struct rule_frame root[MAXF];
	int n = 0, i;

	snprintf(buf, sizeof(buf), "%s", spec);
	for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		char *star = strrchr(tok, '*'), *colon, *at;
		int rep = 1, line = 0, k, task = !strncmp(tok, "task=", 5),
		    op = !strncmp(tok, "op=", 3);

		if (task || op) {
			assert_true(n < MAXF);
			snprintf(s->names[n], sizeof(s->names[n]), "%s", tok + (task ? 5 : 3));
			s->files[n][0] = 0;
			root[n].line = 0;
			root[n].task = task;
			root[n].op = op;
			n++;
			continue;
		}
		if (star && star[1] >= '0' && star[1] <= '9') {
			rep = atoi(star + 1);
			*star = '\0';
		}
		colon = strrchr(tok, ':');
		if (colon) {
			line = atoi(colon + 1);
			*colon = '\0';
		}
		at = strchr(tok, '@');
		if (at)
			*at++ = '\0';
		for (k = 0; k < rep; k++) {
			assert_true(n < MAXF);
			snprintf(s->names[n], sizeof(s->names[n]), "%s", tok);
			if (at && *at == '=')
				snprintf(s->files[n], sizeof(s->files[n]), "%s", at + 1);
			else
				snprintf(s->files[n], sizeof(s->files[n]), "%s%s",
					 at && strchr(at, '/') ? "" : "/opt/cases/", at ? at : own);
			root[n].line = line;
			root[n].task = 0;
			root[n].op = 0;
			n++;
		}
	}
	/* Reverse into leaf-first order, pointing at the stored strings. */
	for (i = 0; i < n; i++) {
		s->f[i].name = s->names[n - 1 - i];
		s->f[i].file = s->files[n - 1 - i];
		s->f[i].line = root[n - 1 - i].line;
		s->f[i].task = root[n - 1 - i].task;
		s->f[i].op = root[n - 1 - i].op;
		/* "op=?": a sampler that reported no instruction */
		if (s->f[i].op && !strcmp(s->f[i].name, "?"))
			s->f[i].name = NULL;
	}
	s->n = n;
}

static struct rules *load_case(const char *name)
{
	char path[PATH_MAX + 64];
	struct rules *r = NULL;
	struct diag d = {0};

	snprintf(path, sizeof(path), "%s/%s.rules", snippets_dir, name);
	if (rules_load(path, &r, &d)) {
		print_error("%s\n", d.msg);
		fail();
	}
	return r;
}

/* Verdict of one stack; why (if not NULL) must occur in the reason. */
static bool judge(struct rules *r, struct rules_state *st, const char *spec, int tid, unsigned ver,
		  struct rule_verdict *v)
{
	static struct stack s;
	char own[128];

	snprintf(own, sizeof(own), "%s", rules_own_file(r));
	build(&s, own, spec);
	return rules_match(r, st, s.f, s.n, tid, ver, v);
}

#define POSSIBLE(r, st, spec, tid, ver)                                                            \
	do {                                                                                       \
		struct rule_verdict v_;                                                            \
		if (!judge(r, st, spec, tid, ver, &v_)) {                                          \
			print_error("expected possible: %s\n  got: %s\n", spec, v_.why);           \
			fail();                                                                    \
		}                                                                                  \
	} while (0)

#define IMPOSSIBLE(r, st, spec, tid, ver, because)                                                 \
	do {                                                                                       \
		struct rule_verdict v_;                                                            \
		if (judge(r, st, spec, tid, ver, &v_)) {                                           \
			print_error("expected impossible: %s\n", spec);                            \
			fail();                                                                    \
		}                                                                                  \
		if (!strstr(v_.why, because)) {                                                    \
			print_error("%s\n  why: '%s', expected it to say '%s'\n", spec, v_.why,    \
				    because);                                                      \
			fail();                                                                    \
		}                                                                                  \
	} while (0)

/* Every NAME.rules of directory sub ("" or "realistic") parses and has its
 * program beside it: how many there are. */
static int shipped_rules(const char *sub)
{
	char dname[PATH_MAX + 64];
	struct dirent *e;
	DIR *dir;
	int n = 0;

	snprintf(dname, sizeof(dname), "%s%s%s", snippets_dir, *sub ? "/" : "", sub);
	dir = opendir(dname);
	assert_non_null(dir);
	while ((e = readdir(dir))) {
		size_t len = strlen(e->d_name);
		char path[2 * PATH_MAX], py[2 * PATH_MAX];
		struct rules *r = NULL;
		struct diag d = {0};

		if (len < 7 || strcmp(e->d_name + len - 6, ".rules"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dname, e->d_name);
		if (rules_load(path, &r, &d)) {
			print_error("%s\n", d.msg);
			fail();
		}
		snprintf(py, sizeof(py), "%s/%.*s.py", dname, (int)(len - 6), e->d_name);
		assert_int_equal(access(py, R_OK), 0);
		assert_string_equal(strrchr(py, '/') + 1, rules_own_file(r));
		rules_free(r);
		n++;
	}
	closedir(dir);
	return n;
}

static void test_all_shipped_rules_parse(void **state)
{
	(void)state;
	/* The twelve cases of the original and our five; the realistic suite's
	 * ten programs, each with its rules. */
	assert_true(shipped_rules("") >= 17);
	assert_true(shipped_rules("realistic") >= 10);
}

static void test_flat_alternating(void **state)
{
	struct rules *r = load_case("flat_alternating");

	(void)state;
	assert_true(rules_has_checks(r, PY312));
	assert_false(rules_has_families(r));
	POSSIBLE(r, NULL, "<module>:24 main:18", 1, PY312);
	POSSIBLE(r, NULL, "<module>:24 main:18 hot_a:12 leaf_a:10", 1, PY312);
	POSSIBLE(r, NULL, "<module>:24 main:19 hot_b:13 leaf_b:11", 1, PY38);
	POSSIBLE(r, NULL, "<module>:24 main:19 hot_b:13", 1, PY315);
	/* Families mixed, by the deny rule. */
	IMPOSSIBLE(r, NULL, "<module> main hot_a:12 hot_b:13 leaf_b:11", 1, PY312,
		   "a and b families mixed");
	/* A leaf under the other family's parent: no allow rule fits, and the
	 * report says where it stopped fitting. */
	IMPOSSIBLE(r, NULL, "<module> main hot_a:12 leaf_b:11", 1, PY312, "leaf_b:11");
	/* A leaf without its hot parent. */
	IMPOSSIBLE(r, NULL, "<module> main leaf_a:10", 1, PY312, "matches no allow rule");
	/* A one-line function on another line. */
	IMPOSSIBLE(r, NULL, "<module> main hot_a:12 leaf_a:11", 1, PY312, "leaf_a:11");
	IMPOSSIBLE(r, NULL, "<module> main hot_a:13", 1, PY312, "no allow");
	/* The right names in a foreign file are not our functions. */
	IMPOSSIBLE(r, NULL, "<module> main hot_a:12 leaf_a@other.py:10", 1, PY312, "other.py");
	/* An empty stack is not a stack of this program either. */
	IMPOSSIBLE(r, NULL, "", 1, PY312, "no allow");
	rules_free(r);
}

static void test_nested_alternating(void **state)
{
	struct rules *r = load_case("nested_alternating");

	(void)state;
	POSSIBLE(r, NULL, "<module> main a_parent a_leaf burn_a", 1, PY311);
	POSSIBLE(r, NULL, "<module> main b_parent", 1, PY311);
	/* Non-contiguous: a_leaf lost. */
	IMPOSSIBLE(r, NULL, "<module> main a_parent burn_a", 1, PY311, "no allow");
	/* Wrong order. */
	IMPOSSIBLE(r, NULL, "<module> main a_leaf a_parent burn_a", 1, PY311, "no allow");
	/* Both families. */
	IMPOSSIBLE(r, NULL, "<module> main a_parent b_leaf burn_b", 1, PY311, "no allow");
	/* The root lost. */
	IMPOSSIBLE(r, NULL, "main a_parent a_leaf burn_a", 1, PY311, "no allow");
	rules_free(r);
}

static void test_deep_recursion(void **state)
{
	struct rules *r = load_case("deep_recursion");

	(void)state;
	/* a(300) -> ... -> a(0) -> leaf: exactly 301 frames of a. */
	POSSIBLE(r, NULL, "<module> main a*301 leaf", 1, PY312);
	POSSIBLE(r, NULL, "<module> main b*301 leaf", 1, PY38);
	/* Descending: any count 1..301. */
	POSSIBLE(r, NULL, "<module> main a*1", 1, PY312);
	POSSIBLE(r, NULL, "<module> main a*150", 1, PY312);
	POSSIBLE(r, NULL, "<module> main a*301", 1, PY312);
	/* One frame lost in the middle. */
	IMPOSSIBLE(r, NULL, "<module> main a*300 leaf", 1, PY312, "no allow");
	/* One too many. */
	IMPOSSIBLE(r, NULL, "<module> main a*302", 1, PY312, "no allow");
	IMPOSSIBLE(r, NULL, "<module> main a*302 leaf", 1, PY312, "no allow");
	/* Both recursions in one stack. */
	IMPOSSIBLE(r, NULL, "<module> main a*100 b*201 leaf", 1, PY312, "a and b in one stack");
	IMPOSSIBLE(r, NULL, "<module> main b*3 a*2", 1, PY312, "a and b in one stack");
	rules_free(r);
}

static void test_shared_leaf_lines(void **state)
{
	struct rules *r = load_case("shared_leaf");

	(void)state;
	/* Short branch (15-16) under a_wrapper, long one (12-13) under b. */
	POSSIBLE(r, NULL, "<module> main a_wrapper:20 shared_leaf:16", 1, PY312);
	POSSIBLE(r, NULL, "<module> main a_wrapper:20 shared_leaf:10", 1, PY312);
	POSSIBLE(r, NULL, "<module> main b_wrapper:21 shared_leaf:13", 1, PY312);
	POSSIBLE(r, NULL, "<module> main b_wrapper:21 shared_leaf:17", 1, PY38);
	IMPOSSIBLE(r, NULL, "<module> main a_wrapper:20 shared_leaf:13", 1, PY312,
		   "long branch under a_wrapper");
	IMPOSSIBLE(r, NULL, "<module> main a_wrapper:20 shared_leaf:12", 1, PY312,
		   "long branch under a_wrapper");
	IMPOSSIBLE(r, NULL, "<module> main b_wrapper:21 shared_leaf:15", 1, PY312,
		   "short branch under b_wrapper");
	/* A parent that is not a wrapper. */
	IMPOSSIBLE(r, NULL, "<module> main shared_leaf:13", 1, PY312, "no allow");
	/* Both wrappers. */
	IMPOSSIBLE(r, NULL, "<module> main a_wrapper:20 b_wrapper:21 shared_leaf:13", 1, PY312,
		   "no allow");
	/* A wrapper on a line other than its own. */
	IMPOSSIBLE(r, NULL, "<module> main a_wrapper:21 shared_leaf:16", 1, PY312, "no allow");
	rules_free(r);
}

static void test_per_thread_families(void **state)
{
	struct rules *r = load_case("per_thread_truth");
	struct rules_state *st = rules_state_new();
	struct rule_verdict v;
	const char *boot = "_bootstrap@threading.py _bootstrap_inner@threading.py run@threading.py";
	char alpha[256], beta[256], boot_only[256];

	(void)state;
	assert_true(rules_has_families(r));
	snprintf(alpha, sizeof(alpha), "%s alpha_loop alpha_two spin", boot);
	snprintf(beta, sizeof(beta), "%s beta_loop beta_one spin", boot);
	snprintf(boot_only, sizeof(boot_only), "%s", boot);

	/* 3.11+ qualnames ("Thread.run") match the bare names of the rules. */
	assert_true(judge(r, st,
			  "Thread._bootstrap@threading.py Thread._bootstrap_inner@threading.py "
			  "Thread.run@threading.py alpha_loop alpha_one",
			  101, PY312, &v));
	assert_string_equal(v.family, "alpha");
	assert_true(judge(r, st, alpha, 101, PY312, &v));
	assert_true(judge(r, st, beta, 102, PY312, &v));
	assert_string_equal(v.family, "beta");
	assert_true(judge(r, st, "<module> main", 100, PY312, &v));
	assert_string_equal(v.family, "main");

	/* Thread 101 showing beta's stack: a stack given the wrong thread. */
	IMPOSSIBLE(r, st, beta, 101, PY312, "family 'alpha' but shows a stack of family 'beta'");
	IMPOSSIBLE(r, st, "<module> main", 102, PY312, "family 'beta'");
	/* The failed stacks did not move the threads. */
	assert_true(judge(r, st, alpha, 101, PY312, &v));

	/* Bootstrap frames only: possible, and binds nothing... */
	assert_true(judge(r, st, boot_only, 103, PY312, &v));
	assert_null(v.family);
	/* ...so 103 binds on its first family stack, then keeps it. */
	assert_true(judge(r, st, beta, 103, PY312, &v));
	assert_string_equal(v.family, "beta");
	IMPOSSIBLE(r, st, alpha, 103, PY312, "family 'beta'");

	/* Stacks no family allows. */
	IMPOSSIBLE(r, st, "_bootstrap@threading.py alpha_loop beta_two spin", 104, PY312,
		   "alpha and beta in one stack");
	IMPOSSIBLE(r, st, "<module> main alpha_one", 105, PY312, "no allow");

	/* A new run: thread ids are reused by the next process. */
	rules_state_reset(st);
	assert_true(judge(r, st, beta, 101, PY312, &v));
	assert_string_equal(v.family, "beta");
	rules_state_free(st);
	rules_free(r);
}

static void test_inlined_comprehension_versions(void **state)
{
	struct rules *r = load_case("inlined_comprehension");

	(void)state;
	/* 3.12+: inlined, square directly on build. */
	POSSIBLE(r, NULL, "<module> main build square", 1, PY312);
	POSSIBLE(r, NULL, "<module> main build square", 1, PY315);
	IMPOSSIBLE(r, NULL, "<module> main build <listcomp> square", 1, PY312,
		   "inlined comprehension shown as a frame");
	/* Up to 3.11: a frame of its own (co_name, or the 3.11 qualname). */
	POSSIBLE(r, NULL, "<module> main build <listcomp> square", 1, PY38);
	POSSIBLE(r, NULL, "<module> main build build.<locals>.<listcomp> square", 1, PY311);
	IMPOSSIBLE(r, NULL, "<module> main build square", 1, PY311,
		   "comprehension frame missing before 3.12");
	IMPOSSIBLE(r, NULL, "<module> main build square", 1, PY38, "comprehension frame missing");
	/* Generator expressions stay frames everywhere. */
	POSSIBLE(r, NULL, "<module> main total total.<locals>.<genexpr>", 1, PY312);
	POSSIBLE(r, NULL, "<module> main total <genexpr>", 1, PY38);
	rules_free(r);
}

static void test_files_and_globs(void **state)
{
	struct rules *r = load_case("code_object_reuse");
	struct rules *c = load_case("c_call_leaves");
	struct rules *o = load_case("oversized_chunk");

	(void)state;
	POSSIBLE(r, NULL, "<module> main:36 func_a@A_file.py:5", 1, PY312);
	POSSIBLE(r, NULL, "<module> main:38 load <module>@B_file.py", 1, PY312);
	IMPOSSIBLE(r, NULL, "<module> main:36 func_a@B_file.py:5", 1, PY312,
		   "a function with the other's file");
	IMPOSSIBLE(r, NULL, "<module> main:39 func_a@A_file.py:5", 1, PY312,
		   "func_a under func_b's call line");

	/* Path globs with a directory: json's files, not any __init__.py. */
	POSSIBLE(c, NULL,
		 "<module> main encode_leaf dumps@/usr/lib/python3.12/json/__init__.py "
		 "encode@/usr/lib/python3.12/json/encoder.py to_json",
		 1, PY312);
	IMPOSSIBLE(c, NULL,
		   "<module> main subst_leaf sub@/usr/lib/python3.12/json/__init__.py repl", 1,
		   PY312, "json under subst_leaf");
	POSSIBLE(c, NULL, "<module> main subst_leaf sub@/usr/lib/python3.12/re/__init__.py", 1,
		 PY312);
	IMPOSSIBLE(c, NULL, "<module> main encode_leaf dumps@/usr/lib/json/__init__.py repl", 1,
		   PY312, "repl under encode_leaf");

	POSSIBLE(o, NULL, "<module> main a_outer@a.py a_inner@a.py a_hot@a.py", 1, PY312);
	IMPOSSIBLE(o, NULL, "<module> main a_outer@a.py b_inner@a.py", 1, PY312,
		   "a.py carrying a b function");
	IMPOSSIBLE(o, NULL, "<module> main a_outer@a.py a_inner@a.py b_hot@b.py", 1, PY312,
		   "both families in one stack");
	rules_free(r);
	rules_free(c);
	rules_free(o);
}

/* The realistic suite (snippets/realistic/): a few real moments and the
 * mix-ups its rules exist for, on the versions where frames differ. */
static void test_realistic_rules(void **state)
{
	struct rules *j = load_case("realistic/json_codec");
	struct rules *t = load_case("realistic/raytrace");
	struct rules *d = load_case("realistic/records");
	struct rules *w = load_case("realistic/worker_pool");
	struct rules *c = load_case("c_call_leaves");
	struct rules_state *st = rules_state_new();
	const char *boot = "_bootstrap@threading.py _bootstrap_inner@threading.py run@threading.py";
	char s[512];

	(void)state;
	assert_non_null(st);
	POSSIBLE(j, NULL,
		 "<module> main round_trip dumps@/usr/lib/python3.15/json/__init__.py "
		 "encode@/usr/lib/python3.15/json/encoder.py "
		 "iterencode@/usr/lib/python3.15/json/encoder.py to_wire:17",
		 1, PY315);
	IMPOSSIBLE(j, NULL,
		   "<module> main round_trip dumps@/usr/lib/python3.15/json/__init__.py "
		   "encode@/usr/lib/python3.15/json/encoder.py "
		   "iterencode@/usr/lib/python3.15/json/encoder.py from_wire:23",
		   1, PY315, "the decoder's hook under the encoder");
	/* Tachyon's base names: an allow rule's json/__init__.py takes
	 * __init__.py; the wrong hook still matches no allow rule. */
	POSSIBLE(j, NULL,
		 "<module> main round_trip dumps@=__init__.py encode@=encoder.py "
		 "iterencode@=encoder.py to_wire@=json_codec.py:17",
		 1, PY315);
	IMPOSSIBLE(j, NULL,
		   "<module> main round_trip dumps@=__init__.py encode@=encoder.py "
		   "iterencode@=encoder.py from_wire@=json_codec.py:23",
		   1, PY315, "matches no allow rule");
	IMPOSSIBLE(j, NULL, "<module> main round_trip dumps@=decoder.py", 1, PY315,
		   "matches no allow rule");
	/* ... and a deny rule's glob of json's files takes no base name. */
	POSSIBLE(c, NULL, "<module> main subst_leaf sub@=__init__.py", 1, PY312);

	/* 3.13+'s class-call shim, alone or under Vector.__init__; never
	 * before 3.13. */
	POSSIBLE(t, NULL, "<module> main render __init__@__init__ __init__:13", 1, PY315);
	POSSIBLE(t, NULL, "<module> main render trace shade normalized scale __init__@__init__", 1,
		 PY315);
	IMPOSSIBLE(t, NULL, "<module> main render __init__@__init__ __init__:13", 1, PY312,
		   "the class-call shim frame before 3.13");
	IMPOSSIBLE(t, NULL, "<module> main render trace shade intersect", 1, PY312,
		   "intersect under shade");
	/* Ray.__init__ (34-36) only under render; Vector's (12-15) anywhere
	 * a Vector is built. */
	IMPOSSIBLE(t, NULL, "<module> main render trace __init__:35 normalized", 1, PY38,
		   "a Ray built outside render");

	/* The dataclass __init__ (file <string>) and PEP 709. */
	POSSIBLE(d, NULL, "<module> main build_items <listcomp> __init__@<string>:3", 1, PY311);
	POSSIBLE(d, NULL, "<module> main build_items __init__@<string>:3", 1, PY312);
	IMPOSSIBLE(d, NULL, "<module> main build_items <listcomp> __init__@<string>:3", 1, PY312,
		   "inlined comprehension shown as a frame");
	IMPOSSIBLE(d, NULL, "<module> main build_items __init__@<string>:3", 1, PY311,
		   "comprehension frame missing");
	IMPOSSIBLE(d, NULL, "<module> main summarise <genexpr> __init__@<string>:3", 1, PY311,
		   "a record built outside build_items and main");

	/* Threads keep their family: a worker seen, then the producer's
	 * frames on the same thread. */
	snprintf(s, sizeof(s), "%s worker checksum", boot);
	POSSIBLE(w, st, s, 7, PY312);
	POSSIBLE(w, st, "<module> main produce get@queue.py wait@threading.py", 1, PY312);
	IMPOSSIBLE(w, st, "<module> main produce", 7, PY312, "family");
	IMPOSSIBLE(w, NULL, "<module> main produce checksum", 1, PY312,
		   "the producer checksumming");
	snprintf(s, sizeof(s), "%s produce", boot);
	IMPOSSIBLE(w, NULL, s, 9, PY312, "the producer in a worker thread");
	rules_state_free(st);
	rules_free(j);
	rules_free(t);
	rules_free(d);
	rules_free(w);
	rules_free(c);
}

static void test_expect_truth_and_no_rules(void **state)
{
	struct rules *g = load_case("ground_truth"), *b = load_case("basic");
	const struct rule_truth *t[8];
	const struct rule_expect *e[8];
	static struct stack s;

	(void)state;
	assert_int_equal(rules_truths(g, PY312, t, 8), 3);
	assert_string_equal(t[0]->key, "phase_a");
	assert_string_equal(t[2]->key, "phase_c");
	build(&s, "ground_truth.py", "<module> main phase_b spin");
	assert_int_equal(rules_truth_classify(g, PY312, s.f, s.n), 1);
	build(&s, "ground_truth.py", "<module> main");
	assert_int_equal(rules_truth_classify(g, PY312, s.f, s.n), -1);
	assert_int_equal(rules_expects(g, PY312, e, 8), 3);
	assert_string_equal(e[2]->what, "phase_c");
	assert_true(e[2]->share > 0.5 && e[2]->tol > 0);
	build(&s, "ground_truth.py", "<module> main phase_c spin");
	assert_true(rules_expect_hit(g, e[2], s.f, s.n));
	assert_false(rules_expect_hit(g, e[0], s.f, s.n));

	/* No rules: every stack possible, distribution only. */
	assert_false(rules_has_checks(b, PY312));
	POSSIBLE(b, NULL, "anything@anywhere.py at_all", 1, PY312);
	assert_int_equal(rules_expects(b, PY312, e, 8), 0);
	rules_free(g);
	rules_free(b);
}

/* Each malformed text must fail at the given line, saying what it wanted. */
static void test_malformed(void **state)
{
	static const struct {
		const char *text;
		int line;
		const char *says;
	} bad[] = {
	    {"allow main\nfrobnicate x\n", 2, "unknown directive 'frobnicate'"},
	    {"allow a{3,1}\n", 1, "expected {m}, {m,} or {m,n}"},
	    {"allow a{x}\n", 1, "bad repetition"},
	    {"allow a}\n", 1, "'}' without '{'"},
	    {"allow a:x\n", 1, "bad line list in 'a:x'"},
	    {"allow a:5-3\n", 1, "N-M (N <= M)"},
	    {"allow a:\n", 1, "expected line numbers after ':'"},
	    {"allow a@\n", 1, "name@file"},
	    {"allow ~:3\n", 1, "take no file or lines"},
	    {"# ok\n\nallow [unterminated a b\n", 3, "unterminated label"},
	    {"deny\n", 1, "expected a pattern"},
	    {"allow [label only]\n", 1, "empty pattern"},
	    {"if python >= 3\nallow a\nendif\n", 1, "bad version '3'"},
	    {"if python ~ 3.12\nendif\n", 1, "unknown operator '~'"},
	    {"if ruby >= 3.12\n", 1, "expected 'if python OP X.Y'"},
	    {"if python >= 3.12\nallow a\n", 2, "end of file inside 'if'"},
	    {"else\n", 1, "'else' without 'if'"},
	    {"if python < 3.12\nelse\nelse\nendif\n", 3, "second 'else'"},
	    {"endif\n", 1, "'endif' without 'if'"},
	    {"end\n", 1, "'end' outside a family"},
	    {"family\n", 1, "expected 'family NAME'"},
	    {"family a\nfamily b\n", 2, "close it with 'end'"},
	    {"expect hot_a 1.5\n", 1, "share '1.5' is not a number in [0, 1]"},
	    {"expect hot_a\n", 1, "expected 'expect FRAME SHARE"},
	    {"expect hot_a 0.5 tolerance 0.1\n", 1, "expected 'tol TOL'"},
	    {"expect * 0.5\n", 1, "not a wildcard"},
	    {"family x\nexpect a 0.5\n", 2, "expectations are per case"},
	    {"truth\n", 1, "expected 'truth KEY [FRAME]'"},
	    {"truth a b c\n", 1, "unexpected 'c'"},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rules *r = (struct rules *)1;
		struct diag d = {0};
		char where[64];

		snprintf(where, sizeof(where), "bad.rules:%d: ", bad[i].line);
		if (rules_parse(bad[i].text, "bad.rules", "bad.py", &r, &d) == 0) {
			print_error("accepted: %s", bad[i].text);
			fail();
		}
		assert_null(r);
		assert_int_equal(d.code, EXIT_USAGE);
		if (strncmp(d.msg, where, strlen(where)) || !strstr(d.msg, bad[i].says)) {
			print_error("for %s  got '%s'\n  want '%s...%s'\n", bad[i].text, d.msg,
				    where, bad[i].says);
			fail();
		}
	}
}

/* The matcher recurses per item: 256 items parse, one more is
 * refused by line, and a hostile 100,000-item line costs an error, not the
 * stack. */
static void test_pattern_item_cap(void **state)
{
	size_t cap = 16 + 200000 * 2;
	char *text = malloc(cap), *p;
	struct rules *r = NULL;
	struct diag d = {0};
	int n;

	(void)state;
	assert_non_null(text);
	for (n = 256; n <= 257; n++) {
		p = text + sprintf(text, "allow");
		for (int i = 0; i < n; i++)
			p += sprintf(p, " .");
		strcpy(p, "\n");
		r = NULL;
		memset(&d, 0, sizeof(d));
		if (n == 256) {
			assert_int_equal(rules_parse(text, "cap.rules", "cap.py", &r, &d), 0);
			assert_non_null(r);
			rules_free(r);
		} else {
			assert_int_not_equal(rules_parse(text, "cap.rules", "cap.py", &r, &d), 0);
			assert_null(r);
			assert_non_null(
			    strstr(d.msg, "cap.rules:1: pattern longer than 256 items"));
		}
	}
	p = text + sprintf(text, "deny");
	for (int i = 0; i < 100000; i++)
		p += sprintf(p, " a");
	strcpy(p, "\n");
	r = NULL;
	memset(&d, 0, sizeof(d));
	assert_int_not_equal(rules_parse(text, "cap.rules", "cap.py", &r, &d), 0);
	assert_int_equal(d.code, EXIT_USAGE);
	free(text);
}

/* task:GLOB takes a [task NAME] mark and nothing else; ".", "*" take
 * marks too, "~" and names never do. */
static void test_task_items(void **state)
{
	const char *text = "allow <module> ~+ main\n"
			   "allow task:Task-1 main task:worker-[0-9] worker task:fetch-[0-9] fetch "
			   "crunch?\n"
			   "allow task:Task-1 main ~*\n"
			   "allow task: . task:+ fetch\n"
			   "deny [crunch of a worker task] * task:worker-[0-9] crunch\n"
			   "deny [loop frames in a task] * task: * run_once@base_events.py *\n";
	struct rules *r = NULL;
	struct diag d = {0};

	(void)state;
	assert_int_equal(rules_parse(text, "t.rules", "t.py", &r, &d), 0);
	POSSIBLE(r, NULL, "<module> run@runners.py main", 1, PY312);
	POSSIBLE(r, NULL, "task=Task-1 main task=worker-3 worker task=fetch-3 fetch crunch", 1,
		 PY312);
	POSSIBLE(r, NULL, "task=Task-1 main task=worker-3 worker task=fetch-3 fetch", 1, PY312);
	POSSIBLE(r, NULL, "task=Task-1 main sleep@tasks.py", 1, PY312);
	/* task: (any task), task:+ (one or more) */
	POSSIBLE(r, NULL, "task=x main task=y task=z fetch", 1, PY312);
	/* "~" does not take a mark: the loop's frames never hide a task */
	IMPOSSIBLE(r, NULL, "task=Task-1 task=worker-3 worker", 1, PY312, "no allow rule");
	/* a mark is no name, and a name no mark */
	IMPOSSIBLE(r, NULL, "task=Task-1 main worker-3 worker task=fetch-3 fetch", 1, PY312,
		   "no allow rule");
	IMPOSSIBLE(r, NULL, "main main", 1, PY312, "no allow rule");
	IMPOSSIBLE(r, NULL, "task=Task-1 main task=worker-2 crunch", 1, PY312,
		   "crunch of a worker task");
	IMPOSSIBLE(r, NULL, "task=Task-1 main task=x run_once@base_events.py task=fetch-1 fetch", 1,
		   PY312, "loop frames in a task");
	rules_free(r);

	/* The shipped async case: a rare task running the hot leaf, and the
	 * reverse, are impossible under task marks as without them. */
	r = load_case("async_running_task");
	POSSIBLE(r, NULL, "task=Task-1 main task=hot hot hot_leaf", 1, PY315);
	POSSIBLE(r, NULL, "task=Task-1 main task=rare-4 rare rare_leaf", 1, PY315);
	POSSIBLE(r, NULL, "task=Task-1 main task=rare-4 rare sleep@tasks.py __sleep0@tasks.py", 1,
		 PY315);
	POSSIBLE(r, NULL, "<module> run@runners.py Handle._run@events.py hot hot_leaf", 1, PY312);
	IMPOSSIBLE(r, NULL, "task=Task-1 main task=hot rare rare_leaf", 1, PY315,
		   "rare leaf under the hot task");
	IMPOSSIBLE(r, NULL,
		   "task=Task-1 main task=rare-6 <module> run@runners.py Handle._run@events.py hot "
		   "hot_leaf",
		   1, PY315, "hot leaf under a rare task");
	IMPOSSIBLE(r, NULL, "task=Task-1 main task=rare-0 <module> run@runners.py", 1, PY315,
		   "no allow rule");
	rules_free(r);

	/* asyncio: every task is unnamed (Task-N), so the shape is judged: a
	 * child's frames right under a gathered parent's mark is a mix-up. */
	r = load_case("asyncio");
	POSSIBLE(r, NULL, "<module> run@runners.py Handle._run@events.py parent parent_work", 1,
		 PY312);
	POSSIBLE(r, NULL, "task=Task-1 main task=Task-4 parent parent_work", 1, PY315);
	POSSIBLE(r, NULL, "task=Task-1 main task=Task-4 parent task=Task-1234 child child_work", 1,
		 PY315);
	POSSIBLE(r, NULL, "task=Task-1 main task=Task-4 parent task=Task-1234 child sleep@tasks.py",
		 1, PY312);
	IMPOSSIBLE(r, NULL, "task=Task-1 main task=Task-4 child child_work", 1, PY315,
		   "child frames directly under a parent task's mark");
	/* ... but the child coroutine's own making, in its parent, is not */
	POSSIBLE(r, NULL, "task=Task-1 main task=Task-4 parent:35 child:27", 1, PY315);
	POSSIBLE(r, NULL, "<module> run@runners.py Handle._run@events.py parent:35 child:27", 1,
		 PY312);
	IMPOSSIBLE(r, NULL, "task=Task-1 main task=Task-4 parent:35 child:28", 1, PY315,
		   "no allow rule");
	IMPOSSIBLE(r, NULL, "task=Task-1 main task=Task-4 parent task=Task-1234 parent_work", 1,
		   PY315, "no allow rule");
	IMPOSSIBLE(r, NULL, "task=Task-1 main task=Task-4 parent task=Task-12 child parent_work", 1,
		   PY315, "a child running the parent's work");
	IMPOSSIBLE(r, NULL, "<module> run@runners.py Handle._run@events.py child parent_work", 1,
		   PY312, "a child running the parent's work");
	rules_free(r);

	/* A task item takes no file and no lines; a bad repetition is named. */
	assert_int_not_equal(rules_parse("allow task:a{2,\n", "t.rules", "t.py", &r, &d), 0);
	assert_non_null(strstr(d.msg, "bad repetition"));
}

/* op:GLOB takes an [op NAME] mark and nothing else; ".", "*" take it
 * too, "~" and names never do; "opcodes" says the case wants them. And the
 * shipped opcode_phases on each side of 3.11. */
static void test_op_items(void **state)
{
	const char *text = "opcodes\n"
			   "allow <module> main op:\n"
			   "allow <module> main add:7 op:LOAD_*[A-Z]\n"
			   "allow <module> main add:7 op:BINARY_OP_ADD_INT\n"
			   "allow <module> main sleep@time.py .\n"
			   "deny [the add shown generic] * add:7 op:BINARY_OP\n";
	struct rules *r = NULL;
	struct diag d = {0};

	(void)state;
	assert_int_equal(rules_parse(text, "t.rules", "t.py", &r, &d), 0);
	assert_true(rules_opcodes(r));
	POSSIBLE(r, NULL, "<module> main op=CALL", 1, PY312);
	POSSIBLE(r, NULL, "<module> main op=<unread>", 1, PY312);
	POSSIBLE(r, NULL, "<module> main add:7 op=LOAD_FAST__LOAD_CONST", 1, PY312);
	POSSIBLE(r, NULL, "<module> main add:7 op=BINARY_OP_ADD_INT", 1, PY312);
	POSSIBLE(r, NULL, "<module> main sleep@time.py op=CALL", 1, PY312);
	IMPOSSIBLE(r, NULL, "<module> main add:7 op=BINARY_OP", 1, PY312, "the add shown generic");
	IMPOSSIBLE(r, NULL, "<module> main add:7 op=STORE_FAST", 1, PY312, "no allow rule");
	/* a mark is no name, and a name no mark; no mark where one is due */
	IMPOSSIBLE(r, NULL, "<module> main add:7 LOAD_FAST", 1, PY312, "no allow rule");
	IMPOSSIBLE(r, NULL, "<module> main add:7", 1, PY312, "no allow rule");
	IMPOSSIBLE(r, NULL, "<module> main op=CALL op=CALL", 1, PY312, "no allow rule");
	/* an instruction not reported: allow items take it, deny items not */
	POSSIBLE(r, NULL, "<module> main add:7 op=?", 1, PY312);
	IMPOSSIBLE(r, NULL, "<module> main add:8 op=?", 1, PY312, "no allow rule");
	rules_free(r);
	assert_int_equal(rules_parse("allow . op:\n", "t.rules", "t.py", &r, &d), 0);
	assert_false(rules_opcodes(r));
	rules_free(r);
	assert_int_not_equal(rules_parse("opcodes yes\n", "t.rules", "t.py", &r, &d), 0);
	assert_non_null(strstr(d.msg, "opcodes: unexpected 'yes'"));
	assert_int_not_equal(
	    rules_parse("if python >= 3.11\nopcodes\nendif\n", "t.rules", "t.py", &r, &d), 0);
	assert_non_null(strstr(d.msg, "per case"));

	r = load_case("opcode_phases");
	assert_true(rules_opcodes(r));
	POSSIBLE(r, NULL, "<module> main:43 int_add:26 op=BINARY_OP_ADD_INT", 1, PY312);
	POSSIBLE(r, NULL, "<module> main:45 mixed_add:35 op=BINARY_OP", 1, PY315);
	POSSIBLE(r, NULL, "<module> main:45 mixed_add:35 op=BINARY_OP_ADAPTIVE", 1, PY311);
	POSSIBLE(r, NULL, "<module> main:43 int_add:26 op=BINARY_ADD", 1, PY38);
	POSSIBLE(r, NULL, "<module> main:43 int_add:25 op=FOR_ITER_RANGE", 1, PY312);
	IMPOSSIBLE(r, NULL, "<module> main:43 int_add:26 op=BINARY_OP", 1, PY312,
		   "the int add shown generic");
	IMPOSSIBLE(r, NULL, "<module> main:45 mixed_add:35 op=BINARY_OP_ADD_INT", 1, PY315,
		   "the mixed add shown specialized");
	IMPOSSIBLE(r, NULL, "<module> main:45 mixed_add:35 op=BINARY_OP_EXTEND", 1, PY315,
		   "the mixed add shown specialized");
	IMPOSSIBLE(r, NULL, "<module> main:45 mixed_add:35 op=BINARY_OP_ADAPTIVE", 1, PY312,
		   "no allow rule");
	IMPOSSIBLE(r, NULL, "<module> main:43 int_add:26 op=BINARY_OP_ADD_INT", 1, PY38,
		   "no allow rule");
	IMPOSSIBLE(r, NULL, "<module> main:43 int_add:26 op=FOR_ITER", 1, PY38, "no allow rule");
	rules_free(r);
}

static void test_load_errors(void **state)
{
	struct rules *r = NULL;
	struct diag d = {0};
	char path[] = "/tmp/bpfpy-rules-XXXXXX";
	char named[sizeof(path) + 16];
	const char *text = "allow <module> main\nallow <module> main hot{2,\n";
	int fd;

	(void)state;
	assert_int_equal(rules_load("/nonexistent/case.rules", &r, &d), -1);
	assert_int_equal(d.code, EXIT_USAGE);
	assert_non_null(strstr(d.msg, "/nonexistent/case.rules"));

	assert_int_equal(rules_load("/etc/hostname", &r, &d), -1);
	assert_non_null(strstr(d.msg, "<case>.rules"));

	/* A real file with an error on line 2: the message names file:2. */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	snprintf(named, sizeof(named), "%s.rules", path);
	assert_int_equal(rename(path, named), 0);
	{
		FILE *f = fopen(named, "w");

		assert_non_null(f);
		fputs(text, f);
		fclose(f);
	}
	assert_int_equal(rules_load(named, &r, &d), -1);
	{
		char want[sizeof(named) + 8];

		snprintf(want, sizeof(want), "%s:2: ", named);
		assert_int_equal(strncmp(d.msg, want, strlen(want)), 0);
	}
	unlink(named);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_all_shipped_rules_parse),
	    cmocka_unit_test(test_pattern_item_cap),
	    cmocka_unit_test(test_flat_alternating),
	    cmocka_unit_test(test_nested_alternating),
	    cmocka_unit_test(test_deep_recursion),
	    cmocka_unit_test(test_shared_leaf_lines),
	    cmocka_unit_test(test_per_thread_families),
	    cmocka_unit_test(test_inlined_comprehension_versions),
	    cmocka_unit_test(test_files_and_globs),
	    cmocka_unit_test(test_realistic_rules),
	    cmocka_unit_test(test_expect_truth_and_no_rules),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_load_errors),
	    cmocka_unit_test(test_task_items),
	    cmocka_unit_test(test_op_items),
	};

	return cmocka_run_group_tests(tests, find_snippets, NULL);
}
