// SPDX-License-Identifier: MIT
/*
 * Chrome Trace Event Format (JSON), as Perfetto and chrome://tracing load
 * it: the samples of a recording as a timeline, and the stack-frame table
 * that both this writer and trace's (user/trace/trace_out.c) use.
 *
 * The timeline: per thread, the samples in time order become nested B/E
 * slices, one per frame, merged while consecutive samples share a prefix of
 * their stack (a slice lasts from the first sample showing the frame to one
 * period past the last); a gap of more than two periods closes every slice.
 * So the flame chart of each thread is drawn natively, and each B event
 * carries "sf", the id of its stack in "stackFrames" (a tree: each entry a
 * name and its parent), so a viewer can show the whole stack of a slice.
 * Metadata events name each process (comm, pid) and thread (tid). Times are
 * microseconds since the first sample, written with 3 decimals: equal
 * input, equal bytes.
 */
#include "profile.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

struct cf_node {
	uint32_t parent; /* id + 1 of the parent; 0 for a root */
	char *name;
	uint32_t hash;
};

struct chrome_frames {
	struct cf_node *nodes;
	uint32_t n, cap;
	uint32_t *slots; /* id + 1; 0 empty */
	uint32_t nslots;
	int oom;
};

static uint32_t cf_hash(uint32_t parent, const char *s)
{
	uint32_t h = 2166136261u ^ parent * 0x9e3779b9u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h ? h : 1;
}

struct chrome_frames *chrome_frames_new(void)
{
	return calloc(1, sizeof(struct chrome_frames));
}

static int cf_grow(struct chrome_frames *cf)
{
	uint32_t ns = cf->nslots ? cf->nslots * 2 : 1024;
	uint32_t *slots = calloc(ns, sizeof(*slots));

	if (!slots)
		return -1;
	for (uint32_t i = 0; i < cf->n; i++) {
		uint32_t j = cf->nodes[i].hash & (ns - 1);

		while (slots[j])
			j = (j + 1) & (ns - 1);
		slots[j] = i + 1;
	}
	free(cf->slots);
	cf->slots = slots;
	cf->nslots = ns;
	return 0;
}

/* The id + 1 of the frame name under parent (id + 1, 0: root), made if new;
 * 0 on ENOMEM. */
static uint32_t cf_child(struct chrome_frames *cf, uint32_t parent, const char *name)
{
	uint32_t h = cf_hash(parent, name), j;

	if ((cf->n + 1) * 2 > cf->nslots && cf_grow(cf))
		return 0;
	for (j = h & (cf->nslots - 1); cf->slots[j]; j = (j + 1) & (cf->nslots - 1)) {
		const struct cf_node *nd = &cf->nodes[cf->slots[j] - 1];

		if (nd->hash == h && nd->parent == parent && !strcmp(nd->name, name))
			return cf->slots[j];
	}
	if (cf->n == cf->cap) {
		uint32_t cap = cf->cap ? cf->cap * 2 : 1024;
		struct cf_node *nn = realloc(cf->nodes, cap * sizeof(*nn));

		if (!nn)
			return 0;
		cf->nodes = nn;
		cf->cap = cap;
	}
	cf->nodes[cf->n] = (struct cf_node){.parent = parent, .name = strdup(name), .hash = h};
	if (!cf->nodes[cf->n].name)
		return 0;
	cf->slots[j] = ++cf->n;
	return cf->n;
}

int64_t chrome_frames_add(struct chrome_frames *cf, const char *const *names, uint32_t n)
{
	uint32_t id = 0;

	for (uint32_t i = 0; i < n; i++) {
		id = cf_child(cf, id, names[i]);
		if (!id) {
			cf->oom = 1;
			return -1;
		}
	}
	return n ? (int64_t)id - 1 : -1;
}

void json_put_str(FILE *f, const char *s)
{
	json_object *o = json_object_new_string(s ? s : "");

	fputs(o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN) : "\"\"", f);
	json_object_put(o);
}

int chrome_frames_write(FILE *f, const struct chrome_frames *cf)
{
	fputs("\"stackFrames\":{", f);
	for (uint32_t i = 0; i < cf->n; i++) {
		fprintf(f, "%s\n\"%u\":{\"category\":\"python\",\"name\":", i ? "," : "", i);
		json_put_str(f, cf->nodes[i].name);
		if (cf->nodes[i].parent)
			fprintf(f, ",\"parent\":\"%u\"", cf->nodes[i].parent - 1);
		fputc('}', f);
	}
	fputs("}", f);
	return cf->oom ? -1 : 0;
}

void chrome_frames_free(struct chrome_frames *cf)
{
	if (!cf)
		return;
	for (uint32_t i = 0; i < cf->n; i++)
		free(cf->nodes[i].name);
	free(cf->nodes);
	free(cf->slots);
	free(cf);
}

void chrome_put_meta(FILE *f, const char *what, uint32_t pid, uint32_t tid, const char *name)
{
	fprintf(f, "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,\"args\":{\"name\":", what,
		pid, tid);
	json_put_str(f, name);
	fputs("}}", f);
}

void chrome_put_thread_meta(FILE *f, uint32_t pid, uint32_t tid, const char *tname)
{
	char name[192];

	if (tname && *tname) {
		size_t n = strlen(tname);

		/* Longer ones (none read so) are cut at a character. */
		for (n = n > 150 ? 150 : n; n && (tname[n] & 0xc0) == 0x80;)
			n--;
		snprintf(name, sizeof(name), "%.*s (tid %u)", (int)n, tname, tid);
	} else {
		snprintf(name, sizeof(name), "tid %u", tid);
	}
	chrome_put_meta(f, "thread_name", pid, tid, name);
}

static void put_us(FILE *f, uint64_t ns)
{
	fprintf(f, "%llu.%03llu", (unsigned long long)(ns / 1000), (unsigned long long)(ns % 1000));
}

struct open_slice {
	uint32_t frame; /* profile frame key */
};

int chrome_write(FILE *f, const struct profile *p, const struct profile_out_opts *o, struct diag *d)
{
	struct chrome_frames *cf = chrome_frames_new();
	uint32_t *open = calloc(BPFPY_MAX_DEPTH + 2, sizeof(*open));
	const char **names = calloc(BPFPY_MAX_DEPTH + 2, sizeof(*names));
	char(*labels)[4200] = calloc(BPFPY_MAX_DEPTH + 2, sizeof(*labels));
	uint64_t period = p->period_ns ? p->period_ns : 1;
	int rc = -1, first = 1;

	if (!cf || !open || !names || !labels) {
		diag_errno(d, ENOMEM, "chrome output");
		goto out;
	}
	if (p->nordered < p->total)
		fprintf(stderr,
			"bpfpy: chrome output: the timeline holds the first %llu of %llu samples "
			"(the bound kept in order)\n",
			(unsigned long long)p->nordered, (unsigned long long)p->total);
	fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", f);
	/* One process_name per process, one thread_name per thread. */
	for (uint32_t t = 0; t < p->nthreads; t++) {
		const struct prof_thread *th = &p->threads[t];
		const char *comm = profile_comm(p, th->pid);
		/* Whole thread names: threading names are up to 127 bytes of
		 * UTF-8 (py_threads.h), and a byte count would cut a character. */
		char name[192];
		int seen = 0;

		for (uint32_t u = 0; u < t && !seen; u++)
			seen = p->threads[u].pid == th->pid;
		if (!seen) {
			snprintf(name, sizeof(name), "%.40s (pid %u)", comm ? comm : "?", th->pid);
			fputs(first ? "" : ",\n", f);
			chrome_put_meta(f, "process_name", th->pid, th->pid, name);
			first = 0;
		}
		/* The thread's name where record read it (threading's, or comm). */
		fputs(first ? "" : ",\n", f);
		chrome_put_thread_meta(f, th->pid, th->tid, th->name);
		first = 0;
	}
	for (uint32_t t = 0; t < p->nthreads; t++) {
		const struct prof_thread *th = &p->threads[t];
		uint32_t nopen = 0;
		uint64_t last = 0;

		for (uint64_t k = 0; k <= th->norder; k++) {
			const struct prof_ord *od = k < th->norder ? &th->order[k] : NULL;
			const struct prof_stack *st = od ? &p->stacks[od->stack] : NULL;
			uint32_t n = st ? st->nframes : 0, keep = 0;

			if (st && nopen && od->ts_ns <= last + 2 * period)
				/* Frames root first: st->frames is leaf first. */
				while (keep < nopen && keep < n &&
				       open[keep] == profile_frame_key(p, st->frames[n - 1 - keep],
								       o->no_lines))
					keep++;
			/* Close what this sample does not show, innermost first,
			 * a period past the last sample or at this one if sooner. */
			while (nopen > keep) {
				uint64_t end = last + period;

				if (od && od->ts_ns < end)
					end = od->ts_ns;
				nopen--;
				fprintf(f,
					",\n{\"ph\":\"E\",\"pid\":%u,\"tid\":%u,\"ts\":", th->pid,
					th->tid);
				put_us(f, end - p->first_ns);
				fputc('}', f);
			}
			if (!st)
				break;
			for (uint32_t j = 0; j < n; j++) {
				uint32_t key =
				    profile_frame_key(p, st->frames[n - 1 - j], o->no_lines);

				profile_frame_label(p, key, o->no_lines, 0, labels[j],
						    sizeof(labels[j]));
				names[j] = labels[j];
			}
			for (uint32_t j = keep; j < n; j++) {
				int64_t sf = chrome_frames_add(cf, names, j + 1);

				open[j] = profile_frame_key(p, st->frames[n - 1 - j], o->no_lines);
				fprintf(f,
					",\n{\"ph\":\"B\",\"cat\":\"python\",\"pid\":%u,\"tid\":%u,"
					"\"ts\":",
					th->pid, th->tid);
				put_us(f, od->ts_ns - p->first_ns);
				fputs(",\"name\":", f);
				json_put_str(f, names[j]);
				if (sf >= 0)
					fprintf(f, ",\"sf\":\"%lld\"", (long long)sf);
				fputc('}', f);
			}
			nopen = n;
			last = od->ts_ns;
		}
	}
	fputs("\n],", f);
	if (chrome_frames_write(f, cf)) {
		diag_errno(d, ENOMEM, "chrome output: stack frames");
		goto out;
	}
	fprintf(f,
		",\n\"otherData\":{\"tool\":\"bpfpy record\",\"clock\":\"%s\",\"period_ns\":%llu,"
		"\"samples\":%llu}}\n",
		p->clock, (unsigned long long)p->period_ns, (unsigned long long)p->total);
	rc = 0;
	if (ferror(f))
		rc = diag_errno(d, errno ? errno : EIO, "writing the chrome trace");
out:
	chrome_frames_free(cf);
	free(open);
	free(names);
	free(labels);
	return rc;
}
