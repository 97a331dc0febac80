// SPDX-License-Identifier: MIT
/*
 * The profile as Python's pstats module loads it (pstats.Stats(FILE), and
 * so snakeviz, gprof2dot, tuna...): what cProfile's dump_stats() writes, a
 * marshal'd dict
 *
 *   {(file, line, funcname): (cc, nc, tt, ct, {caller: (cc, nc, tt, ct)})}
 *
 * cProfile counts calls and times them; a sampler sees stacks. What each
 * number means here (docs/formats.md):
 *
 *   key  a function: (file, first line, qualname) of Python code; native
 *        and kernel frames ("~", 0, "<name (lib) [native]>"), as cProfile
 *        names built-ins, and markers ("~", 0, "[truncated]", "[gc]",
 *        "[op NAME]": every mark, whatever file it carries);
 *   cc   samples with the function on the stack (once per sample, however
 *        deep it recurses): pstats' "primitive calls";
 *   nc   the function's frames in those samples (a frame of each level of
 *        recursion): "ncalls" shows nc/cc where they differ, as cProfile
 *        does for recursion;
 *   tt   self seconds: the sampled time with the function as the leaf;
 *   ct   inclusive seconds: the sampled time with it anywhere on the stack,
 *        once per sample, as cProfile counts recursion;
 *   callers: the same four for each function directly above it (an edge
 *        caller -> function of the stacks), tt for the samples where the
 *        function was the leaf.
 *
 * A sample's seconds are its weight: one period of the clock (the cpu and
 * wall clocks' samples), or its interval's nanoseconds in a weighted
 * profile (--clock offcpu and wall's off-CPU intervals). A trace profile
 * (hits at probes, no period) has its hits as the counts and 0 seconds. Times are summed
 * in nanoseconds and turned into float seconds once, so the file is the
 * same whatever the order of the stacks. Keys are written sorted, so equal
 * profiles make equal bytes (convert's promise).
 *
 * Names are the target's: text_escape'd (controls and bytes that are not
 * UTF-8 become \xNN), so that every string is valid UTF-8 (marshal refuses
 * anything else) and pstats' printouts do not carry a target's escape
 * sequences to a terminal. The marshal types used (dict, tuple, str, int,
 * long, binary float) are those every Python 3 reads.
 */
#include "id_map.h"
#include "profile.h"
#include "text_escape.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A name is at most 4096 bytes (profile_label's bound), escaped at most 4
 * bytes a byte. */
#define PSTATS_NAME_MAX (4 * 4096 + 1)

struct pst_func {
	char *file, *name;
	int line;
	uint32_t id; /* index into funcs of the profile */
};

struct pst_stat {
	uint64_t cc, nc, tt_ns, ct_ns;
	uint64_t self; /* samples with it as the leaf: the order, not written */
	uint32_t seen; /* stack index + 1 that counted cc and ct last */
};

struct pst_edge {
	uint32_t callee, caller; /* groups */
	struct pst_stat s;
};

static int func_cmp(const void *a, const void *b)
{
	const struct pst_func *x = a, *y = b;
	int c = strcmp(x->file, y->file);

	if (c)
		return c;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Hottest first: pstats lists entries in the file's order until told to
 * sort, so print_stats(5) shows the five functions with most self time;
 * ties (a trace profile has hits, no time: all 0) by self samples, then
 * inclusive time and samples, then by key, so the order is canonical. */
static const struct pst_stat *order_g;

static int hot_cmp(const void *a, const void *b)
{
	const struct pst_stat *x = &order_g[*(const uint32_t *)a],
			      *y = &order_g[*(const uint32_t *)b];

	if (x->tt_ns != y->tt_ns)
		return x->tt_ns > y->tt_ns ? -1 : 1;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->ct_ns != y->ct_ns)
		return x->ct_ns > y->ct_ns ? -1 : 1;
	if (x->cc != y->cc)
		return x->cc > y->cc ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int edge_cmp(const void *a, const void *b)
{
	const struct pst_edge *x = a, *y = b;

	if (x->callee != y->callee)
		return x->callee < y->callee ? -1 : 1;
	return x->caller < y->caller ? -1 : x->caller > y->caller;
}

/* The (file, line, name) cProfile would give fn: see the top of the file. */
static int func_key(const struct profile *p, uint32_t id, struct pst_func *out, char *buf)
{
	const struct prof_func *fn = &p->funcs[id];
	const char *name = profile_str(p, fn->name), *file = profile_str(p, fn->file);
	char label[4096];

	out->id = id;
	out->line = 0;
	if (fn->kind == FRAME_KIND_NATIVE || fn->kind == FRAME_KIND_KERNEL) {
		profile_label(label, sizeof(label), name, file, 0, (int)fn->kind, 1);
		buf[0] = '<';
		text_escape(buf + 1, PSTATS_NAME_MAX - 2, label, 0);
		strcat(buf, ">");
		out->name = strdup(buf);
		out->file = strdup("~");
	} else {
		/* Marks are "~" markers, whatever file they carry (an
		 * instruction mark has its Python frame's). */
		int own = *file && fn->kind != FRAME_KIND_MARK;

		text_escape(buf, PSTATS_NAME_MAX, name, 0);
		out->name = strdup(buf);
		text_escape(buf, PSTATS_NAME_MAX, own ? file : "~", 0);
		out->file = strdup(buf);
		out->line = own ? fn->firstlineno : 0;
	}
	return out->name && out->file ? 0 : -1;
}

/* marshal: little-endian int32 after the type byte. */
static void m_i32(FILE *f, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		putc((int)(v >> (8 * i)) & 0xff, f);
}

static void m_int(FILE *f, uint64_t v)
{
	uint32_t nd = 0;

	if (v <= INT32_MAX) {
		putc('i', f);
		m_i32(f, (uint32_t)v);
		return;
	}
	/* TYPE_LONG: a count of 15-bit digits, then the digits, least first. */
	for (uint64_t t = v; t; t >>= 15)
		nd++;
	putc('l', f);
	m_i32(f, nd);
	for (; v; v >>= 15) {
		putc((int)(v & 0xff), f);
		putc((int)((v >> 8) & 0x7f), f);
	}
}

static void m_seconds(FILE *f, uint64_t ns)
{
	double s = ns / 1e9;
	uint64_t bits;

	memcpy(&bits, &s, sizeof(bits));
	putc('g', f); /* TYPE_BINARY_FLOAT: the IEEE double, little-endian */
	for (int i = 0; i < 8; i++)
		putc((int)(bits >> (8 * i)) & 0xff, f);
}

static void m_str(FILE *f, const char *s)
{
	size_t n = strlen(s);

	putc('u', f);
	m_i32(f, (uint32_t)n);
	fwrite(s, 1, n, f);
}

static void m_key(FILE *f, const struct pst_func *k)
{
	putc('(', f);
	m_i32(f, 3);
	m_str(f, k->file);
	m_int(f, (uint64_t)(k->line > 0 ? k->line : 0));
	m_str(f, k->name);
}

static void m_stat(FILE *f, const struct pst_stat *s, int with_callers)
{
	putc('(', f);
	m_i32(f, with_callers ? 5 : 4);
	m_int(f, s->cc);
	m_int(f, s->nc);
	m_seconds(f, s->tt_ns);
	m_seconds(f, s->ct_ns);
}

/* Count the stack, leaf first, into the groups' and the edges' stats. */
static int count_stack(const struct profile *p, uint32_t si, const uint32_t *group,
		       struct pst_stat *g, struct id_map *em, struct pst_edge **edges,
		       uint32_t *cap)
{
	const struct prof_stack *st = &p->stacks[si];
	uint64_t n = st->count;
	uint64_t w = p->weighted ? st->weight_ns : st->count * p->period_ns;

	if (!st->nframes)
		return 0;
	g[group[p->frames[st->frames[0]].func]].tt_ns += w;
	g[group[p->frames[st->frames[0]].func]].self += n;
	for (uint32_t j = 0; j < st->nframes; j++) {
		uint32_t callee = group[p->frames[st->frames[j]].func], caller;
		struct pst_stat *s = &g[callee];
		int fresh;
		int64_t e;

		s->nc += n;
		if (s->seen != si + 1) {
			s->seen = si + 1;
			s->cc += n;
			s->ct_ns += w;
		}
		if (j + 1 == st->nframes)
			break;
		caller = group[p->frames[st->frames[j + 1]].func];
		e = id_map_intern(em, (uint64_t)callee << 32 | caller, &fresh);
		if (e < 0)
			return -1;
		if (fresh) {
			if ((uint32_t)e == *cap) {
				uint32_t nc = *cap ? *cap * 2 : 1024;
				struct pst_edge *ne = realloc(*edges, nc * sizeof(*ne));

				if (!ne)
					return -1;
				*edges = ne;
				*cap = nc;
			}
			(*edges)[e] = (struct pst_edge){callee, caller, {0}};
		}
		s = &(*edges)[e].s;
		s->nc += n;
		if (j == 0)
			s->tt_ns += w;
		if (s->seen != si + 1) {
			s->seen = si + 1;
			s->cc += n;
			s->ct_ns += w;
		}
	}
	return 0;
}

int pstats_write(FILE *f, const struct profile *p, const struct profile_out_opts *o, struct diag *d)
{
	struct pst_func *keys = calloc(p->nfuncs ? p->nfuncs : 1, sizeof(*keys));
	uint32_t *group = calloc(p->nfuncs ? p->nfuncs : 1, sizeof(*group));
	uint32_t *rep = calloc(p->nfuncs ? p->nfuncs : 1, sizeof(*rep));
	struct pst_stat *g = calloc(p->nfuncs ? p->nfuncs : 1, sizeof(*g));
	char *buf = malloc(PSTATS_NAME_MAX);
	struct pst_edge *edges = NULL;
	struct id_map em = {0};
	uint32_t ngroups = 0, cap = 0, ne, *first = NULL, *order = NULL;
	int rc = -1;

	(void)o; /* pstats has neither threads nor lines: one row a function */
	if (!keys || !group || !rep || !g || !buf)
		goto oom;
	for (uint32_t i = 0; i < p->nfuncs; i++)
		if (func_key(p, i, &keys[i], buf))
			goto oom;
	/* Functions that make the same key (one native symbol of two
	 * processes) are one entry: marshal would keep only the last. */
	qsort(keys, p->nfuncs, sizeof(*keys), func_cmp);
	for (uint32_t i = 0; i < p->nfuncs; i++) {
		if (!i || func_cmp(&keys[i - 1], &keys[i]))
			rep[ngroups++] = i; /* the group's first key stands for it */
		group[keys[i].id] = ngroups - 1;
	}
	for (uint32_t si = 0; si < p->nstacks; si++)
		if (count_stack(p, si, group, g, &em, &edges, &cap))
			goto oom;
	ne = em.n;
	qsort(edges, ne, sizeof(*edges), edge_cmp);
	/* By group, where each group's callers start in edges. */
	first = calloc(ngroups + 1, sizeof(*first));
	order = calloc(ngroups ? ngroups : 1, sizeof(*order));
	if (!first || !order)
		goto oom;
	for (uint32_t e = ne; e-- > 0;)
		first[edges[e].callee] = e;
	for (uint32_t k = 0; k < ngroups; k++)
		order[k] = k;
	order_g = g;
	qsort(order, ngroups, sizeof(*order), hot_cmp);

	putc('{', f);
	for (uint32_t i = 0; i < ngroups; i++) {
		uint32_t k = order[i];

		if (!g[k].nc)
			continue;
		m_key(f, &keys[rep[k]]);
		m_stat(f, &g[k], 1);
		putc('{', f);
		for (uint32_t e = first[k]; e < ne && edges[e].callee == k; e++) {
			m_key(f, &keys[rep[edges[e].caller]]);
			m_stat(f, &edges[e].s, 0);
		}
		putc('0', f); /* TYPE_NULL ends a dict */
	}
	putc('0', f);
	/* Still written (convert's byte-for-byte promise), but pstats.Stats
	 * raises TypeError on an empty dict: say why before someone asks. */
	if (!ngroups || !p->nstacks)
		fprintf(stderr, "bpfpy: pstats output: no samples with frames; pstats.Stats "
				"refuses an empty profile\n");
	if (ferror(f)) {
		diag_errno(d, errno ? errno : EIO, "writing pstats");
		goto out;
	}
	rc = 0;
	goto out;
oom:
	diag_errno(d, ENOMEM, "pstats output");
out:
	for (uint32_t i = 0; keys && i < p->nfuncs; i++) {
		free(keys[i].file);
		free(keys[i].name);
	}
	free(keys);
	free(group);
	free(rep);
	free(first);
	free(order);
	free(g);
	free(buf);
	free(edges);
	id_map_free(&em);
	return rc;
}
