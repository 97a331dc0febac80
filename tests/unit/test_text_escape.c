// SPDX-License-Identifier: MIT
/*
 * The one escaper and the folded-key sanitizer (user/base/text_escape.c):
 * every special character, invalid UTF-8, the round trip, and cuts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "text_escape.h"

static const char *esc(const char *s, int flags)
{
	static char buf[1024];

	text_escape(buf, sizeof(buf), s, flags);
	return buf;
}

struct pair {
	const char *in, *out;
};

static void check_pairs(const struct pair *v, size_t n, int flags)
{
	for (size_t i = 0; i < n; i++)
		assert_string_equal(esc(v[i].in, flags), v[i].out);
}

#define CHECK_PAIRS(v, flags) check_pairs(v, sizeof(v) / sizeof(v[0]), flags)

static void controls(void **state)
{
	static const struct pair v[] = {
	    {"plain name", "plain name"},
	    {"a\x1b[2Jb", "a\\x1b[2Jb"},
	    {"bel\a cr\r lf\n tab\t", "bel\\x07 cr\\x0d lf\\x0a tab\\x09"},
	    {"del\x7f", "del\\x7f"},
	    {"\x01\x1f", "\\x01\\x1f"},
	    /* OSC ... BEL, as a terminal title injection would send it. */
	    {"\x1b]0;owned\a", "\\x1b]0;owned\\x07"},
	    /* C1 controls are well-formed UTF-8 but some terminals obey them. */
	    {"csi\xc2\x9b"
	     "2J",
	     "csi\\xc2\\x9b2J"},
	    {"nbsp\xc2\xa0", "nbsp\xc2\xa0"},
	    {"back\\slash", "back\\\\slash"},
	    {NULL, ""},
	};
	char all[256], out[1100];

	(void)state;
	CHECK_PAIRS(v, 0);
	/* No raw control byte ever comes out. */
	for (int i = 1; i < 256; i++)
		all[i - 1] = (char)i;
	all[255] = 0;
	text_escape(out, sizeof(out), all, 0);
	for (const char *p = out; *p; p++)
		assert_false((unsigned char)*p < 0x20 || *p == 0x7f);
}

static void utf8(void **state)
{
	static const struct pair v[] = {
	    {"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x90\x8d",
	     "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x90\x8d"},
	    {"bad\xff\xfe", "bad\\xff\\xfe"},
	    /* Truncated, overlong, surrogate, past U+10FFFF. */
	    {"\xc3", "\\xc3"},
	    {"\xe2\x82", "\\xe2\\x82"},
	    {"\xc0\xaf", "\\xc0\\xaf"},
	    {"\xe0\x80\xaf", "\\xe0\\x80\\xaf"},
	    {"\xed\xa0\x80", "\\xed\\xa0\\x80"},
	    {"\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"},
	};

	(void)state;
	CHECK_PAIRS(v, 0);
	assert_int_equal(utf8_seq_len("\xf0\x9f\x90\x8d"), 4);
	assert_int_equal(utf8_seq_len("a"), 1);
	assert_int_equal(utf8_seq_len("\x80"), 0);
}

static void folded(void **state)
{
	/* ';' separates frames: it becomes ':'. Spaces stay (folded readers
	 * take the count after the last space). Newlines and controls are
	 * escaped like everywhere else, so a key stays one line. */
	static const struct pair v[] = {
	    {"semi;colon (a.py:1)", "semi:colon (a.py:1)"},
	    {"x\ny\rz\x1b", "x\\x0ay\\x0dz\\x1b"},
	    {"a b\\c", "a b\\\\c"},
	};

	(void)state;
	CHECK_PAIRS(v, TEXT_FOLDED);
	assert_string_equal(esc("semi;colon", 0), "semi;colon");
}

static void round_trip(void **state)
{
	const char *cases[] = {
	    "",
	    "plain",
	    "\x1b[2J\nThread 1 (GIL held):\n    sshd_auth (/etc/shadow:1)",
	    "back\\x41slash\\\\",
	    "bad\xff\xc3 \xc2\x9b \xf0\x9f\x90\x8d",
	};
	char enc[1024], dec[1024];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		text_escape(enc, sizeof(enc), cases[i], 0);
		assert_null(strchr(enc, '\n'));
		assert_int_equal(text_unescape(dec, sizeof(dec), enc), (long)strlen(cases[i]));
		assert_string_equal(dec, cases[i]);
	}
	/* Every byte value. */
	{
		char all[256];

		for (int i = 1; i < 256; i++)
			all[i - 1] = (char)i;
		all[255] = 0;
		text_escape(enc, sizeof(enc), all, 0);
		assert_int_equal(text_unescape(dec, sizeof(dec), enc), 255);
		assert_memory_equal(dec, all, 256);
	}
	assert_int_equal(text_unescape(dec, sizeof(dec), "bad\\q"), -1);
	assert_int_equal(text_unescape(dec, sizeof(dec), "bad\\x4"), -1);
	assert_int_equal(text_unescape(dec, 2, "abc"), -1);
}

static void cuts(void **state)
{
	char small[8];

	(void)state;
	/* The needed length is returned, and an escape is never cut. */
	assert_int_equal(text_escape(small, sizeof(small), "abcdefghij", 0), 10);
	assert_string_equal(small, "abcdefg");
	assert_int_equal(text_escape(small, sizeof(small), "abcde\x1b", 0), 9);
	assert_string_equal(small, "abcde");
	assert_int_equal(text_escape(small, sizeof(small),
				     "ab\xf0\x9f\x90\x8d"
				     "cd",
				     0),
			 8);
	assert_string_equal(small, "ab\xf0\x9f\x90\x8d"
				   "c");
	assert_int_equal(text_escape(small, 1, "x", 0), 1);
	assert_string_equal(small, "");
	assert_int_equal(text_escape(NULL, 0, "xy", 0), 2);
	/* text_put prints a string of any length, escaped, and cuts its
	 * escaped form at TEXT_PUT_MAX bytes, at a whole escape, with "…". */
	{
		char *big = malloc(5001), *out = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&out, &len);

		memset(big, 'a', 4000);
		big[4000] = '\n';
		big[4001] = 0;
		text_put(f, big);
		fflush(f);
		assert_int_equal(len, 4000 + 4);
		assert_string_equal(out + 4000, "\\x0a");
		rewind(f);
		memset(big, '\x1b', 5000);
		big[5000] = 0;
		text_put(f, big);
		fflush(f);
		assert_int_equal(len, TEXT_PUT_MAX + 3);
		assert_string_equal(out + TEXT_PUT_MAX - 4, "\\x1b\xe2\x80\xa6");
		fclose(f);
		free(out);
		free(big);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(controls),	  cmocka_unit_test(utf8), cmocka_unit_test(folded),
	    cmocka_unit_test(round_trip), cmocka_unit_test(cuts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
