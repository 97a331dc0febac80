// SPDX-License-Identifier: MIT
/*
 * bpfpy trace: USDT probes, uprobes and uretprobes that capture the firing
 * thread's Python stack with the shared walker.
 *
 * Adaptive de-instrumentation, after Ocular's sys.monitoring.DISABLE: a
 * location is (probe, code object of the leaf Python frame). Its first
 * `threshold` hits are emitted in full; later ones only bump a counter in
 * loc_stats, which costs a map update instead of a walk and a ring-buffer
 * record. User space reads loc_stats to decide when every active location
 * is saturated, and then detaches the probes altogether.
 *
 * Entry/return pairs (function__entry/return, uprobe/uretprobe): a return
 * is emitted exactly when its entry was, decided by a per-thread bit stack,
 * so the timeline never holds an E without its B (or the reverse) even when
 * a location saturates in the middle of a recursion.
 *
 * --native: the emitted hits also carry the native stack, unwound by the
 * sampler's own unwinder (bpf/native_unwind.bpf.h) from the probe's
 * registers; off (rodata), that code is dead and a hit costs what it did.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

struct bpf_reader {
	int unused;
};

#define WALK_READER_T struct bpf_reader
#define WALK_READ(r, dst, size, addr)                                                              \
	((void)(r), bpf_probe_read_user((dst), (size), (const void *)(addr)))
/* A probe can fire inside code a perf tick then interrupts: own slot. */
#define SCRATCH_SLOT 1
/* No task capture here: see py_sample.bpf.h. */
#define BPFPY_NO_ASYNC 1
/* Nor the opcode byte of record --opcodes. */
#define BPFPY_NO_OPCODES 1
/* --native: the one unwinder, from the probe's registers (a hit is always
 * in user mode, so there is no kernel stack: want_kernel stays false). */
#define BPFPY_NATIVE	    1
#define NATIVE_USER_REGS(q) ((struct pt_regs *)(q)->ctx)

#include "frame_walker.h"
#include "py_sample.bpf.h"
#include "native_unwind.bpf.h"
#include "task_ids.bpf.h"

/* 0: emit every hit, never saturate. Set before load. */
const volatile __u32 threshold = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TRACE_MAX_LOCS);
	__type(key, struct trace_loc_key);
	__type(value, struct trace_loc_stats);
} loc_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TRACE_MAX_PROBES);
	__type(key, __u32);
	__type(value, struct trace_probe_cfg);
} probe_cfgs SEC(".maps");

/* tid -> which of the open entries were emitted, one bit per depth. */
struct pair_stack {
	__u64 bits;
	__u32 depth;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct pair_stack);
} pair_stacks SEC(".maps");

/* The code object of the innermost Python frame, 0 if there is none: the
 * location key. Costs the tstate lookup (cached) and one or two frames. */
static __always_inline __u64 leaf_code(const struct sample_req *q)
{
	__u32 slot = SCRATCH_SLOT;
	struct sample_scratch *sc = bpf_map_lookup_elem(&scratch, &slot);
	struct walk_state w = {};
	__u64 tstate;

	if (!sc)
		return 0;
	tstate = find_tstate(q, &sc->find_out);
	if (!tstate)
		return 0;
	/* Depth 1: shim and entry frames are skipped on the way, no further.
	 * The answer is read from the record, not chosen by w.n: a branch on
	 * the frame count would make the verifier track it turn by turn. */
	sc->buf.frames[0].code = 0;
	walk_run(&w, q->cfg, q->reader, &sc->ws, sc->buf.frames, 1, tstate);
	return sc->buf.frames[0].code;
}

/* Push (role ENTRY) or pop (role RETURN) the emit decision. A pop on an
 * empty stack (the entry happened before we attached) returns -1. */
static __always_inline int pair_push(__u32 tid, int emitted)
{
	struct pair_stack zero = {}, *ps = bpf_map_lookup_elem(&pair_stacks, &tid);

	if (!ps) {
		bpf_map_update_elem(&pair_stacks, &tid, &zero, BPF_NOEXIST);
		ps = bpf_map_lookup_elem(&pair_stacks, &tid);
		if (!ps)
			return 0;
	}
	ps->depth++;
	if (emitted)
		ps->bits |= 1ULL << (ps->depth & 63);
	else
		ps->bits &= ~(1ULL << (ps->depth & 63));
	return 0;
}

static __always_inline int pair_pop(__u32 tid)
{
	struct pair_stack *ps = bpf_map_lookup_elem(&pair_stacks, &tid);
	int was;

	if (!ps || !ps->depth)
		return -1;
	was = (ps->bits >> (ps->depth & 63)) & 1;
	ps->depth--;
	return was;
}

static const struct trace_loc_stats loc_zero;

static __always_inline int on_hit(struct pt_regs *ctx, __u32 probe_id, __u64 arg0, __u64 arg1)
{
	__u64 start = bpf_ktime_get_ns();
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct trace_loc_key key = {};
	struct trace_loc_stats *st;
	struct trace_probe_cfg *pc;
	struct bpf_reader r = {};
	struct sample_req q = {.reader = &r,
			       .start_ns = start,
			       .flags = SAMPLE_TRACE,
			       .probe_id = probe_id,
			       .args = {arg0, arg1},
			       .ctx = ctx};
	__u64 hits;
	int emit, was;

	q.cfg = bpf_map_lookup_elem(&proc_configs, &pid);
	if (!q.cfg)
		return 0;
	pc = bpf_map_lookup_elem(&probe_cfgs, &probe_id);
	if (!pc)
		return 0;
	sample_req_task(&q, bpf_get_current_task_btf());
	key.probe_id = probe_id;
	key.code = leaf_code(&q);
	st = bpf_map_lookup_elem(&loc_stats, &key);
	if (!st) {
		/* Inserted from read-only zeros: the stack has no room for
		 * them; the first hit's time set after, once, by whoever
		 * inserted first. */
		bpf_map_update_elem(&loc_stats, &key, &loc_zero, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&loc_stats, &key);
		if (!st)
			return 0;
		__sync_val_compare_and_swap(&st->first_ns, 0, start);
	}
	hits = __sync_fetch_and_add(&st->hits, 1);
	emit = !threshold || hits < threshold;
	if (pc->role == TRACE_ROLE_ENTRY) {
		pair_push(q.tid, emit);
	} else if (pc->role == TRACE_ROLE_RETURN) {
		was = pair_pop(q.tid);
		if (was >= 0)
			emit = was;
	}
	if (!emit) {
		if (!st->saturated_ns)
			st->saturated_ns = start;
		return 0;
	}
	__sync_fetch_and_add(&st->emitted, 1);
	sample_thread(&q);
	return 0;
}

SEC("usdt")
int trace_usdt(struct pt_regs *ctx)
{
	long a0 = 0, a1 = 0;
	int n = bpf_usdt_arg_cnt(ctx);

	if (n > 0)
		bpf_usdt_arg(ctx, 0, &a0);
	if (n > 1)
		bpf_usdt_arg(ctx, 1, &a1);
	return on_hit(ctx, (__u32)bpf_usdt_cookie(ctx), (__u64)a0, (__u64)a1);
}

SEC("uprobe")
int trace_uprobe(struct pt_regs *ctx)
{
	return on_hit(ctx, (__u32)bpf_get_attach_cookie(ctx), PT_REGS_PARM1(ctx),
		      PT_REGS_PARM2(ctx));
}

SEC("uretprobe")
int trace_uretprobe(struct pt_regs *ctx)
{
	return on_hit(ctx, (__u32)bpf_get_attach_cookie(ctx), PT_REGS_RC(ctx), 0);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
