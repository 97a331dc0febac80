// SPDX-License-Identifier: MIT
#include "record_targets.h"
#include "async_stack.h"
#include "monotime.h"
#include "proc.h"
#include "text_escape.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A process just started has no interpreter for a few milliseconds: it is
 * retried on this many scans before being written off. */
#define NOT_READY_TRIES 40

struct rec_target *targets_find(struct target_set *ts, pid_t pid)
{
	for (int i = 0; i < ts->n; i++)
		if (ts->t[i]->pid == pid && !ts->t[i]->exited)
			return ts->t[i];
	return NULL;
}

struct rec_target *targets_of_record(struct target_set *ts, struct rec_target **last,
				     const struct sample_hdr *h)
{
	struct rec_target *t = *last;

	/* Skip the scan of every target (dead ones too, with -a) per sample. */
	if (!t || t->exited || t->pid != (pid_t)h->pid)
		t = *last = targets_find(ts, (pid_t)h->pid);
	return t && h->ts_ns >= t->since_ns ? t : NULL;
}

int targets_symbolize(struct rec_target *t, const struct sample_hdr *h,
		      const struct frame_rec *frames, struct sym_frame *out)
{
	int unnamed = 0;

	for (uint32_t i = 0; i < h->nframes && i < BPFPY_MAX_DEPTH; i++)
		unnamed |= code_cache_symbolize(t->cache, &frames[i], &out[i]) != CODE_OK;
	if (unnamed)
		code_cache_end_sample(t->cache);
	return unnamed ? -1 : 0;
}

/* A target just registered: what the kernel can learn of it now, rather
 * than at its first samples. */
static void sampler_learn(struct target_set *ts, struct rec_target *t)
{
	struct diag hd = {0};

	/* names of code freed before we read them */
	code_cache_set_names(t->cache, bpf_sampler_code_name, ts->sampler, (uint32_t)t->pid);
	/* Threads spawned and ended from now on (before the seed, so that
	 * none falls between them); without, they are searched for. */
	if (bpf_sampler_watch_threads(ts->sampler, t->pid, &t->proc->bin,
				      t->proc->cfg.off.version_hex, &hd) &&
	    ts->verbose) {
		fputs("bpfpy: note: ", stderr);
		text_put(stderr, hd.msg);
		fputc('\n', stderr);
	}
	bpf_sampler_seed(ts->sampler, t->pid, &t->proc->mem, &t->proc->cfg, &t->proc->extra.obj);
}

int targets_add(struct target_set *ts, pid_t pid, struct diag *d)
{
	struct rec_target *t;

	if (targets_find(ts, pid))
		return 0;
	if (ts->n == ts->cap) {
		int cap = ts->cap ? ts->cap * 2 : 16;
		struct rec_target **nt = realloc(ts->t, cap * sizeof(*nt));

		if (!nt)
			return diag_errno(d, ENOMEM, "targets");
		ts->t = nt;
		ts->cap = cap;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return diag_errno(d, ENOMEM, "targets");
	t->proc = malloc(sizeof(*t->proc));
	if (!t->proc) {
		diag_errno(d, ENOMEM, "targets");
		goto fail;
	}
	if (py_process_open(t->proc, pid, ts->max_depth, d))
		goto fail;
	t->pid = pid;
	snprintf(t->comm, sizeof(t->comm), "%s", t->proc->comm);
	snprintf(t->version, sizeof(t->version), "%s", t->proc->version);
	if (t->proc->cfg.off.version_hex == 0)
		t->proc->cfg.off.version_hex = t->proc->bin.version_hex;
	t->starttime = proc_starttime(pid);
	{
		char link[64];
		ssize_t n;

		snprintf(link, sizeof(link), "/proc/%d/root", (int)pid);
		n = readlink(link, t->root, sizeof(t->root));
		t->root[n > 0 && (size_t)n < sizeof(t->root) ? n : 0] = 0;
	}
	{
		char cg[sizeof(t->cgroup)];

		if (proc_cgroup(pid, cg, sizeof(cg)) == 0) {
			text_escape(t->cgroup, sizeof(t->cgroup), cg, 0);
			if (!cgroup_container_id(cg, t->container, sizeof(t->container)))
				t->container[0] = 0;
		}
	}
	t->since_ns = mono_ns();
	t->cache = code_cache_new(&t->proc->mem, &t->proc->cfg.off, 0);
	if (!t->cache) {
		diag_errno(d, ENOMEM, "pid %d: code cache", pid);
		goto fail;
	}
	if (ts->no_gc)
		t->proc->cfg.gc_collecting_addr = 0;
	if (ts->opcodes)
		t->proc->cfg.flags |= PROC_OPCODES;
	if (ts->exception) {
		if (!t->proc->cfg.off.tstate_exc_info) {
			diag_set(d, EXIT_UNSUPPORTED,
				 "pid %d: Python %s: the thread state's exception fields are not "
				 "known: no --exception",
				 pid, t->version);
			code_cache_free(t->cache);
			goto fail;
		}
		t->proc->cfg.flags |= PROC_EXCEPTION;
	}
	if (ts->async && async_target_open(t, !ts->all, d)) {
		code_cache_free(t->cache);
		goto fail;
	}
	if (ts->sampler && bpf_sampler_add(ts->sampler, pid, &t->proc->cfg, d)) {
		code_cache_free(t->cache);
		async_target_free(t);
		goto fail;
	}
	if (ts->sampler)
		sampler_learn(ts, t);
	t->pidfd = proc_pidfd_open(pid, t->starttime);
	ts->t[ts->n++] = t;
	if (ts->verbose) {
		char ec[64], ev[64], en[512];

		fprintf(stderr, "bpfpy: sampling pid %d (%s), CPython %s%s%s\n", pid,
			text_esc(t->proc->comm, ec, sizeof(ec)),
			text_esc(t->proc->version, ev, sizeof(ev)),
			t->proc->bin.ns_note[0] ? ", " : "",
			text_esc(t->proc->bin.ns_note, en, sizeof(en)));
	}
	return 0;
fail:
	/* Keep the flag before freeing the reader. */
	if (t->proc && t->proc->not_initialised)
		d->code = EXIT_NOT_PYTHON, d->sys_errno = EAGAIN;
	free(t->proc);
	free(t);
	return -1;
}

/* A process written off as not Python may exec one later (a shell that execs
 * python, or a fork caught before its exec): a written-off entry keeps, in
 * its negative tries, a tag of the executable it had, and is looked at again
 * when the executable changes. */
static int exe_tag(pid_t pid)
{
	unsigned long long dev, ino, h;

	if (proc_exe_id(pid, &dev, &ino))
		return -1;
	h = ino * 0x9e3779b97f4a7c15ull ^ dev;
	return -2 - (int)(h % 0x3ffffff0u);
}

static struct seen_pid *seen_find(struct target_set *ts, pid_t pid, unsigned long long st)
{
	for (int i = 0; i < ts->nseen; i++)
		if (ts->seen[i].pid == pid) {
			if (ts->seen[i].starttime != st) { /* PID reused: forget */
				ts->seen[i].starttime = st;
				ts->seen[i].tries = 0;
			}
			return &ts->seen[i];
		}
	if (ts->nseen == ts->seen_cap) {
		int cap = ts->seen_cap ? ts->seen_cap * 2 : 256;
		struct seen_pid *ns = realloc(ts->seen, cap * sizeof(*ns));

		if (!ns)
			return NULL;
		ts->seen = ns;
		ts->seen_cap = cap;
	}
	ts->seen[ts->nseen] = (struct seen_pid){.pid = pid, .starttime = st};
	return &ts->seen[ts->nseen++];
}

/* Is pid a descendant of a target (for --subprocesses)? */
static int is_descendant(struct target_set *ts, pid_t pid)
{
	for (int depth = 0; depth < 64 && pid > 1; depth++) {
		pid = proc_ppid(pid);
		if (targets_find(ts, pid) || (ts->launched > 0 && pid == ts->launched))
			return 1;
	}
	return 0;
}

static void follow_add(struct target_set *ts, pid_t pid)
{
	if (ts->nfollow == ts->follow_cap) {
		int cap = ts->follow_cap ? ts->follow_cap * 2 : 8;
		struct exec_follow *nf = realloc(ts->follow, cap * sizeof(*nf));

		if (!nf) {
			fprintf(stderr, "bpfpy: pid %d exec'd: out of memory, no longer sampled\n",
				pid);
			return;
		}
		ts->follow = nf;
		ts->follow_cap = cap;
	}
	ts->follow[ts->nfollow++] = (struct exec_follow){.pid = pid};
}

/* Resolve the new image of each target that exec'd. */
static int follow_retry(struct target_set *ts)
{
	int added = 0;

	for (int i = 0; i < ts->nfollow;) {
		struct exec_follow *f = &ts->follow[i];
		struct diag d = {0};

		if (!targets_add(ts, f->pid, &d)) {
			const struct rec_target *t = ts->t[ts->n - 1]; /* appended */
			char ec[64], ev[64];

			fprintf(stderr, "bpfpy: pid %d exec'd %s: sampling it again, CPython %s\n",
				f->pid, text_esc(t->comm, ec, sizeof(ec)),
				text_esc(t->version, ev, sizeof(ev)));
			added++;
		} else if (d.code == EXIT_NOT_PYTHON && d.sys_errno == EAGAIN &&
			   ++f->tries < NOT_READY_TRIES) {
			i++;
			continue;
		} else if (d.code != EXIT_NO_PROCESS) {
			fprintf(stderr, "bpfpy: pid %d exec'd, no longer sampled: ", f->pid);
			text_put(stderr, d.msg);
			fputc('\n', stderr);
		}
		*f = ts->follow[--ts->nfollow];
	}
	return added;
}

/* Look at one PID that may be a new target (fresh: it just exec'd, so
 * whatever we knew of its image is void). Returns 1 if it was added. */
static int consider(struct target_set *ts, pid_t pid, int fresh)
{
	unsigned long long st;
	struct seen_pid *s;
	struct diag d = {0};

	if (pid <= 0 || pid == getpid() || targets_find(ts, pid))
		return 0;
	st = proc_starttime(pid);
	s = seen_find(ts, pid, st);
	if (s && (fresh || (s->tries < 0 && s->tries != exe_tag(pid))))
		s->tries = 0; /* exec'd something else since: look again */
	if (!s || s->tries < 0 || s->tries >= NOT_READY_TRIES)
		return 0;
	if (!ts->all && pid != ts->launched && !is_descendant(ts, pid))
		return 0;
	if (!targets_add(ts, pid, &d))
		return 1;
	/* Not Python (or not supported): never again, unless it was only
	 * too young to have an interpreter yet. */
	if (d.code == EXIT_NOT_PYTHON && d.sys_errno == EAGAIN)
		s->tries++;
	else
		s->tries = exe_tag(pid);
	if (ts->verbose && d.code == EXIT_UNSUPPORTED) {
		fputs("bpfpy: skipping ", stderr);
		text_put(stderr, d.msg);
		fputc('\n', stderr);
	}
	return 0;
}

static void release(struct target_set *ts, struct rec_target *t);

/* Did live target t exec? Then it is done with (the kernel stopped
 * sampling it); returns 1. */
static int reap_exec(struct target_set *ts, struct rec_target *t)
{
	if (!ts->sampler || !bpf_sampler_take_exec(ts->sampler, t->pid))
		return 0;
	/* -a finds the PID again among the new processes, like any other. */
	t->exited = TARGET_EXECED;
	release(ts, t);
	if (!ts->all)
		follow_add(ts, t->pid);
	if (ts->verbose)
		fprintf(stderr, "bpfpy: pid %d exec'd: resolving its new image\n", t->pid);
	return 1;
}

/*
 * The processes the kernel saw exec, or fork from a target, since the last
 * scan (bpf_sampler_take_new), then the young ones not ready last time.
 * -1 when the kernel cannot tell (no hooks, or it dropped some): rescan.
 */
static int scan_new(struct target_set *ts)
{
	pid_t pids[256];
	int added = 0, n, lost, rounds = 0;

	/* At most a queue's worth (NEW_PIDS_MAX, 4096) a scan: an exec storm
	 * must not keep the loop from its clock, deadline and signals. */
	do {
		n = bpf_sampler_take_new(ts->sampler, pids, 256, &lost);
		if (n < 0 || lost)
			return -1;
		for (int i = 0; i < n; i++) {
			struct rec_target *t = targets_find(ts, pids[i]);

			if (t && !reap_exec(ts, t))
				continue; /* a live target that did not exec: nothing new */
			added += consider(ts, pids[i], 1);
		}
	} while (n == 256 && ++rounds < 16);
	for (int i = 0; i < ts->nseen; i++)
		if (ts->seen[i].tries > 0 && ts->seen[i].tries < NOT_READY_TRIES)
			added += consider(ts, ts->seen[i].pid, 0);
	return added;
}

int targets_scan(struct target_set *ts)
{
	DIR *dir;
	struct dirent *e;
	int added = follow_retry(ts), fresh;

	if (!ts->all && !ts->children)
		return added;
	/* After the first look at /proc, new processes come from the kernel's
	 * exec and fork events: the cost follows how often processes start,
	 * not how many exist (the whole /proc, a file read per process, four
	 * times a second, was most of what record -a spent). */
	if (ts->scanned >= 2 && ts->sampler && (fresh = scan_new(ts)) >= 0)
		return added + fresh;
	dir = opendir("/proc");
	if (!dir)
		return 0;
	while ((e = readdir(dir)) != NULL) {
		char *end;
		long v = strtol(e->d_name, &end, 10);

		if (*end || v <= 0)
			continue;
		added += consider(ts, (pid_t)v, 0);
	}
	closedir(dir);
	/* Two full looks: the first is taken before the clocks and the kernel
	 * hooks start, so a process born between it and them is seen only by
	 * the second, which comes after. */
	if (++ts->scanned == 2 && ts->verbose && ts->sampler &&
	    bpf_sampler_watches_new(ts->sampler))
		fprintf(stderr, "bpfpy: new processes from now on: exec and fork events\n");
	return added;
}

/* Called before a target's cache is freed, and for the summary: its size
 * now (the peak is kept), its lines_cut and lines_cut_copy added to
 * lines_cut[0] and [1]. */
static size_t note_cache(struct target_set *ts, const struct code_cache *c, uint64_t lines_cut[2])
{
	struct code_cache_stats st;

	if (!c)
		return 0;
	code_cache_get_stats(c, &st);
	if (st.size > ts->cache_peak)
		ts->cache_peak = st.size;
	lines_cut[0] += st.lines_cut;
	lines_cut[1] += st.lines_cut_copy;
	return st.size;
}

/* A target that exited or exec'd: only its summary stays. */
static void release(struct target_set *ts, struct rec_target *t)
{
	note_cache(ts, t->cache, ts->lines_cut_gone);
	code_cache_free(t->cache);
	t->cache = NULL;
	async_target_free(t);
	free(t->proc);
	t->proc = NULL;
	py_tnames_free(&t->tnames);
	if (t->pidfd >= 0)
		close(t->pidfd);
	t->pidfd = -1;
}

/* A target without a pidfd is checked with kill(0), and its PID-reuse check
 * (a file read per target) only every this many reaps: a reused PID must
 * first exit and be reborn, and an exec of the reborn one is caught by the
 * kernel anyway. */
#define REUSE_CHECK_EVERY 8

/* Target t exited, or its PID was reused: unregistered and released. */
static void drop_exited(struct target_set *ts, struct rec_target *t)
{
	t->exited = TARGET_EXITED;
	if (ts->sampler)
		bpf_sampler_remove(ts->sampler, t->pid);
	/* Records still in the ring buffer for this PID are dropped
	 * (targets_find skips exited targets), so nothing reads the cache
	 * again: free it now, or `record -a` on a host that churns processes
	 * grows by a cache per process (the soak). */
	release(ts, t);
}

/* Drop the live targets whose pidfd says they exited: one poll() for all. */
static void poll_exits(struct target_set *ts)
{
	int n = 0, k = 0;

	for (int i = 0; i < ts->n; i++)
		n += !ts->t[i]->exited && ts->t[i]->pidfd >= 0;
	if (!n)
		return;
	if (n > ts->polls_cap) {
		struct pollfd *p = realloc(ts->polls, (size_t)n * sizeof(*p));

		if (!p)
			return; /* looked at again next reap */
		ts->polls = p;
		ts->polls_cap = n;
	}
	for (int i = 0; i < ts->n; i++)
		if (!ts->t[i]->exited && ts->t[i]->pidfd >= 0)
			ts->polls[k++] = (struct pollfd){.fd = ts->t[i]->pidfd, .events = POLLIN};
	if (poll(ts->polls, (nfds_t)n, 0) <= 0)
		return;
	k = 0;
	for (int i = 0; i < ts->n; i++) {
		struct rec_target *t = ts->t[i];

		if (!t->exited && t->pidfd >= 0 && ts->polls[k++].revents)
			drop_exited(ts, t);
	}
}

int targets_reap(struct target_set *ts)
{
	int alive = 0, reuse_check = ts->reaps++ % REUSE_CHECK_EVERY == 0;
	int execs = ts->sampler && bpf_sampler_exec_pending(ts->sampler);

	poll_exits(ts);
	for (int i = 0; i < ts->n; i++) {
		struct rec_target *t = ts->t[i];

		if (t->exited || (execs && reap_exec(ts, t)))
			continue;
		if (t->pidfd < 0 && ((kill(t->pid, 0) && errno == ESRCH) ||
				     (reuse_check && proc_starttime(t->pid) != t->starttime))) {
			drop_exited(ts, t);
			continue;
		}
		alive++;
	}
	return alive + ts->nfollow;
}

size_t targets_cache_usage(struct target_set *ts, int *live_out, size_t *peak_out,
			   uint64_t lines_cut_out[2])
{
	size_t total = 0;
	int live = 0;

	lines_cut_out[0] = ts->lines_cut_gone[0];
	lines_cut_out[1] = ts->lines_cut_gone[1];
	for (int i = 0; i < ts->n; i++)
		if (ts->t[i]->cache) {
			total += note_cache(ts, ts->t[i]->cache, lines_cut_out);
			live++;
		}
	*live_out = live;
	*peak_out = ts->cache_peak;
	return total;
}

/* The target of pid's samples in a profile: the live one, else the one
 * registered last (a PID reused within one window keeps the first's). */
static struct rec_target *target_of_pid(struct target_set *ts, pid_t pid)
{
	struct rec_target *best = NULL;

	for (int i = 0; i < ts->n; i++)
		if (ts->t[i]->pid == pid && (!best || ts->t[i]->since_ns > best->since_ns))
			best = ts->t[i];
	return best;
}

int targets_label_profile(struct target_set *ts, struct profile *p)
{
	uint32_t last = 0;

	for (uint32_t i = 0; i < p->nthreads; i++) {
		uint32_t pid = p->threads[i].pid;
		struct rec_target *t;

		if (i && pid == last)
			continue;
		last = pid;
		uint32_t nl;

		if ((profile_proc_labels(p, pid, &nl) && nl) ||
		    !(t = target_of_pid(ts, (pid_t)pid)))
			continue;
		if ((!profile_comm(p, pid) && profile_set_comm(p, pid, t->comm)) ||
		    profile_set_proc_label(p, pid, "python_version", t->version) ||
		    (t->cgroup[0] && profile_set_proc_label(p, pid, "cgroup", t->cgroup)) ||
		    (t->container[0] && profile_set_proc_label(p, pid, "container", t->container)))
			return -1;
	}
	return 0;
}

void targets_compact(struct target_set *ts)
{
	int k = 0;

	for (int i = 0; i < ts->n; i++) {
		struct rec_target *t = ts->t[i];

		if (!t->exited) {
			ts->t[k++] = t;
			continue;
		}
		ts->gone++;
		ts->gone_samples += t->samples;
		ts->gone_errors += t->errors;
		if (t->proc) /* released when it exited, unless it never was */
			release(ts, t);
		free(t);
	}
	ts->n = k;
	k = 0;
	for (int i = 0; i < ts->nseen; i++) {
		struct seen_pid *s = &ts->seen[i];

		/* Gone (or reused: met afresh then) and not being retried. */
		if (s->tries <= 0 || s->tries >= NOT_READY_TRIES)
			if (proc_starttime(s->pid) != s->starttime)
				continue;
		ts->seen[k++] = *s;
	}
	ts->nseen = k;
}

void targets_free(struct target_set *ts)
{
	for (int i = 0; i < ts->n; i++) {
		code_cache_free(ts->t[i]->cache);
		async_target_free(ts->t[i]);
		free(ts->t[i]->proc);
		py_tnames_free(&ts->t[i]->tnames);
		if (ts->t[i]->pidfd >= 0)
			close(ts->t[i]->pidfd);
		free(ts->t[i]);
	}
	free(ts->t);
	free(ts->seen);
	free(ts->follow);
	free(ts->polls);
	memset(ts, 0, sizeof(*ts));
}
