/* SPDX-License-Identifier: MIT */
/*
 * The one CPython frame walker. It is compiled three ways:
 *
 *   bpf/sampler.bpf.c   reads with bpf_probe_read_user (perf_event, uprobes)
 *   bpf/wallclock.bpf.c reads with bpf_copy_from_user_task (sleepable iterator)
 *   user/python/stack_reader.c reads with process_vm_readv, or a memory image in tests
 *
 * so that every mode of the oracle differs only in *when* it reads, never in
 * how. The includer defines, before including this file:
 *
 *   WALK_READER_T                 the reader's context type
 *   WALK_READ(r, dst, size, addr) copy size bytes of target memory at addr
 *                                 into dst; 0 on success
 *
 * Everything a version changes comes from struct proc_config (bpfpy.h); no
 * version number is tested here. The code must stay verifier-friendly:
 * bounded reads into fixed scratch buffers, masked offsets, no recursion.
 */
#ifndef FRAME_WALKER_H
#define FRAME_WALKER_H

#include "bpfpy.h"

#ifdef __VMLINUX_H__
#define WALK_INLINE static __always_inline
#else
#include <string.h>
#define WALK_INLINE static inline
#endif

/* Scratch buffers are a power of two plus room for one more field, so
 * that "offset & (size-1)" both proves to the verifier that a field read
 * stays in bounds and still leaves room for the bytes read there. */
#define WALK_FBUF_MASK (BPFPY_FRAME_BUF - 1)
#define WALK_CBUF_SIZE 256
#define WALK_CBUF_MASK (WALK_CBUF_SIZE - 1)
#define WALK_PAGE      4096U
#define WALK_PAGE_MASK (WALK_PAGE - 1)
/* Pages of frames one walk keeps copies of (walk_fill), direct-mapped by
 * page number: a power of two. 32: a 300-deep recursion on 3.8-3.10 spans
 * 33-36 pages and costs 34-41 copies with 32 slots, 51-69 with 16, 65-73
 * with 8. In BPF, 32 x 4.1 KiB per CPU. Slots of 16 KiB blocks (8 of
 * them, the same memory; a block copied whole, its page where that fails)
 * were tried and cost more, a copy costing per byte too: a 300-deep
 * sample 13.3 -> 17.4 us on 3.12, 20.8 -> 24.9 on 3.8 (alternated runs,
 * 2026-12-03). */
#define WALK_PAGES 32
/* The first copy of a walk (walk_fill): most samples hold a few frames. */
#define WALK_SPAN_FIRST 512
/* Code objects already fingerprinted in this walk, by address. */
#define WALK_MEMO_SIZE 16
/* Generator-owned frames a walk remembers (record --async): the rootmost
 * ones, where a task's coroutine frame sits, see walk_state.gen_frame. */
#define WALK_GEN 4
/* Frames whose code object this walk read anew, at most: see fresh_at. */
#define WALK_FRESH 64
_Static_assert(WALK_MEMO_SIZE == 16, "walk_memo_slot() takes the top 4 bits of a hash");

_Static_assert((BPFPY_FRAME_BUF & WALK_FBUF_MASK) == 0, "frame buffer must be a power of two");
_Static_assert((WALK_PAGES & (WALK_PAGES - 1)) == 0, "page slots are direct-mapped by a mask");
_Static_assert(WALK_PAGE >= WALK_SPAN_FIRST && WALK_SPAN_FIRST >= BPFPY_FRAME_BUF,
	       "a copy must hold a frame");
_Static_assert(BPFPY_CODE_BUF <= WALK_CBUF_SIZE, "code buffer larger than its mask");
_Static_assert((WALK_FRESH & (WALK_FRESH - 1)) == 0, "fresh_at is indexed by a mask");
_Static_assert(BPFPY_MAX_DEPTH <= 65536, "fresh_at holds frame indexes in 16 bits");

struct walk_memo {
	__u64 code;
	__u32 fingerprint;
	__u32 named; /* py_sample.bpf.h: name_step() saw it in this sample */
};

/*
 * A copy of (part of) one page of the target, see walk_fill(): bytes
 * [lo, hi) of the page at data[0 .. hi - lo). A frame's fields are read at
 * its masked offset plus a masked field offset, hence the frame buffer's
 * worth of spare bytes.
 */
struct walk_page {
	__u8 data[WALK_PAGE + BPFPY_FRAME_BUF + 8];
};

struct walk_page_tag {
	__u64 page; /* the page's address */
	__u16 lo;
	__u16 hi; /* 0: the slot holds nothing, whatever page and lo say */
	__u32 pad;
};

struct walk_scratch {
	/* One frame read on its own: one that crosses a page's end, or
	 * where pages cannot be copied whole (memory images in tests). */
	__u8 fbuf[BPFPY_FRAME_BUF * 2 + 8];
	__u8 cbuf[WALK_CBUF_SIZE + 8];
	struct walk_memo memo[WALK_MEMO_SIZE];
	/* The index in out[] of each frame whose code object walk_code() read
	 * rather than found in the memo, in walk order: every distinct code
	 * object of the stack is among them, so that a pass over the stack's
	 * code objects (naming, bpf/py_sample.bpf.h) visits these and not
	 * every frame, 4 and not 300 in a 300-deep recursion. nfresh counts
	 * them all; past WALK_FRESH the list is incomplete and such a pass
	 * must visit every frame. */
	__u16 fresh_at[WALK_FRESH];
	__u32 nfresh;
	struct walk_page_tag tags[WALK_PAGES];
	/* record --async: the addresses of the last WALK_GEN frames written
	 * whose owner is gen_owner, and their indexes in out[], in
	 * slot ngen % WALK_GEN. Last written is rootmost: a running task's
	 * coroutine frame is the rootmost generator frame above the event
	 * loop's. Here rather than in walk_state, which lives on the BPF
	 * stack, and the off-CPU program has none to spare. */
	__u64 gen_frame[WALK_GEN];
	__u32 gen_idx[WALK_GEN];
	__u32 ngen;
	__u32 gen_owner; /* the owner of a generator's frame; 0xff: not asked */
	/* 3.11/3.12 (walk_entry_expect()): while entry_check is 1, the first
	 * entry frame or shim of the walk must link to entry_prev (2: it did
	 * not); the walk was retaken from there entry_retries times (0 or
	 * 1). Here rather than in walk_state: values the verifier cannot see
	 * are one state at bpf_loop, not two (walk_hide()). */
	__u64 entry_prev;
	__u64 entry_probe; /* walk_frame_plausible()'s word */
	__u32 entry_check;
	__u32 entry_retries;
	__u64 opaque[8]; /* BPF only: walk_hide() */
#ifndef __VMLINUX_H__
	/* BPF keeps them in a map of their own (walk_pages below): together
	 * with the sample buffer they exceed what one per-CPU value may hold. */
	struct walk_page pages[WALK_PAGES];
#endif
};

#ifdef __VMLINUX_H__
#ifndef SCRATCH_SLOT
#define SCRATCH_SLOT 0 /* bpf/py_sample.bpf.h: the includer's per-CPU slot */
#endif
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, (SCRATCH_SLOT + 1) * WALK_PAGES); /* WALK_PAGES per slot */
	__type(key, __u32);
	__type(value, struct walk_page);
} walk_pages SEC(".maps");
#endif

struct walk_state {
	const struct proc_config *cfg;
	WALK_READER_T *reader;
	struct walk_scratch *scratch;
	struct frame_rec *out; /* BPFPY_MAX_DEPTH entries */
	__u64 frame;	       /* next frame to visit */
	__u64 base_frame;      /* 3.15+: where the chain must end */
	__u32 n;	       /* frames written to out */
	__u32 max;	       /* depth limit, <= BPFPY_MAX_DEPTH */
	__u32 visited;	       /* frames visited, skipped ones included */
	__u8 err;	       /* enum walk_error */
	__u8 truncated;
	__u8 done;
	__u8 bottom_ok; /* the last frame visited may end a chain (an entry frame) */
	/* Derived from the version by walk_begin(), see there. */
	__u64 code_mask;
	__u64 instr_base_mask;
	__u64 skip_code;
	__u32 fsize;
	__u32 csize;
	__u32 skip_owners;
	__u32 bottom_off;
	__u32 bottom_mask;
	__u32 span_max; /* bytes the next page copy may take, see walk_fill() */
	__u32 pad;
#ifndef __VMLINUX_H__
	/* User space only, set by the caller before walk_run() (NULL: not
	 * asked): the address of each frame written to out[], at the same
	 * index. dump --locals reads the frames' fast locals there. */
	__u64 *frame_addrs;
#endif
};

WALK_INLINE __u64 walk_u64(const __u8 *buf, __u32 off, __u32 mask)
{
#ifdef __VMLINUX_H__
	return *(const __u64 *)(buf + (off & mask));
#else
	__u64 v;
	memcpy(&v, buf + (off & mask), sizeof(v));
	return v;
#endif
}

WALK_INLINE __u32 walk_u32(const __u8 *buf, __u32 off, __u32 mask)
{
#ifdef __VMLINUX_H__
	return *(const __u32 *)(buf + (off & mask));
#else
	__u32 v;
	memcpy(&v, buf + (off & mask), sizeof(v));
	return v;
#endif
}

WALK_INLINE __u64 walk_mix(__u64 h, __u64 v)
{
	h = (h ^ v) * 0xff51afd7ed558ccdULL;
	return h ^ (h >> 33);
}

/*
 * Identity of a code object, from fields that a reused address almost never
 * keeps: argcount, flags, first line, and the addresses of its name, file
 * and line table. Never 0, so that 0 can mean "not read".
 */
WALK_INLINE __u32 walk_fingerprint(const __u8 *cbuf, const struct py_offsets *o)
{
	__u32 name = o->code_qualname ? o->code_qualname : o->code_name;
	__u64 h = 0x9e3779b97f4a7c15ULL;

	h = walk_mix(h, walk_u32(cbuf, o->code_argcount, WALK_CBUF_MASK));
	h = walk_mix(h, walk_u32(cbuf, o->code_flags, WALK_CBUF_MASK));
	h = walk_mix(h, walk_u32(cbuf, o->code_firstlineno, WALK_CBUF_MASK));
	h = walk_mix(h, walk_u64(cbuf, name, WALK_CBUF_MASK));
	h = walk_mix(h, walk_u64(cbuf, o->code_filename, WALK_CBUF_MASK));
	h = walk_mix(h, walk_u64(cbuf, o->code_linetable, WALK_CBUF_MASK));
	return (__u32)(h ^ (h >> 32)) | 1;
}

WALK_INLINE int walk_read_ptr(WALK_READER_T *r, __u64 addr, __u64 *out)
{
	*out = 0;
	return WALK_READ(r, out, sizeof(*out), addr);
}

#ifdef __VMLINUX_H__
/*
 * BPF only. What walk_begin() derived from the version (masks, sizes,
 * offsets) and the walk's starting counters, written to the per-CPU scratch
 * and read back: the values are the same, but the verifier, which does not
 * follow map memory, then sees numbers it does not know instead of one
 * constant per branch taken before. Without this, each combination of those
 * branches (tagged code or not, frame model, the size clamps, a zero known
 * in one byte and not in the next) reached bpf_loop as another state, and
 * the step was verified again for each: 97k instructions processed, 0.1 to
 * 0.4 s of CPU at every `record` start on this 2-CPU machine, most of what
 * `record -a` costs over a 10 s run; with it 15k, 20 to 30 ms. Safety does
 * not rest on these values: every use is masked or clamped where the
 * verifier checks it, as the step's reads of target bytes already are.
 */
WALK_INLINE void walk_hide(struct walk_state *w)
{
	volatile __u64 *v = w->scratch->opaque;

	v[0] = w->code_mask;
	v[1] = w->instr_base_mask;
	v[2] = w->skip_code;
	v[3] = w->fsize | (__u64)w->csize << 32;
	v[4] = w->skip_owners | (__u64)w->bottom_off << 32;
	v[5] = w->bottom_mask | (__u64)w->span_max << 32;
	v[6] = w->n | (__u64)w->visited << 32;
	v[7] = 0;
	w->code_mask = v[0];
	w->instr_base_mask = v[1];
	w->skip_code = v[2];
	w->fsize = (__u32)v[3];
	w->csize = (__u32)(v[3] >> 32);
	w->skip_owners = (__u32)v[4];
	w->bottom_off = (__u32)(v[4] >> 32);
	w->bottom_mask = (__u32)v[5];
	w->span_max = (__u32)(v[5] >> 32);
	w->n = (__u32)v[6];
	w->visited = (__u32)(v[6] >> 32);
	/* The zero the rest start from. */
	w->err = (__u8)v[7];
	w->truncated = (__u8)v[7];
	w->done = (__u8)v[7];
}
#endif

/* An empty slot holds no byte: hi 0 fails every hit test whatever page
 * and lo still say (page 0 is an address a hostile chain can name). One
 * store per slot, 32 per walk. */
WALK_INLINE void walk_tag_clear(struct walk_page_tag *t)
{
	t->hi = 0;
}

/*
 * 3.11 and 3.12 publish an eval call's _PyCFrame (tstate->cframe = &cframe)
 * a few instructions before they set its current_frame, and 3.11 sets the
 * call's first frame is_entry only then, on a frame just initialized with
 * it false. A sample in that window reads the word the C stack held
 * before: a pointer to nothing (a failed walk) or to the frame that the
 * previous call at the same depth used, which the new call has just
 * reinitialized in the same place; its frames then read as if they ran in
 * the caller's eval call, and the native splice hangs them on the wrong
 * _PyEval_EvalFrameDefault. What the thread was running just before is
 * consistent all the while: the caller's frame, the outer _PyCFrame's
 * current_frame, which is also what the innermost call's entry frame
 * (3.11) or entry shim (3.12) links to once it is pushed. So the walk
 * notes that frame here, checks the link at the first entry it meets
 * (walk_visit()), and where the link differs, or the first frame is not
 * one, takes the walk again from the noted frame, once (walk_step()). cframe is
 * the innermost _PyCFrame; the outermost, tstate's root_cframe, has no
 * previous and asks for no check.
 */
WALK_INLINE void walk_entry_expect(struct walk_state *w, __u64 cframe)
{
	const struct py_offsets *o = &w->cfg->off;
	struct walk_scratch *s = w->scratch;

	if (!o->cframe_previous ||
	    walk_read_ptr(w->reader, cframe + o->cframe_previous, &s->entry_prev) ||
	    !s->entry_prev ||
	    walk_read_ptr(w->reader, s->entry_prev + o->cframe_current_frame, &s->entry_prev))
		return;
	s->entry_check = 1;
}

/*
 * Point the walk at a thread's innermost frame. Every decision that depends
 * only on the version is taken here, once, and stored as a mask or an offset
 * in the walk state: the per-frame step then has almost no branches, which
 * is what keeps the BPF verifier's state count small.
 */
WALK_INLINE int walk_begin(struct walk_state *w, __u64 tstate)
{
	const struct py_offsets *o = &w->cfg->off;
	__u64 frame = 0;

	w->n = 0;
	w->visited = 0;
	w->err = WALK_OK;
	w->truncated = 0;
	w->done = 0;
	w->base_frame = 0;
	if (w->max > BPFPY_MAX_DEPTH)
		w->max = BPFPY_MAX_DEPTH;
	w->code_mask = o->tagged_code ? ~3ULL : ~0ULL;
	w->instr_base_mask = o->frame_model == FRAME_MODEL_OBJECT ? 0 : ~0ULL;
	w->skip_code = o->code_may_be_other ? w->cfg->none_addr : 0;
	w->fsize = o->frame_read_size > BPFPY_FRAME_BUF ? BPFPY_FRAME_BUF : o->frame_read_size;
	w->csize = o->code_read_size > BPFPY_CODE_BUF ? BPFPY_CODE_BUF : o->code_read_size;
	w->skip_owners = o->frame_model == FRAME_MODEL_OBJECT ? 0 : o->skip_owner_mask;
	w->bottom_off = o->frame_bottom_off;
	w->bottom_mask = o->frame_bottom_off ? o->frame_bottom_mask : 0;
	w->bottom_ok = 1;
	w->span_max = WALK_SPAN_FIRST;
#ifndef BPFPY_NO_ASYNC /* bpf/py_sample.bpf.h */
	w->scratch->ngen = 0;
	w->scratch->gen_owner = (w->cfg->flags & PROC_ASYNC) ? w->cfg->async.gen_owner : 0xff;
#endif
#ifdef __VMLINUX_H__
	walk_hide(w);
#endif
	for (__u32 i = 0; i < WALK_MEMO_SIZE; i++)
		w->scratch->memo[i].code = 0;
	w->scratch->nfresh = 0;
	w->scratch->entry_check = 0;
	w->scratch->entry_retries = 0;
	for (__u32 i = 0; i < WALK_PAGES; i++)
		walk_tag_clear(&w->scratch->tags[i]);
	if (walk_read_ptr(w->reader, tstate + o->tstate_frame, &frame))
		return w->err = WALK_ERR_READ_TSTATE;
	/* Two reads of the cframe's adjacent current_frame and previous: one
	 * 16-byte read of both into scratch made the verifier give up on
	 * on_cpu_tick ("sequence of 8193 jumps is too complex"). */
	if (o->frame_model == FRAME_MODEL_CFRAME && frame) {
		walk_entry_expect(w, frame);
		if (walk_read_ptr(w->reader, frame + o->cframe_current_frame, &frame))
			return w->err = WALK_ERR_READ_TSTATE;
	}
	if (o->has_base_frame &&
	    walk_read_ptr(w->reader, tstate + o->tstate_base_frame, &w->base_frame))
		return w->err = WALK_ERR_READ_TSTATE;
	w->frame = frame;
	return WALK_OK;
}

/*
 * Instruction index in code units from the raw value a frame_rec carries:
 * f_lasti before 3.11, the instruction pointer's byte offset from the code
 * object after. -1 means before the first instruction (3.11/3.12 prev_instr
 * may sit one code unit early), -2 an offset that makes no sense.
 */
WALK_INLINE __s32 walk_instr_index(const struct py_offsets *o, __s32 raw)
{
	/* Drop FRAME_INSTR_ENTRY: the value is sign-extended from bit 30, so
	 * that f_lasti -1 (<= 3.10, all bits set with or without the mark)
	 * stays -1. */
	raw = (__s32)((__u32)raw << 1) >> 1;
	if (o->frame_model == FRAME_MODEL_OBJECT) {
		if (raw < 0)
			return -1;
		return o->lasti_is_bytes ? raw / 2 : raw;
	}
	raw -= (__s32)o->code_adaptive;
	if (raw < 0)
		return raw >= -2 ? -1 : -2;
	return raw / 2;
}

/* Mark the last frame written as the last one its eval-loop call owns
 * (FRAME_INSTR_ENTRY, see bpfpy.h): the native splice's delimiter. */
WALK_INLINE void walk_mark_entry(struct walk_state *w)
{
	if (w->n)
		w->out[(w->n - 1) & (BPFPY_MAX_DEPTH - 1)].instr |= (__s32)FRAME_INSTR_ENTRY;
}

/* The page slot for page number pn (address >> 12), NULL only in BPF
 * where the map lookup could fail. */
WALK_INLINE struct walk_page *walk_page_slot(struct walk_state *w, __u64 pn)
{
#ifdef __VMLINUX_H__
	__u32 k = SCRATCH_SLOT * WALK_PAGES + (__u32)(pn & (WALK_PAGES - 1));

	(void)w;
	return bpf_map_lookup_elem(&walk_pages, &k);
#else
	return &w->scratch->pages[pn & (WALK_PAGES - 1)];
#endif
}

/* Copy len bytes at addr into p (at most a page); 0 on success. */
WALK_INLINE int walk_copy(struct walk_state *w, struct walk_page *p, __u64 addr, __u64 len)
{
	if (len > WALK_PAGE)
		len = WALK_PAGE;
#ifdef __VMLINUX_H__
	/* Keep the clamp next to the read, where the verifier checks it. */
	barrier_var(len);
#endif
	return WALK_READ(w->reader, p->data, len, addr) ? -1 : 0;
}

/*
 * The bytes of the frame at addr (its first fsize bytes, then spare room
 * for masked field reads), or NULL if the frame cannot be read.
 *
 * Frames are read by the page: a frame's page is resident as a whole if
 * the frame is, so copying all of it fails only where the frame's own
 * read would, and the frames it links to are usually in it or in a page
 * copied just before. 3.11+ frames are pushed one above the other in the
 * thread's data-stack chunks, so a chain runs down through its pages;
 * <= 3.10 frame objects come from pymalloc pools of one page each and a
 * long-running recursion hands them out in an order that hops among a few
 * pools (a 300-deep chain on 3.10 visits about 33 pages, most of them
 * again and again: one copy per frame when only the last copy was kept,
 * 257 copies per sample). Hence WALK_PAGES slots, direct-mapped by page
 * number, valid for one walk only (the target runs between samples).
 * A frame that crosses a page's end is read on its own into fbuf: the
 * next page may not be mapped. The first copy of a walk is small, from
 * the frame's end down at most WALK_SPAN_FIRST bytes: a copy costs per
 * byte as well as per call, and most samples are shallow.
 */
WALK_INLINE const __u8 *walk_fill(struct walk_state *w, __u64 addr)
{
	struct walk_scratch *s = w->scratch;
	__u64 pn = addr >> 12, page = addr & ~(__u64)WALK_PAGE_MASK;
	__u32 off = (__u32)(addr & WALK_PAGE_MASK), lo, hi;
	struct walk_page_tag *t = &s->tags[pn & (WALK_PAGES - 1)];
	struct walk_page *p;

	if (off + w->fsize > WALK_PAGE)
		goto alone;
	p = walk_page_slot(w, pn);
	if (!p)
		return NULL;
	if (t->page == page && off >= t->lo && off + w->fsize <= t->hi)
		return p->data + ((off - t->lo) & WALK_PAGE_MASK);
	hi = WALK_PAGE;
	lo = 0;
	if (w->span_max < WALK_PAGE) {
		hi = off + w->fsize;
		lo = hi > w->span_max ? hi - w->span_max : 0;
	}
	w->span_max = WALK_PAGE;
	if (!walk_copy(w, p, page + lo, hi - lo)) {
		t->page = page;
		t->lo = (__u16)lo;
		t->hi = (__u16)hi;
		return p->data + ((off - lo) & WALK_PAGE_MASK);
	}
	/* Only where memory is not in pages (images in tests and fuzzers)
	 * can a frame be readable and the rest of its page not. */
	walk_tag_clear(t);
alone:
	if (WALK_READ(w->reader, s->fbuf, w->fsize & (2 * BPFPY_FRAME_BUF - 1), addr))
		return NULL;
	return s->fbuf;
}

WALK_INLINE struct walk_memo *walk_memo_slot(struct walk_scratch *s, __u64 code)
{
	return &s->memo[(code * 0x9e3779b97f4a7c15ULL) >> 60];
}

/*
 * The fingerprint of the code object at code, 0 if it is not a code object
 * (err set). A live frame holds a reference to its code, so within one walk
 * an address names one object: recursion and loops over a few functions
 * read each code object once per sample, not once per frame.
 */
WALK_INLINE __u32 walk_code(struct walk_state *w, __u64 code)
{
	const struct py_offsets *o = &w->cfg->off;
	struct walk_scratch *s = w->scratch;
	struct walk_memo *m = walk_memo_slot(s, code);
	__u32 fp;

	if (m->code == code)
		return m->fingerprint;
	if (WALK_READ(w->reader, s->cbuf, w->csize & WALK_CBUF_MASK, code)) {
		w->err = WALK_ERR_READ_CODE;
		return 0;
	}
	if (walk_u64(s->cbuf, o->ob_type, WALK_CBUF_MASK) != w->cfg->code_type_addr) {
		w->err = WALK_ERR_BAD_CODE;
		return 0;
	}
	fp = walk_fingerprint(s->cbuf, o);
	m->code = code;
	m->fingerprint = fp;
	m->named = 0;
	/* walk_step() writes this frame at out[w->n] once we return. */
	if (s->nfresh < WALK_FRESH)
		s->fresh_at[s->nfresh & (WALK_FRESH - 1)] = (__u16)w->n;
	s->nfresh++;
	return fp;
}

/* Whether addr holds what a frame holds, a code object where its code is
 * (two reads), for walk_visit() to choose between two accounts of a
 * thread caught entering an eval call. 0 passes: no frame, an empty walk. */
WALK_INLINE int walk_frame_plausible(struct walk_state *w, __u64 addr)
{
	const struct py_offsets *o = &w->cfg->off;
	__u64 *v = &w->scratch->entry_probe;

	if (!addr)
		return 1;
	return !walk_read_ptr(w->reader, addr + o->frame_code, v) && (*v & w->code_mask) &&
	       !walk_read_ptr(w->reader, (*v & w->code_mask) + o->ob_type, v) &&
	       *v == w->cfg->code_type_addr;
}

/*
 * Visit one frame. Returns 1 when the walk is over (done, error or
 * truncated), 0 to be called again.
 */
WALK_INLINE int walk_visit(struct walk_state *w)
{
	const struct py_offsets *o = &w->cfg->off;
	__u64 frame = w->frame, prev, code;
	__u32 n = w->n, owner, fp;
	struct frame_rec *rec;
	const __u8 *f;

	/* base_frame is 0 unless the version promises one (3.15+); before,
	 * the last frame must be an entry frame (bottom_ok stays 1 when the
	 * version has no such rule, or when no frame was visited). A chain
	 * that ends elsewhere was torn or cut: an error, not a stack. */
	if (!frame || frame == w->base_frame) {
		walk_mark_entry(w); /* the root frame ends the outermost eval call */
		if (!frame && w->base_frame)
			w->err = WALK_ERR_NO_BASE;
		else if (!frame && !w->bottom_ok)
			w->err = WALK_ERR_NO_ENTRY;
		w->done = 1;
		return 1;
	}
	if (n >= w->max) {
		w->truncated = 1;
		return 1;
	}
	w->visited++;
	f = walk_fill(w, frame);
	if (!f) {
		w->err = WALK_ERR_READ_FRAME;
		return 1;
	}
	prev = walk_u64(f, o->frame_previous, WALK_FBUF_MASK);
	if (prev == frame) {
		w->err = WALK_ERR_CYCLE;
		return 1;
	}
	w->frame = prev;
	w->bottom_ok =
	    !w->bottom_mask || ((w->bottom_mask >> (f[w->bottom_off & WALK_FBUF_MASK] & 7)) & 1);
	/* The innermost eval call's entry (walk_entry_expect()): a wrong
	 * link fails the walk here, and walk_step() takes it again from the
	 * caller's frame, unless that is no frame: the caller's cframe was
	 * stale as well (3.11 and 3.12 write a new cframe's two words after
	 * they publish it). This chain is then the better account, with its
	 * innermost frame as the call being entered, the one a fresh call
	 * has at that point: where the entry mark is the frame's own flag
	 * (3.11, no shims), that frame gets it; a 3.12 shim marks it anyway. */
	if (w->bottom_mask && w->bottom_ok && w->scratch->entry_check) {
		w->scratch->entry_check = 0;
		if (prev != w->scratch->entry_prev) {
			if (walk_frame_plausible(w, w->scratch->entry_prev)) {
				w->scratch->entry_check = 2;
				w->err = WALK_ERR_NO_ENTRY;
				return 1;
			}
			if (n && !w->skip_owners)
				w->out[0].instr |= (__s32)FRAME_INSTR_ENTRY;
		}
	}
	owner = f[o->frame_owner & WALK_FBUF_MASK];
	if ((w->skip_owners >> (owner & 7)) & 1) {
		walk_mark_entry(w); /* 3.12+: an entry shim ends one eval call */
		return 0;
	}
	code = walk_u64(f, o->frame_code, WALK_FBUF_MASK) & w->code_mask;
	if (code && code == w->skip_code)
		return 0;
	if (!code) {
		w->err = WALK_ERR_BAD_CODE;
		return 1;
	}
	fp = walk_code(w, code);
	if (!fp)
		return 1;
	rec = &w->out[n & (BPFPY_MAX_DEPTH - 1)];
	rec->code = code;
	rec->instr =
	    (__s32)(walk_u64(f, o->frame_instr, WALK_FBUF_MASK) - (code & w->instr_base_mask));
	/* <= 3.10: one eval call per frame; 3.11: the frame is_entry. */
	if (!w->instr_base_mask || (w->bottom_mask && w->bottom_ok))
		rec->instr |= (__s32)FRAME_INSTR_ENTRY;
	rec->fingerprint = fp;
#ifndef __VMLINUX_H__
	if (w->frame_addrs)
		w->frame_addrs[n & (BPFPY_MAX_DEPTH - 1)] = frame;
#endif
	w->n = n + 1;
#ifndef BPFPY_NO_ASYNC
	/* Only a generator's frame is stored: a frame of the loop stored into
	 * the next slot would, past WALK_GEN generator frames, overwrite the
	 * oldest one kept, and every sample would pay the stores. */
	if (owner == w->scratch->gen_owner) {
		struct walk_scratch *s = w->scratch;
		__u32 g = s->ngen & (WALK_GEN - 1);

		s->gen_frame[g] = frame;
		s->gen_idx[g] = n;
		s->ngen++;
	}
#endif
	return 0;
}

/*
 * One frame, as walk_visit(), and where a 3.11/3.12 walk is over for what
 * the innermost cframe may have got wrong (walk_entry_expect()), the walk
 * again from the caller's frame: a chain whose entry does not link to it
 * (entry_check 2), a first frame that is unreadable or names no code
 * object, or no frame at all. What was written is dropped, the code
 * objects met stay in the memo (they were read and checked), and the list
 * of fresh ones is declared incomplete, so that naming visits every frame.
 * Not taken again: a walk cut by the depth bound (it never reached the
 * entry), and a frame that reads but links badly, to itself, to nothing
 * or to a bad frame: those links are the target's own, reported as they
 * are.
 * Shaped as a bpf_loop body.
 */
WALK_INLINE int walk_step(struct walk_state *w)
{
	struct walk_scratch *s = w->scratch;

	if (!walk_visit(w))
		return 0;
	if (w->truncated || !s->entry_check)
		return 1;
	if (s->entry_check == 1 && w->err &&
	    (w->err == WALK_ERR_CYCLE || w->err == WALK_ERR_NO_ENTRY || w->visited > 1))
		return 1;
	s->entry_check = 0;
	s->entry_retries++;
	s->nfresh = WALK_FRESH + 1;
#ifndef BPFPY_NO_ASYNC
	s->ngen = 0;
#endif
	w->frame = s->entry_prev;
	w->n = 0;
	w->err = WALK_OK;
	w->done = 0;
	w->bottom_ok = 1;
	return 0;
}

/* Steps per bpf_loop turn. The verifier inlines bpf_loop as a loop of
 * BPF-to-BPF calls, and on this VM a call and its return (retpolines, the
 * SRSO safe return) cost about as much as a step that hits its page copy,
 * so two steps a call are faster for a few more instructions to verify;
 * four were no faster and cost far more (docs/bench.md). */
#define WALK_UNROLL 2
/* Steps of a walk of depth max: skipped frames (3.12/3.13 C-stack
 * shims, 3.14 entry frames) take a step without output, and one can sit
 * between every two kept frames when each Python call comes through C
 * (sorted(key=...), __call__ of a C type), hence 2 x max, plus room at the
 * ends; a multiple of WALK_UNROLL, so that every reader takes as many. */
#define WALK_TURNS(max) ((2 * (max) + 8 + WALK_UNROLL - 1) / WALK_UNROLL * WALK_UNROLL)

#ifdef __VMLINUX_H__
static int walk_loop_step(__u32 i, void *data)
{
	struct walk_state *w = data;

	(void)i;
#pragma unroll
	for (int k = 0; k < WALK_UNROLL; k++)
		if (walk_step(w))
			return 1;
	return 0;
}
#endif

/*
 * The whole walk of one thread state: set up the state, point it at the
 * innermost frame, step until the chain ends, an error or the depth bound.
 * A walk that ran out of turns without ending is truncated, never complete.
 * max 0 means the deepest walk allowed. Returns w->err.
 */
WALK_INLINE int walk_run(struct walk_state *w, const struct proc_config *cfg, WALK_READER_T *r,
			 struct walk_scratch *s, struct frame_rec *out, __u32 max, __u64 tstate)
{
	__u32 turns;

#ifdef __VMLINUX_H__
	/* Keep a constant depth (trace's 1) in a store of its own: merged by
	 * the compiler with n = 0 into one 64-bit constant, its half would
	 * read back as unknown, and the verifier would then follow the walk
	 * turn by turn ("sequence of 8193 jumps is too complex"). */
	barrier_var(max);
#endif
	w->cfg = cfg;
	w->reader = r;
	w->scratch = s;
	w->out = out;
	w->max = max ? max : BPFPY_MAX_DEPTH; /* walk_begin() caps it */
	if (walk_begin(w, tstate) != WALK_OK)
		return w->err;
	turns = WALK_TURNS(w->max);
#ifdef __VMLINUX_H__
	bpf_loop(turns / WALK_UNROLL, walk_loop_step, w, 0);
#else
	for (__u32 i = 0; i < turns; i++)
		if (walk_step(w))
			break;
#endif
	if (!w->done && !w->err)
		w->truncated = 1;
	return w->err;
}

/* SAMPLE_GIL_* for this thread state, where the version lets us see the GIL
 * (its locked flag and last holder); 0 when unknown or unreadable. */
WALK_INLINE __u8 walk_gil_flags(WALK_READER_T *r, const struct proc_config *cfg, __u64 tstate)
{
	__u64 holder = 0;
	__u32 locked = 0;

	if (!cfg->gil_holder_addr || !cfg->gil_locked_addr)
		return 0;
	if (WALK_READ(r, &holder, sizeof(holder), cfg->gil_holder_addr) ||
	    WALK_READ(r, &locked, sizeof(locked), cfg->gil_locked_addr))
		return 0;
	return SAMPLE_GIL_KNOWN | (locked && holder == tstate ? SAMPLE_GIL_HELD : 0);
}

/* GC_COLLECTING when the interpreter is collecting and this thread holds
 * the GIL (gil_flags from walk_gil_flags): a collection runs in the thread
 * that triggered it, with the GIL, and the flag is the interpreter's, so
 * every other thread is left unmarked. Unknown GIL: not marked. tmp: 8
 * bytes of scratch outside the stack (the tracer's has no room left). */
WALK_INLINE __u8 walk_gc_flags(WALK_READER_T *r, const struct proc_config *cfg, __u8 gil_flags,
			       __u64 *tmp)
{
	*tmp = 0;
	if (!cfg->gc_collecting_addr || !(gil_flags & SAMPLE_GIL_HELD))
		return 0;
	if (WALK_READ(r, tmp, sizeof(__s32), cfg->gc_collecting_addr))
		return 0;
	return (__s32)*tmp ? GC_COLLECTING : 0;
}

/* The thread's exception: EXC_IN_FLIGHT or EXC_HANDLED with its type
 * object in *type, or 0. None and NULL mean none; anything else is taken
 * as an object whose ob_type user space names (and checks) later. type and
 * tmp (2 words of scratch) are outside the stack, for the tracer's sake. */
WALK_INLINE __u8 walk_exc(WALK_READER_T *r, const struct proc_config *cfg, __u64 tstate,
			  __u64 *type, __u64 *tmp)
{
	const struct py_offsets *o = &cfg->off;

	*type = 0;
	tmp[0] = tmp[1] = 0;
	if (!o->tstate_exc_info)
		return 0;
	if (!WALK_READ(r, &tmp[0], sizeof(__u64), tstate + o->tstate_cur_exc) && tmp[0] &&
	    tmp[0] != cfg->none_addr) {
		if (o->cur_exc_is_type)
			*type = tmp[0];
		else if (WALK_READ(r, type, sizeof(*type), tmp[0] + o->ob_type))
			*type = 0;
		if (*type)
			return EXC_IN_FLIGHT;
	}
	tmp[0] = 0;
	if (WALK_READ(r, &tmp[1], sizeof(__u64), tstate + o->tstate_exc_info) || !tmp[1] ||
	    WALK_READ(r, &tmp[0], sizeof(__u64), tmp[1] + o->stackitem_exc_value) || !tmp[0] ||
	    tmp[0] == cfg->none_addr || WALK_READ(r, type, sizeof(*type), tmp[0] + o->ob_type) ||
	    !*type) {
		*type = 0;
		return 0;
	}
	return EXC_HANDLED;
}

/*
 * record --opcodes: the opcode byte of the code unit at the leaf frame's
 * instruction into *op; returns its OP_* flags (bpfpy.h). leaf is the
 * walk's first record, its instr as walk_step() wrote it. The byte is the
 * one the interpreter holds now: 3.11+ reads co_code_adaptive, which
 * quickening, specialization and (3.12+) sys.monitoring rewrite in place;
 * <= 3.10 reads co_code, which nothing rewrites. What the instruction
 * pointer means per version: docs/opcodes.md. The index is checked against
 * the bytecode's length as the target states it (past it: OP_OUTSIDE, not
 * read); where f_lasti rests on an EXTENDED_ARG prefix while the
 * instruction it prefixes runs (op_prefix, <= 3.10), up to three prefixes
 * are stepped over within the bytecode. tmp: 2 words of scratch outside
 * the stack (the tracer's has no room).
 */
WALK_INLINE __u8 walk_leaf_op(WALK_READER_T *r, const struct proc_config *cfg,
			      const struct frame_rec *leaf, __u8 *op, __u64 *tmp)
{
	const struct py_offsets *o = &cfg->off;
	/* FRAME_INSTR_ENTRY dropped, sign kept: see walk_instr_index(). */
	__s32 raw = (__s32)((__u32)leaf->instr << 1) >> 1;
	__u64 base, units, idx, off;
	__u32 k;

	*op = 0;
	tmp[0] = tmp[1] = 0;
	if (o->frame_model == FRAME_MODEL_OBJECT) {
		if (raw < 0) /* f_lasti -1 */
			return OP_NOT_STARTED;
		off = o->lasti_is_bytes ? (__u64)raw : (__u64)raw * 2;
		if (WALK_READ(r, &tmp[0], sizeof(__u64), leaf->code + o->code_code) || !tmp[0] ||
		    WALK_READ(r, &tmp[1], sizeof(__u64), tmp[0] + o->bytes_size))
			return 0;
		base = tmp[0] + o->bytes_data;
		units = tmp[1] / 2;
	} else {
		/* 3.11/3.12: prev_instr one code unit before the first. */
		if (raw == (__s32)o->code_adaptive - 2)
			return OP_NOT_STARTED;
		if (raw < (__s32)o->code_adaptive)
			return OP_OUTSIDE;
		off = (__u64)(raw - (__s32)o->code_adaptive);
		if (WALK_READ(r, &tmp[1], sizeof(__u64), leaf->code + o->code_units))
			return 0;
		base = leaf->code + o->code_adaptive;
		units = tmp[1];
	}
	idx = off / 2;
	if ((off & 1) || idx >= units)
		return OP_OUTSIDE;
	/* The code units read: one, or where prefixes may be stepped over as
	 * many of the next four as the bytecode holds (constant sizes, for
	 * the verifier). */
	units = o->op_prefix ? units - idx : 1;
	tmp[0] = 0;
	if (units >= 4) {
		if (WALK_READ(r, &tmp[0], 8, base + off))
			return 0;
	} else if (units >= 2) {
		if (WALK_READ(r, &tmp[0], 4, base + off))
			return 0;
	} else if (WALK_READ(r, &tmp[0], 2, base + off)) {
		return 0;
	}
	*op = (__u8)tmp[0];
	for (k = 0; k < 3 && k + 1 < units && *op == o->op_prefix; k++)
		*op = (__u8)(tmp[0] >> (16 * (k + 1)));
	return (__u8)(OP_READ | k << OP_PREFIX_SHIFT);
}

/*
 * Iterate over every thread state of every interpreter, as one flat loop so
 * that BPF needs no nested bpf_loop. Call with it zeroed and step 0, then
 * with step counting up by one per call; each call leaves the next thread
 * state in it->tstate and returns 1, or returns 0 at the end (it->err says
 * why, if not the list's end).
 *
 * A corrupt list (tstate->next, or interp->next, leading back to an earlier
 * entry) would repeat threads until the caller's bound. Brent's algorithm
 * catches every such loop in O(1) space: remember the entry at each step
 * 2^k - 1 (the "mark"), and a loop is proven the moment the mark comes
 * round again. A loop of length L entered after M entries is caught within
 * about 2 * (M + L) steps; readers that keep what they yielded
 * (stack_read_all) drop the repeats. The step number is the caller's: the
 * loop index in BPF, which the verifier treats as unknown, so that the
 * search converges instead of being unrolled (a counter kept in the
 * iterator would be a new constant, hence a new state, at every turn).
 */
struct tstate_iter {
	__u64 interp;
	__u64 tstate;
	__u64 mark; /* Brent: the entry a loop would come back to */
	__u32 started;
	__u32 err;
};

/* 1 if tstate, yielded as entry number step (0, 1, ...), closes a loop of
 * the thread list (it->err is then set). */
WALK_INLINE int tstate_iter_loops(struct tstate_iter *it, __u64 tstate, __u32 step)
{
	if (tstate == it->mark) {
		it->err = WALK_ERR_THREAD_CYCLE;
		return 1;
	}
	if (!(step & (step + 1)))
		it->mark = tstate;
	return 0;
}

WALK_INLINE int tstate_iter_next(WALK_READER_T *r, const struct proc_config *cfg,
				 struct tstate_iter *it, __u32 step)
{
	const struct py_offsets *o = &cfg->off;

	if (!it->started) {
		it->started = 1;
		if (walk_read_ptr(r, cfg->runtime_addr + o->runtime_interpreters_head,
				  &it->interp)) {
			it->err = WALK_ERR_READ_TSTATE;
			return 0;
		}
		it->tstate = 0;
	} else if (it->tstate && walk_read_ptr(r, it->tstate + o->tstate_next, &it->tstate)) {
		it->err = WALK_ERR_READ_TSTATE;
		return 0;
	}
	/* Two attempts: the current interpreter's next thread, or the next
	 * interpreter's first (an interpreter may have none: then stop, the
	 * caller's bound catches long lists anyway). */
	if (!it->tstate) {
		if (!it->interp)
			return 0;
		if (it->started == 2 &&
		    walk_read_ptr(r, it->interp + o->interp_next, &it->interp)) {
			it->err = WALK_ERR_READ_TSTATE;
			return 0;
		}
		it->started = 2;
		if (!it->interp)
			return 0;
		if (walk_read_ptr(r, it->interp + o->interp_threads_head, &it->tstate)) {
			it->err = WALK_ERR_READ_TSTATE;
			return 0;
		}
		if (!it->tstate)
			return 0;
	}
	return !tstate_iter_loops(it, it->tstate, step);
}

#endif /* FRAME_WALKER_H */
