// SPDX-License-Identifier: MIT
#include "async_stack.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf_sampler.h"
#include "code_cache.h"
#include "monotime.h"

/* A graph is read again for a sample whose task it lacks at most this
 * often: a read costs the target nothing (no stop) but costs us a read per
 * task and link; an application creating tasks faster than this leaves
 * the newest unresolved (counted), never waits for them. */
#define ASYNC_REREAD_NS (200ull * 1000 * 1000)

int async_target_open(struct rec_target *t, int strict, struct diag *d)
{
	struct async_target *at = calloc(1, sizeof(*at));
	struct diag ad = {0};

	if (!at)
		return diag_errno(d, ENOMEM, "record --async");
	if (py_asyncio_init(t->proc, &at->a, strict ? d : &ad)) {
		free(at);
		return strict ? -1 : 0;
	}
	t->async = at;
	t->proc->cfg.flags |= PROC_ASYNC;
	if (py_asyncio_find(t->proc, &at->a)) {
		t->proc->cfg.async = at->a.k;
		at->kernel_ready = 1;
	}
	return 0;
}

void async_target_free(struct rec_target *t)
{
	if (!t->async)
		return;
	py_task_graph_free(&t->async->g);
	free(t->async);
	t->async = NULL;
}

void async_targets_poll(struct target_set *ts)
{
	for (int i = 0; i < ts->n; i++) {
		struct rec_target *t = ts->t[i];
		struct diag d = {0};

		if (!t->async || t->async->kernel_ready || !t->proc)
			continue;
		if (!py_asyncio_find(t->proc, &t->async->a))
			continue;
		t->proc->cfg.async = t->async->a.k;
		if (ts->sampler && bpf_sampler_set_async(ts->sampler, t->pid, &t->async->a.k, &d))
			continue; /* tried again at the next poll */
		t->async->kernel_ready = 1;
	}
}

/* Names of one chain's task marks, until the profile interns them. */
static char mark_names[PY_TASK_CHAIN_MAX + 1][PY_TASK_NAME_CAP + 32];

static void put_mark(struct sym_frame *out, uint32_t cap, uint32_t *n, unsigned k, const char *name,
		     uint32_t nawaiters)
{
	char *m = mark_names[k % (PY_TASK_CHAIN_MAX + 1)];

	if (nawaiters > 1)
		snprintf(m, sizeof(mark_names[0]), "[task %s (%u awaiters)]", name, nawaiters);
	else
		snprintf(m, sizeof(mark_names[0]), "[task %s]", name);
	if (*n < cap)
		out[*n] =
		    (struct sym_frame){.name = m, .file = "", .line = -1, .kind = FRAME_KIND_MARK};
	(*n)++;
}

static void put_frame(struct rec_target *t, const struct frame_rec *f, struct sym_frame *out,
		      uint32_t cap, uint32_t *n, int *unnamed)
{
	if (*n < cap && code_cache_symbolize(t->cache, f, &out[*n]) != CODE_OK && unnamed)
		*unnamed = 1;
	(*n)++;
}

/* The frames and marks of the tasks that await k (k's own mark is put),
 * to the root, from the graph. A cycle cuts it (back to first, k's
 * address, to below, the task k awaits if any, or to a task met), and so
 * do PY_TASK_CHAIN_MAX tasks. */
static void put_awaiters(struct rec_target *t, const struct py_task *k, uint64_t first,
			 uint64_t below, struct sym_frame *out, uint32_t cap, uint32_t *n,
			 unsigned nmark, struct async_stats *st)
{
	uint64_t seen[PY_TASK_CHAIN_MAX];
	unsigned nseen = 0;

	seen[nseen++] = first;
	if (below)
		seen[nseen++] = below;
	for (const struct py_task *cur = k; cur && cur->awaiter;) {
		const struct py_task *a = py_task_find(&t->async->g, cur->awaiter);
		int loop = 0;

		if (!a)
			break;
		for (unsigned s = 0; s < nseen; s++)
			loop |= seen[s] == a->addr;
		if (loop || nseen == PY_TASK_CHAIN_MAX) {
			st->cut++;
			break;
		}
		seen[nseen++] = a->addr;
		for (unsigned f = 0; f < a->nframes; f++)
			put_frame(t, &a->frames[f], out, cap, n, NULL);
		put_mark(out, cap, n, nmark++, a->name, a->nawaiters);
		cur = a;
	}
}

/* Whether the graph's entry k is the task the kernel saw: the same task
 * and coroutine addresses, and, when the kernel copied the name (kname),
 * the same name. Addresses alone are not enough: a short-lived task and
 * its coroutine are freed and the next ones often get the same addresses
 * (freelists), so an entry read earlier would hand the new task its
 * predecessor's awaiter, with the awaiter's frames of another moment. */
static int same_task(const struct py_task *k, uint64_t coro, const char *kname)
{
	return k && k->coro == coro && (!kname || !k->name[0] || !strcmp(kname, k->name));
}

/* The graph's entry for the task the kernel saw at task (same_task); the
 * graph is read again (rarely) when it does not hold it. */
static const struct py_task *verified(struct rec_target *t, uint64_t task, uint64_t coro,
				      const char *kname, struct async_stats *st)
{
	struct async_target *at = t->async;
	const struct py_task *k = py_task_find(&at->g, task);
	uint64_t now;

	if (same_task(k, coro, kname))
		return k;
	if (at->frozen)
		return NULL;
	now = mono_ns();
	if (at->read_ns && now - at->read_ns < ASYNC_REREAD_NS)
		return NULL;
	at->read_ns = now;
	{
		struct diag d = {0};

		if (py_asyncio_read(t->proc, &at->a, &at->g, &d) < 0)
			return NULL;
		py_asyncio_name(t->proc, &at->a, &at->g);
	}
	st->graph_reads++;
	k = py_task_find(&at->g, task);
	return same_task(k, coro, kname) ? k : NULL;
}

/* The name of the task at task from the kernel's copy of its name object
 * (raw, NULL when it copied none), else read now. */
static const char *kernel_name(struct rec_target *t, uint64_t task, const uint8_t *raw, char *out)
{
	return py_task_name_of(t->proc, &t->async->a, task, raw, out, PY_TASK_NAME_CAP);
}

/*
 * Above the running task (its mark put), the kernel's awaiter: the frames
 * where it was suspended at the sample (the kernel's), or the graph's if
 * the graph holds the running task (k) awaited by that very awaiter (it
 * cannot have moved since: it awaits k) and the kernel could not read them
 * or stopped at TASK_AW_FRAMES coroutines, else none or the kernel's cut
 * copy; its mark, named from the kernel's copy; then the graph's chain
 * above it if the graph holds that awaiter.
 */
static void put_kernel_awaiter(struct rec_target *t, const struct task_rec *tr,
			       const struct py_task *k, struct sym_frame *out, uint32_t cap,
			       uint32_t *n, struct async_stats *st)
{
	int copied = (tr->aw_flags & TASK_AW_NAME_READ) != 0;
	char aname[PY_TASK_NAME_CAP];
	const struct py_task *ga;
	unsigned nk = tr->naw_frames < TASK_AW_FRAMES ? tr->naw_frames : TASK_AW_FRAMES;

	kernel_name(t, tr->awaiter, copied ? tr->awaiter_name_raw : NULL, aname);
	ga = verified(t, tr->awaiter, tr->awaiter_coro, copied ? aname : NULL, st);
	st->aw_kernel++;
	if ((!nk || (tr->aw_flags & TASK_AW_FRAMES_CUT)) && ga && k && k->awaiter == ga->addr) {
		st->aw_frames_graph++;
		for (unsigned f = 0; f < ga->nframes; f++)
			put_frame(t, &ga->frames[f], out, cap, n, NULL);
	} else if (nk) {
		st->aw_frames_kernel++;
		if (tr->aw_flags & TASK_AW_FRAMES_CUT)
			st->cut++;
		while (nk-- > 0)
			put_frame(t, &tr->aw_frames[nk], out, cap, n, NULL);
	} else {
		st->aw_unknown++;
	}
	put_mark(out, cap, n, 1, aname, ga ? ga->nawaiters : 0);
	if (ga && ga->awaiter)
		st->aw_above++;
	put_awaiters(t, ga, tr->awaiter, tr->task, out, cap, n, 2, st);
}

/* The kernel read the running task's awaiters where asyncio keeps them
 * (3.14+: awaited_by) and found none: a root task, certain at the sample.
 * On 3.11-3.13 a task with no task_wakeup callback may still be awaited
 * (through a gather or a TaskGroup), which only the graph tells. */
static int kernel_root(const struct rec_target *t, const struct task_rec *tr)
{
	return t->async->a.k.task_awaited_by && (tr->aw_flags & TASK_AW_READ) &&
	       !(tr->aw_flags & TASK_AW_NOT_TASK) && !tr->awaiter;
}

/*
 * The running task's mark and the chain above it (docs/async.md): the
 * kernel's awaiter when it saw one, unless it looked at only some of
 * several awaiters and the graph, which holds the running task, names one
 * (the lowest address of all); else the graph's chain where the graph
 * holds the running task; else a root when the kernel is sure of it.
 */
static void put_chain(struct rec_target *t, const struct task_rec *tr, const struct py_task *k,
		      const char *name, struct sym_frame *out, uint32_t cap, uint32_t *n,
		      struct async_stats *st)
{
	if (tr->awaiter && !(k && k->awaiter && (tr->aw_flags & TASK_AW_CUT))) {
		put_mark(out, cap, n, 0, name, k ? k->nawaiters : tr->nawaiters);
		put_kernel_awaiter(t, tr, k, out, cap, n, st);
	} else if (k && !kernel_root(t, tr)) {
		put_mark(out, cap, n, 0, name, k->nawaiters);
		if (k->awaiter)
			st->aw_graph++;
		else
			st->aw_root++;
		put_awaiters(t, k, tr->task, 0, out, cap, n, 1, st);
	} else {
		put_mark(out, cap, n, 0, name, 0);
		if (kernel_root(t, tr))
			st->aw_root++;
		else
			st->unresolved++;
	}
}

uint32_t async_compose(struct rec_target *t, const struct sample_hdr *h,
		       const struct frame_rec *frames, const struct task_rec *tr,
		       struct sym_frame *out, uint32_t cap, struct async_stats *st, int *unnamed)
{
	uint32_t n = 0, idx = tr->frame_idx, nf = h->nframes;
	int copied = (tr->flags & TASK_NAME_READ) != 0;
	const struct py_task *k;
	char name[PY_TASK_NAME_CAP];

	if (tr->flags & TASK_SCAN_CUT)
		st->scan_cut++;
	if (!tr->task) {
		st->no_task++;
		goto rest;
	}
	st->with_task++;
	if (!(tr->flags & TASK_AT_FRAME) || idx >= nf) {
		st->not_on_stack++;
		goto rest;
	}
	for (uint32_t i = 0; i <= idx; i++)
		put_frame(t, &frames[i], out, cap, &n, unnamed);
	/* The kernel's copy of the name, else the graph's (read with the task
	 * and coroutine the kernel saw), else read now. */
	if (copied)
		kernel_name(t, tr->task, tr->name_raw, name);
	k = verified(t, tr->task, tr->coro, copied ? name : NULL, st);
	if (!copied && k && k->name[0])
		snprintf(name, sizeof(name), "%s", k->name);
	else if (!copied)
		kernel_name(t, tr->task, NULL, name);
	put_chain(t, tr, k, name, out, cap, &n, st);
	idx++;
	for (uint32_t i = idx; i < nf; i++)
		put_frame(t, &frames[i], out, cap, &n, unnamed);
	if (n > cap)
		st->cut++;
	return n < cap ? n : cap;
rest:
	for (uint32_t i = 0; i < nf; i++)
		put_frame(t, &frames[i], out, cap, &n, unnamed);
	return n < cap ? n : cap;
}

uint32_t async_compose_stopped(struct rec_target *t, const struct thread_stack *ts,
			       const __u64 *addrs, struct sym_frame *out, uint32_t cap,
			       struct async_stats *st, int *unnamed)
{
	struct sample_hdr h = {.nframes = ts->nframes};
	struct task_rec tr = {.frame_idx = 0xffff};
	uint32_t idx;
	const struct py_task *k =
	    py_task_on_stack(&t->async->g, t->async->a.k.gen_iframe, addrs, ts->nframes, &idx);

	if (k) {
		tr.task = k->addr;
		tr.coro = k->coro;
		tr.frame_idx = (uint16_t)idx;
		tr.flags = TASK_AT_FRAME;
	}
	return async_compose(t, &h, ts->frames, &tr, out, cap, st, unnamed);
}

void async_snapshot_all(struct target_set *ts, uint64_t ts_ns, struct sym_frame *buf, uint32_t cap,
			struct async_stats *st, async_emit_fn emit, void *ctx)
{
	for (int i = 0; i < ts->n; i++) {
		struct rec_target *t = ts->t[i];
		struct async_target *at = t->async;
		struct diag d = {0};

		if (!at || !t->proc || t->exited || !py_asyncio_find(t->proc, &at->a))
			continue;
		if (py_asyncio_read(t->proc, &at->a, &at->g, &d) < 0)
			continue;
		py_asyncio_name(t->proc, &at->a, &at->g);
		at->read_ns = mono_ns();
		st->snapshots++;
		for (size_t k = 0; k < at->g.n; k++) {
			const struct py_task *task = &at->g.v[k];
			struct sym_sample s = {
			    .ts_ns = ts_ns, .pid = (uint32_t)t->pid, .frames = buf};
			uint32_t n = 0;

			if (task->state != PY_TASK_PENDING)
				continue;
			for (unsigned f = 0; f < task->nframes; f++)
				put_frame(t, &task->frames[f], buf, cap, &n, NULL);
			put_mark(buf, cap, &n, 0, task->name, task->nawaiters);
			put_awaiters(t, task, task->addr, 0, buf, cap, &n, 1, st);
			s.nframes = n < cap ? n : cap;
			s.flags = SAMPLE_WALL | SAMPLE_IDLE;
			emit(ctx, &s);
			code_cache_end_sample(t->cache);
			st->waiting++;
		}
	}
}
