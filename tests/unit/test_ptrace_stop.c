// SPDX-License-Identifier: MIT
/*
 * The stopper against real Python processes: thread states read from
 * /proc/PID/task/TID/stat ('t' is a tracing stop), counters printed by the
 * target to prove it keeps running, signals that must not be lost, threads
 * born and dying under our feet, a target that exits mid-loop, a target
 * someone else (strace) already traces, and a tracer that is SIGKILLed.
 *
 * Every process started is recorded; a teardown and the SIGALRM hang guard
 * kill them all, and PR_SET_PDEATHSIG kills them if this test dies anyway.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "ptrace_stop.h"
#include "signals.h"

#define HANG_GUARD_S 60

static pid_t started[16];
static int nstarted;

static void kill_started(void)
{
	for (int i = 0; i < nstarted; i++) {
		if (started[i] > 0) {
			kill(started[i], SIGKILL);
			waitpid(started[i], NULL, 0);
		}
	}
	nstarted = 0;
}

static void on_alarm(int sig)
{
	static const char msg[] = "test_ptrace_stop: hang guard fired, killing targets\n";

	(void)sig;
	for (int i = 0; i < nstarted; i++)
		if (started[i] > 0)
			kill(started[i], SIGKILL);
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(98);
	_exit(99);
}

static int teardown(void **state)
{
	(void)state;
	alarm(0);
	kill_started();
	return 0;
}

static int setup(void **state)
{
	(void)state;
	signal(SIGALRM, on_alarm);
	alarm(HANG_GUARD_S);
	return 0;
}

static const char *python(void)
{
	static const char *cands[] = {"/root/.pyenv/versions/3.12.1/bin/python3.12",
				      "/usr/bin/python3.11", "/usr/bin/python3"};

	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++)
		if (access(cands[i], X_OK) == 0)
			return cands[i];
	fail_msg("no Python interpreter found");
	return NULL;
}

/* N worker threads bump their own counter; main prints "C c0 c1 ..." every
 * 20 ms and "U n" from its SIGUSR1 handler, each line in one os.write:
 * print() writes its arguments one by one, and a handler that runs between
 * two of them made "C 123U 3" of a line, which the reader skipped and then
 * waited for until the hang guard fired. */
static const char WORKERS[] = "import os, sys, threading, time, signal\n"
			      "n = int(sys.argv[1])\n"
			      "counts = [0] * n\n"
			      "usr1 = 0\n"
			      "def on_usr1(sig, frame):\n"
			      "    global usr1\n"
			      "    usr1 += 1\n"
			      "    os.write(1, b'U %d\\n' % usr1)\n"
			      "signal.signal(signal.SIGUSR1, on_usr1)\n"
			      "def work(i):\n"
			      "    while True:\n"
			      "        counts[i] += 1\n"
			      "for i in range(n):\n"
			      "    threading.Thread(target=work, args=(i,), daemon=True).start()\n"
			      "while True:\n"
			      "    os.write(1, ('C ' + ' '.join(map(str, counts)) + '\\n').encode())\n"
			      "    time.sleep(0.02)\n";

/* One thread, always on CPU. */
static const char BUSY1[] = "print('C 0', flush=True)\n"
			    "while True:\n"
			    "    pass\n";

/* A thread born every millisecond, each living ~2 ms. */
static const char CHURN[] = "import threading, time\n"
			    "def short():\n"
			    "    time.sleep(0.002)\n"
			    "print('C 0', flush=True)\n"
			    "n = 0\n"
			    "while True:\n"
			    "    threading.Thread(target=short, daemon=True).start()\n"
			    "    n += 1\n"
			    "    if n % 50 == 0:\n"
			    "        print('C', n, flush=True)\n"
			    "    time.sleep(0.001)\n";

/* Busy threads, and an exit 0.3 s after start. */
static const char EXITER[] = "import threading, time, os\n"
			     "def spin():\n"
			     "    while True:\n"
			     "        pass\n"
			     "for i in range(2):\n"
			     "    threading.Thread(target=spin, daemon=True).start()\n"
			     "print('C 0', flush=True)\n"
			     "time.sleep(0.3)\n"
			     "os._exit(0)\n";

/* The main thread calls pthread_exit after 0.3 s: the leader becomes a
 * zombie the kernel never reports while the other threads live. */
static const char LEADER_EXITS[] = "import threading, ctypes, time\n"
				   "counts = [0]\n"
				   "def work():\n"
				   "    while True:\n"
				   "        counts[0] += 1\n"
				   "def printer():\n"
				   "    while True:\n"
				   "        print('C', counts[0], flush=True)\n"
				   "        time.sleep(0.02)\n"
				   "threading.Thread(target=work).start()\n"
				   "threading.Thread(target=printer).start()\n"
				   "time.sleep(0.3)\n"
				   "ctypes.CDLL(None).pthread_exit(None)\n";

struct target {
	pid_t pid;
	int fd;
	char buf[16384];
	size_t len;
};

static void record(pid_t pid)
{
	assert_true(nstarted < (int)(sizeof(started) / sizeof(started[0])));
	started[nstarted++] = pid;
}

static pid_t spawn(char *const argv[], int out_fd)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (out_fd >= 0)
			dup2(out_fd, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	record(pid);
	return pid;
}

static int read_line(struct target *t, char *line, size_t cap, int block);

static void start_py(struct target *t, const char *script, const char *arg)
{
	char *argv[] = {(char *)python(), "-u", "-c", (char *)script, (char *)arg, NULL};
	char line[256];
	int p[2];

	memset(t, 0, sizeof(*t));
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	t->pid = spawn(argv, p[1]);
	close(p[1]);
	t->fd = p[0];
	/* The first line comes after every thread has started. */
	assert_int_equal(read_line(t, line, sizeof(line), 1), 1);
}

/* 1 with a line, 0 if none is complete yet (block = 0) or at EOF. */
static int read_line(struct target *t, char *line, size_t cap, int block)
{
	for (;;) {
		char *nl = memchr(t->buf, '\n', t->len);
		struct pollfd pfd = {t->fd, POLLIN, 0};
		ssize_t n;

		if (nl) {
			size_t k = (size_t)(nl - t->buf);

			snprintf(line, cap, "%.*s", (int)k, t->buf);
			memmove(t->buf, nl + 1, t->len - k - 1);
			t->len -= k + 1;
			return 1;
		}
		if (!block && poll(&pfd, 1, 0) <= 0)
			return 0;
		n = read(t->fd, t->buf + t->len, sizeof(t->buf) - t->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		t->len += (size_t)n;
	}
}

static int parse_counts(const char *line, long *c, int max)
{
	int n = 0;
	char *end;

	if (line[0] != 'C')
		return -1;
	line++;
	while (n < max) {
		long v = strtol(line, &end, 10);

		if (end == line)
			break;
		c[n++] = v;
		line = end;
	}
	return n;
}

/* Blocks (under the hang guard) until a "C" line shows every counter above
 * the given ones: each thread has run since. */
static void wait_progress(struct target *t, const long *before, int n)
{
	char line[256];
	long c[16];

	for (;;) {
		int k, ok = 1;

		assert_int_equal(read_line(t, line, sizeof(line), 1), 1);
		k = parse_counts(line, c, 16);
		if (k != n)
			continue;
		for (int i = 0; i < n; i++)
			ok &= c[i] > before[i];
		if (ok)
			return;
	}
}

static void last_counts(struct target *t, long *c, int n)
{
	char line[256];

	do
		assert_int_equal(read_line(t, line, sizeof(line), 1), 1);
	while (parse_counts(line, c, 16) != n);
}

/* /proc/PID/task/TID/stat after the comm's ')' (" S ppid ..."), in buf;
 * NULL if the thread is gone. */
static const char *task_stat(pid_t pid, pid_t tid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	n = (ssize_t)fread(buf, 1, len - 1, f);
	fclose(f);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	return strrchr(buf, ')');
}

static char thread_state(pid_t pid, pid_t tid)
{
	char buf[512];
	const char *p = task_stat(pid, tid, buf, sizeof(buf));

	return p && p[1] ? p[2] : 0;
}

static long tracer_pid(pid_t pid, pid_t tid)
{
	char path[64], line[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "TracerPid:", 10))
			v = strtol(line + 10, NULL, 10);
	fclose(f);
	return v;
}

static int list_tasks(pid_t pid, pid_t *tids, int max)
{
	char path[64];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d)) && n < max) {
		pid_t tid = (pid_t)atoi(e->d_name);

		if (tid > 0)
			tids[n++] = tid;
	}
	closedir(d);
	return n;
}

/* Counts tasks in each interesting state; dead ones ('Z', 'X', gone) are
 * threads on their way out and are not counted at all. */
/* The kernel's task flags (field 9 of /proc/PID/task/TID/stat), 0 if the
 * thread is gone. */
static unsigned long thread_flags(pid_t pid, pid_t tid)
{
	char buf[512];
	const char *p = task_stat(pid, tid, buf, sizeof(buf));
	unsigned long flags = 0;

	/* ") S ppid pgrp session tty_nr tpgid flags" */
	if (p)
		sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags);
	return flags;
}

#define PF_EXITING_FLAG 0x4 /* include/linux/sched.h PF_EXITING */

/* Threads in a traced stop, and the others that could run user code. A
 * thread already in do_exit (PF_EXITING: it was resumed, returned from its
 * function and is tearing down) runs no user code again, and under load can
 * stay visible long enough to be listed: it is not an escape. */
static void count_states(pid_t pid, int *traced, int *other)
{
	pid_t tids[4096];
	int n = list_tasks(pid, tids, 4096);

	*traced = *other = 0;
	for (int i = 0; i < n; i++) {
		char st = thread_state(pid, tids[i]);

		if (st == 't')
			(*traced)++;
		else if (st && st != 'Z' && st != 'X' &&
			 !(thread_flags(pid, tids[i]) & PF_EXITING_FLAG)) {
			printf("# thread %d: state %c, flags 0x%lx\n", tids[i], st,
			       thread_flags(pid, tids[i]));
			(*other)++;
		}
	}
}

static void assert_untraced(pid_t pid)
{
	pid_t tids[4096];
	int n = list_tasks(pid, tids, 4096);

	assert_true(n > 0);
	for (int i = 0; i < n; i++) {
		long tp = tracer_pid(pid, tids[i]);

		if (tp >= 0) /* -1: the thread ended since the listing */
			assert_int_equal(tp, 0);
		assert_int_not_equal(thread_state(pid, tids[i]), 't');
	}
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void test_stop_resume_states(void **state)
{
	struct target t;
	struct stopper s;
	struct diag d = {0};
	pid_t tids[64];
	uint64_t fs[64];
	int n;

	(void)state;
	start_py(&t, WORKERS, "4");
	assert_int_equal(stopper_attach(&s, t.pid, &d), 0);
	assert_int_equal(stopper_stop(&s, &d), 0);

	/* The stopper's set is exactly /proc's, and all of it is stopped. */
	n = list_tasks(t.pid, tids, 64);
	assert_int_equal(n, 5);
	assert_int_equal(stopper_count(&s), n);
	for (int i = 0; i < n; i++) {
		int found = 0;

		assert_int_equal(thread_state(t.pid, tids[i]), 't');
		for (int j = 0; j < stopper_count(&s); j++)
			found |= stopper_tid(&s, j) == tids[i];
		assert_true(found);
	}
	/* pthread_t is the fs base: one per thread, all different. */
	for (int i = 0; i < n; i++) {
		assert_int_equal(stopper_thread_fsbase(&s, i, &fs[i], &d), 0);
		assert_true(fs[i] != 0);
		for (int j = 0; j < i; j++)
			assert_true(fs[i] != fs[j]);
	}

	assert_int_equal(stopper_resume(&s, &d), 0);
	for (int i = 0; i < n; i++)
		assert_int_not_equal(thread_state(t.pid, tids[i]), 't');
	assert_int_equal(stopper_thread_fsbase(&s, 0, &fs[0], &d), -1); /* not stopped */

	stopper_detach(&s);
	assert_untraced(t.pid);
}

/* Returns mean µs of a stop+resume pair over n cycles. */
static double cycle(struct stopper *s, int n, uint64_t *stopped_ns)
{
	struct diag d = {0};
	uint64_t t0 = mono_ns();

	*stopped_ns = 0;
	for (int i = 0; i < n; i++) {
		if (stopper_stop(s, &d))
			fail_msg("cycle %d: %s", i, d.msg);
		if (stopper_resume(s, &d))
			fail_msg("cycle %d: %s", i, d.msg);
		*stopped_ns += s->last_stopped_ns;
	}
	return (double)(mono_ns() - t0) / 1e3 / n;
}

static void test_thousand_cycles_progress(void **state)
{
	struct target t;
	struct stopper s;
	struct diag d = {0};
	uint64_t stopped;
	long before[4];
	double us;

	(void)state;
	start_py(&t, WORKERS, "4");
	assert_int_equal(stopper_attach(&s, t.pid, &d), 0);
	last_counts(&t, before, 4);
	us = cycle(&s, 1000, &stopped);
	printf("# 5 threads (4 busy): %.1f us per stop+resume, %.1f us stopped\n", us,
	       (double)stopped / 1e3 / 1000);
	assert_int_equal(kill(t.pid, 0), 0);
	wait_progress(&t, before, 4);
	assert_int_equal(s.nstops, 1000);
	stopper_detach(&s);
	assert_untraced(t.pid);
	/* Still progressing once let go. */
	last_counts(&t, before, 4);
	wait_progress(&t, before, 4);
}

static void measure(const char *script, const char *arg, const char *label)
{
	struct target t;
	struct stopper s;
	struct diag d = {0};
	uint64_t stopped;
	double us;
	int n;

	start_py(&t, script, arg);
	assert_int_equal(stopper_attach(&s, t.pid, &d), 0);
	assert_int_equal(stopper_stop(&s, &d), 0);
	n = stopper_count(&s);
	assert_int_equal(stopper_resume(&s, &d), 0);
	cycle(&s, 100, &stopped); /* warm up */
	us = cycle(&s, 2000, &stopped);
	printf("# %s (%d threads): %.1f us per stop+resume, %.1f us stopped, "
	       "%.1f us stop latency (last)\n",
	       label, n, us, (double)stopped / 1e3 / 2000, (double)s.last_stop_latency_ns / 1e3);
	stopper_detach(&s);
	assert_untraced(t.pid);
	kill_started();
}

/* Costs are printed, not asserted: the machine decides them. */
static void test_cost_1_and_8_threads(void **state)
{
	(void)state;
	measure(BUSY1, NULL, "1 busy thread");
	measure(WORKERS, "7", "7 busy workers + main");
}

static void test_thread_churn(void **state)
{
	struct target t;
	struct stopper s;
	struct diag d = {0};
	uint64_t added;
	int traced, other, escaped = 0;
	char line[256];

	(void)state;
	start_py(&t, CHURN, NULL);
	assert_int_equal(stopper_attach(&s, t.pid, &d), 0);
	added = s.threads_added;
	for (int i = 0; i < 200; i++) {
		if (stopper_stop(&s, &d))
			fail_msg("cycle %d: %s", i, d.msg);
		/* No thread may run during a stop, new ones included. */
		count_states(t.pid, &traced, &other);
		escaped += other;
		assert_int_equal(traced, stopper_count(&s));
		if (stopper_resume(&s, &d))
			fail_msg("cycle %d: %s", i, d.msg);
		usleep(500);
		while (read_line(&t, line, sizeof(line), 0))
			;
	}
	assert_int_equal(escaped, 0);
	/* Threads were created while seized and were taken in. */
	assert_true(s.threads_added > added);
	assert_true(s.threads_dropped > 0);
	printf("# churn: %llu threads taken in, %llu dropped over 200 cycles\n",
	       (unsigned long long)(s.threads_added - added),
	       (unsigned long long)s.threads_dropped);
	stopper_detach(&s);
	assert_untraced(t.pid);
	/* And it still creates threads. */
	assert_int_equal(read_line(&t, line, sizeof(line), 1), 1);
	assert_int_equal(read_line(&t, line, sizeof(line), 1), 1);
}

static void test_target_exits_during_loop(void **state)
{
	struct target t;
	struct stopper s;
	struct diag d = {0};
	long cycles = 0;

	(void)state;
	start_py(&t, EXITER, NULL);
	assert_int_equal(stopper_attach(&s, t.pid, &d), 0);
	for (;;) {
		if (stopper_stop(&s, &d))
			break;
		cycles++;
		assert_int_equal(stopper_resume(&s, &d), 0);
	}
	assert_int_equal(d.code, EXIT_NO_PROCESS);
	assert_non_null(strstr(d.msg, "exited"));
	printf("# exit seen after %ld cycles: %s\n", cycles, d.msg);
	stopper_detach(&s);
	/* Stopping again reports the same, never hangs. */
	assert_int_equal(stopper_stop(&s, &d), -1);
	assert_int_equal(d.code, EXIT_NO_PROCESS);
}

static void test_already_traced_by_strace(void **state)
{
	char pidstr[16];
	char *argv[] = {"/usr/bin/strace", "-f", "-qq", "-o", "/dev/null", "-p", pidstr, NULL};
	struct target t;
	struct stopper s;
	struct diag d = {0};
	pid_t tracer;
	char want[32];

	(void)state;
	if (access(argv[0], X_OK))
		skip();
	start_py(&t, WORKERS, "2");
	snprintf(pidstr, sizeof(pidstr), "%d", t.pid);
	tracer = spawn(argv, -1);
	while (tracer_pid(t.pid, t.pid) != tracer)
		usleep(1000);

	assert_int_equal(stopper_attach(&s, t.pid, &d), -1);
	assert_int_equal(d.code, EXIT_PERMISSION);
	snprintf(want, sizeof(want), "pid %d (strace)", tracer);
	assert_non_null(strstr(d.msg, want));
	printf("# %s\n", d.msg);
	/* The failed attach let go of any thread it had got. */
	assert_int_equal(stopper_count(&s), 0);

	kill(tracer, SIGKILL);
	waitpid(tracer, NULL, 0);
	assert_int_equal(stopper_attach(&s, t.pid, &d), 0);
	stopper_detach(&s);
	assert_untraced(t.pid);
}

/* Waits for "U want" while cycling, so a signal parked in a
 * signal-delivery stop is collected and re-injected. */
static void cycle_until_usr1(struct target *t, struct stopper *s, int want)
{
	struct diag d = {0};
	char line[256];

	for (;;) {
		assert_int_equal(stopper_stop(s, &d), 0);
		assert_int_equal(stopper_resume(s, &d), 0);
		usleep(2000);
		while (read_line(t, line, sizeof(line), 0)) {
			if (line[0] != 'U')
				continue;
			/* Exactly once each: never lost, never doubled. */
			assert_int_equal(atoi(line + 2), want);
			return;
		}
	}
}

static void test_signals_not_lost(void **state)
{
	struct target t;
	struct stopper s;
	struct diag d = {0};
	char line[256];

	(void)state;
	start_py(&t, WORKERS, "1");
	assert_int_equal(stopper_attach(&s, t.pid, &d), 0);

	/* Sent while stopped. */
	print_message("# USR1 1: sent while stopped\n");
	assert_int_equal(stopper_stop(&s, &d), 0);
	kill(t.pid, SIGUSR1);
	assert_int_equal(stopper_resume(&s, &d), 0);
	cycle_until_usr1(&t, &s, 1);
	assert_true(s.signals_reinjected >= 1);

	/* Sent while running between samples. */
	print_message("# USR1 2: sent while running\n");
	kill(t.pid, SIGUSR1);
	cycle_until_usr1(&t, &s, 2);

	/* Sent just before detaching: the detach must hand it over. */
	print_message("# USR1 3: sent before the detach\n");
	kill(t.pid, SIGUSR1);
	usleep(20000);
	stopper_detach(&s);
	do
		assert_int_equal(read_line(&t, line, sizeof(line), 1), 1);
	while (line[0] != 'U');
	assert_string_equal(line, "U 3");
	assert_untraced(t.pid);
}

static void test_tracer_sigkilled(void **state)
{
	struct target t;
	long before[2];
	int p[2], traced, other;
	pid_t child;
	char c;

	(void)state;
	start_py(&t, WORKERS, "2");
	last_counts(&t, before, 2);
	assert_int_equal(pipe(p), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct stopper s;
		struct diag d = {0};

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (stopper_attach(&s, t.pid, &d) || stopper_stop(&s, &d))
			_exit(1);
		if (write(p[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	record(child);
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	count_states(t.pid, &traced, &other);
	assert_int_equal(traced, 3);
	assert_int_equal(other, 0);

	/* The kernel detaches a dead tracer's tracees (exit_ptrace) before the
	 * tracer can be reaped, and wakes those in PTRACE_INTERRUPT stops. */
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	count_states(t.pid, &traced, &other);
	assert_int_equal(traced, 0);
	assert_untraced(t.pid);
	wait_progress(&t, before, 2);
}

/* Ctrl-C (SIGINT) on a tracer holding the target stopped: the handler lets
 * go and the tracer dies of the signal, as without a handler. */
static void test_signal_handler_releases(void **state)
{
	struct target t;
	long before[2];
	int p[2], status;
	pid_t child;
	char c;

	(void)state;
	start_py(&t, WORKERS, "2");
	last_counts(&t, before, 2);
	assert_int_equal(pipe(p), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct stopper s;
		struct diag d = {0};

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (signals_install(&d) || stopper_attach(&s, t.pid, &d) || stopper_stop(&s, &d))
			_exit(1);
		if (write(p[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	record(child);
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	kill(child, SIGINT);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGINT);
	assert_untraced(t.pid);
	wait_progress(&t, before, 2);
}

/* The direct call, in-process: after it the stopper is inert but detach
 * is still safe. */
static void test_emergency_release(void **state)
{
	struct target t;
	struct stopper s, s2;
	struct diag d = {0};
	long before[3];

	(void)state;
	start_py(&t, WORKERS, "3");
	last_counts(&t, before, 3);
	assert_int_equal(stopper_attach(&s, t.pid, &d), 0);
	assert_int_equal(stopper_stop(&s, &d), 0);
	stopper_emergency_release();
	assert_untraced(t.pid);
	wait_progress(&t, before, 3);

	/* Released while running, too. */
	assert_int_equal(stopper_attach(&s2, t.pid, &d), 0);
	stopper_emergency_release();
	assert_untraced(t.pid);
	stopper_detach(&s2);
	stopper_detach(&s);
	assert_untraced(t.pid);
}

static void test_zombie_leader(void **state)
{
	struct target t;
	struct stopper s;
	struct diag d = {0};
	long before[1];
	int cycles = 0;

	(void)state;
	/* Seized before the leader exits: stopping must not wait for it. */
	start_py(&t, LEADER_EXITS, NULL);
	assert_int_equal(stopper_attach(&s, t.pid, &d), 0);
	while (thread_state(t.pid, t.pid) != 'Z') {
		if (stopper_stop(&s, &d) || stopper_resume(&s, &d))
			fail_msg("%s", d.msg);
		usleep(1000);
	}
	for (cycles = 0; cycles < 200; cycles++) {
		if (stopper_stop(&s, &d))
			fail_msg("%s", d.msg);
		assert_int_equal(stopper_count(&s), 2);
		for (int i = 0; i < 2; i++) {
			assert_int_not_equal(stopper_tid(&s, i), t.pid);
			assert_int_equal(thread_state(t.pid, stopper_tid(&s, i)), 't');
		}
		assert_int_equal(stopper_resume(&s, &d), 0);
	}
	last_counts(&t, before, 1);
	wait_progress(&t, before, 1);
	stopper_detach(&s);

	/* Seized after: the zombie is skipped, not a permission error. */
	assert_int_equal(stopper_attach(&s, t.pid, &d), 0);
	assert_int_equal(stopper_stop(&s, &d), 0);
	assert_int_equal(stopper_count(&s), 2);
	assert_int_equal(stopper_resume(&s, &d), 0);
	stopper_detach(&s);
	last_counts(&t, before, 1);
	wait_progress(&t, before, 1);
}

struct dump_arg {
	pid_t pid;
	int seen;
};

static int dump_fn(void *arg, struct stopper *s)
{
	struct dump_arg *a = arg;

	for (int i = 0; i < stopper_count(s); i++)
		a->seen += thread_state(a->pid, stopper_tid(s, i)) == 't';
	return 42;
}

static void test_with_stopped(void **state)
{
	struct target t;
	struct diag d = {0};
	struct dump_arg a = {0};

	(void)state;
	start_py(&t, WORKERS, "2");
	a.pid = t.pid;
	assert_int_equal(stopper_with_stopped(t.pid, dump_fn, &a, &d), 42);
	assert_int_equal(a.seen, 3);
	assert_untraced(t.pid);
}

static void test_attach_errors(void **state)
{
	struct stopper s;
	struct diag d = {0};
	pid_t gone = fork();

	(void)state;
	assert_true(gone >= 0);
	if (gone == 0)
		_exit(0);
	waitpid(gone, NULL, 0);
	assert_int_equal(stopper_attach(&s, gone, &d), -1);
	assert_int_equal(d.code, EXIT_NO_PROCESS);
	assert_int_equal(stopper_attach(&s, getpid(), &d), -1);
	assert_int_equal(d.code, EXIT_USAGE);
	assert_int_equal(stopper_attach(&s, 0, &d), -1);
	assert_int_equal(d.code, EXIT_USAGE);
}

/* A thread of the target vforks a child that blocks opening a FIFO nobody
 * writes: the thread waits for it in TASK_KILLABLE, which PTRACE_INTERRUPT
 * does not wake, so it cannot be stopped. The stop must end at its deadline,
 * name that tid, and (strict) resume the others or (partial) keep them. */
static char vfork_fifo[64];
static int vfork_tid_fd;

static void *vforker(void *arg)
{
	pid_t tid = gettid(), child;

	(void)arg;
	if (write(vfork_tid_fd, &tid, sizeof(tid)) != sizeof(tid))
		_exit(1);
	child = vfork();
	if (child == 0) {
		open(vfork_fifo, O_RDONLY); /* blocks: nobody writes */
		_exit(0);
	}
	waitpid(child, NULL, 0);
	return NULL;
}

static void test_vfork_deadline(void **state)
{
	struct stopper s;
	struct diag d = {0};
	int p[2], traced, other;
	pid_t target, stuck = 0, vfork_child = 0;
	char want[64];
	uint64_t t0;

	(void)state;
	snprintf(vfork_fifo, sizeof(vfork_fifo), "/tmp/bpfpy-vfork.%d", getpid());
	unlink(vfork_fifo);
	assert_int_equal(mkfifo(vfork_fifo, 0600), 0);
	assert_int_equal(pipe(p), 0);
	target = fork();
	assert_true(target >= 0);
	if (target == 0) {
		pthread_t th;
		volatile unsigned long n = 0;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		vfork_tid_fd = p[1];
		pthread_create(&th, NULL, vforker, NULL);
		for (;;)
			n++;
	}
	record(target);
	close(p[1]);
	assert_int_equal(read(p[0], &stuck, sizeof(stuck)), sizeof(stuck));
	close(p[0]);
	/* Until the thread sits in the vfork wait (its child exists). */
	for (int i = 0; i < 2000; i++) {
		char path[96], buf[64] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", target, stuck);
		f = fopen(path, "re");
		if (f) {
			if (!fgets(buf, sizeof(buf), f))
				buf[0] = 0;
			fclose(f);
		}
		if (buf[0]) {
			vfork_child = (pid_t)atoi(buf);
			break;
		}
		usleep(1000);
	}
	assert_true(vfork_child > 0);
	snprintf(want, sizeof(want), "thread %d did not stop within", stuck);

	assert_int_equal(stopper_attach(&s, target, &d), 0);
	t0 = mono_ns();
	assert_int_equal(stopper_stop(&s, &d), -1);
	assert_true(mono_ns() - t0 < 10ull * 1000000000ull);
	assert_non_null(strstr(d.msg, want));
	assert_int_equal(stopper_count(&s), 0);
	count_states(target, &traced, &other);
	assert_int_equal(traced, 0); /* the main thread was resumed at once */

	s.partial_ok = 1;
	assert_int_equal(stopper_stop(&s, &d), 0);
	assert_int_equal(stopper_stuck_count(&s), 1);
	assert_int_equal(stopper_stuck_tid(&s, 0), stuck);
	assert_int_equal(stopper_count(&s), 1);
	assert_int_equal(stopper_tid(&s, 0), target);
	stopper_detach(&s);
	count_states(target, &traced, &other);
	assert_int_equal(traced, 0);
	/* The stuck thread could not be detached (PTRACE_DETACH needs a
	 * stopped tracee): it stays ours until we exit, so its zombie is ours
	 * to reap before the leader can be. */
	kill(vfork_child, SIGKILL);
	kill(target, SIGKILL);
	waitpid(stuck, NULL, __WALL);
	unlink(vfork_fifo);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_stop_resume_states),
	    T(test_thousand_cycles_progress),
	    T(test_cost_1_and_8_threads),
	    T(test_thread_churn),
	    T(test_target_exits_during_loop),
	    T(test_already_traced_by_strace),
	    T(test_signals_not_lost),
	    T(test_tracer_sigkilled),
	    T(test_signal_handler_releases),
	    T(test_emergency_release),
	    T(test_with_stopped),
	    T(test_zombie_leader),
	    T(test_attach_errors),
	    T(test_vfork_deadline),
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
