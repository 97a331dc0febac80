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

static int open_fallback(pid_t pid, const char *path, int flags, struct diag *d)
{
	char full[PATH_MAX];
	int fd, n;

	/* Only for kernels before 5.6: the magic link takes us into the root,
	 * but an absolute symlink inside it would resolve against ours. */
	n = snprintf(full, sizeof(full), "/proc/%d/root/%s", (int)pid,
		     path[0] == '/' ? path + 1 : path);
	if (n < 0 || (size_t)n >= sizeof(full))
		return diag_set(d, EXIT_FAIL, "pid %d: path too long: %s", (int)pid, path);
	fd = open(full, flags | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;

		if (proc_gone(pid))
			return diag_set(d, EXIT_NO_PROCESS, "pid %d: no such process", (int)pid);
		return diag_errno(d, err, "pid %d: cannot open %s", (int)pid, full);
	}
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
	for (int i = 0; i < OPENAT2_RETRIES; i++) {
		fd = (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));
		err = fd < 0 ? errno : 0;
		if (fd >= 0 || err != EAGAIN)
			break;
	}
	close(dfd);
	if (fd >= 0)
		return fd;
	if (err == ENOSYS)
		return open_fallback(pid, path, flags, d);
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
