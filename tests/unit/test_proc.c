// SPDX-License-Identifier: MIT
/*
 * The /proc readers (proc.h): the stat parser on lines whose comm holds
 * spaces, parentheses and ") " itself (any user picks its comm), the CapEff
 * parser, and each reader against this process and a child with a hostile
 * comm, compared with what the kernel says through other calls; the pidfd
 * opener (a wrong start time refused, exit seen before the child is
 * reaped); and the safe opener of target-named files (proc_root.h) on
 * planted FIFOs.
 */
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "diag.h"
#include "proc.h"
#include "proc_root.h"

static void test_stat_parse(void **state)
{
	struct proc_stat st;
	/* Fields after comm: state ppid pgrp session tty tpgid flags minflt
	 * cminflt majflt cmajflt utime stime cutime cstime prio nice threads
	 * itreal starttime. */
	static const char tail[] = "S 42 7 7 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 123456 99 "
				   "88\n";
	static const char *const comms[] = {
	    "python3", "a b", "x) R 1 2 (y", ")", "((", ") S 9 9 9", "",
	};
	char line[256];

	(void)state;
	for (size_t i = 0; i < sizeof(comms) / sizeof(comms[0]); i++) {
		snprintf(line, sizeof(line), "1234 (%s) %s", comms[i], tail);
		assert_int_equal(proc_stat_parse(line, &st), 0);
		assert_int_equal(st.state, 'S');
		assert_int_equal(st.ppid, 42);
		assert_int_equal(st.starttime, 123456ull);
	}
	assert_int_equal(proc_stat_parse("", &st), -1);
	assert_int_equal(proc_stat_parse("1234 (x)", &st), -1);
	assert_int_equal(proc_stat_parse("1234 (x) S", &st), -1);
	assert_int_equal(proc_stat_parse("1234 x) S 1 2", &st), -1);
	assert_int_equal(proc_stat_parse("1234 (x) S 1 2 3", &st), -1); /* cut short */
}

static void test_cap_eff_parse(void **state)
{
	uint64_t eff = 0;

	(void)state;
	assert_int_equal(proc_parse_cap_eff("Name:\tx\nCapInh:\t0000000000000000\n"
					    "CapPrm:\t000001ffffffffff\n"
					    "CapEff:\t000001ffffffffff\nCapBnd:\t0\n",
					    &eff),
			 0);
	assert_int_equal(eff, 0x1ffffffffffull);
	assert_int_equal(proc_parse_cap_eff("CapEff:\t0000000000080000\n", &eff), 0);
	assert_int_equal(eff, 1ull << 19);
	/* Only at the start of a line, and not CapEffX. */
	assert_int_equal(proc_parse_cap_eff("Name:\tCapEff: ffff\nCapEffX:\t1\n", &eff), -1);
	assert_int_equal(proc_parse_cap_eff("CapEff:\tzz\n", &eff), -1);
	assert_int_equal(proc_parse_cap_eff("", &eff), -1);
}

static void test_self(void **state)
{
	struct proc_stat st;
	unsigned long long dev, ino;
	struct stat me;
	int cpus[1024];
	char comm[32];

	(void)state;
	assert_int_equal(proc_stat_read(getpid(), 0, &st), 0);
	assert_int_equal(st.ppid, getppid());
	assert_int_equal(st.state, 'R');
	assert_true(proc_starttime(getpid()) > 0);
	assert_int_equal(proc_ppid(getpid()), getppid());
	assert_int_equal(proc_state(getpid(), getpid()), 'R');
	assert_int_equal(proc_status_field(getpid(), getpid(), "TracerPid"), 0);
	assert_int_equal(proc_status_field(getpid(), getpid(), "NoSuchField"), -1);
	assert_int_equal(proc_exe_id(getpid(), &dev, &ino), 0);
	assert_int_equal(stat("/proc/self/exe", &me), 0);
	assert_int_equal(ino, (unsigned long long)me.st_ino);
	assert_int_equal(prctl(PR_SET_NAME, "test_proc"), 0);
	proc_comm(getpid(), comm, sizeof(comm));
	assert_string_equal(comm, "test_proc");
	assert_int_equal(proc_self_has_cap(19), geteuid() == 0); /* CAP_SYS_PTRACE */
	assert_true(online_cpus(cpus, 1024) >= 1);
	assert_int_equal(online_cpus(cpus, 1), 1);
}

/* A child whose comm mimics the rest of a stat line. */
static void test_hostile_comm(void **state)
{
	int fds[2], status;
	struct proc_stat st;
	char c, comm[32];
	pid_t child;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	child = fork();
	assert_true(child >= 0);
	if (!child) {
		prctl(PR_SET_NAME, ") Z 1 1 1 (");
		if (write(fds[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	assert_int_equal(read(fds[0], &c, 1), 1);
	assert_int_equal(proc_stat_read(child, 0, &st), 0);
	assert_int_equal(st.ppid, getpid());
	assert_true(st.state == 'S' || st.state == 'R');
	assert_true(st.starttime >= proc_starttime(getpid()));
	proc_comm(child, comm, sizeof(comm));
	assert_string_equal(comm, ") Z 1 1 1 (");
	kill(child, SIGKILL);
	assert_int_equal(waitpid(child, &status, 0), child);
	/* Gone: every reader says so. */
	assert_int_equal(proc_stat_read(child, 0, &st), -1);
	assert_int_equal(proc_starttime(child), 0);
	assert_int_equal(proc_state(child, 0), 0);
	proc_comm(child, comm, sizeof(comm));
	assert_string_equal(comm, "?");
	close(fds[0]);
	close(fds[1]);
}

/* proc_pidfd_open: only for the process that started at the time given;
 * its pidfd polls readable once it exited, a zombie not yet reaped too
 * (record's reap: kill(pid, 0) still succeeds on a zombie). */
static void test_pidfd(void **state)
{
	struct pollfd pf = {.events = POLLIN};
	unsigned long long st;
	int fds[2], status;
	pid_t child;
	char c;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	child = fork();
	assert_true(child >= 0);
	if (!child) {
		close(fds[1]);
		/* Exits when the test closes its end. */
		_exit(read(fds[0], &c, 1) == 0 ? 0 : 1);
	}
	close(fds[0]);
	st = proc_starttime(child);
	assert_true(st > 0);
	assert_int_equal(proc_pidfd_open(child, st + 1), -1); /* another process's time */
	assert_int_equal(proc_pidfd_open(child, 0), -1);
	pf.fd = proc_pidfd_open(child, st);
	assert_true(pf.fd >= 0);
	assert_true(fcntl(pf.fd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(poll(&pf, 1, 0), 0); /* alive */
	close(fds[1]);
	assert_int_equal(poll(&pf, 1, 60000), 1); /* a zombie now */
	assert_true(pf.revents & POLLIN);
	assert_int_equal(kill(child, 0), 0);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(poll(&pf, 1, 0), 1);
	close(pf.fd);
	assert_int_equal(proc_pidfd_open(child, st), -1); /* gone */
}

/* The one safe opener of target files: a FIFO, a directory or a symlink to
 * a FIFO under the name is refused at once (naming its type), never opened
 * (an open of a FIFO for reading blocks until a writer comes); a regular
 * file is opened O_NONBLOCK. Through openat2 and through the by-hand walk. */
static void test_safe_open(void **state)
{
	char dir[] = "/tmp/bpfpy-test-proc.XXXXXX", p[128];
	static const char *const bad[] = {"fifo", "sub", "link_to_fifo"};

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/fifo", dir);
	assert_int_equal(mkfifo(p, 0600), 0);
	snprintf(p, sizeof(p), "%s/sub", dir);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/link_to_fifo", dir);
	assert_int_equal(symlink("fifo", p), 0);
	snprintf(p, sizeof(p), "%s/file", dir);
	close(open(p, O_CREAT | O_WRONLY, 0600));
	for (int no2 = 0; no2 < 2; no2++) {
		proc_root_no_openat2 = no2;
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			struct diag d = {0};

			snprintf(p, sizeof(p), "%s/%s", dir, bad[i]);
			assert_int_equal(proc_root_open_file(getpid(), p, &d), -1);
			assert_non_null(strstr(d.msg, "not a regular file"));
			assert_int_equal(open_regular_nonblock(AT_FDCWD, p, NULL), -1);
			assert_int_equal(proc_target_file_open(getpid(), p, NULL), -1);
		}
		snprintf(p, sizeof(p), "%s/file", dir);
		int fd = proc_root_open_file(getpid(), p, NULL);

		assert_true(fd >= 0);
		assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
		close(fd);
	}
	proc_root_no_openat2 = 0;
	snprintf(p, sizeof(p), "rm -rf %s", dir);
	assert_int_equal(system(p), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stat_parse), cmocka_unit_test(test_cap_eff_parse),
	    cmocka_unit_test(test_self),       cmocka_unit_test(test_hostile_comm),
	    cmocka_unit_test(test_pidfd),      cmocka_unit_test(test_safe_open),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
