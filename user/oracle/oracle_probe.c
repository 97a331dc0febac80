// SPDX-License-Identifier: MIT
/*
 * Reading a target's stacks for the oracle outside a sampling mode: naming
 * a walked stack's frames for the rules (oracle_symbolize, which every
 * user-space mode uses too), and the readiness probe that tells when an
 * arbitrary program runs its own code (oracle_target.c waits on it before
 * the first window). Kept apart so that the targets and the modes each
 * depend on this file, not on each other.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "code_cache.h"
#include "op_mark.h"
#include "oracle_run.h"
#include "profile.h"
#include "py_process.h"
#include "stack_reader.h"

/* sf as the rules see it into fr, names copied into arena at *used: 0, or
 * -1 when the arena is full. A task mark ("[task NAME]" or "[task NAME (N
 * awaiters)]", record --async's) becomes a rule_frame task named NAME; an
 * instruction mark ("[op NAME]" or "[op NAME (BASE)]", record --opcodes')
 * a rule_frame op named NAME. */
static int name_frame(const struct sym_frame *sf, struct rule_frame *fr, char *arena, size_t *used)
{
	const char *name = sf->name ? sf->name : CODE_CACHE_UNKNOWN;
	const char *file = sf->file ? sf->file : "";
	size_t l = strlen(name) + 1, lf = strlen(file) + 1;
	int task = sf->kind == FRAME_KIND_MARK && l > 8 && !strncmp(name, "[task ", 6) &&
		   name[l - 2] == ']';
	int op =
	    sf->kind == FRAME_KIND_MARK && l > 6 && !strncmp(name, "[op ", 4) && name[l - 2] == ']';

	if (op) {
		/* NAME, without the brackets and the base: what op:GLOB sees. */
		const char *base = strstr(name + 4, " (");
		size_t k = base ? (size_t)(base - name - 4) : l - 6;

		if (*used + k + 1 > ORACLE_NAME_ARENA)
			return -1;
		memcpy(arena + *used, name + 4, k);
		arena[*used + k] = 0;
		*fr = (struct rule_frame){.name = arena + *used, .op = 1};
		*used += k + 1;
		return 0;
	}

	if (*used + l + lf > ORACLE_NAME_ARENA)
		return -1;
	memcpy(arena + *used, name, l);
	fr->name = arena + *used;
	*used += l;
	if (task) {
		char *n = arena + *used - l;

		n[l - 2] = 0;
		oracle_task_name_norm(n + 6);
		fr->name = n + 6;
	}
	/* The file only feeds rules that name files (code_object_reuse). */
	memcpy(arena + *used, file, lf);
	fr->file = task ? NULL : arena + *used;
	*used += lf;
	fr->line = !task && sf->line > 0 ? sf->line : 0;
	fr->task = task;
	fr->op = 0;
	return 0;
}

/* Symbolize a stack read by the walker into fr (names copied into arena):
 * the frame count, or -1 when a frame cannot be named. */
int oracle_symbolize(struct code_cache *cache, const struct thread_stack *ts, struct rule_frame *fr,
		     char *arena, const struct py_process *ops)
{
	size_t used = 0;
	int n = 0;

	/* The instruction mark first, on the leaf: record --opcodes' own. */
	if (ops && ts->nframes) {
		struct op_stats st = {0};
		struct op_mark m;

		op_mark_of(ops, cache, ts->leaf_op, ts->op_flags, &ts->frames[0], &m, &st);
		if (name_frame(&m.f, &fr[n], arena, &used))
			return 0;
		n++;
	}
	for (uint32_t i = 0; i < ts->nframes && n < BPFPY_MAX_DEPTH; i++) {
		struct sym_frame sf;

		/* A frame that cannot be named makes the sample an error. */
		if (code_cache_symbolize(cache, &ts->frames[i], &sf) != CODE_OK)
			return -1;
		if (name_frame(&sf, &fr[n], arena, &used))
			break;
		n++;
	}
	return n;
}

int oracle_name_frames(const struct sym_frame *sf, uint32_t nsf, struct rule_frame *fr, char *arena)
{
	size_t used = 0;
	int n = 0;

	for (uint32_t i = 0; i < nsf && i < BPFPY_MAX_DEPTH; i++, n++)
		if (name_frame(&sf[i], &fr[n], arena, &used))
			break;
	return n;
}

/* Threads the readiness probe reads: the program's frame is looked for in
 * any of them, and a program that starts threads starts them after it runs. */
#define PROBE_THREADS 8

struct oracle_probe {
	struct py_process p;
	struct code_cache *cache;
	int open;
	struct thread_stack *stacks; /* PROBE_THREADS */
	struct rule_frame *frames;   /* BPFPY_MAX_DEPTH */
	char *arena;		     /* ORACLE_NAME_ARENA */
};

struct oracle_probe *oracle_probe_new(void)
{
	struct oracle_probe *pr = calloc(1, sizeof(*pr));

	if (!pr)
		return NULL;
	pr->stacks = calloc(PROBE_THREADS, sizeof(*pr->stacks));
	pr->frames = calloc(BPFPY_MAX_DEPTH, sizeof(*pr->frames));
	pr->arena = malloc(ORACLE_NAME_ARENA);
	if (!pr->stacks || !pr->frames || !pr->arena) {
		oracle_probe_free(pr);
		return NULL;
	}
	return pr;
}

void oracle_probe_free(struct oracle_probe *pr)
{
	if (!pr)
		return;
	code_cache_free(pr->cache);
	free(pr->stacks);
	free(pr->frames);
	free(pr->arena);
	free(pr);
}

/* importlib's frames: "<frozen importlib._bootstrap>" (3.11+), or
 * importlib/_bootstrap.py. */
static int importing(const char *file)
{
	return file && strstr(file, "importlib") != NULL;
}

int oracle_probe_program(struct oracle_probe *pr, pid_t pid, const char *own, struct diag *d)
{
	struct diag dd = {0};
	int count = 0;

	if (!pr->open) {
		if (py_process_open(&pr->p, pid, 0, &dd)) {
			/* Not initialised yet, or gone (the caller reaps it):
			 * ask again later. Anything else will not change. */
			if (dd.code == EXIT_NOT_PYTHON || dd.code == EXIT_NO_PROCESS)
				return 0;
			*d = dd;
			return -1;
		}
		pr->cache = code_cache_new(&pr->p.mem, &pr->p.cfg.off, 0);
		if (!pr->cache)
			return diag_errno(d, ENOMEM, "oracle");
		pr->open = 1;
	}
	if (stack_read_all(&pr->p.mem, &pr->p.cfg, pr->stacks, PROBE_THREADS, &count, &dd))
		return 0;
	for (int i = 0; i < count && i < PROBE_THREADS; i++) {
		const struct thread_stack *ts = &pr->stacks[i];
		int mine = 0, imp = 0, n;

		if (ts->flags & SAMPLE_ERROR)
			continue;
		n = oracle_symbolize(pr->cache, ts, pr->frames, pr->arena, NULL);
		for (int k = 0; k < n; k++) {
			const char *f = pr->frames[k].file, *b = strrchr(f, '/');

			mine |= !strcmp(b ? b + 1 : f, own);
			imp |= importing(f);
		}
		if (mine && !imp)
			return 1;
	}
	return 0;
}
