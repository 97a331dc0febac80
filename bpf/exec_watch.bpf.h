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

SEC("tp_btf/sched_process_exec")
int on_exec(__u64 *ctx)
{
	/* After de_thread() the exec'ing thread is the leader: pid == tgid. */
	__u32 pid = bpf_get_current_pid_tgid() >> 32, one = 1;

	(void)ctx; /* (task, old_pid, bprm): the current task says all we need */
	if (bpf_map_delete_elem(&proc_configs, &pid)) /* not a target: -ENOENT */
		return 0;
	bpf_map_update_elem(&execed, &pid, &one, BPF_ANY);
	return 0;
}

#endif /* EXEC_WATCH_BPF_H */
