/* SPDX-License-Identifier: MIT */
/*
 * Who a task is, in the terms a sample needs: host tgid and tid for the
 * record, the tid in the task's own PID namespace for matching 3.11+ thread
 * states, and pthread_self() for <= 3.10. Included by every BPF program that
 * samples, after py_sample.bpf.h (struct sample_req).
 *
 * Why the namespace tid: CPython stores gettid() in native_thread_id, and in
 * a container gettid() answers in the container's PID namespace (1, 2, ...),
 * while bpf_get_current_pid_tgid() and task->pid answer in the host's.
 * Comparing the two would find no thread state for any thread. The task's
 * struct pid holds its id at every level down to its own namespace;
 * numbers[pid->level] is the one the task itself sees. Read with CO-RE, so
 * no layout is assumed beyond the field names.
 */
#ifndef TASK_IDS_BPF_H
#define TASK_IDS_BPF_H

#include <bpf/bpf_core_read.h>

/* task_struct.flags: getting shut down (PF_EXITING, include/linux/sched.h,
 * the same value since 2.6). */
#define TASK_PF_EXITING 0x00000004

/* PID namespaces nest at most this deep (MAX_PID_NS_LEVEL in the kernel). */
#define TASK_MAX_NS_LEVEL 32

static __always_inline __u32 task_ns_tid(struct task_struct *task, __u32 host_tid)
{
	struct pid *p = task->thread_pid;
	unsigned int level;
	int nr = 0;
	__u64 addr;

	/* Plain loads, not bpf_core_read: the task is a BTF pointer, so a load
	 * is one instruction (a fault reads 0) where a helper call runs the
	 * kernel's copy routine, whose code is cold at 100 Hz. */
	if (!p)
		return host_tid;
	level = p->level;
	if (!level)
		return host_tid;
	if (level >= TASK_MAX_NS_LEVEL)
		return host_tid;
	addr = (__u64)p + bpf_core_field_offset(struct pid, numbers) +
	       (__u64)level * bpf_core_type_size(struct upid) +
	       bpf_core_field_offset(struct upid, nr);
	if (bpf_probe_read_kernel(&nr, sizeof(nr), (const void *)addr) || nr <= 0)
		return host_tid;
	return (__u32)nr;
}

/* Fill the task's part of a sample request (after its cfg). */
static __always_inline void sample_req_task(struct sample_req *q, struct task_struct *task)
{
	q->pid = task->tgid;
	q->tid = task->pid;
	q->ns_tid =
	    q->cfg && (q->cfg->flags & PROC_INITIAL_PID_NS) ? q->tid : task_ns_tid(task, q->tid);
	/* pthread_self() is the thread's fs base with glibc on x86_64; only
	 * Python <= 3.10, whose thread states lack the OS tid, needs it. */
	q->pthread_self = task->thread.fsbase;
	/* do_exit() sets PF_EXITING before it tears the task's memory down,
	 * and execve() replaces the memory before the exec hook drops the
	 * process's config (bpf/exec_watch.bpf.h): a tick in either reads
	 * nothing of the target (a thread ending, not a fault). */
	q->exiting = !!(task->flags & TASK_PF_EXITING);
	if (bpf_core_field_exists(task->in_execve) && BPF_CORE_READ_BITFIELD(task, in_execve))
		q->exiting = 1;
	q->young = task->se.sum_exec_runtime < THREAD_STARTING_MAX_NS;
}

#endif /* TASK_IDS_BPF_H */
