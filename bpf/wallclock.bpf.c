// SPDX-License-Identifier: MIT
/*
 * Wall-clock snapshots: a sleepable task iterator visits every thread of the
 * configured processes, running or not, and walks its frames with
 * bpf_copy_from_user_task. User space runs the iterator (by reading its
 * link) at the instants it chooses, fixed or Poisson. Nothing is stopped: a
 * thread that is running while we read it may be caught mid-change, which
 * the walker reports as an error rather than a wrong stack.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

struct bpf_reader {
	struct task_struct *task;
};

#define WALK_READER_T struct bpf_reader
#define WALK_READ(r, dst, size, addr)                                                              \
	bpf_copy_from_user_task((dst), (size), (const void *)(addr), (r)->task, 0)

#include "frame_walker.h"
#include "py_sample.bpf.h"
#include "task_ids.bpf.h"
#include "exec_watch.bpf.h"
#include "thread_watch.bpf.h"

SEC("iter.s/task")
int wall_snapshot(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct bpf_reader r;
	struct sample_req q = {.reader = &r};
	__u32 pid;

	if (!task)
		return 0;
	pid = task->tgid;
	q.cfg = bpf_map_lookup_elem(&proc_configs, &pid);
	if (!q.cfg)
		return 0;
	r.task = task;
	q.start_ns = bpf_ktime_get_ns();
	/* TASK_RUNNING (0) covers both on a CPU and waiting for one. */
	q.flags = SAMPLE_WALL | (task->__state ? SAMPLE_IDLE : 0);
	sample_req_task(&q, task);
	count_add(CNT_TICKS, 1);
	count_add(CNT_KEPT, 1);
	sample_thread(&q);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
