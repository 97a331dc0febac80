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
    [WALK_ERR_THREAD_CYCLE] = "thread list loops",
    [WALK_ERR_NO_ENTRY] = "chain does not end at an entry frame",
    [WALK_ERR_UNNAMED] = "code object freed before it was named",
};

const char *walk_error_name(int err)
{
	if (err < 0 || err >= WALK_ERR__COUNT || !walk_errors[err])
		return "unknown";
	return walk_errors[err];
}

uint32_t stack_thread_tid(struct mem_reader *r, const struct proc_config *cfg, uint64_t tstate)
{
	uint64_t v = 0;

	if (!cfg->off.tstate_native_thread_id ||
	    mem_read(r, &v, sizeof(v), tstate + cfg->off.tstate_native_thread_id))
		return 0;
	return (uint32_t)v;
}

int stack_read_thread(struct mem_reader *r, const struct proc_config *cfg, uint64_t tstate,
		      struct thread_stack *ts)
{
	return stack_read_thread_addrs(r, cfg, tstate, ts, NULL);
}

int stack_read_thread_addrs(struct mem_reader *r, const struct proc_config *cfg, uint64_t tstate,
			    struct thread_stack *ts, __u64 *addrs)
{
	const struct py_offsets *o = &cfg->off;
	/* Static: its page copies are 34 KiB, too much for a thread's stack. */
	static _Thread_local struct walk_scratch scratch;
	struct walk_state w;
	uint64_t v = 0;

	memset(&w, 0, sizeof(w));
	w.frame_addrs = addrs;
	ts->tstate = tstate;
	ts->flags = 0;
	ts->err = 0;
	ts->nframes = 0;
	ts->leaf_op = ts->op_flags = 0;
	ts->tid = stack_thread_tid(r, cfg, tstate);
	ts->pthread_id = 0;
	if (!mem_read(r, &v, sizeof(v), tstate + o->tstate_thread_id))
		ts->pthread_id = v;
	walk_run(&w, cfg, r, &scratch, ts->frames, cfg->max_depth, tstate);
	ts->visited = w.visited;
	ts->flags = walk_gil_flags(r, cfg, tstate);
	if (w.truncated)
		ts->flags |= SAMPLE_TRUNCATED;
	if (w.err) {
		ts->flags |= SAMPLE_ERROR;
		ts->err = w.err;
		return -1;
	}
	ts->nframes = w.n;
	ts->leaf_op = ts->op_flags = 0;
	if (w.n && (cfg->flags & PROC_OPCODES)) {
		__u64 tmp[2];

		ts->op_flags = walk_leaf_op(r, cfg, &ts->frames[0], &ts->leaf_op, tmp);
	}
	return 0;
}

/* Entries of a looping list read before the loop was proven (Brent yields
 * up to about 2 (M + L) entries, see tstate_iter_next): keep each thread once, in
 * list order, and return how many are left. Only runs on a proven loop. */
static int drop_repeats(struct thread_stack *out, int n)
{
	for (int k = 1; k < n; k++)
		for (int i = 0; i < k; i++)
			if (out[i].tstate == out[k].tstate)
				return k; /* everything from the first repeat on came round again */
	return n;
}

int stack_read_all(struct mem_reader *r, const struct proc_config *cfg, struct thread_stack *out,
		   int max, int *count, struct diag *d)
{
	return stack_read_all_addrs(r, cfg, out, NULL, max, count, d);
}

int stack_read_all_addrs(struct mem_reader *r, const struct proc_config *cfg,
			 struct thread_stack *out, __u64 *addrs, int max, int *count,
			 struct diag *d)
{
	struct tstate_iter it;
	int n = 0;

	memset(&it, 0, sizeof(it));
	/* Bounded twice: a list too long is cut at STACK_MAX_THREADS, a list
	 * that loops is caught by the iterator. */
	while (n < STACK_MAX_THREADS && tstate_iter_next(r, cfg, &it, (uint32_t)n)) {
		if (n < max)
			stack_read_thread_addrs(r, cfg, it.tstate, &out[n],
						addrs ? addrs + (size_t)n * BPFPY_MAX_DEPTH : NULL);
		n++;
	}
	if (it.err == WALK_ERR_THREAD_CYCLE) {
		/* Past max the entries were not kept; the count is then an upper
		 * bound, which only a list of more than max threads can need. */
		*count = n <= max ? drop_repeats(out, n) : n;
		return diag_set(d, EXIT_FAIL,
				"thread list loops at 0x%llx (%d distinct thread states before it "
				"comes round again): the target's interpreter state is corrupt",
				(unsigned long long)it.mark, *count);
	}
	*count = n;
	if (it.err && n == 0)
		return diag_errno(d, r->last_errno ? r->last_errno : EFAULT,
				  "cannot read the interpreter's thread list (runtime at 0x%llx)",
				  (unsigned long long)cfg->runtime_addr);
	return 0;
}
