// SPDX-License-Identifier: MIT
/*
 * Reading a file a target names as the target could (proc_root.c,
 * proc_root_read_as_target) and the credentials it reads for that
 * (proc.c, proc_parse_creds):
 *  - status text: fsuid/fsgid are the 4th Uid/Gid numbers, groups bounded;
 *  - our own process as the target: a file read whole, a relative name from
 *    the cwd, a FIFO and a directory refused at once (never opened), a file
 *    over the bound refused, a deadline of 0 ms killing the reader and
 *    saying so, a process gone;
 *  - as root, a target running as nobody (a forked child): a world-readable
 *    file is read, a root-only file and a symlink to it are refused as not
 *    readable with the target's own rights, whatever bpfpy may read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "diag.h"
#include "proc.h"
#include "proc_root.h"

static void test_creds_parse(void **state)
{
	static const char st[] = "Name:\tpython3\nUid:\t1000\t1001\t1002\t1003\n"
				 "Gid:\t2000\t2001\t2002\t2003\nGroups:\t4 24 27 \nVmRSS:\t1 kB\n";
	static const char no_groups[] = "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\n";
	struct proc_creds c;
	char many[8192];
	int n;

	(void)state;
	assert_int_equal(proc_parse_creds(st, &c), 0);
	assert_int_equal(c.fsuid, 1003);
	assert_int_equal(c.fsgid, 2003);
	assert_int_equal(c.ngroups, 3);
	assert_int_equal(c.groups[0], 4);
	assert_int_equal(c.groups[2], 27);
	assert_int_equal(proc_parse_creds(no_groups, &c), 0);
	assert_int_equal(c.ngroups, 0);
	assert_int_equal(proc_parse_creds("Name:\tx\n", &c), -1);
	assert_int_equal(proc_parse_creds("Uid:\t1\t2\t3\nGid:\t1\t2\t3\t4\n", &c), -1);
	/* More groups than kept: the first PROC_MAX_GROUPS, fewer rights. */
	n = snprintf(many, sizeof(many), "Uid:\t5\t5\t5\t5\nGid:\t6\t6\t6\t6\nGroups:\t");
	for (int i = 0; i < 200; i++)
		n += snprintf(many + n, sizeof(many) - (size_t)n, "%d ", 100 + i);
	assert_int_equal(proc_parse_creds(many, &c), 0);
	assert_int_equal(c.ngroups, PROC_MAX_GROUPS);
	assert_int_equal(c.groups[PROC_MAX_GROUPS - 1], 100 + PROC_MAX_GROUPS - 1);
}

static void put_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, mode);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
}

static void test_self(void **state)
{
	char dir[] = "/tmp/bpfpy-test-src.XXXXXX", p[256], cwd[4096], *text;
	struct diag d = {0};
	size_t len;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/a.py", dir);
	put_file(p, "x = 1\n\xff\n", 0644);
	assert_int_equal(proc_root_read_as_target(getpid(), p, 1024, 5000, &text, &len, &d), 0);
	assert_int_equal(len, 8);
	assert_memory_equal(text, "x = 1\n\xff\n", 8);
	assert_int_equal(text[len], '\0');
	free(text);
	/* relative: the target's cwd */
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(dir), 0);
	assert_int_equal(proc_root_read_as_target(getpid(), "a.py", 1024, 5000, &text, &len, &d),
			 0);
	assert_int_equal(len, 8);
	free(text);
	assert_int_equal(chdir(cwd), 0);
	/* over the bound */
	assert_int_equal(proc_root_read_as_target(getpid(), p, 4, 5000, &text, &len, &d), -1);
	assert_null(text);
	assert_non_null(strstr(d.msg, "over the 4 read"));
	/* a FIFO: refused by type, at once (nobody ever writes it) */
	snprintf(p, sizeof(p), "%s/fifo.py", dir);
	assert_int_equal(mkfifo(p, 0644), 0);
	assert_int_equal(proc_root_read_as_target(getpid(), p, 1024, 5000, &text, &len, &d), -1);
	assert_non_null(strstr(d.msg, "FIFO"));
	snprintf(p, sizeof(p), "%s", dir);
	assert_int_equal(proc_root_read_as_target(getpid(), p, 1024, 5000, &text, &len, &d), -1);
	assert_non_null(strstr(d.msg, "directory"));
	snprintf(p, sizeof(p), "%s/none.py", dir);
	assert_int_equal(proc_root_read_as_target(getpid(), p, 1024, 5000, &text, &len, &d), -1);
	assert_non_null(strstr(d.msg, "No such file"));
	/* no answer by the deadline: the reader is killed, and reaped */
	snprintf(p, sizeof(p), "%s/a.py", dir);
	assert_int_equal(proc_root_read_as_target(getpid(), p, 1024, 0, &text, &len, &d), -1);
	assert_non_null(strstr(d.msg, "no answer within 0 ms"));
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	/* a process gone */
	assert_int_equal(proc_root_read_as_target(0x3ffffff0, p, 1024, 5000, &text, &len, &d), -1);
	assert_int_equal(d.code, EXIT_NO_PROCESS);
	snprintf(p, sizeof(p), "rm -rf %s", dir);
	assert_int_equal(system(p), 0);
}

/* A target of uid/gid 65534 (nobody), dumpable as an exec'd program is. */
static pid_t nobody_target(int *ready)
{
	int fds[2];
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		if (syscall(SYS_setgroups, 0, NULL) ||
		    syscall(SYS_setresgid, 65534, 65534, 65534) ||
		    syscall(SYS_setresuid, 65534, 65534, 65534))
			_exit(1);
		prctl(PR_SET_DUMPABLE, 1);
		/* Gone with the test, even one that failed half-way. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		(void)!write(fds[1], "r", 1);
		for (;;)
			pause();
	}
	close(fds[1]);
	*ready = read(fds[0], &(char){0}, 1) == 1;
	close(fds[0]);
	return pid;
}

static void test_as_nobody(void **state)
{
	char dir[] = "/tmp/bpfpy-test-src.XXXXXX", p[256], q[256], *text;
	struct diag d = {0};
	int ready = 0;
	size_t len;
	pid_t t;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0755), 0);
	t = nobody_target(&ready);
	assert_true(ready);
	snprintf(p, sizeof(p), "%s/open.py", dir);
	put_file(p, "print(1)\n", 0644);
	assert_int_equal(proc_root_read_as_target(t, p, 1024, 5000, &text, &len, &d), 0);
	assert_int_equal(len, 9);
	free(text);
	/* root-only: bpfpy could, the target could not */
	snprintf(p, sizeof(p), "%s/secret.py", dir);
	put_file(p, "root:$6$hash\n", 0600);
	assert_int_equal(proc_root_read_as_target(t, p, 1024, 5000, &text, &len, &d), -1);
	assert_int_equal(d.code, EXIT_PERMISSION);
	assert_non_null(strstr(d.msg, "not readable with the target's own rights"));
	assert_null(text);
	/* and a name the target planted for it */
	snprintf(q, sizeof(q), "%s/link.py", dir);
	assert_int_equal(symlink(p, q), 0);
	assert_int_equal(proc_root_read_as_target(t, q, 1024, 5000, &text, &len, &d), -1);
	assert_int_equal(d.code, EXIT_PERMISSION);
	kill(t, SIGKILL);
	waitpid(t, NULL, 0);
	snprintf(p, sizeof(p), "rm -rf %s", dir);
	assert_int_equal(system(p), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_creds_parse),
	    cmocka_unit_test(test_self),
	    cmocka_unit_test(test_as_nobody),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
