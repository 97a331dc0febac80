// SPDX-License-Identifier: MIT
/*
 * The heatmap (out_heatmap.c) and the sources it shows (sources.c):
 *  - cleaning a source: LF, CRLF and CR lines as Python splits them, NUL
 *    and bad bytes made U+FFFD, a huge line cut on a character with an
 *    ellipsis, the line bound, and cleaning the cleaned lines again changes
 *    nothing (what lets raw carry them);
 *  - self counted on the innermost Python line, total once a sample however
 *    deep a recursion, marks and native frames skipped, shares of the
 *    stacks' sum; opcodes from instruction marks, the specialized share, the
 *    most sampled instruction's columns marked in the source; the page's
 *    hottest file and line;
 *  - hostile names and source lines (markup, quotes, controls, bad bytes)
 *    come out escaped: no tag but the page's own, no control byte, valid
 *    UTF-8;
 *  - raw carries the sources (and a why): read back as convert reads it,
 *    the heatmap and the raw are byte for byte the same; a raw whose #src
 *    promises more lines than it has is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "raw_read.h"
#include "text_escape.h"

/* The page or raw of p, malloc'd (*len bytes). */
static char *write_out(const struct profile *p, int raw, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	struct diag d = {0};

	assert_non_null(f);
	assert_int_equal(raw ? raw_write_profile(f, p, &d) : heatmap_write(f, p, NULL, &d), 0);
	fclose(f);
	return buf;
}

static void test_source_clean(void **state)
{
	struct profile *p = profile_new(1000000, "cpu"), *q = profile_new(1000000, "cpu");
	const struct prof_source *s;
	char big[5000], *again;
	size_t n = 0;

	(void)state;
	assert_non_null(p);
	assert_non_null(q);
	assert_int_equal(profile_set_source(p, "/a.py", "a\r\nb\rc\nd", 8, 0), 0);
	s = profile_source(p, profile_intern(p, "/a.py"));
	assert_non_null(s);
	assert_int_equal(s->nlines, 4);
	assert_string_equal(profile_source_line(s, 2), "b");
	assert_string_equal(profile_source_line(s, 4), "d");
	assert_null(profile_source_line(s, 5));
	assert_null(profile_source_line(s, 0));
	/* NUL and bad bytes: U+FFFD each; a file given again keeps its first */
	assert_int_equal(profile_set_source(p, "/b.py", "x\0y\xff\xc3(\n", 7, 0), 0);
	assert_int_equal(profile_set_source(p, "/b.py", "other\n", 6, 0), 0);
	s = profile_source(p, profile_intern(p, "/b.py"));
	assert_int_equal(s->nlines, 1);
	assert_string_equal(profile_source_line(s, 1), "x\xef\xbf\xbdy\xef\xbf\xbd\xef\xbf\xbd(");
	/* a huge line of 2-byte characters: cut on one, with U+2026 */
	for (size_t i = 0; i + 1 < sizeof(big); i += 2)
		big[i] = '\xc3', big[i + 1] = '\xa9';
	assert_int_equal(profile_set_source(p, "/c.py", big, sizeof(big), 0), 0);
	s = profile_source(p, profile_intern(p, "/c.py"));
	n = strlen(profile_source_line(s, 1));
	assert_true(n <= PROFILE_SOURCE_LINE_MAX);
	assert_memory_equal(profile_source_line(s, 1) + n - 3, "\xe2\x80\xa6", 3);
	assert_int_equal(utf8_seq_len(profile_source_line(s, 1) + n - 5), 2);
	/* cleaned again (as raw's reader joins its lines): the same lines */
	again = malloc(PROFILE_SOURCE_LINE_MAX + 2);
	assert_non_null(again);
	snprintf(again, PROFILE_SOURCE_LINE_MAX + 2, "%s\n", profile_source_line(s, 1));
	assert_int_equal(profile_set_source(q, "/c.py", again, strlen(again), 0), 0);
	assert_string_equal(profile_source_line(profile_source(q, profile_intern(q, "/c.py")), 1),
			    profile_source_line(s, 1));
	free(again);
	/* an empty file has no line, a lone LF one empty line */
	assert_int_equal(profile_set_source(p, "/e.py", "", 0, 0), 0);
	assert_int_equal(profile_source(p, profile_intern(p, "/e.py"))->nlines, 0);
	assert_int_equal(profile_set_source(p, "/f.py", "\n", 1, 0), 0);
	assert_int_equal(profile_source(p, profile_intern(p, "/f.py"))->nlines, 1);
	/* the line bound */
	{
		size_t many = PROFILE_SOURCE_MAX_LINES + 10;
		char *lf = malloc(many);

		assert_non_null(lf);
		memset(lf, '\n', many);
		assert_int_equal(profile_set_source(p, "/g.py", lf, many, 0), 0);
		s = profile_source(p, profile_intern(p, "/g.py"));
		assert_int_equal(s->nlines, PROFILE_SOURCE_MAX_LINES);
		assert_int_equal(s->cut, 1);
		free(lf);
	}
	assert_int_equal(profile_set_source_missing(p, "/h.py", "gone\x1b[2J\nsecond"), 0);
	assert_string_equal(profile_source(p, profile_intern(p, "/h.py"))->why, "gone\x1b[2J");
	profile_free(p);
	profile_free(q);
}

/* An instruction mark on frame fr (the opcodes branch's representation). */
static struct sym_frame op_mark(const char *name, const char *file, int line, int index, int col,
				int endcol)
{
	return (struct sym_frame){.name = name,
				  .file = file,
				  .line = line,
				  .kind = FRAME_KIND_MARK,
				  .addr = profile_op_addr(0x7a, index, col, endcol)};
}

static void add(struct profile *p, const struct sym_frame *fr, uint32_t n, int times)
{
	struct sym_sample s = {.pid = 1, .tid = 1, .nframes = n, .frames = fr};

	for (int i = 0; i < times; i++) {
		s.ts_ns += 1000;
		assert_int_equal(profile_add(p, &s), 0);
	}
}

/* The <tr> of file fN's line, cut at its end, or NULL. */
static char *row(const char *page, const char *id)
{
	char key[64];
	const char *r, *e;

	snprintf(key, sizeof(key), "<tr id=\"%s\"", id);
	r = strstr(page, key);
	if (!r)
		return NULL;
	e = strstr(r, "</tr>");
	assert_non_null(e);
	return strndup(r, (size_t)(e - r));
}

#define M_PY                                                                                       \
	"import json\ndef loop():\n    x = 0\n    x = x + 3\ndef rec(n):\n    rec(n - 1)\n"        \
	"    pass\n\nloop()\nrec(2)\njson.dumps(1)\n"

static struct profile *shares_profile(void)
{
	struct profile *p = profile_new(1000000, "cpu");
	struct sym_frame add3[] = {
	    op_mark("[op BINARY_OP_ADD_INT (BINARY_OP)]", "/app/m.py", 4, 12, 8, 13),
	    {.name = "loop", .file = "/app/m.py", .line = 4, .firstlineno = 2},
	    {.name = "<module>", .file = "/app/m.py", .line = 9}};
	struct sym_frame generic[] = {op_mark("[op BINARY_OP]", "/app/m.py", 4, 14, 4, 13), add3[1],
				      add3[2]};
	/* recursion: rec on line 6 twice, leaf on 7; native and a mark above */
	struct sym_frame deep[] = {
	    {.name = "[gc]", .file = "", .kind = FRAME_KIND_MARK},
	    {.name = "memcpy", .file = "libc.so.6", .kind = FRAME_KIND_NATIVE},
	    {.name = "rec", .file = "/app/m.py", .line = 7, .firstlineno = 5},
	    {.name = "rec", .file = "/app/m.py", .line = 6, .firstlineno = 5},
	    {.name = "rec", .file = "/app/m.py", .line = 6, .firstlineno = 5},
	    {.name = "<module>", .file = "/app/m.py", .line = 10}};
	struct sym_frame lib[] = {{.name = "dumps", .file = "/usr/lib/json.py", .line = 3},
				  {.name = "<module>", .file = "/app/m.py", .line = 11}};

	assert_non_null(p);
	add(p, add3, 3, 6);
	add(p, generic, 3, 2);
	add(p, deep, 6, 3);
	add(p, lib, 2, 1);
	assert_int_equal(profile_set_source(p, "/app/m.py", M_PY, strlen(M_PY), 0), 0);
	return p;
}

static void test_shares(void **state)
{
	struct profile *p = shares_profile();
	size_t len;
	char *page = write_out(p, 0, &len), *r;

	(void)state;
	/* m.py first (11 of 12 samples self), json second; opens on m.py:4 */
	assert_non_null(strstr(page, "<body data-hot-file=\"f0\" data-hot-line=\"4\">"));
	assert_non_null(strstr(page, "12 samples (clock cpu"));
	r = row(page, "f0-4");
	assert_non_null(r);
	assert_non_null(
	    strstr(r, "data-self=\"8\" data-total=\"8\" data-ops=\"8\" data-spec=\"6\""));
	assert_non_null(strstr(r, "<td class=\"self\">66.67%</td>"));
	assert_non_null(strstr(r, "<td class=\"spec\">75.00%</td>"));
	/* the most sampled instruction is index 12, columns 8-13: "x + 3" */
	assert_non_null(strstr(r, "<td class=\"col\">8-13</td>"));
	assert_non_null(strstr(r, "BINARY_OP_ADD_INT (BINARY_OP) 75.00%, BINARY_OP 25.00%"));
	assert_non_null(strstr(r, "<code>    x = <mark>x + 3</mark></code>"));
	free(r);
	/* recursion: line 6 twice a sample, counted once; self on 7 under gc */
	r = row(page, "f0-6");
	assert_non_null(strstr(r, "data-self=\"0\" data-total=\"3\""));
	free(r);
	r = row(page, "f0-7");
	assert_non_null(strstr(r, "data-self=\"3\" data-total=\"3\""));
	free(r);
	/* <module> lines: total only; a line without samples: no numbers */
	r = row(page, "f0-9");
	assert_non_null(strstr(r, "data-self=\"0\" data-total=\"8\""));
	free(r);
	r = row(page, "f0-8");
	assert_non_null(strstr(r, "data-self=\"0\" data-total=\"0\">"));
	free(r);
	/* the library's file: no source kept, its sampled line still shown */
	r = row(page, "f1-3");
	assert_non_null(r);
	assert_non_null(strstr(r, "data-self=\"1\" data-total=\"1\""));
	free(r);
	assert_non_null(strstr(page, "Source: not in this profile"));
	assert_non_null(strstr(page, "<tr data-file=\"f0\" data-self=\"11\" data-total=\"12\">"));
	assert_null(strstr(page, "class=\"no-ops\""));
	free(page);
	profile_free(p);
}

/* No control byte but LF, and well-formed UTF-8 throughout. */
static void assert_clean_text(const char *s, size_t len)
{
	for (size_t i = 0; i < len;) {
		int n = utf8_seq_len(s + i);

		assert_true(n > 0);
		assert_false(((unsigned char)s[i] < 0x20 && s[i] != '\n') || s[i] == 0x7f);
		i += (size_t)n;
	}
}

static void test_hostile(void **state)
{
	static const char file[] = "/tmp/<script>alert(1)</script>\"'&\x1b]0;x\x07.py";
	static const char src[] = "x = \"</code></td><script>alert(2)</script>\"\n"
				  "y = '\x1b[2J\x07\xff\xfe' # <img src=x onerror=alert(3)>\n";
	struct profile *p = profile_new(1000000, "cpu");
	struct sym_frame fr[] = {
	    op_mark("[op <b>BAD</b> (\"q\")]", file, 2, 3, 0, 40),
	    {.name = "<img src=x>", .file = file, .line = 2, .firstlineno = 1}};
	size_t len;
	char *page;

	(void)state;
	add(p, fr, 2, 3);
	assert_int_equal(profile_set_source(p, file, src, sizeof(src) - 1, 0), 0);
	assert_int_equal(profile_set_source_missing(p, "/x<script>.py", "why <script>\x1b"), 0);
	page = write_out(p, 0, &len);
	assert_clean_text(page, len);
	/* one script, the page's own; the names and lines only as text */
	assert_non_null(strstr(page, "<script>"));
	assert_null(strstr(strstr(page, "<script>") + 1, "<script"));
	assert_null(strstr(page, "<img"));
	assert_null(strstr(page, "<b>"));
	assert_non_null(strstr(page, "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&apos;&amp;"));
	assert_non_null(strstr(page, "&lt;/code&gt;&lt;/td&gt;&lt;script&gt;alert(2)"));
	assert_non_null(strstr(page, "&lt;b&gt;BAD&lt;/b&gt;"));
	assert_non_null(strstr(page, "Content-Security-Policy"));
	free(page);
	profile_free(p);
}

struct conv {
	struct profile *p;
};

static int on_sample(void *ctx, const struct sym_sample *s, uint64_t w, uint32_t r)
{
	(void)w, (void)r;
	return profile_add(((struct conv *)ctx)->p, s);
}

static int on_meta(void *ctx, const struct raw_meta *m)
{
	struct profile *p = ((struct conv *)ctx)->p;

	if (m->kind == RAW_META_HEADER)
		profile_set_realtime_off(p, m->realtime_off);
	if (m->kind == RAW_META_SOURCE)
		return profile_set_source(p, m->name, m->text, m->len, m->cut) < 0;
	if (m->kind == RAW_META_NOSOURCE)
		return profile_set_source_missing(p, m->name, m->text);
	return 0;
}

static int read_raw(const char *raw, size_t len, struct conv *c, struct diag *d)
{
	FILE *f = fmemopen((void *)raw, len, "r");
	uint64_t n;
	int rc;

	assert_non_null(f);
	c->p = profile_new(1000000, "cpu");
	rc = raw_read(f, "mem", on_sample, on_meta, c, &n, d);
	fclose(f);
	return rc;
}

static void test_raw_round_trip(void **state)
{
	struct profile *p = shares_profile();
	struct conv c;
	struct diag d = {0};
	size_t rlen, hlen, rlen2, hlen2;
	char *raw, *page, *raw2, *page2, *bad;

	(void)state;
	assert_int_equal(profile_set_source(p, "/ctl.py", "a\x1b\\b\n\n\xff\n", 8, 1), 0);
	assert_int_equal(profile_set_source_missing(p, "/usr/lib/json.py", "pid 1: gone\\x"), 0);
	raw = write_out(p, 1, &rlen);
	page = write_out(p, 0, &hlen);
	assert_non_null(strstr(raw, "\n#src 11 0 /app/m.py\n#sl import json\n"));
	assert_non_null(strstr(raw, "\n#src 3 1 /ctl.py\n#sl a\\x1b\\\\b\n#sl \n"));
	assert_non_null(strstr(raw, "\n#nosrc 16 /usr/lib/json.py pid 1: gone\\\\x\n"));
	assert_int_equal(read_raw(raw, rlen, &c, &d), 0);
	raw2 = write_out(c.p, 1, &rlen2);
	page2 = write_out(c.p, 0, &hlen2);
	assert_int_equal(rlen2, rlen);
	assert_memory_equal(raw2, raw, rlen);
	assert_int_equal(hlen2, hlen);
	assert_memory_equal(page2, page, hlen);
	profile_free(c.p);
	/* a #src promising a line more than it has, or a #sl on its own */
	bad = malloc(rlen + 64);
	assert_non_null(bad);
	memcpy(bad, raw, rlen);
	memcpy(strstr(bad, "#src 3 1"), "#src 4 1", 8);
	assert_int_equal(read_raw(bad, rlen, &c, &d), -1);
	assert_non_null(strstr(d.msg, "fewer #sl lines"));
	profile_free(c.p);
	assert_int_equal(read_raw("#sl x\n", 6, &c, &d), -1);
	assert_non_null(strstr(d.msg, "no #src"));
	profile_free(c.p);
	free(bad);
	free(raw), free(raw2), free(page), free(page2);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_source_clean),
	    cmocka_unit_test(test_shares),
	    cmocka_unit_test(test_hostile),
	    cmocka_unit_test(test_raw_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
