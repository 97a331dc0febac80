// SPDX-License-Identifier: MIT
#include "raw_read.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Decimal as the writer prints it: no sign, no leading zero (but "0"). */
static int canonical_digits(const char *s, size_t n)
{
	return n && (n == 1 || s[0] != '0');
}

/* A decimal field ending at a space: canonical, bounded. */
static char *field_u(char *p, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	char *s = p;

	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned dgt = (unsigned)(*p - '0');

		if (v > (max - dgt) / 10)
			return NULL;
		v = v * 10 + dgt;
	}
	if (!canonical_digits(s, (size_t)(p - s)) || p - s > 20 || *p != ' ')
		return NULL;
	*out = v;
	return p + 1;
}

/* "qualname (file:line)": the line is after the last ':', the name before
 * the first " (" (names and files may hold anything but ';' and controls:
 * a name with " (" in it splits differently, and prints back the same). */
static int parse_frame(char *fr, struct sym_frame *out)
{
	size_t n = strlen(fr);
	char *colon, *open, *end;
	long line;

	if (n < 5 || fr[n - 1] != ')')
		return -1;
	fr[n - 1] = 0;
	colon = strrchr(fr, ':');
	open = strstr(fr, " (");
	if (!colon || !open || colon < open + 2)
		return -1;
	{
		const char *dg = colon + 1 + (colon[1] == '-');

		if (!canonical_digits(dg, strspn(dg, "0123456789")) ||
		    (dg > colon + 1 && !strcmp(dg, "0")))
			return -1;
	}
	errno = 0;
	line = strtol(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || line < INT_MIN || line > INT_MAX)
		return -1;
	*colon = 0;
	*open = 0;
	out->name = fr;
	out->file = open + 2;
	out->line = (int)line;
	out->firstlineno = 0; /* raw does not carry it */
	return 0;
}

int raw_parse_line(char *line, size_t len, struct sym_sample *s, struct sym_frame *frames,
		   const char **why)
{
	uint64_t v[5];
	static const uint64_t max[5] = {UINT64_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX};
	static const char *const names[5] = {"ts_ns", "pid", "tid", "cpu", "flags"};
	char *p = line, *st;
	uint32_t n = 0;

	if (memchr(line, 0, len))
		return *why = "a NUL byte", -1;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
			return *why = "a control character (the writer never writes one)", -1;
	for (int i = 0; i < 5; i++) {
		p = field_u(p, max[i], &v[i]);
		if (!p)
			return *why = names[i], -1;
	}
	memset(s, 0, sizeof(*s));
	s->ts_ns = v[0];
	s->pid = (uint32_t)v[1];
	s->tid = (uint32_t)v[2];
	s->cpu = (uint32_t)v[3];
	s->flags = (uint32_t)v[4];
	s->frames = frames;
	if (!strcmp(p, "-"))
		return 0;
	if (!*p)
		return *why = "stack (empty; '-' is no frames)", -1;
	while ((st = strsep(&p, ";")) != NULL) {
		if (n == BPFPY_MAX_DEPTH)
			return *why = "stack (more frames than bpfpy ever writes)", -1;
		if (parse_frame(st, &frames[n]))
			return *why = "frame (not 'qualname (file:line)')", -1;
		n++;
	}
	s->nframes = n;
	return 0;
}

int raw_read(FILE *f, const char *name, raw_sample_fn fn, void *ctx, uint64_t *nsamples,
	     struct diag *d)
{
	struct sym_frame *frames = calloc(BPFPY_MAX_DEPTH, sizeof(*frames));
	char *buf = malloc(RAW_MAX_LINE + 1);
	uint64_t lineno = 0;
	int rc = -1;

	*nsamples = 0;
	if (!frames || !buf) {
		diag_errno(d, ENOMEM, "%s", name);
		goto out;
	}
	for (;;) {
		struct sym_sample s;
		const char *why = NULL;
		size_t len = 0;
		int c = EOF;

		while (len <= RAW_MAX_LINE && (c = getc_unlocked(f)) != EOF && c != '\n')
			buf[len++] = (char)c;
		if (c == EOF && ferror(f)) {
			diag_errno(d, errno ? errno : EIO, "%s: read error after line %llu", name,
				   (unsigned long long)lineno);
			goto out;
		}
		if (c == EOF && !len)
			break;
		lineno++;
		if (len > RAW_MAX_LINE) {
			diag_set(d, EXIT_USAGE, "%s:%llu: line longer than %u bytes: not bpfpy raw",
				 name, (unsigned long long)lineno, RAW_MAX_LINE);
			goto out;
		}
		if (c == EOF) {
			diag_set(d, EXIT_USAGE,
				 "%s:%llu: last line has no LF: the file is truncated", name,
				 (unsigned long long)lineno);
			goto out;
		}
		buf[len] = 0;
		if (raw_parse_line(buf, len, &s, frames, &why)) {
			diag_set(d, EXIT_USAGE, "%s:%llu: bad %s: not bpfpy raw", name,
				 (unsigned long long)lineno, why);
			goto out;
		}
		(*nsamples)++;
		if (fn(ctx, &s))
			goto out;
	}
	rc = 0;
out:
	free(frames);
	free(buf);
	return rc;
}
