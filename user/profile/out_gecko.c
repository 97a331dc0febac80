// SPDX-License-Identifier: MIT
/*
 * The Firefox Profiler's Gecko profile format (what Firefox itself emits,
 * and what profiler.firefox.com imports and upgrades; its schema is the
 * profiler's src/types/gecko-profile.ts, meta.version 27), gzip'd:
 *
 *   meta     version, startTime (ms since the epoch: the first sample's wall
 *            clock), interval (ms: the period), categories, markerSchema,
 *            product, presymbolicated (names are final: nothing to look up)
 *   threads  one per sampled thread (its OS or threading name, pid, tid, the
 *            process's comm as processName), each with its own tables:
 *     samples     [stack, time (ms since startTime), eventDelay (0)], in the
 *                 order they were taken
 *     stackTable  [prefix, frame]: the stacks as a tree, root prefix null
 *     frameTable  [location, relevantForJS, innerWindowID, implementation,
 *                  line, column, category, subcategory]; location is the
 *                  frame's label as in every other format, "qualname
 *                  (file:line)"
 *     markers     [name, startTime, endTime, phase 1 (interval), category,
 *                  data]: one per off-CPU interval (--clock offcpu|wall),
 *                  named "off-CPU: REASON", from the moment the thread left
 *                  the CPU to its return
 *     stringTable the locations, then the markers' names
 *
 * Categories: Python, Native (--native frames), Kernel (--kernel), Off-CPU
 * (the "[off-cpu: ...]" leaves) and Other (markers such as [truncated]).
 *
 * The format has no sample weights: each sample is one tick of the
 * timeline, and an off-CPU interval's length is in its marker. Only the
 * samples kept in time order can be placed on a timeline: past that bound
 * (PROFILE_MAX_ORDERED) the rest is left out, and said so on stderr, as
 * the Chrome writer does. The same profile makes the same bytes (zlib's
 * gzip header carries no time), so convert can promise byte for byte.
 */
#include "id_map.h"
#include "offcpu.h"
#include "profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define GECKO_VERSION 27

enum { CAT_PYTHON, CAT_NATIVE, CAT_KERNEL, CAT_OFFCPU, CAT_OTHER };

static const char categories[] =
    "[{\"name\":\"Python\",\"color\":\"yellow\",\"subcategories\":[\"Other\"]},"
    "{\"name\":\"Native\",\"color\":\"blue\",\"subcategories\":[\"Other\"]},"
    "{\"name\":\"Kernel\",\"color\":\"orange\",\"subcategories\":[\"Other\"]},"
    "{\"name\":\"Off-CPU\",\"color\":\"grey\",\"subcategories\":[\"Other\"]},"
    "{\"name\":\"Other\",\"color\":\"darkgray\",\"subcategories\":[\"Other\"]}]";

/* ns as milliseconds with all their digits: "12.345678". */
static void put_ms(FILE *f, uint64_t ns)
{
	fprintf(f, "%llu.%06llu", (unsigned long long)(ns / 1000000),
		(unsigned long long)(ns % 1000000));
}

struct gk_thread {
	struct id_map frames; /* profile frame key -> local frame */
	struct id_map stacks; /* (prefix + 1) << 32 | local frame -> local stack */
	uint32_t *fkey;	      /* local frame -> profile frame key */
	uint32_t nf, capf;
	uint64_t *st; /* local stack -> (prefix + 1) << 32 | local frame */
	uint32_t capst;
	uint32_t *sample; /* ordered sample -> local stack */
};

static int push32(uint32_t **a, uint32_t *cap, uint32_t n, uint32_t v)
{
	if (n == *cap) {
		uint32_t nc = *cap ? *cap * 2 : 256;
		uint32_t *na = realloc(*a, nc * sizeof(*na));

		if (!na)
			return -1;
		*a = na;
		*cap = nc;
	}
	(*a)[n] = v;
	return 0;
}

/* The local stack of profile stack st, made root first. -1: ENOMEM. */
static int64_t gk_stack(struct gk_thread *g, const struct profile *p, const struct prof_stack *st,
			int no_lines)
{
	int64_t prefix = -1;

	for (uint32_t j = st->nframes; j-- > 0;) {
		uint32_t key = profile_frame_key(p, st->frames[j], no_lines);
		int fresh;
		int64_t fr = id_map_intern(&g->frames, key, &fresh), s;
		uint64_t k;

		if (fr < 0 || (fresh && push32(&g->fkey, &g->capf, g->nf++, key)))
			return -1;
		k = (uint64_t)(prefix + 1) << 32 | (uint64_t)fr;
		s = id_map_intern(&g->stacks, k, &fresh);
		if (s < 0)
			return -1;
		if (fresh) {
			if ((uint32_t)s == g->capst) {
				uint32_t nc = g->capst ? g->capst * 2 : 256;
				uint64_t *na = realloc(g->st, nc * sizeof(*na));

				if (!na)
					return -1;
				g->st = na;
				g->capst = nc;
			}
			g->st[s] = k;
		}
		prefix = s;
	}
	return prefix;
}

static int frame_category(const struct profile *p, uint32_t key, int no_lines)
{
	const struct prof_func *fn = &p->funcs[no_lines ? key : p->frames[key].func];

	if (fn->kind == FRAME_KIND_NATIVE)
		return CAT_NATIVE;
	if (fn->kind == FRAME_KIND_KERNEL)
		return CAT_KERNEL;
	if (fn->kind == FRAME_KIND_MARK || !*profile_str(p, fn->file))
		return strncmp(profile_str(p, fn->name), "[off-cpu", 8) ? CAT_OTHER : CAT_OFFCPU;
	return CAT_PYTHON;
}

static void put_thread(FILE *f, const struct profile *p, uint32_t ti, struct gk_thread *g,
		       int no_lines)
{
	const struct prof_thread *t = &p->threads[ti];
	const char *comm = profile_comm(p, t->pid);
	char name[64], label[4096];
	uint32_t nmark = 0;

	fputs("{\"name\":", f);
	snprintf(name, sizeof(name), "tid %u", t->tid);
	json_put_str(f, t->name && *t->name ? t->name : name);
	fputs(",\"processType\":\"default\",\"processName\":", f);
	json_put_str(f, comm ? comm : "?");
	fprintf(f, ",\"pid\":%u,\"tid\":%u,\"registerTime\":0,\"unregisterTime\":null,", t->pid,
		t->tid);
	fputs("\n\"samples\":{\"schema\":{\"stack\":0,\"time\":1,\"eventDelay\":2},\"data\":[", f);
	for (uint64_t i = 0; i < t->norder; i++) {
		fprintf(f, "%s[%u,", i ? ",\n" : "", g->sample[i]);
		put_ms(f, t->order[i].ts_ns - p->first_ns);
		fputs(",0]", f);
	}
	fputs("]},\n\"markers\":{\"schema\":{\"name\":0,\"startTime\":1,\"endTime\":2,\"phase\":3,"
	      "\"category\":4,\"data\":5},\"data\":[",
	      f);
	for (uint64_t i = 0; i < t->norder; i++) {
		const struct prof_ord *od = &t->order[i];
		uint32_t reason = p->stacks[od->stack].offcpu_reason;

		if (!reason)
			continue;
		/* Names follow the frames in the string table, one per reason. */
		fprintf(f, "%s[%u,", nmark++ ? ",\n" : "", g->nf + reason);
		put_ms(f, od->ts_ns - p->first_ns);
		putc(',', f);
		put_ms(f, od->ts_ns - p->first_ns + od->weight_ns);
		fprintf(f, ",1,%d,null]", CAT_OFFCPU);
	}
	fputs("]},\n\"stackTable\":{\"schema\":{\"prefix\":0,\"frame\":1},\"data\":[", f);
	for (uint32_t s = 0; s < g->stacks.n; s++) {
		uint32_t prefix1 = (uint32_t)(g->st[s] >> 32);

		if (prefix1)
			fprintf(f, "%s[%u,%u]", s ? "," : "", prefix1 - 1, (uint32_t)g->st[s]);
		else
			fprintf(f, "%s[null,%u]", s ? "," : "", (uint32_t)g->st[s]);
	}
	fputs("]},\n\"frameTable\":{\"schema\":{\"location\":0,\"relevantForJS\":1,"
	      "\"innerWindowID\":2,\"implementation\":3,\"line\":4,\"column\":5,\"category\":6,"
	      "\"subcategory\":7},\"data\":[",
	      f);
	for (uint32_t i = 0; i < g->nf; i++) {
		uint32_t key = g->fkey[i];
		int line = no_lines ? 0 : p->frames[key].line;

		if (line > 0)
			fprintf(f, "%s[%u,false,null,null,%d,null,%d,0]", i ? ",\n" : "", i, line,
				frame_category(p, key, no_lines));
		else
			fprintf(f, "%s[%u,false,null,null,null,null,%d,0]", i ? ",\n" : "", i,
				frame_category(p, key, no_lines));
	}
	fputs("]},\n\"stringTable\":[", f);
	for (uint32_t i = 0; i < g->nf; i++) {
		profile_frame_label(p, g->fkey[i], no_lines, 0, label, sizeof(label));
		if (i)
			putc(',', f);
		json_put_str(f, label);
	}
	/* Index nf + r names reason r; index nf is unused (r = 0 is on-CPU). */
	for (uint32_t r = 0; r < OFFCPU__COUNT; r++) {
		snprintf(label, sizeof(label), "off-CPU: %s", offcpu_reason_name(r));
		fputs(g->nf || r ? "," : "", f);
		json_put_str(f, label);
	}
	fputs("]}", f);
}

static void gk_free(struct gk_thread *g)
{
	id_map_free(&g->frames);
	id_map_free(&g->stacks);
	free(g->fkey);
	free(g->st);
	free(g->sample);
	memset(g, 0, sizeof(*g));
}

static int put_profile(FILE *f, const struct profile *p, const struct profile_out_opts *o)
{
	uint64_t span = p->last_ns > p->first_ns ? p->last_ns - p->first_ns : 0;
	int64_t start = (int64_t)p->first_ns + p->realtime_off;
	struct gk_thread g = {0};

	fprintf(f, "{\"meta\":{\"version\":%d,\"startTime\":", GECKO_VERSION);
	put_ms(f, start > 0 ? (uint64_t)start : 0);
	fputs(",\"shutdownTime\":null,\"profilingStartTime\":0,\"profilingEndTime\":", f);
	put_ms(f, span);
	fputs(",\"interval\":", f);
	put_ms(f, p->period_ns);
	fprintf(f,
		",\"stackwalk\":0,\"debug\":0,\"gcpoison\":0,\"asyncstack\":0,\"processType\":0,"
		"\"product\":\"bpfpy %s profile\",\"presymbolicated\":true,\"markerSchema\":[],"
		"\n\"categories\":%s},\n\"libs\":[],\"pausedRanges\":[],\"processes\":[],"
		"\n\"threads\":[",
		p->clock, categories);
	for (uint32_t ti = 0; ti < p->nthreads; ti++) {
		const struct prof_thread *t = &p->threads[ti];

		g.sample = calloc(t->norder ? t->norder : 1, sizeof(*g.sample));
		if (!g.sample)
			goto oom;
		for (uint64_t i = 0; i < t->norder; i++) {
			int64_t s = gk_stack(&g, p, &p->stacks[t->order[i].stack], o->no_lines);

			if (s < 0)
				goto oom;
			g.sample[i] = (uint32_t)s;
		}
		if (ti)
			fputs(",\n", f);
		put_thread(f, p, ti, &g, o->no_lines);
		gk_free(&g);
	}
	fputs("]}\n", f);
	return 0;
oom:
	gk_free(&g);
	return -1;
}

int gecko_write(FILE *f, const struct profile *p, const struct profile_out_opts *o, struct diag *d)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	int rc;

	if (!m)
		return diag_errno(d, ENOMEM, "gecko output");
	if (p->nordered < p->total)
		fprintf(stderr,
			"bpfpy: gecko output: the timeline holds the first %llu of %llu samples "
			"(the bound kept in order)\n",
			(unsigned long long)p->nordered, (unsigned long long)p->total);
	rc = put_profile(m, p, o);
	if (fclose(m) || rc) {
		free(buf);
		return diag_errno(d, ENOMEM, "gecko output");
	}
	rc = profile_gzip(f, (const uint8_t *)buf, len);
	free(buf);
	if (rc || ferror(f))
		return diag_errno(d, errno ? errno : EIO, "writing the gecko profile");
	return 0;
}
