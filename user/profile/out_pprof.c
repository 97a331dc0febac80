// SPDX-License-Identifier: MIT
/*
 * pprof: a gzip'd perftools.profiles.Profile (user/profile/gen/profile.proto), as read
 * by `go tool pprof` and most profile viewers.
 *
 * A Python frame maps to one Function (qualname, file, first line) and one
 * Location per (function, line); under no_lines one Location per Function,
 * at its first line. Each stack of each thread is one Sample, leaf first,
 * with values [samples/count, cpu|wall/nanoseconds] and labels pid and tid
 * (numeric), comm, thread "NAME (TID)" and thread_name, so `-tagfocus=tid=N`
 * isolates a thread; then the labels record gives a process (cgroup,
 * container, python_version: profile_set_proc_label) and every sample
 * (host). A stack whose samples differ in their GIL and idle
 * flags is split into one Sample per combination, labelled gil=held and
 * idle=yes where set (absent: not known to hold the GIL, running), so
 * `-tagfocus=gil=held` keeps the holders. A weighted profile (--clock
 * offcpu|wall) has the values [samples/count, cpu/nanoseconds,
 * off-cpu/nanoseconds, wall/nanoseconds] (wall = the sum), the default being
 * off-cpu or wall, and its off-CPU stacks carry off_cpu_reason (they are not
 * split: their intervals weigh differently). Otherwise the default sample
 * type is the count, so what `pprof -top` shows first is exactly what the
 * folded output counts.
 *
 * Function.system_name is left empty: pprof runs its C++ demangler on it
 * and shows every name with '<' in it (`<module>`, `<lambda>`, `<listcomp>`)
 * as "[[python]]" when system_name equals the name.
 */
#include "profile.h"
#include "offcpu.h"
#include "profile.pb-c.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef Perftools__Profiles__Profile PProfile;
typedef Perftools__Profiles__ValueType PValueType;
typedef Perftools__Profiles__Sample PSample;
typedef Perftools__Profiles__Label PLabel;
typedef Perftools__Profiles__Location PLocation;
typedef Perftools__Profiles__Line PLine;
typedef Perftools__Profiles__Function PFunction;
typedef Perftools__Profiles__Mapping PMapping;

/* Everything a Profile points to, freed in one place. */
struct build {
	PProfile prof;
	PValueType vt[5]; /* samples/count, clock|cpu/ns, period type, off-cpu/ns, wall/ns */
	PValueType *vtp[4];
	PMapping *maps; /* [python], each native file, [kernel] */
	PMapping **mapp;
	char **strtab;
	PFunction *funcs;
	PFunction **funcp;
	PLocation *locs;
	PLocation **locp;
	PLine *lines;
	PLine **linep;
	PSample *samples;
	PSample **samplep;
	uint64_t *locids;
	int64_t *values;
	PLabel *labels;		       /* LABELS_THREAD per thread, then gil=held and idle=yes */
	PLabel **labelp;	       /* LABELS_PER per Sample */
	PLabel rlabels[OFFCPU__COUNT]; /* off_cpu_reason=NAME */
	char **tnames;		       /* "NAME (TID)" per thread */
	char **rooted;		       /* per function: source_root + file, or NULL */
	PLabel *plabels;	       /* PROF_PROC_LABELS per thread: its process's */
	PLabel glabels[PROF_LABELS];   /* the profile's own (host) */
	/* The labels a mark function gives the samples it is in, two per
	 * function (key 0: none), and their values' copies: exception=TYPE for
	 * an "[exception TYPE]" mark (record --exception), opcode=NAME and
	 * opcode_base=BASE for an instruction mark (record --opcodes). */
	PLabel *mlabels;
	char **mnames;
};

/* Labels of a thread: pid, tid, comm, thread, thread_name. A Sample's list:
 * those (comm and thread_name where known), then gil, idle or the off-CPU
 * reason where set. */
#define COMBOS	      4 /* bit 0: gil held, bit 1: idle */
#define LABELS_THREAD 5
#define LABELS_PER    (LABELS_THREAD + 2 + MARK_KEYS + PROF_PROC_LABELS + PROF_LABELS)
/* A sample's marks sit between its leaf and its first Python frame with a
 * file: exception, opcode and opcode_base labels are looked for there. */
#define MARK_KEYS   3
#define MARK_LABELS 2 /* per function */
#define EXC_MARK    "[exception "

static void build_free(struct build *b)
{
	free(b->strtab);
	free(b->funcs);
	free(b->funcp);
	free(b->locs);
	free(b->locp);
	free(b->lines);
	free(b->linep);
	free(b->samples);
	free(b->samplep);
	free(b->locids);
	free(b->values);
	free(b->labels);
	free(b->labelp);
	free(b->plabels);
	for (uint32_t i = 0; b->tnames && b->tnames[i] != (char *)-1; i++)
		free(b->tnames[i]);
	free(b->tnames);
	for (uint32_t i = 0; b->rooted && b->rooted[i] != (char *)-1; i++)
		free(b->rooted[i]);
	free(b->rooted);
	for (uint32_t i = 0; b->mnames && b->mnames[i] != (char *)-1; i++)
		free(b->mnames[i]);
	free(b->mnames);
	free(b->mlabels);
	free(b->maps);
	free(b->mapp);
}

int profile_gzip(FILE *f, const uint8_t *data, size_t len)
{
	unsigned char out[65536];
	z_stream z;
	int zrc;

	memset(&z, 0, sizeof(z));
	/* 15 + 16: a gzip wrapper rather than zlib's, as pprof expects. */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -1;
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)len;
	do {
		z.next_out = out;
		z.avail_out = sizeof(out);
		zrc = deflate(&z, Z_FINISH);
		if (zrc == Z_STREAM_ERROR ||
		    fwrite(out, 1, sizeof(out) - z.avail_out, f) != sizeof(out) - z.avail_out) {
			deflateEnd(&z);
			return -1;
		}
	} while (zrc != Z_STREAM_END);
	deflateEnd(&z);
	return 0;
}

/* A native or kernel Location: its file's Mapping, and an address in it
 * (the function's, placed as files whose text has p_vaddr == p_offset are,
 * which is every library a compiler toolchain links). */
static void pprof_native_location(const struct profile *p, const struct prof_func *fn, PLocation *l,
				  uint32_t nmaps)
{
	if (fn->kind == FRAME_KIND_KERNEL) {
		l->mapping_id = nmaps;
		l->address = fn->addr;
	} else if (fn->kind == FRAME_KIND_NATIVE && fn->mapping) {
		const struct prof_mapping *pm = &p->mappings[fn->mapping - 1];

		l->mapping_id = fn->mapping + 1;
		l->address = pm->start - pm->offset + fn->addr;
	}
}

/* The labels of pid's process, into l[PROF_PROC_LABELS] (key 0: none). */
static void pprof_proc_labels(const struct profile *p, uint32_t pid, PLabel *l)
{
	uint32_t n;
	const struct prof_label *pl = profile_proc_labels(p, pid, &n);

	for (uint32_t k = 0; k < PROF_PROC_LABELS; k++) {
		perftools__profiles__label__init(&l[k]);
		if (k < n && pl[k].key) {
			l[k].key = pl[k].key;
			l[k].str = pl[k].value;
		}
	}
}

/* Strings of our own, after the profile's interned ones. */
enum {
	S_SAMPLES,
	S_COUNT,
	S_CLOCK,
	S_NS,
	S_PID,
	S_TID,
	S_COMM,
	S_MAP,
	S_GIL,
	S_HELD,
	S_IDLE,
	S_YES,
	S_CPU,
	S_OFFCPU,
	S_WALL,
	S_THREAD,
	S_THREAD_NAME,
	S_REASON,
	S_KMAP,
	S_EXCEPTION,
	S_OPCODE,
	S_OPCODE_BASE,
	S_REASONS, /* OFFCPU__COUNT names from here */
	S__N = S_REASONS + OFFCPU__COUNT,
};

/* What every step below needs to know about the profile being built. */
struct plan {
	const struct profile *p;
	const struct profile_out_opts *o;
	uint32_t nvals; /* 2, or 4 in a weighted profile */
	/* Mapping ids: 1 [python], 2.. the native files, then [kernel] if a
	 * frame is the kernel's: a Python-only profile keeps its one mapping. */
	uint32_t nmaps;
	uint32_t nloc;
	uint64_t nsamples; /* allocated, then used */
	uint64_t nrooted;
	uint64_t nmark;	      /* the mark labels' strings, after the rooted names */
	uint32_t lgil, lidle; /* the gil=held and idle=yes labels' indices */
	/* Strings: the profile's, ours, then per thread its comm, its "NAME
	 * (TID)" and its name, then the rooted file names, then the values of
	 * the mark labels (exception=TYPE, opcode=NAME, opcode_base=BASE). */
	size_t tstr;
	const char *root; /* --source-root, NULL for none or "/" */
};

#define SID(x) ((int64_t)pl->p->nstrs + (x))

static int build_alloc(struct build *b, struct plan *pl, struct diag *d)
{
	const struct profile *p = pl->p;
	size_t nstr = pl->tstr + 3 * (size_t)p->nthreads + (1 + MARK_LABELS) * (size_t)p->nfuncs;
	uint64_t nlocids = 0;

	/* A location id count that overflows size_t arithmetic is not a
	 * profile anyone can load; no need to guard it separately. */
	for (uint32_t i = 0; i < p->nstacks; i++)
		nlocids += p->stacks[i].nframes;
	pl->nsamples = (uint64_t)p->nstacks * COMBOS;
	b->strtab = calloc(nstr, sizeof(*b->strtab));
	b->funcs = calloc(p->nfuncs + 1, sizeof(*b->funcs));
	b->funcp = calloc(p->nfuncs + 1, sizeof(*b->funcp));
	b->locs = calloc(pl->nloc + 1, sizeof(*b->locs));
	b->locp = calloc(pl->nloc + 1, sizeof(*b->locp));
	b->lines = calloc(pl->nloc + 1, sizeof(*b->lines));
	b->linep = calloc(pl->nloc + 1, sizeof(*b->linep));
	b->samples = calloc(pl->nsamples + 1, sizeof(*b->samples));
	b->samplep = calloc(pl->nsamples + 1, sizeof(*b->samplep));
	b->locids = calloc(nlocids + 1, sizeof(*b->locids));
	b->values = calloc(pl->nvals * pl->nsamples + 1, sizeof(*b->values));
	b->labels = calloc(LABELS_THREAD * (size_t)p->nthreads + 2, sizeof(*b->labels));
	b->labelp = calloc(LABELS_PER * pl->nsamples + 1, sizeof(*b->labelp));
	b->plabels = calloc(PROF_PROC_LABELS * (size_t)p->nthreads + 1, sizeof(*b->plabels));
	b->tnames = calloc(p->nthreads + 1, sizeof(*b->tnames));
	if (b->tnames)
		b->tnames[p->nthreads] = (char *)-1; /* the end, for build_free */
	b->rooted = calloc(p->nfuncs + 1, sizeof(*b->rooted));
	if (b->rooted)
		b->rooted[p->nfuncs] = (char *)-1;
	b->mnames = calloc(MARK_LABELS * (size_t)p->nfuncs + 1, sizeof(*b->mnames));
	if (b->mnames)
		b->mnames[MARK_LABELS * (size_t)p->nfuncs] = (char *)-1;
	b->mlabels = calloc(MARK_LABELS * (size_t)p->nfuncs + 1, sizeof(*b->mlabels));
	b->maps = calloc(pl->nmaps, sizeof(*b->maps));
	b->mapp = calloc(pl->nmaps, sizeof(*b->mapp));
	if (!b->strtab || !b->funcs || !b->funcp || !b->locs || !b->locp || !b->lines ||
	    !b->linep || !b->samples || !b->samplep || !b->locids || !b->values || !b->labels ||
	    !b->labelp || !b->plabels || !b->tnames || !b->rooted || !b->mnames || !b->mlabels ||
	    !b->maps || !b->mapp) {
		diag_errno(d, ENOMEM, "pprof output");
		return -1;
	}
	return 0;
}

static void build_strings(struct build *b, const struct plan *pl)
{
	const struct profile *p = pl->p;
	const char *extra[S_REASONS] = {"samples",
					"count",
					p->clock,
					"nanoseconds",
					"pid",
					"tid",
					"comm",
					"[python]",
					"gil",
					"held",
					"idle",
					"yes",
					"cpu",
					"off-cpu",
					"wall",
					"thread",
					"thread_name",
					"off_cpu_reason",
					"[kernel.kallsyms]",
					"exception",
					"opcode",
					"opcode_base"};

	/* The interned strings already start with "", as pprof requires. */
	for (uint32_t i = 0; i < p->nstrs; i++)
		b->strtab[i] = p->strs[i];
	for (int i = 0; i < S__N; i++)
		b->strtab[p->nstrs + i] =
		    (char *)(i >= S_REASONS ? offcpu_reason_name(i - S_REASONS) : extra[i]);
}

static int build_functions(struct build *b, struct plan *pl, struct diag *d)
{
	const struct profile *p = pl->p;

	for (uint32_t i = 0; i < p->nfuncs; i++) {
		PFunction *fn = &b->funcs[i];

		perftools__profiles__function__init(fn);
		fn->id = i + 1;
		fn->name = p->funcs[i].name;
		fn->system_name = 0; /* see the top of the file */
		fn->filename = p->funcs[i].file;
		/* Absolute names only: "<frozen ...>" and "<string>" are no files. */
		if (pl->root && profile_str(p, p->funcs[i].file)[0] == '/') {
			const char *file = profile_str(p, p->funcs[i].file);
			size_t n = strlen(pl->root) + strlen(file) + 1;
			size_t at = pl->tstr + 3 * (size_t)p->nthreads + pl->nrooted++;

			b->rooted[i] = malloc(n);
			if (!b->rooted[i]) {
				diag_errno(d, ENOMEM, "pprof output");
				return -1;
			}
			/* "/" + "/x" is "//x", harmless; DIR/ + "/x" likewise. */
			snprintf(b->rooted[i], n, "%s%s", pl->root, file);
			b->strtab[at] = b->rooted[i];
			fn->filename = (int64_t)at;
		}
		fn->start_line = p->funcs[i].firstlineno;
		b->funcp[i] = fn;
	}
	return 0;
}

static void build_locations(struct build *b, const struct plan *pl)
{
	const struct profile *p = pl->p;

	for (uint32_t i = 0; i < pl->nloc; i++) {
		PLocation *l = &b->locs[i];
		PLine *ln = &b->lines[i];

		perftools__profiles__location__init(l);
		perftools__profiles__line__init(ln);
		l->id = i + 1;
		l->mapping_id = 1;
		if (pl->o->no_lines) {
			ln->function_id = i + 1;
			ln->line = p->funcs[i].firstlineno;
		} else {
			ln->function_id = p->frames[i].func + 1;
			ln->line = p->frames[i].line;
		}
		pprof_native_location(p, &p->funcs[ln->function_id - 1], l, pl->nmaps);
		b->linep[i] = ln;
		l->n_line = 1;
		l->line = &b->linep[i];
		b->locp[i] = l;
	}
}

/* Label k of function f: key, and a copy of the n bytes of value as its
 * string, after the rooted file names. -1 on ENOMEM. */
static int mark_label(struct build *b, struct plan *pl, uint32_t f, int k, int key,
		      const char *value, size_t n)
{
	size_t at = pl->tstr + 3 * (size_t)pl->p->nthreads + pl->nrooted + pl->nmark++;
	size_t i = MARK_LABELS * (size_t)f + (size_t)k;

	b->mnames[i] = strndup(value, n);
	if (!b->mnames[i])
		return -1;
	b->strtab[at] = b->mnames[i];
	b->mlabels[i].key = SID(key);
	b->mlabels[i].str = (int64_t)at;
	return 0;
}

/* The labels of the mark functions: exception=TYPE for "[exception
 * TYPE]", opcode=NAME and opcode_base=BASE (NAME where not specialized)
 * for an instruction mark (profile_op_func). -1 on ENOMEM. */
static int mark_labels(struct build *b, struct plan *pl)
{
	const struct profile *p = pl->p;
	struct prof_op op;

	for (uint32_t i = 0; i < p->nfuncs; i++) {
		const char *name = profile_str(p, p->funcs[i].name);
		size_t n = strlen(name), e = strlen(EXC_MARK);

		for (int k = 0; k < MARK_LABELS; k++)
			perftools__profiles__label__init(&b->mlabels[MARK_LABELS * i + k]);
		if (p->funcs[i].kind != FRAME_KIND_MARK)
			continue;
		if (profile_op_func(p, i, &op)) {
			if (mark_label(b, pl, i, 0, S_OPCODE, op.name, strlen(op.name)) ||
			    mark_label(b, pl, i, 1, S_OPCODE_BASE, op.base, strlen(op.base)))
				return -1;
		} else if (!strncmp(name, EXC_MARK, e) && name[n - 1] == ']' &&
			   mark_label(b, pl, i, 0, S_EXCEPTION, name + e, n - e - 1)) {
			return -1;
		}
	}
	return 0;
}

/* The shared labels: gil=held, idle=yes, off_cpu_reason=NAME, LABELS_THREAD
 * per thread (shared by all its samples), each thread's process's, and the
 * profile's own. */
static int build_labels(struct build *b, struct plan *pl, struct diag *d)
{
	const struct profile *p = pl->p;
	size_t tstr = pl->tstr;

	perftools__profiles__label__init(&b->labels[pl->lgil]);
	perftools__profiles__label__init(&b->labels[pl->lidle]);
	b->labels[pl->lgil].key = SID(S_GIL);
	b->labels[pl->lgil].str = SID(S_HELD);
	b->labels[pl->lidle].key = SID(S_IDLE);
	b->labels[pl->lidle].str = SID(S_YES);
	for (int r = 0; r < OFFCPU__COUNT; r++) {
		perftools__profiles__label__init(&b->rlabels[r]);
		b->rlabels[r].key = SID(S_REASON);
		b->rlabels[r].str = SID(S_REASONS + r);
	}
	for (uint32_t t = 0; t < p->nthreads; t++) {
		PLabel *l = &b->labels[LABELS_THREAD * t];
		const char *comm = profile_comm(p, p->threads[t].pid);
		const char *tn = p->threads[t].name ? p->threads[t].name : "";

		for (int k = 0; k < LABELS_THREAD; k++)
			perftools__profiles__label__init(&l[k]);
		if (asprintf(&b->tnames[t], "%s (%u)", *tn ? tn : "?", p->threads[t].tid) < 0) {
			b->tnames[t] = NULL;
			diag_errno(d, ENOMEM, "pprof output");
			return -1;
		}
		l[0].key = SID(S_PID);
		l[0].num = p->threads[t].pid;
		l[1].key = SID(S_TID);
		l[1].num = p->threads[t].tid;
		l[2].key = SID(S_COMM);
		b->strtab[tstr + t] = (char *)(comm ? comm : "");
		l[2].str = (int64_t)(tstr + t);
		l[3].key = SID(S_THREAD);
		b->strtab[tstr + p->nthreads + t] = b->tnames[t];
		l[3].str = (int64_t)(tstr + p->nthreads + t);
		l[4].key = SID(S_THREAD_NAME);
		b->strtab[tstr + 2 * p->nthreads + t] = (char *)tn;
		l[4].str = (int64_t)(tstr + 2 * p->nthreads + t);
		pprof_proc_labels(p, p->threads[t].pid, &b->plabels[PROF_PROC_LABELS * t]);
	}
	if (mark_labels(b, pl)) {
		diag_errno(d, ENOMEM, "pprof output");
		return -1;
	}
	for (uint32_t i = 0; i < PROF_LABELS; i++) {
		perftools__profiles__label__init(&b->glabels[i]);
		if (i < p->nlabels) {
			b->glabels[i].key = p->labels[i].key;
			b->glabels[i].str = p->labels[i].value;
		}
	}
	return 0;
}

/* The labels of the marks between a stack's leaf and its first Python
 * frame with a file (an off-CPU reason has none), each key once. */
static void mark_sample_labels(struct build *b, const struct plan *pl, PSample *s,
			       const struct prof_stack *st)
{
	const struct profile *p = pl->p;
	int64_t seen[MARK_KEYS];
	int nseen = 0;

	for (uint32_t j = 0; j < st->nframes; j++) {
		uint32_t f = p->frames[st->frames[j]].func;

		if (p->funcs[f].kind == FRAME_KIND_PYTHON && *profile_str(p, p->funcs[f].file))
			break;
		for (int k = 0; k < MARK_LABELS; k++) {
			PLabel *l = &b->mlabels[MARK_LABELS * f + k];
			int dup = 0;

			for (int q = 0; q < nseen; q++)
				dup |= seen[q] == l->key;
			if (!l->key || dup || nseen == MARK_KEYS)
				continue;
			seen[nseen++] = l->key;
			s->label[s->n_label++] = l;
		}
	}
}

/* A Sample's labels: its thread's (comm and thread_name where known), gil,
 * idle or the off-CPU reason where set, its process's, the profile's. */
static void sample_labels(struct build *b, const struct plan *pl, PSample *s,
			  const struct prof_stack *st, int combo, int whole)
{
	const PLabel *tl = &b->labels[LABELS_THREAD * st->thread];

	s->n_label = 0;
	s->label[s->n_label++] = (PLabel *)&tl[0];
	s->label[s->n_label++] = (PLabel *)&tl[1];
	if (*b->strtab[tl[2].str])
		s->label[s->n_label++] = (PLabel *)&tl[2];
	s->label[s->n_label++] = (PLabel *)&tl[3];
	if (*b->strtab[tl[4].str])
		s->label[s->n_label++] = (PLabel *)&tl[4];
	if (combo & 1)
		s->label[s->n_label++] = &b->labels[pl->lgil];
	if (combo & 2)
		s->label[s->n_label++] = &b->labels[pl->lidle];
	if (whole && st->offcpu_reason < OFFCPU__COUNT)
		s->label[s->n_label++] = &b->rlabels[st->offcpu_reason];
	mark_sample_labels(b, pl, s, st);
	for (int k = 0; k < PROF_PROC_LABELS; k++) {
		PLabel *l = &b->plabels[PROF_PROC_LABELS * st->thread + k];

		if (l->key)
			s->label[s->n_label++] = l;
	}
	for (uint32_t k = 0; k < pl->p->nlabels && k < PROF_LABELS; k++)
		s->label[s->n_label++] = &b->glabels[k];
}

/* Each stack as one Sample per GIL/idle combination present. */
static void build_samples(struct build *b, struct plan *pl)
{
	const struct profile *p = pl->p;
	uint64_t at = 0, nsamples = 0;

	for (uint32_t i = 0; i < p->nstacks; i++) {
		const struct prof_stack *st = &p->stacks[i];
		uint64_t *ids = &b->locids[at];
		/* Samples per combination: neither, gil only, idle only, both. An
		 * off-CPU stack is one Sample: its intervals weigh differently. */
		int whole = p->weighted && st->offcpu_reason;
		uint64_t both = st->ngilidle, n[COMBOS] = {st->count - st->ngil - st->nidle + both,
							   st->ngil - both, st->nidle - both, both};

		if (whole)
			n[0] = st->count, n[1] = n[2] = n[3] = 0;
		for (uint32_t j = 0; j < st->nframes; j++)
			b->locids[at++] = profile_frame_key(p, st->frames[j], pl->o->no_lines) + 1;
		for (int c = 0; c < COMBOS; c++) {
			PSample *s = &b->samples[nsamples];
			int64_t ns;

			/* The stack's own count (trace's counted-only hits have no
			 * flags) must survive even when every split is empty. */
			if (!n[c] && (c || st->count))
				continue;
			perftools__profiles__sample__init(s);
			s->n_location_id = st->nframes;
			s->location_id = ids;
			s->n_value = pl->nvals;
			s->value = &b->values[pl->nvals * nsamples];
			/* On-CPU samples each weigh one period, weighted or not. */
			ns = (int64_t)(whole ? st->weight_ns : n[c] * p->period_ns);
			s->value[0] = (int64_t)n[c];
			s->value[1] = ns;
			if (p->weighted) { /* cpu, off-cpu, wall (= the sum) */
				s->value[1] = st->offcpu_reason ? 0 : ns;
				s->value[2] = st->offcpu_reason ? ns : 0;
				s->value[3] = ns;
			}
			s->label = &b->labelp[LABELS_PER * nsamples];
			sample_labels(b, pl, s, st, c, whole);
			b->samplep[nsamples++] = s;
		}
	}
	pl->nsamples = nsamples;
}

static void build_value_types(struct build *b, const struct plan *pl)
{
	for (int i = 0; i < 5; i++)
		perftools__profiles__value_type__init(&b->vt[i]);
	b->vt[0].type = SID(S_SAMPLES);
	b->vt[0].unit = SID(S_COUNT);
	b->vt[1].type = b->vt[2].type = SID(S_CLOCK);
	b->vt[1].unit = b->vt[2].unit = SID(S_NS);
	b->vtp[0] = &b->vt[0];
	b->vtp[1] = &b->vt[1];
	if (pl->p->weighted) { /* samples/count, cpu/ns, off-cpu/ns, wall/ns */
		b->vt[1].type = SID(S_CPU);
		b->vt[3].type = SID(S_OFFCPU);
		b->vt[4].type = SID(S_WALL);
		b->vt[3].unit = b->vt[4].unit = SID(S_NS);
		b->vtp[2] = &b->vt[3];
		b->vtp[3] = &b->vt[4];
	}
}

/* One mapping that says every location is already symbolized; without it
 * pprof looks for a binary to symbolize against and complains. */
static void build_mappings(struct build *b, const struct plan *pl)
{
	const struct profile *p = pl->p;

	for (uint32_t i = 0; i < pl->nmaps; i++) {
		PMapping *m = &b->maps[i];

		perftools__profiles__mapping__init(m);
		m->id = i + 1;
		m->filename = SID(i ? S_KMAP : S_MAP); /* the files' names below */
		m->has_functions = m->has_filenames = m->has_line_numbers = 1;
		if (i && i <= p->nmappings) { /* a native file: where it was */
			const struct prof_mapping *pm = &p->mappings[i - 1];

			m->filename = pm->file;
			m->build_id = pm->build_id;
			m->memory_start = pm->start;
			m->memory_limit = pm->limit;
			m->file_offset = pm->offset;
			m->has_line_numbers = 0;
		}
		b->mapp[i] = m;
	}
}

/* The Profile message over the tables built above. */
static void build_profile(struct build *b, const struct plan *pl)
{
	const struct profile *p = pl->p;

	perftools__profiles__profile__init(&b->prof);
	b->prof.n_mapping = pl->nmaps;
	b->prof.mapping = b->mapp;
	b->prof.n_sample_type = pl->nvals;
	b->prof.sample_type = b->vtp;
	b->prof.n_sample = pl->nsamples;
	b->prof.sample = b->samplep;
	b->prof.n_location = pl->nloc;
	b->prof.location = b->locp;
	b->prof.n_function = p->nfuncs;
	b->prof.function = b->funcp;
	b->prof.n_string_table = pl->tstr + 3 * (size_t)p->nthreads + pl->nrooted + pl->nmark;
	b->prof.string_table = b->strtab;
	if (p->window_end_ns > p->window_start_ns) { /* record --rotate: its window */
		b->prof.time_nanos = (int64_t)p->window_start_ns + p->realtime_off;
		b->prof.duration_nanos = (int64_t)(p->window_end_ns - p->window_start_ns);
	} else if (p->total) {
		b->prof.time_nanos = (int64_t)p->first_ns + p->realtime_off;
		b->prof.duration_nanos = (int64_t)(p->last_ns - p->first_ns + p->period_ns);
	}
	b->prof.period_type = &b->vt[2];
	b->prof.period = (int64_t)p->period_ns;
	b->prof.default_sample_type = SID(S_SAMPLES);
	if (p->weighted) /* what the profile is about: the off-CPU or the wall time */
		b->prof.default_sample_type = SID(strcmp(p->clock, "offcpu") ? S_WALL : S_OFFCPU);
}

#undef SID

int pprof_write(FILE *f, const struct profile *p, const struct profile_out_opts *o, struct diag *d)
{
	struct plan pl = {
	    .p = p,
	    .o = o,
	    .nvals = p->weighted ? 4 : 2,
	    .nmaps = 1 + p->nmappings,
	    .nloc = o->no_lines ? p->nfuncs : p->nframes,
	    .lgil = LABELS_THREAD * p->nthreads,
	    .lidle = LABELS_THREAD * p->nthreads + 1,
	    .tstr = p->nstrs + S__N,
	    .root = o->source_root && *o->source_root && strcmp(o->source_root, "/")
			? o->source_root
			: NULL,
	};
	struct build b;
	uint8_t *buf = NULL;
	size_t len;
	int rc = -1;

	for (uint32_t i = 0; i < p->nfuncs; i++)
		if (p->funcs[i].kind == FRAME_KIND_KERNEL) {
			pl.nmaps++;
			break;
		}
	memset(&b, 0, sizeof(b));
	if (build_alloc(&b, &pl, d))
		goto out;
	build_strings(&b, &pl);
	if (build_functions(&b, &pl, d) || build_labels(&b, &pl, d))
		goto out;
	build_locations(&b, &pl);
	build_samples(&b, &pl);
	build_value_types(&b, &pl);
	build_mappings(&b, &pl);
	build_profile(&b, &pl);

	len = protobuf_c_message_get_packed_size(&b.prof.base);
	buf = malloc(len ? len : 1);
	if (!buf) {
		diag_errno(d, ENOMEM, "pprof output (%zu bytes)", len);
		goto out;
	}
	protobuf_c_message_pack(&b.prof.base, buf);
	if (profile_gzip(f, buf, len) || ferror(f)) {
		diag_errno(d, errno ? errno : EIO, "writing pprof profile");
		goto out;
	}
	rc = 0;
out:
	free(buf);
	build_free(&b);
	return rc;
}
