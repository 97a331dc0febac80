// SPDX-License-Identifier: MIT
#include "proc_ns.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

/* A status file is about 1.5 KiB and NSpid sits in its first third; read a
 * bounded prefix, enough with room to spare. */
#define STATUS_READ 4096
/* Threads listed per process at most; the rest are not translated (their
 * ids are then shown as the target's). */
#define NS_TIDS_MAX 65536

static int parse_u32(const char **p, const char *end, uint32_t *out)
{
	uint64_t v = 0;
	const char *s = *p;

	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (s >= end || *s < '0' || *s > '9')
		return -1;
	while (s < end && *s >= '0' && *s <= '9') {
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > UINT32_MAX)
			return -1;
		s++;
	}
	*p = s;
	*out = (uint32_t)v;
	return 0;
}

int proc_ns_parse_nspid(const char *text, size_t len, uint32_t *outer, uint32_t *inner, int *levels)
{
	const char *end = text + len, *p = text;
	int n = 0;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = eol ? eol : end;

		if (line_end - p > 6 && !memcmp(p, "NSpid:", 6)) {
			uint32_t v;

			p += 6;
			while (!parse_u32(&p, line_end, &v)) {
				if (!n++)
					*outer = v;
				*inner = v;
			}
			*levels = n;
			return n ? 0 : -1;
		}
		p = line_end + 1;
	}
	return -1;
}

static int read_status(int dirfd, const char *tid, char *buf, size_t cap, size_t *len)
{
	char path[sizeof(((struct dirent *)0)->d_name) + 8];
	ssize_t r;
	size_t got = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/status", tid);
	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	while (got < cap && (r = read(fd, buf + got, cap - got)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			close(fd);
			return -1;
		}
		got += (size_t)r;
	}
	close(fd);
	*len = got;
	return 0;
}

int proc_ns_tids_read(pid_t pid, struct ns_tids *t, struct diag *d)
{
	char path[64], buf[STATUS_READ];
	struct dirent *e;
	int dirfd, cap = 0;
	DIR *dir;

	memset(t, 0, sizeof(*t));
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return diag_errno(d, errno, "pid %d: cannot list threads (%s)", (int)pid, path);
	dir = fdopendir(dirfd);
	if (!dir) {
		int err = errno;

		close(dirfd);
		return diag_errno(d, err, "pid %d: cannot list threads (%s)", (int)pid, path);
	}
	while ((e = readdir(dir)) && t->n < NS_TIDS_MAX) {
		uint32_t outer = 0, inner = 0;
		size_t len = 0;
		int levels = 0;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		/* A thread that exits between readdir and open is simply gone. */
		if (read_status(dirfd, e->d_name, buf, sizeof(buf), &len) ||
		    proc_ns_parse_nspid(buf, len, &outer, &inner, &levels))
			continue;
		if (t->n == cap) {
			int ncap = cap ? 2 * cap : 16;
			struct ns_tid *nv = realloc(t->v, (size_t)ncap * sizeof(*nv));

			if (!nv) {
				closedir(dir);
				proc_ns_tids_free(t);
				return diag_errno(d, ENOMEM, "pid %d: thread ids", (int)pid);
			}
			t->v = nv;
			cap = ncap;
		}
		t->v[t->n].host = outer;
		t->v[t->n].ns = inner;
		t->n++;
		if (levels > 1)
			t->nested = 1;
	}
	closedir(dir);
	if (!t->n && kill(pid, 0) && errno == ESRCH)
		return diag_set(d, EXIT_NO_PROCESS, "pid %d: no such process", (int)pid);
	return 0;
}

uint32_t proc_ns_host_tid(const struct ns_tids *t, uint32_t ns_tid)
{
	for (int i = 0; i < t->n; i++)
		if (t->v[i].ns == ns_tid)
			return t->v[i].host;
	return 0;
}

uint32_t proc_ns_inner_tid(const struct ns_tids *t, uint32_t host_tid)
{
	for (int i = 0; i < t->n; i++)
		if (t->v[i].host == host_tid)
			return t->v[i].ns;
	return 0;
}

void proc_ns_tids_free(struct ns_tids *t)
{
	free(t->v);
	memset(t, 0, sizeof(*t));
}

/* Is bpfpy in the initial PID namespace, i.e. are its ids the kernel's
 * task->pid? Asked once: a process never changes its own namespace. */
static int self_is_initial(void)
{
	static int known = -1;
	char buf[STATUS_READ];
	uint32_t outer, inner;
	size_t len;
	int levels, dirfd;

	if (known >= 0)
		return known;
	known = 0;
	dirfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return known;
	if (!read_status(dirfd, "self", buf, sizeof(buf), &len) &&
	    !proc_ns_parse_nspid(buf, len, &outer, &inner, &levels))
		known = levels == 1;
	close(dirfd);
	return known;
}

/* Is pid's PID namespace ours? 1 yes, 0 no, -1 when either cannot be
 * looked at. */
static int pid_ns_is_ours(pid_t pid)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
	if (stat(path, &a) || stat("/proc/self/ns/pid", &b))
		return -1;
	return a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

int proc_ns_pid_is_initial(pid_t pid)
{
	return pid_ns_is_ours(pid) == 1 && self_is_initial();
}

int proc_ns_pid_nested(pid_t pid)
{
	return pid_ns_is_ours(pid) == 0;
}
