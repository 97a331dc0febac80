/* SPDX-License-Identifier: MIT */
/*
 * `bpfpy oracle` inside: the pieces shared by its files.
 *   cmd_oracle.c     the CLI and the loop over cases, runs and modes
 *   oracle_target.c  interpreters, snippets, starting and ending targets
 *   oracle_modes.c   each sampling mode over one target for one window
 *   oracle_table.c   per-run figures, the table, JSON, --check
 */
#ifndef ORACLE_RUN_H
#define ORACLE_RUN_H

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#include "monotime.h"
#include "diag.h"
#include "oracle_gate.h"
#include "oracle_sched.h"
#include "oracle_stats.h"
#include "rules.h"

#define ORACLE_MAX_CASES 64
#define ORACLE_MAX_MODES 16
/* Attempts' costs kept in order per window (4 bytes each). */
#define ORACLE_US_SEQ_MAX (1u << 21)
/* The priority of a pinned run's target and sampler. */
#define ORACLE_NICE -20

/* An interpreter the snippets can run under (a line of scripts/targets.sh). */
struct oracle_python {
	char version[32]; /* as it reports itself, "3.12.1" */
	char label[64];	  /* pyenv-3.12, sid-3.15, or "path" */
	char root[PATH_MAX];
	char python[PATH_MAX]; /* inside root */
};

struct oracle_case {
	char name[64];
	char operation[128]; /* the snippet's one-line description */
	char py[PATH_MAX];
	char dir[PATH_MAX]; /* where _oracle.py is */
	struct rules *rules;
	int no_rules; /* no NAME.rules beside it: distribution only */
};

enum oracle_mode_kind {
	MODE_NONE,
	MODE_PTRACE,
	MODE_LIVE,
	MODE_BPF,
	MODE_BPF_WALL,
	MODE_EXTERNAL,
	MODE_BPF_TIMER /* the cpu clocks with nothing to walk: the interrupt's cost */
};

struct oracle_mode {
	enum oracle_mode_kind kind;
	char name[64]; /* as shown in the table */
	char *cmd;     /* MODE_EXTERNAL: the shell command */
	int low;       /* ptrace-low, bpf-poisson: a reference that does not distort */
	/* Task chains (bpf-async, ptrace-async, cpython-async, tachyon-async):
	 * stacks as record --async composes them (docs/oracle.md, "Async") */
	int async;
};

/* What the command line says, as it says it: filled by the parser, const
 * from then on. What a run works out from it and from the host (defaults,
 * the reference's place, pinning, the BPF clock's real rate) is in struct
 * oracle_plan, so that no function can mistake one for the other. */
struct oracle_opts {
	const char *snippets[ORACLE_MAX_CASES]; /* --snippet, in order */
	int nsnippets;
	const char *mode_args[ORACLE_MAX_MODES]; /* --mode, in order (checked) */
	int nmode_args;
	const char *ref_name;
	double duration, warmup, rate_khz;
	int runs, poisson;
	const char *python, *json, *html;
	int check;
	double max_impossible, max_tvd_excess, max_errors;
	int cpus_set, cpu_target, cpu_sampler; /* --cpus TARGET,SAMPLER */
	int dflt, no_pin, quiet, verbose;
	int rate_set;	    /* --rate given */
	int peers;	    /* --peers */
	int slowdown_pairs; /* --slowdown-pairs: on/off pairs per window */
	/* The regression gate (oracle_compare.h): --baseline BASE, or
	 * --compare BASE NEW (compare_new set). */
	const char *baseline, *compare_new, *junit;
	int force;	       /* --force: --json, --html, --junit replace a path */
	double alpha, power;   /* --alpha, --power */
	const char *detect[8]; /* --detect METRIC=DELTA */
	int ndetect;
	int duration_set, warmup_set, runs_set;
};

/* One oracle run's derived state, owned by cmd_oracle and read by the rest. */
struct oracle_plan {
	const struct oracle_opts *o;
	const char *snippets[ORACLE_MAX_CASES]; /* given, --default's, or all */
	int nsnippets;
	double rate_khz;			    /* --rate, or --default's 1 kHz */
	struct oracle_mode modes[ORACLE_MAX_MODES]; /* resolved: commands built */
	int nmodes;
	int ref; /* index of the reference in modes */
	int pinned, cpu_target, cpu_sampler;
	double bpf_rate_hz; /* what the BPF clock really runs at */
	int bpf_clamped;
	const char *data_dir; /* holds snippets/ and scripts/, see oracle_data_dir() */
	char ref_why[192];    /* how the reference was chosen, for the header */
	int async;	      /* an async run: its modes and reference key task chains */
};

/* A started target. */
struct oracle_target {
	pid_t pid;
	char tmpdir[PATH_MAX];		   /* host path; inside the root for chroots */
	char progress_path[PATH_MAX];	   /* host path */
	char truth_path[PATH_MAX];	   /* host path */
	char log_path[PATH_MAX];	   /* the snippet's stdout and stderr */
	volatile const uint64_t *progress; /* mmap'd counter, NULL until ready */
	void *map;
	int exited;
	int status;
};

/* What one mode measured over one run, on one fresh target. */
struct oracle_result {
	uint64_t attempts, samples, stacks, errors, impossible, lost;
	double us_sum; /* per-attempt cost, as the original's µs */
	float *us_seq; /* each attempt's cost in µs, in order (oracle_result_us) */
	size_t nus, capus;
	double us_target_sum; /* what the target paid, summed over attempts */
	double us_sampler_sum;
	int us_target_known;
	double elapsed;		/* seconds of the sampling window */
	double progress_rate;	/* target iterations per second in the window */
	struct keydist *dist;	/* possible stacks */
	struct keydist *imp;	/* impossible stacks seen */
	struct keydist *phases; /* possible stacks by ground-truth phase */
	struct keydist *truth;	/* the target's own BPFPY_TRUTH, or NULL */
	const char **seq;	/* possible keys in time order (dist's copies) */
	size_t nseq, capseq;
	struct keydist *verdicts; /* key -> 1 possible, 2 impossible (cache) */
	struct rules_state *rstate;

	/* ptrace: the possible stacks of threads in state R just before the
	 * stop, what a cpu-clock sampler can see; compared with cpu modes. */
	struct keydist *dist_run;
	const char **seq_run;
	size_t nseq_run, capseq_run;
	int ref_run;	/* oracle_compute: compared with the reference's running subset */
	char note[256]; /* why the run failed, "" if it did not */
	/* Filled by oracle_compute(). */
	double raw_tvd, tvd_floor, tvd_excess, tvd_noise, tvd_fn, tvd_truth;
	/* From the on/off pairs (oracle_gate.h), filled by the mode: slowdown%
	 * mean and its 95% half-width, the mean off-window rate; walk: bpf's
	 * slowdown less bpf-timer's (oracle_compute), NAN elsewhere. */
	double slowdown, slowdown_ci, off_rate, walk, walk_ci;
	int pairs;
	double pair_rate[ORACLE_GATE_MAX_PAIRS][2]; /* each pair's on, off rate */
	int npairs; /* pairs in the window; pairs: those used (complete, off rate > 0) */
	double errors_pct, impossible_pct, us, us_target, us_sampler;
};

/* Everything a mode needs for one window. */
struct oracle_window {
	const struct oracle_plan *p;
	const struct oracle_case *c;
	const struct oracle_python *py;
	const struct oracle_mode *mode;
	struct oracle_target *t;
	unsigned version_hex;
	uint64_t seed;
};

/* Sleeps until t (seconds on the mono_s() clock), through signals. Here
 * rather than in one of the .c files because the windows (cmd_oracle.c)
 * and every mode (oracle_modes.c) schedule by it: oracle_modes.c then needs
 * nothing of oracle_target.c, whose readiness probe uses oracle_modes.c's
 * reader -- the two files depend one way only. */
static inline void oracle_sleep_until(double t)
{
	struct timespec ts;

	if (t <= mono_s())
		return;
	ts.tv_sec = (time_t)t;
	ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* oracle_target.c */
int oracle_find_python(const char *want, const char *data_dir, struct oracle_python *out,
		       struct diag *d);
/* Where snippets/ and scripts/ are: $BPFPY_SNIPPETS/.. , beside the build
 * tree (<binary>/..), installed (<binary>/../share/bpfpy), or
 * /usr/local/share/bpfpy. */
const char *oracle_data_dir(const char *exe_dir, char *buf, size_t len);
int oracle_load_case(const char *name_or_path, const char *dir, struct oracle_case *c,
		     struct diag *d);
int oracle_list_cases(const char *dir, char names[][64], int max);
int oracle_target_start(struct oracle_target *t, const struct oracle_case *c,
			const struct oracle_python *py, const struct oracle_plan *p,
			struct diag *d);
/* Wait until the program runs, up to timeout s: its progress counter moved
 * (a snippet importing _oracle: its main loop runs), or, for a program
 * that never mapped the counter, a thread of it runs a frame of its own
 * file (own: a basename) outside any import. */
int oracle_target_wait_ready(struct oracle_target *t, const char *own, double timeout,
			     struct diag *d);
uint64_t oracle_target_progress(const struct oracle_target *t);
/* SIGTERM, truth file into *truth (a new keydist, or NULL), SIGKILL if it
 * lingers, reap, remove temp files. Safe to call twice. */
void oracle_target_stop(struct oracle_target *t, struct keydist **truth);
int oracle_pin_self(int cpu);
/* Busy CPU-seconds of the whole host so far (from /proc/stat). */
double oracle_host_busy(void);
/* CPU-seconds used by us and our reaped children. */
double oracle_self_busy(void);

/* oracle_probe.c */
/* Bytes of names of one stack, copied out of the code cache before the
 * next lookup. */
#define ORACLE_NAME_ARENA 65536
struct code_cache;
struct thread_stack;
struct rule_frame;
struct sym_frame;
struct py_process;
/* Name a stack read by the walker into fr (names copied into arena, of
 * ORACLE_NAME_ARENA bytes): the frame count, or -1 when a frame cannot be
 * named (the sample is an error). With ops (the process, for its version's
 * opcode names; NULL: none) the leaf gets the instruction mark record
 * --opcodes gives it, from ts->leaf_op and op_flags (a case whose rules say
 * "opcodes"). */
int oracle_symbolize(struct code_cache *cache, const struct thread_stack *ts, struct rule_frame *fr,
		     char *arena, const struct py_process *ops);
/* Frames already named (a task chain async_compose built, marks
 * included) into fr the same way: the frame count. */
int oracle_name_frames(const struct sym_frame *sf, uint32_t nsf, struct rule_frame *fr,
		       char *arena);
/* Whether a thread of pid runs a frame of the file own (a basename), not
 * inside an import: 1 yes, 0 not (yet), -1 with d set when it never will
 * (an unsupported interpreter, no privilege). Reads the process while it
 * runs, with the walker the modes use. */
struct oracle_probe;
struct oracle_probe *oracle_probe_new(void);
int oracle_probe_program(struct oracle_probe *pr, pid_t pid, const char *own, struct diag *d);
void oracle_probe_free(struct oracle_probe *pr);

/* oracle_modes.c */
/* ptrace-low, ptrace-async-low or bpf-poisson into m (0), else -1: see
 * oracle_modes.c. */
int oracle_reference_mode(const char *name, struct oracle_mode *m);
/* The reference to use for --reference-mode asked (NULL or "auto": chosen
 * from the rate, and ptrace-async or ptrace-async-low in an async run),
 * with the reason in p->ref_why. */
const char *oracle_reference_pick(struct oracle_plan *p, const char *asked);
/* A mode that samples only threads on a CPU (the bpf cpu clock). */
int oracle_mode_cpu_clock(const struct oracle_mode *m);
int oracle_result_init(struct oracle_result *r);
/* Add an attempt's cost (µs) to us_sum and to us_seq. */
void oracle_result_us(struct oracle_result *r, double us);
void oracle_result_free(struct oracle_result *r);
/* Sample w->t for the window [start, start + duration). Failures of the
 * whole window go to d (the run is reported, not the oracle aborted). */
int oracle_mode_run(struct oracle_window *w, struct oracle_result *r, struct diag *d);

/* oracle_table.c */
struct oracle_case_result {
	struct oracle_case *c;
	struct oracle_result *res; /* [run * nmodes + mode] */
};
void oracle_compute(const struct oracle_plan *p, struct oracle_case_result *cr);
void oracle_print_header(FILE *f, const struct oracle_plan *p, const struct oracle_python *py,
			 int ncases, int ncpus, double other_load);
void oracle_print_case(FILE *f, const struct oracle_plan *p, const struct oracle_case_result *cr);
/* The run as JSON (the --json file, and what the gate compares). */
struct json_object *oracle_json(const struct oracle_plan *p, const struct oracle_python *py,
				struct oracle_case_result *crs, int ncases, int ncpus,
				double other_load);
int oracle_write_json(const char *path, struct json_object *root, int force, struct diag *d);
/* Prints each window of a mode that took no sample (with its reason: the
 * note, every attempt failed, or nothing at all); returns how many. The
 * oracle then exits 1: a table without that mode's figures is no verdict. */
int oracle_empty(FILE *f, const struct oracle_plan *p, const struct oracle_case_result *crs,
		 int ncases);
/* Modes that share an unwinder (cpython-blocking and tachyon-blocking,
 * cpython-live and tachyon-live) must agree within their noise: one line
 * per pair present (tvd, bound, agree or DISAGREE; the same in the JSON's
 * per-case "consistency"). */
void oracle_print_consistency(FILE *f, const struct oracle_plan *p,
			      const struct oracle_case_result *cr);
/* Prints each broken threshold; returns how many. */
int oracle_check(FILE *f, const struct oracle_plan *p, struct oracle_case_result *crs, int ncases);

#endif /* ORACLE_RUN_H */
