// SPDX-License-Identifier: MIT
/*
 * The tables the handler reads are fixed arrays of slots claimed with
 * atomics: a slot is written while FILLING and read by the handler only once
 * LIVE, so a handler that interrupts a registration sees either nothing or a
 * whole path. No allocation, no stdio, no locks in the handler.
 */
#include "signals.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PATH_SLOTS   16
#define CHILD_SLOTS  64
#define RMTREE_DEPTH 8

enum { SLOT_FREE, SLOT_FILLING, SLOT_LIVE };

static const int fatal_sigs[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGPIPE, SIGALRM,  SIGTERM,
				 SIGUSR1, SIGUSR2, SIGXCPU, SIGXFSZ, SIGVTALRM};
static const int stop_sigs[] = {SIGTSTP, SIGTTIN, SIGTTOU};

static struct {
	_Atomic int state;
	int is_dir;
	char path[PATH_MAX];
} paths[PATH_SLOTS];
static _Atomic pid_t children[CHILD_SLOTS];

static void (*release_hook)(void);
static volatile sig_atomic_t graceful, stop_requested, released_by;

static void on_signal(int sig);

static int set_handler(int sig, void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	/* Nothing else may run the handler while it releases the target. */
	sigfillset(&sa.sa_mask);
	return sigaction(sig, &sa, NULL);
}

static void release(int sig)
{
	if (release_hook) {
		release_hook();
		released_by = sig;
	}
}

/* SIGKILL what we started, and reap it, bounded: a child killed in the
 * middle of I/O takes a moment to go, and it may be writing in our paths. */
static void kill_children(void)
{
	struct timespec ts = {0, 1000000};

	for (int i = 0; i < CHILD_SLOTS; i++) {
		pid_t pid = atomic_load(&children[i]);

		if (pid > 0)
			kill(pid, SIGKILL);
	}
	for (int i = 0; i < CHILD_SLOTS; i++) {
		pid_t pid = atomic_load(&children[i]);
		int st;

		for (int k = 0; pid > 0 && k < 1000; k++) {
			pid_t r = waitpid(pid, &st, WNOHANG);

			if (r == pid || (r < 0 && errno != EINTR))
				break;
			nanosleep(&ts, NULL);
		}
	}
}

static void remove_paths(void)
{
	for (int i = 0; i < PATH_SLOTS; i++) {
		if (atomic_load(&paths[i].state) != SLOT_LIVE)
			continue;
		if (paths[i].is_dir)
			signals_rmtree(paths[i].path);
		else
			unlink(paths[i].path);
	}
}

static void on_signal(int sig)
{
	int saved = errno;

	if (graceful && (sig == SIGINT || sig == SIGTERM || sig == SIGHUP)) {
		/* Which one: record -- CMD forwards it. A HUP (record --rotate
		 * takes it as "check DIR again") never hides an INT or TERM. */
		if (sig != SIGHUP || !stop_requested)
			stop_requested = sig;
		errno = saved;
		return;
	}
	release(sig);
	for (size_t i = 0; i < sizeof(stop_sigs) / sizeof(stop_sigs[0]); i++) {
		if (sig == stop_sigs[i]) {
			sigset_t one;

			/* Stop now, with the default action, inside the handler;
			 * SIGCONT returns here and we carry on. */
			set_handler(sig, SIG_DFL);
			sigemptyset(&one);
			sigaddset(&one, sig);
			raise(sig);
			pthread_sigmask(SIG_UNBLOCK, &one, NULL);
			pthread_sigmask(SIG_BLOCK, &one, NULL);
			set_handler(sig, on_signal);
			errno = saved;
			return;
		}
	}
	kill_children();
	remove_paths();
	set_handler(sig, SIG_DFL);
	/* Blocked while we run; delivered with the default action on return. */
	raise(sig);
	errno = saved;
}

int signals_install(struct diag *d)
{
	struct sigaction dfl;

	for (size_t i = 0; i < sizeof(fatal_sigs) / sizeof(fatal_sigs[0]); i++)
		if (set_handler(fatal_sigs[i], on_signal))
			return diag_errno(d, errno, "sigaction(%s)", strsignal(fatal_sigs[i]));
	for (size_t i = 0; i < sizeof(stop_sigs) / sizeof(stop_sigs[0]); i++)
		if (set_handler(stop_sigs[i], on_signal))
			return diag_errno(d, errno, "sigaction(%s)", strsignal(stop_sigs[i]));
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(SIGCHLD, &dfl, NULL);
	return 0;
}

void signals_set_graceful(int on)
{
	graceful = on;
}

int signals_stop_requested(void)
{
	return stop_requested;
}

int signals_take_stop(void)
{
	int sig = stop_requested;

	stop_requested = 0;
	return sig;
}

void signals_set_release_hook(void (*fn)(void))
{
	sigset_t old;

	signals_block(&old);
	release_hook = fn;
	signals_restore(&old);
}

int signals_released(void)
{
	return released_by;
}

int signals_track_path(const char *path, int is_dir)
{
	if (strlen(path) >= PATH_MAX)
		return -1;
	for (int i = 0; i < PATH_SLOTS; i++) {
		int expect = SLOT_FREE;

		if (atomic_compare_exchange_strong(&paths[i].state, &expect, SLOT_FILLING)) {
			strcpy(paths[i].path, path);
			paths[i].is_dir = is_dir;
			atomic_store(&paths[i].state, SLOT_LIVE);
			return 0;
		}
	}
	return -1;
}

void signals_untrack_path(const char *path)
{
	if (!path)
		return;
	for (int i = 0; i < PATH_SLOTS; i++) {
		int expect = SLOT_LIVE;

		if (!strcmp(paths[i].path, path) &&
		    atomic_compare_exchange_strong(&paths[i].state, &expect, SLOT_FILLING)) {
			paths[i].path[0] = 0;
			atomic_store(&paths[i].state, SLOT_FREE);
		}
	}
}

int signals_track_child(pid_t pid)
{
	for (int i = 0; i < CHILD_SLOTS; i++) {
		pid_t expect = 0;

		if (atomic_compare_exchange_strong(&children[i], &expect, pid))
			return 0;
	}
	return -1;
}

void signals_untrack_child(pid_t pid)
{
	for (int i = 0; i < CHILD_SLOTS; i++) {
		pid_t expect = pid;

		atomic_compare_exchange_strong(&children[i], &expect, 0);
	}
}

void signals_child_reset(void)
{
	for (int i = 0; i < PATH_SLOTS; i++)
		atomic_store(&paths[i].state, SLOT_FREE);
	for (int i = 0; i < CHILD_SLOTS; i++)
		atomic_store(&children[i], 0);
	release_hook = NULL;
	for (size_t i = 0; i < sizeof(fatal_sigs) / sizeof(fatal_sigs[0]); i++)
		set_handler(fatal_sigs[i], SIG_DFL);
	for (size_t i = 0; i < sizeof(stop_sigs) / sizeof(stop_sigs[0]); i++)
		set_handler(stop_sigs[i], SIG_DFL);
}

void signals_block(sigset_t *old)
{
	sigset_t set;

	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(fatal_sigs) / sizeof(fatal_sigs[0]); i++)
		sigaddset(&set, fatal_sigs[i]);
	for (size_t i = 0; i < sizeof(stop_sigs) / sizeof(stop_sigs[0]); i++)
		sigaddset(&set, stop_sigs[i]);
	pthread_sigmask(SIG_BLOCK, &set, old);
}

void signals_restore(const sigset_t *old)
{
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

struct linux_dirent64 {
	ino64_t d_ino;
	off64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* Empties the directory open at fd; depth bounds the recursion (and the
 * stack used inside a handler). */
static void rm_contents(int fd, int depth)
{
	char buf[2048];
	long n;

	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			struct linux_dirent64 *e = (struct linux_dirent64 *)(buf + off);
			const char *name = e->d_name;

			off += e->d_reclen;
			if (!strcmp(name, ".") || !strcmp(name, ".."))
				continue;
			if (!unlinkat(fd, name, 0) || errno != EISDIR || depth <= 0)
				continue;
			int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sub >= 0) {
				rm_contents(sub, depth - 1);
				close(sub);
			}
			unlinkat(fd, name, AT_REMOVEDIR);
		}
	}
}

int signals_rmtree(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -1;
	rm_contents(fd, RMTREE_DEPTH);
	close(fd);
	return rmdir(path);
}
