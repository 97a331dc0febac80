/* SPDX-License-Identifier: MIT */
/*
 * Every thread's stack of a process, read from user space with the same
 * walker the BPF programs run (bpf/frame_walker.h). Used by `dump`, by the
 * oracle's ptrace and live modes, and by tests over memory images.
 */
#ifndef STACK_READER_H
#define STACK_READER_H

#include <stdint.h>

#include "bpfpy.h"
#include "diag.h"
#include "mem_reader.h"

/* Threads read per process at most; more are reported, not read. */
#define STACK_MAX_THREADS 4096

struct thread_stack {
	uint64_t tstate;
	uint64_t pthread_id; /* pthread_t, every version */
	uint32_t tid;	     /* OS thread id; 0 where the version does not keep it */
	uint8_t flags;	     /* SAMPLE_* */
	uint8_t err;	     /* enum walk_error, with SAMPLE_ERROR */
	/* cfg->flags has PROC_OPCODES: the leaf frame's instruction byte and
	 * OP_* flags, read by the one walker's walk_leaf_op() as the kernel
	 * reads them (bpfpy.h, sample_hdr.leaf_op); else 0, 0. */
	uint8_t leaf_op, op_flags;
	uint32_t nframes;
	uint32_t visited;
	struct frame_rec frames[BPFPY_MAX_DEPTH]; /* leaf first */
};

/* The OS thread id a thread state records (3.11+: as the target's own PID
 * namespace numbers it), 0 if the version keeps none or it is unreadable. */
uint32_t stack_thread_tid(struct mem_reader *r, const struct proc_config *cfg, uint64_t tstate);

/* Walk one thread state. Returns 0, or -1 with ts->err set. */
int stack_read_thread(struct mem_reader *r, const struct proc_config *cfg, uint64_t tstate,
		      struct thread_stack *ts);

/* The same, and each frame's address into addrs[0..ts->nframes) (NULL:
 * not asked), for readers of the frames themselves (dump --locals). */
int stack_read_thread_addrs(struct mem_reader *r, const struct proc_config *cfg, uint64_t tstate,
			    struct thread_stack *ts, __u64 *addrs);

/* Every thread of every interpreter, into out[0..max). *count is the number of
 * thread states found (may exceed max: the rest are not read). Returns -1 with
 * d set only when the thread list itself cannot be read. */
int stack_read_all(struct mem_reader *r, const struct proc_config *cfg, struct thread_stack *out,
		   int max, int *count, struct diag *d);

/* The same, and thread i's frame addresses at addrs + i * BPFPY_MAX_DEPTH
 * (addrs NULL: not asked; else max * BPFPY_MAX_DEPTH entries). */
int stack_read_all_addrs(struct mem_reader *r, const struct proc_config *cfg,
			 struct thread_stack *out, __u64 *addrs, int max, int *count,
			 struct diag *d);

/* What an enum walk_error means, for messages and summaries. */
const char *walk_error_name(int err);

#endif /* STACK_READER_H */
