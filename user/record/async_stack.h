/* SPDX-License-Identifier: MIT */
/*
 * record --async: each sample of a thread whose event loop runs a task
 * becomes its task chain (docs/async.md): the thread's frames up to the
 * running task's coroutine frame, [task NAME], the frames where the task
 * that awaits it is suspended, its [task NAME], and so on to the root
 * task, then the loop's own frames. The running task is the kernel's
 * (struct task_rec, read at the sample); the awaiters come from the task
 * graph read here, and only for a task the graph holds with the coroutine
 * the kernel saw.
 */
#ifndef ASYNC_STACK_H
#define ASYNC_STACK_H

#include <stdint.h>

#include "bpfpy.h"
#include "diag.h"
#include "profile.h"
#include "py_asyncio.h"
#include "record_targets.h"
#include "stack_reader.h"

struct async_target {
	struct py_asyncio a;
	struct py_task_graph g;
	uint64_t read_ns; /* CLOCK_MONOTONIC when g was read, 0 never */
	int kernel_ready; /* the kernel has a's layout */
	/* g is what one stop read (the oracle's async reference): it is
	 * never read again to find a task it lacks. */
	int frozen;
};

/* What record's summary prints ("async: ..."), docs/async.md. */
struct async_stats {
	uint64_t with_task;    /* samples of a thread running a task */
	uint64_t no_task;      /* samples of a thread whose loop ran no task then */
	uint64_t not_on_stack; /* a running task whose coroutine frame was not in the stack */
	/* Where a chain's first awaiter came from (docs/async.md): */
	uint64_t aw_kernel;	   /* the kernel's (task_rec.awaiter), of which: */
	uint64_t aw_frames_kernel; /*   its frames read by the kernel at the sample */
	uint64_t aw_frames_graph;  /*   its frames from the graph */
	uint64_t aw_unknown;	   /*   its frames unknown: only its mark */
	uint64_t aw_above;	   /*   the chain above it from the graph */
	uint64_t aw_graph;	   /* the graph, which holds the running task */
	uint64_t aw_root;	   /* the running task is a root: awaited by none */
	uint64_t unresolved; /* its awaiters unknown: not in the graph, or another coroutine */
	uint64_t cut; /* chains cut: a cycle, past PY_TASK_CHAIN_MAX tasks, TASK_AW_FRAMES_CUT */
	uint64_t graph_reads; /* task graphs read while recording */
	uint64_t scan_cut;    /* 3.11-3.13: more running loops than the kernel scans */
	uint64_t waiting;     /* --async-mode all: waiting-task samples added */
	uint64_t snapshots;   /* --async-mode all: task graphs read at ticks */
};

/* Give t the async layout (PROC_ASYNC in its config). strict: refuse
 * versions without asyncio support (exit 2); else t is sampled without.
 * 0, or -1 with d set. */
int async_target_open(struct rec_target *t, int strict, struct diag *d);
void async_target_free(struct rec_target *t);

/* Targets whose asyncio was not imported yet: look again, and hand the
 * kernel the layout of those that have it now. */
void async_targets_poll(struct target_set *ts);

/* The task chain of one sample into out[0..cap), leaf first; returns the
 * frame count, *unnamed set when a sampled frame could not be named. */
uint32_t async_compose(struct rec_target *t, const struct sample_hdr *h,
		       const struct frame_rec *frames, const struct task_rec *tr,
		       struct sym_frame *out, uint32_t cap, struct async_stats *st, int *unnamed);

/*
 * The task chain of one thread's stack read while the target was stopped,
 * t->async->g read in the same stop and named (the oracle's async
 * reference, docs/oracle.md): the running task is the graph's running
 * task whose coroutine frame is among the thread's frames (addrs, their
 * addresses, leaf first), and the chain is composed as async_compose
 * composes a sample, so the two compare key for key. t->async->frozen
 * must be set.
 */
uint32_t async_compose_stopped(struct rec_target *t, const struct thread_stack *ts,
			       const __u64 *addrs, struct sym_frame *out, uint32_t cap,
			       struct async_stats *st, int *unnamed);

/*
 * --async-mode all, at each snapshot tick: every waiting task of every
 * target, as a sample of its own (pid, tid 0): its suspended frames, leaf
 * first, its [task NAME], then the chain of its awaiters to the root, as
 * async_compose builds it. Running tasks are the kernel's samples of their
 * threads. emit gets each sample (frames valid until it returns).
 */
typedef void (*async_emit_fn)(void *ctx, const struct sym_sample *s);
void async_snapshot_all(struct target_set *ts, uint64_t ts_ns, struct sym_frame *buf, uint32_t cap,
			struct async_stats *st, async_emit_fn emit, void *ctx);

/* The task record of h, or NULL (bpf_sampler checked its size). */
static inline const struct task_rec *async_task_rec(const struct sample_hdr *h,
						    const struct frame_rec *frames)
{
	if (!(h->task_flags & TASK_REC_PRESENT))
		return NULL;
	return (const struct task_rec *)((const uint8_t *)(frames + h->nframes) +
					 ((size_t)h->nnative + h->nkernel) * sizeof(__u64));
}

#endif /* ASYNC_STACK_H */
