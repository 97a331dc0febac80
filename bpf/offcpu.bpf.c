// SPDX-License-Identifier: MIT
/*
 * Off-CPU time: where a target thread waits, for how long, and why.
 *
 * At every context switch (tp_btf/sched_switch, as libbpf-tools' offcputime)
 * the thread leaving the CPU is still current, so its Python stack is read
 * right there with the shared walker, exactly as the on-CPU sampler reads
 * an interrupted thread, and kept in the task's own storage with the time
 * and the reason it left. When the same task is switched back in, the kept
 * record goes to the ring buffer weighted by the nanoseconds it was away
 * (sample_hdr.weight_ns), unless that was under --min-block-us. One record
 * per block, exact time, no sampling: a block of 3 ms is 3 ms.
 *
 * The reason comes from the task's state and its user registers at the
 * switch: runnable means preempted; asleep in a syscall means that syscall
 * (futex on the GIL's words: the GIL; other futex: a lock; fd waits: I/O;
 * nanosleep or select/poll on no fds: sleep); asleep outside a syscall is
 * a page fault (or a stop). Nothing is guessed from the kernel stack.
 *
 * Cost: every context switch on the host runs this program; for a task
 * that is not a target it is one hash lookup (proc_configs) for each side
 * and one task-storage lookup for next. The walk is paid only at target
 * switch-outs (counted in OFFC_OUT_COST_NS); scripts/bench_offcpu.sh
 * measures both.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpfpy.h"

/* What a stored record lives in: the task's storage, created at its first
 * switch-out and freed by the kernel with the task, so neither a thread
 * that exits while blocked nor a reused tid can leave a stale stack. */
struct offcpu_slot {
	__u64 start_ns; /* switch-out time */
	/* 1: a record waits for the task's return. Taken by an atomic exchange,
	 * because the end-of-run flush (offcpu_flush) and a switch-in on
	 * another CPU may race for it: exactly one of them emits it. 64 bits:
	 * the width BPF exchanges. */
	__u64 pending;
	__u32 size;  /* bytes of buf that are the record */
	__u8 reason; /* enum offcpu_reason */
	__u8 pad[3];
	struct sample_buf buf;
};

struct bpf_reader {
	struct offcpu_slot *slot; /* where sample_thread's record goes */
};

static __always_inline long offcpu_store(struct bpf_reader *r, const void *buf, __u64 size);

#define WALK_READER_T struct bpf_reader
#define WALK_READ(r, dst, size, addr)                                                              \
	((void)(r), bpf_probe_read_user((dst), (size), (const void *)(addr)))
#define SAMPLE_OUTPUT(q, buf, size) offcpu_store((q)->reader, (buf), (size))

#include "frame_walker.h"
#include "py_sample.bpf.h"
#include "task_ids.bpf.h"

/* Blocks shorter than this (ns) are dropped in the kernel: --min-block-us. */
const volatile __u64 min_block_ns = 0;

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_slot);
} offcpu_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OFFC__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} offcpu_counters SEC(".maps");

static __always_inline void offc_add(__u32 idx, __u64 v)
{
	__u64 *c = bpf_map_lookup_elem(&offcpu_counters, &idx);

	if (c)
		*c += v;
}

static __always_inline long offcpu_store(struct bpf_reader *r, const void *buf, __u64 size)
{
	struct offcpu_slot *slot = r->slot;

	if (size > sizeof(slot->buf))
		size = sizeof(slot->buf);
	if (bpf_probe_read_kernel(&slot->buf, (__u32)size, buf))
		return -1;
	slot->buf.hdr.weight_ns = 0;
	slot->buf.hdr.offcpu_reason = 0;
	slot->size = (__u32)size;
	return 0;
}

/* Task states (include/linux/sched.h); only these bits are tested. */
#define OFFCPU_TASK_RUNNING 0x0000
#define OFFCPU_TASK_STOPPED 0x0004
#define OFFCPU_TASK_TRACED  0x0008

/* x86_64 syscall numbers (arch/x86/entry/syscalls/syscall_64.tbl). */
enum {
	NR_read = 0,
	NR_write = 1,
	NR_open = 2,
	NR_poll = 7,
	NR_pread64 = 17,
	NR_pwrite64 = 18,
	NR_readv = 19,
	NR_writev = 20,
	NR_select = 23,
	NR_msync = 26,
	NR_nanosleep = 35,
	NR_sendfile = 40,
	NR_connect = 42,
	NR_accept = 43,
	NR_sendto = 44,
	NR_recvfrom = 45,
	NR_sendmsg = 46,
	NR_recvmsg = 47,
	NR_fsync = 74,
	NR_fdatasync = 75,
	NR_futex = 202,
	NR_io_getevents = 208,
	NR_clock_nanosleep = 230,
	NR_epoll_wait = 232,
	NR_openat = 257,
	NR_pselect6 = 270,
	NR_ppoll = 271,
	NR_splice = 275,
	NR_epoll_pwait = 281,
	NR_accept4 = 288,
	NR_preadv = 295,
	NR_pwritev = 296,
	NR_recvmmsg = 299,
	NR_sendmmsg = 307,
	NR_copy_file_range = 326,
	NR_preadv2 = 327,
	NR_pwritev2 = 328,
	NR_io_uring_enter = 426,
	NR_epoll_pwait2 = 441,
	NR_futex_waitv = 449,
	NR_futex_wait = 455,
};

static __always_inline __u8 syscall_reason(const struct proc_config *cfg, long nr, __u64 arg0,
					   __u64 arg1)
{
	switch (nr) {
	case NR_futex:
	case NR_futex_wait:
		if (cfg->gil_wait_lo && arg0 >= cfg->gil_wait_lo && arg0 < cfg->gil_wait_hi)
			return OFFCPU_GIL;
		return OFFCPU_LOCK;
	case NR_futex_waitv:
		return OFFCPU_LOCK;
	case NR_nanosleep:
	case NR_clock_nanosleep:
		return OFFCPU_SLEEP;
	case NR_select:
	case NR_pselect6:
		/* time.sleep() of Python <= 3.10 is select(0, NULL, NULL, NULL, &t) */
		return arg0 ? OFFCPU_IO : OFFCPU_SLEEP;
	case NR_poll:
	case NR_ppoll:
		return arg1 ? OFFCPU_IO : OFFCPU_SLEEP;
	case NR_read:
	case NR_write:
	case NR_open:
	case NR_pread64:
	case NR_pwrite64:
	case NR_readv:
	case NR_writev:
	case NR_msync:
	case NR_sendfile:
	case NR_connect:
	case NR_accept:
	case NR_sendto:
	case NR_recvfrom:
	case NR_sendmsg:
	case NR_recvmsg:
	case NR_fsync:
	case NR_fdatasync:
	case NR_io_getevents:
	case NR_epoll_wait:
	case NR_openat:
	case NR_splice:
	case NR_epoll_pwait:
	case NR_accept4:
	case NR_preadv:
	case NR_pwritev:
	case NR_recvmmsg:
	case NR_sendmmsg:
	case NR_copy_file_range:
	case NR_preadv2:
	case NR_pwritev2:
	case NR_io_uring_enter:
	case NR_epoll_pwait2:
		return OFFCPU_IO;
	default:
		return OFFCPU_OTHER;
	}
}

/*
 * Why task (current, about to leave the CPU) stops running. In a syscall,
 * the entry code saved the user RIP in both ip and cx (the syscall
 * instruction puts the return address in RCX and RFLAGS in R11), and
 * orig_ax holds the syscall number; an exception (a page fault) leaves
 * orig_ax its error code and cx whatever the user had, so the pair
 * cx == ip, r11 == flags is what tells a syscall from a fault.
 */
static __always_inline __u8 offcpu_reason_of(struct task_struct *task, unsigned int state,
					     const struct proc_config *cfg)
{
	struct pt_regs *regs;
	long nr;

	if (state == OFFCPU_TASK_RUNNING)
		return OFFCPU_PREEMPTED;
	if (state & (OFFCPU_TASK_STOPPED | OFFCPU_TASK_TRACED))
		return OFFCPU_OTHER;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!regs)
		return OFFCPU_OTHER;
	nr = (long)regs->orig_ax;
	if (nr >= 0 && regs->cx == regs->ip && regs->r11 == regs->flags)
		return syscall_reason(cfg, nr, regs->di, regs->si);
	return OFFCPU_PAGE_FAULT;
}

static __always_inline void switch_out(struct task_struct *prev, unsigned int state, __u64 now)
{
	__u32 pid = prev->tgid;
	struct proc_config *cfg;
	struct offcpu_slot *slot;
	struct bpf_reader r;
	struct sample_req q = {.reader = &r, .start_ns = now};

	if (!pid)
		return;
	cfg = bpf_map_lookup_elem(&proc_configs, &pid);
	if (!cfg)
		return;
	offc_add(OFFC_OUT, 1);
	slot = bpf_task_storage_get(&offcpu_slots, prev, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!slot) {
		offc_add(OFFC_NO_SLOT, 1);
		return;
	}
	__atomic_exchange_n(&slot->pending, 0, __ATOMIC_SEQ_CST);
	r.slot = slot;
	q.cfg = cfg;
	sample_req_task(&q, prev);
	if (!sample_thread(&q)) {
		slot->start_ns = now;
		slot->reason = offcpu_reason_of(prev, state, cfg);
		slot->pending = 1;
		offc_add(OFFC_STORED, 1);
	}
	offc_add(OFFC_OUT_COST_NS, bpf_ktime_get_ns() - now);
}

/* Write the kept record of a block that ends now, if it is long enough. */
static __always_inline void slot_emit(struct offcpu_slot *slot, __u64 now)
{
	__u64 size;

	if (now - slot->start_ns < min_block_ns) {
		offc_add(OFFC_SHORT, 1);
		return;
	}
	slot->buf.hdr.weight_ns = now - slot->start_ns;
	slot->buf.hdr.offcpu_reason = slot->reason;
	size = slot->size;
	if (size > sizeof(slot->buf))
		size = sizeof(slot->buf);
	if (size < sizeof(struct sample_hdr))
		return;
	if (bpf_ringbuf_output(&events, &slot->buf, size, BPF_RB_NO_WAKEUP)) {
		offc_add(OFFC_LOST, 1);
		return;
	}
	offc_add(OFFC_EMITTED, 1);
}

/* The task's kept record, if one waits; it is then no longer pending. */
static __always_inline struct offcpu_slot *slot_take(struct task_struct *task)
{
	__u32 pid = task->tgid;
	struct offcpu_slot *slot;

	if (!pid || !bpf_map_lookup_elem(&proc_configs, &pid))
		return NULL; /* not a target, or no longer one (exited, exec'd) */
	slot = bpf_task_storage_get(&offcpu_slots, task, NULL, 0);
	if (!slot || !slot->pending || !__atomic_exchange_n(&slot->pending, 0, __ATOMIC_SEQ_CST))
		return NULL;
	return slot;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns();
	struct offcpu_slot *slot;

	(void)ctx;
	(void)preempt;
	offc_add(OFFC_SWITCHES, 1);
	switch_out(prev, prev_state, now);
	slot = slot_take(next);
	if (slot)
		slot_emit(slot, now);
	return 0;
}

/*
 * At the end of a run, before on_switch is detached: every target thread
 * still off CPU has its block written up to now, so that a thread asleep
 * at the end (or waiting for a CPU on a loaded host) is not missing that
 * time. User space runs this iterator once (user/record/offcpu.c).
 */
SEC("iter/task")
int offcpu_flush(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct offcpu_slot *slot;

	if (!task)
		return 0;
	slot = slot_take(task);
	if (slot)
		slot_emit(slot, bpf_ktime_get_ns());
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
