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
#include "code_name.h"
#include "task_walker.h"

/* The includer's slot in the per-CPU scratch array, so that programs that
 * can nest on one CPU (a tick interrupting a uprobe) never share a buffer. */
#ifndef SCRATCH_SLOT
#define SCRATCH_SLOT 0
#endif

/* BPFPY_NO_OPCODES (bpf/tracer.bpf.c): no record --opcodes byte, for the
 * same reason of stack room; trace never asks for it. */
/* BPFPY_NO_ASYNC (bpf/tracer.bpf.c): no task capture. The tracer's stack,
 * which holds its probe's context besides the sample's, has no room for
 * the call, and a trace event has no task chain to show. */

/* Where a finished record goes: the ring buffer, unless the includer keeps
 * it (bpf/offcpu.bpf.c holds it until the thread is back on a CPU). */
#ifndef SAMPLE_OUTPUT
#define SAMPLE_OUTPUT(q, buf, size) bpf_ringbuf_output(&events, (buf), (size), BPF_RB_NO_WAKEUP)
#endif

struct sample_scratch {
	struct sample_buf buf;
	struct walk_scratch ws;
	struct code_name name;	       /* built here, then copied into code_names */
	struct code_table_chunk chunk; /* the same for code_tables */
	/* The code object being named: .name is code_names' key, the
	 * whole code_tables' (not on the stack: the tracer has little room). */
	struct code_table_key name_key;
	__u64 tmp[2]; /* walk_exc(), walk_gc_flags(): off the tracer's full stack */
	/* find_tstate()'s word and thread_found()'s entry and key: the same */
	__u32 find_out;
	__u32 pad;
	struct thread_entry entry;
	struct tstate_owner_key owner;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* host tgid */
	__type(value, struct proc_config);
} proc_configs SEC(".maps");

/*
 * tid -> struct thread_entry (bpfpy.h): the thread state last found for a
 * thread, or the phase it is in (being born, being torn down). Behind the
 * process's own slots (proc_config.tstates), which hold most threads of
 * most processes. Where bpf/thread_watch.bpf.h's hooks are attached they
 * keep it exact: a thread spawned while sampled is entered with its state
 * before it runs, and a state is marked cleared before it is freed.
 * Elsewhere a hint: every thread state is checked against the thread's own
 * id before use, because a state can be freed and its tid reused.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct thread_entry);
} tid_tstates SEC(".maps");

/* (pid, thread state) -> tid: whose state PyThreadState_Clear clears, when
 * another thread clears it (finalization). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct tstate_owner_key);
	__type(value, __u32);
} tstate_owners SEC(".maps");

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

/* (tgid, code, fingerprint) -> the code object's names, see bpfpy.h. LRU:
 * user space only reads it, the oldest names go first. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, CODE_NAMES_MAX);
	__type(key, struct code_name_key);
	__type(value, struct code_name);
} code_names SEC(".maps");

/* (code_names' key, chunk) -> the line table past code_name.table. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, CODE_TABLES_MAX);
	__type(key, struct code_table_key);
	__type(value, struct code_table_chunk);
} code_tables SEC(".maps");

/*
 * record --phases: time each step of a sample (enum cost_phase) into the
 * counters. Read-only data, so with it off the verifier drops every mark
 * as dead code; with it on each mark is one more clock read.
 */
const volatile __u8 cost_phases = 0;

/* Threads searched per lookup: beyond this a thread is reported as having
 * no thread state rather than costing the target unbounded time. */
#define TSTATE_SEARCH_MAX 4096

static __always_inline void count_add(__u32 idx, __u64 v)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &idx);

	if (c)
		*c += v;
}

/* End of phase p, which began at since: its time is counted, and the next
 * phase begins now. */
static __always_inline __u64 phase_end(__u32 p, __u64 since)
{
	__u64 now;

	if (!cost_phases)
		return 0;
	now = bpf_ktime_get_ns();
	count_add(CNT_PHASE_BASE + p, now - since);
	return now;
}

/* Where a thread state keeps its thread's id: 3.11+ as gettid() returned
 * it, i.e. in the target's own PID namespace (ns_tid); <= 3.10 only
 * pthread_self(). */
static __always_inline __u16 tstate_id_off(const struct py_offsets *o)
{
	return o->tstate_native_thread_id ? o->tstate_native_thread_id : o->tstate_thread_id;
}

/* v, the word at tstate_id_off(): is it the thread's? */
static __always_inline int tstate_id_is(const struct py_offsets *o, __u64 v, __u32 ns_tid,
					__u64 pthread_self)
{
	return o->tstate_native_thread_id ? (__u32)v == ns_tid : v == pthread_self;
}

/* Does this thread state belong to the OS thread? */
static __always_inline int tstate_is_thread(WALK_READER_T *r, const struct proc_config *cfg,
					    __u64 tstate, __u32 ns_tid, __u64 pthread_self)
{
	__u64 v = 0;

	if (WALK_READ(r, &v, sizeof(v), tstate + tstate_id_off(&cfg->off)))
		return 0;
	return tstate_id_is(&cfg->off, v, ns_tid, pthread_self);
}

/*
 * One sample to take: who, read how, and what the record carries. Filled by
 * each program from its task (bpf/task_ids.bpf.h) and, for trace, the probe.
 */
struct sample_req {
	struct proc_config *cfg; /* writable: named[] */
	WALK_READER_T *reader;
	__u64 start_ns;	    /* when the program started, for ts_ns and cost */
	__u64 pthread_self; /* the thread's fs base: pthread_self() with glibc */
	__u32 pid;	    /* host tgid */
	__u32 tid;	    /* host tid: the record, the tid_tstates key */
	__u32 ns_tid;	    /* tid in the target's PID namespace: what 3.11+ stores */
	__u8 flags;	    /* SAMPLE_WALL, SAMPLE_IDLE, SAMPLE_TRACE */
	__u8 exiting;	    /* the task is exiting or exec'ing: its thread state is gone */
	__u8 young;	    /* the task has used less than THREAD_STARTING_MAX_NS of CPU */
	__u8 pad;
	/* trace only (SAMPLE_TRACE): which probe fired, and its arguments */
	__u32 probe_id;
	__u32 pad1;
	__u64 args[2];
	void *ctx; /* the program's context, for bpf_get_stack (--kernel); may be NULL */
};

struct find_ctx {
	const struct sample_req *q;
	struct tstate_iter it;
	/* Before the search, a state cleared for this thread, never its
	 * state again (0: none); after, the state found if it differs. */
	__u64 found;
};

static int find_step(__u32 i, void *data)
{
	struct find_ctx *f = data;
	const struct sample_req *q = f->q;

	if (!tstate_iter_next(q->reader, q->cfg, &f->it, i))
		return 1;
	if (f->it.tstate != f->found &&
	    tstate_is_thread(q->reader, q->cfg, f->it.tstate, q->ns_tid, q->pthread_self)) {
		f->found = f->it.tstate;
		return 1;
	}
	return 0;
}

/*
 * The search's starting zeros, written to the per-CPU scratch and read back
 * (walk_hide() in frame_walker.h says why): the verifier then meets the
 * step with one state however the program got here, instead of one per
 * path, and verifies it once. The values are the same.
 */
static __always_inline void find_hide(struct find_ctx *f, __u64 skip)
{
	__u32 slot = SCRATCH_SLOT;
	struct sample_scratch *sc = bpf_map_lookup_elem(&scratch, &slot);
	volatile __u64 *v;

	if (!sc)
		return;
	v = sc->ws.opaque;
	v[0] = 0;
	f->it.interp = v[0];
	f->it.tstate = v[0];
	f->it.mark = v[0];
	f->it.started = (__u32)v[0];
	f->it.err = (__u32)v[0];
	f->found = v[0] + skip;
}

/* What find_tstate() says besides the state, in one word (the tracer's
 * stack has no room for more): why the search stopped early (bits 0-7,
 * WALK_ERR_THREAD_CYCLE, ...), the thread's phase when it has no state to
 * read (bits 8-15, THREAD_PHASE_*), and whether the thread showed frames
 * before (FIND_FRAMES: a walk without frames is then its end, not its
 * start). */
#define FIND_ERR(o)   ((o)&0xff)
#define FIND_PHASE(o) (((o) >> 8) & 0xff)
#define FIND_FRAMES   (1u << 16)

/* A thread spawned by _thread that has not bound its state after this much
 * CPU of its own is not starting: CPython binds within microseconds of the
 * clone (bpf/thread_watch.bpf.h). Then it is searched for like any other. */
#define THREAD_STARTING_MAX_NS 2000000

/* The thread state the search found is the thread's now (the entry and
 * the key built in the per-CPU scratch: the tracer's stack has no room). */
static __always_inline void thread_found(const struct sample_req *q, __u64 tstate)
{
	__u32 slot = SCRATCH_SLOT, tid = q->tid;
	struct sample_scratch *sc = bpf_map_lookup_elem(&scratch, &slot);

	if (!sc)
		return;
	sc->entry = (struct thread_entry){.tstate = tstate, .pid = q->pid};
	sc->owner = (struct tstate_owner_key){.pid = q->pid, .tstate = tstate};
	bpf_map_update_elem(&tid_tstates, &tid, &sc->entry, BPF_ANY);
	bpf_map_update_elem(&tstate_owners, &sc->owner, &tid, BPF_ANY);
}

/*
 * The thread state of the request's thread, or 0 if it has none to read:
 * a thread Python does not know of (phase 0 in *out), or one being born or
 * torn down (THREAD_PHASE_*), whose state is not read at all. In order: an
 * exiting task (its memory may be gone); the process's slot; the thread's
 * entry (tid_tstates): its state, checked, or its phase; the search of the
 * thread list, which never returns a state cleared for it.
 */
static __always_inline __u64 find_tstate(const struct sample_req *q, __u32 *out)
{
	struct find_ctx f = {.q = q};
	__u32 tid = q->tid;
	__u64 *slot = &q->cfg->tstates[tid & (PROC_TSTATE_SLOTS - 1)];
	__u64 own = *slot, skip = 0;
	struct thread_entry *e;

	*out = FIND_FRAMES;
	if (q->exiting) {
		*out = THREAD_PHASE_EXITING << 8;
		return 0;
	}
	if (own && tstate_is_thread(q->reader, q->cfg, own, q->ns_tid, q->pthread_self))
		return own;
	e = bpf_map_lookup_elem(&tid_tstates, &tid);
	*out = 0;
	if (e && e->pid == q->pid) {
		__u64 mine = e->tstate;
		__u8 flags = e->flags;

		*out = flags & THREAD_FRAMES ? FIND_FRAMES : 0;
		if (e->phase == THREAD_PHASE_EXITING) {
			/* A thread _thread spawned ends after its clear; others
			 * (the main thread's finalization aside) may make
			 * another state: PyGILState_Ensure in a C thread. */
			if ((flags & THREAD_SPAWNED) || tid == q->pid) {
				*out = THREAD_PHASE_EXITING << 8;
				return 0;
			}
			skip = mine; /* never found again */
		} else if (tstate_is_thread(q->reader, q->cfg, mine, q->ns_tid, q->pthread_self)) {
			e->phase = 0; /* bound, if it was spawned */
			if (flags & THREAD_FRAMES)
				*slot = mine;
			return mine;
		} else if (e->phase == THREAD_PHASE_STARTING && q->young) {
			*out = THREAD_PHASE_STARTING << 8;
			return 0;
		}
	}
	find_hide(&f, skip);
	bpf_loop(TSTATE_SEARCH_MAX, find_step, &f, 0);
	if (f.found != skip) {
		thread_found(q, f.found);
		*out = 0;
		return f.found;
	}
	/* cleared, and no other state since: still its end */
	*out = f.it.err | (skip && !f.it.err ? THREAD_PHASE_EXITING << 8 : 0);
	return 0;
}

/* The first sample with frames of a thread found through its entry: its
 * slot may hold it from now on (a walk without frames is from then on the
 * thread's end: FIND_FRAMES). */
static __always_inline void thread_saw_frames(const struct sample_req *q, __u64 tstate)
{
	__u32 tid = q->tid;
	struct thread_entry *e = bpf_map_lookup_elem(&tid_tstates, &tid);

	if (!e || e->pid != q->pid || e->tstate != tstate || e->phase)
		return;
	e->flags |= THREAD_FRAMES;
	q->cfg->tstates[tid & (PROC_TSTATE_SLOTS - 1)] = tstate;
}

struct name_ctx {
	const struct sample_req *q;
	struct sample_scratch *sc;
	__u32 n;
	__u32 named;
};

/*
 * Name one frame's code object unless it is known to be named: in the
 * process's filter (proc_config.named), else in code_names. An unknown one
 * is copied (bpf/code_name.h) while the frame runs it. The frames visited
 * are those whose code the walk read anew (walk_scratch.fresh_at), which
 * hold every code object of the stack once or a few times: a 300-deep
 * recursion over 4 functions takes 4 turns, not 300 (a turn of bpf_loop
 * per frame was a large share of a deep sample: docs/bench.md). Where the walk read more code
 * objects than it kept indexes of, every frame is visited, and a frame
 * with the same code as the one before costs nothing. The common case
 * costs one compare.
 */
static int name_step(__u32 i, void *data)
{
	struct name_ctx *c = data;
	const struct sample_req *q = c->q;
	struct sample_scratch *sc = c->sc;
	const struct frame_rec *f;
	struct walk_memo *m;
	struct code_name_key *k = &sc->name_key.name;
	__u32 at = i, nfresh = sc->ws.nfresh;
	__u64 tag;

	if (nfresh <= WALK_FRESH) {
		if (i >= nfresh)
			return 1;
		at = sc->ws.fresh_at[i & (WALK_FRESH - 1)];
	}
	if (at >= c->n)
		return 1;
	f = &sc->buf.frames[at & (BPFPY_MAX_DEPTH - 1)];
	if (nfresh > WALK_FRESH && i > 0) {
		const struct frame_rec *prev = &sc->buf.frames[(i - 1) & (BPFPY_MAX_DEPTH - 1)];

		if (prev->code == f->code && prev->fingerprint == f->fingerprint)
			return 0;
	}
	/* Each code object of the walk's memo is looked up once per sample,
	 * however many frames run it (mutual recursion, loops of calls). */
	m = walk_memo_slot(&sc->ws, f->code);
	if (m->code == f->code && m->fingerprint == f->fingerprint) {
		if (m->named)
			return 0;
		m->named = 1;
	}
	tag = code_named_tag(f->code, f->fingerprint);
	if (code_named_has(q->cfg->named, tag))
		return 0;
	k->pid = q->pid;
	k->fingerprint = f->fingerprint;
	k->code = f->code;
	if (!bpf_map_lookup_elem(&code_names, k)) {
		if (code_name_fill(q->reader, &q->cfg->off, f->code, f->fingerprint, sc->ws.cbuf,
				   &sc->name))
			return 0;
		/* The chunks first: user space reads a name's chunks once
		 * it finds the name. A chunk that cannot be read or stored
		 * cuts the copy there. Written out (4 turns) rather than a
		 * bpf_loop: the tracer's stack has no room for a third frame. */
		for (__u32 j = 0; j < CODE_TABLE_CHUNKS; j++) {
			if (code_name_chunk(q->reader, &q->cfg->off, sc->ws.cbuf, &sc->name, j,
					    sc->chunk.bytes) <= 0)
				break;
			sc->name_key.chunk = j;
			if (bpf_map_update_elem(&code_tables, &sc->name_key, &sc->chunk, BPF_ANY)) {
				code_name_cut(&sc->name, j);
				break;
			}
		}
		if (!bpf_map_update_elem(&code_names, k, &sc->name, BPF_NOEXIST))
			c->named++;
	}
	code_named_put(q->cfg->named, tag, 0);
	return 0;
}

/* The sample's sample_hdr.thread_phase: find_tstate()'s, or for a state
 * without frames, its thread before its first Python frame or past its
 * last (bpf/thread_watch.bpf.h). A first walk with frames gives the
 * thread its slot. */
static __always_inline __u8 thread_phase_of(const struct sample_req *q, __u32 fo, __u64 tstate,
					    __u32 err, __u32 n)
{
	if (!tstate || err)
		return FIND_PHASE(fo);
	if (!n)
		return fo & FIND_FRAMES ? THREAD_PHASE_EXITING : THREAD_PHASE_STARTING;
	if (!(fo & FIND_FRAMES))
		thread_saw_frames(q, tstate);
	return 0;
}

#ifdef BPFPY_NATIVE
/* bpf/native_unwind.bpf.h: native and kernel addresses after the frames. */
static __always_inline void native_append(const struct sample_req *q, struct sample_scratch *sc,
					  __u32 n);
#endif

/*
 * Take one sample of the request's thread and emit it: frames leaf first,
 * or an error record (SAMPLE_ERROR, no frames) when the walk failed or the
 * thread list is corrupt. A thread without a Python thread state is only
 * counted. Returns 0 if a record was emitted.
 */
static __always_inline int sample_thread(const struct sample_req *q)
{
	__u32 slot = SCRATCH_SLOT;
	struct sample_scratch *sc = bpf_map_lookup_elem(&scratch, &slot);
	struct walk_state w = {};
	struct sample_hdr *h;
	__u64 tstate, size;
	__u32 n, err = 0;
	__u64 t = phase_end(PHASE_START, q->start_ns);
	long ret;

	if (!sc)
		return -1;
	tstate = find_tstate(q, &sc->find_out);
	err = FIND_ERR(sc->find_out);
	t = phase_end(PHASE_FIND, t);
	if (!tstate && !err && !FIND_PHASE(sc->find_out)) {
		count_add(CNT_NO_PYTHON, 1);
		return -1;
	}
	h = &sc->buf.hdr;
	h->exc_flags = 0;
	h->exc_type = 0;
	if (!err && (q->cfg->flags & PROC_EXCEPTION)) {
		/* Before the walk: a thread with no exception costs two reads
		 * (one being born or torn down has none). */
		if (tstate)
			h->exc_flags = walk_exc(q->reader, q->cfg, tstate, &h->exc_type, sc->tmp);
		if (!h->exc_flags) {
			count_add(CNT_NO_EXCEPTION, 1);
			return -1;
		}
	}
	if (tstate)
		err = walk_run(&w, q->cfg, q->reader, &sc->ws, sc->buf.frames, q->cfg->max_depth,
			       tstate);
	h->thread_phase = thread_phase_of(q, sc->find_out, tstate, err, w.n);
	h->ts_ns = q->start_ns;
	h->tstate = tstate;
	h->pid = q->pid;
	h->tid = q->tid;
	h->cpu = bpf_get_smp_processor_id();
	h->probe_id = q->probe_id;
	h->args[0] = q->args[0];
	h->args[1] = q->args[1];
	h->err = (__u8)err;
	h->flags = q->flags | (tstate ? walk_gil_flags(q->reader, q->cfg, tstate) : 0);
	h->gc_flags = tstate ? walk_gc_flags(q->reader, q->cfg, h->flags, sc->tmp) : 0;
	n = w.n;
	if (n > BPFPY_MAX_DEPTH)
		n = BPFPY_MAX_DEPTH;
	if (err) {
		h->flags |= SAMPLE_ERROR;
		n = 0;
		count_add(CNT_ERR_BASE + (err < WALK_ERR__COUNT ? err : 0), 1);
	}
	if (w.truncated) {
		h->flags |= SAMPLE_TRUNCATED;
		count_add(CNT_TRUNCATED, 1);
	}
	if (tstate && !err && sc->ws.entry_retries)
		count_add(CNT_ENTRY_RETRY, 1);
	h->nframes = n;
	h->leaf_op = 0;
	h->op_flags = 0;
#ifndef BPFPY_NO_OPCODES
	if (n && (q->cfg->flags & PROC_OPCODES))
		h->op_flags =
		    walk_leaf_op(q->reader, q->cfg, &sc->buf.frames[0], &h->leaf_op, sc->tmp);
#endif
	count_add(CNT_FRAMES, w.visited);
	t = phase_end(PHASE_WALK, t);
	if (n) {
		struct name_ctx nc = {.q = q, .sc = sc, .n = n};

		bpf_loop(BPFPY_MAX_DEPTH, name_step, &nc, 0);
		count_add(CNT_NAMED, nc.named);
	}
	t = phase_end(PHASE_NAME, t);
	h->nnative = 0;
	h->nkernel = 0;
	h->native_flags = 0;
#ifdef BPFPY_NATIVE
	native_append(q, sc, n);
#endif
	t = phase_end(PHASE_NATIVE, t);
	size = sizeof(struct sample_hdr) + (__u64)n * sizeof(struct frame_rec) +
	       ((__u64)h->nnative + h->nkernel) * sizeof(__u64);
	h->task_flags = 0;
#ifndef BPFPY_NO_ASYNC
	if ((q->cfg->flags & PROC_ASYNC) && tstate && !err &&
	    size <= sizeof(struct sample_buf) - sizeof(struct task_rec)) {
		/* After everything else, so that readers that know no task
		 * record find the rest where it always is. */
		struct task_rec *tr = (struct task_rec *)((__u8 *)&sc->buf + (size & 0xffff));

		if ((size & 0xffff) + sizeof(*tr) <= sizeof(struct sample_buf)) {
			count_add(task_capture(q->reader, q->cfg, &w, tstate, tr) ? CNT_TASK_FOUND
										  : CNT_TASK_NONE,
				  1);
			if (tr->flags & TASK_SCAN_CUT)
				count_add(CNT_TASK_CUT, 1);
			h->task_flags = TASK_REC_PRESENT;
			size += sizeof(*tr);
		}
	}
#endif
	h->cost_ns = (__u32)(bpf_ktime_get_ns() - q->start_ns);
	if (size > sizeof(struct sample_buf))
		size = sizeof(struct sample_buf);
	ret = SAMPLE_OUTPUT(q, &sc->buf, size);
	phase_end(PHASE_OUTPUT, t);
	count_add(CNT_COST_NS, bpf_ktime_get_ns() - q->start_ns);
	if (ret) {
		count_add(CNT_LOST, 1);
		return -1;
	}
	count_add(CNT_EMITTED, 1);
	return 0;
}

#endif /* PY_SAMPLE_BPF_H */
