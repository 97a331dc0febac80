// SPDX-License-Identifier: MIT
#include "raw_read.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "native_symbols.h"
#include "text_escape.h"

/* A #lib line: the library and the strings it points to. */
struct raw_lib {
	struct native_lib lib;
	char *path, *build_id;
};

/* What the '#' lines read so far said. */
struct raw_rd {
	struct raw_defs *defs;
	/* The #lib lines, id - 1. Each entry is allocated alone and never
	 * moves: frames point to it, and a writer (out_raw.c) tells libraries
	 * apart by that pointer, so one that moved would be written again. */
	struct raw_lib **libs;
	uint32_t nlibs;
	uint32_t ndefs;	    /* #def lines read */
	uint64_t weight_ns; /* a #w line waiting for its sample */
	uint32_t reason;
	int have_w;
	/* A "#src" whose "#sl" lines are being read: its file, lines to come,
	 * cut flag, and the lines so far (each ended by LF); also #nosrc's why. */
	char *src_file;
	uint32_t src_left;
	int src_cut;
	char *src_buf;
	uint32_t src_len, src_cap;
};

/* Decimal as the writer prints it: no sign, no leading zero (but "0"). */
static int canonical_digits(const char *s, size_t n)
{
	return n && (n == 1 || s[0] != '0');
}

/* A decimal field ending at term (' ', or 0 for the end of the line):
 * canonical, bounded. The character after term, or NULL. */
static char *field_term(char *p, uint64_t max, uint64_t *out, char term)
{
	uint64_t v = 0;
	char *s = p;

	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned dgt = (unsigned)(*p - '0');

		if (dgt > max || v > (max - dgt) / 10)
			return NULL;
		v = v * 10 + dgt;
	}
	if (!canonical_digits(s, (size_t)(p - s)) || p - s > 20 || *p != term)
		return NULL;
	*out = v;
	return term ? p + 1 : p;
}

static char *field_u(char *p, uint64_t max, uint64_t *out)
{
	return field_term(p, max, out, ' ');
}

/* The same, signed: ["-"] decimal, never "-0", within [-max - 1, max]. */
static char *field_s(char *p, uint64_t max, int64_t *out, char term)
{
	int neg = *p == '-';
	uint64_t v;

	p = field_term(p + neg, max + (uint64_t)neg, &v, term);
	if (!p || (neg && !v))
		return NULL;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return p;
}

/* "qualname (file:line)[ kind]": the line is after the last ':', the name
 * before the first " (" (names and files may hold anything but ';' and
 * controls: a name with " (" in it splits differently, and prints back
 * the same). */
static int parse_frame(char *fr, struct sym_frame *out)
{
	size_t n = strlen(fr);
	char *colon, *open, *end;
	long line;
	int kind = FRAME_KIND_PYTHON;

	if (n > 9 && (!strcmp(fr + n - 9, " [native]") || !strcmp(fr + n - 9, " [kernel]"))) {
		kind = fr[n - 7] == 'n' ? FRAME_KIND_NATIVE : FRAME_KIND_KERNEL;
		n -= 9;
		fr[n] = 0;
	}
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
	*out = (struct sym_frame){.name = fr, .file = open + 2, .line = (int)line, .kind = kind};
	return 0;
}

static int check_bytes(const char *line, size_t len, const char **why)
{
	if (memchr(line, 0, len))
		return *why = "a NUL byte", -1;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
			return *why = "a control character (the writer never writes one)", -1;
	return 0;
}

/* A sample line; with rd, each frame gets what a #def told of its text. */
static int parse_sample(char *line, size_t len, struct sym_sample *s, struct sym_frame *frames,
			const struct raw_rd *rd, const char **why)
{
	uint64_t v[5];
	static const uint64_t max[5] = {UINT64_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX};
	static const char *const names[5] = {"ts_ns", "pid", "tid", "cpu", "flags"};
	char *p = line, *st;
	uint32_t n = 0;

	if (check_bytes(line, len, why))
		return -1;
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
		struct raw_def *d = NULL;
		struct raw_defs *defs = rd ? rd->defs : NULL;

		if (n == BPFPY_MAX_DEPTH)
			return *why = "stack (more frames than bpfpy ever writes)", -1;
		if (defs)
			d = raw_defs_find(&defs, st, strlen(st), 0);
		if (parse_frame(st, &frames[n]))
			return *why = "frame (not 'qualname (file:line)')", -1;
		if (d && d->kind >= 0) {
			frames[n].kind = d->kind;
			frames[n].firstlineno = d->firstlineno;
			frames[n].addr = d->addr;
			frames[n].lib = d->lib ? &rd->libs[d->lib - 1]->lib : NULL;
		}
		if (d && d->name) {
			frames[n].name = d->name;
			frames[n].file = d->file;
		}
		n++;
	}
	s->nframes = n;
	return 0;
}

int raw_parse_line(char *line, size_t len, struct sym_sample *s, struct sym_frame *frames,
		   const char **why)
{
	return parse_sample(line, len, s, frames, NULL, why);
}

/* An escaped name (text_escape's form, nothing else) into a new string:
 * NULL with why set, or on ENOMEM (*oom set). */
static char *unescape_name(const char *src, const char **why, int *oom)
{
	size_t n = strlen(src);
	char *dec = malloc(n + 1), *re = malloc(n + 1);
	long got = dec ? text_unescape(dec, n + 1, src) : -1;

	if (!dec || !re) {
		*oom = 1;
		goto bad;
	}
	/* Only what the writer writes: no NUL, and escaped back the same. */
	if (got < 0 || strlen(dec) != (size_t)got || text_escape(re, n + 1, dec, 0) != n ||
	    memcmp(re, src, n)) {
		*why = "name (not as bpfpy escapes it)";
		goto bad;
	}
	free(re);
	return dec;
bad:
	free(dec);
	free(re);
	return NULL;
}

/* The header, line 1: "#bpfpy raw 2 clock=C period_ns=N weighted=B realtime_off=I". */
static int parse_header(char *p, struct raw_meta *m, const char **why)
{
	uint64_t v, w;
	size_t n;

	if (strncmp(p, "#bpfpy raw ", 11))
		return *why = "header (not '#bpfpy raw VERSION ...')", -1;
	p = field_u(p + 11, UINT32_MAX, &v);
	if (!p)
		return *why = "header version", -1;
	if (v != 2)
		return *why = "header version (this bpfpy reads raw 1 and 2)", -1;
	if (strncmp(p, "clock=", 6))
		return *why = "header clock", -1;
	p += 6;
	n = strcspn(p, " ");
	if (!((n == 3 && !strncmp(p, "cpu", 3)) || (n == 4 && !strncmp(p, "wall", 4)) ||
	      (n == 6 && !strncmp(p, "offcpu", 6))) ||
	    p[n] != ' ')
		return *why = "header clock (cpu, wall or offcpu)", -1;
	memset(m, 0, sizeof(*m));
	m->kind = RAW_META_HEADER;
	memcpy(m->clock, p, n);
	p += n + 1;
	if (strncmp(p, "period_ns=", 10) || !(p = field_u(p + 10, UINT64_MAX, &m->period_ns)) ||
	    !m->period_ns)
		return *why = "header period_ns (1 or more)", -1;
	if (strncmp(p, "weighted=", 9) || !(p = field_u(p + 9, 1, &w)))
		return *why = "header weighted (0 or 1)", -1;
	m->weighted = (int)w;
	if (strncmp(p, "realtime_off=", 13) || !field_s(p + 13, INT64_MAX, &m->realtime_off, 0))
		return *why = "header realtime_off", -1;
	return 0;
}

static int parse_lib(struct raw_rd *rd, char *p, const char **why, int *oom)
{
	uint64_t id, v[3];
	struct raw_lib **nl, *l;
	char *bid, *path;
	size_t nb;

	if (!(p = field_u(p, UINT32_MAX, &id)) || id != rd->nlibs + 1ull)
		return *why = "#lib id (not the next one)", -1;
	if (rd->nlibs == RAW_MAX_LIBS)
		return *why = "#lib (more libraries than bpfpy writes)", -1;
	for (int i = 0; i < 3; i++)
		if (!(p = field_u(p, UINT64_MAX, &v[i])))
			return *why = "#lib start, limit or offset", -1;
	nb = strcspn(p, " ");
	if (!nb || p[nb] != ' ' || nb > 128 ||
	    (strspn(p, "0123456789abcdef") != nb && !(nb == 1 && *p == '-')))
		return *why = "#lib build_id (lowercase hex or '-')", -1;
	p[nb] = 0;
	path = unescape_name(p + nb + 1, why, oom);
	if (!path)
		return -1;
	bid = strdup(*p == '-' ? "" : p);
	nl = realloc(rd->libs, (rd->nlibs + 1) * sizeof(*nl));
	if (nl)
		rd->libs = nl;
	l = nl && bid ? calloc(1, sizeof(*l)) : NULL;
	if (!l) {
		free(bid);
		free(path);
		*oom = 1;
		return -1;
	}
	l->path = path;
	l->build_id = bid;
	l->lib = (struct native_lib){
	    .path = path,
	    .name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path,
	    .build_id = bid,
	    .start = v[0],
	    .limit = v[1],
	    .offset = v[2],
	};
	rd->libs[rd->nlibs] = l;
	rd->nlibs++;
	return 0;
}

/* A frame's text as a #def or #exact line ends with: one frame that parses. */
static int check_frame_text(const char *p, int *oom)
{
	struct sym_frame fr;
	char *copy;
	int bad;

	if (strchr(p, ';'))
		return -1;
	copy = strdup(p);
	if (!copy) {
		*oom = 1;
		return -1;
	}
	bad = parse_frame(copy, &fr);
	free(copy);
	return bad ? -1 : 0;
}

static int parse_def(struct raw_rd *rd, char *p, const char **why, int *oom)
{
	uint64_t kind, addr, lib;
	int64_t first;
	struct raw_def *d;
	size_t n;

	if (!(p = field_u(p, FRAME_KIND_MARK, &kind)))
		return *why = "#def kind", -1;
	if (!(p = field_s(p, INT_MAX, &first, ' ')) || first < INT_MIN)
		return *why = "#def firstlineno", -1;
	if (!(p = field_u(p, UINT64_MAX, &addr)))
		return *why = "#def addr", -1;
	if (!(p = field_u(p, rd->nlibs, &lib)))
		return *why = "#def lib (no such #lib)", -1;
	n = strlen(p);
	if (check_frame_text(p, oom))
		return *why = "#def frame (one 'qualname (file:line)', no ';')", -1;
	if (rd->ndefs == RAW_MAX_DEFS)
		return *why = "#def (more than bpfpy writes)", -1;
	d = raw_defs_find(&rd->defs, p, n, 1);
	if (!d) {
		*oom = 1;
		return -1;
	}
	rd->ndefs++;
	d->kind = (int)kind;
	d->firstlineno = (int)first;
	d->addr = addr;
	d->lib = (uint32_t)lib;
	return 0;
}

/* "#exact nlen flen name file frame", or "#exact - frame". */
static int parse_exact(struct raw_rd *rd, char *p, const char **why, int *oom)
{
	uint64_t nn = 0, nf = 0;
	char *name = NULL, *file = NULL, *frame;
	struct raw_def *d;

	if (!strncmp(p, "- ", 2)) {
		frame = p + 2;
	} else {
		if (!(p = field_u(p, RAW_MAX_LINE, &nn)) || !(p = field_u(p, RAW_MAX_LINE, &nf)) ||
		    strlen(p) < nn + nf + 2 || p[nn] != ' ' || p[nn + 1 + nf] != ' ')
			return *why = "#exact lengths", -1;
		p[nn] = 0;
		p[nn + 1 + nf] = 0;
		frame = p + nn + nf + 2;
		if (!(name = unescape_name(p, why, oom)) ||
		    !(file = unescape_name(p + nn + 1, why, oom)))
			goto bad;
	}
	if (check_frame_text(frame, oom)) {
		*why = "#exact frame (one 'qualname (file:line)')";
		goto bad;
	}
	if (rd->ndefs == RAW_MAX_DEFS) {
		*why = "#exact (more than bpfpy writes)";
		goto bad;
	}
	d = raw_defs_find(&rd->defs, frame, strlen(frame), 1);
	if (!d) {
		*oom = 1;
		goto bad;
	}
	rd->ndefs++;
	free(d->name);
	free(d->file);
	d->name = name;
	d->file = file;
	return 0;
bad:
	free(name);
	free(file);
	return -1;
}

/* Append n bytes and a LF to rd's source buffer, within RAW_MAX_SOURCE. */
static int src_add(struct raw_rd *rd, const char *s, size_t n, const char **why, int *oom)
{
	if (rd->src_len + n + 1 > RAW_MAX_SOURCE)
		return *why = "#sl (a source over 16 MiB)", -1;
	if (profile_grow((void **)&rd->src_buf, &rd->src_cap, rd->src_len + n + 2, 1))
		return *oom = 1, -1;
	memcpy(rd->src_buf + rd->src_len, s, n);
	rd->src_len += n;
	rd->src_buf[rd->src_len++] = '\n';
	rd->src_buf[rd->src_len] = '\0';
	return 0;
}

/* The file of a "#src" once its last "#sl" is read (m set: 1), else 0. */
static int src_done(struct raw_rd *rd, struct raw_meta *m)
{
	if (rd->src_left)
		return 0;
	m->kind = RAW_META_SOURCE;
	m->name = rd->src_file;
	m->text = rd->src_len ? rd->src_buf : "";
	m->len = rd->src_len;
	m->cut = rd->src_cut;
	rd->src_file = NULL;
	rd->src_len = 0;
	return 1;
}

/* "#src nlines cut file", "#sl line" (one of its lines), "#nosrc flen file why". */
static int parse_source(struct raw_rd *rd, size_t k, char *p, struct raw_meta *m, const char **why,
			int *oom)
{
	uint64_t n, cut;
	char *s;

	if (k == 2) { /* "#sl" */
		if (!rd->src_file)
			return *why = "#sl (no #src before it)", -1;
		if (!(s = unescape_name(p, why, oom)))
			return -1;
		if (strlen(s) > PROFILE_SOURCE_LINE_MAX) {
			free(s);
			return *why = "#sl (a line longer than bpfpy keeps)", -1;
		}
		n = src_add(rd, s, strlen(s), why, oom);
		free(s);
		if (n)
			return -1;
		rd->src_left--;
		return src_done(rd, m);
	}
	if (k == 3) { /* "#src" */
		if (!(p = field_u(p, PROFILE_SOURCE_MAX_LINES, &n)) || !(p = field_u(p, 1, &cut)))
			return *why = "#src nlines or cut", -1;
		if (!(rd->src_file = unescape_name(p, why, oom)))
			return -1;
		rd->src_left = (uint32_t)n;
		rd->src_cut = (int)cut;
		rd->src_len = 0;
		return src_done(rd, m);
	}
	/* "#nosrc" */
	if (!(p = field_u(p, RAW_MAX_LINE, &n)) || strlen(p) < n + 1 || p[n] != ' ')
		return *why = "#nosrc flen", -1;
	p[n] = '\0';
	if (!(m->name = unescape_name(p, why, oom)))
		return -1;
	rd->src_len = 0;
	if (!(s = unescape_name(p + n + 1, why, oom)) || src_add(rd, s, strlen(s), why, oom)) {
		free(s);
		free((char *)m->name);
		m->name = NULL;
		return -1;
	}
	free(s);
	rd->src_buf[--rd->src_len] = '\0'; /* no LF after a why */
	m->kind = RAW_META_NOSOURCE;
	m->text = rd->src_buf;
	m->len = rd->src_len;
	return 1;
}

/* A '#' line but the header: 0 done, 1 a name for meta (m set), -1 bad. */
static int parse_meta(struct raw_rd *rd, char *line, struct raw_meta *m, const char **why, int *oom)
{
	size_t k = strcspn(line + 1, " ");
	char *p = line + 1 + k + (line[1 + k] == ' ');
	uint64_t v;

	memset(m, 0, sizeof(*m));
	if (rd->src_file && !(k == 2 && !strncmp(line + 1, "sl", 2)))
		return *why = "#src (fewer #sl lines than it says)", -1;
	if ((k == 2 && !strncmp(line + 1, "sl", 2)) || (k == 3 && !strncmp(line + 1, "src", 3)) ||
	    (k == 5 && !strncmp(line + 1, "nosrc", 5)))
		return parse_source(rd, k, p, m, why, oom);
	if (k == 1 && line[1] == 'w') {
		if (rd->have_w)
			return *why = "#w (two for one sample)", -1;
		if (!(p = field_u(p, UINT64_MAX, &rd->weight_ns)) ||
		    !field_term(p, OFFCPU__COUNT - 1, &v, 0))
			return *why = "#w weight_ns or reason", -1;
		rd->reason = (uint32_t)v;
		rd->have_w = 1;
		return 0;
	}
	if (k == 3 && !strncmp(line + 1, "lib", 3))
		return parse_lib(rd, p, why, oom);
	if (k == 3 && !strncmp(line + 1, "def", 3))
		return parse_def(rd, p, why, oom);
	if (k == 5 && !strncmp(line + 1, "exact", 5))
		return parse_exact(rd, p, why, oom);
	if (k == 4 && !strncmp(line + 1, "comm", 4)) {
		m->kind = RAW_META_COMM;
		if (!(p = field_u(p, UINT32_MAX, &v)))
			return *why = "#comm pid", -1;
		m->pid = (uint32_t)v;
	} else if (k == 6 && !strncmp(line + 1, "thread", 6)) {
		m->kind = RAW_META_THREAD;
		if (!(p = field_u(p, UINT32_MAX, &v)))
			return *why = "#thread pid", -1;
		m->pid = (uint32_t)v;
		if (!(p = field_u(p, UINT32_MAX, &v)))
			return *why = "#thread tid", -1;
		m->tid = (uint32_t)v;
	} else if (k == 11 && !strncmp(line + 1, "source_root", 11)) {
		m->kind = RAW_META_SOURCE_ROOT;
	} else if (k == 5 && !strncmp(line + 1, "bpfpy", 5)) {
		return *why = "header (not on line 1)", -1;
	} else {
		return 0; /* a kind of a later version: skipped */
	}
	m->name = unescape_name(p, why, oom);
	return m->name ? 1 : -1;
}

static void rd_free(struct raw_rd *rd)
{
	free(rd->src_file);
	free(rd->src_buf);
	raw_defs_free(rd->defs);
	for (uint32_t i = 0; i < rd->nlibs; i++) {
		free(rd->libs[i]->path);
		free(rd->libs[i]->build_id);
		free(rd->libs[i]);
	}
	free(rd->libs);
}

int raw_read(FILE *f, const char *name, raw_sample_fn fn, raw_meta_fn meta, void *ctx,
	     uint64_t *nsamples, struct diag *d)
{
	struct sym_frame *frames = calloc(BPFPY_MAX_DEPTH, sizeof(*frames));
	char *buf = malloc(RAW_MAX_LINE + 1);
	struct raw_rd rd = {0};
	uint64_t lineno = 0;
	int rc = -1;

	*nsamples = 0;
	if (!frames || !buf) {
		diag_errno(d, ENOMEM, "%s", name);
		goto out;
	}
	for (;;) {
		struct sym_sample s;
		struct raw_meta m;
		const char *why = NULL;
		size_t len = 0;
		int c = EOF, oom = 0, r;

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
		if (buf[0] != '#' && rd.src_file) {
			why = "#src (fewer #sl lines than it says)";
			goto bad;
		}
		if (buf[0] != '#') {
			if (parse_sample(buf, len, &s, frames, &rd, &why))
				goto bad;
			(*nsamples)++;
			r = fn(ctx, &s, rd.have_w ? rd.weight_ns : 0, rd.have_w ? rd.reason : 0);
			rd.have_w = 0;
			if (r)
				goto out;
			continue;
		}
		if (check_bytes(buf, len, &why))
			goto bad;
		if (lineno == 1 && !strncmp(buf, "#bpfpy ", 7)) {
			if (parse_header(buf, &m, &why))
				goto bad;
			r = 1;
		} else {
			r = parse_meta(&rd, buf, &m, &why, &oom);
		}
		if (r < 0 && oom) {
			diag_errno(d, ENOMEM, "%s:%llu", name, (unsigned long long)lineno);
			goto out;
		}
		if (r < 0)
			goto bad;
		if (r > 0) {
			int stop = meta ? meta(ctx, &m) : 0;

			free((char *)m.name);
			if (stop)
				goto out;
		}
		continue;
	bad:
		diag_set(d, EXIT_USAGE, "%s:%llu: bad %s: not bpfpy raw", name,
			 (unsigned long long)lineno, why);
		goto out;
	}
	if (rd.src_file) {
		diag_set(d, EXIT_USAGE,
			 "%s: the last #src has fewer #sl lines than it says: not bpfpy raw", name);
		goto out;
	}
	rc = 0;
out:
	rd_free(&rd);
	free(frames);
	free(buf);
	return rc;
}

/* The input: a regular file, opened without following a symlink's target
 * into a FIFO or a device that would block or never end. */
FILE *profile_open_input(const char *path, struct diag *d)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	FILE *f;

	if (fd < 0) {
		diag_errno(d, errno, "%s", path);
		if (errno == ENOENT || errno == EISDIR)
			d->code = EXIT_USAGE;
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		diag_set(d, EXIT_USAGE, "%s: not a regular file", path);
		return NULL;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		diag_errno(d, ENOMEM, "%s", path);
	}
	return f;
}
