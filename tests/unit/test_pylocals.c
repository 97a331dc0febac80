// SPDX-License-Identifier: MIT
/*
 * dump --locals value formatting: floats as repr() writes them, ints of
 * many 30-bit digits as exact decimals, strings and bytes quoted, escaped
 * and cut at PYLOCALS_VALUE_CHARS. The expected strings are what
 * Python 3 prints for the same values (repr()), except control bytes,
 * which the one escaper writes as \xNN (so \t is \x09).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "pylocals.h"

static void check_float(double v, const char *want)
{
	char out[PYLOCALS_VALUE_CAP];

	pylocals_fmt_float(v, out, sizeof(out));
	if (strcmp(out, want))
		fail_msg("float %.17g: got %s, want %s", v, out, want);
}

static void test_float_repr(void **state)
{
	(void)state;
	check_float(2.5, "2.5");
	check_float(0.1, "0.1");
	check_float(1.0, "1.0");
	check_float(-0.0, "-0.0");
	check_float(100.0, "100.0");
	check_float(-123.456, "-123.456");
	check_float(1.0 / 3, "0.3333333333333333");
	/* repr() switches to an exponent at 1e16 and below 1e-4 */
	check_float(1e15, "1000000000000000.0");
	check_float(1e16, "1e+16");
	check_float(0.0001, "0.0001");
	check_float(1e-5, "1e-05");
	check_float(1.2345678901234568e+17, "1.2345678901234568e+17");
	check_float(5e-324, "5e-324");
	check_float(1.7976931348623157e308, "1.7976931348623157e+308");
	check_float(INFINITY, "inf");
	check_float(-INFINITY, "-inf");
	check_float(NAN, "nan");
}

static void check_digits(const uint32_t *d, size_t n, int neg, const char *want)
{
	char out[PYLOCALS_VALUE_CAP];

	pylocals_fmt_digits(d, n, neg, out, sizeof(out));
	if (strcmp(out, want))
		fail_msg("int of %zu digits: got %s, want %s", n, out, want);
}

static void test_int_digits(void **state)
{
	/* 2**100 + 12345 in 30-bit digits, least significant first */
	static const uint32_t big[] = {12345, 0, 0, 1024};
	static const uint32_t max60[] = {0x3fffffff, 0x3fffffff};
	static const uint32_t one_digit[] = {1073741823};
	/* 10**117: the largest power of ten PYLOCALS_INT_DIGITS digits hold */
	static const uint32_t e117[] = {0,	   0,	      0,	 671088640, 368218606,
					587307061, 903989597, 948861501, 413925399, 535397270,
					951671787, 875176,    425795984};
	/* high zero digits (a torn or unnormalized int) are not shown */
	static const uint32_t zeros[] = {7, 0, 0};
	char want[130];

	(void)state;
	check_digits(big, 4, 0, "1267650600228229401496703217721");
	check_digits(big, 4, 1, "-1267650600228229401496703217721");
	check_digits(max60, 2, 0, "1152921504606846975");
	check_digits(one_digit, 1, 0, "1073741823");
	check_digits(zeros, 3, 0, "7");
	check_digits(zeros, 0, 0, "0");
	memset(want, '0', sizeof(want));
	want[0] = '1';
	want[118] = '\0';
	check_digits(e117, 13, 0, want);
}

static void check_quoted(const char *prefix, const char *data, size_t len, int cut,
			 const char *want)
{
	char out[PYLOCALS_VALUE_CAP];

	pylocals_fmt_quoted(prefix, data, len, cut, out, sizeof(out));
	if (strcmp(out, want))
		fail_msg("quoted: got [%s], want [%s]", out, want);
}

/* Code points of a UTF-8 string. */
static size_t cps(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static void test_quoted(void **state)
{
	char longs[1000], out[PYLOCALS_VALUE_CAP];

	(void)state;
	check_quoted("'", "in a cell", 9, 0, "'in a cell'");
	check_quoted("'", "", 0, 0, "''");
	/* control bytes and NUL escaped; UTF-8 kept as it is */
	check_quoted("'", "tab\there \x1b[2J caf\xc3\xa9", 19, 0,
		     "'tab\\x09here \\x1b[2J caf\xc3\xa9'");
	check_quoted("b'",
		     "\0\xff"
		     "ab",
		     4, 0, "b'\\x00\\xffab'");
	/* cut by the reader: no closing quote, an ellipsis */
	check_quoted("'", "abc", 3, 1, "'abc\xe2\x80\xa6");
	/* cut by the bound: PYLOCALS_VALUE_CHARS code points in all */
	memset(longs, 'x', sizeof(longs));
	pylocals_fmt_quoted("'", longs, sizeof(longs), 0, out, sizeof(out));
	assert_int_equal(cps(out), PYLOCALS_VALUE_CHARS);
	assert_int_equal(out[0], '\'');
	assert_string_equal(out + strlen(out) - 3, "\xe2\x80\xa6");
	/* multi-byte code points are never split by the cut */
	for (size_t i = 0; i + 3 <= sizeof(longs); i += 3)
		memcpy(longs + i, "\xe2\x82\xac", 3);
	pylocals_fmt_quoted("'", longs, 999, 0, out, sizeof(out));
	assert_int_equal(cps(out), PYLOCALS_VALUE_CHARS);
	assert_string_equal(out + strlen(out) - 6, "\xe2\x82\xac\xe2\x80\xa6");
	/* a value of exactly PYLOCALS_VALUE_CHARS code points is not cut */
	memset(longs, 'y', sizeof(longs));
	pylocals_fmt_quoted("'", longs, PYLOCALS_VALUE_CHARS - 2, 0, out, sizeof(out));
	assert_int_equal(cps(out), PYLOCALS_VALUE_CHARS);
	assert_int_equal(out[strlen(out) - 1], '\'');
}

static void test_kind_names(void **state)
{
	(void)state;
	assert_string_equal(pylocal_kind_name(PYLOCAL_INT), "int");
	assert_string_equal(pylocal_kind_name(PYLOCAL_STR), "str");
	for (int k = 0; k < PYLOCAL__COUNT; k++)
		assert_non_null(pylocal_kind_name(k));
	assert_non_null(pylocal_kind_name(PYLOCAL__COUNT));
	assert_non_null(pylocal_kind_name(-1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_float_repr),
	    cmocka_unit_test(test_int_digits),
	    cmocka_unit_test(test_quoted),
	    cmocka_unit_test(test_kind_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
