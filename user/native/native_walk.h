/* SPDX-License-Identifier: MIT */
/*
 * The user-space build of the one native unwinder (bpf/native_step.h): the
 * same step the sampler runs in the kernel, over rows held in memory (the
 * tables native_tables.c builds, kept locally instead of in BPF maps) and
 * target memory read through a struct mem_reader (process_vm_readv, or an
 * image in tests). bpfpy dump runs it from each ptrace-stopped thread's
 * registers, so that its stacks are the ones record would show.
 */
#ifndef NATIVE_WALK_H
#define NATIVE_WALK_H

#include <stdint.h>

#include "bpfpy.h"

struct mem_reader;

/* Where a walk's rows and memory come from. */
struct native_walk_env {
	const struct native_proc *proc; /* the process's sorted executable mappings */
	const struct unwind_row *rows;	/* every file's rows; native_map.first indexes them */
	uint32_t nrows;
	struct mem_reader *mem;
};

struct native_walk_out {
	uint64_t ips[NATIVE_MAX_DEPTH]; /* leaf first: [0] the thread's ip */
	uint32_t n;
	uint32_t flags;	    /* sample_hdr.native_flags: NATIVE_FP_FALLBACK, _TRUNCATED, _LOST */
	uint32_t fp_frames; /* frames found by frame pointer */
};

/* Unwind from registers ip, sp, bp. Always fills out (n >= 1: the ip). */
void native_walk(const struct native_walk_env *env, uint64_t ip, uint64_t sp, uint64_t bp,
		 struct native_walk_out *out);

/* "no mapping" etc. for enum native_cause. */
const char *native_cause_name(unsigned cause);

#endif /* NATIVE_WALK_H */
