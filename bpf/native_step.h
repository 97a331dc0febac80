/* SPDX-License-Identifier: MIT */
/*
 * The one native unwinder: one frame of an x86_64 user stack from the
 * unwind tables user space built from each mapped ELF's CFI
 * (user/native/unwind_tables.c; layouts in bpfpy.h). Compiled two ways,
 * like the frame walker (frame_walker.h):
 *
 *   bpf/native_unwind.bpf.h    in the sampler, from the interrupted
 *                              registers, rows in the BPF array native_rows
 *   user/native/native_walk.c  in bpfpy dump, from a ptrace-stopped
 *                              thread's registers, rows in memory
 *
 * so that a dump shows the stack a record would have. The includer
 * defines, before including this file:
 *
 *   NSTEP_ROW(s, idx)         const struct unwind_row * of row idx, or NULL;
 *                             s is the struct native_search being run
 *   NSTEP_READ(c, dst, addr)  copy the 8 bytes of target memory at addr
 *                             into dst; 0 on success; c is the native_ctx
 *   NSTEP_LOOP(n, fn, data)   call fn(i, data) for i = 0, 1, ... < n until
 *                             it returns nonzero
 *   NSTEP_ENV_T (optional)    a type for what the primitives need besides
 *                             the process's mappings; then native_ctx and
 *                             native_search carry a pointer to one (env).
 *                             The BPF build has none: its rows and memory
 *                             are the map and the current task.
 *
 * Per frame: find the mapping of ip (binary search in the process's sorted
 * executable mappings), the row of ip - bias (binary search in that file's
 * rows), compute the CFA from rsp or rbp, read the return address at CFA-8
 * and the caller's rbp where the row says it was saved. Where a file has no
 * CFI for the address, the frame pointer is followed instead (rbp + 16 is
 * the CFA), and the sample says so (NATIVE_FP_FALLBACK): on code built
 * without frame pointers that guess can be wrong, which is why it is
 * flagged and never silent. Anything else that stops the walk early is a
 * counted cause (NATIVE_LOST), never a guess. The CFA must lie above the
 * stack pointer, so every frame moves rsp up: a walk cannot loop.
 *
 * Bounded: NATIVE_MAX_DEPTH frames, each with two binary searches of at
 * most 9 and 23 halvings. The code must stay verifier-friendly: masked
 * indexes, no loop but NSTEP_LOOP (bpf_loop: a callback is verified once,
 * a loop in the program would be followed turn by turn for every path
 * through the frame step, over the verifier's 1M instruction limit).
 */
#ifndef NATIVE_STEP_H
#define NATIVE_STEP_H

#include "bpfpy.h"

#ifdef __VMLINUX_H__
#define NSTEP_INLINE static __always_inline
#else
#define NSTEP_INLINE static inline
#endif

/* The record viewed as __u64 from frames[0] on: the native addresses start
 * at index 2 * nframes (a frame_rec is two __u64). */
#define NATIVE_ROOM_U64 (2 * BPFPY_MAX_DEPTH + NATIVE_MAX_DEPTH + KERNEL_MAX_DEPTH)
_Static_assert(sizeof(struct frame_rec) == 16, "frame_rec is two __u64");

/* One walk. out has room for base + NATIVE_MAX_DEPTH addresses (the user
 * build passes base 0 and NATIVE_MAX_DEPTH of them). */
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
#ifdef NSTEP_ENV_T
	NSTEP_ENV_T *env;
#endif
};

/*
 * Binary searches, one halving per NSTEP_LOOP turn. Each halving picks its
 * half with a mask from an unsigned comparison. Not from the sign of a
 * difference: the last mapping of most processes is [vsyscall], at
 * 0xffffffffff600000, above 2^63, and a signed difference called it
 * "below" every user address, so a search that looked at it returned it
 * and the mapping before it (often ld.so, where __tls_get_addr runs) was
 * never found.
 */
struct native_search {
	const struct native_proc *p;
	__u64 key;
	__u32 base, len;
#ifdef NSTEP_ENV_T
	NSTEP_ENV_T *env;
#endif
};

NSTEP_INLINE __u32 native_le_mask(__u64 a, __u64 b)
{
	/* all ones if a <= b, else 0 */
	return (__u32)0 - (__u32)(a <= b);
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
	const struct unwind_row *r = NSTEP_ROW(s, idx);

	(void)i;
	if (!r)
		return 1;
	s->base += half & native_le_mask(r->pc, s->key);
	s->len -= half;
	return s->len <= 1;
}

/* The mapping holding ip, or NULL: the last of the sorted maps[] that
 * starts at or below ip, if it ends above. */
NSTEP_INLINE const struct native_map *native_find_map(const struct native_proc *p, __u64 ip)
{
	struct native_search s = {.p = p, .key = ip, .len = p->nmaps};
	const struct native_map *m;

	if (s.len > NATIVE_MAX_MAPS)
		s.len = NATIVE_MAX_MAPS;
	if (!s.len)
		return NULL;
	NSTEP_LOOP(9, native_map_halve, &s); /* log2(NATIVE_MAX_MAPS) + 1 */
	m = &p->maps[s.base & (NATIVE_MAX_MAPS - 1)];
	if (ip < m->start || ip >= m->end)
		return NULL;
	return m;
}

/* The row covering file address pc in rows [first, first + count): the
 * last whose pc is <= pc. */
NSTEP_INLINE const struct unwind_row *native_find_row(struct native_ctx *c, __u32 first,
						      __u32 count, __u32 pc)
{
	struct native_search s = {.key = pc, .base = first, .len = count};
	const struct unwind_row *r;
	__u32 idx;

#ifdef NSTEP_ENV_T
	s.env = c->env;
#else
	(void)c;
#endif
	if (!count || first + count < first || first + count > NATIVE_ROWS_MAX)
		return NULL;
	NSTEP_LOOP(23, native_row_halve, &s); /* log2(NATIVE_ROWS_MAX) + 1 */
	idx = s.base;
	r = NSTEP_ROW(&s, idx);
	if (!r || r->pc > pc)
		return NULL;
	return r;
}

/* One frame: write ip, then find the caller's ip, sp, bp. An NSTEP_LOOP
 * body: 1 when the walk is over (c->done, or c->cause says why). */
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
		r = native_find_row(c, m->first, m->count, (__u32)pc);
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
	if (NSTEP_READ(c, &ra, cfa - 8)) {
		c->cause = NATIVE_READ;
		return 1;
	}
	if (rbp_rule == UNW_RBP_CFA && NSTEP_READ(c, &bp, cfa + rbp_off)) {
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

#endif /* NATIVE_STEP_H */
