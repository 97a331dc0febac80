/* SPDX-License-Identifier: MIT */
/*
 * asyncio tasks, read with the frame walker's primitive (WALK_READ), so
 * that the kernel (bpf/py_sample.bpf.h, at the sample) and user space
 * (user/python/py_asyncio.c: dump --async, record's await chains, tests
 * over memory images) follow one piece of code.
 *
 * task_capture(): which task the sampled thread's event loop is running,
 * read with the frames. 3.14+ keeps it in the thread state. 3.11-3.13 keep
 * it only in the asyncio module's dict {loop: task}: the thread's own task
 * is the one whose coroutine frame is among the generator frames the walk
 * just met (walk_state.gen_frame), which tells apart the loops of several
 * threads without knowing which loop is whose. With it, task_awaiter():
 * the first task awaiting it (3.14+: its awaited_by; 3.11-3.13: the
 * awaiting task's task_wakeup among its done callbacks), that task's
 * coroutine and name, and the coroutine frames where it is suspended, so
 * that a task too short-lived for any graph user space reads still gets
 * its awaiter as it was at the sample.
 *
 * coro_step(): one link of an await chain: a suspended coroutine's frame
 * and the object it awaits, if it awaits another coroutine.
 *
 * Everything is bounded by constants and every read may fail; a failed
 * read leaves the record without what it would have given, never a guess.
 */
#ifndef TASK_WALKER_H
#define TASK_WALKER_H

#include "frame_walker.h"

/* task_running() and task_awaiter() are calls of their own in BPF:
 * inlined, their locals joined the sample's frame, and the off-CPU
 * program, whose stack is nearly all used by the sample and the walk's
 * callback, went past the 512 bytes the verifier allows ("combined stack
 * size of 2 calls"). */
#ifdef __VMLINUX_H__
#define TASK_CALL static __noinline
#else
#define TASK_CALL static inline
#endif

struct coro_link {
	__u64 code;   /* the frame's code object */
	__u64 instr;  /* its raw instruction pointer (as frame_rec.instr before rebasing) */
	__u64 awaits; /* the object it awaits, 0 if none or not suspended in an await */
	__s8 state;   /* gi_frame_state */
};

/* Bytes of a generator read in one go by coro_step(): its header, and its
 * frame's fields up to the stack pointer (3.11-3.15: under 160). */
#define CORO_BLOCK	256
#define CORO_BLOCK_MASK (CORO_BLOCK - 1)
_Static_assert(WALK_CBUF_SIZE >= CORO_BLOCK,
	       "task_capture() reads a coroutine into the walk's cbuf");

/*
 * The link of the coroutine (or generator) at gen from buf, CORO_BLOCK
 * bytes read at gen; *type gets its type (at ob_type), so that the caller
 * decides, from the awaited object's type, whether to follow it. Returns
 * the address of the stack slot holding the awaited object, 0 when the
 * frame is not suspended in an await.
 */
WALK_INLINE __u64 coro_parse(const struct coro_layout *L, __u16 ob_type, __u64 gen, const __u8 *buf,
			     __u64 *type, struct coro_link *link)
{
	__u32 fo = L->gen_iframe;
	__u64 top;
	__s8 state;

	*type = walk_u64(buf, ob_type, CORO_BLOCK_MASK);
	state = (__s8)buf[L->gen_frame_state & CORO_BLOCK_MASK];
	link->code = walk_u64(buf, fo + L->frame_code, CORO_BLOCK_MASK) & L->ref_mask;
	link->instr = walk_u64(buf, fo + L->frame_instr, CORO_BLOCK_MASK);
	link->awaits = 0;
	link->state = state;
	if (state != L->state_awaiting && state != L->state_awaiting2)
		return 0;
	if (L->stack_is_pointer) {
		top = walk_u64(buf, fo + L->frame_stack, CORO_BLOCK_MASK);
		return top - (__u64)L->await_slot * 8;
	} else {
		__s32 count = (__s32)walk_u32(buf, fo + L->frame_stack, CORO_BLOCK_MASK);

		if (count < (__s32)L->await_slot || count > 1 << 20)
			return 0;
		return gen + fo + L->frame_localsplus + ((__u64)count - L->await_slot) * 8;
	}
}

/* The awaited object in the slot coro_parse() named, untagged, read
 * through buf (the block is parsed by then). */
WALK_INLINE void coro_awaits(WALK_READER_T *r, const struct coro_layout *L, __u64 slot, __u8 *buf,
			     struct coro_link *link)
{
	if (slot && !WALK_READ(r, buf, sizeof(__u64), slot))
		link->awaits = walk_u64(buf, 0, CORO_BLOCK_MASK) & L->ref_mask;
}

/*
 * Read the coroutine at gen into link, with buf (CORO_BLOCK + 8 bytes) as
 * scratch: the object and its frame in one read. Returns 0, or -1 when it
 * cannot be read (the block may reach past its mapping for an object at
 * the mapping's end: such a generator is not followed).
 */
WALK_INLINE int coro_step(WALK_READER_T *r, const struct coro_layout *L, __u16 ob_type, __u64 gen,
			  __u8 *buf, __u64 *type, struct coro_link *link)
{
	__u64 slot;

	link->code = 0;
	link->instr = 0;
	link->awaits = 0;
	link->state = 0;
	*type = 0;
	if (WALK_READ(r, buf, CORO_BLOCK, gen))
		return -1;
	slot = coro_parse(L, ob_type, gen, buf, type, link);
	coro_awaits(r, L, slot, buf, link);
	return 0;
}

/* The index in out[] of the frame at iframe if the walk met it among the
 * generator frames it remembers; 0xffff otherwise. */
WALK_INLINE __u32 task_frame_index(const struct walk_state *w, __u64 iframe)
{
	const struct walk_scratch *s = w->scratch;
	__u32 n = s->ngen < WALK_GEN ? s->ngen : WALK_GEN;

	for (__u32 g = 0; g < WALK_GEN; g++)
		if (g < n && iframe && s->gen_frame[g] == iframe)
			return s->gen_idx[g] & 0xffff;
	return 0xffff;
}

/* 3.11-3.13: the current-tasks dict's entry whose task runs on this
 * thread. Returns the task (its coroutine in *coro), or 0. */
WALK_INLINE __u64 task_scan_current(WALK_READER_T *r, const struct async_config *a,
				    const struct walk_state *w, __u64 *coro, __u8 *flags)
{
	__u64 keys = 0, nentries = 0, entries, task, c;
	__u8 log2_index = 0;
	__u32 n;

	*coro = 0;
	if (walk_read_ptr(r, a->current_tasks + a->dict_keys, &keys) || !keys)
		return 0;
	if (WALK_READ(r, &log2_index, sizeof(log2_index), keys + a->keys_log2_index_bytes) ||
	    walk_read_ptr(r, keys + a->keys_nentries, &nentries))
		return 0;
	if (log2_index > 40)
		return 0;
	if (nentries > TASK_SCAN_MAX)
		*flags |= TASK_SCAN_CUT;
	n = nentries < TASK_SCAN_MAX ? (__u32)nentries : TASK_SCAN_MAX;
	/* General keys (a loop is no str): (hash, key, value), 24 bytes. */
	entries = keys + a->keys_indices + (1ULL << log2_index);
	for (__u32 i = 0; i < TASK_SCAN_MAX; i++) {
		if (i >= n)
			break;
		if (walk_read_ptr(r, entries + i * 24 + 16, &task) || !task)
			continue;
		if (walk_read_ptr(r, task + a->task_coro, &c) || !c)
			continue;
		if (task_frame_index(w, c + a->gen_iframe) != 0xffff) {
			*coro = c;
			return task;
		}
	}
	if (n)
		*flags |= TASK_NOT_FOUND;
	return 0;
}

/* The word at addr, read through buf (scratch) into *out, 0 if it cannot
 * be read: 0, or -1 then. In BPF no local of the caller has its address
 * given to the read helper, so none needs a slot of the BPF stack, which
 * the off-CPU program has all but used. */
WALK_INLINE int task_word(WALK_READER_T *r, __u8 *buf, __u64 addr, __u64 *out)
{
	*out = 0;
	if (WALK_READ(r, buf, sizeof(__u64), addr))
		return -1;
	*out = walk_u64(buf, 0, CORO_BLOCK_MASK);
	return 0;
}

/* A task's coroutine (unless *coro holds it already) and the first
 * TASK_NAME_RAW bytes of its name object (name_raw); returns name_flag
 * when the name was copied, else 0. */
WALK_INLINE __u8 task_ident(WALK_READER_T *r, const struct async_config *a, __u8 *buf, __u64 task,
			    __u64 *coro, __u8 *name_raw, __u8 name_flag)
{
	__u64 name = 0;

	if (!*coro)
		task_word(r, buf, task + a->task_coro, coro);
	if (!task_word(r, buf, task + a->task_name, &name) && name &&
	    !WALK_READ(r, name_raw, TASK_NAME_RAW, name))
		return name_flag;
	return 0;
}

/* No awaiter yet. */
WALK_INLINE void task_aw_clear(struct task_rec *rec)
{
	rec->aw_flags = 0;
	rec->awaiter = 0;
	rec->awaiter_coro = 0;
	rec->nawaiters = 0;
	rec->naw_frames = 0;
}

/* Count an awaiter seen, keeping the lowest address (the rule user space
 * follows over the whole graph, docs/async.md). A task awaiting itself
 * (a hostile or torn awaited_by) is none. */
WALK_INLINE void task_aw_take(struct task_rec *rec, __u64 awaiter)
{
	if (!awaiter || awaiter == rec->task)
		return;
	rec->nawaiters++;
	if (!rec->awaiter || awaiter < rec->awaiter)
		rec->awaiter = awaiter;
}

/* 3.11-3.13: the task whose task_wakeup a done callback cb is (the
 * built-in method's self, when its method definition is named
 * a->wakeup_name), or 0. got: scratch, the name read into it. */
WALK_INLINE __u64 task_wakeup_self(WALK_READER_T *r, const struct async_config *a, __u64 cb,
				   __u8 *got)
{
	__u64 ml = 0, self = 0, name = 0;

	if (!cb || task_word(r, got, cb + a->cfunc_ml, &ml) || !ml ||
	    task_word(r, got, cb + a->cfunc_self, &self) || !self || task_word(r, got, ml, &name) ||
	    !name || WALK_READ(r, got, TASK_WAKEUP_NAME, name))
		return 0;
	for (__u32 i = 0; i < TASK_WAKEUP_NAME; i++) {
		if (got[i] != a->wakeup_name[i])
			return 0;
		if (!got[i])
			break;
	}
	return self;
}

/* 3.11-3.13: the awaiters among task's first 1 + TASK_AW_CALLBACKS done
 * callbacks. */
WALK_INLINE void task_aw_callbacks(WALK_READER_T *r, const struct async_config *a, __u64 task,
				   __u8 *buf, struct task_rec *rec)
{
	__u64 cb = 0, list = 0, size = 0, items = 0, tup;

	if (task_word(r, buf, task + a->task_callback0, &cb) ||
	    task_word(r, buf, task + a->task_callbacks, &list))
		return;
	rec->aw_flags |= TASK_AW_READ;
	task_aw_take(rec, task_wakeup_self(r, a, cb, buf));
	if (!list || task_word(r, buf, list + a->list_size, &size) ||
	    task_word(r, buf, list + a->list_items, &items) || !items)
		return;
	if (size > TASK_AW_CALLBACKS)
		rec->aw_flags |= TASK_AW_CUT;
	for (__u32 i = 0; i < TASK_AW_CALLBACKS; i++) {
		if (i >= size)
			break;
		if (task_word(r, buf, items + i * 8, &tup) || !tup ||
		    task_word(r, buf, tup + a->tuple_items, &cb))
			continue;
		task_aw_take(rec, task_wakeup_self(r, a, cb, buf));
	}
}

/* 3.14+: the awaiters in task's awaited_by: one task, or the live entries
 * among a set's first TASK_AW_SLOTS slots (a dummy, a removed entry,
 * has hash -1). buf: 16 bytes of scratch. */
WALK_INLINE void task_aw_awaited_by(WALK_READER_T *r, const struct async_config *a, __u64 task,
				    __u8 *buf, struct task_rec *rec)
{
	__u64 ab = 0, used = 0, mask = 0, table = 0;
	__u8 is_set;

	if (task_word(r, buf, task + a->task_awaited_by, &ab) ||
	    WALK_READ(r, buf, 1, task + a->task_awaited_by_is_set))
		return;
	is_set = buf[0];
	rec->aw_flags |= TASK_AW_READ;
	if (!ab)
		return;
	if (!is_set) {
		task_aw_take(rec, ab);
		return;
	}
	if (task_word(r, buf, ab + a->set_used, &used) ||
	    task_word(r, buf, ab + a->set_mask, &mask) ||
	    task_word(r, buf, ab + a->set_table, &table) || !table)
		return;
	if (mask >= TASK_AW_SLOTS)
		rec->aw_flags |= TASK_AW_CUT;
	for (__u32 i = 0; i < TASK_AW_SLOTS; i++) {
		if (i > mask)
			break;
		if (WALK_READ(r, buf, 16, table + i * 16) || (__s64)walk_u64(buf, 8, 15) == -1)
			continue;
		task_aw_take(rec, walk_u64(buf, 0, 15));
	}
	/* The set's own count: those past the slots looked at too. */
	if (used > rec->nawaiters)
		rec->nawaiters = used > 0xffffffffu ? 0xffffffffu : (__u32)used;
}

/*
 * Where the awaiter is suspended: its coroutine's frame, then each
 * coroutine it awaits in turn while the awaited object is a coroutine of
 * the same type (an await through helper coroutines; a Task, a Future or
 * a gather's future ends it, and so does the running task itself, which
 * is not read). buf: CORO_BLOCK + 8 bytes of scratch.
 */
WALK_INLINE void task_aw_frames(WALK_READER_T *r, const struct async_config *a, __u8 *buf,
				struct task_rec *rec)
{
	__u64 gen = rec->awaiter_coro, type0 = 0, type = 0;
	struct coro_link l;

	for (__u32 i = 0; i < TASK_AW_FRAMES; i++) {
		if (coro_step(r, &a->coro, a->ob_type, gen, buf, &type, &l) || !l.code ||
		    (i && type != type0))
			return;
		type0 = type;
		rec->aw_frames[i].code = l.code;
		rec->aw_frames[i].instr = (__s32)(l.instr - l.code);
		rec->aw_frames[i].fingerprint = 0;
		rec->naw_frames = (__u8)(i + 1);
		if (!l.awaits || l.awaits == gen || l.awaits == rec->task)
			return;
		gen = l.awaits;
	}
	rec->aw_flags |= TASK_AW_FRAMES_CUT;
}

/*
 * The first task awaiting task, into rec: its address, coroutine, name
 * bytes and frames. The lowest address among the awaiters looked at, as
 * user space picks among all (docs/async.md); TASK_AW_CUT when some were
 * not looked at. A bounded number of reads, each allowed to fail. buf:
 * CORO_BLOCK + 8 bytes of scratch.
 */
TASK_CALL void task_awaiter(WALK_READER_T *r, const struct async_config *a, __u64 task, __u8 *buf,
			    struct task_rec *rec)
{
	task_aw_clear(rec);
	if (a->task_awaited_by)
		task_aw_awaited_by(r, a, task, buf, rec);
	else if (a->task_callbacks)
		task_aw_callbacks(r, a, task, buf, rec);
	if (!rec->awaiter)
		return;
	if (a->task_awaited_by &&
	    (WALK_READ(r, buf, 1, rec->awaiter + a->task_is_task) || buf[0] != 1)) {
		rec->aw_flags |= TASK_AW_NOT_TASK;
		rec->awaiter = 0;
		return;
	}
	rec->aw_flags |= task_ident(r, a, buf, rec->awaiter, &rec->awaiter_coro,
				    rec->awaiter_name_raw, TASK_AW_NAME_READ);
	if (rec->awaiter_coro)
		task_aw_frames(r, a, buf, rec);
}

/*
 * The running task of the thread whose walk w just ended, into rec. rec
 * is left with task 0 when the thread runs none (or its task could not be
 * read: the counters say which). Returns 1 if a task was captured.
 */
TASK_CALL int task_running(WALK_READER_T *r, const struct proc_config *cfg,
			   const struct walk_state *w, __u64 tstate, struct task_rec *rec)
{
	const struct async_config *a = &cfg->async;
	__u64 task = 0, coro = 0;
	__u8 flags = 0;

	rec->task = 0;
	rec->coro = 0;
	rec->frame_idx = 0xffff;
	rec->flags = 0;
	task_aw_clear(rec);
	if (a->tstate_running_task) {
		if (walk_read_ptr(r, tstate + a->tstate_running_task, &task))
			task = 0;
	} else if (a->current_tasks) {
		task = task_scan_current(r, a, w, &coro, &flags);
	}
	rec->flags = flags;
	if (!task)
		return 0;
	rec->coro = coro; /* 3.11-3.13: the scan read it */
	flags |=
	    task_ident(r, a, w->scratch->cbuf, task, &rec->coro, rec->name_raw, TASK_NAME_READ);
	rec->task = task;
	rec->frame_idx = (__u16)task_frame_index(w, rec->coro ? rec->coro + a->gen_iframe : 0);
	if (rec->frame_idx != 0xffff)
		flags |= TASK_AT_FRAME;
	rec->flags = flags;
	return 1;
}

/*
 * The running task of the thread whose walk w just ended and its first
 * awaiter, into rec (task_running, task_awaiter). Two calls one after the
 * other, not one in the other: the BPF stack of the deepest chain of
 * calls is what the verifier bounds.
 */
WALK_INLINE int task_capture(WALK_READER_T *r, const struct proc_config *cfg,
			     const struct walk_state *w, __u64 tstate, struct task_rec *rec)
{
	if (!task_running(r, cfg, w, tstate, rec))
		return 0;
	/* The walk's code buffer is free by now (the frames are named). */
	task_awaiter(r, &cfg->async, rec->task, w->scratch->cbuf, rec);
	return 1;
}

#endif /* TASK_WALKER_H */
