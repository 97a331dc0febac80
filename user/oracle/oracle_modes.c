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
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bpf_sampler.h"
#include "code_cache.h"
#include "oracle_run.h"
#include "ptrace_stop.h"
#include "py_process.h"
#include "stack_reader.h"

/* Threads read per attempt at most (the snippets have a handful). */
#define MAX_THREADS 128
/* Names of one stack, copied out of the code cache before the next lookup. */
#define ARENA	65536
#define KEY_MAX 16384

int oracle_result_init(struct oracle_result *r)
{
	memset(r, 0, sizeof(*r));
	r->dist = keydist_new();
	r->imp = keydist_new();
	r->phases = keydist_new();
	r->verdicts = keydist_new();
	r->rstate = rules_state_new();
	r->raw_tvd = r->tvd_floor = r->tvd_excess = r->tvd_noise = NAN;
	r->tvd_fn = r->tvd_truth = r->slowdown = r->progress_rate = NAN;
	return r->dist && r->imp && r->phases && r->verdicts && r->rstate ? 0 : -1;
}

void oracle_result_free(struct oracle_result *r)
{
	keydist_free(r->dist);
	keydist_free(r->imp);
	keydist_free(r->phases);
	keydist_free(r->verdicts);
	keydist_free(r->truth);
	rules_state_free(r->rstate);
	free(r->seq);
	memset(r, 0, sizeof(*r));
}

/* Verdict cache values: bit 0 known, bit 1 impossible, bits 2+: truth phase + 1. */
static void account(struct oracle_window *w, struct oracle_result *r, const struct rule_frame *fr,
		    int n, int tid)
{
	const struct rules *rules = w->c->rules;
	char key[KEY_MAX];
	int fam = rules_has_families(rules), phase = -1;
	unsigned v = 0;
	const char *k;

	oracle_key_build(fr, n, key, sizeof(key));
	r->stacks++;
	if (!fam)
		v = (unsigned)keydist_get(r->verdicts, key);
	if (!v) {
		int possible = rules_match(rules, r->rstate, fr, n, tid, w->version_hex, NULL);

		phase = rules_truth_classify(rules, w->version_hex, fr, n);
		v = 1u | (possible ? 0u : 2u) | (unsigned)(phase + 1) << 2;
		if (!fam)
			keydist_add(r->verdicts, key, v);
	}
	phase = (int)(v >> 2) - 1;
	if (v & 2) {
		r->impossible++;
		keydist_add(r->imp, key, 1);
		return;
	}
	k = keydist_add(r->dist, key, 1);
	if (k) {
		if (r->nseq == r->capseq) {
			size_t cap = r->capseq ? r->capseq * 2 : 4096;
			const char **s = realloc(r->seq, cap * sizeof(*s));

			if (!s)
				return;
			r->seq = s;
			r->capseq = cap;
		}
		r->seq[r->nseq++] = k;
	}
	if (phase >= 0) {
		const struct rule_truth *t[64];
		int nt = rules_truths(rules, w->version_hex, t, 64);

		if (phase < nt)
			keydist_add(r->phases, t[phase]->key, 1);
	}
}

/* Symbolize a stack read by the walker into fr (names copied into arena):
 * the frame count, or -1 when a frame cannot be named. */
static int symbolize(struct code_cache *cache, const struct thread_stack *ts, struct rule_frame *fr,
		     char *arena)
{
	size_t used = 0;
	int n = 0;

	for (uint32_t i = 0; i < ts->nframes && i < BPFPY_MAX_DEPTH; i++) {
		struct sym_frame sf;
		const char *name;
		size_t l;

		/* A frame that cannot be named makes the sample an error. */
		if (code_cache_symbolize(cache, &ts->frames[i], &sf) != CODE_OK)
			return -1;
		name = sf.name ? sf.name : CODE_CACHE_UNKNOWN;
		l = strlen(name) + 1;
		if (used + l > ARENA)
			break;
		memcpy(arena + used, name, l);
		fr[n].name = arena + used;
		used += l;
		/* The file only feeds rules that name files (code_object_reuse);
		 * it is copied the same way. */
		name = sf.file ? sf.file : "";
		l = strlen(name) + 1;
		if (used + l > ARENA)
			break;
		memcpy(arena + used, name, l);
		fr[n].file = arena + used;
		used += l;
		fr[n].line = sf.line > 0 ? sf.line : 0;
		n++;
	}
	return n;
}

static int thread_key(const struct thread_stack *ts)
{
	return ts->tid ? (int)ts->tid : (int)(ts->pthread_id ^ (ts->pthread_id >> 32));
}

struct scratch {
	struct thread_stack *stacks;
	struct rule_frame (*frames)[BPFPY_MAX_DEPTH];
	int *nframes;
	char *arena; /* MAX_THREADS x ARENA */
};

static int scratch_new(struct scratch *s)
{
	s->stacks = calloc(MAX_THREADS, sizeof(*s->stacks));
	s->frames = calloc(MAX_THREADS, sizeof(*s->frames));
	s->nframes = calloc(MAX_THREADS, sizeof(*s->nframes));
	s->arena = malloc((size_t)MAX_THREADS * ARENA);
	return s->stacks && s->frames && s->nframes && s->arena ? 0 : -1;
}

static void scratch_free(struct scratch *s)
{
	free(s->stacks);
	free(s->frames);
	free(s->nframes);
	free(s->arena);
}

/* ptrace and live: the user-space walker on the schedule. */
static int run_walker(struct oracle_window *w, struct oracle_result *r, struct py_process *p,
		      struct code_cache *cache, struct diag *d)
{
	const struct oracle_plan *pl = w->p;
	int blocking = w->mode->kind == MODE_PTRACE;
	struct stopper st = {0};
	struct oracle_sched sc;
	struct scratch s;
	double t, start, deadline;
	uint64_t p0;
	int ret = 0;

	if (scratch_new(&s)) {
		scratch_free(&s);
		return diag_errno(d, ENOMEM, "oracle");
	}
	/* Seized once, before the window: attaching is not a sample's cost. */
	if (blocking && stopper_attach(&st, w->t->pid, d)) {
		scratch_free(&s);
		return -1;
	}
	start = mono_s();
	deadline = start + pl->o->duration;
	p0 = oracle_target_progress(w->t);
	oracle_sched_init(&sc, start, pl->o->duration, pl->rate_khz * 1000, pl->o->poisson,
			  w->seed);
	while (oracle_sched_next(&sc, &t)) {
		struct diag dd = {0};
		double t0, t1;
		int count = 0, rc, bad = 0, shown;

		oracle_sleep_until(t);
		t0 = mono_s();
		if (t0 >= deadline)
			break;
		r->attempts++;
		if (blocking && stopper_stop(&st, &dd)) {
			if (dd.code == EXIT_NO_PROCESS) {
				r->attempts--;
				snprintf(r->note, sizeof(r->note), "target exited: %.200s", dd.msg);
				break;
			}
			r->errors++;
			continue;
		}
		rc = stack_read_all(&p->mem, &p->cfg, s.stacks, MAX_THREADS, &count, &dd);
		if (blocking) {
			stopper_resume(&st, &dd);
			r->us_target_sum += st.last_stopped_ns / 1e3;
		}
		shown = count < MAX_THREADS ? count : MAX_THREADS;
		for (int i = 0; !rc && i < shown; i++)
			if (s.stacks[i].flags & SAMPLE_ERROR)
				bad = 1;
		/* Names are read after the resume: the fingerprints say whether a
		 * code object changed meanwhile. */
		for (int i = 0; !rc && !bad && i < shown; i++)
			if ((s.nframes[i] = symbolize(cache, &s.stacks[i], s.frames[i],
						      s.arena + (size_t)i * ARENA)) < 0)
				bad = 1;
		t1 = mono_s();
		r->us_sum += (t1 - t0) * 1e6;
		r->us_sampler_sum += (t1 - t0) * 1e6;
		if (rc || bad) {
			r->errors++;
			continue;
		}
		r->samples++;
		for (int i = 0; i < shown; i++)
			if (s.nframes[i])
				account(w, r, s.frames[i], s.nframes[i], thread_key(&s.stacks[i]));
	}
	r->elapsed = mono_s() - start;
	r->progress_rate = (double)(oracle_target_progress(w->t) - p0) / r->elapsed;
	r->us_target_known = 1;
	if (blocking)
		stopper_detach(&st);
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
		r->us_sum += h->cost_ns / 1e3;
		return 0;
	}
	ts.tid = h->tid;
	ts.nframes = h->nframes < BPFPY_MAX_DEPTH ? h->nframes : BPFPY_MAX_DEPTH;
	memcpy(ts.frames, frames, ts.nframes * sizeof(*frames));
	n = symbolize(c->cache, &ts, c->frames, c->arena);
	{
		double us = (mono_s() - t0) * 1e6;

		r->us_sampler_sum += us;
		r->us_sum += us + h->cost_ns / 1e3;
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

static int run_bpf(struct oracle_window *w, struct oracle_result *r, struct py_process *p,
		   struct code_cache *cache, struct diag *d)
{
	const struct oracle_plan *pl = w->p;
	int wall = w->mode->kind == MODE_BPF_WALL;
	struct bpf_sampler_opts so = {
	    .rate_hz = wall ? (pl->rate_khz > 0 ? pl->rate_khz * 1000 : 1000) : pl->bpf_rate_hz,
	    .poisson = pl->o->poisson && !wall,
	    .wall = wall,
	};
	struct bpf_sampler *s = NULL;
	struct bpf_ctx c = {.w = w, .r = r, .cache = cache, .wall = wall};
	uint64_t cnt[CNT__COUNT] = {0};
	double start, deadline, t;
	uint64_t p0;
	int ret = -1;

	c.frames = calloc(BPFPY_MAX_DEPTH, sizeof(*c.frames));
	c.arena = malloc(ARENA);
	c.recs = wall ? calloc(MAX_THREADS, sizeof(*c.recs)) : NULL;
	if (!c.frames || !c.arena || (wall && !c.recs)) {
		diag_errno(d, ENOMEM, "oracle");
		goto out;
	}
	if (bpf_sampler_open(&s, &so, d) || bpf_sampler_add(s, p->pid, &p->cfg, d))
		goto out;
	code_cache_set_names(cache, bpf_sampler_code_name, s, (uint32_t)p->pid);
	start = mono_s();
	deadline = start + pl->o->duration;
	c.start_ns = to_ns(start);
	c.deadline_ns = to_ns(deadline);
	p0 = oracle_target_progress(w->t);
	if (bpf_sampler_start(s, d))
		goto out;
	if (!wall) {
		double now;

		while ((now = mono_s()) < deadline) {
			int ms = (int)((deadline - now) * 1000) + 1;

			bpf_sampler_poll(s, ms < 20 ? ms : 20, on_record, &c);
		}
	} else {
		struct oracle_sched sc;
		struct rule_frame *fr = calloc((size_t)MAX_THREADS * BPFPY_MAX_DEPTH, sizeof(*fr));
		char *arenas = malloc((size_t)MAX_THREADS * ARENA);
		int *nfr = calloc(MAX_THREADS, sizeof(int));

		if (!fr || !arenas || !nfr) {
			free(fr);
			free(arenas);
			free(nfr);
			diag_errno(d, ENOMEM, "oracle");
			goto out;
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
			r->attempts++;
			c.nrec = 0;
			c.failed = bpf_sampler_snapshot(s, &dd) != 0;
			while (bpf_sampler_poll(s, 0, on_record, &c) > 0)
				;
			for (int i = 0; !c.failed && i < c.nrec; i++)
				if ((nfr[i] = symbolize(cache, &c.recs[i],
							fr + (size_t)i * BPFPY_MAX_DEPTH,
							arenas + (size_t)i * ARENA)) < 0)
					c.failed = 1;
			t1 = mono_s();
			r->us_sum += (t1 - t0) * 1e6;
			r->us_sampler_sum += (t1 - t0) * 1e6;
			if (c.failed) {
				r->errors++;
				continue;
			}
			r->samples++;
			for (int i = 0; i < c.nrec; i++)
				if (nfr[i])
					account(w, r, fr + (size_t)i * BPFPY_MAX_DEPTH, nfr[i],
						(int)c.recs[i].tid);
		}
		free(fr);
		free(arenas);
		free(nfr);
	}
	r->elapsed = mono_s() - start;
	r->progress_rate = (double)(oracle_target_progress(w->t) - p0) / r->elapsed;
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
	code_cache_set_names(cache, NULL, NULL, 0);
	bpf_sampler_close(s);
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

static int run_external(struct oracle_window *w, struct oracle_result *r, struct diag *d)
{
	const struct oracle_plan *pl = w->p;
	char cmd[8192], env[4][64], *line = NULL;
	struct rule_frame *fr = calloc(BPFPY_MAX_DEPTH, sizeof(*fr));
	struct rule_frame *att = calloc((size_t)MAX_THREADS * BPFPY_MAX_DEPTH, sizeof(*att));
	char **att_lines = calloc(MAX_THREADS, sizeof(char *));
	int att_n[MAX_THREADS], att_tid[MAX_THREADS], natt = 0, fds[2], st, ended = 0, grouped = 0;
	double start, deadline = INFINITY, spawn;
	uint64_t p0;
	size_t cap = 0;
	pid_t pid;
	FILE *f;

	if (!fr || !att || !att_lines || pipe2(fds, O_CLOEXEC)) {
		free(fr);
		free(att);
		free(att_lines);
		return diag_errno(d, errno ? errno : ENOMEM, "oracle external");
	}
	expand(w->mode->cmd, w, cmd, sizeof(cmd));
	snprintf(env[0], sizeof(env[0]), "%d", w->t->pid);
	snprintf(env[1], sizeof(env[1]), "%.0f", pl->rate_khz * 1000);
	snprintf(env[2], sizeof(env[2]), "%g", pl->o->duration);
	snprintf(env[3], sizeof(env[3]), "%d", pl->o->poisson);
	spawn = mono_s();
	p0 = oracle_target_progress(w->t);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		free(fr);
		free(att);
		free(att_lines);
		return diag_errno(d, errno, "fork");
	}
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fds[1], 1);
		setenv("BPFPY_PID", env[0], 1);
		setenv("BPFPY_RATE_HZ", env[1], 1);
		setenv("BPFPY_DURATION", env[2], 1);
		setenv("BPFPY_POISSON", env[3], 1);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	start = spawn;
	while (f && getline(&line, &cap, f) >= 0) {
		struct ext_line el;
		enum ext_kind k;
		double now = mono_s();

		if (!strncmp(line, "S", 1) && (line[1] == '\n' || line[1] == ' ' || !line[1])) {
			/* The tool starts sampling now: the window begins. */
			start = now;
			p0 = oracle_target_progress(w->t);
			deadline = start + pl->o->duration;
			grouped = strstr(line, "grouped") != NULL;
			continue;
		}
		k = oracle_ext_parse(line, &el, fr, BPFPY_MAX_DEPTH);
		/* A tool that overruns: what it says after the deadline (plus
		 * the pipe's latency) is not counted. */
		if (now > deadline + 0.25) {
			if (!ended) {
				kill(pid, SIGTERM);
				ended = 1;
			}
			continue;
		}
		if (k == EXT_ERROR) {
			r->attempts++;
			r->errors++;
			natt = 0;
		} else if (k == EXT_STACK) {
			if (natt < MAX_THREADS) {
				memcpy(att + (size_t)natt * BPFPY_MAX_DEPTH, fr,
				       (size_t)el.nframes * sizeof(*fr));
				/* names point into line: keep the line */
				att_lines[natt] = line;
				line = NULL;
				cap = 0;
				att_n[natt] = el.nframes;
				att_tid[natt] = el.tid;
				natt++;
			}
		}
		if (k == EXT_END || (k == EXT_STACK && !grouped)) {
			r->attempts++;
			r->samples++;
			if (k == EXT_END && !isnan(el.us)) {
				r->us_sum += el.us;
				r->us_sampler_sum += el.us;
			}
			for (int i = 0; i < natt; i++) {
				account(w, r, att + (size_t)i * BPFPY_MAX_DEPTH, att_n[i],
					att_tid[i]);
				free(att_lines[i]);
			}
			natt = 0;
		}
	}
	r->elapsed = mono_s() - start;
	r->progress_rate = (double)(oracle_target_progress(w->t) - p0) / r->elapsed;
	for (int i = 0; i < natt; i++)
		free(att_lines[i]);
	free(line);
	if (f)
		fclose(f);
	waitpid(pid, &st, 0);
	if (!ended && (!WIFEXITED(st) || WEXITSTATUS(st)))
		snprintf(r->note, sizeof(r->note), "external sampler exited with status %d",
			 WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	r->us_target_known = 0;
	free(fr);
	free(att);
	free(att_lines);
	return 0;
}

int oracle_mode_run(struct oracle_window *w, struct oracle_result *r, struct diag *d)
{
	struct py_process p;
	struct code_cache *cache;
	double start;
	uint64_t p0;
	int ret;

	if (w->mode->kind == MODE_NONE) {
		/* The unsampled baseline: only the progress counter is read. */
		start = mono_s();
		p0 = oracle_target_progress(w->t);
		oracle_sleep_until(start + w->p->o->duration);
		r->elapsed = mono_s() - start;
		r->progress_rate = (double)(oracle_target_progress(w->t) - p0) / r->elapsed;
		return 0;
	}
	if (py_process_open(&p, w->t->pid, 0, d))
		return -1;
	w->version_hex = p.bin.version_hex;
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
