// SPDX-License-Identifier: MIT
/*
 * The external samplers' side of the oracle: the protocol's frames
 * ("qualname:lineno@file", and the old "qualname:lineno") as
 * oracle_ext_parse reads them, hostile lines included, and how the rules
 * judge a frame whose file is unknown: any allow rule's file condition
 * accepts it, a deny rule takes it for the snippet's own file, and a frame
 * that does show a wrong file is still impossible.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "diag.h"
#include "oracle_sched.h"
#include "rules.h"

#define MAXF 8

static enum ext_kind parse(const char *text, char *buf, size_t size, struct ext_line *el,
			   struct rule_frame *fr)
{
	snprintf(buf, size, "%s", text);
	return oracle_ext_parse(buf, el, fr, MAXF);
}

static void new_and_old_forms(void **state)
{
	struct rule_frame fr[MAXF];
	struct ext_line el;
	char buf[512];

	(void)state;
	/* New form, root first on the wire, leaf first out. */
	assert_int_equal(parse("tid=5 <module>:44@/tmp/x/oversized_chunk.py;a_outer:3@a.py\n", buf,
			       sizeof(buf), &el, fr),
			 EXT_STACK);
	assert_int_equal(el.tid, 5);
	assert_int_equal(el.nframes, 2);
	assert_string_equal(fr[0].name, "a_outer");
	assert_int_equal(fr[0].line, 3);
	assert_string_equal(fr[0].file, "a.py");
	assert_string_equal(fr[1].name, "<module>");
	assert_int_equal(fr[1].line, 44);
	assert_string_equal(fr[1].file, "/tmp/x/oversized_chunk.py");
	/* Old form: no file. */
	assert_int_equal(parse("main:38;a_outer:3", buf, sizeof(buf), &el, fr), EXT_STACK);
	assert_string_equal(fr[0].name, "a_outer");
	assert_int_equal(fr[0].line, 3);
	assert_null(fr[0].file);
	/* Both in one stack. */
	assert_int_equal(parse("main:38@m.py;a_outer:3", buf, sizeof(buf), &el, fr), EXT_STACK);
	assert_null(fr[0].file);
	assert_string_equal(fr[1].file, "m.py");
	/* An empty file is no file. */
	assert_int_equal(parse("f:3@", buf, sizeof(buf), &el, fr), EXT_STACK);
	assert_string_equal(fr[0].name, "f");
	assert_null(fr[0].file);
}

/* One frame in, what comes out: file NULL means none. */
static const struct {
	const char *in, *name;
	int line;
	const char *file;
} one_frame[] = {
    /* '@' in a file: the split is at the first ":lineno@". */
    {"f:7@/home/a@b/x.py", "f", 7, "/home/a@b/x.py"},
    /* '@' in a qualname, raw: not before ":lineno", so part of the name. */
    {"we@ird:9@x.py", "we@ird", 9, "x.py"},
    /* "a@b" without a line is a name (old form), never a file. */
    {"a@b", "a@b", 0, NULL},
    /* Escaped: ';' '@' '%' and a newline in name and file. */
    {"a%3Bb%40c%25:12@/x%40y/%0Az.py", "a;b@c%", 12, "/x@y/\nz.py"},
    /* A '%' not before two hex digits is itself; %00 is not decoded (it
     * would cut the name). */
    {"50%:1@100%zz%00", "50%", 1, "100%zz%00"},
    /* Missing lines: '?', the old adapter's "name:?", none at all. */
    {"f:?@x.py", "f", 0, "x.py"},
    {"f:?", "f", 0, NULL},
    {"f", "f", 0, NULL},
    /* A line too big for an int is no line, and stays in the name. */
    {"f:99999999999@x.py", "f:99999999999@x.py", 0, NULL},
};

/* Task marks over the wire: "[task NAME]" raw, NAME %XX-escaped, the
 * awaiter counts of record --async and Tachyon dropped; "%5Btask x]" is a
 * function of that name, not a mark. */
static void task_marks(void **state)
{
	struct rule_frame fr[MAXF];
	struct ext_line el;
	char buf[512];

	(void)state;
	assert_int_equal(
	    parse("tid=7 [task Task-1];main:43@m.py;[task w%3B1 (3 parents)];worker:9@m.py;"
		  "[task fetch (2 awaiters)];fetch:20@m.py",
		  buf, sizeof(buf), &el, fr),
	    EXT_STACK);
	assert_int_equal(el.nframes, 6);
	assert_string_equal(fr[0].name, "fetch");
	assert_false(fr[0].task);
	assert_true(fr[1].task);
	assert_string_equal(fr[1].name, "fetch");
	assert_null(fr[1].file);
	assert_string_equal(fr[3].name, "w;1");
	assert_true(fr[3].task);
	assert_true(fr[5].task);
	assert_string_equal(fr[5].name, "Task-1");
	/* not marks: an escaped '[', a count that is not one, no name */
	assert_int_equal(
	    parse("%5Btask x]:3@m.py;[task a (2 cats)];[task ]", buf, sizeof(buf), &el, fr),
	    EXT_STACK);
	assert_int_equal(el.nframes, 3);
	assert_false(fr[2].task);
	assert_string_equal(fr[2].name, "[task x]");
	assert_true(fr[1].task);
	assert_string_equal(fr[1].name, "a (2 cats)");
	assert_false(fr[0].task);
}

/* Instruction marks over the wire: "[op NAME]" or "[op NAME (BASE)]"
 * raw, the base dropped (the rules see NAME); "%5Bop X]" is a function. */
static void op_marks(void **state)
{
	struct rule_frame fr[MAXF];
	struct ext_line el;
	char buf[512];

	(void)state;
	assert_int_equal(parse("<module>:9@m.py;add:26@m.py;[op BINARY_OP_ADD_INT (BINARY_OP)]",
			       buf, sizeof(buf), &el, fr),
			 EXT_STACK);
	assert_int_equal(el.nframes, 3);
	assert_true(fr[0].op);
	assert_false(fr[0].task);
	assert_string_equal(fr[0].name, "BINARY_OP_ADD_INT");
	assert_null(fr[0].file);
	assert_false(fr[1].op);
	assert_int_equal(fr[1].line, 26);
	assert_int_equal(parse("%5Bop X]:3@m.py;[op <not started>]", buf, sizeof(buf), &el, fr),
			 EXT_STACK);
	assert_true(fr[0].op);
	assert_string_equal(fr[0].name, "<not started>");
	assert_false(fr[1].op);
	assert_string_equal(fr[1].name, "[op X]");
}

static void one_frame_forms(void **state)
{
	struct rule_frame fr[MAXF];
	struct ext_line el;
	char buf[512];

	(void)state;
	for (size_t i = 0; i < sizeof(one_frame) / sizeof(one_frame[0]); i++) {
		assert_int_equal(parse(one_frame[i].in, buf, sizeof(buf), &el, fr), EXT_STACK);
		assert_int_equal(el.nframes, 1);
		assert_string_equal(fr[0].name, one_frame[i].name);
		assert_int_equal(fr[0].line, one_frame[i].line);
		if (one_frame[i].file)
			assert_string_equal(fr[0].file, one_frame[i].file);
		else
			assert_null(fr[0].file);
	}
}

static void hostile_numbers(void **state)
{
	struct rule_frame fr[MAXF];
	struct ext_line el;
	char buf[512];

	(void)state;
	assert_int_equal(parse("tid=99999999999999 f:1", buf, sizeof(buf), &el, fr), EXT_STACK);
	assert_int_equal(el.tid, 0);
	assert_int_equal(parse(". inf", buf, sizeof(buf), &el, fr), EXT_END);
	assert_true(el.us != el.us); /* NAN: not a cost */
}

/* A long hostile line: 100 000 frames of '@' and ':' soup. The parser keeps
 * the leaf end, MAXF frames, every name and file inside the line. */
static void hostile_long_line(void **state)
{
	size_t n = 100000, size = n * 12 + 1;
	char *line = malloc(size), *p = line;
	struct rule_frame fr[MAXF];
	struct ext_line el;

	(void)state;
	assert_non_null(line);
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s", i % 3 ? "@:1@:@;" : "x:2@@:;;");
	assert_true((size_t)(p - line) < size);
	assert_int_equal(oracle_ext_parse(line, &el, fr, MAXF), EXT_STACK);
	assert_int_equal(el.nframes, MAXF);
	for (int i = 0; i < MAXF; i++) {
		assert_true(fr[i].name >= line && fr[i].name < p);
		assert_true(!fr[i].file || (fr[i].file >= line && fr[i].file < p));
	}
	free(line);
}

static struct rules *load(const char *text)
{
	struct rules *r = NULL;
	struct diag d = {0};

	assert_int_equal(rules_parse(text, "oversized_chunk.rules", "oversized_chunk.py", &r, &d),
			 0);
	return r;
}

/* frames root first, as written in a rule; stored leaf first. */
static bool judge(const struct rules *r, const char *const *names, const char *const *files, int n)
{
	struct rule_frame f[MAXF];

	for (int i = 0; i < n; i++) {
		f[n - 1 - i].name = names[i];
		f[n - 1 - i].file = files ? files[i] : NULL;
		f[n - 1 - i].line = 0;
	}
	return rules_match(r, NULL, f, n, 1, 0x030f0000, NULL);
}

static void unknown_file_matches_any_file_condition(void **state)
{
	struct rules *r = load("allow <module> main a_outer@a.py a_hot@a.py\n"
			       "allow <module> main b_outer@b.py\n"
			       "allow <module> ~\n"
			       "deny * b_*@a.py *\n"
			       "deny * a_*@b.py *\n"
			       "deny * a_*@* * b_*@* *\n"
			       "allow <module> main x\n"
			       "deny [foreign under main] <module> main ~\n");
	const char *const a[] = {"<module>", "main", "a_outer", "a_hot"};
	const char *const b[] = {"<module>", "main", "b_outer"};
	const char *const mixed[] = {"<module>", "main", "a_outer", "b_outer"};
	const char *const foreign[] = {"<module>", "dumps"};
	const char *const own_a[] = {"oversized_chunk.py", "oversized_chunk.py", "/t/a.py",
				     "/t/a.py"};
	const char *const wrong_a[] = {"oversized_chunk.py", "oversized_chunk.py", "b.py", "a.py"};
	const char *const one_unknown[] = {"oversized_chunk.py", NULL, "", "a.py"};
	const char *const own_b[] = {"/x/oversized_chunk.py", "oversized_chunk.py", "a.py"};
	const char *const x[] = {"<module>", "main", "x"};
	const char *const x_json[] = {NULL, NULL, "/usr/lib/python3/json.py"};

	(void)state;
	/* No file at all (the old protocol): every allow accepts, no deny on
	 * a file fires. */
	assert_true(judge(r, a, NULL, 4));
	assert_true(judge(r, b, NULL, 3));
	assert_true(judge(r, foreign, NULL, 2));
	assert_true(judge(r, a, one_unknown, 4));
	/* ... and a deny's "~" needs a foreign file shown. */
	assert_true(judge(r, x, NULL, 3));
	assert_false(judge(r, x, x_json, 3));
	/* Names still count: both families, files unknown, is impossible
	 * ("a_*@*" holds whatever the file). */
	assert_false(judge(r, mixed, NULL, 4));
	/* Files shown: right ones possible, a wrong one impossible. */
	assert_true(judge(r, a, own_a, 4));
	assert_false(judge(r, a, wrong_a, 4));
	assert_false(judge(r, b, own_b, 3));
	rules_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(new_and_old_forms),
	    cmocka_unit_test(one_frame_forms),
	    cmocka_unit_test(task_marks),
	    cmocka_unit_test(op_marks),
	    cmocka_unit_test(hostile_numbers),
	    cmocka_unit_test(hostile_long_line),
	    cmocka_unit_test(unknown_file_matches_any_file_condition),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
