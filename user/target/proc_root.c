// SPDX-License-Identifier: MIT
#include "proc_root.h"

#include "diag.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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
