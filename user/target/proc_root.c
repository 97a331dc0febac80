// SPDX-License-Identifier: MIT
#include "proc_root.h"

#include "diag.h"
#include "monotime.h"
#include "proc.h"
#include "signals.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* RESOLVE_IN_ROOT fails with EAGAIN when a rename or mount races with the
 * lookup; a few retries are enough in practice and keep us bounded. */
#define OPENAT2_RETRIES 8

static int proc_gone(pid_t pid)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/%d", (int)pid);
	return access(p, F_OK) != 0 && errno == ENOENT;
}

/* The kernel's own bound on symlinks followed in one lookup. */
#define LINKS_MAX 40

int proc_root_no_openat2;

/* Is fd the root directory we started from? */
static int is_root(int fd, const struct stat *root)
{
	struct stat st;

	return fstat(fd, &st) == 0 && st.st_dev == root->st_dev && st.st_ino == root->st_ino;
}

/*
 * RESOLVE_IN_ROOT by hand, for kernels before 5.6 (and valgrind, which does
 * not know openat2). One component at a time, opened O_PATH | O_NOFOLLOW
 * from the directory reached so far; a symlink is read and its text takes
 * the place of the component, an absolute one restarting from the target's
 * root; ".." at that root stays there. So nothing the target plants in its
 * tree leads out of it. Returns an fd or -1 with errno set.
 */
static int resolve_in_root(int rootfd, const char *path, int flags)
{
	char buf[2 * PATH_MAX], link[PATH_MAX], self[64], *rest, *comp;
	struct stat root, st;
	int cur, fd, err, links = 0;

	if (fstat(rootfd, &root))
		return -1;
	if (strlen(path) >= PATH_MAX)
		return errno = ENAMETOOLONG, -1;
	strcpy(buf, path);
	rest = buf;
	cur = dup(rootfd);
	while (cur >= 0) {
		int next, last;
		ssize_t n;

		while (*rest == '/')
			rest++;
		comp = rest;
		rest += strcspn(rest, "/");
		last = *rest == 0;
		if (!last)
			*rest++ = 0;
		if (!*comp || !strcmp(comp, ".")) {
			if (last)
				break; /* "" or "dir/.": the directory itself */
			continue;
		}
		if (!strcmp(comp, "..") && is_root(cur, &root)) {
			if (last)
				break;
			continue;
		}
		next = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 || fstat(next, &st)) {
			err = errno;
			if (next >= 0)
				close(next);
			close(cur);
			return errno = err, -1;
		}
		if (S_ISLNK(st.st_mode)) {
			size_t tail = last ? 0 : strlen(rest);

			n = readlinkat(next, "", link, sizeof(link) - 1);
			close(next);
			if (++links > LINKS_MAX || n <= 0 || (size_t)n + 1 + tail >= sizeof(buf)) {
				close(cur);
				return errno = n <= 0		   ? EINVAL
					       : links > LINKS_MAX ? ELOOP
								   : ENAMETOOLONG,
				       -1;
			}
			/* The link's text, then what was left: "link/rest". */
			memmove(buf + n + 1, rest, tail + 1);
			memcpy(buf, link, (size_t)n);
			buf[n] = last ? 0 : '/';
			rest = buf;
			if (link[0] == '/') {
				close(cur);
				cur = dup(rootfd);
			}
			continue;
		}
		close(cur);
		cur = next;
		if (last)
			break;
	}
	if (cur < 0)
		return -1;
	/* Reopen the O_PATH fd for real: same inode, no new lookup. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", cur);
	fd = open(self, (flags & ~O_NOFOLLOW) | O_CLOEXEC);
	err = errno;
	close(cur);
	errno = err;
	return fd;
}

int proc_root_open(pid_t pid, const char *path, int flags, struct diag *d)
{
	struct open_how how;
	char root[64];
	int dfd, fd = -1, err = 0;

	if (pid <= 0)
		return diag_set(d, EXIT_NO_PROCESS, "pid %d: no such process", (int)pid);
	if (!path || !*path)
		return diag_set(d, EXIT_FAIL, "pid %d: empty path", (int)pid);
	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	dfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		err = errno;
		if (err == ENOENT || err == ESRCH)
			return diag_set(d, EXIT_NO_PROCESS, "pid %d: no such process", (int)pid);
		return diag_errno(d, err, "pid %d: cannot open %s", (int)pid, root);
	}
	memset(&how, 0, sizeof(how));
	how.flags = (uint64_t)(unsigned int)(flags | O_CLOEXEC);
	/* Magic links (/proc/self/...) inside the target's tree could point
	 * anywhere; a file the target maps never needs one. */
	how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
	err = ENOSYS;
	for (int i = 0; i < OPENAT2_RETRIES && !proc_root_no_openat2; i++) {
		fd = (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));
		err = fd < 0 ? errno : 0;
		if (fd >= 0 || err != EAGAIN)
			break;
	}
	if (fd < 0 && err == ENOSYS) { /* no openat2: the same confinement by hand */
		fd = resolve_in_root(dfd, path, flags);
		err = fd < 0 ? errno : 0;
	}
	close(dfd);
	if (fd >= 0)
		return fd;
	if (proc_gone(pid))
		return diag_set(d, EXIT_NO_PROCESS, "pid %d: no such process", (int)pid);
	return diag_errno(d, err, "pid %d: cannot open %s in its root", (int)pid, path);
}

static int same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (stat(a, &sa) || stat(b, &sb))
		return -1;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int proc_same_mount_ns(pid_t pid)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/%d/ns/mnt", (int)pid);
	return same_file("/proc/self/ns/mnt", p);
}

int proc_same_root(pid_t pid)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/%d/root", (int)pid);
	return same_file("/", p);
}

int proc_ns_note(pid_t pid, char *buf, size_t len)
{
	char p[64], target[PATH_MAX];
	struct stat st;
	int same_ns, same_root, n;
	ssize_t tl;

	if (len)
		buf[0] = '\0';
	same_ns = proc_same_mount_ns(pid);
	same_root = proc_same_root(pid);
	if (same_ns < 0 || same_root < 0)
		return -1;
	if (same_ns && same_root)
		return 0;
	snprintf(p, sizeof(p), "/proc/%d/ns/mnt", (int)pid);
	if (stat(p, &st))
		return -1;
	if (same_root) {
		n = snprintf(buf, len, "mnt ns %llu", (unsigned long long)st.st_ino);
	} else {
		snprintf(p, sizeof(p), "/proc/%d/root", (int)pid);
		tl = readlink(p, target, sizeof(target) - 1);
		if (tl < 0)
			return -1;
		target[tl] = '\0';
		n = snprintf(buf, len, "mnt ns %llu (chroot %s)", (unsigned long long)st.st_ino,
			     target);
	}
	if (n < 0)
		return -1;
	return (size_t)n < len ? n : (int)(len ? len - 1 : 0);
}

static const char *type_name(mode_t m)
{
	return S_ISFIFO(m)   ? "a FIFO"
	       : S_ISCHR(m)  ? "a character device"
	       : S_ISBLK(m)  ? "a block device"
	       : S_ISSOCK(m) ? "a socket"
	       : S_ISDIR(m)  ? "a directory"
	       : S_ISLNK(m)  ? "a symbolic link"
			     : "not a regular file";
}

/* The shared second half of every safe open: pathfd (O_PATH, consumed) must
 * be a regular file, which is then opened without blocking. */
static int reopen_regular(int pathfd, const char *what, struct diag *d)
{
	char self[64];
	struct stat st;
	int fd, err;

	if (fstat(pathfd, &st)) {
		err = errno;
		close(pathfd);
		return diag_errno(d, err, "%s: fstat", what);
	}
	if (!S_ISREG(st.st_mode)) {
		close(pathfd);
		return diag_set(d, EXIT_FAIL, "%s is %s, not a regular file: not opened", what,
				type_name(st.st_mode));
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pathfd);
	fd = open(self, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	err = errno;
	close(pathfd);
	if (fd < 0)
		return diag_errno(d, err, "%s: cannot open", what);
	return fd;
}

int proc_root_open_file(pid_t pid, const char *path, struct diag *d)
{
	char what[PATH_MAX + 32];
	int pfd = proc_root_open(pid, path, O_PATH, d);

	if (pfd < 0)
		return -1;
	snprintf(what, sizeof(what), "pid %d: %s", (int)pid, path);
	return reopen_regular(pfd, what, d);
}

int proc_map_file_open(pid_t pid, uint64_t start, uint64_t end, struct diag *d)
{
	char p[128];
	int pfd;

	snprintf(p, sizeof(p), "/proc/%d/map_files/%llx-%llx", (int)pid, (unsigned long long)start,
		 (unsigned long long)end);
	/* The link is the kernel's own reference to the mapped file, not a
	 * path walk: following it cannot leave the mapping. */
	pfd = open(p, O_PATH | O_CLOEXEC);
	if (pfd < 0) {
		if (proc_gone(pid))
			return diag_set(d, EXIT_NO_PROCESS, "pid %d: no such process", (int)pid);
		return diag_errno(d, errno, "pid %d: cannot open %s", (int)pid, p);
	}
	return reopen_regular(pfd, p, d);
}

int proc_root_path(pid_t pid, const char *maps_path, char *out, size_t len)
{
	char p[64], root[PATH_MAX];
	ssize_t n;

	if (maps_path[0] != '/')
		return -1;
	if (proc_same_mount_ns(pid) != 1 || proc_same_root(pid) == 1) {
		if ((size_t)snprintf(out, len, "%s", maps_path) >= len)
			return -1;
		return 0;
	}
	/* A chroot in our mount namespace: maps prints our path for the file;
	 * the kernel's link for the target's root says which part is the
	 * chroot's directory. */
	snprintf(p, sizeof(p), "/proc/%d/root", (int)pid);
	n = readlink(p, root, sizeof(root) - 1);
	if (n <= 0)
		return -1;
	root[n] = '\0';
	if (strncmp(maps_path, root, (size_t)n) || maps_path[n] != '/')
		return -1;
	if ((size_t)snprintf(out, len, "%s", maps_path + n) >= len)
		return -1;
	return 0;
}

int proc_target_file_open(pid_t pid, const char *path, struct diag *d)
{
	char pre[64], rel[PATH_MAX];
	unsigned long long start, end;
	int n, used = 0;

	n = snprintf(pre, sizeof(pre), "/proc/%d/map_files/", (int)pid);
	if (!strncmp(path, pre, (size_t)n)) {
		if (sscanf(path + n, "%llx-%llx%n", &start, &end, &used) == 2 && !path[n + used])
			return proc_map_file_open(pid, start, end, d);
		return diag_set(d, EXIT_FAIL, "pid %d: bad map_files name %s", (int)pid, path);
	}
	n = snprintf(pre, sizeof(pre), "/proc/%d/root/", (int)pid);
	if (!strncmp(path, pre, (size_t)n))
		return proc_root_open_file(pid, path + n - 1, d);
	if (proc_root_path(pid, path, rel, sizeof(rel)))
		return diag_set(d, EXIT_FAIL, "pid %d: %s is outside its root: not opened",
				(int)pid, path);
	return proc_root_open_file(pid, rel, d);
}

int open_regular_nonblock(int dirfd, const char *path, struct diag *d)
{
	int pfd = openat(dirfd, path, O_PATH | O_CLOEXEC);

	if (pfd < 0)
		return diag_errno(d, errno, "cannot open %s", path);
	return reopen_regular(pfd, path, d);
}

/* What the reading child sends last, after the file's bytes. */
struct reader_tail {
	int32_t rc;    /* 0: the bytes before this are the file */
	int32_t code;  /* enum bpfpy_exit, when rc != 0 */
	int32_t err;   /* errno, 0 if none */
	int32_t creds; /* 1: the target's credentials could not be taken */
	char msg[sizeof(((struct diag *)0)->msg)];
};

/* Take the target's credentials: groups first, while we may still set them. */
static int take_creds(const struct proc_creds *cr)
{
	int same = cr->fsuid == geteuid();

	if (cr->fsuid == 0 && geteuid() == 0)
		return 0; /* a root target reads as root does */
	if (syscall(SYS_setgroups, (size_t)cr->ngroups, cr->groups) && !(same && errno == EPERM))
		return -1;
	if (syscall(SYS_setresgid, cr->fsgid, cr->fsgid, cr->fsgid) ||
	    syscall(SYS_setresuid, cr->fsuid, cr->fsuid, cr->fsuid))
		return -1;
	return 0;
}

static void child_send(int wfd, const void *p, size_t n)
{
	for (const char *c = p; n;) {
		ssize_t w = write(wfd, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(1);
		c += w;
		n -= (size_t)w;
	}
}

/* The child's side: nothing here returns. Only system calls and formatting
 * into fixed buffers: the parent may have had other threads at the fork. */
static void reader_child(pid_t pid, const char *path, const struct proc_creds *cr, size_t max,
			 int wfd)
{
	struct reader_tail t = {0};
	struct diag d = {0};
	char buf[16384];
	size_t total = 0;
	struct stat st;
	int fd;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (take_creds(cr)) {
		t.rc = -1, t.creds = 1, t.err = errno, t.code = EXIT_PERMISSION;
		child_send(wfd, &t, sizeof(t));
		_exit(0);
	}
	fd = proc_root_open_file(pid, path, &d);
	if (fd >= 0 && !fstat(fd, &st) && (uint64_t)st.st_size > max) {
		diag_set(&d, EXIT_FAIL, "pid %d: %s is %llu bytes, over the %zu read: not read",
			 (int)pid, path, (unsigned long long)st.st_size, max);
		close(fd);
		fd = -1;
	}
	while (fd >= 0) {
		ssize_t r = read(fd, buf, sizeof(buf));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || (size_t)r > max - total) {
			if (r < 0)
				diag_errno(&d, errno, "pid %d: cannot read %s", (int)pid, path);
			else
				diag_set(&d, EXIT_FAIL, "pid %d: %s grew over %zu bytes: not read",
					 (int)pid, path, max);
			close(fd);
			fd = -1;
			break;
		}
		if (!r)
			break;
		child_send(wfd, buf, (size_t)r);
		total += (size_t)r;
	}
	if (fd < 0) {
		t.rc = -1, t.code = d.code, t.err = d.sys_errno;
		memcpy(t.msg, d.msg, sizeof(t.msg));
	} else {
		close(fd);
	}
	child_send(wfd, &t, sizeof(t));
	_exit(0);
}

/* Read the child's output (the file's bytes, then its tail) into buf of cap
 * bytes, by the deadline: its length, or -1 (the deadline passed, errno
 * ETIMEDOUT; more than cap, EFBIG; a read error). */
static ssize_t reader_collect(int rfd, char *buf, size_t cap, uint64_t deadline_ns)
{
	size_t n = 0;

	for (;;) {
		uint64_t now = mono_ns();
		struct pollfd pfd = {.fd = rfd, .events = POLLIN};
		ssize_t r;
		int pr;

		if (now >= deadline_ns)
			return errno = ETIMEDOUT, -1;
		pr = poll(&pfd, 1, (int)((deadline_ns - now + 999999) / 1000000));
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0)
			return -1;
		if (!pr)
			continue;
		if (n == cap)
			return errno = EFBIG, -1;
		r = read(rfd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (!r)
			return (ssize_t)n;
		n += (size_t)r;
	}
}

/* Reap the reader, killing it first unless it is known to be done. */
static void reader_reap(pid_t child, int kill_it)
{
	int st;

	if (kill_it)
		kill(child, SIGKILL);
	/* After EOF the child only has _exit left; a few ms at most. */
	for (int i = 0; i < 2000; i++) {
		pid_t r = waitpid(child, &st, WNOHANG);

		if (r == child || (r < 0 && errno != EINTR))
			break;
		if (i == 1000)
			kill(child, SIGKILL);
		usleep(1000);
	}
	signals_untrack_child(child);
}

/* A relative name is the target's current directory's (in its root). */
static int target_path(pid_t pid, const char *path, char *out, size_t len, struct diag *d)
{
	char link[64], cwd[PATH_MAX], rel[PATH_MAX];
	ssize_t n;

	if (path[0] == '/') {
		if ((size_t)snprintf(out, len, "%s", path) >= len)
			return diag_set(d, EXIT_FAIL, "pid %d: %s: name too long", (int)pid, path);
		return 0;
	}
	snprintf(link, sizeof(link), "/proc/%d/cwd", (int)pid);
	n = readlink(link, cwd, sizeof(cwd) - 1);
	if (n <= 0)
		return diag_errno(d, errno, "pid %d: relative %s: cannot read its cwd", (int)pid,
				  path);
	cwd[n] = '\0';
	if (proc_root_path(pid, cwd, rel, sizeof(rel)) ||
	    (size_t)snprintf(out, len, "%s/%s", rel, path) >= len)
		return diag_set(d, EXIT_FAIL, "pid %d: relative %s: its cwd is outside its root",
				(int)pid, path);
	return 0;
}

int proc_root_read_as_target(pid_t pid, const char *path, size_t max, int timeout_ms, char **out,
			     size_t *len, struct diag *d)
{
	size_t cap = max + sizeof(struct reader_tail) + 1;
	char full[PATH_MAX], *buf;
	struct proc_creds cr;
	struct reader_tail t;
	sigset_t held;
	int p[2], err;
	ssize_t n;
	pid_t child;

	*out = NULL;
	*len = 0;
	if (target_path(pid, path, full, sizeof(full), d))
		return -1;
	if (proc_creds(pid, &cr))
		return diag_set(d, EXIT_NO_PROCESS, "pid %d: no such process", (int)pid);
	buf = malloc(cap);
	if (!buf)
		return diag_errno(d, ENOMEM, "pid %d: %s", (int)pid, path);
	if (pipe2(p, O_CLOEXEC)) {
		err = errno;
		free(buf);
		return diag_errno(d, err, "pid %d: %s: pipe", (int)pid, path);
	}
	/* Blocked across the fork, so that no handler of ours runs in the
	 * child before it has put the defaults back. */
	signals_block(&held);
	child = fork();
	if (child == 0) {
		/* Our handlers out before any signal can reach one. */
		signals_child_reset();
		signals_restore(&held);
		close(p[0]);
		reader_child(pid, full, &cr, max, p[1]);
	}
	err = errno;
	if (child > 0)
		signals_track_child(child);
	signals_restore(&held);
	close(p[1]);
	if (child < 0) {
		close(p[0]);
		free(buf);
		return diag_errno(d, err, "pid %d: %s: fork", (int)pid, path);
	}
	n = reader_collect(p[0], buf, cap, mono_ns() + (uint64_t)timeout_ms * 1000000u);
	err = errno;
	close(p[0]);
	reader_reap(child, n < 0);
	if (n < (ssize_t)sizeof(t)) {
		free(buf);
		if (n < 0 && err == ETIMEDOUT)
			return diag_set(d, EXIT_FAIL,
					"pid %d: %s: no answer within %d ms (a hung filesystem?): "
					"the reader was killed",
					(int)pid, path, timeout_ms);
		return diag_set(d, EXIT_FAIL, "pid %d: %s: the reader failed", (int)pid, path);
	}
	memcpy(&t, buf + n - sizeof(t), sizeof(t));
	n -= (ssize_t)sizeof(t);
	if (t.rc) {
		free(buf);
		t.msg[sizeof(t.msg) - 1] = '\0';
		if (t.creds)
			return diag_set(
			    d, EXIT_PERMISSION,
			    "pid %d: %s: cannot take its credentials (fsuid %u, fsgid %u): "
			    "%s: not read",
			    (int)pid, path, cr.fsuid, cr.fsgid, strerror(t.err));
		if (t.err == EACCES || t.err == EPERM)
			return diag_set(d, EXIT_PERMISSION,
					"pid %d: %s: not readable with the target's own rights "
					"(fsuid %u, fsgid %u): %s",
					(int)pid, path, cr.fsuid, cr.fsgid, strerror(t.err));
		return diag_set(d, t.code ? t.code : EXIT_FAIL, "%s", t.msg);
	}
	buf[n] = '\0';
	*out = buf;
	*len = (size_t)n;
	return 0;
}
