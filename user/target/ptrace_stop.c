// SPDX-License-Identifier: MIT
/*
 * How a stop works, and why it is built this way.
 *
 * PTRACE_INTERRUPT guarantees one trap "after" the request. If the thread is
 * already sitting in a ptrace stop (a signal arrived, it cloned, it joined a
 * group stop) the trap is not consumed by that stop: it fires as soon as the
 * thread is continued, leaving the thread stopped behind our back until the
 * next sample -- and if we interrupted it again then, forever. So a thread is
 * interrupted only when it is not known to be stopped: every sample first
 * collects already-reported stops with WNOHANG. A stop reported in the few
 * instructions between that check and the interrupt can still leave one
 * stale trap; it is collected (without a new interrupt) at the next sample,
 * so the damage is one thread parked for one interval, never a loop.
 *
 * Waiting is per tid, never waitpid(-1): the caller may have children of its
 * own, or other stoppers, whose events must not be stolen. Non-leader
 * threads are waited first because the kernel will not report a dead group
 * leader while other threads of its group are unreaped zombies -- and a
 * traced thread stays a zombie until its tracer reaps it.
 *
 * PTRACE_O_TRACEEXIT on the leader only. An exit stop holds the thread until
 * the next sample, so other threads' exits are seen as exit statuses instead.
 * But a leader that calls pthread_exit while other threads live becomes a
 * zombie that is never reported and that PTRACE_INTERRUPT does not stop (its
 * thread pidfd does not even poll readable): waiting for it would hang. Its
 * exit stop tells us it is going, so it is never waited for again.
 */
#include "ptrace_stop.h"

#include "monotime.h"
#include "privilege.h"
#include "proc.h"
#include "signals.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum {
	T_RUNNING = 0, /* continued (or just seized) */
	T_INTERRUPTED, /* PTRACE_INTERRUPT sent, stop not yet reaped */
	T_NEW,	       /* auto-attached by a clone: its first stop is due */
	T_STOPPED,     /* in a ptrace stop we have reaped */
	T_GONE,	       /* exited and reaped: removed at the end of the stop */
	T_ZOMBIE,      /* dead group leader, reported only when the group is empty */
};

#define ATTACH_MAX_PASSES 1000

/* Only the leader reports its exit as a stop (see the top of the file). */
#define OPTS_THREAD PTRACE_O_TRACECLONE
#define OPTS_LEADER (PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXIT)

/*
 * The registry of live stoppers, for the signal handler. Slots are claimed
 * and cleared with atomics; the owner tid sits next to the pointer so a
 * handler running on another thread can skip a stopper without touching it
 * (it could be freed under its feet, and it could not ptrace it anyway).
 */
#define REGISTRY_SLOTS 64
static _Atomic(struct stopper *) registry[REGISTRY_SLOTS];
static _Atomic pid_t registry_owner[REGISTRY_SLOTS];

/* Code that reallocates or frees what the handler reads runs with the
 * handled signals blocked in this thread (signals_block). */

static int registry_add(struct stopper *s)
{
	for (int i = 0; i < REGISTRY_SLOTS; i++) {
		struct stopper *expect = NULL;

		if (atomic_compare_exchange_strong(&registry[i], &expect, s)) {
			atomic_store(&registry_owner[i], s->owner);
			return 0;
		}
	}
	return -1;
}

static void registry_remove(struct stopper *s)
{
	for (int i = 0; i < REGISTRY_SLOTS; i++) {
		if (atomic_load(&registry[i]) == s) {
			atomic_store(&registry_owner[i], 0);
			atomic_store(&registry[i], NULL);
		}
	}
}

static int find_thread(const struct stopper *s, pid_t tid)
{
	for (int i = 0; i < s->nthreads; i++)
		if (s->threads[i].tid == tid)
			return i;
	return -1;
}

static int add_thread(struct stopper *s, pid_t tid, int state, struct diag *d)
{
	if (s->nthreads == s->cap) {
		int cap = s->cap ? s->cap * 2 : 16;
		struct stopper_thread *t;
		sigset_t old;

		signals_block(&old);
		t = realloc(s->threads, (size_t)cap * sizeof(*t));
		if (t) {
			s->threads = t;
			s->cap = cap;
		}
		signals_restore(&old);
		if (!t)
			return diag_errno(d, ENOMEM, "pid %d: thread table of %d", s->pid, cap);
	}
	s->threads[s->nthreads] = (struct stopper_thread){.tid = tid, .state = state};
	s->nthreads++;
	s->threads_added++;
	return 0;
}

/* Is /proc's state letter of the thread Z or X (or is it gone)? */
static int thread_dead(pid_t pid, pid_t tid)
{
	char st = proc_state(pid, tid);

	return !st || st == 'Z' || st == 'X';
}

/* EPERM from PTRACE_SEIZE has three usual causes; the user needs to know
 * which one to fix, so look at each before blaming capabilities. */
static int seize_eperm(struct stopper *s, pid_t tid, long tracer, struct diag *d)
{
	char comm[64];
	int yama;

	if (tracer > 0) {
		proc_comm((pid_t)tracer, comm, sizeof(comm));
		diag_set(d, EXIT_PERMISSION,
			 "pid %d: cannot trace thread %d: already traced by pid %ld (%s) "
			 "(TracerPid in /proc/%d/status); a thread has one tracer at most "
			 "-- stop that strace, gdb or profiler first, or read without stopping "
			 "(dump --nonblocking)",
			 s->pid, tid, tracer, comm, s->pid);
		d->sys_errno = EPERM;
		return -1;
	}
	yama = proc_yama_ptrace_scope();
	if (yama == 3) {
		diag_set(d, EXIT_PERMISSION,
			 "pid %d: cannot trace thread %d: kernel.yama.ptrace_scope=3 forbids "
			 "ptrace attach for everyone until reboot",
			 s->pid, tid);
	} else if (yama >= 1 && !proc_self_has_cap(PRIV_CAP_SYS_PTRACE)) {
		diag_set(d, EXIT_PERMISSION,
			 "pid %d: cannot trace thread %d: kernel.yama.ptrace_scope=%d allows "
			 "attaching to a non-child only with CAP_SYS_PTRACE (run as root, or "
			 "sysctl kernel.yama.ptrace_scope=0)",
			 s->pid, tid, yama);
	} else if (!proc_self_has_cap(PRIV_CAP_SYS_PTRACE)) {
		diag_set(d, EXIT_PERMISSION,
			 "pid %d: cannot trace thread %d: Operation not permitted (needs "
			 "CAP_SYS_PTRACE: run as root; in a container add --cap-add SYS_PTRACE "
			 "and a seccomp profile allowing ptrace)",
			 s->pid, tid);
	} else {
		char why[300];

		priv_explain(why, sizeof(why));
		diag_set(d, EXIT_PERMISSION, "pid %d: cannot trace thread %d: %s %s", s->pid, tid,
			 strerror(EPERM), why);
	}
	d->sys_errno = EPERM;
	return -1;
}

/* One pass over /proc/PID/task: seize what is new. Returns the number of
 * threads added, or -1. */
static int seize_pass(struct stopper *s, struct diag *d)
{
	char path[64];
	struct dirent *e;
	int added = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", s->pid);
	dir = opendir(path);
	if (!dir) {
		if (errno == ENOENT)
			return diag_set(d, EXIT_NO_PROCESS, "pid %d: no such process", s->pid);
		return diag_errno(d, errno, "pid %d: cannot list %s", s->pid, path);
	}
	while ((e = readdir(dir))) {
		pid_t tid = (pid_t)strtol(e->d_name, NULL, 10);
		long tracer;

		if (tid <= 0 || find_thread(s, tid) >= 0)
			continue;
		long opts = tid == s->pid ? OPTS_LEADER : OPTS_THREAD;

		if (ptrace(PTRACE_SEIZE, tid, 0, (void *)opts) == 0) {
			if (add_thread(s, tid, T_RUNNING, d))
				goto fail;
			added++;
			continue;
		}
		if (errno == ESRCH)
			continue; /* exited since the listing; the process check comes later */
		if (errno != EPERM) {
			diag_errno(d, errno, "pid %d: PTRACE_SEIZE of thread %d", s->pid, tid);
			goto fail;
		}
		/* An exited thread cannot be traced; a leader that called
		 * pthread_exit stays in the listing as a zombie for good. */
		if (thread_dead(s->pid, tid))
			continue;
		/* A thread created by one we already hold is attached by the kernel
		 * (TRACECLONE) and refuses a second seize: it is ours. */
		tracer = proc_status_field(s->pid, tid, "TracerPid");
		if (tracer == getpid()) {
			if (add_thread(s, tid, T_RUNNING, d))
				goto fail;
			added++;
			continue;
		}
		if (tracer < 0 && kill(s->pid, 0) && errno == ESRCH)
			continue;
		seize_eperm(s, tid, tracer, d);
		goto fail;
	}
	closedir(dir);
	return added;
fail:
	closedir(dir);
	return -1;
}

int stopper_attach(struct stopper *s, pid_t pid, struct diag *d)
{
	int passes = 0, n;

	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->owner = gettid();
	if (pid <= 0)
		return diag_set(d, EXIT_USAGE, "pid %d: not a process id", pid);
	if (pid == getpid())
		return diag_set(d, EXIT_USAGE, "pid %d: bpfpy cannot stop itself", pid);
	if (registry_add(s))
		return diag_set(d, EXIT_FAIL, "pid %d: more than %d stoppers at once", pid,
				REGISTRY_SLOTS);
	/* Any signal that stops or ends bpfpy lets the target go first
	 * (effective once the command ran signals_install). */
	signals_set_release_hook(stopper_emergency_release);
	/* Threads may be born while we list; TRACECLONE catches those created by
	 * seized threads, the next pass catches the rest. */
	do {
		n = seize_pass(s, d);
		if (n < 0)
			goto fail;
		if (++passes > ATTACH_MAX_PASSES) {
			diag_set(d, EXIT_FAIL,
				 "pid %d: thread set still changing after %d listings", pid,
				 ATTACH_MAX_PASSES);
			goto fail;
		}
	} while (n > 0);
	if (s->nthreads == 0) {
		diag_set(d, EXIT_NO_PROCESS, "pid %d: no such process", pid);
		goto fail;
	}
	return 0;
fail:
	stopper_detach(s);
	s->pid = pid;
	return -1;
}

static int is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* Takes in a wait status of thread i. */
static int absorb(struct stopper *s, int i, int status, struct diag *d)
{
	struct stopper_thread *t = &s->threads[i];
	int sig, event;

	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		t->state = T_GONE;
		s->threads_dropped++;
		return 0;
	}
	if (!WIFSTOPPED(status))
		return 0; /* WIFCONTINUED: not asked for, cannot happen */
	sig = WSTOPSIG(status);
	event = status >> 16;
	/* Threads the leader creates inherit its PTRACE_O_TRACEEXIT. */
	if (t->state == T_NEW && t->tid != s->pid)
		ptrace(PTRACE_SETOPTIONS, t->tid, 0, (void *)(long)OPTS_THREAD);
	t->state = T_STOPPED;
	t->exiting = 0;
	t->pending_sig = 0;
	t->group_stop = 0;
	if (event == PTRACE_EVENT_CLONE) {
		unsigned long child;
		pid_t tid = t->tid;

		if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &child))
			return diag_errno(d, errno, "pid %d: thread %d cloned, GETEVENTMSG", s->pid,
					  tid);
		if (find_thread(s, (pid_t)child) < 0 && add_thread(s, (pid_t)child, T_NEW, d))
			return -1;
	} else if (event == PTRACE_EVENT_STOP) {
		/* SIGTRAP: our interrupt, a new thread's first stop or a job
		 * control notification. A stop signal: the process is in a group
		 * stop that resume must not break. */
		if (is_stop_signal(sig)) {
			t->group_stop = 1;
			s->group_stops++;
		}
	} else if (event == PTRACE_EVENT_EXIT) {
		t->exiting = 1; /* no stack worth reading: not a sample thread */
	} else if (event == 0) {
		t->pending_sig = sig; /* signal-delivery stop: hand it back later */
	}
	return 0;
}

/*
 * Wait for thread i's stop or exit until deadline (CLOCK_MONOTONIC ns): 1 if
 * it came (or the thread is gone), 0 if the deadline passed first, -1 on
 * error. A thread can fail to stop for good: one in posix_spawn waits for its
 * vfork child in TASK_KILLABLE, which a PTRACE_INTERRUPT does not wake, and
 * the child may block forever (opening a FIFO nobody writes). So the wait is
 * never blocking: the kernel sends the tracer SIGCHLD at each stop, which the
 * caller has blocked, and sigtimedwait sleeps until one comes. The slice is
 * capped so that a SIGCHLD taken by someone else costs a few ms, not a hang.
 * After the deadline a thread gets one WNOHANG look, so those that stopped
 * meanwhile are still collected without waiting.
 */
#define WAIT_SLICE_NS 10000000ull

static int wait_thread(struct stopper *s, int i, uint64_t deadline, const sigset_t *chld,
		       struct diag *d)
{
	pid_t tid = s->threads[i].tid;
	int status;

	for (;;) {
		pid_t r = waitpid(tid, &status, __WALL | WNOHANG);
		uint64_t now, left;
		struct timespec ts;

		if (r == tid)
			return absorb(s, i, status, d) ? -1 : 1;
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == ECHILD) {
			/* Reaped elsewhere or no longer ours (exec took its tid). */
			s->threads[i].state = T_GONE;
			s->threads_dropped++;
			return 1;
		}
		if (r < 0)
			return diag_errno(d, errno, "pid %d: waitpid of thread %d", s->pid, tid);
		if (s->released)
			return 1; /* a signal handler let everything go */
		now = mono_ns();
		if (now >= deadline)
			return 0;
		left = deadline - now < WAIT_SLICE_NS ? deadline - now : WAIT_SLICE_NS;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)left;
		sigtimedwait(chld, NULL, &ts);
	}
}

/* What went wrong when a signal handler released the target under us. */
static int released_error(struct stopper *s, struct diag *d)
{
	int sig = signals_released();

	return diag_set(d, EXIT_FAIL,
			"pid %d: bpfpy got SIG%s while holding the target, so it resumed the "
			"target first; what was being read is no snapshot -- run again",
			s->pid, sig ? sigabbrev_np(sig) : "?");
}

/* Drops reaped threads and puts the sample threads first, so that callers
 * index [0, stopper_count) and see only threads with a stack; a leader in its
 * exit stop or dead goes after them. Signals are blocked because the handler
 * reads the array; moving entries while it detaches them could skip one. */
static void compact(struct stopper *s)
{
	struct stopper_thread *t = s->threads, tmp;
	int j = 0, k = 0;
	sigset_t old;

	signals_block(&old);
	for (int i = 0; i < s->nthreads; i++)
		if (t[i].state != T_GONE)
			t[k++] = t[i];
	s->nthreads = k;
	for (int i = 0; i < k; i++) {
		if (t[i].state == T_STOPPED && !t[i].exiting) {
			tmp = t[j];
			t[j++] = t[i];
			t[i] = tmp;
		}
	}
	s->nstopped = j;
	signals_restore(&old);
}

/* Continues a thread from its exit stop; it cannot run user code again. */
static void let_exit(struct stopper *s, struct stopper_thread *t)
{
	ptrace(PTRACE_CONT, t->tid, 0, 0);
	t->exiting = 0;
	t->state = t->tid == s->pid ? T_ZOMBIE : T_RUNNING;
}

/* Every other thread is gone: let the leader finish dying and reap it, so
 * that its real parent can (a traced zombie waits for its tracer). Safe to
 * block: with an empty group the leader's exit is reported at once. */
static void reap_leader(struct stopper *s)
{
	for (int i = 0; i < s->nthreads; i++) {
		struct stopper_thread *t = &s->threads[i];
		int status;

		if (t->state == T_STOPPED && t->exiting)
			let_exit(s, t);
		if (t->state == T_ZOMBIE) {
			while (waitpid(t->tid, &status, __WALL) < 0 && errno == EINTR)
				;
			t->state = T_GONE;
			s->threads_dropped++;
		}
	}
	compact(s);
}

/* Starts the clock of one stop and forgets the previous stop's stuck
 * threads; returns the stop's deadline (CLOCK_MONOTONIC ns). */
static uint64_t stop_begin(struct stopper *s)
{
	s->stop_begin_ns = mono_ns();
	s->nstuck = 0;
	for (int i = 0; i < s->nthreads; i++)
		s->threads[i].stuck = 0;
	return s->stop_begin_ns +
	       (uint64_t)(s->deadline_ms > 0 ? s->deadline_ms : STOPPER_DEADLINE_MS) * 1000000ull;
}

/* Phase 1 of a stop: collect stops already reported, interrupt the rest.
 * The bound is re-read: clone events append threads as we go. */
static int collect_or_interrupt(struct stopper *s, struct diag *d)
{
	for (int i = 0; i < s->nthreads; i++) {
		struct stopper_thread *t = &s->threads[i];
		int status;
		pid_t r;

		if (t->state == T_GONE || t->state == T_STOPPED)
			continue;
		r = waitpid(t->tid, &status, __WALL | WNOHANG);
		if (t->state == T_ZOMBIE) {
			if (r == t->tid || (r < 0 && errno == ECHILD)) {
				t->state = T_GONE;
				s->threads_dropped++;
			}
			continue;
		}
		if (r == t->tid) {
			if (absorb(s, i, status, d))
				return -1;
			continue;
		}
		if (r < 0 && errno == ECHILD) {
			t->state = T_GONE;
			s->threads_dropped++;
			continue;
		}
		if (t->state == T_NEW)
			continue; /* its first stop is on the way */
		if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) == 0 || errno == ESRCH)
			t->state = T_INTERRUPTED; /* ESRCH: dying; the wait reaps it */
		else
			return diag_errno(d, errno, "pid %d: PTRACE_INTERRUPT of thread %d", s->pid,
					  t->tid);
	}
	return 0;
}

/* Waits for the threads whose stop is due, either the group leader
 * (leader=1) or all the others: -1 on error, 1 once the leader was waited
 * for (its scan must start over), else 0. A thread that misses the
 * deadline is marked stuck and skipped. */
static int wait_due(struct stopper *s, int leader, uint64_t deadline, const sigset_t *chld,
		    struct diag *d)
{
	for (int i = 0; i < s->nthreads && !s->released; i++) {
		struct stopper_thread *t = &s->threads[i];
		int r;

		if ((t->state == T_INTERRUPTED || t->state == T_NEW) &&
		    (t->tid == s->pid) == leader && !t->stuck) {
			r = wait_thread(s, i, deadline, chld, d);
			if (r < 0)
				return -1;
			s->threads[i].stuck = !r;
			if (leader)
				return 1;
		}
	}
	return 0;
}

/* Phase 2 of a stop: wait, group leader last (see the top of the file). A
 * clone event appends a T_NEW thread; the bound is re-read, and after the
 * leader's wait the scan starts over for what it may have created. One
 * deadline for the whole stop: a thread that misses it is marked stuck and
 * skipped, the others are still collected. */
static int wait_stops(struct stopper *s, uint64_t deadline, struct diag *d)
{
	sigset_t chld, old;
	int r;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &chld, &old);
	do {
		r = wait_due(s, 0, deadline, &chld, d);
		if (r == 0)
			r = wait_due(s, 1, deadline, &chld, d);
	} while (r > 0);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r < 0 ? -1 : 0;
}

/* Some thread did not stop in time and a partial stop is not enough: the
 * rest go back to work at once; the stuck ones stay interrupted and are
 * collected by a later stop, or detached by the kernel when we exit. */
static int stuck_error(struct stopper *s, struct diag *d)
{
	pid_t tid = stopper_stuck_tid(s, 0);

	s->stopped = 1;
	stopper_resume(s, NULL);
	return diag_set(d, EXIT_FAIL,
			"pid %d: thread %d did not stop within %d ms (in vfork? a thread "
			"in posix_spawn waits for its child and cannot be stopped "
			"until the child execs); %d other thread%s resumed -- "
			"dump --nonblocking reads without stopping",
			s->pid, tid, s->deadline_ms > 0 ? s->deadline_ms : STOPPER_DEADLINE_MS,
			s->nstopped, s->nstopped == 1 ? "" : "s");
}

int stopper_stop(struct stopper *s, struct diag *d)
{
	uint64_t deadline;
	int relists = 0;

	if (s->stopped)
		return 0;
	if (s->released)
		return released_error(s, d);
	if (!s->threads)
		return diag_set(d, EXIT_NO_PROCESS, "pid %d: not attached", s->pid);
	deadline = stop_begin(s);
	for (;;) {
		int n;

		if (collect_or_interrupt(s, d) || wait_stops(s, deadline, d))
			return -1;
		if (s->released)
			return released_error(s, d);
		/*
		 * A thread born of a clone that was already under way when
		 * attach seized its creator is in none of attach's listings (it
		 * was not yet in /proc/PID/task) and was not attached by the
		 * kernel (its creator had no TRACECLONE when the clone began):
		 * it ran through every stop (tests/unit/test_ptrace_stop.c,
		 * thread churn, 1 run in 10). With every thread we hold stopped
		 * no clone is under way, so a listing now is complete: seize
		 * what it finds and stop that too. Once is enough, since from
		 * then on every thread is seized with TRACECLONE.
		 */
		s->nstuck = 0;
		for (int i = 0; i < s->nthreads; i++)
			s->nstuck += s->threads[i].stuck;
		/* A stuck thread may be the one cloning: list at a later stop. */
		if (s->listed || s->nstuck || relists >= ATTACH_MAX_PASSES)
			break;
		n = seize_pass(s, d);
		if (n < 0) {
			s->stopped = 1;
			stopper_resume(s, NULL);
			return -1;
		}
		relists++;
		if (n == 0) {
			s->listed = 1;
			break;
		}
	}
	compact(s);
	if (s->nstuck && (!s->partial_ok || s->nstopped == 0))
		return stuck_error(s, d);
	if (s->nstopped == 0) {
		reap_leader(s);
		return diag_set(d, EXIT_NO_PROCESS, "pid %d exited", s->pid);
	}
	s->stopped = 1;
	s->nstops++;
	s->last_stop_latency_ns = mono_ns() - s->stop_begin_ns;
	return 0;
}

int stopper_stuck_count(const struct stopper *s)
{
	return s->nstuck;
}

pid_t stopper_stuck_tid(const struct stopper *s, int i)
{
	for (int k = 0; k < s->nthreads; k++)
		if (s->threads[k].stuck && i-- == 0)
			return s->threads[k].tid;
	return 0;
}

int stopper_resume(struct stopper *s, struct diag *d)
{
	int err = 0, err_tid = 0;

	if (!s->stopped)
		return 0;
	for (int i = 0; i < s->nthreads; i++) {
		struct stopper_thread *t = &s->threads[i];
		long r;

		if (t->state != T_STOPPED)
			continue;
		if (t->exiting) {
			let_exit(s, t);
			continue;
		}
		/* PTRACE_CONT would wake a thread out of a group stop the user
		 * asked for (kill -STOP); LISTEN keeps it stopped yet lets a
		 * later SIGCONT through. */
		if (t->group_stop) {
			r = ptrace(PTRACE_LISTEN, t->tid, 0, 0);
			if (r && errno == EIO)
				r = ptrace(PTRACE_CONT, t->tid, 0, 0);
		} else {
			r = ptrace(PTRACE_CONT, t->tid, 0, (void *)(long)t->pending_sig);
			if (!r && t->pending_sig)
				s->signals_reinjected++;
		}
		/* ESRCH: killed while stopped (SIGKILL needs no tracer's
		 * consent); its exit is reaped at the next stop. */
		if (r && errno != ESRCH && !err) {
			err = errno;
			err_tid = t->tid;
		}
		t->state = T_RUNNING;
		t->pending_sig = 0;
		t->group_stop = 0;
	}
	s->stopped = 0;
	s->last_stopped_ns = mono_ns() - s->stop_begin_ns;
	if (err)
		return diag_errno(d, err, "pid %d: PTRACE_CONT of thread %d", s->pid, err_tid);
	return 0;
}

void stopper_detach(struct stopper *s)
{
	sigset_t old;

	/* Partial: a thread that cannot be stopped must not keep the others
	 * attached. */
	s->partial_ok = 1;
	if (!s->released && s->threads && stopper_stop(s, NULL) == 0) {
		for (int i = 0; i < s->nthreads; i++) {
			struct stopper_thread *t = &s->threads[i];

			if (t->state != T_STOPPED)
				continue;
			/* A group-stopped thread detached with no signal goes
			 * back to its group stop: the kernel keeps job control. */
			ptrace(PTRACE_DETACH, t->tid, 0,
			       (void *)(long)(t->group_stop ? 0 : t->pending_sig));
		}
	}
	signals_block(&old);
	registry_remove(s);
	free(s->threads);
	s->threads = NULL;
	s->nthreads = s->cap = s->nstopped = 0;
	s->stopped = 0;
	signals_restore(&old);
}

int stopper_count(const struct stopper *s)
{
	return s->stopped ? s->nstopped : 0;
}

pid_t stopper_tid(const struct stopper *s, int i)
{
	return (i >= 0 && i < stopper_count(s)) ? s->threads[i].tid : 0;
}

int stopper_thread_regs(struct stopper *s, int i, struct user_regs_struct *regs, struct diag *d)
{
	if (i < 0 || i >= stopper_count(s))
		return diag_set(d, EXIT_FAIL, "pid %d: thread #%d is not stopped", s->pid, i);
	if (ptrace(PTRACE_GETREGS, s->threads[i].tid, 0, regs))
		return diag_errno(d, errno, "pid %d: PTRACE_GETREGS of thread %d", s->pid,
				  s->threads[i].tid);
	return 0;
}

int stopper_thread_fsbase(struct stopper *s, int i, uint64_t *fsbase, struct diag *d)
{
	struct user_regs_struct regs;

	if (stopper_thread_regs(s, i, &regs, d))
		return -1;
	*fsbase = regs.fs_base;
	return 0;
}

/*
 * Emergency path. Only syscalls: it runs inside signal handlers. A thread we
 * think is running may in fact be stopped (a stop reaped a moment ago), so
 * detaching is tried first; ESRCH means it runs, and it must be stopped
 * before it can be detached. The waits are bounded so that a thread stuck in
 * the kernel cannot keep the user's Ctrl-C from working.
 */
static int poll_stop(pid_t tid, int *status)
{
	struct timespec ts = {0, 250000};

	for (int k = 0; k < 200; k++) {
		pid_t r = waitpid(tid, status, __WALL | WNOHANG);

		if (r == tid)
			return WIFSTOPPED(*status) ? 1 : 0;
		if (r < 0 && errno != EINTR)
			return 0;
		nanosleep(&ts, NULL);
	}
	return 0;
}

static void release_thread(pid_t tid, int sig)
{
	unsigned long child = 0;
	int status;

	if (ptrace(PTRACE_DETACH, tid, 0, (void *)(long)sig) == 0 || errno != ESRCH)
		return;
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) || !poll_stop(tid, &status))
		return;
	sig = 0;
	if ((status >> 16) == 0)
		sig = WSTOPSIG(status);
	else if ((status >> 16) == PTRACE_EVENT_CLONE)
		ptrace(PTRACE_GETEVENTMSG, tid, 0, &child);
	ptrace(PTRACE_DETACH, tid, 0, (void *)(long)sig);
	if (child && poll_stop((pid_t)child, &status))
		ptrace(PTRACE_DETACH, (pid_t)child, 0, 0);
}

void stopper_emergency_release(void)
{
	int saved = errno;
	pid_t me = gettid();

	for (int i = 0; i < REGISTRY_SLOTS; i++) {
		struct stopper *s;

		if (atomic_load(&registry_owner[i]) != me)
			continue;
		s = atomic_load(&registry[i]);
		if (!s || s->released)
			continue;
		for (int j = 0; j < s->nthreads; j++) {
			struct stopper_thread *t = &s->threads[j];
			int sig = t->state == T_STOPPED && !t->group_stop ? t->pending_sig : 0;

			/* A zombie leader can be neither stopped nor detached. */
			if (t->state != T_GONE && t->state != T_ZOMBIE)
				release_thread(t->tid, sig);
		}
		s->released = 1;
		s->stopped = 0;
	}
	errno = saved;
}

int stopper_with_stopped(pid_t pid, int (*fn)(void *arg, struct stopper *s), void *arg,
			 struct diag *d)
{
	struct stopper s;
	int rc;

	if (stopper_attach(&s, pid, d))
		return -1;
	/* A dump of the threads that stopped is worth more than none: the
	 * stuck one is named, and its stack is read while it waits. */
	s.partial_ok = 1;
	if (stopper_stop(&s, d)) {
		stopper_detach(&s);
		return -1;
	}
	for (int i = 0; i < stopper_stuck_count(&s); i++)
		fprintf(stderr,
			"bpfpy: pid %d: thread %d did not stop within %d ms (in vfork?): its stack "
			"is read while it waits in the kernel\n",
			pid, stopper_stuck_tid(&s, i), STOPPER_DEADLINE_MS);
	rc = fn(arg, &s);
	if (s.released) {
		stopper_detach(&s);
		return released_error(&s, d);
	}
	stopper_detach(&s); /* resumes and re-injects pending signals too */
	return rc;
}
