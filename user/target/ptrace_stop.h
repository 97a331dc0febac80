/* SPDX-License-Identifier: MIT */
/*
 * Stop every thread of a process, consistently, many times per second.
 *
 * The oracle's reference mode needs a true snapshot: no thread of the target
 * may run while its stacks are read. Attaching per sample is what makes
 * py-spy's blocking mode slow, so a stopper seizes every thread once
 * (PTRACE_SEIZE with PTRACE_O_TRACECLONE, so threads created later are
 * attached by the kernel before they run a single instruction) and then only
 * interrupts and continues them per sample.
 *
 * Staying seized between samples has costs the caller should know about:
 * a signal sent to the target, a group stop and a thread creation each park
 * the thread concerned in a ptrace stop until the next stopper_stop() (or
 * stopper_detach()) collects it. Nothing is lost -- signals are re-injected on
 * resume, new threads join the set -- but they are delayed by up to one
 * sampling interval.
 *
 * Every call on a stopper must come from the thread that attached it: ptrace
 * relations belong to a thread, not to a process.
 */
#ifndef PTRACE_STOP_H
#define PTRACE_STOP_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "diag.h"

struct stopper_thread {
	pid_t tid;
	int state;	 /* enum in ptrace_stop.c */
	int pending_sig; /* signal to re-inject on resume, 0 if none */
	int group_stop;	 /* stopped by SIGSTOP & co: resume with PTRACE_LISTEN */
	int exiting;	 /* in its exit stop (the leader only) */
	int stuck;	 /* missed the last stop's deadline */
};

/* How long a stop may take before the threads still running are declared
 * stuck (see wait_thread in ptrace_stop.c). Generous: 500 threads stop in a
 * few ms, but on a loaded 2-CPU host (load 10+) a healthy thread missed
 * 1000 ms, and a thread wrongly called stuck stays seized until bpfpy
 * exits; a thread really stuck (in vfork) costs the user this long once. */
#define STOPPER_DEADLINE_MS 3000

struct stopper {
	pid_t pid;    /* the target's thread-group id */
	pid_t owner;  /* the tracer thread (gettid) */
	int stopped;  /* between a successful stopper_stop and stopper_resume */
	int released; /* stopper_emergency_release already let go of everything */
	int nthreads, cap;
	int nstopped;	 /* threads[0, nstopped) are stopped; a dead leader may follow */
	int nstuck;	 /* threads that missed the last stop's deadline */
	int deadline_ms; /* 0: STOPPER_DEADLINE_MS */
	int partial_ok;	 /* a stop that leaves stuck threads succeeds (set by caller) */
	int listed;	 /* a listing was taken with every thread stopped (stopper_stop) */
	struct stopper_thread *threads;

	/* CLOCK_MONOTONIC, ns. stop_begin_ns is taken before the first
	 * PTRACE_INTERRUPT, so it bounds from below the moment the first thread
	 * stopped; the stopped time reported is therefore never understated. */
	uint64_t stop_begin_ns;
	uint64_t last_stop_latency_ns; /* interrupt of the first .. stop of the last */
	uint64_t last_stopped_ns;      /* stop_begin_ns .. every thread continued */

	/* What happened, for the oracle's report. */
	uint64_t nstops;
	uint64_t threads_added;	  /* seen at attach or created while seized */
	uint64_t threads_dropped; /* exited while seized */
	uint64_t signals_reinjected;
	uint64_t group_stops;
};

/* Seize every thread of pid (listing /proc/PID/task until no new thread
 * shows up). The threads keep running. 0, or -1 with d set:
 * EXIT_NO_PROCESS, EXIT_PERMISSION (missing CAP_SYS_PTRACE, Yama, or another
 * tracer such as strace or gdb, named with its pid), EXIT_USAGE (pid is us). */
int stopper_attach(struct stopper *s, pid_t pid, struct diag *d);

/* Interrupt every seized thread and wait until each is in a ptrace stop,
 * taking in threads created meanwhile and dropping those that exited.
 * -1 with EXIT_NO_PROCESS when the whole process has gone. No-op if stopped.
 * Bounded: a thread not stopped within the deadline is stuck; then, unless
 * partial_ok is set and some thread did stop, every stopped thread is resumed
 * and -1 comes back with EXIT_FAIL naming the stuck tid. -1 with EXIT_FAIL
 * too once a signal handler released the target (signals.h). */
int stopper_stop(struct stopper *s, struct diag *d);

/* After a partial stop: the threads that missed the deadline. Such a thread
 * cannot be detached (PTRACE_DETACH needs a stopped tracee): it stays seized,
 * its interrupt pending, until a later stop collects it or we exit and the
 * kernel detaches it; if the target dies meanwhile, its zombie waits for us. */
int stopper_stuck_count(const struct stopper *s);
pid_t stopper_stuck_tid(const struct stopper *s, int i);

/* Continue every stopped thread, re-injecting the signal it stopped on. */
int stopper_resume(struct stopper *s, struct diag *d);

/* Resume if needed, detach every thread (delivering pending signals), free.
 * Safe on a stopper that failed to attach or whose target has exited. */
void stopper_detach(struct stopper *s);

/* The stopped threads, 0 when not stopped (indices change at every stop).
 * A group leader that exited alone (pthread_exit) is not among them. */
int stopper_count(const struct stopper *s);
pid_t stopper_tid(const struct stopper *s, int i);

/* While stopped: thread i's fs base. On x86_64 glibc's pthread_t of a thread
 * is its fs base, which maps Python <= 3.10's thread_id to an OS tid. */
int stopper_thread_fsbase(struct stopper *s, int i, uint64_t *fsbase, struct diag *d);

/* While stopped: thread i's general registers (for native unwinding). */
int stopper_thread_regs(struct stopper *s, int i, struct user_regs_struct *regs, struct diag *d);

/* Async-signal-safe: detach every live stopper owned by the calling thread,
 * stopped or not, re-injecting pending signals. Only syscalls are made.
 * stopper_attach makes it the release hook of signals.h. */
void stopper_emergency_release(void);

/* For `bpfpy dump`: attach, stop, fn(arg, s), resume, detach -- cleaning up
 * on every path. Returns fn's result, or -1 with d set if stopping failed or
 * a signal released the target meanwhile. A partial stop is accepted: each
 * stuck thread is named on stderr and fn runs with the others stopped. */
int stopper_with_stopped(pid_t pid, int (*fn)(void *arg, struct stopper *s), void *arg,
			 struct diag *d);

#endif /* PTRACE_STOP_H */
