// SPDX-License-Identifier: MIT
/*
 * speedscope's own file format (https://www.speedscope.app/file-format-schema.json):
 * shared frames, then one "sampled" profile per thread whose samples are
 * stacks of frame indices, ROOT FIRST, each with a weight in nanoseconds of
 * the profile's clock.
 *
 * Samples appear in the order they were taken, so speedscope's "Time Order"
 * view is a real timeline. Samples past the profile's bound on ordered
 * samples are appended at the end of their thread, one entry per stack
 * weighted by its count: the totals stay right, only their place in time
 * is lost.
 *
 * The document is streamed rather than built as one json-c tree: a million
 * samples of depth 30 would be thirty million json objects. json-c still
 * does all string escaping; only integers and punctuation are printed here.
 */
#include "profile.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

static void put_str(FILE *f, const char *s)
{
	json_object *o = json_object_new_string(s);

	if (!o) {
		fputs("\"\"", f);
		return;
	}
	fputs(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
						    JSON_C_TO_STRING_NOSLASHESCAPE),
	      f);
	json_object_put(o);
}

static void put_stack(FILE *f, const struct profile *p, const struct prof_stack *st, int no_lines)
{
	putc('[', f);
	for (uint32_t j = st->nframes; j-- > 0;)
		fprintf(f, "%u%s", profile_frame_key(p, st->frames[j], no_lines), j ? "," : "");
	putc(']', f);
}

static void put_frames(FILE *f, const struct profile *p, int no_lines)
{
	uint32_t n = no_lines ? p->nfuncs : p->nframes;

	fputs("\"shared\":{\"frames\":[", f);
	for (uint32_t i = 0; i < n; i++) {
		const struct prof_func *fn = &p->funcs[no_lines ? i : p->frames[i].func];
		int line = no_lines ? fn->firstlineno : p->frames[i].line;
		const char *file = profile_str(p, fn->file);

		fputs(i ? ",\n{\"name\":" : "\n{\"name\":", f);
		if (fn->kind == FRAME_KIND_NATIVE || fn->kind == FRAME_KIND_KERNEL) {
			/* The format has no kinds: the name says it, file is the lib. */
			char nm[512];

			snprintf(nm, sizeof(nm), "%s [%s]", profile_str(p, fn->name),
				 fn->kind == FRAME_KIND_NATIVE ? "native" : "kernel");
			put_str(f, nm);
		} else {
			put_str(f, profile_str(p, fn->name));
		}
		if (*file) {
			fputs(",\"file\":", f);
			put_str(f, file);
			if (line > 0)
				fprintf(f, ",\"line\":%d", line);
		}
		putc('}', f);
	}
	fputs("]},\n", f);
}

static void put_thread(FILE *f, const struct profile *p, uint32_t ti, int no_lines)
{
	const struct prof_thread *t = &p->threads[ti];
	const char *comm = profile_comm(p, t->pid);
	uint64_t w = p->period_ns ? p->period_ns : 1;
	char name[256];
	int first = 1;

	if (t->name && *t->name) /* the thread's own name first: what one looks for */
		snprintf(name, sizeof(name), "%s: pid %u tid %u (%s)", t->name, t->pid, t->tid,
			 comm ? comm : "?");
	else
		snprintf(name, sizeof(name), "pid %u tid %u (%s)", t->pid, t->tid,
			 comm ? comm : "?");
	fputs("{\"type\":\"sampled\",\"name\":", f);
	put_str(f, name);
	fprintf(f, ",\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":%llu,\n\"samples\":[",
		(unsigned long long)(p->weighted ? t->weight_ns : t->count * w));
	for (uint64_t i = 0; i < t->norder; i++) {
		if (!first)
			putc(',', f);
		first = 0;
		put_stack(f, p, &p->stacks[t->order[i].stack], no_lines);
	}
	for (uint32_t s = 0; s < p->nstacks; s++) {
		const struct prof_stack *st = &p->stacks[s];

		if (st->thread != ti || st->count == st->nordered)
			continue;
		if (!first)
			putc(',', f);
		first = 0;
		put_stack(f, p, st, no_lines);
	}
	fputs("],\n\"weights\":[", f);
	first = 1;
	for (uint64_t i = 0; i < t->norder; i++) {
		fprintf(f, first ? "%llu" : ",%llu",
			(unsigned long long)(p->weighted ? t->order[i].weight_ns : w));
		first = 0;
	}
	for (uint32_t s = 0; s < p->nstacks; s++) {
		const struct prof_stack *st = &p->stacks[s];

		if (st->thread != ti || st->count == st->nordered)
			continue;
		fprintf(f, first ? "%llu" : ",%llu",
			(unsigned long long)(p->weighted ? st->weight_ns - st->ordered_ns
							 : (st->count - st->nordered) * w));
		first = 0;
	}
	fputs("]}", f);
}

int speedscope_write(FILE *f, const struct profile *p, const struct profile_out_opts *o,
		     struct diag *d)
{
	uint32_t busiest = 0;
	char name[128];

	for (uint32_t i = 1; i < p->nthreads; i++)
		if (p->weighted ? p->threads[i].weight_ns > p->threads[busiest].weight_ns
				: p->threads[i].count > p->threads[busiest].count)
			busiest = i;
	if (p->weighted)
		snprintf(name, sizeof(name),
			 "bpfpy %s profile, %llu samples and off-CPU intervals, weights in ns",
			 p->clock, (unsigned long long)p->total);
	else
		snprintf(name, sizeof(name), "bpfpy %s profile, %llu samples every %llu ns",
			 p->clock, (unsigned long long)p->total, (unsigned long long)p->period_ns);
	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n", f);
	put_frames(f, p, o->no_lines);
	fputs("\"profiles\":[", f);
	for (uint32_t i = 0; i < p->nthreads; i++) {
		if (i)
			fputs(",\n", f);
		put_thread(f, p, i, o->no_lines);
	}
	fputs("],\n\"name\":", f);
	put_str(f, name);
	/* Open on the thread that did most, which is what one looks for first. */
	fprintf(f, ",\"activeProfileIndex\":%u,\"exporter\":\"bpfpy\"}\n", busiest);
	if (ferror(f))
		return diag_errno(d, errno ? errno : EIO, "writing speedscope JSON");
	return 0;
}
