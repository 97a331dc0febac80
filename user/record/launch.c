// SPDX-License-Identifier: MIT
#include "launch.h"

#include "monotime.h"
#include "proc.h"
#include "proc_maps.h"
#include "py_process.h"
#include "signals.h"
#include "text_escape.h"

#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

/* The child's side: nothing here may return. */
static void child(char *const argv[], int errfd)
{
	int e;

	signals_child_reset();
	setpgid(0, 0);
	/* Stopped here, the parent sets its options before the exec. */
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) || raise(SIGSTOP)) {
		e = errno;
		(void)!write(errfd, &e, sizeof(e));
		_exit(126);
	}
	execvp(argv[0], argv);
	e = errno;
	(void)!write(errfd, &e, sizeof(e));
	_exit(e == ENOENT ? 127 : 126);
}

/* waitpid with a deadline: SIGCHLD is blocked by the caller and waited for
 * with sigtimedwait, so a stop is seen at once and a stuck child costs at
 * most the deadline. 1 with *st, 0 at the deadline, -1 with errno. */
static int wait_child(pid_t pid, int *st, double deadline)
{
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	for (;;) {
		pid_t r = waitpid(pid, st, WNOHANG | __WALL);
		double left = deadline - mono_s();
		struct timespec ts;

		if (r == pid)
			return 1;
		if (r < 0 && errno != EINTR)
			return -1;
		if (left <= 0)
			return 0;
		if (left > 0.25) /* now and then look again anyway */
			left = 0.25;
		ts.tv_sec = (time_t)left;
		ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
		sigtimedwait(&chld, NULL, &ts);
	}
}

static void block_chld(sigset_t *old)
{
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, old);
}

/* Hand the terminal to the command's group if bpfpy is in the foreground of
 * it: then Ctrl-C (and Ctrl-Z, and reads) are the command's, as in a shell. */
static void give_tty(struct launch *l)
{
	sigset_t ttou, old;

	l->tty = -1;
	if (!isatty(0) || tcgetpgrp(0) != getpgrp())
		return;
	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU);
	sigprocmask(SIG_BLOCK, &ttou, &old);
	l->saved_fg = getpgrp();
	if (!tcsetpgrp(0, l->pid))
		l->tty = 0;
	sigprocmask(SIG_SETMASK, &old, NULL);
}

static void take_tty(struct launch *l)
{
	sigset_t ttou, old;

	if (l->tty < 0)
		return;
	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU);
	sigprocmask(SIG_BLOCK, &ttou, &old);
	tcsetpgrp(l->tty, l->saved_fg);
	sigprocmask(SIG_SETMASK, &old, NULL);
	l->tty = -1;
}

static void note_exit(struct launch *l, int st)
{
	l->exited = 1;
	l->traced = 0;
	l->status = st;
	if (l->errpipe >= 0) {
		int e = 0;

		if (read(l->errpipe, &e, sizeof(e)) == (ssize_t)sizeof(e))
			l->exec_errno = e;
		close(l->errpipe);
		l->errpipe = -1;
	}
}

int launch_start(struct launch *l, char *const argv[], struct diag *d)
{
	int p[2], st = 0, r;
	sigset_t old;
	pid_t pid;

	memset(l, 0, sizeof(*l));
	l->pid = -1;
	l->tty = -1;
	l->errpipe = -1;
	l->syscall_entry = 1;
	if (!argv || !argv[0] || !*argv[0])
		return diag_set(d, EXIT_USAGE, "no command to launch after --");
	l->argv0 = argv[0];
	if (pipe2(p, O_CLOEXEC))
		return diag_errno(d, errno, "launch %s: pipe", argv[0]);
	block_chld(&old);
	pid = fork();
	if (pid < 0) {
		r = errno;
		close(p[0]);
		close(p[1]);
		sigprocmask(SIG_SETMASK, &old, NULL);
		return diag_errno(d, r, "launch %s: fork", argv[0]);
	}
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		close(p[0]);
		child(argv, p[1]);
	}
	close(p[1]);
	l->pid = pid;
	l->errpipe = p[0];
	l->traced = 1;
	/* Both sides set the group: whichever runs first, no window. */
	setpgid(pid, pid);
	r = wait_child(pid, &st, mono_s() + 5.0);
	if (r == 1 && WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP &&
	    !ptrace(
		PTRACE_SETOPTIONS, pid, NULL,
		(void *)(long)(PTRACE_O_TRACEEXEC | PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL))) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		give_tty(l);
		return 0;
	}
	if (r == 1 && (WIFEXITED(st) || WIFSIGNALED(st)))
		note_exit(l, st);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (!l->exited) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, __WALL);
		note_exit(l, st);
	}
	return diag_errno(d, l->exec_errno ? l->exec_errno : ECHILD,
			  "launch %s: the child did not stop before its exec", argv[0]);
}

enum { PROBE_NO, PROBE_LATER, PROBE_READY };

/* Is addr in a writable mapping of pid? The loader first reserves a
 * library's whole span with the file mapped at one offset, then maps each
 * segment over it: until libpython's data segment is in place, _PyRuntime
 * reads as whatever bytes of the file lie there (0xffffffff as the
 * interpreter list head on pyenv's 3.12). */
static int in_writable_map(pid_t pid, uint64_t addr)
{
	struct proc_maps m = {0};
	struct diag d = {0};
	int w = 0;

	if (proc_maps_read(pid, &m, &d))
		return 0;
	for (size_t i = 0; i < m.n; i++)
		if (addr >= m.v[i].start && addr < m.v[i].end) {
			w = m.v[i].perms[1] == 'w';
			break;
		}
	proc_maps_free(&m);
	return w;
}

/* Is the current image an initialised CPython? Once its interpreter's file
 * is found uninitialised, later stops only read the interpreter list head. */
static int probe(struct launch *l)
{
	static struct py_process p; /* large; one launch at a time */
	struct diag d = {0};
	struct mem_reader m;
	uint64_t v = 0;

	mem_reader_init_pid(&m, l->pid);
	if (l->gil_addr)
		return !mem_read(&m, &v, sizeof(v), l->gil_addr) && v ? PROBE_READY : PROBE_LATER;
	if (l->interp_addr && (mem_read(&m, &v, sizeof(v), l->interp_addr) || !v))
		return PROBE_LATER;
	if (!py_process_open(&p, l->pid, 0, &d)) {
		uint64_t interp = 0;

		l->is_py = 1;
		if (!in_writable_map(l->pid, p.cfg.runtime_addr))
			return PROBE_LATER; /* at the next mmap, again */

		/* Opened with the GIL not created yet, the holder address would
		 * be read off a null pointer: wait for it (see launch.h). */
		if (!p.extra.gil_per_interp)
			return PROBE_READY;
		if (mem_read(&p.mem, &interp, sizeof(interp),
			     p.cfg.runtime_addr + p.cfg.off.runtime_interpreters_head) ||
		    !interp)
			return PROBE_LATER;
		l->gil_addr = interp + p.extra.interp_ceval_gil;
		l->is_py = 1;
		return probe(l);
	}
	if (p.not_initialised)
		l->is_py = 1;
	if (p.not_initialised && in_writable_map(l->pid, p.cfg.runtime_addr)) {
		l->interp_addr = p.cfg.runtime_addr + p.cfg.off.runtime_interpreters_head;
		return PROBE_LATER;
	}
	return PROBE_NO;
}

static void resume(struct launch *l, int sig)
{
	/* System calls are watched only while an image may yet map Python. */
	enum __ptrace_request how =
	    !l->watching && l->steps < LAUNCH_SYSCALLS_PER_IMAGE ? PTRACE_SYSCALL : PTRACE_CONT;

	ptrace(how, l->pid, NULL, (void *)(long)sig);
}

/* Where in a system call the tracee stopped: updates entry/exit and the
 * number, and says whether an mmap has just returned. */
static int after_mmap(struct launch *l)
{
	struct __ptrace_syscall_info si;
	long n = ptrace(PTRACE_GET_SYSCALL_INFO, l->pid, (void *)sizeof(si), &si);

	if (n <= 0)
		return 0;
	if (si.op == PTRACE_SYSCALL_INFO_ENTRY) {
		l->last_nr = (long)si.entry.nr;
		return 0;
	}
	return si.op == PTRACE_SYSCALL_INFO_EXIT && l->last_nr == SYS_mmap;
}

/* One wait status of the tracee, handled: 0 it was resumed, 1 it is an
 * initialised CPython, left stopped, 2 it is no longer traced (exited, or
 * detached to obey a stop signal; *why says which). */
static int handle_stop(struct launch *l, int st, const char **why)
{
	int pr;

	if (WIFEXITED(st) || WIFSIGNALED(st)) {
		note_exit(l, st);
		*why = "it exited first";
		return 2;
	}
	if (!WIFSTOPPED(st))
		return 0;
	if (st >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8))) {
		/* A new image: what was known of the old one is void. */
		if (l->errpipe >= 0) { /* CLOEXEC: the exec went through */
			close(l->errpipe);
			l->errpipe = -1;
		}
		l->interp_addr = l->gil_addr = 0;
		l->steps = 0;
		l->is_py = 0;
		l->exec_at = mono_s();
		/* Every new image is stepped until it settles: a libpython
		 * is mapped by its loader after the exec (pyenv's builds). */
		l->watching = 0;
		pr = probe(l);
	} else if (WSTOPSIG(st) == (SIGTRAP | 0x80)) {
		l->steps++;
		pr = !l->watching && (after_mmap(l) || l->interp_addr || l->gil_addr) ? probe(l)
										      : PROBE_LATER;
	} else {
		int sig = WSTOPSIG(st);

		if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) {
			/* It is to stop: let it, untraced, as if we were not here. */
			ptrace(PTRACE_DETACH, l->pid, NULL, (void *)(long)sig);
			l->traced = l->watching = 0;
			*why = "it was stopped by a signal first";
			return 2;
		}
		resume(l, sig); /* delivered as if untraced */
		return 0;
	}
	if (pr == PROBE_READY)
		return 1;
	resume(l, 0);
	return 0;
}

int launch_until_python(struct launch *l, double timeout_s, int quiet, int follow, struct diag *d)
{
	double deadline = mono_s() + timeout_s;
	const char *why = "it did not become an initialised CPython in time";
	int rc = 1, st;
	sigset_t old;
	char ec[64], comm[32];

	if (l->exited || !l->traced)
		return 1;
	block_chld(&old);
	if (!l->started) {
		l->started = 1;
		l->exec_at = mono_s();
		ptrace(PTRACE_CONT, l->pid, NULL, NULL); /* to the exec */
	}
	for (;;) {
		/* An image that is not Python has LAUNCH_SETTLE_S to map one. */
		double until = deadline;
		int r, h;

		if (!l->is_py && !l->watching && l->started > 1 &&
		    l->exec_at + LAUNCH_SETTLE_S < until)
			until = l->exec_at + LAUNCH_SETTLE_S;
		r = wait_child(l->pid, &st, until);
		if (r < 0)
			break;
		if (r == 0) {
			if (!l->is_py && !l->watching && l->started > 1 && mono_s() < deadline) {
				l->watching = 1;
				if (follow) /* resumed in PTRACE_CONT at its next stop */
					continue;
			}
			break;
		}
		h = handle_stop(l, st, &why);
		if (h == 1) {
			rc = 0;
			break;
		}
		if (h == 2)
			break;
		if (st >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8)))
			l->started = 2; /* past its first exec */
		if (!l->is_py && !l->watching && l->steps >= LAUNCH_SETTLE_STEPS) {
			l->watching = 1;
			if (!follow)
				break;
		}
	}
	if (l->exited && l->exec_errno) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		take_tty(l);
		if (!d)
			return -1;
		return diag_set(d, l->exec_errno == ENOENT ? 127 : 126, "cannot run %s: %s",
				text_esc(l->argv0, ec, sizeof(ec)), strerror(l->exec_errno));
	}
	if (rc && l->traced && !l->watching)
		launch_release(l);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (rc && !quiet) {
		proc_comm(l->pid, comm, sizeof(comm));
		if (l->watching)
			fprintf(
			    stderr,
			    "bpfpy: pid %d (%s) is not CPython: watching its execs (its children: "
			    "--subprocesses)\n",
			    l->pid, text_esc(comm, ec, sizeof(ec)));
		else
			fprintf(stderr, "bpfpy: pid %d (%s) not sampled from its start: %s\n",
				l->pid, text_esc(l->exited ? l->argv0 : comm, ec, sizeof(ec)), why);
	}
	return rc;
}

int launch_poll(struct launch *l)
{
	const char *why;
	int st;

	while (l->traced && !l->exited && waitpid(l->pid, &st, WNOHANG | __WALL) == l->pid) {
		int h = handle_stop(l, st, &why);

		if (h == 2)
			break;
		/* An exec into Python: step it to its interpreter, bounded. */
		if (h == 1 ||
		    (!l->watching && launch_until_python(l, LAUNCH_READY_S, 1, 0, NULL) == 0)) {
			if (l->on_ready)
				l->on_ready(l->ready_ctx, l->pid);
			launch_release(l);
			return 1;
		}
	}
	return 0;
}

/* Detach a tracee that may be running (watched under PTRACE_CONT):
 * PTRACE_DETACH needs a stop, and a TRACEME tracee can only be stopped by a
 * signal. SIGSTOP it, detach at the first stop, then SIGCONT: a SIGSTOP
 * still pending at the detach would stop it untraced, and SIGCONT discards
 * it. Bounded: 3 s, then it is left to EXITKILL. */
static void detach_running(struct launch *l)
{
	double deadline = mono_s() + 3.0;
	sigset_t old;
	int st;

	block_chld(&old);
	kill(l->pid, SIGSTOP);
	while (wait_child(l->pid, &st, deadline) == 1) {
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			note_exit(l, st);
			break;
		}
		if (!WIFSTOPPED(st))
			continue;
		/* Another signal than ours is delivered on the way out. */
		ptrace(PTRACE_DETACH, l->pid, NULL,
		       (void *)(long)(WSTOPSIG(st) != SIGSTOP && !(WSTOPSIG(st) & 0x80) &&
					      st >> 16 == 0 && WSTOPSIG(st) != SIGTRAP
					  ? WSTOPSIG(st)
					  : 0));
		l->traced = 0;
		break;
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (!l->exited)
		kill(l->pid, SIGCONT);
	l->watching = 0;
}

void launch_release(struct launch *l)
{
	if (!l->traced)
		return;
	if (l->watching) {
		detach_running(l);
		return;
	}
	/* PTRACE_DETACH needs a ptrace stop: it is in one whenever we get
	 * here; if not (killed meanwhile), ESRCH is all that happens. */
	ptrace(PTRACE_DETACH, l->pid, NULL, NULL);
	l->traced = 0;
}

int launch_reap(struct launch *l)
{
	int st;

	if (l->exited)
		return 1;
	/* A traced child's stops come through waitpid too: never eat one. */
	if (l->traced) {
		launch_poll(l);
		return l->exited;
	}
	if (l->pid > 0 && waitpid(l->pid, &st, WNOHANG) == l->pid &&
	    (WIFEXITED(st) || WIFSIGNALED(st)))
		note_exit(l, st);
	return l->exited;
}

void launch_signal(const struct launch *l, int sig)
{
	if (l->pid > 0 && !l->exited)
		kill(-l->pid, sig);
}

int launch_exit_code(const struct launch *l)
{
	if (!l->exited)
		return EXIT_FAIL;
	if (WIFSIGNALED(l->status))
		return 128 + WTERMSIG(l->status);
	return WEXITSTATUS(l->status);
}

int launch_should_end(struct launch *l, double now, double *grace, const char *cmdname, int nl)
{
	int sig = signals_take_stop();

	if (sig) {
		launch_signal(l, sig);
		if (*grace == INFINITY)
			*grace = now + LAUNCH_GRACE_S;
	}
	if (launch_reap(l))
		return 1;
	if (now < *grace)
		return 0;
	fprintf(stderr, "%sbpfpy %s: pid %d still runs %.0f s after the signal: stopping here\n",
		nl ? "\n" : "", cmdname, l->pid, LAUNCH_GRACE_S);
	return 1;
}

void launch_end(struct launch *l)
{
	launch_release(l);
	take_tty(l);
	if (l->errpipe >= 0)
		close(l->errpipe);
	l->errpipe = -1;
}

int launch_split_argv(int *argc, char **argv, char ***cmd, const char *who)
{
	for (int i = 1; i < *argc; i++)
		if (!strcmp(argv[i], "--")) {
			*cmd = argv + i + 1;
			*argc = i;
			if (!argv[i + 1]) {
				fprintf(stderr, "bpfpy %s: no command after --\n", who);
				return -1;
			}
			return 0;
		}
	return 0;
}
