// SPDX-License-Identifier: MIT
/* The oracle's pure pieces: schedule, key, external protocol. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle_sched.h"
#include "text_escape.h"

double oracle_sched_uniform(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	/* 53 random bits, shifted into (0, 1]: log() below never sees 0. */
	return ((z >> 11) + 1.0) / 9007199254740992.0;
}

void oracle_sched_init(struct oracle_sched *s, double start, double duration, double rate_hz,
		       int poisson, uint64_t seed)
{
	memset(s, 0, sizeof(*s));
	s->start = start;
	s->deadline = start + duration;
	s->rate_hz = rate_hz;
	s->poisson = poisson && rate_hz > 0;
	s->rng = seed;
	/* A Poisson process has no arrival at its origin: the first one is a
	 * gap away, like every other. A regular one starts at once. */
	s->next = s->poisson ? start - log(oracle_sched_uniform(&s->rng)) / rate_hz : start;
}

bool oracle_sched_next(struct oracle_sched *s, double *t)
{
	if (s->rate_hz <= 0) {
		*t = s->start;
		s->n++;
		return true;
	}
	if (s->next >= s->deadline)
		return false;
	*t = s->next;
	s->n++;
	if (s->poisson)
		s->next += -log(oracle_sched_uniform(&s->rng)) / s->rate_hz;
	else /* from the start, so rounding does not accumulate */
		s->next = s->start + (double)s->n / s->rate_hz;
	return true;
}

void oracle_sched_set_rate(struct oracle_sched *s, double rate_hz)
{
	if (s->poisson && rate_hz > 0)
		s->rate_hz = rate_hz;
}

/* "Task-" and digits only: asyncio's name for a task given none. */
static int unnamed_task(const char *name)
{
	if (strncmp(name, "Task-", 5) || !name[5])
		return 0;
	for (const char *c = name + 5; *c; c++)
		if (*c < '0' || *c > '9')
			return 0;
	return 1;
}

int oracle_key_build(const struct rule_frame *frames, int n, char *buf, size_t size)
{
	size_t o = 0;
	int cut = 0;

	if (!size)
		return -1;
	buf[0] = 0;
	for (int i = 0; i < n && !cut; i++) {
		const char *name = frames[i].name && *frames[i].name ? frames[i].name : "?";
		char line[16];
		size_t need;

		if (frames[i].task || frames[i].op) {
			/* "[task NAME]", "[op NAME]": a mark has no line; its
			 * name is escaped like a function's. asyncio's own name
			 * for an unnamed task, Task-<counter>, is keyed "Task-N":
			 * the counter differs between the fresh targets modes
			 * sample (the rules still see the name as it was sent). */
			const char *tag = frames[i].task ? "[task " : "[op ";
			size_t tl = strlen(tag);

			if (frames[i].task && unnamed_task(name))
				name = "Task-N";
			if (i && o + 1 < size)
				buf[o++] = ';';
			need = o + tl < size
				   ? text_escape(buf + o + tl, size - o - tl, name, TEXT_FOLDED)
				   : size;
			if (o + tl + need + 1 >= size) {
				cut = 1;
				break;
			}
			memcpy(buf + o, tag, tl);
			o += tl + need;
			buf[o++] = ']';
			continue;
		}
		if (frames[i].line > 0)
			snprintf(line, sizeof(line), "%d", frames[i].line);
		else
			strcpy(line, "?");
		if (i && o + 1 < size)
			buf[o++] = ';';
		/* The one folded-key sanitizer, as record's output uses. */
		need = text_escape(buf + o, size - o, name, TEXT_FOLDED);
		if (need >= size - o) {
			o += strlen(buf + o);
			cut = 1;
			break;
		}
		o += need;
		if (o + 1 + strlen(line) < size) {
			buf[o++] = ':';
			memcpy(buf + o, line, strlen(line));
			o += strlen(line);
		} else {
			cut = 1;
		}
	}
	buf[o < size ? o : size - 1] = 0;
	return cut ? -1 : (int)o;
}

static char *trim(char *s)
{
	size_t n;

	while (*s == ' ' || *s == '\t')
		s++;
	n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = 0;
	return s;
}

/* ":lineno" ends here: digits (at most 9, a line is an int) or '?'. */
static int lineno_len(const char *s)
{
	int k = 0;

	if (*s == '?')
		return 1;
	while (k < 10 && s[k] >= '0' && s[k] <= '9')
		k++;
	return k < 10 ? k : 0;
}

static int is_lineno(const char *s)
{
	int k = lineno_len(s);

	return k && !s[k];
}

/* "qualname:lineno@file": cut at the first ":lineno@" and return the file,
 * or NULL for the old form. The first, because qualnames do not hold '@'
 * (identifiers cannot) while paths may ("/home/a@b/x.py"). */
static char *split_file(char *p)
{
	for (char *c = strchr(p, ':'); c; c = strchr(c + 1, ':')) {
		int k = lineno_len(c + 1);

		if (k && c[1 + k] == '@') {
			c[1 + k] = 0;
			return c + 2 + k;
		}
	}
	return NULL;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* %XX -> byte XX, in place; a '%' not before two hex digits is itself. */
static char *unescape(char *s)
{
	char *w = s;

	for (const char *r = s; *r; r++) {
		int hi, lo;

		if (*r == '%' && (hi = hexval(r[1])) >= 0 && (lo = hexval(r[2])) >= 0 &&
		    (hi || lo)) {
			*w++ = (char)(hi << 4 | lo);
			r += 2;
		} else {
			*w++ = *r;
		}
	}
	*w = 0;
	return s;
}

void oracle_task_name_norm(char *name)
{
	size_t n = strlen(name);
	char *open;

	if (n < 4 || name[n - 1] != ')' || !(open = strrchr(name, '(')) || open == name ||
	    open[-1] != ' ')
		return;
	for (const char *c = open + 1; *c >= '0' && *c <= '9'; c++)
		if (c[1] == ' ' && (!strcmp(c + 2, "awaiters)") || !strcmp(c + 2, "parents)"))) {
			open[-1] = 0;
			return;
		}
}

int oracle_task_chain_len(const struct rule_frame *fr, int n)
{
	for (int i = n - 1; i >= 0; i--)
		if (fr[i].task)
			return i + 1;
	return n;
}

/* "[task NAME]" as the wire writes a task mark: the raw bytes, before any
 * %XX is undone, so that a function named "[task x]" (written %5Btask x])
 * is not taken for one. NAME is cut out in place. */
static char *task_mark(char *p)
{
	size_t n = strlen(p);

	if (n < 8 || strncmp(p, "[task ", 6) || p[n - 1] != ']')
		return NULL;
	p[n - 1] = 0;
	oracle_task_name_norm(unescape(p + 6));
	return p + 6;
}

/* "[op NAME]" or "[op NAME (BASE)]" as the wire writes an instruction
 * mark: NAME, cut out in place (the base dropped: the rules see NAME). */
static char *op_mark(char *p)
{
	size_t n = strlen(p);
	char *base;

	if (n < 6 || strncmp(p, "[op ", 4) || p[n - 1] != ']')
		return NULL;
	p[n - 1] = 0;
	base = strstr(p + 4, " (");
	if (base)
		*base = 0;
	return unescape(p + 4);
}

enum ext_kind oracle_ext_parse(char *line, struct ext_line *out, struct rule_frame *frames, int max)
{
	char *s = trim(line), *p, *save = NULL;
	int n = 0, total = 0;

	memset(out, 0, sizeof(*out));
	out->us = NAN;
	if (!*s || *s == '#')
		return out->kind = EXT_SKIP;
	if (s[0] == 'E' && (!s[1] || s[1] == ' ')) {
		out->text = trim(s + 1);
		return out->kind = EXT_ERROR;
	}
	if (s[0] == '.' && (!s[1] || s[1] == ' ')) {
		char *end;
		double us = strtod(s + 1, &end);

		if (end != s + 1 && isfinite(us) && us >= 0)
			out->us = us;
		return out->kind = EXT_END;
	}
	if (!strncmp(s, "tid=", 4)) {
		long tid = strtol(s + 4, NULL, 10);

		out->tid = tid > 0 && tid <= INT_MAX ? (int)tid : 0;
		s += strcspn(s, " \t");
		s = trim(s);
	}
	/* Root first on the wire; count the frames (empty ones, ";;", are
	 * skipped), then fill from the leaf end so that a stack deeper than
	 * max keeps its leaf part. */
	for (p = s; *p; p++)
		total += *p != ';' && (p == s || p[-1] == ';');
	for (p = strtok_r(s, ";", &save); p; p = strtok_r(NULL, ";", &save)) {
		char *task = task_mark(p), *op = task ? NULL : op_mark(p),
		     *file = task || op ? NULL : split_file(p),
		     *colon = task || op ? NULL : strrchr(p, ':');
		long ln = 0;
		int idx = total - 1 - n++;

		if (task || op) {
			if (idx < max)
				frames[idx] = (struct rule_frame){
				    .name = task ? task : op, .task = !!task, .op = !!op};
			continue;
		}
		if (colon && is_lineno(colon + 1)) {
			*colon = 0;
			ln = colon[1] == '?' ? 0 : strtol(colon + 1, NULL, 10);
		}
		if (idx < max) {
			frames[idx].name = unescape(p);
			frames[idx].file = file && *file ? unescape(file) : NULL;
			frames[idx].line = ln > 0 && ln <= INT_MAX ? (int)ln : 0;
			frames[idx].task = 0;
			frames[idx].op = 0;
		}
	}
	out->nframes = n < max ? n : max;
	return out->kind = out->nframes ? EXT_STACK : EXT_SKIP;
}
