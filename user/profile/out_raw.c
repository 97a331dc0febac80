// SPDX-License-Identifier: MIT
/*
 * The raw format: every sample, in the order it was taken, nothing merged.
 * Tests and the oracle compare it sample by sample, so its grammar is fixed:
 *
 *   file   := *line
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
 */
#include "profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void put_clean(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		putc(c == ';' ? ':' : (c < 0x20 || c == 0x7f) ? ' ' : c, f);
	}
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
	struct ord_ref *refs;
	uint64_t n = 0;

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
	for (uint64_t i = 0; i < n; i++) {
		const struct prof_ord *o = refs[i].o;
		const struct prof_stack *st = &p->stacks[o->stack];
		const struct prof_thread *t = &p->threads[refs[i].thread];
		uint32_t nf = st->nframes;

		/* profile_add() put a marker at the root of truncated stacks;
		 * the raw stream shows what was sampled. */
		if ((o->flags & SAMPLE_TRUNCATED) && nf)
			nf--;
		put_head(f, o->ts_ns, t->pid, t->tid, o->cpu, o->flags);
		if (!nf)
			putc('-', f);
		for (uint32_t j = 0; j < nf; j++) {
			const struct prof_frame *fr = &p->frames[st->frames[j]];
			const struct prof_func *fn = &p->funcs[fr->func];

			if (j)
				putc(';', f);
			put_clean(f, profile_str(p, fn->name));
			fputs(" (", f);
			put_clean(f, profile_str(p, fn->file));
			fprintf(f, ":%d)", fr->line);
			put_kind(f, (int)fn->kind);
		}
		putc('\n', f);
	}
	free(refs);
	if (ferror(f))
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
	if (fclose(m)) {
		free(buf);
		return NULL;
	}
	*len = (uint32_t)size;
	return buf;
}

int raw_stream_sample(struct raw_stream *rs, const struct profile *p, uint32_t stack,
		      const struct sym_sample *s)
{
	const struct prof_stack *st = &p->stacks[stack];
	uint32_t nf = st->nframes;

	if ((s->flags & SAMPLE_TRUNCATED) && nf) /* the marker is not sampled */
		nf--;
	if (rs->cap < p->nframes) {
		uint32_t ncap = rs->cap ? rs->cap : 256;
		char **nt;
		uint32_t *nl;

		while (ncap < p->nframes)
			ncap *= 2;
		nt = realloc(rs->text, ncap * sizeof(*nt));
		if (nt)
			rs->text = nt;
		nl = nt ? realloc(rs->len, ncap * sizeof(*nl)) : NULL;
		if (!nl)
			return -1;
		rs->len = nl;
		memset(rs->text + rs->cap, 0, (ncap - rs->cap) * sizeof(*nt));
		rs->cap = ncap;
	}
	/* The frames go out in one write: the line is built in rs->line. */
	put_head(rs->f, s->ts_ns, s->pid, s->tid, s->cpu, s->flags);
	if (!nf)
		putc('-', rs->f);
	for (uint32_t j = 0, used = 0; j < nf; j++) {
		uint32_t id = st->frames[j], need;

		if (!rs->text[id] && !(rs->text[id] = frame_text(p, id, &rs->len[id])))
			return -1;
		need = used + rs->len[id] + 2;
		if (need > rs->line_cap) {
			size_t ncap = rs->line_cap ? rs->line_cap * 2 : 16384;
			char *nl;

			while (ncap < need)
				ncap *= 2;
			nl = realloc(rs->line, ncap);
			if (!nl)
				return -1;
			rs->line = nl;
			rs->line_cap = ncap;
		}
		if (j)
			rs->line[used++] = ';';
		memcpy(rs->line + used, rs->text[id], rs->len[id]);
		used += rs->len[id];
		if (j + 1 == nf)
			fwrite(rs->line, 1, used, rs->f);
	}
	putc('\n', rs->f);
	return ferror(rs->f) ? -1 : 0;
}

void raw_stream_free(struct raw_stream *rs)
{
	for (uint32_t i = 0; i < rs->cap; i++)
		free(rs->text[i]);
	free(rs->text);
	free(rs->len);
	free(rs->line);
	rs->line = NULL;
	rs->line_cap = 0;
	rs->text = NULL;
	rs->len = NULL;
	rs->cap = 0;
}
