// SPDX-License-Identifier: MIT
/*
 * Folded stacks, the input of flamegraph.pl, inferno and speedscope:
 *
 *   line  := [ "pid:" N ";tid:" N [ " (" NAME ")" ] ";" ] frame *( ";" frame )
 *            " " count "\n"
 *   count := samples, or nanoseconds in a weighted profile (--clock offcpu|wall)
 *   frame := qualname " (" file ":" line ")"     -- or " (" file ")" with no_lines
 *
 * Root first, as those tools expect. Lines are sorted, and equal lines (the
 * same stack seen in several threads) merged, so the file is canonical: two
 * profiles of the same stacks diff clean.
 */
#include "profile.h"
#include "text_escape.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct line {
	char *s;
	uint64_t count;
};

static int line_cmp(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->s, ((const struct line *)b)->s);
}

struct sbuf {
	char *s;
	size_t len, cap;
};

static int sb_add(struct sbuf *b, const char *s)
{
	size_t n = strlen(s);

	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *ns;

		while (cap < b->len + n + 1)
			cap *= 2;
		ns = realloc(b->s, cap);
		if (!ns)
			return -1;
		b->s = ns;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n + 1);
	b->len += n;
	return 0;
}

char *collapsed_key(const struct profile *p, const struct prof_stack *st,
		    const struct profile_out_opts *o)
{
	struct sbuf b = {0};
	char label[4096];
	int bad = 0;

	/* Process outside thread: root first means outermost first, and a
	 * thread lives inside its process, so a flame graph then shows
	 * each process as one tower with its threads stacked on it. */
	if (o->threads) {
		const struct prof_thread *t = &p->threads[st->thread];

		snprintf(label, sizeof(label), "pid:%u;tid:%u", t->pid, t->tid);
		bad |= sb_add(&b, label);
		/* The thread's name inside the tid's frame, so that a
		 * reader splitting "tid:N" off still finds the stack. */
		if (t->name && *t->name) {
			/* Threading names are up to 127 bytes (py_threads.h),
			 * escaped up to four times that. */
			char name[512];

			text_escape(name, sizeof(name), t->name, TEXT_FOLDED);
			snprintf(label, sizeof(label), " (%s)", name);
			bad |= sb_add(&b, label);
		}
	}
	for (uint32_t j = st->nframes; j-- > 0;) {
		uint32_t key = profile_frame_key(p, st->frames[j], o->no_lines);

		if (b.len)
			bad |= sb_add(&b, ";");
		profile_frame_label(p, key, o->no_lines, 1, label, sizeof(label));
		bad |= sb_add(&b, label);
	}
	if (bad || !b.s) {
		free(b.s);
		errno = ENOMEM;
		return NULL;
	}
	return b.s;
}

int collapsed_write(FILE *f, const struct profile *p, const struct profile_out_opts *o,
		    struct diag *d)
{
	struct line *lines = calloc(p->nstacks ? p->nstacks : 1, sizeof(*lines));
	uint32_t n = 0;
	int rc = -1;

	if (!lines)
		return diag_errno(d, ENOMEM, "folded output");
	for (uint32_t i = 0; i < p->nstacks; i++) {
		lines[n].s = collapsed_key(p, &p->stacks[i], o);
		if (!lines[n].s) {
			diag_errno(d, ENOMEM, "folded output");
			goto out;
		}
		lines[n++].count = profile_stack_value(p, &p->stacks[i]);
	}
	qsort(lines, n, sizeof(*lines), line_cmp);
	for (uint32_t i = 0; i < n;) {
		uint64_t count = lines[i].count;
		uint32_t j = i + 1;

		while (j < n && !strcmp(lines[j].s, lines[i].s))
			count += lines[j++].count;
		fprintf(f, "%s %llu\n", lines[i].s, (unsigned long long)count);
		i = j;
	}
	if (ferror(f)) {
		diag_errno(d, errno ? errno : EIO, "writing folded stacks");
		goto out;
	}
	rc = 0;
out:
	for (uint32_t i = 0; i < n; i++)
		free(lines[i].s);
	free(lines);
	return rc;
}
