/* SPDX-License-Identifier: MIT */
/*
 * Native (and kernel) frames of a sample, unwound in the kernel from the
 * interrupted user registers with the unwind tables user space built from
 * each mapped ELF's CFI (user/native/unwind_tables.c; layouts in bpfpy.h).
 *
 * The step itself (mapping and row lookup, CFA, return address, saved
 * rbp, frame-pointer fallback, the stop causes) is bpf/native_step.h, the
 * one unwinder that bpfpy dump runs too; here are its primitives (rows
 * from the native_rows array, reads with bpf_probe_read_user, bpf_loop),
 * the maps, and native_append, which starts it from the interrupted
 * registers and fills the record's header.
 *
 * Bounded: NATIVE_MAX_DEPTH frames through bpf_loop, each with two binary
 * searches of at most 9 and 23 halvings, so the cost per sample has a
 * ceiling.
 * Included by bpf/sampler.bpf.c and bpf/tracer.bpf.c, which define BPFPY_NATIVE; with
 * want_native and want_kernel false (the default) the program is the same
 * as before but for two branches, and the record the same size.
 */
#ifndef NATIVE_UNWIND_BPF_H
#define NATIVE_UNWIND_BPF_H

#include "bpfpy.h"

/* The user registers to unwind from, by the includer's kind of program:
 * a tick may have interrupted the kernel, so the task's (the default); a
 * uprobe's ctx is them (bpf/tracer.bpf.c). A macro, not a branch: the
 * verifier refuses one load instruction used with two kinds of pointer. */
#ifndef NATIVE_USER_REGS
#define NATIVE_USER_REGS(q) ((struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf()))
#endif

const volatile bool want_native = false;
const volatile bool want_kernel = false;

/* Every file's rows, contiguous per file; resized by user space (1 entry
 * when --native is off). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NATIVE_ROWS_MAX);
	__type(key, __u32);
	__type(value, struct unwind_row);
} native_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* 8 KiB a value: only what is used */
	__type(key, __u32);		      /* host tgid */
	__type(value, struct native_proc);
} native_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NCNT__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} native_counters SEC(".maps");

static __always_inline void native_count(__u32 idx, __u64 v)
{
	__u64 *c = bpf_map_lookup_elem(&native_counters, &idx);

	if (c)
		*c += v;
}

/* native_step.h's primitives: rows from the array above, the current
 * task's memory, bpf_loop. */
#define NSTEP_ROW(s, idx)                                                                          \
	((void)(s), (const struct unwind_row *)bpf_map_lookup_elem(&native_rows, &(idx)))
#define NSTEP_READ(c, dst, addr)                                                                   \
	((void)(c), bpf_probe_read_user((dst), sizeof(__u64), (const void *)(addr)))
#define NSTEP_LOOP(n, fn, data) bpf_loop((n), (fn), (data), 0)

#include "native_step.h"

/* Unwind the current task's user stack into the record after its n Python
 * frames, then the kernel stack (ctx: the perf event's) after that; fills
 * nnative, nkernel, native_flags of the header. */
static __always_inline void native_append(const struct sample_req *q, struct sample_scratch *sc,
					  __u32 n)
{
	struct sample_hdr *h = &sc->buf.hdr;
	__u64 *out = (__u64 *)sc->buf.frames;
	__u32 base = 2 * n, cause = NATIVE_OK;
	__u64 t0;

	/* Off (rodata): the verifier drops all of this, the plain record
	 * costs what it did. */
	if ((!want_native && !want_kernel) || base > 2 * BPFPY_MAX_DEPTH)
		return;
	t0 = bpf_ktime_get_ns();
	if (want_native) {
		struct pt_regs *regs = NATIVE_USER_REGS(q);
		__u32 pid = q->pid;
		struct native_ctx c = {.out = out, .base = base};

		c.proc = bpf_map_lookup_elem(&native_procs, &pid);
		if (!c.proc)
			cause = NATIVE_NO_PROC;
		else if (!regs || (regs->cs & 3) != 3) /* no user context */
			cause = NATIVE_NO_REGS;
		if (!cause) {
			c.ip = regs->ip;
			c.sp = regs->sp;
			c.bp = regs->bp;
			bpf_loop(NATIVE_MAX_DEPTH, native_step, &c, 0);
			cause = c.cause;
			if (c.n > NATIVE_MAX_DEPTH)
				c.n = NATIVE_MAX_DEPTH;
			h->nnative = (__u16)c.n;
			if (c.fp)
				h->native_flags |= NATIVE_FP_FALLBACK;
			if (!cause && !c.done) {
				h->native_flags |= NATIVE_TRUNCATED;
				native_count(NCNT_TRUNCATED, 1);
			}
			native_count(NCNT_FRAMES, c.n);
			native_count(NCNT_FP_FRAMES, c.fp_frames);
		}
		native_count(NCNT_SAMPLES, 1);
		if (cause) {
			h->native_flags |= NATIVE_LOST | (cause << NATIVE_CAUSE_SHIFT);
			native_count(NCNT_LOST_BASE + (cause < NATIVE_CAUSE__COUNT ? cause : 0), 1);
		}
	}
	if (want_kernel && q->ctx) {
		__u32 pos = base + h->nnative;
		long got;

		if (pos > 2 * BPFPY_MAX_DEPTH + NATIVE_MAX_DEPTH)
			return;
		/* A full buffer may have cut the stack: flagged as truncated. */
		got = bpf_get_stack(q->ctx, &out[pos], KERNEL_MAX_DEPTH * sizeof(__u64), 0);
		if (got > 0) {
			h->nkernel = (__u16)(got / sizeof(__u64));
			if (h->nkernel >= KERNEL_MAX_DEPTH)
				h->native_flags |= KERNEL_TRUNCATED;
			native_count(NCNT_KERNEL_FRAMES, h->nkernel);
		}
	}
	native_count(NCNT_NS, bpf_ktime_get_ns() - t0);
}

#endif /* NATIVE_UNWIND_BPF_H */
