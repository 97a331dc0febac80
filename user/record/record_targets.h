/* SPDX-License-Identifier: MIT */
/*
 * The set of processes a recording samples: given PIDs, their children
 * (--subprocesses), or every CPython process on the host (-a), including
 * ones that start while recording. Each target has its own version, layout
 * and code-object cache, and is registered with the BPF sampler by PID.
 */
#ifndef RECORD_TARGETS_H
#define RECORD_TARGETS_H

#include <poll.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf_sampler.h"
#include "code_cache.h"
#include "diag.h"
#include "py_process.h"
#include "py_threads.h"
#include "profile.h"

enum target_state {
	TARGET_LIVE = 0,
	TARGET_EXITED, /* gone, or its PID reused */
	TARGET_EXECED, /* called execve: a new target may follow for the PID */
};

struct rec_target {
	/* What the summary needs, kept after the process is gone. */
	pid_t pid;
	char comm[32], version[32];
	/* Reader, layout and cache: freed when the process exits or execs, so
	 * that `record -a` on a host that churns processes keeps a few bytes
	 * per dead process, not kilobytes. */
	struct py_process *proc;
	struct code_cache *cache;
	unsigned long long starttime; /* /proc/PID/stat: tells a reused PID apart */
	int pidfd; /* proc_pidfd_open while it lives, or -1: then kill() and starttime */
	/* CLOCK_MONOTONIC at registration: a record stamped earlier for this
	 * PID was taken from an image the PID had before an exec. */
	uint64_t since_ns;
	uint64_t samples, errors, idle;
	uint64_t last_ns; /* the last written sample's time (-v's summary) */
	/* readlink /proc/PID/root at registration ("/" on the host; empty if
	 * longer than this): record's default --source-root. */
	char root[256];
	/* Its cgroup (escaped: text_escape; cut at this size) and the
	 * container that names, if any: read once, at registration; pprof
	 * labels cgroup and container. */
	char cgroup[256], container[65];
	int exited; /* enum target_state */
	/* Its threading names as last read (py_threads.h), while it lives. */
	struct py_tnames tnames;
	/* record --async (user/record/async_stack.c): the layout and the
	 * task graph last read, while it lives; NULL without --async. */
	struct async_target *async;
	/* --exception: the names of the exception types last met, direct
	 * mapped by type address: "[exception NAME]" frames. */
	struct exc_name {
		uint64_t type;
		char frame[112];
	} exc_names[16];
};

struct target_set {
	struct rec_target **t;
	int n, cap;
	struct bpf_sampler *sampler;
	unsigned max_depth;
	int all;      /* -a: every CPython process */
	int children; /* --subprocesses: descendants of the targets */
	/* record -- CMD: the command, whose descendants count as the targets'
	 * even while it is not (yet, or ever) a CPython process itself. */
	pid_t launched;
	int verbose;
	int async;     /* record --async: targets get PROC_ASYNC and an async_target */
	int exception; /* record --exception: targets get PROC_EXCEPTION */
	int no_gc;     /* record --no-gc: targets' gc_collecting_addr is 0 */
	int opcodes;   /* record --opcodes: targets get PROC_OPCODES */
	/* PIDs looked at and found not to be Python, so a scan skips them. */
	struct seen_pid {
		pid_t pid;
		unsigned long long starttime;
		int tries;
	} * seen;
	int nseen, seen_cap;
	/* PIDs that exec'd and whose new image is yet to be resolved (without
	 * -a, which finds them again like any new process): a few tries,
	 * because a freshly exec'd Python has no interpreter for a moment. */
	struct exec_follow {
		pid_t pid;
		int tries;
	} * follow;
	int nfollow, follow_cap;
	size_t cache_peak;	    /* most code objects any one cache held (dead ones too) */
	uint64_t lines_cut_gone[2]; /* note_cache's lines_cut of the caches already freed */
	int scanned;		    /* full reads of /proc so far; from 2 on, events instead */
	unsigned reaps;
	struct pollfd *polls; /* targets_reap's, one per live target with a pidfd */
	int polls_cap;
	/* Targets freed by targets_compact (record --rotate): their count and
	 * totals, for the summary. */
	int gone;
	uint64_t gone_samples, gone_errors;
};

/* Add one PID given on the command line: errors are the caller's to report. */
int targets_add(struct target_set *ts, pid_t pid, struct diag *d);
/* Look for new processes (-a, --subprocesses) and resolve again the targets
 * that exec'd; quietly skips non-Python ones. Returns how many were added. */
int targets_scan(struct target_set *ts);
/* Mark targets that exited (or whose PID was reused) or exec'd, and
 * unregister them. Returns how many are still alive or being followed
 * through an exec. */
int targets_reap(struct target_set *ts);
struct rec_target *targets_find(struct target_set *ts, pid_t pid);
/* The live target a ring-buffer record is of, or NULL (gone, not ours, or
 * stamped before the image it has now). *last caches the previous answer:
 * consecutive records mostly come from one process. */
struct rec_target *targets_of_record(struct target_set *ts, struct rec_target **last,
				     const struct sample_hdr *h);
/* Name the record's frames into out through t's code cache: 0, or -1 when
 * a frame cannot be named (its code freed before we, or the kernel, read
 * it), the cache's sample then ended. After 0, the names stay valid until
 * code_cache_end_sample(t->cache). */
int targets_symbolize(struct rec_target *t, const struct sample_hdr *h,
		      const struct frame_rec *frames, struct sym_frame *out);
/* Code objects cached now over the live targets, how many of those there
 * are, and the largest any single cache held (each is created with the
 * default bound, CODE_CACHE_DEFAULT_CAP); lines_cut_out: frames of every
 * target so far (exited ones too) named with line unknown because their
 * line table is longer than the part held: [0] read from the object, [1]
 * the kernel's copy (code_cache_stats.lines_cut, lines_cut_copy). */
size_t targets_cache_usage(struct target_set *ts, int *live_out, size_t *peak_out,
			   uint64_t lines_cut_out[2]);
/* Give p the comm and labels (cgroup, container, python_version) of every
 * target with threads in it, exited ones too while they are still in ts:
 * 0, or -1 on ENOMEM. */
int targets_label_profile(struct target_set *ts, struct profile *p);
/* Free the targets that exited (their samples and errors are added to
 * gone_*) and forget the non-Python PIDs that are gone: what a recording
 * of days keeps is then its live processes, not every one it met. Any
 * rec_target pointer held elsewhere is invalid after this. */
void targets_compact(struct target_set *ts);
void targets_free(struct target_set *ts);

#endif /* RECORD_TARGETS_H */
