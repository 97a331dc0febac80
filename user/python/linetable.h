/* SPDX-License-Identifier: MIT */
/*
 * Instruction index -> source line, for the three line-table formats
 * CPython has used:
 *
 *   <= 3.9   co_lnotab: (byte offset increment, signed line increment) pairs
 *   3.10     PEP 626 co_linetable: (byte length, signed line delta) pairs,
 *            -128 meaning "no line"
 *   >= 3.11  PEP 657 location table in co_linetable
 *
 * Tables are copied out of a process we do not trust, so every decoder is
 * bounded by the table's length and by a step count, and answers -1 rather
 * than guessing when the table is short or malformed.
 *
 * Instruction indices are in code units (2 bytes) in every version. -1
 * means "before the first instruction" (3.11/3.12 prev_instr) and is
 * answered with the first instruction's line.
 */
#ifndef LINETABLE_H
#define LINETABLE_H

#include <stddef.h>
#include <stdint.h>

/* Line of instruction instr_index of a code object of Python version_hex
 * (PY_VERSION_HEX), or -1 when unknown: no location, past the end, a
 * truncated or malformed table, or instr_index < -1. */
int linetable_line(uint32_t version_hex, const uint8_t *tab, size_t len, int firstlineno,
		   int instr_index);

/* What linetable_line_cut answers when the line is unknown because the
 * table was cut short before the instruction's entry. */
#define LINETABLE_CUT (-2)

/*
 * The same for a table of which only the first len bytes were copied
 * (truncated nonzero: the object's table is longer). An instruction whose
 * entry lies in the copy gets its line as from the whole table; one past
 * the copy gets LINETABLE_CUT, never the line where the copy happens to end.
 */
int linetable_line_cut(uint32_t version_hex, const uint8_t *tab, size_t len, int truncated,
		       int firstlineno, int instr_index);

/*
 * The columns of instruction instr_index (3.11+, the PEP 657 table's
 * positions): *col and *endcol 0-based, as CPython counts them (UTF-8
 * bytes of the line), -1 when unknown: no columns in the entry, a version
 * before 3.11, past the end, or a malformed or cut table; *endcol also -1
 * where the instruction's span ends on a later line than it starts.
 * Returns the instruction's line as linetable_line() does (-1 unknown).
 */
int linetable_cols(uint32_t version_hex, const uint8_t *tab, size_t len, int firstlineno,
		   int instr_index, int *col, int *endcol);

/* The decoders behind linetable_line, one per format. */
int linetable_line_pep657(const uint8_t *tab, size_t len, int firstlineno, int instr_index);
int linetable_line_pep626(const uint8_t *tab, size_t len, int firstlineno, int instr_index);
int linetable_line_lnotab(const uint8_t *tab, size_t len, int firstlineno, int instr_index);

#endif /* LINETABLE_H */
