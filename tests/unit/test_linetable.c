// SPDX-License-Identifier: MIT
/*
 * Line-table decoders: hand-built tables for the corners of each format,
 * then every instruction of every code object that real interpreters
 * compiled (tests/data/linetables, from scripts/gen_linetable_data.sh),
 * against the lines CPython itself reports for them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <cmocka.h>

#include "linetable.h"

/* PEP 657, firstlineno 10:
 *   E8 00           code 13, 1 unit, delta 0             instr 0    -> 10
 *   D9 03 07        code 11, 2 units, delta +1, 2 cols   instr 1-2  -> 11
 *   82 04           code 0, 3 units, short form          instr 3-5  -> 11
 *   F8              code 15, 1 unit, no location         instr 6    -> -1
 *   F1 50 06 00 05 09  code 14, 2 units, long form +200  instr 7-8  -> 211
 *   E8 5B 06        code 13, 1 unit, delta -205          instr 9    -> 6
 */
static const uint8_t pep657[] = {0xE8, 0x00, 0xD9, 0x03, 0x07, 0x82, 0x04, 0xF8, 0xF1,
				 0x50, 0x06, 0x00, 0x05, 0x09, 0xE8, 0x5B, 0x06};

static void test_pep657_hand(void **state)
{
	static const int want[] = {10, 11, 11, 11, 11, 11, -1, 211, 211, 6};
	(void)state;

	for (int i = 0; i < 10; i++)
		assert_int_equal(linetable_line_pep657(pep657, sizeof(pep657), 10, i), want[i]);
	assert_int_equal(linetable_line_pep657(pep657, sizeof(pep657), 10, -1), 10);
	assert_int_equal(linetable_line_pep657(pep657, sizeof(pep657), 10, -2), -1);
	assert_int_equal(linetable_line_pep657(pep657, sizeof(pep657), 10, 10), -1);
	assert_int_equal(linetable_line_pep657(pep657, sizeof(pep657), 10, 1 << 30), -1);
	/* the dispatcher picks this format from 3.11 on */
	assert_int_equal(linetable_line(0x030b07f0, pep657, sizeof(pep657), 10, 8), 211);
	assert_int_equal(linetable_line(0x030f02f0, pep657, sizeof(pep657), 10, 9), 6);
}

static void test_pep657_truncated(void **state)
{
	(void)state;
	/* Cut inside the long form's varint: what precedes still decodes,
	 * the torn entry and everything after it is unknown. */
	for (size_t cut = 9; cut <= 13; cut++) {
		assert_int_equal(linetable_line_pep657(pep657, cut, 10, 5), 11);
		assert_int_equal(linetable_line_pep657(pep657, cut, 10, 7), -1);
		assert_int_equal(linetable_line_pep657(pep657, cut, 10, 9), -1);
	}
	/* cut inside a one-line form's column bytes */
	assert_int_equal(linetable_line_pep657(pep657, 4, 10, 0), 10);
	assert_int_equal(linetable_line_pep657(pep657, 4, 10, 1), -1);
	/* an empty table knows nothing */
	assert_int_equal(linetable_line_pep657(pep657, 0, 10, 0), -1);
	assert_int_equal(linetable_line_pep657(NULL, 0, 10, 0), -1);
}

static void test_pep657_malformed(void **state)
{
	/* a byte without bit 7 where an entry should start */
	static const uint8_t bad_start[] = {0xE8, 0x00, 0x12, 0xE8, 0x00};
	/* a varint running on for more groups than any real line needs */
	static const uint8_t long_varint[] = {0xE8, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x01};
	/* a line delta taking the line below zero */
	static const uint8_t negative[] = {0xE8, 0x15};
	(void)state;

	assert_int_equal(linetable_line_pep657(bad_start, sizeof(bad_start), 1, 0), 1);
	assert_int_equal(linetable_line_pep657(bad_start, sizeof(bad_start), 1, 1), -1);
	assert_int_equal(linetable_line_pep657(long_varint, sizeof(long_varint), 1, 0), -1);
	assert_int_equal(linetable_line_pep657(negative, sizeof(negative), 3, 0), -1);
}

/* PEP 626 (3.10), firstlineno 5, pairs of (bytes, line delta):
 *   (4, +1)               instr 0-1 -> 6
 *   (0, +127) (2, +3)     instr 2   -> 136 (a delta too big for one entry)
 *   (2, -128)             instr 3   -> no line
 *   (6, -100)             instr 4-6 -> 36
 */
static const uint8_t pep626[] = {4, 1, 0, 127, 2, 3, 2, 0x80, 6, (uint8_t)-100};

static void test_pep626_hand(void **state)
{
	static const int want[] = {6, 6, 136, -1, 36, 36, 36};
	(void)state;

	for (int i = 0; i < 7; i++)
		assert_int_equal(linetable_line_pep626(pep626, sizeof(pep626), 5, i), want[i]);
	assert_int_equal(linetable_line_pep626(pep626, sizeof(pep626), 5, -1), 6);
	assert_int_equal(linetable_line_pep626(pep626, sizeof(pep626), 5, -2), -1);
	assert_int_equal(linetable_line_pep626(pep626, sizeof(pep626), 5, 7), -1);
	/* odd length: the half entry is ignored, so its instructions are unknown */
	assert_int_equal(linetable_line_pep626(pep626, sizeof(pep626) - 1, 5, 3), -1);
	assert_int_equal(linetable_line_pep626(pep626, sizeof(pep626) - 1, 5, 4), -1);
	assert_int_equal(linetable_line_pep626(pep626, sizeof(pep626) - 1, 5, 2), 136);
	assert_int_equal(linetable_line(0x030a0df0, pep626, sizeof(pep626), 5, 5), 36);
}

/* co_lnotab (3.8/3.9), firstlineno 1, pairs of (byte increment, line increment):
 *   (0, +2)      byte 0 on      -> 3
 *   (6, +1)      byte 6 on      -> 4
 *   (255, 0)     a gap longer than one byte can say
 *   (45, -2)     byte 306 on    -> 2 (negative: a loop's back edge)
 */
static const uint8_t lnotab[] = {0, 2, 6, 1, 255, 0, 45, 0xfe};

static void test_lnotab_hand(void **state)
{
	(void)state;
	assert_int_equal(linetable_line_lnotab(lnotab, sizeof(lnotab), 1, 0), 3);
	assert_int_equal(linetable_line_lnotab(lnotab, sizeof(lnotab), 1, 2), 3);
	assert_int_equal(linetable_line_lnotab(lnotab, sizeof(lnotab), 1, 3), 4);
	assert_int_equal(linetable_line_lnotab(lnotab, sizeof(lnotab), 1, 130), 4);
	assert_int_equal(linetable_line_lnotab(lnotab, sizeof(lnotab), 1, 152), 4);
	assert_int_equal(linetable_line_lnotab(lnotab, sizeof(lnotab), 1, 153), 2);
	assert_int_equal(linetable_line_lnotab(lnotab, sizeof(lnotab), 1, -1), 3);
	assert_int_equal(linetable_line_lnotab(lnotab, sizeof(lnotab), 1, -2), -1);
	/* lnotab does not know the code's length: past the end is the last line */
	assert_int_equal(linetable_line_lnotab(lnotab, sizeof(lnotab), 1, 100000), 2);
	/* truncated: the torn pair is dropped */
	assert_int_equal(linetable_line_lnotab(lnotab, 7, 1, 153), 4);
	/* empty: the whole function is on its first line */
	assert_int_equal(linetable_line_lnotab(NULL, 0, 7, 3), 7);
	assert_int_equal(linetable_line(0x030812f0, lnotab, sizeof(lnotab), 1, 153), 2);
	assert_int_equal(linetable_line(0x030912f0, lnotab, sizeof(lnotab), 1, 3), 4);
}

/*
 * A copy cut short (the object's table is longer than what was read): an
 * instruction whose entry lies inside the copy gets the line the whole
 * table gives; one past it gets LINETABLE_CUT, in every format, and never
 * the line where the copy ends (lnotab would otherwise answer its last
 * line, as for a complete table).
 */
static void test_cut_tables(void **state)
{
	(void)state;
	/* lnotab: cut after the pair that starts byte 6 (line 4). */
	assert_int_equal(linetable_line_cut(0x030912f0, lnotab, 4, 1, 1, 2), 3);
	assert_int_equal(linetable_line_cut(0x030912f0, lnotab, 4, 1, 1, 3), LINETABLE_CUT);
	assert_int_equal(linetable_line_cut(0x030912f0, lnotab, 4, 1, 1, 100000), LINETABLE_CUT);
	/* Not cut: the same bytes are the whole table, past the end is its
	 * last line. */
	assert_int_equal(linetable_line_cut(0x030912f0, lnotab, 4, 0, 1, 3), 4);
	assert_int_equal(linetable_line_cut(0x030812f0, lnotab, sizeof(lnotab), 1, 1, 152), 4);
	assert_int_equal(linetable_line(0x030912f0, lnotab, 4, 1, 100000), 4);

	/* PEP 626: cut inside the (0, +127) (2, +3) pair sequence. */
	assert_int_equal(linetable_line_cut(0x030a0df0, pep626, 4, 1, 5, 1), 6);
	assert_int_equal(linetable_line_cut(0x030a0df0, pep626, 4, 1, 5, 2), LINETABLE_CUT);
	assert_int_equal(linetable_line_cut(0x030a0df0, pep626, 5, 1, 5, 2), LINETABLE_CUT);
	assert_int_equal(linetable_line_cut(0x030a0df0, pep626, 4, 0, 5, 2), -1);

	/* PEP 657: cut inside the long-form entry, or right after an entry. */
	for (size_t cut = 9; cut < 14; cut++) {
		assert_int_equal(linetable_line_cut(0x030c01f0, pep657, cut, 1, 10, 5), 11);
		assert_int_equal(linetable_line_cut(0x030c01f0, pep657, cut, 1, 10, 7),
				 LINETABLE_CUT);
		assert_int_equal(linetable_line_cut(0x030c01f0, pep657, cut, 0, 10, 7), -1);
	}
	assert_int_equal(linetable_line_cut(0x030f02f0, pep657, 14, 1, 10, 8), 211);
	assert_int_equal(linetable_line_cut(0x030f02f0, pep657, 14, 1, 10, 9), LINETABLE_CUT);
	/* A malformed entry inside the copy stays plain unknown. */
	assert_int_equal(linetable_line_cut(0x030c01f0, (const uint8_t[]){0x00, 0x00}, 2, 1, 1, 0),
			 -1);
}

/* Random bytes must never make a decoder read past the table (ASan builds
 * check that) or answer anything below -1. */
static void test_random_tables(void **state)
{
	uint8_t buf[64];
	uint32_t x = 12345;
	(void)state;

	for (int round = 0; round < 20000; round++) {
		size_t len = (size_t)(round % 64);
		uint8_t *tab = malloc(len ? len : 1);

		assert_non_null(tab);
		for (size_t i = 0; i < len; i++) {
			x = x * 1103515245u + 12345u;
			buf[i] = (uint8_t)(x >> 16);
		}
		memcpy(tab, buf, len);
		for (int instr = -2; instr < 40; instr++) {
			assert_true(linetable_line_pep657(tab, len, 1, instr) >= -1);
			assert_true(linetable_line_pep626(tab, len, 1, instr) >= -1);
			assert_true(linetable_line_lnotab(tab, len, 1, instr) >= -1);
		}
		free(tab);
	}
}

#define STR_(x) #x
#define STR(x)	STR_(x)

static const char *data_dir(void)
{
	const char *env = getenv("BPFPY_LINETABLE_DATA");
	static char path[4096];
	const char *slash;

	if (env)
		return env;
	/* Next to this source file, so the test runs from any directory
	 * when built with an absolute path, and from the repo root otherwise. */
	slash = strrchr(__FILE__, '/');
	snprintf(path, sizeof(path), "%.*s/../data/linetables", slash ? (int)(slash - __FILE__) : 1,
		 slash ? __FILE__ : ".");
	return path;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Instructions whose columns were checked against CPython's (3.11+). */
static long cols_checked;

/* Check one record; returns the number of instructions checked. */
static long check_record(const char *file, char *rec)
{
	char *save = NULL, *name, *ver, *first, *hex, *count, *lines, *cols;
	uint8_t *tab;
	size_t hexlen, len;
	uint32_t version;
	int firstlineno, n, first_line = -1;
	long checked = 0;
	char *end_c;

	name = strtok_r(rec, " ", &save);
	ver = strtok_r(NULL, " ", &save);
	first = strtok_r(NULL, " ", &save);
	hex = strtok_r(NULL, " ", &save);
	count = strtok_r(NULL, " ", &save);
	lines = strtok_r(NULL, " \n", &save);
	cols = strtok_r(NULL, " \n", &save); /* 3.11+: col:endcol per instruction */
	if (!name || !ver || !first || !hex || !count) {
		fail_msg("%s: malformed record", file);
		return 0;
	}
	version = (uint32_t)strtoul(ver, NULL, 16);
	firstlineno = atoi(first);
	n = atoi(count);
	hexlen = strcmp(hex, "-") ? strlen(hex) : 0;
	len = hexlen / 2;
	tab = malloc(len ? len : 1);
	assert_non_null(tab);
	for (size_t i = 0; i < len; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);

		assert_true(hi >= 0 && lo >= 0);
		tab[i] = (uint8_t)(hi << 4 | lo);
	}
	for (int i = 0; i < n; i++) {
		char *end;
		long want;

		assert_non_null(lines);
		want = strtol(lines, &end, 10);
		assert_true(end != lines);
		lines = *end == ',' ? end + 1 : end;
		if (i == 0)
			first_line = (int)want;
		int got = linetable_line(version, tab, len, firstlineno, i);
		if (got != want)
			fail_msg("%s: %s (0x%08x) instr %d: got line %d, CPython says %ld", file,
				 name, version, i, got, want);
		checked++;
		if (cols) {
			long wcol, wend;
			int col, end;

			wcol = strtol(cols, &end_c, 10);
			assert_true(*end_c == ':');
			wend = strtol(end_c + 1, &end_c, 10);
			cols = *end_c == ',' ? end_c + 1 : end_c;
			assert_int_equal(
			    linetable_cols(version, tab, len, firstlineno, i, &col, &end), got);
			if (col != wcol || end != wend)
				fail_msg(
				    "%s: %s (0x%08x) instr %d: got columns %d:%d, CPython says "
				    "%ld:%ld",
				    file, name, version, i, col, end, wcol, wend);
			cols_checked++;
		}
	}
	/* "Before the first instruction" is the first instruction's line. */
	assert_int_equal(linetable_line(version, tab, len, firstlineno, -1), first_line);
	/* From 3.10 the table covers exactly the bytecode: one past is unknown. */
	if (version >= 0x030a0000)
		assert_int_equal(linetable_line(version, tab, len, firstlineno, n), -1);
	free(tab);
	return checked;
}

static void test_real_tables(void **state)
{
	const char *dir = data_dir();
	DIR *d = opendir(dir);
	struct dirent *de;
	int files = 0;
	long objects = 0, instrs = 0;
	(void)state;

	if (!d)
		fail_msg("cannot open %s (run scripts/gen_linetable_data.sh)", dir);
	while ((de = readdir(d))) {
		char path[8192], *line = NULL;
		size_t cap = 0;
		FILE *f;

		if (!strstr(de->d_name, ".txt"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		f = fopen(path, "r");
		assert_non_null(f);
		while (getline(&line, &cap, f) > 0) {
			if (line[0] == '#' || line[0] == '\n')
				continue;
			instrs += check_record(de->d_name, line);
			objects++;
		}
		free(line);
		fclose(f);
		files++;
	}
	closedir(d);
	/* The pyenv interpreters 3.8-3.13 are always here; fewer files means
	 * the data went missing and this test would prove nothing. */
	assert_true(files >= 6);
	assert_true(objects >= 6 * 10);
	print_message("checked %ld instructions of %ld code objects in %d versions, the "
		      "columns of %ld\n",
		      instrs, objects, files, cols_checked);
	/* 3.11-3.13 from pyenv are always here, with their columns. */
	assert_true(cols_checked > 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pep657_hand),	     cmocka_unit_test(test_pep657_truncated),
	    cmocka_unit_test(test_pep657_malformed), cmocka_unit_test(test_pep626_hand),
	    cmocka_unit_test(test_lnotab_hand),	     cmocka_unit_test(test_random_tables),
	    cmocka_unit_test(test_real_tables),	     cmocka_unit_test(test_cut_tables),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
