/* SPDX-License-Identifier: MIT */
/*
 * Launch a command under the profiler: `bpfpy record -- CMD ARGS...` and
 * `bpfpy trace -- CMD ARGS...`.
 *
 * The command is run without a shell (execvp, argv as given), with bpfpy's
 * own credentials (root under sudo, as py-spy does: prefix CMD with
 * `setpriv --reuid=U --regid=G --init-groups` or `runuser -u U --` to drop
 * them), in a process group of its own which is handed the terminal when
 * bpfpy has it, so that Ctrl-C reaches the command (and its children) and
 * bpfpy, seeing it exit, writes what it got.
 *
 * Until its interpreter exists, the command is a ptrace tracee (TRACEME,
 * EXITKILL): stopped at each of its execs (sh -> chroot -> python) and at its
 * system calls, and looked at after each mmap of a new image and, once the
 * interpreter's file is mapped, at each stop until _PyRuntime's interpreter
 * list is non-empty (and, where the GIL hangs off the interpreter, 3.12+,
 * until its pointer is set: the sampler reads the holder through it). Both
 * happen before the first bytecode runs (the
 * frozen importlib is run after it), so the caller registers the process
 * while it is still stopped and sampling begins at its first instruction of
 * Python. Then it is detached and runs untraced. Every wait has a deadline;
 * if bpfpy dies while it is traced, the kernel kills it (EXITKILL) rather
 * than leave it stopped.
 */
#ifndef LAUNCH_H
#define LAUNCH_H

#include <stdint.h>
#include <sys/types.h>

#include "diag.h"

/* How long a command may take to become an initialised CPython. */
#define LAUNCH_READY_S 30.0
/* After a signal forwarded to the command, how long bpfpy waits for it to
 * exit before it stops recording (the command goes on running). */
#define LAUNCH_GRACE_S 10.0
/* System calls after an exec with no interpreter mapped: past this the image
 * is taken as not Python, and only its next exec is watched. */
#define LAUNCH_SYSCALLS_PER_IMAGE 2000
/* An image that maps no interpreter in this long (or this many system-call
 * stops, past any loader's work) is not Python: it runs on, watched only
 * at its execs (sh -c "...; python x.py" forks its Python: --subprocesses
 * finds that one). */
#define LAUNCH_SETTLE_S	    0.5
#define LAUNCH_SETTLE_STEPS 600

struct launch {
	pid_t pid; /* the command; also its process group */
	int traced;
	int exited;
	int status;	      /* from waitpid, once exited */
	int exec_errno;	      /* execvp failed in the child */
	int errpipe;	      /* read end: the child's execvp errno, or EOF at exec */
	int tty;	      /* the terminal handed to the command's group, or -1 */
	pid_t saved_fg;	      /* foreground group to give the terminal back to */
	uint64_t interp_addr; /* &_PyRuntime.interpreters.head, once mapped */
	uint64_t gil_addr;    /* &interp->ceval.gil (3.12+), once the head is set */
	int steps;	      /* system-call stops since the last exec */
	int syscall_entry;    /* the next syscall stop is an entry */
	long last_nr;	      /* number of the syscall being made */
	char *argv0;
	int started;	/* 1 resumed to its exec, 2 past it */
	int is_py;	/* the current image maps a CPython */
	int watching;	/* traced under PTRACE_CONT: only its execs stop it */
	double exec_at; /* when the current image was exec'd */
	/* Called by launch_poll when a watched command exec'd a CPython that is
	 * now initialised (still stopped: register it), before the detach. */
	void (*on_ready)(void *ctx, pid_t pid);
	void *ready_ctx;
};

/* `CMD [OPTIONS] -- CMD ARGS...`: everything after the first "--" is the
 * command, never our options. *cmd gets it (NULL without "--") and *argc
 * shrinks to what argp parses. -1 (with the message "bpfpy WHO: no command
 * after --" printed) for a "--" with nothing after it. */
int launch_split_argv(int *argc, char **argv, char ***cmd, const char *who);

/* Fork and exec argv (argv[0] looked up in PATH); the child is left in a
 * ptrace stop, not yet exec'd. 0, or -1 with d set. */
int launch_start(struct launch *l, char *const argv[], struct diag *d);

/* Run the command until it is an initialised CPython process: 0 with it
 * still stopped (register it, then launch_release); 1 if it is not (it
 * exited, was stopped by a signal, or the deadline passed: it then runs
 * untraced; or its image is not Python: it runs on, watched (l->watching)
 * so that launch_poll catches an exec into Python; a note went to stderr
 * unless quiet; with follow, a watched image is followed through its execs
 * until the deadline instead); -1 with d set (d may be NULL after the first
 * call) if it
 * could not be executed (exit code 127 for a command not found, 126 for
 * another execvp error, as env(1) does). */
int launch_until_python(struct launch *l, double timeout_s, int quiet, int follow, struct diag *d);

/* Detach: the command runs untraced from here (a watched one is stopped
 * for the detach and continued, bounded). */
void launch_release(struct launch *l);

/* Non-blocking, each turn of a loop while l->watching: handles the stops of
 * the watched command; on an exec into CPython steps it to its interpreter,
 * calls on_ready and detaches it: then 1. */
int launch_poll(struct launch *l);

/* Has the command exited? Reaps it (non-blocking): 1 once it has. */
int launch_reap(struct launch *l);

/* Forward a signal to the command's process group. */
void launch_signal(const struct launch *l, int sig);

/* The command's exit status as a shell gives it: its exit code, 128+N when
 * signal N killed it; EXIT_FAIL if it has not exited. */
int launch_exit_code(const struct launch *l);

/* For the loop of record and trace, each turn: a stop request to bpfpy
 * (INT, TERM, HUP) is forwarded to the command's group; 1 once the command
 * exited, or LAUNCH_GRACE_S after the first forwarded signal (noted on
 * stderr, "bpfpy CMDNAME: ..."; with a newline first if nl). *grace starts
 * at INFINITY. */
int launch_should_end(struct launch *l, double now, double *grace, const char *cmdname, int nl);

/* Give the terminal back, detach if still traced. The command is not
 * waited for or killed. */
void launch_end(struct launch *l);

#endif /* LAUNCH_H */
