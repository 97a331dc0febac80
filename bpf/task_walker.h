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
 * threads without knowing which loop is whose.
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

/* task_capture() is a call of its own in BPF: inlined, its locals joined
 * the sample's frame, and the off-CPU program, whose stack is nearly all
 * used by the sample and the walk's callback, went past the 512 bytes the
 * verifier allows ("combined stack size of 2 calls"). */
#ifdef __VMLINUX_H__
#define TASK_CALL static __noinline
#else
#define TASK_CALL static inline
#endif

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

/*
 * The running task of the thread whose walk w just ended, into rec. rec
 * is left with task 0 when the thread runs none (or its task could not be
 * read: the counters say which). Returns 1 if a task was captured.
 */
TASK_CALL int task_capture(WALK_READER_T *r, const struct proc_config *cfg,
			   const struct walk_state *w, __u64 tstate, struct task_rec *rec)
{
	const struct async_config *a = &cfg->async;
	__u64 task = 0, coro = 0, name = 0;
	__u8 flags = 0;

	rec->task = 0;
	rec->coro = 0;
	rec->frame_idx = 0xffff;
	rec->flags = 0;
	if (a->tstate_running_task) {
		if (walk_read_ptr(r, tstate + a->tstate_running_task, &task))
			task = 0;
		if (task && walk_read_ptr(r, task + a->task_coro, &coro))
			coro = 0;
	} else if (a->current_tasks) {
		task = task_scan_current(r, a, w, &coro, &flags);
	}
	rec->flags = flags;
	if (!task)
		return 0;
	rec->task = task;
	rec->coro = coro;
	rec->frame_idx = (__u16)task_frame_index(w, coro ? coro + a->gen_iframe : 0);
	if (rec->frame_idx != 0xffff)
		flags |= TASK_AT_FRAME;
	if (!walk_read_ptr(r, task + a->task_name, &name) && name &&
	    !WALK_READ(r, rec->name_raw, TASK_NAME_RAW, name))
		flags |= TASK_NAME_READ;
	rec->flags = flags;
	return 1;
}

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

/* The awaited object in the slot coro_parse() named, untagged. */
WALK_INLINE void coro_awaits(WALK_READER_T *r, const struct coro_layout *L, __u64 slot,
			     struct coro_link *link)
{
	if (slot && !walk_read_ptr(r, slot, &link->awaits))
		link->awaits &= L->ref_mask;
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
	coro_awaits(r, L, slot, link);
	return 0;
}

#endif /* TASK_WALKER_H */
