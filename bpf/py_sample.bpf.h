/* SPDX-License-Identifier: MIT */
/*
 * Taking one Python stack sample inside the kernel: find the thread's
 * PyThreadState, walk its frames with the shared walker, and push one
 * variable-size record into the ring buffer. Shared by every program that
 * samples (perf_event ticks, trace probes, the wall-clock iterator); the
 * includer chooses how memory is read (WALK_READ) before including this.
 */
#ifndef PY_SAMPLE_BPF_H
#define PY_SAMPLE_BPF_H

#include "bpfpy.h"

/* The includer's slot in the per-CPU scratch array, so that programs that
 * can nest on one CPU (a tick interrupting a uprobe) never share a buffer. */
#ifndef SCRATCH_SLOT
#define SCRATCH_SLOT 0
#endif

struct sample_scratch {
	struct sample_buf buf;
	struct walk_scratch ws;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* host tgid */
	__type(value, struct proc_config);
} proc_configs SEC(".maps");

/* tid -> thread state. A hint only: re-validated on every hit, because a
 * thread state can be freed and its tid reused. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u64);
} tstate_cache SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct sample_scratch);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* resized by user space before load */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CNT__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* Threads searched per lookup: beyond this a thread is reported as having
 * no thread state rather than costing the target unbounded time. */
#define TSTATE_SEARCH_MAX 4096

static __always_inline void count_add(__u32 idx, __u64 v)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &idx);

	if (c)
		*c += v;
}

/* Does this thread state belong to the OS thread (tid, pthread_self)? */
static __always_inline int tstate_is_thread(WALK_READER_T *r, const struct proc_config *cfg,
					    __u64 tstate, __u32 tid, __u64 pthread_self)
{
	const struct py_offsets *o = &cfg->off;
	__u64 v = 0;

	if (o->tstate_native_thread_id) {
		if (WALK_READ(r, &v, sizeof(v), tstate + o->tstate_native_thread_id))
			return 0;
		return (__u32)v == tid;
	}
	if (WALK_READ(r, &v, sizeof(v), tstate + o->tstate_thread_id))
		return 0;
	return v == pthread_self;
}

struct find_ctx {
	const struct proc_config *cfg;
	WALK_READER_T *reader;
	struct tstate_iter it;
	__u64 pthread_self;
	__u64 found;
	__u32 tid;
};

static int find_step(__u32 i, void *data)
{
	struct find_ctx *f = data;

	(void)i;
	if (!tstate_iter_next(f->reader, f->cfg, &f->it))
		return 1;
	if (tstate_is_thread(f->reader, f->cfg, f->it.tstate, f->tid, f->pthread_self)) {
		f->found = f->it.tstate;
		return 1;
	}
	return 0;
}

/* The thread state of (tid), or 0 if the thread has none (a thread Python
 * does not know of, or one not yet or no longer attached). */
static __always_inline __u64 find_tstate(WALK_READER_T *r, const struct proc_config *cfg, __u32 tid,
					 __u64 pthread_self)
{
	struct find_ctx f = {.cfg = cfg, .reader = r, .tid = tid, .pthread_self = pthread_self};
	__u64 *hint = bpf_map_lookup_elem(&tstate_cache, &tid);

	if (hint && tstate_is_thread(r, cfg, *hint, tid, pthread_self))
		return *hint;
	bpf_loop(TSTATE_SEARCH_MAX, find_step, &f, 0);
	if (f.found)
		bpf_map_update_elem(&tstate_cache, &tid, &f.found, BPF_ANY);
	else if (hint)
		bpf_map_delete_elem(&tstate_cache, &tid);
	return f.found;
}

static int walk_loop_step(__u32 i, void *data)
{
	(void)i;
	return walk_step((struct walk_state *)data);
}

/* The GIL holder check, where the version lets us see it. */
static __always_inline __u8 gil_flags(WALK_READER_T *r, const struct proc_config *cfg, __u64 tstate)
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

/*
 * Take one sample of the thread (pid, tid) and emit it. flags carries
 * SAMPLE_WALL/IDLE/TRACE from the caller; the trace fields of the header are
 * filled by the caller through hdr_extra (may be NULL). Returns 0 if a record
 * was emitted.
 */
static __always_inline int sample_thread(WALK_READER_T *r, const struct proc_config *cfg, __u32 pid,
					 __u32 tid, __u64 pthread_self, __u8 flags, __u64 start_ns,
					 __u32 probe_id, __u64 arg0, __u64 arg1)
{
	__u32 slot = SCRATCH_SLOT;
	struct sample_scratch *sc = bpf_map_lookup_elem(&scratch, &slot);
	struct walk_state w = {};
	struct sample_hdr *h;
	__u64 tstate, size;
	__u32 n, loops;
	long ret;

	if (!sc)
		return -1;
	tstate = find_tstate(r, cfg, tid, pthread_self);
	if (!tstate) {
		count_add(CNT_NO_PYTHON, 1);
		return -1;
	}
	w.cfg = cfg;
	w.reader = r;
	w.scratch = &sc->ws;
	w.out = sc->buf.frames;
	w.max = cfg->max_depth;
	if (walk_begin(&w, tstate) == WALK_OK) {
		/* Skipped (shim, entry) frames take loop turns too: leave room. */
		loops = w.max + 64;
		if (loops > BPFPY_MAX_DEPTH + 64)
			loops = BPFPY_MAX_DEPTH + 64;
		bpf_loop(loops, walk_loop_step, &w, 0);
		if (!w.done && !w.err)
			w.truncated = 1;
	}
	h = &sc->buf.hdr;
	h->ts_ns = start_ns;
	h->tstate = tstate;
	h->pid = pid;
	h->tid = tid;
	h->cpu = bpf_get_smp_processor_id();
	h->probe_id = probe_id;
	h->args[0] = arg0;
	h->args[1] = arg1;
	h->err = w.err;
	h->flags = flags | gil_flags(r, cfg, tstate);
	n = w.n;
	if (n > BPFPY_MAX_DEPTH)
		n = BPFPY_MAX_DEPTH;
	if (w.err) {
		h->flags |= SAMPLE_ERROR;
		n = 0;
		count_add(CNT_ERR_BASE + (w.err < WALK_ERR__COUNT ? w.err : 0), 1);
	}
	if (w.truncated) {
		h->flags |= SAMPLE_TRUNCATED;
		count_add(CNT_TRUNCATED, 1);
	}
	h->nframes = n;
	count_add(CNT_FRAMES, w.visited);
	h->cost_ns = (__u32)(bpf_ktime_get_ns() - start_ns);
	size = sizeof(struct sample_hdr) + (__u64)n * sizeof(struct frame_rec);
	if (size > sizeof(struct sample_buf))
		size = sizeof(struct sample_buf);
	ret = bpf_ringbuf_output(&events, &sc->buf, size, BPF_RB_NO_WAKEUP);
	count_add(CNT_COST_NS, bpf_ktime_get_ns() - start_ns);
	if (ret) {
		count_add(CNT_LOST, 1);
		return -1;
	}
	count_add(CNT_EMITTED, 1);
	return 0;
}

#endif /* PY_SAMPLE_BPF_H */
