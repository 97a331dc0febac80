/* SPDX-License-Identifier: MIT */
/*
 * Off-CPU time from user space: loads bpf/offcpu.bpf.c beside the on-CPU
 * sampler, sharing its maps (the processes it samples, the thread-state
 * cache, the kernel's code names and the ring buffer), so that off-CPU
 * records arrive on the same callback as samples and are told apart by
 * sample_hdr.offcpu_reason. Also the names of the reasons, the one place
 * that spells them.
 */
#ifndef OFFCPU_H
#define OFFCPU_H

#include <stdint.h>

#include "bpfpy.h"
#include "diag.h"

struct offcpu;
struct bpf_object;

struct offcpu_opts {
	uint64_t min_block_ns; /* --min-block-us: shorter blocks are dropped in the kernel */
};

/* Open and load the off-CPU program with the maps of shared (the loaded
 * sampler object) reused by name. 0, or -1 with d set. */
int offcpu_open(struct offcpu **out, struct bpf_object *shared, const struct offcpu_opts *o,
		struct diag *d);
/* Attach to sched_switch: from here every target thread's blocks are kept. */
int offcpu_start(struct offcpu *oc, struct diag *d);
/* Write every block still open up to now (threads asleep at the end),
 * then detach: nothing new is written; what is queued can be drained. */
void offcpu_stop(struct offcpu *oc);
void offcpu_close(struct offcpu *oc);
/* Counters summed over CPUs, indexed by enum offcpu_counter. 0, or -1. */
int offcpu_counters(struct offcpu *oc, uint64_t out[OFFC__COUNT]);

/* "gil", "lock", "io", ... for an enum offcpu_reason ("other" if unknown). */
const char *offcpu_reason_name(unsigned reason);
/* The leaf frame drawn for it: "[off-cpu: gil]", ... */
const char *offcpu_reason_frame(unsigned reason);

#endif /* OFFCPU_H */
