/* SPDX-License-Identifier: MIT */
/*
 * What bpf/tracer.bpf.c and user space share beyond bpfpy.h: the location
 * counters and the per-probe configuration. Same rules as bpfpy.h: fixed
 * widths, explicit padding, compiles in BPF C and in user space.
 */
#ifndef TRACE_BPF_H
#define TRACE_BPF_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define TRACE_MAX_PROBES 64
#define TRACE_MAX_LOCS	 65536

enum trace_role {
	TRACE_ROLE_SINGLE = 0, /* an instant event */
	TRACE_ROLE_ENTRY = 1,  /* opens a pair (function__entry, uprobe with --uretprobe) */
	TRACE_ROLE_RETURN = 2, /* closes it */
};

struct trace_probe_cfg {
	__u32 role; /* enum trace_role */
	__u32 pad;
};

/* A location: the probe, and the code object it fired in (0: no Python
 * frame, e.g. a native thread). */
struct trace_loc_key {
	__u32 probe_id;
	__u32 pad;
	__u64 code;
};

struct trace_loc_stats {
	__u64 hits;	    /* every hit while attached, exact */
	__u64 emitted;	    /* of which emitted in full */
	__u64 first_ns;	    /* first hit, bpf_ktime_get_ns() */
	__u64 saturated_ns; /* first hit only counted, 0 if none yet */
};

#endif /* TRACE_BPF_H */
