// SPDX-License-Identifier: MIT
/*
 * The oracle's modes: each samples one fresh target for one window and
 * feeds every thread stack it read to account(), which keys it, asks the
 * case's rules whether it is possible, and counts it.
 *
 * What "µs" means per mode (the original's column is the sampler's wall
 * time per attempt, stop and resume included):
 *   ptrace    wall time of the attempt: stop, read, resume, symbolize;
 *             the target pays the stopped time (stopper.last_stopped_ns)
 *   live      wall time of read + symbolize; the target pays nothing
 *   bpf       in-kernel time of the sample (hdr.cost_ns, paid on the
 *             target's CPU, in its context) + our user-space handling
 *   bpf-wall  wall time of one task-iterator snapshot and its drain; it
 *             runs in our context, so the target pays nothing
 *   external  what the tool reports per attempt ('.' lines), else unknown
 *   bpf-timer none: it takes no sample, its figure is its slowdown%
 * Every mode samples only in the "on" halves of its window's on/off pairs
 * (oracle_gate.h), which is what slowdown% is measured from.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "async_stack.h"
#include "bpf_sampler.h"
#include "code_cache.h"
#include "oracle_gate.h"
#include "oracle_run.h"
#include "proc.h"
#include "ptrace_stop.h"
#include "py_process.h"
#include "stack_reader.h"

/* Threads read per attempt at most (the snippets have a handful). */
#define MAX_THREADS 128
#define KEY_MAX	    16384

/*
 * References that do not distort (issue 12, item 5). The ptrace reference
 * stops every thread per sample, for a few hundred microseconds (docs/bench.md):
 * at 10 kHz the target runs a few percent of the time, and a sampler that does not stop it is
 * then judged against a program that barely ran. Two references that keep
 * the target's own pace, over a longer window to make up for the lower rate:
 *   ptrace-low   the ptrace reference with Poisson times at a rate that
 *                keeps the target stopped at most REF_LOW_DUTY of the time
 *                (measured: the rate adapts to the stops' own mean length),
 *                never above the asked rate;
 *   bpf-poisson  the in-kernel sampler with Poisson times at REF_BPF_HZ at
 *                most (about 1 us of the target's CPU per sample); it sees
 *                on-CPU threads only, so it is a reference for cpu modes.
 * "auto" (the default) keeps ptrace unless the asked rate would stop the
 * target more than REF_MAX_DISTORTION of the time at PTRACE_STOP_US_EST per
 * stop (the cheapest stop measured here, one thread): then ptrace-low.
 * Known from the rate rather than probed, so the choice costs no window and
 * is the same on every run; the slowdown% the reference really caused is
 * measured anyway and flagged under the table when above 10%.
 */
#define REF_MAX_DISTORTION 0.10
#define PTRACE_STOP_US_EST 100.0
#define REF_LOW_DUTY	   0.05
#define REF_LOW_START_HZ   200.0
#define REF_BPF_HZ	   1000.0
#define REF_LOW_WINDOW	   3.0 /* x --duration */

int oracle_reference_mode(const char *name, struct oracle_mode *m)
{
	memset(m, 0, sizeof(*m));
	if (!strcmp(name, "ptrace-low") || !strcmp(name, "ptrace-async-low"))
		m->kind = MODE_PTRACE;
	else if (!strcmp(name, "bpf-poisson"))
		m->kind = MODE_BPF;
	else
		return -1;
	m->low = 1;
	m->async = !strcmp(name, "ptrace-async-low");
	snprintf(m->name, sizeof(m->name), "%s", name);
	return 0;
}

const char *oracle_reference_pick(struct oracle_plan *p, const char *asked)
{
	double hz = p->rate_khz * 1000, est = hz * PTRACE_STOP_US_EST * 1e-6;

	if (asked && strcmp(asked, "auto")) {
		snprintf(p->ref_why, sizeof(p->ref_why), "as asked");
		return asked;
	}
	if (hz > 0 && est <= REF_MAX_DISTORTION) {
		snprintf(p->ref_why, sizeof(p->ref_why),
			 "auto: ptrace at %g Hz stops the target ~%.0f%% of the time%s", hz,
			 100 * est, p->async ? "; task chains (async modes)" : "");
		return p->async ? "ptrace-async" : "ptrace";
	}
	if (hz > 0)
		snprintf(
		    p->ref_why, sizeof(p->ref_why),
		    "auto: ptrace at %g Hz would stop the target ~%.0f%% of the time (>%.0f%%)", hz,
		    100 * est, 100 * REF_MAX_DISTORTION);
	else
		snprintf(p->ref_why, sizeof(p->ref_why),
			 "auto: ptrace as fast as possible stops the target most of the time");
	return p->async ? "ptrace-async-low" : "ptrace-low";
}

int oracle_mode_cpu_clock(const struct oracle_mode *m)
{
	return m->kind == MODE_BPF;
}

/* The window of a mode: the low references sample longer. */
static double win_duration(const struct oracle_window *w)
{
	return w->p->o->duration * (w->mode->low ? REF_LOW_WINDOW : 1);
}

/* The gate over the mode's window from start, the pairs from --slowdown-pairs. */
static void gate_init(struct oracle_gate *g, const struct oracle_window *w, double start,
		      oracle_gate_fn toggle, void *ctx)
{
	oracle_gate_init(g, start, win_duration(w), w->p->o->slowdown_pairs, w->seed ^ 0x51ed,
			 w->t->progress, toggle, ctx);
}

/* The gate's figures into r, the thread ended first. */
static void gate_finish(struct oracle_gate *g, struct oracle_result *r)
{
	oracle_gate_stop(g);
	r->pairs =
	    oracle_gate_slowdown(g, &r->slowdown, &r->slowdown_ci, &r->progress_rate, &r->off_rate);
	r->npairs = g->npairs;
	for (int i = 0; i < g->npairs; i++)
		oracle_gate_pair(g, i, &r->pair_rate[i][0], &r->pair_rate[i][1]);
}

/* Append k to a time-ordered key sequence (a copy owned by a keydist). */
static void seq_push(const char ***seq, size_t *n, size_t *cap, const char *k)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 4096;
		const char **s = realloc(*seq, c * sizeof(*s));

		if (!s)
			return;
		*seq = s;
		*cap = c;
	}
	(*seq)[(*n)++] = k;
}

int oracle_result_init(struct oracle_result *r)
{
	memset(r, 0, sizeof(*r));
	r->dist = keydist_new();
	r->dist_run = keydist_new();
	r->imp = keydist_new();
	r->phases = keydist_new();
	r->verdicts = keydist_new();
	r->rstate = rules_state_new();
	r->raw_tvd = r->tvd_floor = r->tvd_excess = r->tvd_noise = NAN;
	r->tvd_fn = r->tvd_truth = r->slowdown = r->progress_rate = NAN;
	r->slowdown_ci = r->off_rate = r->walk = r->walk_ci = NAN;
	return r->dist && r->dist_run && r->imp && r->phases && r->verdicts && r->rstate ? 0 : -1;
}

void oracle_result_us(struct oracle_result *r, double us)
{
	r->us_sum += us;
	/* The gate's per-block costs need them in order; past the cap (22 s
	 * at 100 kHz) the blocks cover the first ORACLE_US_SEQ_MAX. */
	if (r->nus == r->capus && r->capus < ORACLE_US_SEQ_MAX) {
		size_t cap = r->capus ? 2 * r->capus : 4096;
		float *n = realloc(r->us_seq, cap * sizeof(*n));

		if (!n)
			return;
		r->us_seq = n;
		r->capus = cap;
	}
	if (r->nus < r->capus)
		r->us_seq[r->nus++] = (float)us;
}

void oracle_result_free(struct oracle_result *r)
{
	keydist_free(r->dist);
	keydist_free(r->dist_run);
	free(r->seq_run);
	keydist_free(r->imp);
	keydist_free(r->phases);
	keydist_free(r->verdicts);
	keydist_free(r->truth);
	rules_state_free(r->rstate);
	free(r->seq);
	free(r->us_seq);
	memset(r, 0, sizeof(*r));
}

/* The verdict cache's key: the stack's key and its files, since the rules
 * judge files (func_a in B_file.py) and the key has none. A key too long
 * for the buffer is not cached (""). */
static const char *verdict_key(const char *key, const struct rule_frame *fr, int n, char *buf,
			       size_t size)
{
	size_t o = (size_t)snprintf(buf, size, "%s", key);

	for (int i = 0; i < n && o < size; i++)
		o += (size_t)snprintf(buf + o, size - o, "\x1f%s", fr[i].file ? fr[i].file : "");
	return o < size ? buf : "";
}

/* rules_match, where a case judged on instructions gets from a sampler
 * that sends none (an external tool) a stack without a leaf mark: it is
 * judged with an unreported instruction there, which the rules give the
 * benefit of the doubt (rules.h); its key stays as sent. */
static int judge_ops(struct oracle_window *w, struct oracle_result *r, const struct rule_frame *fr,
		     int n, int tid)
{
	static _Thread_local struct rule_frame with[BPFPY_MAX_DEPTH + 1];
	const struct rules *rules = w->c->rules;

	if (!rules_opcodes(rules) || !n || fr[0].op || fr[0].task || n > BPFPY_MAX_DEPTH)
		return rules_match(rules, r->rstate, fr, n, tid, w->version_hex, NULL);
	with[0] = (struct rule_frame){.op = 1};
	memcpy(with + 1, fr, (size_t)n * sizeof(*fr));
	return rules_match(rules, r->rstate, with, n + 1, tid, w->version_hex, NULL);
}

/* Verdict cache values: bit 0 known, bit 1 impossible, bits 2+: truth phase + 1.
 * running: the ptrace reference saw the thread in state R before the stop
 * (the stack also goes to dist_run). */
static void account_as(struct oracle_window *w, struct oracle_result *r,
		       const struct rule_frame *fr, int n, int tid, int running)
{
	const struct rules *rules = w->c->rules;
	char key[KEY_MAX], vkey[2 * KEY_MAX];
	int fam = rules_has_families(rules), phase = -1;
	const char *vk = "";
	unsigned v = 0;
	const char *k;

	/* A task chain ends at its root task: the loop's frames below it are
	 * no part of its key nor of what the rules judge. */
	n = oracle_task_chain_len(fr, n);
	oracle_key_build(fr, n, key, sizeof(key));
	r->stacks++;
	if (!fam)
		vk = verdict_key(key, fr, n, vkey, sizeof(vkey));
	if (*vk)
		v = (unsigned)keydist_get(r->verdicts, vk);
	if (!v) {
		int possible = judge_ops(w, r, fr, n, tid);

		phase = rules_truth_classify(rules, w->version_hex, fr, n);
		v = 1u | (possible ? 0u : 2u) | (unsigned)(phase + 1) << 2;
		if (*vk)
			keydist_add(r->verdicts, vk, v);
	}
	phase = (int)(v >> 2) - 1;
	if (v & 2) {
		r->impossible++;
		keydist_add(r->imp, key, 1);
		return;
	}
	k = keydist_add(r->dist, key, 1);
	if (k)
		seq_push(&r->seq, &r->nseq, &r->capseq, k);
	if (running && (k = keydist_add(r->dist_run, key, 1)))
		seq_push(&r->seq_run, &r->nseq_run, &r->capseq_run, k);
	if (phase >= 0) {
		const struct rule_truth *t[64];
		int nt = rules_truths(rules, w->version_hex, t, 64);

		if (phase < nt)
			keydist_add(r->phases, t[phase]->key, 1);
	}
}

static void account(struct oracle_window *w, struct oracle_result *r, const struct rule_frame *fr,
		    int n, int tid)
{
	account_as(w, r, fr, n, tid, 0);
}

static int thread_key(const struct thread_stack *ts)
{
	return ts->tid ? (int)ts->tid : (int)(ts->pthread_id ^ (ts->pthread_id >> 32));
}

struct scratch {
	struct thread_stack *stacks;
	struct rule_frame (*frames)[BPFPY_MAX_DEPTH];
	int *nframes;
	char *arena; /* MAX_THREADS x ORACLE_NAME_ARENA */
};

static int scratch_new(struct scratch *s)
{
	s->stacks = calloc(MAX_THREADS, sizeof(*s->stacks));
	s->frames = calloc(MAX_THREADS, sizeof(*s->frames));
	s->nframes = calloc(MAX_THREADS, sizeof(*s->nframes));
	s->arena = malloc((size_t)MAX_THREADS * ORACLE_NAME_ARENA);
	return s->stacks && s->frames && s->nframes && s->arena ? 0 : -1;
}

static void scratch_free(struct scratch *s)
{
	free(s->stacks);
	free(s->frames);
	free(s->nframes);
	free(s->arena);
}

/*
 * The async modes' side (bpf-async, ptrace-async): the target as record
 * --async holds it (user/record/async_stack.h), so that both compose task
 * chains with async_compose and compare key for key. bpf-async: the
 * kernel captures the running task at the sample, the awaiters come from
 * the graph; ptrace-async: the graph is read in the stop, with the stacks.
 */
struct async_side {
	struct rec_target t;
	struct async_stats st;
	struct sym_frame *sym; /* BPFPY_MAX_DEPTH: one composed chain */
	__u64 *addrs;	       /* ptrace-async: MAX_THREADS x BPFPY_MAX_DEPTH frame addresses */
	struct rec_target *tp[1];
	struct target_set ts; /* bpf-async: hands the kernel a layout found late */
};

/* 0, or -1 with d set (exit 2 on 3.10 and older: no task to follow). */
static int async_side_open(struct async_side *a, const struct oracle_window *w,
			   struct py_process *p, struct code_cache *cache, int stopped,
			   struct diag *d)
{
	memset(a, 0, sizeof(*a));
	a->t.pid = w->t->pid;
	a->t.proc = p;
	a->t.cache = cache;
	a->sym = calloc(BPFPY_MAX_DEPTH, sizeof(*a->sym));
	if (stopped)
		a->addrs = calloc((size_t)MAX_THREADS * BPFPY_MAX_DEPTH, sizeof(*a->addrs));
	if (!a->sym || (stopped && !a->addrs))
		return diag_errno(d, ENOMEM, "oracle %s", w->mode->name);
	if (async_target_open(&a->t, 1, d))
		return -1;
	a->t.async->frozen = stopped;
	a->tp[0] = &a->t;
	a->ts.t = a->tp;
	a->ts.n = 1;
	a->ts.async = 1;
	return 0;
}

static void async_side_close(struct async_side *a)
{
	async_target_free(&a->t);
	free(a->sym);
	free(a->addrs);
	a->sym = NULL;
	a->addrs = NULL;
}

/* The chain a->sym[0..n) composed into fr: the frame count, or -1 when a
 * frame could not be named (the sample is an error, as oracle_symbolize's). */
static int async_side_name(struct async_side *a, uint32_t n, int unnamed, struct rule_frame *fr,
			   char *arena)
{
	int k = unnamed ? -1 : oracle_name_frames(a->sym, n, fr, arena);

	code_cache_end_sample(a->t.cache);
	return k;
}

/*
 * Which threads were running at a ptrace sample: each seized thread's state
 * from /proc/PID/task/TID/stat, read just before the interrupt (the stop
 * itself turns every state into 't'). A thread can start or stop running
 * between the read and the interrupt (a few us); that blurs the subset a
 * little, it does not bias it. The files stay open and are re-read with
 * pread, which regenerates them: an open per thread per sample would cost
 * more than the stop.
 */
struct run_states {
	int n;
	pid_t tid[MAX_THREADS];
	int fd[MAX_THREADS];
	char state[MAX_THREADS];
};

static void run_states_read(struct run_states *rs, const struct stopper *st)
{
	for (int i = 0; i < rs->n; i++)
		rs->state[i] = 0;
	for (int i = 0; i < st->nthreads; i++) {
		pid_t tid = st->threads[i].tid;
		struct proc_stat ps;
		char buf[1024];
		ssize_t len;
		int j = 0;

		while (j < rs->n && rs->tid[j] != tid)
			j++;
		if (j == rs->n) {
			char path[64];

			if (rs->n == MAX_THREADS)
				continue;
			snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)st->pid,
				 (int)tid);
			rs->fd[j] = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
			if (rs->fd[j] < 0)
				continue;
			rs->tid[j] = tid;
			rs->n++;
		}
		len = pread(rs->fd[j], buf, sizeof(buf) - 1, 0);
		if (len <= 0)
			continue;
		buf[len] = 0;
		if (!proc_stat_parse(buf, &ps))
			rs->state[j] = ps.state;
	}
}

/* 1 unless the thread was seen not running: a thread the reader names by
 * pthread id only (3.8-3.10 keep no OS tid), or one created since the
 * states were read, is counted with the running ones. */
static int run_states_running(const struct run_states *rs, uint32_t tid)
{
	for (int i = 0; tid && i < rs->n; i++)
		if (rs->tid[i] == (pid_t)tid)
			return !rs->state[i] || rs->state[i] == 'R';
	return 1;
}

static void run_states_close(struct run_states *rs)
{
	for (int i = 0; i < rs->n; i++)
		close(rs->fd[i]);
	rs->n = 0;
}

/* The running subset is kept for the reference when a cpu mode needs it. */
static int wants_running(const struct oracle_window *w)
{
	const struct oracle_plan *p = w->p;

	if (w->mode->kind != MODE_PTRACE || w->mode != &p->modes[p->ref])
		return 0;
	for (int i = 0; i < p->nmodes; i++)
		if (oracle_mode_cpu_clock(&p->modes[i]))
			return 1;
	return 0;
}

/* The case's rules judge instructions ("opcodes"): its samples get the
 * instruction mark record --opcodes gives them. Not for task chains. */
static int oracle_wants_ops(const struct oracle_window *w)
{
	return rules_opcodes(w->c->rules) && !w->mode->async;
}

/* run_walker's naming of the stacks read in one stop: symbols, or with
 * ptrace-async each thread's task chain; 1 when a stack cannot be named. */
static int walker_name(struct async_side *as, int async, struct code_cache *cache,
		       struct scratch *s, int shown, const struct py_process *ops)
{
	for (int i = 0; i < shown; i++) {
		char *arena = s->arena + (size_t)i * ORACLE_NAME_ARENA;

		if (async) {
			int unnamed = 0;
			uint32_t n = async_compose_stopped(
			    &as->t, &s->stacks[i], as->addrs + (size_t)i * BPFPY_MAX_DEPTH, as->sym,
			    BPFPY_MAX_DEPTH, &as->st, &unnamed);

			s->nframes[i] = async_side_name(as, n, unnamed, s->frames[i], arena);
		} else {
			s->nframes[i] =
			    oracle_symbolize(cache, &s->stacks[i], s->frames[i], arena, ops);
		}
		if (s->nframes[i] < 0)
			return 1;
	}
	return 0;
}

/* ptrace and live: the user-space walker on the schedule. */
static int run_walker(struct oracle_window *w, struct oracle_result *r, struct py_process *p,
		      struct code_cache *cache, struct diag *d)
{
	const struct oracle_plan *pl = w->p;
	int blocking = w->mode->kind == MODE_PTRACE, running = blocking && wants_running(w);
	int async = blocking && w->mode->async;
	double hz = pl->rate_khz * 1000, stopped_s = 0;
	struct async_side as = {0};
	struct stopper st = {0};
	struct oracle_sched sc;
	struct run_states rs = {0};
	struct scratch s;
	struct oracle_gate g;
	double t, start, deadline;
	uint64_t nstops = 0;
	int ret = 0;

	if (scratch_new(&s)) {
		scratch_free(&s);
		return diag_errno(d, ENOMEM, "oracle");
	}
	/* Seized once, before the window: attaching is not a sample's cost. */
	if ((async && async_side_open(&as, w, p, cache, 1, d)) ||
	    (blocking && stopper_attach(&st, w->t->pid, d))) {
		async_side_close(&as);
		scratch_free(&s);
		return -1;
	}
	start = mono_s();
	deadline = start + win_duration(w);
	gate_init(&g, w, start, NULL, NULL);
	if (oracle_gate_start(&g)) {
		ret = diag_errno(d, errno, "oracle: cannot start the on/off thread");
		goto out;
	}
	if (w->mode->low)
		oracle_sched_init(&sc, start, win_duration(w),
				  hz > 0 && hz < REF_LOW_START_HZ ? hz : REF_LOW_START_HZ, 1,
				  w->seed);
	else
		oracle_sched_init(&sc, start, pl->o->duration, hz, pl->o->poisson, w->seed);
	while (oracle_sched_next(&sc, &t)) {
		struct diag dd = {0};
		double t0, t1;
		int count = 0, rc, bad = 0, shown;

		oracle_sleep_until(t);
		t0 = mono_s();
		if (t0 >= deadline)
			break;
		if (!oracle_gate_on(&g))
			continue;
		r->attempts++;
		if (running)
			run_states_read(&rs, &st);
		if (blocking && stopper_stop(&st, &dd)) {
			if (dd.code == EXIT_NO_PROCESS) {
				r->attempts--;
				snprintf(r->note, sizeof(r->note), "target exited: %.200s", dd.msg);
				break;
			}
			r->errors++;
			continue;
		}
		rc = stack_read_all_addrs(&p->mem, &p->cfg, s.stacks, async ? as.addrs : NULL,
					  MAX_THREADS, &count, &dd);
		/* ptrace-async: the task graph in the same stop (dump --async's
		 * read), named after the resume like the frames. */
		if (async && !rc && py_asyncio_read(p, &as.t.async->a, &as.t.async->g, &dd) < 0)
			rc = -1;
		if (blocking) {
			stopper_resume(&st, &dd);
			r->us_target_sum += st.last_stopped_ns / 1e3;
			stopped_s += st.last_stopped_ns / 1e9;
			nstops++;
			/* ptrace-low: stopped at most REF_LOW_DUTY of the time, at
			 * the stops' mean length so far, never above --rate. */
			if (w->mode->low && stopped_s > 0) {
				double want = REF_LOW_DUTY * (double)nstops / stopped_s;

				oracle_sched_set_rate(&sc, hz > 0 && hz < want ? hz : want);
			}
		}
		shown = count < MAX_THREADS ? count : MAX_THREADS;
		for (int i = 0; !rc && i < shown; i++)
			if (s.stacks[i].flags & SAMPLE_ERROR)
				bad = 1;
		/* Names are read after the resume: the fingerprints say whether a
		 * code object changed meanwhile. */
		if (async && !rc && !bad)
			py_asyncio_name(p, &as.t.async->a, &as.t.async->g);
		if (!rc && !bad)
			bad = walker_name(&as, async, cache, &s, shown,
					  oracle_wants_ops(w) ? p : NULL);
		t1 = mono_s();
		oracle_result_us(r, (t1 - t0) * 1e6);
		r->us_sampler_sum += (t1 - t0) * 1e6;
		if (rc || bad) {
			r->errors++;
			continue;
		}
		r->samples++;
		for (int i = 0; i < shown; i++)
			if (s.nframes[i])
				account_as(w, r, s.frames[i], s.nframes[i],
					   thread_key(&s.stacks[i]),
					   running && run_states_running(&rs, s.stacks[i].tid));
	}
	gate_finish(&g, r);
	r->elapsed = g.on_s;
	r->us_target_known = 1;
out:
	if (blocking)
		stopper_detach(&st);
	run_states_close(&rs);
	async_side_close(&as);
	scratch_free(&s);
	return ret;
}

/* Records of one wall-clock snapshot, or the stream of the cpu clock. */
struct bpf_ctx {
	struct oracle_window *w;
	struct oracle_result *r;
	struct code_cache *cache;
	uint64_t start_ns, deadline_ns;
	struct rule_frame *frames;
	char *arena;
	/* wall: the snapshot's records, accounted once all are in */
	int wall, nrec, failed;
	struct thread_stack *recs;
	struct async_side *as;	      /* bpf-async, else NULL */
	const struct py_process *ops; /* the case wants instruction marks, else NULL */
};

static uint64_t to_ns(double t)
{
	return (uint64_t)(t * 1e9);
}

static int on_record(void *arg, const struct sample_hdr *h, const struct frame_rec *frames)
{
	struct bpf_ctx *c = arg;
	struct oracle_result *r = c->r;
	struct thread_stack ts;
	double t0 = mono_s();
	int n;

	if (c->wall) {
		if (h->flags & SAMPLE_ERROR)
			c->failed = 1;
		else if (c->nrec < MAX_THREADS && h->nframes) {
			struct thread_stack *t = &c->recs[c->nrec++];

			t->tid = h->tid;
			t->pthread_id = 0;
			t->leaf_op = h->leaf_op;
			t->op_flags = h->op_flags;
			t->nframes = h->nframes < BPFPY_MAX_DEPTH ? h->nframes : BPFPY_MAX_DEPTH;
			memcpy(t->frames, frames, t->nframes * sizeof(*frames));
		}
		return 0;
	}
	/* Never past the deadline: the clock is stopped a little after it. */
	if (h->ts_ns < c->start_ns || h->ts_ns >= c->deadline_ns)
		return 0;
	r->attempts++;
	r->us_target_sum += h->cost_ns / 1e3;
	if (h->flags & SAMPLE_ERROR) {
		r->errors++;
		oracle_result_us(r, h->cost_ns / 1e3);
		return 0;
	}
	if (c->as && async_task_rec(h, frames)) {
		/* bpf-async: the chain record --async writes for this sample */
		int unnamed = 0;
		uint32_t k = async_compose(&c->as->t, h, frames, async_task_rec(h, frames),
					   c->as->sym, BPFPY_MAX_DEPTH, &c->as->st, &unnamed);

		n = async_side_name(c->as, k, unnamed, c->frames, c->arena);
	} else {
		ts.tid = h->tid;
		ts.leaf_op = h->leaf_op;
		ts.op_flags = h->op_flags;
		ts.nframes = h->nframes < BPFPY_MAX_DEPTH ? h->nframes : BPFPY_MAX_DEPTH;
		memcpy(ts.frames, frames, ts.nframes * sizeof(*frames));
		n = oracle_symbolize(c->cache, &ts, c->frames, c->arena, c->ops);
	}
	{
		double us = (mono_s() - t0) * 1e6;

		r->us_sampler_sum += us;
		oracle_result_us(r, us + h->cost_ns / 1e3);
	}
	if (n < 0) {
		r->errors++;
		return 0;
	}
	r->samples++;
	if (n)
		account(c->w, r, c->frames, n, (int)h->tid);
	return 0;
}

/* The gate's switch for the cpu clocks. A clock that refuses is noted:
 * its pair then measures nothing, which the interval shows. */
static void bpf_toggle(void *ctx, int on)
{
	bpf_sampler_set_enabled(ctx, on);
}

/*
 * bpf-wall's loop: at each scheduled tick (the oracle's own clock, not the
 * kernel's), snapshot every thread through the BPF program and account the
 * stacks as one sample. -1 when its buffers could not be had.
 */
static int bpf_wall_loop(struct oracle_window *w, struct oracle_result *r, struct bpf_sampler *s,
			 struct bpf_ctx *c, struct code_cache *cache, struct oracle_gate *g,
			 double start, double deadline, struct diag *d)
{
	const struct oracle_plan *pl = w->p;
	double t;

	struct oracle_sched sc;
	struct rule_frame *fr = calloc((size_t)MAX_THREADS * BPFPY_MAX_DEPTH, sizeof(*fr));
	char *arenas = malloc((size_t)MAX_THREADS * ORACLE_NAME_ARENA);
	int *nfr = calloc(MAX_THREADS, sizeof(int));

	if (!fr || !arenas || !nfr) {
		free(fr);
		free(arenas);
		free(nfr);
		diag_errno(d, ENOMEM, "oracle");
		return -1;
	}
	oracle_sched_init(&sc, start, pl->o->duration, pl->rate_khz * 1000, pl->o->poisson,
			  w->seed);
	while (oracle_sched_next(&sc, &t)) {
		struct diag dd = {0};
		double t0, t1;

		oracle_sleep_until(t);
		t0 = mono_s();
		if (t0 >= deadline)
			break;
		if (!oracle_gate_on(g))
			continue;
		r->attempts++;
		c->nrec = 0;
		c->failed = bpf_sampler_snapshot(s, &dd) != 0;
		while (bpf_sampler_poll(s, 0, on_record, c) > 0)
			;
		for (int i = 0; !c->failed && i < c->nrec; i++)
			if ((nfr[i] = oracle_symbolize(
				 cache, &c->recs[i], fr + (size_t)i * BPFPY_MAX_DEPTH,
				 arenas + (size_t)i * ORACLE_NAME_ARENA, c->ops)) < 0)
				c->failed = 1;
		t1 = mono_s();
		oracle_result_us(r, (t1 - t0) * 1e6);
		r->us_sampler_sum += (t1 - t0) * 1e6;
		if (c->failed) {
			r->errors++;
			continue;
		}
		r->samples++;
		for (int i = 0; i < c->nrec; i++)
			if (nfr[i])
				account(w, r, fr + (size_t)i * BPFPY_MAX_DEPTH, nfr[i],
					(int)c->recs[i].tid);
	}
	free(fr);
	free(arenas);
	free(nfr);
	return 0;
}

static int run_bpf(struct oracle_window *w, struct oracle_result *r, struct py_process *p,
		   struct code_cache *cache, struct diag *d)
{
	const struct oracle_plan *pl = w->p;
	int wall = w->mode->kind == MODE_BPF_WALL, timer = w->mode->kind == MODE_BPF_TIMER;
	struct bpf_sampler_opts so = {
	    .rate_hz = wall	      ? (pl->rate_khz > 0 ? pl->rate_khz * 1000 : 1000)
		       : w->mode->low ? fmin(pl->bpf_rate_hz, REF_BPF_HZ)
				      : pl->bpf_rate_hz,
	    .poisson = (pl->o->poisson || w->mode->low) && !wall,
	    .wall = wall,
	    /* bpf-native: the rules judge the Python frames; native ones are
	     * not theirs to name, only their cost is in the figures. */
	    .native = !strcmp(w->mode->name, "bpf-native"),
	};
	struct bpf_sampler *s = NULL;
	struct bpf_ctx c = {
	    .w = w, .r = r, .cache = cache, .wall = wall, .ops = oracle_wants_ops(w) ? p : NULL};
	struct async_side as = {0};
	uint64_t cnt[CNT__COUNT] = {0};
	struct oracle_gate g = {0};
	double start, deadline;
	int ret = -1;

	c.frames = calloc(BPFPY_MAX_DEPTH, sizeof(*c.frames));
	c.arena = malloc(ORACLE_NAME_ARENA);
	c.recs = wall ? calloc(MAX_THREADS, sizeof(*c.recs)) : NULL;
	if (!c.frames || !c.arena || (wall && !c.recs)) {
		diag_errno(d, ENOMEM, "oracle");
		goto out;
	}
	/* bpf-async: the task layout in the config before it is added. */
	if (w->mode->async) {
		if (async_side_open(&as, w, p, cache, 0, d))
			goto out;
		c.as = &as;
	}
	/* bpf-timer registers no process: on the target's CPU every tick
	 * finds no config for the running pid and returns (sampler.bpf.c). */
	if (bpf_sampler_open(&s, &so, d) || (!timer && bpf_sampler_add(s, p->pid, &p->cfg, d)))
		goto out;
	as.ts.sampler = s;
	code_cache_set_names(cache, bpf_sampler_code_name, s, (uint32_t)p->pid);
	if (bpf_sampler_start(s, d))
		goto out;
	/* Off until the gate's first "on" sub-window. */
	if (!wall && bpf_sampler_set_enabled(s, false)) {
		diag_errno(d, errno, "cannot pause the cpu clocks (PERF_EVENT_IOC_DISABLE)");
		goto out;
	}
	start = mono_s();
	deadline = start + win_duration(w);
	c.start_ns = to_ns(start);
	c.deadline_ns = to_ns(deadline);
	gate_init(&g, w, start, wall ? NULL : bpf_toggle, s);
	if (oracle_gate_start(&g)) {
		diag_errno(d, errno, "oracle: cannot start the on/off thread");
		goto out;
	}
	if (!wall) {
		double now;

		while ((now = mono_s()) < deadline) {
			int ms = (int)((deadline - now) * 1000) + 1;

			bpf_sampler_poll(s, ms < 20 ? ms : 20, on_record, &c);
			if (c.as) /* asyncio imported late: the kernel gets the layout */
				async_targets_poll(&as.ts);
		}
	} else if (bpf_wall_loop(w, r, s, &c, cache, &g, start, deadline, d)) {
		goto out;
	}
	gate_finish(&g, r);
	r->elapsed = g.on_s;
	/* What the kernel wrote before the deadline still counts; stop the
	 * clock first, or a drain racing it may never end. */
	bpf_sampler_stop(s);
	if (!wall)
		while (bpf_sampler_poll(s, 0, on_record, &c) > 0)
			;
	if (!bpf_sampler_counters(s, cnt))
		r->lost = cnt[CNT_LOST];
	r->us_target_known = 1;
	ret = 0;
out:
	oracle_gate_stop(&g);
	code_cache_set_names(cache, NULL, NULL, 0);
	bpf_sampler_close(s);
	async_side_close(&as);
	free(c.frames);
	free(c.arena);
	free(c.recs);
	return ret;
}

/* Replace {pid} {rate_hz} {duration} {poisson} in cmd. */
static void expand(const char *cmd, const struct oracle_window *w, char *out, size_t len)
{
	size_t o = 0;

	for (const char *p = cmd; *p && o + 1 < len;) {
		char val[64] = "";
		size_t skip = 0;

		if (!strncmp(p, "{pid}", 5)) {
			snprintf(val, sizeof(val), "%d", w->t->pid);
			skip = 5;
		} else if (!strncmp(p, "{rate_hz}", 9)) {
			snprintf(val, sizeof(val), "%.0f", w->p->rate_khz * 1000);
			skip = 9;
		} else if (!strncmp(p, "{duration}", 10)) {
			snprintf(val, sizeof(val), "%g", w->p->o->duration);
			skip = 10;
		} else if (!strncmp(p, "{poisson}", 9)) {
			snprintf(val, sizeof(val), "%d", w->p->o->poisson);
			skip = 9;
		}
		if (skip) {
			o += (size_t)snprintf(out + o, len - o, "%s", val);
			if (o >= len)
				o = len - 1;
			p += skip;
		} else {
			out[o++] = *p++;
		}
	}
	out[o] = 0;
}

/* An external tool's stdout, read with a deadline and a bound on lines: a
 * tool that hangs, or prints one endless line, must not hang or exhaust us. */
#define EXT_LINE_MAX (1u << 20)

struct ext_reader {
	int fd;
	char *buf; /* EXT_LINE_MAX + 1 */
	size_t len;
	int skipping; /* inside a line too long: dropping it up to its '\n' */
};

/* Next line (a new string, its '\n' removed) in *out: 1; 0 at the end of
 * the output; -1 at the deadline. A line over EXT_LINE_MAX comes out as
 * "E line over N bytes" (a failed attempt: the tool said something, and
 * it was not a stack we can judge). */
static int ext_next_line(struct ext_reader *x, double deadline, char **out)
{
	for (;;) {
		char *nl = x->len ? memchr(x->buf, '\n', x->len) : NULL;
		struct pollfd pfd = {.fd = x->fd, .events = POLLIN};
		double left;
		ssize_t n;

		if (nl) {
			size_t l = (size_t)(nl - x->buf);
			int was = x->skipping;

			*out = was ? NULL : strndup(x->buf, l);
			memmove(x->buf, nl + 1, x->len - l - 1);
			x->len -= l + 1;
			x->skipping = 0;
			if (was)
				continue;
			return *out ? 1 : -1;
		}
		if (x->len == EXT_LINE_MAX) {
			x->len = 0;
			if (!x->skipping) {
				x->skipping = 1;
				if (asprintf(out, "E line over %u bytes", EXT_LINE_MAX) < 0)
					return -1;
				return 1;
			}
		}
		left = deadline - mono_s();
		if (left <= 0)
			return -1;
		if (poll(&pfd, 1, left > 1 ? 1000 : (int)(left * 1000) + 1) < 0 && errno != EINTR)
			return -1;
		if (!(pfd.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = read(x->fd, x->buf + x->len, EXT_LINE_MAX - x->len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			/* The last line may lack its '\n'. */
			if (x->len && !x->skipping) {
				*out = strndup(x->buf, x->len);
				x->len = 0;
				return *out ? 1 : -1;
			}
			return 0;
		}
		x->len += (size_t)n;
	}
}

/* How long a tool may take to start (an interpreter importing its unwinder,
 * under load) and to end once told to. */
#define EXT_START_S 30.0
#define EXT_GRACE_S 5.0

/* Reap the tool, SIGKILLing its process group at the deadline. */
static int ext_reap(pid_t pid, double deadline)
{
	int st = 0;

	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);

		if (w == pid || (w < 0 && errno != EINTR))
			return st;
		if (mono_s() > deadline) {
			kill(-pid, SIGKILL);
			while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
				;
			return st;
		}
		usleep(5000);
	}
}

/* One run of an external sampler: its stacks of the attempt being read
 * (a grouped tool's threads until its 'E' line), and its window. */
struct ext_run {
	struct rule_frame *fr;	/* BPFPY_MAX_DEPTH: the line being parsed */
	struct rule_frame *att; /* MAX_THREADS * BPFPY_MAX_DEPTH */
	char **att_lines;	/* MAX_THREADS: each stack's line (names point in) */
	int att_n[MAX_THREADS]; /* frames per stack */
	int att_tid[MAX_THREADS];
	int natt;
	pid_t pid;
	double start, deadline, hard; /* the window, and when we stop reading */
	int late, grouped, ended;
};

static void ext_drop_attempt(struct ext_run *e)
{
	for (int i = 0; i < e->natt; i++)
		free(e->att_lines[i]);
	e->natt = 0;
}

static void ext_run_free(struct ext_run *e)
{
	if (e->att_lines)
		ext_drop_attempt(e);
	free(e->fr);
	free(e->att);
	free(e->att_lines);
}

/* The tool, in its own process group (its children end with it), with its
 * stdout on fds[1] and the target and the plan in its environment. */
static pid_t ext_spawn(const struct oracle_window *w, const char *cmd, int fds[2])
{
	const struct oracle_plan *pl = w->p;
	char env[4][64];
	pid_t pid;

	snprintf(env[0], sizeof(env[0]), "%d", w->t->pid);
	snprintf(env[1], sizeof(env[1]), "%.0f", pl->rate_khz * 1000);
	snprintf(env[2], sizeof(env[2]), "%g", pl->o->duration);
	snprintf(env[3], sizeof(env[3]), "%d", pl->o->poisson);
	pid = fork();
	if (pid)
		return pid;
	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	dup2(fds[1], 1);
	setenv("BPFPY_PID", env[0], 1);
	setenv("BPFPY_RATE_HZ", env[1], 1);
	setenv("BPFPY_DURATION", env[2], 1);
	setenv("BPFPY_POISSON", env[3], 1);
	execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
	_exit(127);
}

/* 'S [late SECS] [grouped]': the tool starts sampling now, so the window
 * begins (its start-up is not in the slowdown). 'late SECS': it sampled the
 * SECS before this line and its stacks follow (a tool that writes its
 * profile at the end). */
static void ext_on_start(struct ext_run *e, const char *line, double now, double duration)
{
	const char *lt = strstr(line, "late");
	double ago = lt ? strtod(lt + 4, NULL) : 0;

	e->start = now;
	e->deadline = e->start + duration;
	if (lt && ago > 0 && ago <= duration + EXT_START_S) {
		e->late = 1;
		e->start = now - ago;
		e->deadline = now;
	}
	e->hard = (e->late ? now : e->deadline) + EXT_GRACE_S;
	e->grouped = strstr(line, "grouped") != NULL;
}

/* One line of the protocol after 'S' (takes line). A stack is kept until its
 * attempt ends: at once for an ungrouped tool, at 'E' for a grouped one. */
static void ext_on_line(struct oracle_window *w, struct oracle_result *r, struct ext_run *e,
			char *line, double now)
{
	struct ext_line el;
	enum ext_kind k = oracle_ext_parse(line, &el, e->fr, BPFPY_MAX_DEPTH);

	/* A tool that overruns: what it says after the deadline (plus the
	 * pipe's latency) is not counted. */
	if (!e->late && now > e->deadline + 0.25) {
		if (!e->ended) {
			kill(-e->pid, SIGTERM);
			e->ended = 1;
		}
		free(line);
		return;
	}
	if (k == EXT_ERROR) {
		r->attempts++;
		r->errors++;
		ext_drop_attempt(e);
	} else if (k == EXT_STACK && e->natt < MAX_THREADS) {
		memcpy(e->att + (size_t)e->natt * BPFPY_MAX_DEPTH, e->fr,
		       (size_t)el.nframes * sizeof(*e->fr));
		e->att_lines[e->natt] = line; /* names point into line: keep it */
		line = NULL;
		e->att_n[e->natt] = el.nframes;
		e->att_tid[e->natt] = el.tid;
		e->natt++;
	}
	free(line);
	if (k == EXT_END || (k == EXT_STACK && !e->grouped)) {
		r->attempts++;
		r->samples++;
		if (k == EXT_END && !isnan(el.us)) {
			oracle_result_us(r, el.us);
			r->us_sampler_sum += el.us;
		}
		for (int i = 0; i < e->natt; i++)
			account(w, r, e->att + (size_t)i * BPFPY_MAX_DEPTH, e->att_n[i],
				e->att_tid[i]);
		ext_drop_attempt(e);
	}
}

/* An external sampler: the tool-absent half of the slowdown first, then the
 * tool, its lines read to its deadline, then it is reaped. */
static int run_external(struct oracle_window *w, struct oracle_result *r, struct diag *d)
{
	const struct oracle_plan *pl = w->p;
	char cmd[8192], *line = NULL;
	struct ext_run e = {
	    .fr = calloc(BPFPY_MAX_DEPTH, sizeof(*e.fr)),
	    .att = calloc((size_t)MAX_THREADS * BPFPY_MAX_DEPTH, sizeof(*e.att)),
	    .att_lines = calloc(MAX_THREADS, sizeof(char *)),
	    .deadline = INFINITY,
	};
	struct ext_reader x = {.buf = malloc(EXT_LINE_MAX + 1), .fd = -1};
	struct oracle_plog *lg = calloc(1, sizeof(*lg));
	int fds[2] = {-1, -1}, st, rc;
	double off0, off1;

	if (!lg || !e.fr || !e.att || !e.att_lines || !x.buf || pipe2(fds, O_CLOEXEC)) {
		rc = diag_errno(d, errno ? errno : ENOMEM, "oracle external");
		goto out;
	}
	expand(w->mode->cmd, w, cmd, sizeof(cmd));
	/* The tool-absent half of the slowdown (oracle_gate.h), just before
	 * the tool starts, as long as its window. */
	if (oracle_plog_start(lg, w->t->progress))
		snprintf(r->note, sizeof(r->note), "cannot log progress: %s", strerror(errno));
	off0 = mono_s();
	oracle_sleep_until(off0 + pl->o->duration);
	off1 = mono_s();
	e.start = mono_s();
	e.hard = e.start + EXT_START_S + pl->o->duration;
	e.pid = ext_spawn(w, cmd, fds);
	if (e.pid < 0) {
		oracle_plog_stop(lg);
		close(fds[0]);
		close(fds[1]);
		rc = diag_errno(d, errno, "fork");
		goto out;
	}
	setpgid(e.pid, e.pid);
	close(fds[1]);
	x.fd = fds[0];
	while ((rc = ext_next_line(&x, e.hard, &line)) > 0) {
		if (line[0] == 'S' && (line[1] == ' ' || !line[1])) {
			ext_on_start(&e, line, mono_s(), pl->o->duration);
			free(line);
		} else {
			ext_on_line(w, r, &e, line, mono_s());
		}
		line = NULL;
	}
	oracle_plog_stop(lg);
	r->elapsed = fmin(mono_s(), e.deadline) - e.start;
	if (!oracle_plog_slowdown(lg, off0, off1, e.start, e.start + r->elapsed, &r->slowdown,
				  &r->slowdown_ci, &r->progress_rate, &r->off_rate))
		r->pairs = 0; /* unpaired: see oracle_gate.h */
	close(x.fd);
	if (rc < 0) {
		/* Silent past every deadline: it is not waited for. */
		kill(-e.pid, SIGKILL);
		e.ended = 1;
		snprintf(r->note, sizeof(r->note), "external sampler %s at its deadline",
			 isinf(e.deadline) ? "had not begun sampling" : "was still running");
	}
	st = ext_reap(e.pid, mono_s() + EXT_GRACE_S);
	if (!e.ended && (!WIFEXITED(st) || WEXITSTATUS(st)))
		snprintf(r->note, sizeof(r->note), "external sampler exited with status %d",
			 WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	r->us_target_known = 0;
	rc = 0;
out:
	free(lg);
	free(x.buf);
	ext_run_free(&e);
	return rc;
}

int oracle_mode_run(struct oracle_window *w, struct oracle_result *r, struct diag *d)
{
	struct py_process p;
	struct code_cache *cache;
	int ret;

	if (py_process_open(&p, w->t->pid, 0, d))
		return -1;
	w->version_hex = p.bin.version_hex;
	/* A case judged on instructions: every reader of the walker reads the
	 * leaf's instruction byte, as record --opcodes does (walk_leaf_op). */
	if (oracle_wants_ops(w))
		p.cfg.flags |= PROC_OPCODES;
	if (w->mode->kind == MODE_EXTERNAL)
		return run_external(w, r, d);
	cache = code_cache_new(&p.mem, &p.cfg.off, 0);
	if (!cache)
		return diag_errno(d, ENOMEM, "oracle");
	if (w->mode->kind == MODE_PTRACE || w->mode->kind == MODE_LIVE)
		ret = run_walker(w, r, &p, cache, d);
	else
		ret = run_bpf(w, r, &p, cache, d);
	code_cache_free(cache);
	return ret;
}
