// SPDX-License-Identifier: MIT
/*
 * The source files a profile carries for the heatmap (profile.h, "A source
 * file as the heatmap shows it"). Text from a target is hostile: any bytes,
 * any length, lines of megabytes; what is kept is bounded and valid UTF-8,
 * and cleaning it twice gives what cleaning it once did, so that raw can
 * carry the lines and convert rebuild the same entry.
 */
#include "profile.h"
#include "text_escape.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ELLIPSIS    "\xe2\x80\xa6"
#define REPLACEMENT "\xef\xbf\xbd"

/* The entry of file id, added (empty) if absent; NULL on ENOMEM. */
static struct prof_source *source_entry(struct profile *p, uint32_t file, int *fresh)
{
	*fresh = 0;
	if (file < p->nsource_of && p->source_of[file])
		return &p->sources[p->source_of[file] - 1];
	if (file >= p->nsource_of) {
		uint32_t n = p->nstrs > file ? p->nstrs : file + 1;
		uint32_t *no = realloc(p->source_of, (size_t)n * sizeof(*no));

		if (!no)
			return NULL;
		memset(no + p->nsource_of, 0, (size_t)(n - p->nsource_of) * sizeof(*no));
		p->source_of = no;
		p->nsource_of = n;
	}
	if (profile_grow((void **)&p->sources, &p->cap_sources, p->nsources + 1,
			 sizeof(*p->sources)))
		return NULL;
	memset(&p->sources[p->nsources], 0, sizeof(p->sources[0]));
	p->sources[p->nsources].file = file;
	p->source_of[file] = ++p->nsources;
	*fresh = 1;
	return &p->sources[p->nsources - 1];
}

const struct prof_source *profile_source(const struct profile *p, uint32_t file)
{
	return file < p->nsource_of && p->source_of[file] ? &p->sources[p->source_of[file] - 1]
							  : NULL;
}

/* Cut a cleaned line (valid UTF-8, len bytes at line) to at most
 * PROFILE_SOURCE_LINE_MAX bytes, ending with U+2026 when cut: its length. */
static size_t cut_line(char *line, size_t len)
{
	size_t at = PROFILE_SOURCE_LINE_MAX - (sizeof(ELLIPSIS) - 1);

	if (len <= PROFILE_SOURCE_LINE_MAX)
		return len;
	while (at && ((unsigned char)line[at] & 0xc0) == 0x80)
		at--;
	memcpy(line + at, ELLIPSIS, sizeof(ELLIPSIS) - 1);
	return at + sizeof(ELLIPSIS) - 1;
}

/*
 * Clean text (len bytes, NUL-terminated at len) into lines: s->text,
 * s->off, s->nlines, s->cut. Returns the bytes of text kept, or 0 with
 * errno = ENOMEM (an empty file keeps 0 bytes too: errno is then 0).
 */
static size_t split_lines(struct prof_source *s, const char *text, size_t len)
{
	size_t nl = 1, o = 0;
	const char *c = text, *end = text + len;

	errno = 0;
	for (size_t i = 0; i < len; i++)
		nl += text[i] == '\n' || text[i] == '\r';
	if (nl > PROFILE_SOURCE_MAX_LINES)
		nl = PROFILE_SOURCE_MAX_LINES;
	/* A bad byte becomes 3, each line gains its NUL. */
	s->text = malloc(len * 3 + nl + 1);
	s->off = malloc(nl * sizeof(*s->off));
	if (!s->text || !s->off)
		return errno = ENOMEM, 0;
	while (c < end) {
		size_t start = o;

		if (s->nlines == PROFILE_SOURCE_MAX_LINES) {
			s->cut = 1;
			break;
		}
		while (c < end && *c != '\n' && *c != '\r') {
			int n = *c ? utf8_seq_len(c) : 0;

			if (n && c + n <= end) {
				memcpy(s->text + o, c, (size_t)n);
				o += (size_t)n, c += n;
			} else {
				memcpy(s->text + o, REPLACEMENT, 3);
				o += 3, c++;
			}
		}
		/* LF, CRLF or CR ends a line, as Python's tokenizer reads it. */
		if (c < end && *c == '\r' && c + 1 < end && c[1] == '\n')
			c++;
		if (c < end)
			c++;
		o = start + cut_line(s->text + start, o - start);
		s->text[o++] = '\0';
		s->off[s->nlines++] = (uint32_t)start;
	}
	return o;
}

int profile_set_source(struct profile *p, const char *file, const char *text, size_t len, int cut)
{
	uint32_t id = profile_intern(p, file);
	struct prof_source *s;
	const char *why = NULL;
	char *copy;
	size_t kept = 0;
	int fresh, oom;

	if (id == UINT32_MAX || !(s = source_entry(p, id, &fresh)))
		return errno = ENOMEM, -1;
	if (!fresh)
		return 0;
	/* NUL-terminated, so that a sequence cut by the end reads no further. */
	copy = malloc(len + 1);
	if (copy) {
		memcpy(copy, text, len);
		copy[len] = '\0';
		kept = split_lines(s, copy, len);
		free(copy);
	}
	oom = !copy || (!kept && errno == ENOMEM);
	if (oom)
		why = "not kept: out of memory";
	/* By the bytes kept, which raw carries: convert decides as record did. */
	else if (p->source_bytes + kept > PROFILE_SOURCES_MAX)
		why = "not kept: the profile holds its 64 MiB of sources already";
	if (why) {
		free(s->text);
		free(s->off);
		s->text = NULL, s->off = NULL, s->nlines = 0, s->cut = 0;
		s->why = strdup(why);
		return oom || !s->why ? (errno = ENOMEM, -1) : 1;
	}
	s->cut |= cut;
	p->source_bytes += kept;
	return 0;
}

int profile_set_source_missing(struct profile *p, const char *file, const char *why)
{
	uint32_t id = profile_intern(p, file);
	struct prof_source *s;
	int fresh;

	if (id == UINT32_MAX || !(s = source_entry(p, id, &fresh)))
		return errno = ENOMEM, -1;
	if (!fresh)
		return 0;
	/* Cleaned as a one-line source is: valid UTF-8, bounded. */
	{
		struct prof_source one = {0};
		size_t n = why ? strlen(why) : 0;

		if (!split_lines(&one, why ? why : "", n) && errno == ENOMEM) {
			free(one.text);
			free(one.off);
			return -1;
		}
		s->why = one.nlines ? strdup(one.text) : strdup("");
		free(one.text);
		free(one.off);
	}
	return s->why ? 0 : (errno = ENOMEM, -1);
}

void profile_sources_free(struct profile *p)
{
	for (uint32_t i = 0; i < p->nsources; i++) {
		free(p->sources[i].text);
		free(p->sources[i].off);
		free(p->sources[i].why);
	}
	free(p->sources);
	free(p->source_of);
	p->sources = NULL;
	p->source_of = NULL;
	p->nsources = p->cap_sources = p->nsource_of = 0;
	p->source_bytes = 0;
}
