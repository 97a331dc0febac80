/* SPDX-License-Identifier: MIT */
/*
 * The reader of the raw format (grammar in out_raw.c), for `bpfpy convert`.
 * A raw file is input like any other: it may be truncated, forged or huge,
 * so every size is bounded and every field checked, and an error names the
 * line and the field.
 */
#ifndef RAW_READ_H
#define RAW_READ_H

#include <stdio.h>

#include "diag.h"
#include "profile.h"

/* Longest line accepted (a full stack of long names fits many times). */
#define RAW_MAX_LINE (4u << 20)

/* Called for each sample, frames leaf first (valid during the call only).
 * Non-zero stops the reading, and raw_read returns -1 (d is the caller's). */
typedef int (*raw_sample_fn)(void *ctx, const struct sym_sample *s);

/* Read every line of f (name: for messages) and hand it to fn. 0, or -1
 * with d set: EXIT_USAGE for input that is not raw (the line, the field
 * and why), EXIT_FAIL for a read error or ENOMEM. *nsamples: samples
 * read, also on error. */
int raw_read(FILE *f, const char *name, raw_sample_fn fn, void *ctx, uint64_t *nsamples,
	     struct diag *d);

/* One line without its LF (len bytes, NULs included: they are an error),
 * into s; frames and strings point into line (which it modifies) and into
 * frames (BPFPY_MAX_DEPTH entries). 0, or -1 with why set to a static text
 * naming the field. */
int raw_parse_line(char *line, size_t len, struct sym_sample *s, struct sym_frame *frames,
		   const char **why);

#endif /* RAW_READ_H */
