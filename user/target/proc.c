// SPDX-License-Identifier: MIT
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* /proc/PID/stat is one line of at most ~700 bytes (comm is 16 of them);
 * /proc/PID/status is ~1.5 KiB. Anything past these buffers is not read. */
#define STAT_MAX   1024
#define STATUS_MAX 8192

/* Read a small /proc file whole (bounded) into buf, NUL-terminated.
 * Returns its length, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	size_t n = 0;

	if (fd < 0)
		return -1;
	while (n < len - 1) {
		ssize_t r = read(fd, buf + n, len - 1 - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	return n ? (ssize_t)n : -1;
}

int proc_cgroup_parse(const char *text, char *buf, size_t len)
{
	const char *line = text, *pick = NULL, *pick_end = NULL;

	if (!len)
		return -1;
	/* "hierarchy-ID:controllers:path" per line; v2's is "0::path". */
	while (line && *line) {
		const char *end = strchr(line, '\n'), *c1 = strchr(line, ':'), *c2, *path;

		if (!end)
			end = line + strlen(line);
		c2 = c1 && c1 < end ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
		if (c2) {
			path = c2 + 1;
			if (!strncmp(line, "0::", 3)) {
				pick = path, pick_end = end;
				break;
			}
			if (!pick || (pick_end - pick == 1 && *pick == '/'))
				pick = path, pick_end = end;
		}
		line = *end ? end + 1 : NULL;
	}
	if (!pick)
		return -1;
	snprintf(buf, len, "%.*s", (int)(pick_end - pick), pick);
	return 0;
}

int proc_cgroup(pid_t pid, char *buf, size_t len)
{
	char path[64], text[4096];

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	if (read_small(path, text, sizeof(text)) < 0)
		return -1;
	return proc_cgroup_parse(text, buf, len);
}

/* 64 lowercase hex digits at s, and then end (the component's end). */
static int hex64_at(const char *s, const char *end)
{
	if (end - s != 64)
		return 0;
	for (; s < end; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return 0;
	return 1;
}

/* The ID in one component [s, end), given its parent's name [ps, pend). */
static const char *component_id(const char *s, const char *end, const char *ps, const char *pend)
{
	static const char *const prefixes[] = {"docker-", "cri-containerd-", "crio-", "libpod-"};
	size_t n = (size_t)(end - s), sfx = strlen(".scope");

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t pl = strlen(prefixes[i]);

		if (n == pl + 64 + sfx && !strncmp(s, prefixes[i], pl) &&
		    !strncmp(end - sfx, ".scope", sfx) && hex64_at(s + pl, end - sfx))
			return s + pl;
	}
	/* A bare ID under a runtime's own directory (cgroupfs drivers):
	 * /docker/ID, /libpod_parent/libpod-.../ID, /kubepods/.../podUID/ID. */
	if (hex64_at(s, end) && ps) {
		size_t pn = (size_t)(pend - ps);

		if ((pn == 6 && !strncmp(ps, "docker", 6)) || (pn >= 3 && !strncmp(ps, "pod", 3)) ||
		    (pn >= 6 && !strncmp(ps, "libpod", 6)) ||
		    (pn >= 8 && !strncmp(ps, "kubepods", 8)) || memmem(ps, pn, "kubepods", 8))
			return s;
	}
	return NULL;
}

int cgroup_container_id(const char *path, char *id, size_t len)
{
	const char *end = path + strlen(path);

	if (len < 65)
		return 0;
	/* From the leaf up: the innermost component that names one. */
	while (end > path) {
		const char *s = end, *ps, *found;

		while (s > path && s[-1] != '/')
			s--;
		ps = s > path ? s - 1 : NULL; /* the '/' before s */
		if (ps) {
			const char *pend = ps;

			while (ps > path && ps[-1] != '/')
				ps--;
			found = component_id(s, end, ps, pend);
		} else {
			found = component_id(s, end, NULL, NULL);
		}
		if (found) {
			memcpy(id, found, 64);
			id[64] = 0;
			return 1;
		}
		end = s > path ? s - 1 : path;
	}
	return 0;
}

int proc_stat_parse(const char *line, struct proc_stat *st)
{
	const char *p = strrchr(line, ')');
	int ppid;

	if (!strchr(line, '(') || !p || p[1] != ' ' || !p[2])
		return -1;
	memset(st, 0, sizeof(*st));
	/* state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
	 * cmajflt utime stime cutime cstime priority nice num_threads
	 * itrealvalue starttime (fields 3-22 of proc(5)) */
	if (sscanf(p + 2,
		   "%c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
		   "%*d %*d %*d %llu",
		   &st->state, &ppid, &st->starttime) != 3)
		return -1;
	st->ppid = (pid_t)ppid;
	return 0;
}

int proc_stat_read(pid_t pid, pid_t tid, struct proc_stat *st)
{
	char path[64], buf[STAT_MAX];

	if (tid > 0)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_small(path, buf, sizeof(buf)) < 0)
		return -1;
	return proc_stat_parse(buf, st);
}

unsigned long long proc_starttime(pid_t pid)
{
	struct proc_stat st;

	return proc_stat_read(pid, 0, &st) ? 0 : st.starttime;
}

int proc_pidfd_open(pid_t pid, unsigned long long starttime)
{
#ifdef SYS_pidfd_open
	int fd = pid > 0 && starttime ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;

	if (fd >= 0 && proc_starttime(pid) != starttime) {
		close(fd);
		fd = -1;
	}
	return fd;
#else
	(void)pid;
	(void)starttime;
	return -1;
#endif
}

pid_t proc_ppid(pid_t pid)
{
	struct proc_stat st;

	return proc_stat_read(pid, 0, &st) ? 0 : st.ppid;
}

char proc_state(pid_t pid, pid_t tid)
{
	struct proc_stat st;

	return proc_stat_read(pid, tid, &st) ? 0 : st.state;
}

/* A comm file into buf without its newline: 0, or -1 with buf "?". */
static int comm_read(const char *path, char *buf, size_t len)
{
	char tmp[64];

	if (read_small(path, tmp, sizeof(tmp)) < 0) {
		snprintf(buf, len, "?");
		return -1;
	}
	tmp[strcspn(tmp, "\n")] = '\0';
	snprintf(buf, len, "%s", tmp);
	return 0;
}

void proc_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	comm_read(path, buf, len);
}

int proc_thread_comm(pid_t pid, pid_t tid, char *buf, size_t len)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	return comm_read(path, buf, len);
}

int proc_exe_id(pid_t pid, unsigned long long *dev, unsigned long long *ino)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (stat(path, &st))
		return -1;
	*dev = (unsigned long long)st.st_dev;
	*ino = (unsigned long long)st.st_ino;
	return 0;
}

/* The value after "field:" at the start of a line of status text. */
static const char *status_value(const char *text, const char *field)
{
	size_t n = strlen(field);

	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (!strncmp(l, field, n) && l[n] == ':')
			return l + n + 1;
	return NULL;
}

long proc_status_field(pid_t pid, pid_t tid, const char *field)
{
	char path[64], buf[STATUS_MAX];
	const char *v;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	if (read_small(path, buf, sizeof(buf)) < 0 || !(v = status_value(buf, field)))
		return -1;
	return strtol(v, NULL, 10);
}

/* The n-th (0-based) of the whitespace-separated numbers after "field:". */
static int status_nth(const char *text, const char *field, int n, uint32_t *out)
{
	const char *v = status_value(text, field);
	char *end;

	for (int i = 0; v; i++) {
		unsigned long x;

		while (*v == ' ' || *v == '\t')
			v++;
		if (*v < '0' || *v > '9')
			return -1;
		errno = 0;
		x = strtoul(v, &end, 10);
		if (errno || x > UINT32_MAX)
			return -1;
		if (i == n) {
			*out = (uint32_t)x;
			return 0;
		}
		v = end;
	}
	return -1;
}

int proc_parse_creds(const char *status, struct proc_creds *c)
{
	memset(c, 0, sizeof(*c));
	/* "Uid:\treal\teffective\tsaved\tfs": the fs one opens files. */
	if (status_nth(status, "Uid", 3, &c->fsuid) || status_nth(status, "Gid", 3, &c->fsgid))
		return -1;
	while (c->ngroups < PROC_MAX_GROUPS &&
	       !status_nth(status, "Groups", (int)c->ngroups, &c->groups[c->ngroups]))
		c->ngroups++;
	return 0;
}

int proc_creds(pid_t pid, struct proc_creds *c)
{
	char path[64], buf[STATUS_MAX];

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (read_small(path, buf, sizeof(buf)) < 0)
		return -1;
	return proc_parse_creds(buf, c);
}

int proc_parse_cap_eff(const char *status, uint64_t *eff)
{
	const char *v = status_value(status, "CapEff");
	char *end;

	if (!v)
		return -1;
	errno = 0;
	*eff = strtoull(v, &end, 16);
	return errno || end == v ? -1 : 0;
}

int proc_self_cap_eff(uint64_t *eff)
{
	char buf[STATUS_MAX];

	if (read_small("/proc/self/status", buf, sizeof(buf)) < 0)
		return -1;
	return proc_parse_cap_eff(buf, eff);
}

int proc_self_has_cap(int cap)
{
	uint64_t eff;

	if (cap < 0 || cap > 63 || proc_self_cap_eff(&eff))
		return 0;
	return (int)((eff >> cap) & 1);
}

int proc_yama_ptrace_scope(void)
{
	char buf[16];

	if (read_small("/proc/sys/kernel/yama/ptrace_scope", buf, sizeof(buf)) < 0 ||
	    buf[0] < '0' || buf[0] > '9')
		return -1;
	return atoi(buf);
}

int online_cpus(int *cpus, int max)
{
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	int n = 0, a, b;
	char sep;

	if (!f)
		return -1;
	while (fscanf(f, "%d", &a) == 1) {
		b = a;
		if (fscanf(f, "%c", &sep) == 1 && sep == '-') {
			if (fscanf(f, "%d", &b) != 1)
				break;
			if (fscanf(f, "%c", &sep) != 1)
				sep = '\n';
		}
		for (int c = a; c <= b && n < max; c++)
			cpus[n++] = c;
		if (sep != ',')
			break;
	}
	fclose(f);
	return n;
}
