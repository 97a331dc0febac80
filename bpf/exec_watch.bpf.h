/* SPDX-License-Identifier: MIT */
/*
 * A sampled process that calls execve keeps its PID but loses the image its
 * proc_config describes: the next tick would walk the new program's memory
 * with the old interpreter's addresses. This hook forgets the config in the
 * same instant, before the new image runs a single instruction, and leaves
 * the PID in `execed` for user space, which resolves the new image again (it
 * may be another Python, or no Python at all). Included by the samplers
 * after py_sample.bpf.h, whose proc_configs map it edits.
 */
#ifndef EXEC_WATCH_BPF_H
#define EXEC_WATCH_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* host tgid that exec'd while configured */
	__type(value, __u32);
} execed SEC(".maps");

/*
 * Processes that may have become new targets, for a recording whose target
 * set grows (record -a, --subprocesses; set before load): every process
 * that execs, and every process a target forks. User space pops them and
 * looks at those only, instead of rescanning /proc on a timer: its work
 * then follows the rate processes start at, not the number that exist.
 * A full queue loses the PID and says so in new_pids_lost[0]; user space
 * then rescans /proc once.
 */
const volatile __u32 watch_new = 0;

#define NEW_PIDS_MAX 4096

struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, NEW_PIDS_MAX);
	__type(value, __u32); /* host tgid */
} new_pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} new_pids_lost SEC(".maps");

static __always_inline void new_pid_push(__u32 pid)
{
	__u32 zero = 0, *lost;

	if (!bpf_map_push_elem(&new_pids, &pid, BPF_ANY))
		return;
	lost = bpf_map_lookup_elem(&new_pids_lost, &zero);
	if (lost)
		__sync_fetch_and_add(lost, 1);
}

SEC("tp_btf/sched_process_exec")
int on_exec(__u64 *ctx)
{
	/* After de_thread() the exec'ing thread is the leader: pid == tgid. */
	__u32 pid = bpf_get_current_pid_tgid() >> 32, one = 1;

	(void)ctx; /* (task, old_pid, bprm): the current task says all we need */
	if (watch_new)
		new_pid_push(pid);
	bpf_map_delete_elem(&tid_tstates, &pid);      /* the old image's state */
	if (bpf_map_delete_elem(&proc_configs, &pid)) /* not a target: -ENOENT */
		return 0;
	bpf_map_update_elem(&execed, &pid, &one, BPF_ANY);
	return 0;
}

/* A target's fork is a new Python process without an exec (multiprocessing
 * "fork", os.fork()); threads (same tgid) are not processes. */
SEC("tp_btf/sched_process_fork")
int on_fork(__u64 *ctx)
{
	/* (parent, child), typed by the tracepoint's BTF */
	struct task_struct *parent = (struct task_struct *)ctx[0];
	struct task_struct *child = (struct task_struct *)ctx[1];
	__u32 ptgid = parent->tgid;

	if (!watch_new || child->pid != child->tgid)
		return 0;
	if (bpf_map_lookup_elem(&proc_configs, &ptgid))
		new_pid_push((__u32)child->tgid);
	return 0;
}

#endif /* EXEC_WATCH_BPF_H */
