// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the three line-table decoders (user/python/linetable.c).
 *
 * Input: byte 0 picks the decoder (and the version linetable_line sees),
 * bytes 1-4 the first line, bytes 5-8 an instruction index, the rest is the
 * table. The table is copied into a block of exactly its size so that
 * AddressSanitizer sees any read past its end: in production the table is
 * a malloc'd copy of a target's bytes object, sized by what the target
 * claimed.
 *
 * linetable_cols gives the same line, with columns that are -1 or more.
 *
 * And the property of a copy cut short (linetable_line_cut, truncated): a
 * prefix of the table either answers exactly what the whole table answers,
 * or says it cannot (LINETABLE_CUT, or -1), never another line. Byte 0's
 * high bits pick where the prefix ends.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "linetable.h"

static const uint32_t versions[] = {0x030801f0, 0x030901f0, 0x030a01f0, 0x030b01f0,
				    0x030c01f0, 0x030d01f0, 0x030e01f0, 0x030f01f0};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int32_t first, instr;
	uint8_t *tab;
	size_t len;
	int line;

	if (size < 9)
		return 0;
	memcpy(&first, data + 1, 4);
	memcpy(&instr, data + 5, 4);
	len = size - 9;
	tab = malloc(len ? len : 1);
	if (!tab)
		return 0;
	memcpy(tab, data + 9, len);

	line = linetable_line(versions[data[0] & 7], tab, len, first, instr);
	/* A decoder answers a line or -1, never anything below. */
	if (line < -1)
		abort();
	{
		/* The columns: the same line, each column -1 or more, none
		 * without a line. */
		int col, end,
		    cl = linetable_cols(versions[data[0] & 7], tab, len, first, instr, &col, &end);

		if (cl != line || col < -1 || end < -1 || (cl < 0 && (col >= 0 || end >= 0)))
			abort();
	}
	{
		size_t cut = len * (size_t)(data[0] >> 3) / 31;
		int part =
		    linetable_line_cut(versions[data[0] & 7], tab, cut, cut < len, first, instr);

		if (part < LINETABLE_CUT || (part >= 0 && part != line))
			abort();
	}
	/* The indices a short table can describe, plus the edges: the
	 * decoders are bounded by the table, not by the index asked. Capped,
	 * since each call is linear in the table. */
	for (int i = -2; i <= (int)(4 * (len < 64 ? len : 64)) + 2; i++) {
		if (linetable_line_pep657(tab, len, first, i) < -1 ||
		    linetable_line_pep626(tab, len, first, i) < -1 ||
		    linetable_line_lnotab(tab, len, first, i) < -1)
			abort();
	}
	/* Extreme indices must not overflow the position arithmetic. */
	linetable_line_pep657(tab, len, first, INT32_MAX);
	linetable_line_pep626(tab, len, first, INT32_MAX);
	linetable_line_lnotab(tab, len, first, INT32_MAX);
	linetable_line_pep657(NULL, 0, first, 0);
	free(tab);
	return 0;
}
