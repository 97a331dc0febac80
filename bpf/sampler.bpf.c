// SPDX-License-Identifier: MIT
/*
 * On-CPU sampler: a perf_event program on the software cpu-clock of every
 * online CPU. When a tick lands in a thread of a configured process, the
 * thread is interrupted right here, so its frame chain cannot change while
 * we read it: no torn stacks, no syscalls, no stop of the process.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

struct bpf_reader {
	int unused;
};

#define WALK_READER_T struct bpf_reader
#define WALK_READ(r, dst, size, addr)                                                              \
	((void)(r), bpf_probe_read_user((dst), (size), (const void *)(addr)))

#define BPFPY_NATIVE 1 /* --native, --kernel: bpf/native_unwind.bpf.h */

#include "frame_walker.h"
#include "py_sample.bpf.h"
#include "native_unwind.bpf.h"
#include "task_ids.bpf.h"
#include "exec_watch.bpf.h"
#include "thread_watch.bpf.h"

/*
 * Poisson sampling by thinning: the clock runs at a base rate k times the
 * asked rate and each tick is kept with probability 1/k. Kept ticks are then
 * a Bernoulli process on the base grain, i.e. geometric gaps with mean
 * k base periods, which tends to the exponential law as k grows. A tick is
 * kept when a uniform 32-bit draw is below keep_below; ~0 keeps all.
 */
const volatile __u32 keep_below = 0xffffffff;

/*
 * record --cost-floor: at each kept tick do what any in-kernel sampler of a
 * configured process must, and nothing else: the process's entry (looked up
 * above), one read of the target's memory (8 bytes of the thread state
 * user space last saw on this thread's slot, else of _PyRuntime) and one
 * record in the ring buffer, timed from the same start as a sample. Under
 * record -a, where every line a sample touches is cold, this is the floor
 * beneath the in-kernel cost of a real sample (README: "Where record -a's
 * cold cost goes"). Read-only data: off, the verifier drops it as dead code.
 */
const volatile __u8 cost_floor = 0;

static __always_inline void floor_sample(const struct proc_config *cfg, __u64 pid_tgid, __u64 start)
{
	struct sample_hdr h = {
	    .ts_ns = start,
	    .pid = pid_tgid >> 32,
	    .tid = (__u32)pid_tgid,
	    .flags = SAMPLE_FLOOR,
	};

	h.tstate = cfg->tstates[h.tid & (PROC_TSTATE_SLOTS - 1)];
	if (bpf_probe_read_user(&h.args[0], sizeof(h.args[0]),
				(const void *)(h.tstate ? h.tstate : cfg->runtime_addr)))
		h.args[0] = 0;
	h.cpu = bpf_get_smp_processor_id();
	h.cost_ns = (__u32)(bpf_ktime_get_ns() - start);
	if (bpf_ringbuf_output(&events, &h, sizeof(h), BPF_RB_NO_WAKEUP))
		count_add(CNT_LOST, 1);
	else
		count_add(CNT_EMITTED, 1);
	count_add(CNT_COST_NS, bpf_ktime_get_ns() - start);
}

SEC("perf_event")
int on_cpu_tick(struct bpf_perf_event_data *ctx)
{
	__u64 start = bpf_ktime_get_ns();
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32;
	struct bpf_reader r = {};
	struct sample_req q = {.reader = &r, .start_ns = start, .ctx = ctx};
	struct proc_config *cfg;

	if (!pid)
		return 0;
	cfg = bpf_map_lookup_elem(&proc_configs, &pid);
	if (!cfg)
		return 0;
	count_add(CNT_TICKS, 1);
	if (keep_below != 0xffffffff && bpf_get_prandom_u32() >= keep_below)
		return 0;
	count_add(CNT_KEPT, 1);
	if (cost_floor) {
		floor_sample(cfg, pid_tgid, start);
		return 0;
	}
	q.cfg = cfg;
	sample_req_task(&q, bpf_get_current_task_btf());
	sample_thread(&q);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
