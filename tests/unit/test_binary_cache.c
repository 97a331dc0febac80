// SPDX-License-Identifier: MIT
/*
 * py_binary_find's cache of what an interpreter file says about itself, on
 * live processes of copies of Debian's python3.11 (a non-PIE executable, so
 * the copies are free to place under a temporary directory): a second
 * process of one file is a hit and still right; a file touched, grown or
 * replaced under its name is read again; the key is the file opened, not
 * its name (a hard link is a hit, a name renamed over to another file
 * leads to that file's facts, a process of the old one keeps its own);
 * the cache stays bounded (old entries go). Every answer is
 * checked against the addresses the interpreter prints from inside.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "diag.h"
#include "py_binary.h"

#define PY311 "/usr/bin/python3.11"

static const char script[] =
    "import ctypes, sys, types\n"
    "print(ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, '_PyRuntime')),"
    " id(types.CodeType), sys.hexversion, flush=True)\n"
    "sys.stdin.read()\n";

static char dir[64];

struct proc {
	pid_t pid;
	int in;				  /* its stdin: closed, it exits */
	unsigned long long rt, code, hex; /* what it printed */
};

/* cp FROM TO (mode kept: executable), no shell. */
static int copy_file(const char *from, const char *to)
{
	int status = -1;
	pid_t pid = fork();

	if (pid == 0) {
		execl("/bin/cp", "cp", "--preserve=mode", from, to, (char *)NULL);
		_exit(127);
	}
	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		       WEXITSTATUS(status) == 0
		   ? 0
		   : -1;
}

/* Start exe (a python, or anything when script is NULL) with stdin and
 * stdout on pipes; with a script, wait (bounded) for its line. */
static int start(const char *exe, const char *scr, struct proc *p)
{
	int in[2], out[2];
	char line[256];
	size_t n = 0;

	memset(p, 0, sizeof(*p));
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		return -1;
	p->pid = fork();
	if (p->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		if (scr)
			execl(exe, exe, "-c", scr, (char *)NULL);
		else
			execl(exe, exe, "3600", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	p->in = in[1];
	if (p->pid < 0)
		return -1;
	if (!scr) { /* a sleep: wait until it is the program, not our fork */
		for (int i = 0; i < 6000; i++) {
			char link[64], target[256];
			ssize_t k;

			snprintf(link, sizeof(link), "/proc/%d/exe", (int)p->pid);
			k = readlink(link, target, sizeof(target) - 1);
			if (k > 0 && (target[k] = 0, !strcmp(target, exe)))
				break;
			usleep(10000);
		}
		close(out[0]);
		return 0;
	}
	while (n + 1 < sizeof(line)) {
		struct pollfd pf = {.fd = out[0], .events = POLLIN};

		if (poll(&pf, 1, 60000) != 1 || read(out[0], line + n, 1) != 1)
			break;
		if (line[n] == '\n')
			break;
		n++;
	}
	line[n] = 0;
	close(out[0]);
	return sscanf(line, "%llu %llu %llu", &p->rt, &p->code, &p->hex) == 3 ? 0 : -1;
}

static void stop(struct proc *p)
{
	if (p->pid > 0) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, NULL, 0);
	}
	if (p->in > 0)
		close(p->in);
	p->pid = 0;
	p->in = 0;
}

/* Start a copy of sleep at exe (through a rename when tmp is given, as a
 * name swapped under a running process would be) and expect "not a CPython
 * process". */
static void expect_not_python(const char *exe, const char *tmp)
{
	struct proc s;
	struct py_binary b;
	struct diag d = {0};

	assert_int_equal(copy_file("/bin/sleep", tmp ? tmp : exe), 0);
	if (tmp)
		assert_int_equal(rename(tmp, exe), 0);
	assert_int_equal(start(exe, NULL, &s), 0);
	assert_int_equal(py_binary_find(s.pid, &b, &d), -1);
	assert_int_equal(d.code, EXIT_NOT_PYTHON);
	stop(&s);
}

/* py_binary_find on p: right, and was it a cache hit (1) or a read (0)? */
static int find_checked(const struct proc *p)
{
	struct py_binary_cache_stats s0, s1;
	struct py_binary b;
	struct diag d = {0};

	py_binary_cache_get_stats(&s0);
	if (py_binary_find(p->pid, &b, &d))
		fail_msg("pid %d: %s", (int)p->pid, d.msg);
	py_binary_cache_get_stats(&s1);
	assert_int_equal(b.runtime_addr, p->rt);
	assert_int_equal(b.code_type_addr, p->code);
	assert_int_equal(b.version_hex, p->hex);
	assert_int_equal(s1.hits + s1.misses, s0.hits + s0.misses + 1);
	return s1.hits > s0.hits;
}

/* A fresh copy of python3.11 named NAME under the test's directory (path
 * into path), and a process of it, whose first look is a read. */
static void fresh_python(const char *name, char *path, size_t len, struct proc *a)
{
	if (!dir[0])
		skip();
	snprintf(path, len, "%s/%s", dir, name);
	assert_int_equal(copy_file(PY311, path), 0);
	assert_int_equal(start(path, script, a), 0);
	assert_false(find_checked(a));
}

static int setup(void **state)
{
	(void)state;
	if (access(PY311, X_OK)) {
		fprintf(stderr, "note: no %s: the cache is not tested\n", PY311);
		return 0;
	}
	snprintf(dir, sizeof(dir), "/tmp/bpfpy-binary-cache.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	if (!dir[0])
		return 0;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_hit_and_invalidation(void **state)
{
	char path[128];
	struct proc a, b;
	struct timespec ts[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
	int fd;

	(void)state;
	fresh_python("python3.11", path, sizeof(path), &a);
	assert_int_equal(start(path, script, &b), 0);
	assert_true(find_checked(&b)); /* the same file: a hit */
	assert_true(find_checked(&a));
	stop(&a);
	stop(&b);

	/* Touched (mtime set back to anything): read again. */
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
	assert_int_equal(start(path, script, &a), 0);
	assert_false(find_checked(&a));
	assert_true(find_checked(&a));
	stop(&a);

	/* Grown in place (same inode): read again. */
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
	assert_int_equal(start(path, script, &a), 0);
	assert_false(find_checked(&a));
	stop(&a);
}

/* The key is the file that was opened, not its name: a second name of one
 * file (a hard link) is a hit; a name renamed over to another file (here
 * not even Python) is that other file for the processes that start from
 * it, while a process of the old file is still answered from its own
 * (through map_files: the name now leads elsewhere). */
static void test_file_not_name(void **state)
{
	char path[128], alias[128], other[128];
	struct proc a, b;

	(void)state;
	if (!dir[0])
		skip();
	snprintf(path, sizeof(path), "%s/swap-python3.11", dir);
	snprintf(alias, sizeof(alias), "%s/alias-python3.11", dir);
	snprintf(other, sizeof(other), "%s/other", dir);
	assert_int_equal(copy_file(PY311, path), 0);
	assert_int_equal(link(path, alias), 0);
	assert_int_equal(start(path, script, &a), 0);
	assert_int_equal(start(alias, script, &b), 0);
	assert_false(find_checked(&a));
	assert_true(find_checked(&b));
	stop(&b);

	expect_not_python(path, other);
	find_checked(&a); /* right; hit or not (ctime moved with the link count) */
	stop(&a);
}

/* Bounded: after enough other files (copies of sleep, each a "not Python"
 * entry), an interpreter's entry is gone and read again. */
static void test_bounded(void **state)
{
	char path[128], sl[128];
	struct proc a;

	(void)state;
	fresh_python("bounded-python3.11", path, sizeof(path), &a);
	for (int i = 0; i < 70; i++) { /* FACTS_CACHE is 64 */
		snprintf(sl, sizeof(sl), "%s/sleep%d", dir, i);
		expect_not_python(sl, NULL);
	}
	assert_false(find_checked(&a));
	stop(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hit_and_invalidation),
	    cmocka_unit_test(test_file_not_name),
	    cmocka_unit_test(test_bounded),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("binary_cache", tests, setup, teardown);
}
