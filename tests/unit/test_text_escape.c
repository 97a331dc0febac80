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

static void controls(void **state)
{
	(void)state;
	assert_string_equal(esc("plain name", 0), "plain name");
	assert_string_equal(esc("a\x1b[2Jb", 0), "a\\x1b[2Jb");
	assert_string_equal(esc("bel\a cr\r lf\n tab\t", 0), "bel\\x07 cr\\x0d lf\\x0a tab\\x09");
	assert_string_equal(esc("del\x7f", 0), "del\\x7f");
	assert_string_equal(esc("\x01\x1f", 0), "\\x01\\x1f");
	/* OSC ... BEL, as a terminal title injection would send it. */
	assert_string_equal(esc("\x1b]0;owned\a", 0), "\\x1b]0;owned\\x07");
	/* C1 controls are well-formed UTF-8 but some terminals obey them. */
	assert_string_equal(esc("csi\xc2\x9b"
				"2J",
				0),
			    "csi\\xc2\\x9b2J");
	assert_string_equal(esc("nbsp\xc2\xa0", 0), "nbsp\xc2\xa0");
	assert_string_equal(esc("back\\slash", 0), "back\\\\slash");
	assert_string_equal(esc(NULL, 0), "");
	/* No raw control byte ever comes out. */
	{
		char all[256], out[1100];

		for (int i = 1; i < 256; i++)
			all[i - 1] = (char)i;
		all[255] = 0;
		text_escape(out, sizeof(out), all, 0);
		for (const char *p = out; *p; p++)
			assert_false((unsigned char)*p < 0x20 || *p == 0x7f);
	}
}

static void utf8(void **state)
{
	(void)state;
	assert_string_equal(esc("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x90\x8d", 0),
			    "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x90\x8d");
	assert_string_equal(esc("bad\xff\xfe", 0), "bad\\xff\\xfe");
	/* Truncated, overlong, surrogate, past U+10FFFF. */
	assert_string_equal(esc("\xc3", 0), "\\xc3");
	assert_string_equal(esc("\xe2\x82", 0), "\\xe2\\x82");
	assert_string_equal(esc("\xc0\xaf", 0), "\\xc0\\xaf");
	assert_string_equal(esc("\xe0\x80\xaf", 0), "\\xe0\\x80\\xaf");
	assert_string_equal(esc("\xed\xa0\x80", 0), "\\xed\\xa0\\x80");
	assert_string_equal(esc("\xf4\x90\x80\x80", 0), "\\xf4\\x90\\x80\\x80");
	assert_int_equal(utf8_seq_len("\xf0\x9f\x90\x8d"), 4);
	assert_int_equal(utf8_seq_len("a"), 1);
	assert_int_equal(utf8_seq_len("\x80"), 0);
}

static void folded(void **state)
{
	(void)state;
	/* ';' separates frames: it becomes ':'. Spaces stay (folded readers
	 * take the count after the last space). Newlines and controls are
	 * escaped like everywhere else, so a key stays one line. */
	assert_string_equal(esc("semi;colon (a.py:1)", TEXT_FOLDED), "semi:colon (a.py:1)");
	assert_string_equal(esc("x\ny\rz\x1b", TEXT_FOLDED), "x\\x0ay\\x0dz\\x1b");
	assert_string_equal(esc("a b\\c", TEXT_FOLDED), "a b\\\\c");
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
	/* text_put of a long string prints all of it, escaped. */
	{
		char *big = malloc(5001), *out = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&out, &len);

		memset(big, 'a', 5000);
		big[4999] = '\n';
		big[5000] = 0;
		text_put(f, big);
		fclose(f);
		assert_int_equal(len, 4999 + 4);
		assert_string_equal(out + 4999, "\\x0a");
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
