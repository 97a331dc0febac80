/* SPDX-License-Identifier: MIT */
/*
 * Threads of a target that are born and die while it is sampled (issue 28):
 * a server that starts a thread per request, a short-lived executor. Their
 * first samples searched the interpreter's thread list cold, and their last
 * ones read thread states already freed. Four hooks keep tid_tstates
 * (bpf/py_sample.bpf.h) exact instead:
 *
 *   spawn   uprobe on the function _thread hands a new thread's bootstrap
 *           to (py_thread_spawn_symbol: PyThread_start_new_thread up to
 *           3.12, PyThread_start_joinable_thread from 3.13), in the
 *           creator: the new thread's state is in its argument, made and
 *           not yet bound (the creator's id, or 0, in its thread id).
 *   clone   tp_btf/sched_process_fork: the thread that creator clones next
 *           is entered with that state, THREAD_PHASE_STARTING, before it
 *           runs; its first sample checks whether it bound it since.
 *   clear   uprobe on PyThreadState_Clear, which every way a state is freed
 *           goes through first: its thread's entry becomes
 *           THREAD_PHASE_EXITING and the process's slot forgets it, so the
 *           state is never read again.
 *   exit    tp_btf/sched_process_exit: the thread's entry goes.
 *
 * The uprobes are attached per target process (user/sampler/bpf_sampler.c
 * bpf_sampler_watch_threads); the tracepoints run for every fork and exit
 * of the host and cost those of other processes one hash lookup. Their
 * runs and time are counted (CNT_HOOK_RUNS, CNT_HOOK_NS). Included by the
 * samplers after py_sample.bpf.h and task_ids.bpf.h; reads only the
 * current task's memory, with bpf_probe_read_user (not sleepable).
 */
#ifndef THREAD_WATCH_BPF_H
#define THREAD_WATCH_BPF_H

/* A spawn seen in a creator thread, for the clone that follows it. */
struct spawn_note {
	__u64 tstate;
	__u64 ns; /* bpf_ktime_get_ns() at the spawn */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* host tid of the creator */
	__type(value, struct spawn_note);
} spawns SEC(".maps");

/* pthread_create clones at once, unless its thread is preempted on a host
 * that is out of CPU; a note older than this is of a spawn whose clone
 * failed, and is not given to a later clone of its creator (were it, that
 * thread would be searched for once it used THREAD_STARTING_MAX_NS of CPU
 * without binding). */
#define SPAWN_CLONE_MAX_NS 1000000000ULL

static __always_inline void hook_cost(__u64 start)
{
	count_add(CNT_HOOK_RUNS, 1);
	count_add(CNT_HOOK_NS, bpf_ktime_get_ns() - start);
}

/* The new thread's state in the spawn's argument boot, or 0 if what is
 * there is not one: the word at its place must hold the id a new state
 * has before its thread binds it. */
static __always_inline __u64 spawn_tstate(const struct proc_config *cfg, __u64 boot,
					  __u64 creator_self)
{
	const struct py_offsets *o = &cfg->off;
	__u64 off = o->boot_tstate, word = 0, tstate = 0, id = 1;

	/* 3.11's older bootstate: the state right before &_PyRuntime */
	if (o->boot_runtime &&
	    !bpf_probe_read_user(&word, sizeof(word), (const void *)(boot + o->boot_runtime)) &&
	    word == cfg->runtime_addr)
		off = o->boot_runtime - 8;
	if (bpf_probe_read_user(&tstate, sizeof(tstate), (const void *)(boot + off)) || !tstate ||
	    bpf_probe_read_user(&id, sizeof(id), (const void *)(tstate + o->tstate_thread_id)))
		return 0;
	return id == (o->boot_tid_parent ? creator_self : 0) ? tstate : 0;
}

SEC("uprobe")
int on_thread_spawn(struct pt_regs *ctx)
{
	__u64 start = bpf_ktime_get_ns(), pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct proc_config *cfg = bpf_map_lookup_elem(&proc_configs, &pid);
	struct spawn_note n = {.ns = start};
	__u64 boot = PT_REGS_PARM2(ctx);

	if (!cfg || !boot || !cfg->off.thread_hooks)
		return 0;
	n.tstate = spawn_tstate(cfg, boot, bpf_get_current_task_btf()->thread.fsbase);
	if (n.tstate)
		bpf_map_update_elem(&spawns, &tid, &n, BPF_ANY);
	hook_cost(start);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int on_thread_clone(__u64 *ctx)
{
	/* (parent, child), typed by the tracepoint's BTF; the parent runs */
	struct task_struct *parent = (struct task_struct *)ctx[0];
	struct task_struct *child = (struct task_struct *)ctx[1];
	struct thread_entry e = {.phase = THREAD_PHASE_STARTING, .flags = THREAD_SPAWNED};
	struct tstate_owner_key k = {};
	struct spawn_note *n;
	__u32 creator = parent->pid, tid = child->pid;
	__u64 start;

	if (tid == (__u32)child->tgid) /* a process, not a thread */
		return 0;
	n = bpf_map_lookup_elem(&spawns, &creator);
	if (!n)
		return 0;
	start = bpf_ktime_get_ns();
	e.tstate = n->tstate;
	e.pid = child->tgid;
	if (start - n->ns < SPAWN_CLONE_MAX_NS) {
		k.pid = e.pid;
		k.tstate = e.tstate;
		bpf_map_update_elem(&tid_tstates, &tid, &e, BPF_ANY);
		bpf_map_update_elem(&tstate_owners, &k, &tid, BPF_ANY);
		count_add(CNT_THREADS_BORN, 1);
	}
	bpf_map_delete_elem(&spawns, &creator);
	hook_cost(start);
	return 0;
}

/* PyThreadState_Clear(tstate): by its own thread (the end of a thread, or
 * PyGILState_Release), or by another (finalization). */
SEC("uprobe")
int on_tstate_clear(struct pt_regs *ctx)
{
	__u64 start = bpf_ktime_get_ns(), pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid, *owner;
	struct proc_config *cfg = bpf_map_lookup_elem(&proc_configs, &pid);
	struct tstate_owner_key k = {.pid = pid, .tstate = PT_REGS_PARM1(ctx)};
	struct thread_entry *e, fresh = {.pid = pid, .phase = THREAD_PHASE_EXITING};
	struct sample_req q = {.cfg = cfg};
	__u64 v = 0;

	if (!cfg || !k.tstate)
		return 0;
	owner = bpf_map_lookup_elem(&tstate_owners, &k);
	if (owner) {
		tid = *owner;
		bpf_map_delete_elem(&tstate_owners, &k);
	}
	e = bpf_map_lookup_elem(&tid_tstates, &tid);
	if (e && e->pid == pid && e->tstate == k.tstate) {
		e->phase = THREAD_PHASE_EXITING;
		count_add(CNT_THREADS_CLEARED, 1);
	} else if (!owner) {
		/* A state no sample met: the caller's own, if its id says so. */
		sample_req_task(&q, bpf_get_current_task_btf());
		fresh.tstate = k.tstate;
		if (!bpf_probe_read_user(&v, sizeof(v),
					 (const void *)(k.tstate + tstate_id_off(&cfg->off))) &&
		    tstate_id_is(&cfg->off, v, q.ns_tid, q.pthread_self) &&
		    !bpf_map_update_elem(&tid_tstates, &tid, &fresh, BPF_ANY))
			count_add(CNT_THREADS_CLEARED, 1);
	}
	for (__u32 i = 0; i < PROC_TSTATE_SLOTS; i++)
		if (cfg->tstates[i] == k.tstate)
			cfg->tstates[i] = 0;
	hook_cost(start);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int on_thread_exit(__u64 *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), start;
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct thread_entry *e = bpf_map_lookup_elem(&tid_tstates, &tid);
	struct tstate_owner_key k = {.pid = pid};
	struct proc_config *cfg;
	__u32 *owner;

	(void)ctx; /* (task, group_dead): the current task says all we need */
	if (!e)
		return 0;
	start = bpf_ktime_get_ns();
	if (e->pid == pid) {
		k.tstate = e->tstate;
		owner = bpf_map_lookup_elem(&tstate_owners, &k);
		if (owner && *owner == tid)
			bpf_map_delete_elem(&tstate_owners, &k);
		cfg = bpf_map_lookup_elem(&proc_configs, &pid);
		if (cfg && cfg->tstates[tid & (PROC_TSTATE_SLOTS - 1)] == k.tstate)
			cfg->tstates[tid & (PROC_TSTATE_SLOTS - 1)] = 0;
	}
	bpf_map_delete_elem(&tid_tstates, &tid);
	hook_cost(start);
	return 0;
}

#endif /* THREAD_WATCH_BPF_H */
