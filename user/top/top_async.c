// SPDX-License-Identifier: MIT
/*
 * top --async: the profile's stacks grouped by their task chain, the
 * [task NAME] marks of a stack read root to leaf ("Task-1 > worker-3 >
 * fetch-3"). OWN counts the samples whose chain is the row; TOTAL those
 * whose chain begins with it, so that a task's row holds the time of the
 * tasks it awaits.
 */
#include "top_async.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text_escape.h"

/* Bytes of one chain's label; longer chains end in "...". */
#define CHAIN_CAP 512

struct chain {
	char key[CHAIN_CAP];
	uint64_t own, total;
};

/* The chain of stack st into key: its task marks, root first. */
static void chain_of(const struct profile *p, const struct prof_stack *st, char *key)
{
	size_t n = 0;

	key[0] = 0;
	for (uint32_t j = st->nframes; j-- > 0;) {
		const struct prof_func *f = &p->funcs[p->frames[st->frames[j]].func];
		const char *name = profile_str(p, f->name);
		size_t len;

		if (f->kind != FRAME_KIND_MARK || strncmp(name, "[task ", 6))
			continue;
		name += 6;
		len = strlen(name);
		if (len && name[len - 1] == ']')
			len--;
		if (n + len + 4 >= CHAIN_CAP) {
			snprintf(key + n, CHAIN_CAP - n, "%s...", n ? " > " : "");
			return;
		}
		n += (size_t)snprintf(key + n, CHAIN_CAP - n, "%s%.*s", n ? " > " : "", (int)len,
				      name);
	}
	if (!n)
		snprintf(key, CHAIN_CAP, "(no task)");
}

static int by_total(const void *a, const void *b)
{
	const struct chain *x = a, *y = b;

	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return strcmp(x->key, y->key);
}

/* Is chain a the chain b or one of its ancestors? */
static int prefix_of(const char *a, const char *b)
{
	size_t n = strlen(a);

	return !strncmp(a, b, n) && (!b[n] || !strncmp(b + n, " > ", 3)) && strcmp(a, "(no task)");
}

void top_async_rows(const struct profile *p, int rows_max, int cols, const char *eol)
{
	struct chain *v = NULL;
	size_t n = 0, cap = 0;
	char key[CHAIN_CAP], esc[CHAIN_CAP * 4];
	double tot = p->total ? (double)p->total : 1.0;

	for (uint32_t i = 0; i < p->nstacks; i++) {
		char *cut = NULL;
		size_t k;

		chain_of(p, &p->stacks[i], key);
		/* The chain, then each of its ancestors (own 0), so that a
		 * root task has a row even when it never runs itself. */
		for (int own = 1;; own = 0) {
			for (k = 0; k < n && strcmp(v[k].key, key); k++)
				;
			if (k == n) {
				if (n == cap) {
					struct chain *nv =
					    realloc(v, (cap = cap ? 2 * cap : 64) * sizeof(*v));

					if (!nv)
						goto done;
					v = nv;
				}
				memset(&v[n], 0, sizeof(v[n]));
				memcpy(v[n].key, key, sizeof(key));
				n++;
			}
			if (own)
				v[k].own += p->stacks[i].count;
			for (cut = key + strlen(key); cut > key && strncmp(cut, " > ", 3); cut--)
				;
			if (cut <= key)
				break;
			*cut = 0;
		}
	}
done:
	for (size_t a = 0; a < n; a++)
		for (size_t b = 0; b < n; b++)
			if (a == b || prefix_of(v[a].key, v[b].key))
				v[a].total += v[b].own;
	qsort(v, n, sizeof(*v), by_total);
	printf("  OWN%%  TOTAL%%      OWN    TOTAL  TASK CHAIN%s", eol);
	for (size_t i = 0; i < n && (int)i < rows_max; i++) {
		int w;

		printf("%6.1f %6.1f %8llu %8llu  ", 100.0 * v[i].own / tot,
		       100.0 * v[i].total / tot, (unsigned long long)v[i].own,
		       (unsigned long long)v[i].total);
		text_escape(esc, sizeof(esc), v[i].key, 0);
		w = cols - 34;
		printf("%.*s%s", w > 0 ? w : 0, esc, eol);
	}
	free(v);
}
