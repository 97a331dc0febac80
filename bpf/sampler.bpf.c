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

/*
 * Poisson sampling by thinning: the clock runs at a base rate k times the
 * asked rate and each tick is kept with probability 1/k. Kept ticks are then
 * a Bernoulli process on the base grain, i.e. geometric gaps with mean
 * k base periods, which tends to the exponential law as k grows. A tick is
 * kept when a uniform 32-bit draw is below keep_below; ~0 keeps all.
 */
const volatile __u32 keep_below = 0xffffffff;

SEC("perf_event")
int on_cpu_tick(struct bpf_perf_event_data *ctx)
{
	__u64 start = bpf_ktime_get_ns();
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
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
	q.cfg = cfg;
	sample_req_task(&q, bpf_get_current_task_btf());
	sample_thread(&q);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
