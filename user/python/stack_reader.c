// SPDX-License-Identifier: MIT
#include "stack_reader.h"

#include <errno.h>
#include <string.h>

#include "walker_user.h"

static const char *const walk_errors[WALK_ERR__COUNT] = {
    [WALK_OK] = "ok",
    [WALK_ERR_READ_TSTATE] = "tstate unreadable",
    [WALK_ERR_READ_FRAME] = "frame unreadable",
    [WALK_ERR_READ_CODE] = "code object unreadable",
    [WALK_ERR_BAD_CODE] = "not a code object",
    [WALK_ERR_NO_BASE] = "chain not ending at base_frame",
    [WALK_ERR_NO_TSTATE] = "no thread state",
    [WALK_ERR_NO_CONFIG] = "process not configured",
    [WALK_ERR_CYCLE] = "frame cycle",
};

const char *walk_error_name(int err)
{
	if (err < 0 || err >= WALK_ERR__COUNT || !walk_errors[err])
		return "unknown";
	return walk_errors[err];
}

static uint8_t gil_flags(struct mem_reader *r, const struct proc_config *cfg, uint64_t tstate)
{
	uint64_t holder = 0;
	uint32_t locked = 0;

	if (!cfg->gil_holder_addr || !cfg->gil_locked_addr)
		return 0;
	if (mem_read(r, &holder, sizeof(holder), cfg->gil_holder_addr) ||
	    mem_read(r, &locked, sizeof(locked), cfg->gil_locked_addr))
		return 0;
	return SAMPLE_GIL_KNOWN | (locked && holder == tstate ? SAMPLE_GIL_HELD : 0);
}

int stack_read_thread(struct mem_reader *r, const struct proc_config *cfg, uint64_t tstate,
		      struct thread_stack *ts)
{
	const struct py_offsets *o = &cfg->off;
	struct walk_scratch scratch;
	struct walk_state w = {
	    .cfg = cfg,
	    .reader = r,
	    .scratch = &scratch,
	    .out = ts->frames,
	    .max = cfg->max_depth && cfg->max_depth <= BPFPY_MAX_DEPTH ? cfg->max_depth
								       : BPFPY_MAX_DEPTH,
	};
	uint64_t v = 0;

	ts->tstate = tstate;
	ts->flags = 0;
	ts->err = 0;
	ts->nframes = 0;
	ts->tid = 0;
	ts->pthread_id = 0;
	if (o->tstate_native_thread_id &&
	    !mem_read(r, &v, sizeof(v), tstate + o->tstate_native_thread_id))
		ts->tid = (uint32_t)v;
	if (!mem_read(r, &v, sizeof(v), tstate + o->tstate_thread_id))
		ts->pthread_id = v;
	if (walk_begin(&w, tstate) == WALK_OK) {
		/* Same bound as the BPF loop: depth plus room for skipped frames. */
		for (uint32_t i = 0; i < w.max + 64; i++)
			if (walk_step(&w))
				break;
		if (!w.done && !w.err)
			w.truncated = 1;
	}
	ts->visited = w.visited;
	ts->flags = gil_flags(r, cfg, tstate);
	if (w.truncated)
		ts->flags |= SAMPLE_TRUNCATED;
	if (w.err) {
		ts->flags |= SAMPLE_ERROR;
		ts->err = w.err;
		return -1;
	}
	ts->nframes = w.n;
	return 0;
}

int stack_read_all(struct mem_reader *r, const struct proc_config *cfg, struct thread_stack *out,
		   int max, int *count, struct diag *d)
{
	struct tstate_iter it;
	int n = 0;

	memset(&it, 0, sizeof(it));
	/* Bounded: a corrupt or cyclic thread list must not hang us. */
	while (n < STACK_MAX_THREADS && tstate_iter_next(r, cfg, &it)) {
		if (n < max)
			stack_read_thread(r, cfg, it.tstate, &out[n]);
		n++;
	}
	*count = n;
	if (it.err && n == 0)
		return diag_errno(d, r->last_errno ? r->last_errno : EFAULT,
				  "cannot read the interpreter's thread list (runtime at 0x%llx)",
				  (unsigned long long)cfg->runtime_addr);
	return 0;
}
