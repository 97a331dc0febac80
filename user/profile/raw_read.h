/* SPDX-License-Identifier: MIT */
/*
 * The reader of the raw format (grammar in out_raw.c), for `bpfpy convert`.
 * A raw file is input like any other: it may be truncated, forged or huge,
 * so every size is bounded and every field checked, and an error names the
 * line and the field.
 */
#ifndef RAW_READ_H
#define RAW_READ_H

#include <stdint.h>
#include <stdio.h>

#include "diag.h"
#include "profile.h"

/* Longest line accepted (a full stack of long names fits many times). */
#define RAW_MAX_LINE (4u << 20)

/* At most this many "#lib" lines (libraries of native frames). */
#define RAW_MAX_LIBS 65536u

/* Called for each sample, frames leaf first (valid during the call only),
 * with what the "#w" and "#def" lines before it said (weight_ns and
 * offcpu_reason as profile_add_weighted() takes them, 0 and 0 without a
 * #w; each frame's kind, firstlineno, addr and lib).
 * Non-zero stops the reading, and raw_read returns -1 (d is the caller's). */
typedef int (*raw_sample_fn)(void *ctx, const struct sym_sample *s, uint64_t weight_ns,
			     uint32_t offcpu_reason);

/* A version 2 line that is not about one sample (grammar in out_raw.c). */
enum raw_meta_kind {
	RAW_META_HEADER,      /* line 1: clock, period_ns, weighted, realtime_off */
	RAW_META_COMM,	      /* pid, name */
	RAW_META_THREAD,      /* pid, tid, name */
	RAW_META_SOURCE_ROOT, /* name: the --source-root record gave pprof */
	RAW_META_SOURCE,      /* name: a file; text, len: its lines, each ended by LF; cut */
	RAW_META_NOSOURCE,    /* name: a file; text: why it has no source */
};
struct raw_meta {
	enum raw_meta_kind kind;
	char clock[8]; /* "cpu", "wall" or "offcpu" */
	uint64_t period_ns;
	int weighted;
	int64_t realtime_off;
	uint32_t pid, tid;
	const char *name; /* unescaped, valid during the call only */
	const char *text; /* RAW_META_SOURCE, _NOSOURCE: valid during the call only */
	size_t len;
	int cut;
};

/* Bytes of one "#src" file's lines a reader holds at most: more than
 * record keeps of a PROFILE_SOURCE_MAX_BYTES file however it is cleaned. */
#define RAW_MAX_SOURCE (16u << 20)
/* Non-zero stops the reading, as raw_sample_fn's does. */
typedef int (*raw_meta_fn)(void *ctx, const struct raw_meta *m);

/* Read every line of f (name: for messages) and hand it to fn, and the
 * version 2 header and trailer lines to meta (NULL: not wanted). 0, or -1
 * with d set: EXIT_USAGE for input that is not raw (the line, the field
 * and why), EXIT_FAIL for a read error or ENOMEM. *nsamples: samples
 * read, also on error. */
int raw_read(FILE *f, const char *name, raw_sample_fn fn, raw_meta_fn meta, void *ctx,
	     uint64_t *nsamples, struct diag *d);

/* One line without its LF (len bytes, NULs included: they are an error),
 * into s; frames and strings point into line (which it modifies) and into
 * frames (BPFPY_MAX_DEPTH entries). 0, or -1 with why set to a static text
 * naming the field. */
int raw_parse_line(char *line, size_t len, struct sym_sample *s, struct sym_frame *frames,
		   const char **why);

/* An input profile (convert's raw file, diff's two): a regular file, opened
 * without following a symlink's target into a FIFO or a device that would
 * block or never end. NULL with d set (EXIT_USAGE for a missing path, a
 * directory or anything not a regular file). */
FILE *profile_open_input(const char *path, struct diag *d);

#endif /* RAW_READ_H */
