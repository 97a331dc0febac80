// SPDX-License-Identifier: MIT
/*
 * The raw format: every sample, in the order it was taken, nothing merged.
 * Tests and the oracle compare it sample by sample, so its grammar is fixed:
 *
 *   file   := [header] *(line | meta)
 *   line   := ts_ns SP pid SP tid SP cpu SP flags SP stack LF
 *   ts_ns  := decimal      -- bpf_ktime_get_ns(), CLOCK_MONOTONIC
 *   pid, tid, cpu := decimal  -- host ids
 *   flags  := decimal      -- SAMPLE_* bits of bpf/bpfpy.h
 *   stack  := "-" | frame *( ";" frame )   -- LEAF FIRST; "-": no frames
 *   frame  := qualname " (" file ":" line ")" [kind]
 *   kind   := " [native]" | " [kernel]"   -- --native/--kernel: file is
 *             the library (module, "" for vmlinux), line 0
 *   line   := decimal, possibly negative (-1: before the first instruction)
 *
 * The first five fields never contain a space, so a reader splits on the
 * first five spaces and takes the rest as the stack. In qualname and file
 * ';' is written as ':' and control characters as spaces, so ';' and LF
 * keep their meaning. A SAMPLE_TRUNCATED stack is written as sampled (its
 * leaf part): the flag says so.
 *
 * Version 2 adds what the other writers read and a sample line cannot say,
 * in lines that start with '#' (a sample line never does), so that a reader
 * that skips '#' lines reads the samples of either version alike, and a
 * reader of version 2 skips a '#' line of a kind it does not know:
 *
 *   header := "#bpfpy raw 2 clock=" ("cpu"|"wall"|"offcpu") " period_ns=" decimal
 *             " weighted=" ("0"|"1") " realtime_off=" sdecimal LF   -- line 1
 *   meta   := "#w" SP weight_ns SP reason LF
 *                 -- the next sample weighs weight_ns (0: one period) and is
 *                    off CPU for reason (enum offcpu_reason; 0: on CPU)
 *           | "#lib" SP id SP start SP limit SP offset SP build_id SP path LF
 *                 -- a native library, ids 1, 2, ... in order; build_id
 *                    lowercase hex or "-"; path escaped (text_escape)
 *           | "#def" SP kind SP firstlineno SP addr SP lib SP frame LF
 *                 -- from here on, frames whose text is frame are of this
 *                    kind (enum frame_kind), first line, address and #lib
 *                    (0: none); a frame no #def named: its text's kind, 0s
 *           | "#exact" SP nlen SP flen SP name SP file SP frame LF
 *           | "#exact" SP "-" SP frame LF
 *                 -- from here on, frames whose text is frame have this name
 *                    and file (escaped, nlen and flen bytes), where the text
 *                    lost them (';' and controls cleaned, " (" in a name);
 *                    "-": the text's again
 *           | "#comm" SP pid SP name LF              -- trailer: process names
 *           | "#thread" SP pid SP tid SP name LF     -- trailer: thread names
 *           | "#source_root" SP name LF     -- trailer: record's --source-root
 *                                              (or its default), for pprof
 *           | "#src" SP nlines SP cut SP name LF *("#sl" SP name LF)
 *                 -- trailer: a source file for the heatmap, name its path,
 *                    then exactly nlines "#sl" lines, its lines 1, 2, ...
 *                    as profile_set_source() kept them; cut 1: lines past
 *                    PROFILE_SOURCE_MAX_LINES were left out (profile.h)
 *           | "#nosrc" SP flen SP name SP name LF
 *                 -- trailer: a file with no source to show: its path
 *                    (escaped, flen bytes), then why
 *   sdecimal := ["-"] decimal;  name := escaped (text_escape), may be empty
 *
 * Numbers are canonical decimals (no sign but sdecimal's, no leading zero).
 * The writer puts a #def only where a frame's facts differ from what the
 * reader would assume, so a stack pays for its first lines once per frame.
 */
#include "profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "native_symbols.h"
#include "text_escape.h"

/* A byte of a name or file as the stack text holds it: ';' separates
 * frames, a control would end or forge a line. */
static int clean_char(unsigned char c)
{
	return c == ';' ? ':' : (c < 0x20 || c == 0x7f) ? ' ' : c;
}

static void put_clean(FILE *f, const char *s)
{
	for (; s && *s; s++)
		putc(clean_char((unsigned char)*s), f);
}

static void put_kind(FILE *f, int kind)
{
	if (kind == FRAME_KIND_NATIVE || kind == FRAME_KIND_KERNEL)
		fputs(kind == FRAME_KIND_NATIVE ? " [native]" : " [kernel]", f);
}

static void put_head(FILE *f, uint64_t ts, uint32_t pid, uint32_t tid, uint32_t cpu, uint32_t flags)
{
	fprintf(f, "%llu %u %u %u %u ", (unsigned long long)ts, pid, tid, cpu, flags);
}

int raw_write_sample(FILE *f, const struct sym_sample *s)
{
	put_head(f, s->ts_ns, s->pid, s->tid, s->cpu, s->flags);
	if (!s->nframes)
		putc('-', f);
	for (uint32_t i = 0; i < s->nframes; i++) {
		const struct sym_frame *fr = &s->frames[i];

		if (i)
			putc(';', f);
		put_clean(f, fr->name && *fr->name ? fr->name : "[unknown]");
		fputs(" (", f);
		put_clean(f, fr->file);
		fprintf(f, ":%d)", fr->line);
		put_kind(f, fr->kind);
	}
	putc('\n', f);
	return ferror(f) ? -1 : 0;
}

/* The def map: open addressing on a 64-bit FNV-1a of the text, entries
 * allocated one by one so that a pointer to one stays valid. */
struct raw_defent {
	struct raw_def d;
	uint64_t hash;
	uint32_t len;
	char text[];
};

struct raw_defs {
	struct raw_defent **slots;
	uint32_t cap, n;
};

static uint64_t text_hash(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

static struct raw_defent **defs_slot(struct raw_defent **slots, uint32_t cap, uint64_t h,
				     const char *text, size_t len)
{
	for (uint32_t i = (uint32_t)h & (cap - 1);; i = (i + 1) & (cap - 1)) {
		struct raw_defent *e = slots[i];

		if (!e || (e->hash == h && e->len == len && !memcmp(e->text, text, len)))
			return &slots[i];
	}
}

struct raw_def *raw_defs_find(struct raw_defs **mp, const char *text, size_t len, int add)
{
	struct raw_defs *m = *mp;
	uint64_t h = text_hash(text, len);
	struct raw_defent **slot, *e;

	if (m && m->cap && *(slot = defs_slot(m->slots, m->cap, h, text, len)))
		return &(*slot)->d;
	if (!add || len > UINT32_MAX || (m && m->n >= RAW_MAX_DEFS))
		return NULL;
	if (!m && !(m = *mp = calloc(1, sizeof(*m))))
		return NULL;
	if ((m->n + 1) * 2 > m->cap) { /* at most half full */
		uint32_t ncap = m->cap ? m->cap * 2 : 1024;
		struct raw_defent **ns = calloc(ncap, sizeof(*ns));

		if (!ns)
			return NULL;
		for (uint32_t i = 0; i < m->cap; i++)
			if (m->slots[i])
				*defs_slot(ns, ncap, m->slots[i]->hash, m->slots[i]->text,
					   m->slots[i]->len) = m->slots[i];
		free(m->slots);
		m->slots = ns;
		m->cap = ncap;
	}
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return NULL;
	/* kind -1: no #def told anything of this text yet. */
	e->d = (struct raw_def){.kind = -1};
	e->hash = h;
	e->len = (uint32_t)len;
	memcpy(e->text, text, len);
	e->text[len] = 0;
	*defs_slot(m->slots, m->cap, h, text, len) = e;
	m->n++;
	return &e->d;
}

void raw_defs_free(struct raw_defs *m)
{
	if (!m)
		return;
	for (uint32_t i = 0; i < m->cap; i++) {
		if (m->slots[i]) {
			free(m->slots[i]->d.name);
			free(m->slots[i]->d.file);
		}
		free(m->slots[i]);
	}
	free(m->slots);
	free(m);
}

/* The kind a frame's text says (its suffix), which a reader assumes. */
static int text_kind(int kind)
{
	return kind == FRAME_KIND_NATIVE || kind == FRAME_KIND_KERNEL ? kind : FRAME_KIND_PYTHON;
}

/* s as text_escape() writes it, malloc'd (*n its length), or NULL. */
static char *esc_dup(const char *s, size_t *n)
{
	char *buf;

	*n = text_escape(NULL, 0, s, 0);
	buf = malloc(*n + 1);
	if (buf)
		text_escape(buf, *n + 1, s, 0);
	return buf;
}

static void put_name(FILE *f, const char *name)
{
	size_t n;
	char *e = esc_dup(name, &n);

	fputs(e ? e : "", f);
	free(e);
}

/* Whether a frame's text loses something of its name or file: cleaned
 * bytes, or a " (" in the name, where a reader splits the text. */
static int text_loses(const char *name, const char *file)
{
	for (const char *s = name; s && *s; s++)
		if (clean_char((unsigned char)*s) != (unsigned char)*s || !strncmp(s, " (", 2))
			return 1;
	for (const char *s = file; s && *s; s++)
		if (clean_char((unsigned char)*s) != (unsigned char)*s)
			return 1;
	return 0;
}

static int same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/*
 * Tell the reader a frame's facts, unless what it assumes is them: #def
 * for kind, first line, address and library, #exact for a name or file
 * the text does not hold as it is (want's name and file: NULL, or the
 * true ones). 0, or -1 on ENOMEM.
 */
static int stream_def(struct raw_stream *rs, struct raw_def *told, const struct raw_def *want,
		      const char *text, size_t len)
{
	if (!(told->kind < 0
		  ? (want->kind == text_kind(want->kind) && !want->firstlineno && !want->addr &&
		     !want->lib)
		  : (told->kind == want->kind && told->firstlineno == want->firstlineno &&
		     told->addr == want->addr && told->lib == want->lib))) {
		told->kind = want->kind;
		told->firstlineno = want->firstlineno;
		told->addr = want->addr;
		told->lib = want->lib;
		fprintf(rs->f, "#def %d %d %llu %u ", want->kind, want->firstlineno,
			(unsigned long long)want->addr, want->lib);
		fwrite(text, 1, len, rs->f);
		putc('\n', rs->f);
	}
	if (!same_str(told->name, want->name) || !same_str(told->file, want->file)) {
		size_t nn = 0, nf = 0;
		char *n = want->name ? strdup(want->name) : NULL;
		char *f = want->file ? strdup(want->file) : NULL;
		char *en = n ? esc_dup(n, &nn) : NULL, *ef = f ? esc_dup(f, &nf) : NULL;

		if (!!want->name != !!en || !!want->file != !!ef || !!n != !!f) {
			free(n), free(f), free(en), free(ef);
			return -1;
		}
		free(told->name);
		free(told->file);
		told->name = n;
		told->file = f;
		if (n)
			fprintf(rs->f, "#exact %zu %zu %s %s ", nn, nf, en, ef);
		else
			fputs("#exact - ", rs->f);
		fwrite(text, 1, len, rs->f);
		putc('\n', rs->f);
		free(en);
		free(ef);
	}
	return 0;
}

/* The #lib id of a native library (key: anything that names it for the
 * stream's life), its line written the first time: 0 on ENOMEM. */
static uint32_t stream_lib(struct raw_stream *rs, const void *key, const char *path,
			   const char *build_id, uint64_t start, uint64_t limit, uint64_t offset)
{
	for (uint32_t i = 0; i < rs->nlibs; i++)
		if (rs->libs[i] == key)
			return i + 1;
	if (rs->nlibs == rs->cap_libs) {
		uint32_t ncap = rs->cap_libs ? rs->cap_libs * 2 : 16;
		const void **nl = realloc(rs->libs, ncap * sizeof(*nl));

		if (!nl)
			return 0;
		rs->libs = nl;
		rs->cap_libs = ncap;
	}
	rs->libs[rs->nlibs++] = key;
	fprintf(rs->f, "#lib %u %llu %llu %llu %s ", rs->nlibs, (unsigned long long)start,
		(unsigned long long)limit, (unsigned long long)offset,
		build_id && *build_id ? build_id : "-");
	put_name(rs->f, path ? path : "");
	putc('\n', rs->f);
	return rs->nlibs;
}

static void stream_weight(struct raw_stream *rs, uint64_t weight_ns, uint32_t reason)
{
	if (rs->meta && (weight_ns || reason))
		fprintf(rs->f, "#w %llu %u\n", (unsigned long long)weight_ns, reason);
}

static int raw_put_sources(FILE *f, const struct profile *p);

int raw_stream_begin(struct raw_stream *rs, const struct profile *p)
{
	rs->meta = 1;
	fprintf(rs->f, "#bpfpy raw 2 clock=%s period_ns=%llu weighted=%d realtime_off=%lld\n",
		p->clock, (unsigned long long)p->period_ns, !!p->weighted,
		(long long)p->realtime_off);
	return ferror(rs->f) ? -1 : 0;
}

int raw_stream_end(struct raw_stream *rs, const struct profile *p, const char *source_root)
{
	if (!rs->meta)
		return 0;
	for (uint32_t i = 0; i < p->ncomms; i++) {
		if (!p->comms[i].name) /* labels only */
			continue;
		fprintf(rs->f, "#comm %u ", p->comms[i].pid);
		put_name(rs->f, p->comms[i].name);
		putc('\n', rs->f);
	}
	for (uint32_t i = 0; i < p->nthreads; i++) {
		if (!p->threads[i].name)
			continue;
		fprintf(rs->f, "#thread %u %u ", p->threads[i].pid, p->threads[i].tid);
		put_name(rs->f, p->threads[i].name);
		putc('\n', rs->f);
	}
	if (source_root && *source_root) {
		fputs("#source_root ", rs->f);
		put_name(rs->f, source_root);
		putc('\n', rs->f);
	}
	return raw_put_sources(rs->f, p);
}

/* The sources the heatmap shows (profile.h): "#src", its lines, or "#nosrc". */
static int raw_put_sources(FILE *f, const struct profile *p)
{
	for (uint32_t i = 0; i < p->nsources; i++) {
		const struct prof_source *src = &p->sources[i];
		const char *file = profile_str(p, src->file);

		if (src->why) {
			size_t n;
			char *e = esc_dup(file, &n);

			if (!e)
				return -1;
			fprintf(f, "#nosrc %zu %s ", n, e);
			free(e);
			put_name(f, src->why);
			putc('\n', f);
			continue;
		}
		fprintf(f, "#src %u %d ", src->nlines, src->cut);
		put_name(f, file);
		putc('\n', f);
		for (uint32_t l = 1; l <= src->nlines; l++) {
			fputs("#sl ", f);
			put_name(f, profile_source_line(src, l));
			putc('\n', f);
		}
	}
	return ferror(f) ? -1 : 0;
}

/* Room for n more bytes in rs->line, of which used are taken. */
static int line_room(struct raw_stream *rs, size_t used, size_t n)
{
	size_t ncap = rs->line_cap ? rs->line_cap : 16384;
	char *nl;

	if (used + n <= rs->line_cap)
		return 0;
	while (ncap < used + n)
		ncap *= 2;
	nl = realloc(rs->line, ncap);
	if (!nl)
		return -1;
	rs->line = nl;
	rs->line_cap = ncap;
	return 0;
}

/* s's frames as raw_write_sample() writes them, into rs->line from used:
 * the new length, or 0 on ENOMEM. */
static size_t line_clean(struct raw_stream *rs, size_t used, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (line_room(rs, used, n + 1))
		return 0;
	for (size_t i = 0; i < n; i++)
		rs->line[used++] = (char)clean_char((unsigned char)s[i]);
	return used;
}

int raw_stream_write(struct raw_stream *rs, const struct sym_sample *s, uint64_t weight_ns,
		     uint32_t offcpu_reason)
{
	size_t used = 0;

	if (!rs->meta)
		return raw_write_sample(rs->f, s);
	if (s->nframes) {
		uint32_t *off = realloc(rs->off, (s->nframes + 1) * sizeof(*off));

		if (!off)
			return -1;
		rs->off = off;
	}
	for (uint32_t i = 0; i < s->nframes; i++) {
		const struct sym_frame *fr = &s->frames[i];
		char num[32];
		int n;

		if (i) {
			if (line_room(rs, used, 1))
				return -1;
			rs->line[used++] = ';';
		}
		rs->off[i] = (uint32_t)used;
		used = line_clean(rs, used, fr->name && *fr->name ? fr->name : "[unknown]");
		used = used ? line_clean(rs, used, " (") : 0;
		used = used ? line_clean(rs, used, fr->file) : 0;
		n = snprintf(num, sizeof(num), ":%d)%s", fr->line,
			     fr->kind == FRAME_KIND_NATIVE   ? " [native]"
			     : fr->kind == FRAME_KIND_KERNEL ? " [kernel]"
							     : "");
		used = used ? line_clean(rs, used, num) : 0;
		if (!used || n <= 0)
			return -1;
	}
	if (s->nframes)
		rs->off[s->nframes] = (uint32_t)used + 1; /* as if a ';' followed */
	for (uint32_t i = 0; i < s->nframes; i++) {
		const struct sym_frame *fr = &s->frames[i];
		const struct native_lib *l = fr->lib;
		size_t len = rs->off[i + 1] - 1 - rs->off[i];
		struct raw_def want = {fr->kind, fr->firstlineno, fr->addr, 0, NULL, NULL};
		struct raw_def *told = raw_defs_find(&rs->defs, rs->line + rs->off[i], len, 1);

		if (text_loses(fr->name, fr->file)) {
			want.name = (char *)(fr->name && *fr->name ? fr->name : "[unknown]");
			want.file = (char *)(fr->file ? fr->file : "");
		}

		if (l && !(want.lib = stream_lib(rs, l, l->path, l->build_id, l->start, l->limit,
						 l->offset)))
			return -1;
		if (!told || stream_def(rs, told, &want, rs->line + rs->off[i], len))
			return -1;
	}
	stream_weight(rs, weight_ns, offcpu_reason);
	put_head(rs->f, s->ts_ns, s->pid, s->tid, s->cpu, s->flags);
	if (s->nframes)
		fwrite(rs->line, 1, used, rs->f);
	else
		putc('-', rs->f);
	putc('\n', rs->f);
	return ferror(rs->f) ? -1 : 0;
}

static int stream_sample(struct raw_stream *rs, const struct profile *p, uint32_t stack,
			 const struct sym_sample *s, uint64_t weight_ns, uint32_t reason);

struct ord_ref {
	const struct prof_ord *o;
	uint32_t thread;
};

static int ord_cmp(const void *a, const void *b)
{
	const struct ord_ref *x = a, *y = b;

	if (x->o->ts_ns != y->o->ts_ns)
		return x->o->ts_ns < y->o->ts_ns ? -1 : 1;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return x->o < y->o ? -1 : x->o > y->o;
}

int raw_write_profile(FILE *f, const struct profile *p, struct diag *d)
{
	struct raw_stream rs = {.f = f};
	struct ord_ref *refs;
	uint64_t n = 0;
	int rc;

	if (p->nordered < p->total)
		return diag_set(d, EXIT_USAGE,
				"raw output: %llu of %llu samples were only aggregated (past the "
				"bound of %llu kept in order); write raw as a stream instead",
				(unsigned long long)(p->total - p->nordered),
				(unsigned long long)p->total, (unsigned long long)p->max_ordered);
	refs = malloc((p->nordered ? p->nordered : 1) * sizeof(*refs));
	if (!refs)
		return diag_errno(d, ENOMEM, "raw output");
	for (uint32_t t = 0; t < p->nthreads; t++)
		for (uint64_t i = 0; i < p->threads[t].norder; i++)
			refs[n++] = (struct ord_ref){&p->threads[t].order[i], t};
	/* Threads were kept apart; the stream is one timeline. */
	qsort(refs, n, sizeof(*refs), ord_cmp);
	rc = raw_stream_begin(&rs, p);
	for (uint64_t i = 0; !rc && i < n; i++) {
		const struct prof_ord *o = refs[i].o;
		const struct prof_stack *st = &p->stacks[o->stack];
		const struct prof_thread *t = &p->threads[refs[i].thread];
		struct sym_sample s = {o->ts_ns, t->pid, t->tid, o->cpu, o->flags, 0, NULL};
		/* A weight of one period is what no weight means. */
		int w = st->offcpu_reason || o->weight_ns != p->period_ns;

		rc = stream_sample(&rs, p, o->stack, &s, w ? o->weight_ns : 0,
				   w ? st->offcpu_reason : 0);
	}
	if (!rc)
		rc = raw_stream_end(&rs, p, NULL);
	raw_stream_free(&rs);
	free(refs);
	if (rc || ferror(f))
		return diag_errno(d, errno ? errno : EIO, "writing raw samples");
	return 0;
}

/* A frame's text as raw_write_sample() writes it, for the stream cache. */
static char *frame_text(const struct profile *p, uint32_t frame, uint32_t *len)
{
	const struct prof_frame *fr = &p->frames[frame];
	const struct prof_func *fn = &p->funcs[fr->func];
	char *buf = NULL;
	size_t size = 0;
	FILE *m = open_memstream(&buf, &size);

	if (!m)
		return NULL;
	put_clean(m, profile_str(p, fn->name));
	fputs(" (", m);
	put_clean(m, profile_str(p, fn->file));
	fprintf(m, ":%d)", fr->line);
	put_kind(m, (int)fn->kind);
	if (fclose(m)) {
		free(buf);
		return NULL;
	}
	*len = (uint32_t)size;
	return buf;
}

/* Version 2: the #def (and #lib) lines frame id of p needs. */
static int stream_frame_def(struct raw_stream *rs, const struct profile *p, uint32_t id)
{
	const struct prof_func *fn = &p->funcs[p->frames[id].func];
	struct raw_def want = {(int)fn->kind, fn->firstlineno, fn->addr, 0, NULL, NULL};

	/* What a frame is never changes: worked out at its first sample, then
	 * only compared with what the reader was told last. */
	if (rs->told[id])
		return stream_def(rs, rs->told[id], &rs->want[id], rs->text[id], rs->len[id]);
	if (!(rs->told[id] = raw_defs_find(&rs->defs, rs->text[id], rs->len[id], 1)))
		return -1;
	if (fn->mapping) {
		const struct prof_mapping *m = &p->mappings[fn->mapping - 1];
		const char *path = profile_str(p, m->file);

		/* The path's string is the profile's for its life: a stable key. */
		want.lib = stream_lib(rs, path, path, profile_str(p, m->build_id), m->start,
				      m->limit, m->offset);
		if (!want.lib)
			return -1;
	}
	if (text_loses(profile_str(p, fn->name), profile_str(p, fn->file))) {
		want.name = (char *)profile_str(p, fn->name);
		want.file = (char *)profile_str(p, fn->file);
	}
	rs->want[id] = want;
	return stream_def(rs, rs->told[id], &rs->want[id], rs->text[id], rs->len[id]);
}

static int stream_sample(struct raw_stream *rs, const struct profile *p, uint32_t stack,
			 const struct sym_sample *s, uint64_t weight_ns, uint32_t reason)
{
	const struct prof_stack *st = &p->stacks[stack];
	uint32_t nf = st->nframes, used = 0;

	if ((s->flags & SAMPLE_TRUNCATED) && nf) /* the marker is not sampled */
		nf--;
	if (rs->cap < p->nframes) {
		uint32_t ncap = rs->cap ? rs->cap : 256;
		char **nt;
		uint32_t *nl;
		struct raw_def **nd, *nw;

		while (ncap < p->nframes)
			ncap *= 2;
		nt = realloc(rs->text, ncap * sizeof(*nt));
		if (nt)
			rs->text = nt;
		nl = nt ? realloc(rs->len, ncap * sizeof(*nl)) : NULL;
		if (nl)
			rs->len = nl;
		nd = nl ? realloc(rs->told, ncap * sizeof(*nd)) : NULL;
		if (nd)
			rs->told = nd;
		nw = nd ? realloc(rs->want, ncap * sizeof(*nw)) : NULL;
		if (!nw)
			return -1;
		rs->want = nw;
		memset(rs->text + rs->cap, 0, (ncap - rs->cap) * sizeof(*nt));
		memset(rs->told + rs->cap, 0, (ncap - rs->cap) * sizeof(*nd));
		rs->cap = ncap;
	}
	/* The frames go out in one write: the line is built in rs->line, and
	 * the #def lines it needs go first. */
	for (uint32_t j = 0; j < nf; j++) {
		uint32_t id = st->frames[j];

		if (!rs->text[id] && !(rs->text[id] = frame_text(p, id, &rs->len[id])))
			return -1;
		if (line_room(rs, used, rs->len[id] + 2))
			return -1;
		if (j)
			rs->line[used++] = ';';
		memcpy(rs->line + used, rs->text[id], rs->len[id]);
		used += rs->len[id];
		if (rs->meta && stream_frame_def(rs, p, id))
			return -1;
	}
	stream_weight(rs, weight_ns, reason);
	put_head(rs->f, s->ts_ns, s->pid, s->tid, s->cpu, s->flags);
	if (nf)
		fwrite(rs->line, 1, used, rs->f);
	else
		putc('-', rs->f);
	putc('\n', rs->f);
	return ferror(rs->f) ? -1 : 0;
}

int raw_stream_sample(struct raw_stream *rs, const struct profile *p, uint32_t stack,
		      const struct sym_sample *s)
{
	return stream_sample(rs, p, stack, s, 0, 0);
}

void raw_stream_free(struct raw_stream *rs)
{
	for (uint32_t i = 0; i < rs->cap; i++)
		free(rs->text[i]);
	free(rs->text);
	free(rs->len);
	free(rs->told);
	free(rs->want);
	free(rs->line);
	free(rs->libs);
	free(rs->off);
	raw_defs_free(rs->defs);
	*rs = (struct raw_stream){.f = rs->f};
}
