// SPDX-License-Identifier: MIT
/*
 * Line-table decoders. See linetable.h for the formats; the comments here
 * are about the places where a hostile or torn table could mislead us.
 */
#include "linetable.h"

#include <limits.h>

#include "py_offsets.h"

/* Inside this file: the decoders ran out of table (as opposed to finding
 * no line, or a malformed entry). Which one matters only when the copy
 * was cut short: then the rest of the table might have had the answer. */
#define RAN_OUT (-2)

/* A line number we are willing to report. Deltas from a hostile table can
 * push the running line anywhere; past INT_MAX (or below 0) it is noise. */
static int line_ok(int64_t line)
{
	return line >= 0 && line <= INT_MAX;
}

/*
 * PEP 657 varints: 6-bit groups, least significant first, 0x40 = more.
 * CPython never sets bit 7 inside a varint (bit 7 starts an entry), so a
 * byte with it set means the table is torn and we stop. More than 5 groups
 * (30 bits) cannot come from a real table either.
 */
static int read_varint(const uint8_t *tab, size_t len, size_t *i, uint32_t *out)
{
	uint32_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (*i >= len || shift > 24)
			return -1;
		b = tab[(*i)++];
		if (b & 0x80)
			return -1;
		v |= (uint32_t)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	*out = v;
	return 0;
}

static int read_svarint(const uint8_t *tab, size_t len, size_t *i, int64_t *out)
{
	uint32_t u;

	if (read_varint(tab, len, i, &u))
		return -1;
	*out = (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
	return 0;
}

/* The columns of one PEP 657 entry, as CPython's line table holds them:
 * 0-based, -1 for none, end -1 where the span ends on a later line. */
struct cols {
	int col, end;
};

static int col_ok(uint32_t v_plus_1)
{
	return v_plus_1 > 0 && v_plus_1 - 1 <= INT_MAX ? (int)(v_plus_1 - 1) : -1;
}

/* The long form's three varints after the line delta: end line delta,
 * column + 1, end column + 1 (0: none). */
static int pep657_long(const uint8_t *tab, size_t len, size_t *i, struct cols *c)
{
	uint32_t endline, col, end;

	if (read_varint(tab, len, i, &endline) || read_varint(tab, len, i, &col) ||
	    read_varint(tab, len, i, &end))
		return -1;
	c->col = col_ok(col);
	c->end = endline ? -1 : col_ok(end);
	return 0;
}

/* cols, when not NULL, gets the instruction's columns. */
static int pep657(const uint8_t *tab, size_t len, int firstlineno, int instr_index,
		  struct cols *cols)
{
	int64_t line = firstlineno, delta;
	int64_t pos = 0; /* first code unit of the current entry */
	size_t i = 0;
	struct cols c, none = {-1, -1};

	if (cols)
		*cols = none;
	if ((!tab && len) || instr_index < -1)
		return -1;
	if (instr_index == -1)
		instr_index = 0;
	while (i < len) {
		uint8_t b = tab[i++];
		int code = (b >> 3) & 15, n = (b & 7) + 1, has_line = 1;

		/* Entries start with bit 7 set; anything else means we are
		 * out of step with the table, and every later answer would
		 * be wrong. */
		if (!(b & 0x80))
			return -1;
		c = none;
		switch (code) {
		case 15: /* no location */
			has_line = 0;
			break;
		case 14: /* long form: line delta, end line, column, end column */
			if (read_svarint(tab, len, &i, &delta) || pep657_long(tab, len, &i, &c))
				return i >= len ? RAN_OUT : -1;
			line += delta;
			break;
		case 13: /* no columns */
			if (read_svarint(tab, len, &i, &delta))
				return i >= len ? RAN_OUT : -1;
			line += delta;
			break;
		case 12:
		case 11:
		case 10: /* one-line form: delta in the code, two column bytes */
			if (len - i < 2)
				return RAN_OUT;
			c.col = tab[i];
			c.end = tab[i + 1];
			i += 2;
			line += code - 10;
			break;
		default: /* short form: same line, one column byte */
			if (len - i < 1)
				return RAN_OUT;
			/* column = code * 8 + the byte's bits 4-6, end = column
			 * + its low 4 bits (CPython's short form). */
			c.col = code * 8 + ((tab[i] >> 4) & 7);
			c.end = c.col + (tab[i] & 15);
			i += 1;
			break;
		}
		if (instr_index < pos + n) {
			if (!has_line || !line_ok(line))
				return -1;
			if (cols)
				*cols = c;
			return (int)line;
		}
		pos += n;
	}
	return RAN_OUT;
}

static int pep626(const uint8_t *tab, size_t len, int firstlineno, int instr_index)
{
	int64_t line = firstlineno, start = 0, addr;

	if ((!tab && len) || instr_index < -1)
		return -1;
	if (instr_index == -1)
		instr_index = 0;
	addr = (int64_t)instr_index * 2;
	/* An odd trailing byte is half an entry: ignored, as CPython does. */
	for (size_t i = 0; i + 1 < len; i += 2) {
		int64_t end = start + tab[i];
		int8_t ldelta = (int8_t)tab[i + 1];
		int cur_known = ldelta != -128;

		/* Zero-length entries only carry line deltas too big for one
		 * byte; they cover no instruction, so the range test below
		 * never matches them. */
		if (cur_known)
			line += ldelta;
		if (addr >= start && addr < end)
			return cur_known && line_ok(line) ? (int)line : -1;
		start = end;
	}
	return RAN_OUT;
}

/* truncated: tab is only the start of the object's co_lnotab. */
static int lnotab(const uint8_t *tab, size_t len, int truncated, int firstlineno, int instr_index)
{
	int64_t line = firstlineno, addr = 0, target;
	int past = 0; /* an entry starts past the target: the line is final */

	if ((!tab && len) || instr_index < -1)
		return -1;
	if (instr_index == -1)
		instr_index = 0;
	target = (int64_t)instr_index * 2;
	/* co_lnotab does not record where the bytecode ends, so an index past
	 * the end gets the last line, exactly as PyCode_Addr2Line answers.
	 * But only the end of the whole table says that: a copy cut short
	 * ends anywhere, and its last line would be a confident wrong answer
	 * (line 32769 of a 40,000-line function, cut at 64 KiB). */
	for (size_t i = 0; i + 1 < len; i += 2) {
		addr += tab[i];
		if (addr > target) {
			past = 1;
			break;
		}
		line += (int8_t)tab[i + 1];
	}
	if (truncated && !past)
		return RAN_OUT;
	return line_ok(line) ? (int)line : -1;
}

static int unknown(int line)
{
	return line == RAN_OUT ? -1 : line;
}

int linetable_line_pep657(const uint8_t *tab, size_t len, int firstlineno, int instr_index)
{
	return unknown(pep657(tab, len, firstlineno, instr_index, NULL));
}

int linetable_line_pep626(const uint8_t *tab, size_t len, int firstlineno, int instr_index)
{
	return unknown(pep626(tab, len, firstlineno, instr_index));
}

int linetable_line_lnotab(const uint8_t *tab, size_t len, int firstlineno, int instr_index)
{
	return lnotab(tab, len, 0, firstlineno, instr_index);
}

int linetable_line_cut(uint32_t version_hex, const uint8_t *tab, size_t len, int truncated,
		       int firstlineno, int instr_index)
{
	int line;

	switch (py_linetable_format(version_hex)) {
	case PY_LINETABLE_PEP657:
		line = pep657(tab, len, firstlineno, instr_index, NULL);
		break;
	case PY_LINETABLE_PEP626:
		line = pep626(tab, len, firstlineno, instr_index);
		break;
	default:
		line = lnotab(tab, len, truncated, firstlineno, instr_index);
		break;
	}
	if (line == RAN_OUT)
		return truncated ? LINETABLE_CUT : -1;
	return line;
}

int linetable_line(uint32_t version_hex, const uint8_t *tab, size_t len, int firstlineno,
		   int instr_index)
{
	return linetable_line_cut(version_hex, tab, len, 0, firstlineno, instr_index);
}

int linetable_cols(uint32_t version_hex, const uint8_t *tab, size_t len, int firstlineno,
		   int instr_index, int *col, int *endcol)
{
	struct cols c = {-1, -1};
	int line;

	if (py_linetable_format(version_hex) != PY_LINETABLE_PEP657) {
		*col = *endcol = -1;
		return linetable_line(version_hex, tab, len, firstlineno, instr_index);
	}
	line = pep657(tab, len, firstlineno, instr_index, &c);
	*col = c.col;
	*endcol = c.end;
	return line == RAN_OUT ? -1 : line;
}
