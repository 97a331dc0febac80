// SPDX-License-Identifier: MIT
/*
 * py_binary_find on live processes. Each target interpreter prints, from
 * inside, where its _PyRuntime, None, code, frame and str types are and its
 * sys.hexversion; what py_binary_find computes from outside must agree.
 * Covers pyenv's shared-libpython builds, Debian's non-PIE static
 * python3.11, the sid chroot (files through /proc/PID/root) and the same
 * tree as a pivot_root'ed mount namespace (maps paths that exist only
 * inside it), a deleted executable, and the refusals.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "child_line.h"

#include "diag.h"
#include "py_binary.h"
#include "py_process.h"

#define SID	 "/var/cache/bpfpy/sid"
#define PYENV	 "/root/.pyenv/versions"
#define MAX_LIVE 24

static const char script[] =
    "import ctypes, sys, types, time\n"
    "print(ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, '_PyRuntime')),"
    " sys.hexversion, id(None), id(types.CodeType), id(types.FrameType), id(str),"
    " flush=True)\n"
    "time.sleep(3600)\n";
/* Python 2 compatible, for the interpreters we must refuse. */
static const char script_ready[] =
    "import sys, time\nsys.stdout.write('ready\\n')\nsys.stdout.flush()\ntime.sleep(3600)\n";

static pid_t children[MAX_LIVE + 8];
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

/* The child side of a "container": the sid tree as the root of a private
 * mount namespace, so its maps name /usr/bin/python3.14, a path the host
 * does not have. */
static int enter_container(void)
{
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount(SID, SID, NULL, MS_BIND | MS_REC, NULL) || chdir(SID) ||
	    syscall(SYS_pivot_root, ".", ".") || umount2(".", MNT_DETACH) || chdir("/"))
		return -1;
	return 0;
}

/* Start argv with stdout on a pipe; returns the pid and the pipe's read
 * end, and records the child for killing. */
static pid_t spawn(char *const argv[], int container, int *out)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		if (container && enter_container())
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		return -1;
	}
	children[nchildren++] = pid;
	*out = p[0];
	return pid;
}

struct live {
	char name[64];
	char *argv[8];
	char argbuf[2][PATH_MAX];
	int container;
	int expect_usdt; /* -1: any */
	const char *chroot_dir;
	const char *must_be_in_path; /* NULL: any */
};

static struct live lives[MAX_LIVE];
static size_t nlives;

static struct live *add_live(const char *name, const char *exe, const char *pre)
{
	struct live *l;
	int i = 0;

	if (nlives == MAX_LIVE)
		return NULL;
	l = &lives[nlives++];
	memset(l, 0, sizeof(*l));
	l->expect_usdt = -1;
	snprintf(l->name, sizeof(l->name), "%s", name);
	if (pre) {
		snprintf(l->argbuf[0], PATH_MAX, "%s", "/usr/sbin/chroot");
		l->argv[i++] = l->argbuf[0];
		l->argv[i++] = (char *)pre;
	}
	snprintf(l->argbuf[1], PATH_MAX, "%s", exe);
	l->argv[i++] = l->argbuf[1];
	l->argv[i++] = (char *)"-c";
	l->argv[i++] = (char *)script;
	l->argv[i] = NULL;
	return l;
}

static void find_lives(void)
{
	glob_t g;
	struct live *l;

	if (!glob(PYENV "/3.*", 0, NULL, &g)) {
		for (size_t i = 0; i < g.gl_pathc; i++) {
			const char *v = strrchr(g.gl_pathv[i], '/') + 1;
			char exe[PATH_MAX], name[64];
			int ma, mi;

			if (sscanf(v, "%d.%d", &ma, &mi) != 2 || mi < 8)
				continue;
			snprintf(exe, sizeof(exe), "%s/bin/python3", g.gl_pathv[i]);
			if (access(exe, X_OK))
				continue;
			snprintf(name, sizeof(name), "live pyenv-%s", v);
			if ((l = add_live(name, exe, NULL)))
				l->must_be_in_path = "libpython3.";
		}
		globfree(&g);
	}
	if (!access("/usr/bin/python3.11", X_OK) &&
	    (l = add_live("live debian-3.11", "/usr/bin/python3.11", NULL))) {
		l->expect_usdt = 1;
		l->must_be_in_path = "/usr/bin/python3.11";
	}
	if (!access(SID "/usr/bin/python3.15", X_OK)) {
		if ((l = add_live("live sid-3.15 chroot", "python3.15", SID)))
			l->chroot_dir = SID;
		if ((l = add_live("live sid-3.14 chroot", "python3.14", SID)))
			l->chroot_dir = SID;
		if ((l = add_live("live sid-3.14 mount ns", "/usr/bin/python3.14", NULL))) {
			l->container = 1;
			l->must_be_in_path = "/root/usr/bin/python3.14";
		}
	} else {
		fprintf(stderr,
			"note: no sid chroot at %s: 3.14/3.15, chroot and mount "
			"namespace cases not tested\n",
			SID);
	}
}

static void check_live(void **state)
{
	const struct live *l = *state;
	unsigned long long rt, hex, none, code, frame, str;
	struct py_binary b;
	struct diag d = {0};
	char line[512];
	int out;
	pid_t pid;

	pid = spawn(l->argv, l->container, &out);
	assert_true(pid > 0);
	if (child_read_line(out, line, sizeof(line)))
		fail_msg("%s: the interpreter printed nothing", l->name);
	close(out);
	assert_int_equal(
	    sscanf(line, "%llu %llu %llu %llu %llu %llu", &rt, &hex, &none, &code, &frame, &str),
	    6);

	if (py_binary_find(pid, &b, &d))
		fail_msg("%s: %s", l->name, d.msg);
	assert_int_equal(b.runtime_addr, rt);
	assert_int_equal(b.none_addr, none);
	assert_int_equal(b.code_type_addr, code);
	assert_int_equal(b.frame_type_addr, frame);
	assert_int_equal(b.unicode_type_addr, str);
	if (hex >= 0x030b0000) {
		/* Py_Version, read from the process: exact */
		assert_int_equal(b.version_hex, hex);
		assert_false(b.version_approximate);
		assert_int_not_equal(b.py_version_addr, 0);
	} else {
		assert_int_equal(b.version_hex, hex & 0xffff0000);
		assert_true(b.version_approximate);
		assert_int_equal(b.py_version_addr, 0);
	}
	assert_int_equal(b.is_shared_lib, strstr(b.path, "/libpython") != NULL);
	if (l->expect_usdt >= 0)
		assert_int_equal(b.has_usdt, l->expect_usdt);
	if (l->must_be_in_path && !strstr(b.path, l->must_be_in_path))
		fail_msg("%s: path %s lacks %s", l->name, b.path, l->must_be_in_path);
	if (l->chroot_dir) {
		char want[PATH_MAX + 16];

		snprintf(want, sizeof(want), "(chroot %s)", l->chroot_dir);
		if (!strstr(b.ns_note, want))
			fail_msg("%s: note \"%s\" lacks \"%s\"", l->name, b.ns_note, want);
	} else if (l->container) {
		assert_memory_equal(b.ns_note, "mnt ns ", 7);
	} else {
		assert_string_equal(b.ns_note, "");
	}
	assert_true(strlen(b.build_id) >= 32);
	kill_children(NULL);
}

/* Start exe with the Python-2-compatible script and expect a refusal. */
static void expect_refusal(const char *exe, int code, const char *text)
{
	char *argv[] = {(char *)exe, (char *)"-c", (char *)script_ready, NULL};
	struct py_binary b;
	struct diag d = {0};
	char line[64], want[128];
	int out;
	pid_t pid;

	if (access(exe, X_OK)) {
		fprintf(stderr, "note: skipped, %s absent\n", exe);
		skip();
	}
	pid = spawn(argv, 0, &out);
	assert_true(pid > 0);
	assert_int_equal(child_read_line(out, line, sizeof(line)), 0);
	close(out);
	assert_string_equal(line, "ready");
	assert_int_equal(py_binary_find(pid, &b, &d), -1);
	assert_int_equal(d.code, code);
	snprintf(want, sizeof(want), "pid %d: %s", (int)pid, text);
	assert_string_equal(d.msg, want);
	kill_children(NULL);
}

static void test_python37(void **state)
{
	(void)state;
	expect_refusal(PYENV "/3.7.16/bin/python3.7", EXIT_UNSUPPORTED,
		       "Python 3.7 is not supported (bpfpy reads 3.8 and newer)");
}

static void test_python36(void **state)
{
	(void)state;
	expect_refusal(PYENV "/3.6.15/bin/python3.6", EXIT_UNSUPPORTED,
		       "Python 3.6 is not supported (bpfpy reads 3.8 and newer)");
}

static void test_python27(void **state)
{
	(void)state;
	expect_refusal(PYENV "/2.7.18/bin/python2.7", EXIT_UNSUPPORTED,
		       "Python 2.7 is not supported (bpfpy reads 3.8 and newer)");
}

/* Wait until pid has replaced its image with exe (or exited). */
static void wait_exec(pid_t pid, const char *exe)
{
	char p[64], t[PATH_MAX];

	snprintf(p, sizeof(p), "/proc/%d/exe", (int)pid);
	for (int i = 0; i < 5000; i++) {
		ssize_t n = readlink(p, t, sizeof(t) - 1);

		if (n > 0) {
			t[n] = '\0';
			if (!strcmp(t, exe))
				return;
		}
		usleep(1000);
	}
	fail_msg("pid %d never became %s", (int)pid, exe);
}

static void test_not_python(void **state)
{
	char *argv[] = {(char *)"/bin/sleep", (char *)"3600", NULL};
	char want[128], exe[PATH_MAX];
	struct py_binary b;
	struct diag d = {0};
	int out;
	pid_t pid;

	(void)state;
	pid = spawn(argv, 0, &out);
	assert_true(pid > 0);
	close(out);
	assert_non_null(realpath("/bin/sleep", exe));
	wait_exec(pid, exe);
	assert_int_equal(py_binary_find(pid, &b, &d), -1);
	assert_int_equal(d.code, EXIT_NOT_PYTHON);
	snprintf(want, sizeof(want),
		 "pid %d (sleep): not a CPython process (no _PyRuntime in its executable or "
		 "libpython)",
		 (int)pid);
	assert_string_equal(d.msg, want);
	kill_children(NULL);
}

/* A process that execs another program after it was opened: a later failed
 * read is explained by the exec, with exit 4 and what it runs now. */
static void test_execd(void **state)
{
	char *argv[] = {(char *)"/usr/bin/python3", (char *)"-c",
			(char *)"import os, time\nprint('ready', flush=True)\ntime.sleep(0.3)\n"
				"os.execv('/bin/sleep', ['sleep', '3600'])\n",
			NULL};
	char line[64], exe[PATH_MAX];
	struct py_process p;
	struct diag d = {0};
	int out;
	pid_t pid;

	(void)state;
	pid = spawn(argv, 0, &out);
	assert_true(pid > 0);
	assert_int_equal(child_read_line(out, line, sizeof(line)), 0);
	close(out);
	assert_int_equal(py_process_open(&p, pid, 0, &d), 0);
	assert_int_equal(py_process_execd(&p, &d), 0);
	assert_non_null(realpath("/bin/sleep", exe));
	wait_exec(pid, exe);
	assert_int_equal(py_process_execd(&p, &d), 1);
	assert_int_equal(d.code, EXIT_NOT_PYTHON);
	assert_non_null(strstr(d.msg, "exec'd another program (sleep) while bpfpy read it"));
	kill_children(NULL);
}

static void test_no_process(void **state)
{
	struct py_binary b;
	struct diag d = {0};
	char want[64];
	pid_t pid = fork();

	(void)state;
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	assert_int_equal(py_binary_find(pid, &b, &d), -1);
	assert_int_equal(d.code, EXIT_NO_PROCESS);
	snprintf(want, sizeof(want), "pid %d: no such process", (int)pid);
	assert_string_equal(d.msg, want);
	assert_int_equal(py_binary_find(0, &b, &d), -1);
	assert_int_equal(d.code, EXIT_NO_PROCESS);
}

/* An exited, unreaped child has no mappings: it is gone, not "not Python". */
static void test_zombie(void **state)
{
	struct py_binary b;
	struct diag d = {0};
	char p[64], st[256];
	pid_t pid = fork();

	(void)state;
	if (pid == 0)
		_exit(0);
	children[nchildren++] = pid;
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	for (int i = 0; i < 5000; i++) {
		FILE *f = fopen(p, "r");
		int zombie = 0;

		if (f) {
			zombie = fgets(st, sizeof(st), f) && strstr(st, ") Z ");
			fclose(f);
		}
		if (zombie)
			break;
		usleep(1000);
	}
	assert_int_equal(py_binary_find(pid, &b, &d), -1);
	assert_int_equal(d.code, EXIT_NO_PROCESS);
}

static void test_kernel_thread(void **state)
{
	struct py_binary b;
	struct diag d = {0};
	char comm[32] = "";
	FILE *f = fopen("/proc/2/comm", "r");

	(void)state;
	if (!f || !fgets(comm, sizeof(comm), f) || strncmp(comm, "kthreadd", 8)) {
		if (f)
			fclose(f);
		fprintf(stderr, "note: skipped, pid 2 is not kthreadd\n");
		skip();
	}
	fclose(f);
	assert_int_equal(py_binary_find(2, &b, &d), -1);
	assert_int_equal(d.code, EXIT_NOT_PYTHON);
	assert_non_null(strstr(d.msg, "pid 2 (kthreadd): not a CPython process"));
}

/* The executable deleted after start: only /proc/PID/map_files reaches it. */
static void test_deleted_executable(void **state)
{
	char dir[] = "/tmp/bpfpy-py-binary-XXXXXX", exe[PATH_MAX], cmd[2 * PATH_MAX], line[512];
	char *argv[] = {exe, (char *)"-c", (char *)script, NULL};
	unsigned long long rt;
	struct py_binary b;
	struct diag d = {0};
	int out;
	pid_t pid;

	(void)state;
	if (access("/usr/bin/python3.11", X_OK)) {
		fprintf(stderr, "note: skipped, /usr/bin/python3.11 absent\n");
		skip();
	}
	assert_non_null(mkdtemp(dir));
	snprintf(exe, sizeof(exe), "%s/python3.11", dir);
	snprintf(cmd, sizeof(cmd), "cp /usr/bin/python3.11 '%s'", exe);
	assert_int_equal(system(cmd), 0);
	pid = spawn(argv, 0, &out);
	assert_true(pid > 0);
	assert_int_equal(child_read_line(out, line, sizeof(line)), 0);
	close(out);
	assert_int_equal(sscanf(line, "%llu", &rt), 1);
	assert_int_equal(unlink(exe), 0);
	assert_int_equal(rmdir(dir), 0);

	if (py_binary_find(pid, &b, &d))
		fail_msg("%s", d.msg);
	assert_int_equal(b.runtime_addr, rt);
	assert_non_null(strstr(b.path, "/map_files/"));
	assert_int_equal(b.version_hex >> 16, 0x030b);
	kill_children(NULL);
}

static void test_version_from_name(void **state)
{
	static const struct {
		const char *path;
		int rc, major, minor;
	} cases[] = {
	    {"/usr/bin/python3.11", 0, 3, 11},
	    {"/x/lib/libpython3.7m.so.1.0", 0, 3, 7},
	    {"libpython3.13t.so.1.0", 0, 3, 13},
	    {"/usr/bin/python2.7", 0, 2, 7},
	    {"/opt/py/bin/python3.15d", 0, 3, 15},
	    {"/usr/bin/python3", -1, 0, 0},
	    {"/usr/bin/python", -1, 0, 0},
	    {"/python3.11/bin/sleep", -1, 0, 0},
	    {"libpython3.so", -1, 0, 0},
	    {"python3.", -1, 0, 0},
	    {"python99999999999999999999.1", -1, 0, 0},
	    {"", -1, 0, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int ma = 0, mi = 0, rc = py_version_from_name(cases[i].path, &ma, &mi);

		if (rc != cases[i].rc || (!rc && (ma != cases[i].major || mi != cases[i].minor)))
			fail_msg("\"%s\": rc %d %d.%d", cases[i].path, rc, ma, mi);
	}
}

#define T(f) cmocka_unit_test_teardown(f, kill_children)

int main(void)
{
	struct CMUnitTest tests[MAX_LIVE + 16];
	const struct CMUnitTest fixed[] = {
	    T(test_version_from_name),	T(test_python37),   T(test_python36), T(test_python27),
	    T(test_not_python),		T(test_no_process), T(test_zombie),   T(test_kernel_thread),
	    T(test_deleted_executable), T(test_execd),
	};
	size_t n = 0;

	atexit(kill_children_atexit);
	find_lives();
	for (size_t i = 0; i < nlives; i++)
		tests[n++] =
		    (struct CMUnitTest){lives[i].name, check_live, NULL, kill_children, &lives[i]};
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		tests[n++] = fixed[i];
	return _cmocka_run_group_tests("py_binary", tests, n, NULL, NULL);
}
