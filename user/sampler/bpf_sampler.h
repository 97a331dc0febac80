/* SPDX-License-Identifier: MIT */
/*
 * The in-kernel sampler from user space: loads bpf/sampler.bpf.c, opens the
 * software cpu-clock on every online CPU in exact-period mode, and hands
 * every ring-buffer record to a callback.
 */
#ifndef BPF_SAMPLER_H
#define BPF_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpfpy.h"
#include "diag.h"
#include "mem_reader.h"
#include "py_offsets.h"

struct bpf_sampler_opts {
	double rate_hz;		 /* wanted mean rate per running thread */
	int poisson;		 /* thin a faster clock to geometric gaps */
	unsigned poisson_factor; /* base clock = factor x rate (default 8) */
	unsigned ringbuf_mb;	 /* ring buffer size, MiB (default 16) */
	int verbose;		 /* libbpf debug log on stderr */
	int wall;		 /* wall clock: a task iterator run by bpf_sampler_snapshot */
	/* Processes may be added after bpf_sampler_start (record -a,
	 * --subprocesses): the wall-clock iterator must then visit every task,
	 * not only those of the one process registered at start. */
	int targets_grow;
	/* Off-CPU time (user/record/offcpu.h): 1 for --clock offcpu (no
	 * on-CPU clock), 2 for --clock wall (the cpu clock and off-CPU). */
	int offcpu;
	uint64_t min_block_ns; /* --min-block-us */
	/* --native / --kernel (cpu clock only): user stacks unwound in the
	 * kernel with per-file unwind tables (user/native/native_tables.h),
	 * kernel stacks by bpf_get_stack; their addresses follow the frames
	 * of each record (bpfpy.h sample_hdr). */
	int native, kernel;
	int phases; /* --phases: time each step of a sample (bpfpy.h cost_phase) */
	/* --cost-floor (cpu clock, no native): each kept tick only finds the
	 * process, reads 8 bytes of it and writes a SAMPLE_FLOOR record
	 * (bpf/sampler.bpf.c floor_sample); records reach no callback. */
	int cost_floor;
};

struct bpf_sampler;

/* Called for every record, frames leaf first. Return non-zero to stop polling. */
typedef int (*bpf_sample_fn)(void *ctx, const struct sample_hdr *h, const struct frame_rec *frames);

int bpf_sampler_open(struct bpf_sampler **out, const struct bpf_sampler_opts *o, struct diag *d);
int bpf_sampler_add(struct bpf_sampler *s, pid_t pid, const struct proc_config *cfg,
		    struct diag *d);
void bpf_sampler_remove(struct bpf_sampler *s, pid_t pid);
/* record --async: the task layout of a registered process, once known
 * (asyncio imported late); sets PROC_ASYNC. 0, or -1 with d set. */
int bpf_sampler_set_async(struct bpf_sampler *s, pid_t pid, const struct async_config *a,
			  struct diag *d);
/* Tell the kernel what a thread's first sample would otherwise find out
 * in the target, now: pid's thread states (tid -> tstate hints), so that
 * it is one checked read rather than a search of the thread list, and the
 * names of the code on their stacks and of the code that code holds as
 * constants (code_names; ob gives the co_consts layout, NULL for none),
 * so that it copies none. Best effort: a hint is checked on every use, a
 * name is under the fingerprint it was read with. */
void bpf_sampler_seed(struct bpf_sampler *s, pid_t pid, struct mem_reader *r,
		      const struct proc_config *cfg, const struct py_objlayout *ob);
/* Issue 28: keep the kernel's map of pid's threads exact as threads start
 * and end (user/sampler/thread_hooks.h): b is its interpreter's file, hex
 * its version. Before bpf_sampler_seed(). 0, or -1 with d set: the process
 * is then sampled without (its new threads are searched for). */
struct py_binary;
int bpf_sampler_watch_threads(struct bpf_sampler *s, pid_t pid, const struct py_binary *b,
			      uint32_t hex, struct diag *d);
/* Processes whose threads are watched now, and those that could not be. */
void bpf_sampler_thread_hooks(const struct bpf_sampler *s, int *watched, int *failed);
/* Did pid call execve since it was added? The kernel has then already
 * stopped sampling it (bpf/exec_watch.bpf.h); true once per exec. */
int bpf_sampler_take_exec(struct bpf_sampler *s, pid_t pid);
/* Has any target exec'd and not been taken yet? One syscall, where asking
 * for each target is one per target. */
int bpf_sampler_exec_pending(struct bpf_sampler *s);
/* targets_grow: pop up to max PIDs that exec'd, or that a target forked,
 * since the last call (bpf/exec_watch.bpf.h): the processes that may be
 * new targets. *lost is set when some were dropped (queue full): rescan
 * /proc then. -1 when the kernel hooks are missing (rescan /proc always). */
int bpf_sampler_take_new(struct bpf_sampler *s, pid_t *out, int max, int *lost);
/* Are both hooks in place, so that bpf_sampler_take_new() can answer? */
int bpf_sampler_watches_new(const struct bpf_sampler *s);
/* Start the clocks; until then nothing is sampled (lets the caller register
 * every process first). */
int bpf_sampler_start(struct bpf_sampler *s, struct diag *d);
/* Wall clock: snapshot every thread of the registered processes now. */
int bpf_sampler_snapshot(struct bpf_sampler *s, struct diag *d);
/* Stop the clocks: nothing new is written, what is queued can still be
 * drained (a drain that races a running clock may never end). */
void bpf_sampler_stop(struct bpf_sampler *s);
/* Pause (false) or resume (true) the cpu clocks without detaching them
 * (ioctl PERF_EVENT_IOC_DISABLE/ENABLE): the oracle's on/off slowdown
 * windows. 0, or -1 with errno when an event refused. */
int bpf_sampler_set_enabled(struct bpf_sampler *s, bool on);
/* Drain what is in the ring buffer, waiting up to timeout_ms for the first
 * record. Returns records handled, or -1. */
int bpf_sampler_poll(struct bpf_sampler *s, int timeout_ms, bpf_sample_fn fn, void *ctx);
/* The timeout for bpf_sampler_poll that cannot let the ring buffer fill
 * (20 to 100 ms: from the clock's rate, the CPUs and the ring's size). */
int bpf_sampler_idle_ms(const struct bpf_sampler *s);
/* Counters summed over CPUs, indexed by enum counter. */
int bpf_sampler_counters(struct bpf_sampler *s, uint64_t out[CNT__COUNT]);
/* The kernel's copy of the names of code object addr as first sampled in
 * pid under fingerprint (bpfpy.h, code_names): 0 and *out filled, or -1.
 * Shaped as a code_names_fn (code_cache.h), with the sampler as ctx. */
struct code_copy;
int bpf_sampler_code_name(void *sampler, uint32_t pid, uint64_t addr, uint32_t fingerprint,
			  struct code_copy *out);
/* Code objects bpf_sampler_seed() named so far (so the kernel did not). */
uint64_t bpf_sampler_seeded_names(const struct bpf_sampler *s);
/* The clock's actual base period and the keep probability. */
uint64_t bpf_sampler_period_ns(const struct bpf_sampler *s);
double bpf_sampler_keep_prob(const struct bpf_sampler *s);
int bpf_sampler_ncpus(const struct bpf_sampler *s);
/* The unwind tables of --native (counters, stats), or NULL without it. */
struct native_tables *bpf_sampler_native(struct bpf_sampler *s);
void bpf_sampler_close(struct bpf_sampler *s);
/* The off-CPU program of a sampler opened with offcpu, or NULL. */
struct offcpu *bpf_sampler_offcpu(struct bpf_sampler *s);

#endif /* BPF_SAMPLER_H */
