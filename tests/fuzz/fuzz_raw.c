// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the raw reader (user/profile/raw_read.c), which
 * `bpfpy convert` runs on files anyone may have written.
 *
 * The whole input is read as a file (fmemopen): no crash, no read past a
 * line, bounded memory, version 2's '#' lines included (seeds v2*: every
 * kind, from a --native --kernel, an off-CPU and a hostile-names recording). And the property of
 * one line: a line the reader accepts is one the writer could have written, so writing the parsed
 * sample back (raw_write_sample) gives the line itself, but for empty
 * names, which the writer prints as "[unknown]".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raw_read.h"

static int count(void *ctx, const struct sym_sample *s, uint64_t weight_ns, uint32_t reason)
{
	(void)s;
	(void)weight_ns;
	(void)reason;
	++*(uint64_t *)ctx;
	return 0;
}

/* The names are handed over unescaped: touch every byte of them. */
static int meta(void *ctx, const struct raw_meta *m)
{
	++*(uint64_t *)ctx;
	return m->name && strlen(m->name) > RAW_MAX_LINE;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sym_frame frames[BPFPY_MAX_DEPTH];
	struct sym_sample s;
	const char *why;
	uint64_t n = 0, got;
	struct diag d = {0};
	FILE *f = size ? fmemopen((void *)data, size, "r") : NULL;
	char *line, *back = NULL;
	size_t len = 0, blen = 0;

	if (f) {
		raw_read(f, "fuzz", count, meta, &n, &got, &d);
		fclose(f);
	}
	/* The first line alone, in a block of its exact size. */
	len = size;
	if (memchr(data, '\n', size))
		len = (size_t)((const uint8_t *)memchr(data, '\n', size) - data);
	line = malloc(len + 1);
	if (!line)
		return 0;
	memcpy(line, data, len);
	line[len] = 0;
	if (!raw_parse_line(line, len, &s, frames, &why)) {
		int empty = 0;
		FILE *w = open_memstream(&back, &blen);

		for (uint32_t i = 0; i < s.nframes; i++)
			empty |= !*frames[i].name;
		if (w) {
			raw_write_sample(w, &s);
			fclose(w);
			if (!empty && (blen != len + 1 || memcmp(back, data, len)))
				abort(); /* accepted what the writer cannot write */
		}
		free(back);
	}
	free(line);
	return 0;
}
