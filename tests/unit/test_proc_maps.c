// SPDX-License-Identifier: MIT
/*
 * proc_maps and proc_root: parsing (including malformed lines), our own
 * maps checked against the dynamic loader's view, error codes for missing
 * and forbidden processes, and opening files inside a chrooted child
 * without escaping its root.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
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
#include "proc_maps.h"
#include "proc_root.h"

/* Children we started; killed by every test's teardown, even on failure. */
static pid_t children[16];
static int nchildren;

static int kill_children(void **state)
{
	(void)state;
	for (int i = 0; i < nchildren; i++) {
		kill(children[i], SIGKILL);
		waitpid(children[i], NULL, 0);
	}
	nchildren = 0;
	return 0;
}

static void kill_children_atexit(void)
{
	kill_children(NULL);
}

/* Fork a child that runs setup() and then waits to be killed. Returns once
 * setup has finished (the child reports through a pipe), or -1. */
static pid_t start_child(int (*setup)(void *), void *arg)
{
	int p[2];
	char ok = 0;
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		char r = setup && setup(arg) ? 'E' : 'K';

		close(p[0]);
		if (write(p[1], &r, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		return -1;
	}
	children[nchildren++] = pid;
	if (read(p[0], &ok, 1) != 1 || ok != 'K')
		pid = -1;
	close(p[0]);
	return pid;
}

/* A pid that is free right now: a child's, after it was reaped. */
static pid_t dead_pid(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	assert_int_equal(kill(pid, 0), -1);
	return pid;
}

static void test_parse_line(void **state)
{
	struct proc_map p;
	char l1[] = "7f0e4c000000-7f0e4c021000 r-xp 0001a000 fd:01 1234567                    "
		    "/usr/lib/x86_64-linux-gnu/libc.so.6\n";
	char l2[] = "55d0c1a3e000-55d0c1a5f000 rw-p 00000000 00:00 0                          "
		    "[heap]";
	char l3[] = "7f0e4c000000-7f0e4c001000 rw-p 00000000 00:00 0 ";
	char l4[] = "00400000-00401000 r--p 00000000 08:02 42 /tmp/a dir/python3.12 (deleted)\n";
	char l5[] = "00400000-00401000 r--p 00000000 103:0f 42 /x";

	(void)state;
	assert_int_equal(proc_maps_parse_line(l1, &p), 0);
	assert_int_equal(p.start, 0x7f0e4c000000ull);
	assert_int_equal(p.end, 0x7f0e4c021000ull);
	assert_int_equal(p.offset, 0x1a000);
	assert_int_equal(p.dev_major, 0xfd);
	assert_int_equal(p.dev_minor, 1);
	assert_int_equal(p.inode, 1234567);
	assert_string_equal(p.perms, "r-xp");
	assert_string_equal(p.path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	assert_false(p.deleted);
	assert_true(proc_map_is_file(&p));

	assert_int_equal(proc_maps_parse_line(l2, &p), 0);
	assert_string_equal(p.path, "[heap]");
	assert_false(proc_map_is_file(&p));

	assert_int_equal(proc_maps_parse_line(l3, &p), 0);
	assert_string_equal(p.path, "");
	assert_false(proc_map_is_file(&p));

	assert_int_equal(proc_maps_parse_line(l4, &p), 0);
	assert_string_equal(p.path, "/tmp/a dir/python3.12");
	assert_true(p.deleted);

	assert_int_equal(proc_maps_parse_line(l5, &p), 0);
	assert_int_equal(p.dev_major, 0x103);
	assert_int_equal(p.dev_minor, 0xf);
}

static void test_parse_line_malformed(void **state)
{
	static const char *bad[] = {
	    "",
	    "\n",
	    "zzzz-1000 r-xp 0 00:00 0",
	    "2000-1000 r-xp 00000000 00:00 0 /x", /* end before start */
	    "1000 r-xp 00000000 00:00 0 /x",
	    "1000-2000 r-x",
	    "1000-2000 r-xp",
	    "1000-2000 r-xp 00000000",
	    "1000-2000 r-xp 00000000 00:00",
	    "1000-2000 r-xp 00000000 0000 0 /x",
	    "1000-2000 r-xp 00000000 00:00 abc /x",
	    "1000-2000 r-xp 00000000 00:00 12x /x",
	    "10000000000000000000-2000 r-xp 00000000 00:00 0", /* overflow */
	    "1000-2000 r-xp 00000000 1ffffffff:00 0 /x",
	};
	char buf[128];
	struct proc_map p;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(buf, sizeof(buf), "%s", bad[i]);
		if (proc_maps_parse_line(buf, &p) != -1)
			fail_msg("accepted malformed line \"%s\"", bad[i]);
	}
}

static void test_parse_stream(void **state)
{
	char text[] = "1000-2000 r--p 00000000 08:01 7 /bin/x\n"
		      "2000-5000 r-xp 00001000 08:01 7 /bin/x\n"
		      "5000-6000 rw-p 00000000 00:00 0\n"
		      "800-900 r--p 00000000 08:01 9 /lib/y\n"
		      "9000-a000 rw-p 00004000 08:01 7 /bin/x\n";
	char broken[] = "1000-2000 r--p 00000000 08:01 7 /bin/x\nnonsense\n";
	struct proc_maps m;
	struct diag d = {0};
	size_t idx[2];
	uint64_t base;
	FILE *f;

	(void)state;
	f = fmemopen(text, strlen(text), "r");
	assert_int_equal(proc_maps_parse(f, &m, &d), 0);
	fclose(f);
	assert_int_equal(m.n, 5);
	/* three mappings, only two slots: the count is still the total */
	assert_int_equal(proc_maps_of_file(&m, "/bin/x", idx, 2), 3);
	assert_int_equal(idx[0], 0);
	assert_int_equal(idx[1], 1);
	assert_int_equal(proc_maps_file_base(&m, "/bin/x", &base), 0);
	assert_int_equal(base, 0x1000);
	assert_int_equal(proc_maps_file_base(&m, "/lib/y", &base), 0);
	assert_int_equal(base, 0x800);
	assert_int_equal(proc_maps_file_base(&m, "/lib/z", &base), -1);
	assert_int_equal(proc_maps_of_file(&m, "", idx, 2), 0); /* anonymous is no file */
	proc_maps_free(&m);

	f = fmemopen(broken, strlen(broken), "r");
	assert_int_equal(proc_maps_parse(f, &m, &d), -1);
	fclose(f);
	assert_int_equal(d.code, EXIT_FAIL);
	assert_non_null(strstr(d.msg, "line 2"));
	assert_int_equal(m.n, 0);
}

/* Our own maps, checked against what the dynamic loader says: the lowest
 * mapping of libc is dladdr's dli_fbase, and our code lies in a mapping of
 * our executable. */
static void test_self(void **state)
{
	struct proc_maps m;
	struct diag d = {0};
	char exe[PATH_MAX];
	Dl_info info;
	uint64_t base, here = (uint64_t)(uintptr_t)&test_self;
	size_t idx[16], n;
	int inside = 0;
	ssize_t len;

	(void)state;
	assert_int_equal(proc_maps_read(getpid(), &m, &d), 0);
	assert_true(m.n > 5);

	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(len > 0);
	exe[len] = '\0';
	n = proc_maps_of_file(&m, exe, idx, 16);
	assert_true(n >= 1 && n <= 16);
	for (size_t i = 0; i < n; i++) {
		const struct proc_map *p = &m.v[idx[i]];

		if (here >= p->start && here < p->end) {
			inside = 1;
			assert_int_equal(p->perms[2], 'x');
		}
	}
	assert_true(inside);

	assert_true(dladdr((void *)&printf, &info) != 0);
	/* maps names the file by its canonical path (/lib is a symlink) */
	assert_non_null(realpath(info.dli_fname, exe));
	assert_int_equal(proc_maps_file_base(&m, exe, &base), 0);
	assert_int_equal(base, (uint64_t)(uintptr_t)info.dli_fbase);
	proc_maps_free(&m);
}

static void test_no_process(void **state)
{
	struct proc_maps m;
	struct diag d = {0};
	char want[64];
	pid_t pid = dead_pid();

	(void)state;
	assert_int_equal(proc_maps_read(pid, &m, &d), -1);
	assert_int_equal(d.code, EXIT_NO_PROCESS);
	snprintf(want, sizeof(want), "pid %d: no such process", (int)pid);
	assert_string_equal(d.msg, want);
	assert_int_equal(proc_maps_read(-5, &m, &d), -1);
	assert_int_equal(d.code, EXIT_NO_PROCESS);

	memset(&d, 0, sizeof(d));
	assert_int_equal(proc_root_open(pid, "/etc/passwd", O_RDONLY, &d), -1);
	assert_int_equal(d.code, EXIT_NO_PROCESS);
	assert_int_equal(proc_same_mount_ns(pid), -1);
	assert_int_equal(proc_ns_note(pid, want, sizeof(want)), -1);
}

static void test_kernel_thread(void **state)
{
	struct proc_maps m;
	struct diag d = {0};
	char comm[32] = "";
	FILE *f = fopen("/proc/2/comm", "r");

	(void)state;
	if (!f || !fgets(comm, sizeof(comm), f) || strncmp(comm, "kthreadd", 8)) {
		if (f)
			fclose(f);
		fprintf(stderr, "note: skipped, pid 2 is not kthreadd (pid namespace?)\n");
		skip();
	}
	fclose(f);
	assert_int_equal(proc_maps_read(2, &m, &d), 0);
	assert_int_equal(m.n, 0);
	proc_maps_free(&m);
}

/* Without CAP_SYS_PTRACE another user's maps are closed to us, and the
 * message must say which capability is missing. */
static void test_permission(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	if (getuid() != 0) {
		fprintf(stderr, "note: skipped, needs root to drop privileges\n");
		skip();
	}
	pid = fork();
	if (pid == 0) {
		struct proc_maps m;
		struct diag d = {0};

		if (setgid(65534) || setuid(65534))
			_exit(10);
		if (proc_maps_read(1, &m, &d) == 0)
			_exit(11);
		if (d.code != EXIT_PERMISSION || !strstr(d.msg, "CAP_SYS_PTRACE") ||
		    !strstr(d.msg, "pid 1"))
			_exit(12);
		memset(&d, 0, sizeof(d));
		if (proc_root_open(1, "/etc/passwd", O_RDONLY, &d) >= 0 ||
		    d.code != EXIT_PERMISSION)
			_exit(13);
		_exit(0);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_root_self(void **state)
{
	struct stat a, b;
	struct diag d = {0};
	char note[128] = "x";
	int fd;

	(void)state;
	fd = proc_root_open(getpid(), "/etc/passwd", O_RDONLY, &d);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(stat("/etc/passwd", &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	close(fd);
	assert_int_equal(proc_same_mount_ns(getpid()), 1);
	assert_int_equal(proc_same_root(getpid()), 1);
	assert_int_equal(proc_ns_note(getpid(), note, sizeof(note)), 0);
	assert_string_equal(note, "");

	fd = proc_root_open(getpid(), "/no/such/file", O_RDONLY, &d);
	assert_int_equal(fd, -1);
	assert_int_equal(d.sys_errno, ENOENT);
	assert_non_null(strstr(d.msg, "/no/such/file"));
}

static int do_chroot(void *dir)
{
	return chroot((const char *)dir) || chdir("/");
}

static int do_unshare(void *unused)
{
	(void)unused;
	return unshare(CLONE_NEWNS);
}

/* A chrooted child whose tree holds symlinks that point out of it: the
 * absolute one must resolve inside the child's root, the "../" one must
 * stop at it, a loop must end; with openat2 and with the by-hand fallback. A plain open of
 * /proc/PID/root/... would follow both to the host's files. */
static void test_root_chroot(void **state)
{
	char dir[] = "/tmp/bpfpy-proc-root-XXXXXX", path[PATH_MAX], note[256], want[PATH_MAX + 32];
	struct stat inside, got;
	struct diag d = {0};
	pid_t pid;
	int fd, fdesc;

	(void)state;
	if (getuid() != 0) {
		fprintf(stderr, "note: skipped, chroot needs root\n");
		skip();
	}
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/inside.txt", dir);
	fdesc = open(path, O_CREAT | O_WRONLY, 0644);
	assert_true(fdesc >= 0);
	close(fdesc);
	assert_int_equal(stat(path, &inside), 0);
	snprintf(path, sizeof(path), "%s/abs", dir);
	assert_int_equal(symlink("/inside.txt", path), 0);
	snprintf(path, sizeof(path), "%s/up", dir);
	assert_int_equal(symlink("../../../../../../etc/passwd", path), 0);
	snprintf(path, sizeof(path), "%s/passwd", dir);
	assert_int_equal(symlink("/etc/passwd", path), 0);

	snprintf(path, sizeof(path), "%s/sub", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/sub/rel", dir);
	assert_int_equal(symlink("../../../sub/../abs", path), 0);
	snprintf(path, sizeof(path), "%s/loop", dir);
	assert_int_equal(symlink("loop", path), 0);

	pid = start_child(do_chroot, dir);
	assert_true(pid > 0);

	/* openat2, then the same by hand (kernels before 5.6, valgrind). */
	for (proc_root_no_openat2 = 0; proc_root_no_openat2 <= 1; proc_root_no_openat2++) {
		const char *same[] = {"/abs", "abs", "/sub/rel", "sub/../../abs",
				      "/./sub/../inside.txt"};

		for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
			fd = proc_root_open(pid, same[i], O_RDONLY, &d);
			if (fd < 0)
				print_error("emulated %d: %s: %s\n", proc_root_no_openat2, same[i],
					    d.msg);
			assert_true(fd >= 0);
			assert_int_equal(fstat(fd, &got), 0);
			assert_int_equal(got.st_ino, inside.st_ino);
			close(fd);
		}
		assert_int_equal(proc_root_open(pid, "/up", O_RDONLY, &d), -1);
		assert_int_equal(d.sys_errno, ENOENT);
		assert_int_equal(proc_root_open(pid, "passwd", O_RDONLY, &d), -1);
		assert_int_equal(d.sys_errno, ENOENT);
		assert_int_equal(proc_root_open(pid, "/loop", O_RDONLY, &d), -1);
		assert_int_equal(d.sys_errno, ELOOP);
	}
	proc_root_no_openat2 = 0;

	assert_int_equal(proc_same_mount_ns(pid), 1);
	assert_int_equal(proc_same_root(pid), 0);
	assert_true(proc_ns_note(pid, note, sizeof(note)) > 0);
	snprintf(want, sizeof(want), "(chroot %s)", dir);
	assert_non_null(strstr(note, want));
	assert_memory_equal(note, "mnt ns ", 7);

	kill_children(NULL);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

static void test_other_mount_ns(void **state)
{
	char note[128], want[64], p[64];
	struct stat st;
	pid_t pid;

	(void)state;
	pid = start_child(do_unshare, NULL);
	if (pid < 0) {
		fprintf(stderr, "note: skipped, cannot unshare a mount namespace here\n");
		skip();
	}
	assert_int_equal(proc_same_mount_ns(pid), 0);
	assert_int_equal(proc_same_root(pid), 1);
	snprintf(p, sizeof(p), "/proc/%d/ns/mnt", (int)pid);
	assert_int_equal(stat(p, &st), 0);
	snprintf(want, sizeof(want), "mnt ns %llu", (unsigned long long)st.st_ino);
	assert_true(proc_ns_note(pid, note, sizeof(note)) > 0);
	assert_string_equal(note, want);
	/* a tiny buffer is cut, never overrun */
	assert_int_equal(proc_ns_note(pid, note, 5), 4);
	assert_int_equal(strlen(note), 4);
}

#define T(f) cmocka_unit_test_teardown(f, kill_children)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_parse_line),	  T(test_parse_line_malformed),
	    T(test_parse_stream), T(test_self),
	    T(test_no_process),	  T(test_kernel_thread),
	    T(test_permission),	  T(test_root_self),
	    T(test_root_chroot),  T(test_other_mount_ns),
	};

	atexit(kill_children_atexit);
	return cmocka_run_group_tests_name("proc_maps", tests, NULL, NULL);
}
