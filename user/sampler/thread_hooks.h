/* SPDX-License-Identifier: MIT */
/*
 * The hooks that keep the kernel's map of threads exact while targets
 * start and end threads (bpf/thread_watch.bpf.h, issue 28): two
 * tracepoints for the host (clone, exit), attached with the first target,
 * and two uprobes per target process on its interpreter's file (the spawn
 * function of its version, PyThreadState_Clear), detached with it.
 * BPFPY_THREAD_HOOKS=0 in the environment attaches none (the samples of
 * new threads then search the thread list, as before the hooks).
 */
#ifndef THREAD_HOOKS_H
#define THREAD_HOOKS_H

#include <stdint.h>
#include <sys/types.h>

struct bpf_object;
struct diag;
struct py_binary;
struct thread_hooks;

/* The hooks of a loaded sampler object (sampler.bpf.c or wallclock.bpf.c),
 * or NULL when they are switched off or the object has none. */
struct thread_hooks *thread_hooks_new(struct bpf_object *obj);
/* Watch pid's threads: b is its interpreter's file, hex its version. 0, or
 * -1 with d set (the process is then sampled without them). */
int thread_hooks_add(struct thread_hooks *h, pid_t pid, const struct py_binary *b, uint32_t hex,
		     struct diag *d);
void thread_hooks_remove(struct thread_hooks *h, pid_t pid);
/* Processes watched now, and those whose hooks could not be attached. */
void thread_hooks_stats(const struct thread_hooks *h, int *watched, int *failed);
void thread_hooks_free(struct thread_hooks *h);

#endif /* THREAD_HOOKS_H */
