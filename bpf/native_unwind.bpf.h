/* SPDX-License-Identifier: MIT */
/*
 * Native (and kernel) frames of a sample, unwound in the kernel from the
 * interrupted user registers with the unwind tables user space built from
 * each mapped ELF's CFI (user/native/unwind_tables.c; layouts in bpfpy.h).
 *
 * Per frame: find the mapping of ip (binary search in the process's sorted
 * executable mappings), the row of ip - bias (binary search in that file's
 * rows), compute the CFA from rsp or rbp, read the return address at CFA-8
 * and the caller's rbp where the row says it was saved. Where a file has no
 * CFI for the address, the frame pointer is followed instead (rbp + 16 is
 * the CFA), and the sample says so (NATIVE_FP_FALLBACK): on code built
 * without frame pointers that guess can be wrong, which is why it is
 * flagged and never silent. Anything else that stops the walk early is a
 * counted cause (NATIVE_LOST), never a guess.
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

/* The record viewed as __u64 from frames[0] on: the native addresses start
 * at index 2 * nframes (a frame_rec is two __u64). */
#define NATIVE_ROOM_U64 (2 * BPFPY_MAX_DEPTH + NATIVE_MAX_DEPTH + KERNEL_MAX_DEPTH)
_Static_assert(sizeof(struct frame_rec) == 16, "frame_rec is two __u64");

struct native_ctx {
	const struct native_proc *proc;
	__u64 *out;
	__u32 base;		       /* index in out of the first native address */
	__u32 n;		       /* addresses written */
	const struct native_map *last; /* the previous frame's mapping */
	__u64 ip, sp, bp;
	__u8 cause; /* enum native_cause when the walk stopped early */
	__u8 done;  /* reached the outermost frame */
	__u8 fp;    /* a frame was found by frame pointer */
	__u8 fp_frames;
};

/*
 * Binary searches, one halving per bpf_loop turn: a loop in the program
 * itself would be followed by the verifier turn by turn, for every path
 * through the frame step (over its 1M instruction limit); a callback is
 * verified once. Each halving picks its half with a mask from the sign of
 * a difference (addresses are below 2^63, pcs 32-bit: no overflow).
 */
struct native_search {
	const struct native_proc *p;
	__u64 key;
	__u32 base, len;
};

static __always_inline __u32 native_le_mask(__u64 a, __u64 b)
{
	/* all ones if a <= b, else 0 */
	__u64 m = ((__u64)((__s64)b - (__s64)a) >> 63) - 1;

	return (__u32)m;
}

static int native_map_halve(__u32 i, void *data)
{
	struct native_search *s = data;
	__u32 half = s->len / 2;
	const struct native_map *m = &s->p->maps[(s->base + half) & (NATIVE_MAX_MAPS - 1)];

	(void)i;
	s->base += half & native_le_mask(m->start, s->key);
	s->len -= half;
	return s->len <= 1;
}

static int native_row_halve(__u32 i, void *data)
{
	struct native_search *s = data;
	__u32 half = s->len / 2, idx = s->base + half;
	const struct unwind_row *r = bpf_map_lookup_elem(&native_rows, &idx);

	(void)i;
	if (!r)
		return 1;
	s->base += half & native_le_mask(r->pc, s->key);
	s->len -= half;
	return s->len <= 1;
}

/* The mapping holding ip, or NULL: the last of the sorted maps[] that
 * starts at or below ip, if it ends above. */
static __always_inline const struct native_map *native_find_map(const struct native_proc *p,
								__u64 ip)
{
	struct native_search s = {.p = p, .key = ip, .len = p->nmaps};
	const struct native_map *m;

	if (s.len > NATIVE_MAX_MAPS)
		s.len = NATIVE_MAX_MAPS;
	if (!s.len)
		return NULL;
	bpf_loop(9, native_map_halve, &s, 0); /* log2(NATIVE_MAX_MAPS) + 1 */
	m = &p->maps[s.base & (NATIVE_MAX_MAPS - 1)];
	if (ip < m->start || ip >= m->end)
		return NULL;
	return m;
}

/* The row covering file address pc in rows [first, first + count): the
 * last whose pc is <= pc. */
static __always_inline const struct unwind_row *native_find_row(__u32 first, __u32 count, __u32 pc)
{
	struct native_search s = {.key = pc, .base = first, .len = count};
	const struct unwind_row *r;
	__u32 idx;

	if (!count || first + count < first || first + count > NATIVE_ROWS_MAX)
		return NULL;
	bpf_loop(23, native_row_halve, &s, 0); /* log2(NATIVE_ROWS_MAX) + 1 */
	idx = s.base;
	r = bpf_map_lookup_elem(&native_rows, &idx);
	if (!r || r->pc > pc)
		return NULL;
	return r;
}

/* One frame: write ip, then find the caller's ip, sp, bp. A bpf_loop body:
 * 1 when the walk is over. */
static int native_step(__u32 i, void *data)
{
	struct native_ctx *c = data;
	const struct native_map *m;
	const struct unwind_row *r = NULL;
	__u64 cfa, ra = 0, bp = c->bp, pc, off = 0;
	__u32 idx = c->base + (i & (NATIVE_MAX_DEPTH - 1)), kind, rbp_rule;
	__s64 rbp_off = 0;

	if (c->base > 2 * BPFPY_MAX_DEPTH || idx >= NATIVE_ROOM_U64)
		return 1;
	c->out[idx] = c->ip;
	c->n = i + 1;
	/* Callers are mostly in the callee's file (libpython calling
	 * itself): try its mapping before searching. */
	m = c->last;
	if (!m || c->ip < m->start || c->ip >= m->end)
		m = native_find_map(c->proc, c->ip);
	c->last = m;
	if (!m) {
		c->cause = NATIVE_NO_MAP;
		return 1;
	}
	/* A return address points after the call, which may be the first
	 * byte of the next function (noreturn calls): look up the call. */
	pc = c->ip - m->bias - (i ? 1 : 0);
	if (m->count)
		r = native_find_row(m->first, m->count, (__u32)pc);
	kind = r ? r->kind & 7 : UNW_CFA_NONE;
	rbp_rule = r ? r->kind >> 4 : UNW_RBP_SAME;
	if (r)
		off = r->kind & UNW_CFA_SCALED ? (__u64)r->cfa_off * 8 : r->cfa_off;
	switch (kind) {
	case UNW_CFA_RSP:
		cfa = c->sp + off;
		break;
	case UNW_CFA_RBP:
		cfa = c->bp + off;
		break;
	case UNW_CFA_PLT:
		cfa = c->sp + 8 + ((c->ip & 15) >= off ? 8 : 0);
		break;
	case UNW_CFA_END:
		c->done = 1;
		return 1;
	case UNW_CFA_NONE:
		/* push %rbp; mov %rsp,%rbp: the CFA is rbp + 16, the caller's
		 * rbp at CFA - 16. */
		if (!c->bp) {
			c->cause = NATIVE_BAD_FRAME;
			return 1;
		}
		cfa = c->bp + 16;
		rbp_rule = UNW_RBP_CFA;
		c->fp = 1;
		c->fp_frames++;
		break;
	default:
		c->cause = NATIVE_UNSUPPORTED;
		return 1;
	}
	if (kind != UNW_CFA_NONE)
		rbp_off = (__s64)r->rbp_off * 8;
	else
		rbp_off = -16;
	if (cfa <= c->sp) {
		c->cause = NATIVE_BAD_FRAME;
		return 1;
	}
	if (bpf_probe_read_user(&ra, sizeof(ra), (const void *)(cfa - 8))) {
		c->cause = NATIVE_READ;
		return 1;
	}
	if (rbp_rule == UNW_RBP_CFA &&
	    bpf_probe_read_user(&bp, sizeof(bp), (const void *)(cfa + rbp_off))) {
		c->cause = NATIVE_READ;
		return 1;
	}
	/* A zero return address is how thread entry points end the chain
	 * when their CFI does not mark the return address undefined. */
	if (!ra) {
		c->done = 1;
		return 1;
	}
	c->ip = ra;
	c->sp = cfa;
	c->bp = bp;
	return 0;
}

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
