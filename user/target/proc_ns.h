/* SPDX-License-Identifier: MIT */
/*
 * Thread ids across PID namespaces. A process in a container knows its
 * threads by the ids of its own PID namespace (1, 2, ...: what gettid()
 * answers there, and what CPython 3.11+ stores in native_thread_id); bpfpy
 * reports host ids. The kernel lists both, outermost first, on the NSpid
 * line of /proc/PID/task/TID/status.
 */
#ifndef PROC_NS_H
#define PROC_NS_H

#include <stdint.h>
#include <sys/types.h>

#include "diag.h"

struct ns_tid {
	uint32_t host; /* as seen from bpfpy's PID namespace */
	uint32_t ns;   /* as seen from the target's own */
};

/* Every thread of one process, both ids. */
struct ns_tids {
	int n;
	int nested; /* 1 if the target's PID namespace is not ours */
	struct ns_tid *v;
};

/*
 * Parse the NSpid line of a status file's text (len bytes, need not end in
 * NUL): *outer is the first id (ours), *inner the last (the task's own
 * namespace), *levels the number of ids. Returns 0, or -1 if there is no
 * well-formed NSpid line (kernels before 4.1 have none).
 */
int proc_ns_parse_nspid(const char *text, size_t len, uint32_t *outer, uint32_t *inner,
			int *levels);

/* Read the ids of every thread of pid now. Threads that exit meanwhile are
 * skipped; a process that is gone is an error (EXIT_NO_PROCESS). */
int proc_ns_tids_read(pid_t pid, struct ns_tids *t, struct diag *d);

/* The host tid of the thread the target calls ns_tid, 0 if none. */
uint32_t proc_ns_host_tid(const struct ns_tids *t, uint32_t ns_tid);
/* The reverse: the target's id of host thread host_tid, 0 if none. */
uint32_t proc_ns_inner_tid(const struct ns_tids *t, uint32_t host_tid);

void proc_ns_tids_free(struct ns_tids *t);

/* 1 if pid's PID namespace is not ours (two stats: much cheaper than
 * proc_ns_tids_read, which reads a status file per thread). 0 if not, or
 * if either cannot be looked at. */
int proc_ns_pid_nested(pid_t pid);

/* 1 only if pid is known to be in the initial PID namespace (ours, and ours
 * is the initial one), where the ids a thread sees are the kernel's
 * task->pid: the BPF side then need not read them from the task's PID
 * links. 0 if not, or if it cannot be told. */
int proc_ns_pid_is_initial(pid_t pid);

#endif /* PROC_NS_H */
