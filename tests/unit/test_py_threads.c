// SPDX-License-Identifier: MIT
/*
 * Threading names of a live target that imports threading late
 * (user/python/py_threads.c). The first search finds no threading module
 * and is remembered (py_tnames.miss_keys): a lookup while sys.modules has
 * not changed must not search again, and once the target imports
 * threading and starts a thread, the next lookup must find that thread's
 * name. A stamp that missed the import would leave it unnamed: the
 * import adds entries to the same keys object here (see the script), so
 * the entry count is what must tell.
 *
 * Every interpreter of scripts/targets.sh that is here: pyenv 3.8-3.13,
 * Debian's static 3.11 and its debug build, and sid's 3.14/3.15 (chroot).
 * They run with -S: pyenv's 3.11 site imports threading at start.
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
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "child_line.h"

#include "diag.h"
#include "py_process.h"
#include "py_threads.h"

#define SID   "/var/cache/bpfpy/sid"
#define PYENV "/root/.pyenv/versions"

static const char script[] =
    "import sys, time\n"
    /* sys.modules grown, then emptied of the padding: dicts never shrink,
     * so the import below adds entries to the same keys object (no
     * resize), and only the entry count tells it happened. */
    "for i in range(1000): sys.modules['_pad%d' % i] = None\n"
    "for i in range(1000): del sys.modules['_pad%d' % i]\n"
    "print('ready', flush=True)\n"
    "sys.stdin.readline()\n"
    "import threading\n"
    "t = threading.Thread(target=time.sleep, args=(3600,), name='late-imported-thread',"
    " daemon=True)\n"
    "t.start()\n"
    "print(t.native_id, flush=True)\n"
    "sys.stdin.readline()\n";

struct interp {
	const char *name, *exe, *chroot_dir;
};

static const struct interp interps[] = {
    {"pyenv-3.8", PYENV "/3.8.18/bin/python3.8", NULL},
    {"pyenv-3.9", PYENV "/3.9.18/bin/python3.9", NULL},
    {"pyenv-3.10", PYENV "/3.10.13/bin/python3.10", NULL},
    {"pyenv-3.11", PYENV "/3.11.7/bin/python3.11", NULL},
    {"pyenv-3.12", PYENV "/3.12.1/bin/python3.12", NULL},
    {"pyenv-3.13", PYENV "/3.13.0/bin/python3.13", NULL},
    {"debian-3.11", "/usr/bin/python3.11", NULL},
    {"debian-3.11d", "/usr/bin/python3.11d", NULL},
    {"sid-3.14", "/usr/bin/python3.14", SID},
    {"sid-3.15", "/usr/bin/python3.15", SID},
};

static pid_t child = -1;

static void kill_child(void)
{
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	child = -1;
}

/* Start the script under l with pipes on stdin and stdout. */
static pid_t spawn(const struct interp *l, int *in, int *out)
{
	int pi[2], po[2];
	pid_t pid;

	if (pipe2(pi, O_CLOEXEC) || pipe2(po, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(pi[0], 0);
		dup2(po[1], 1);
		if (l->chroot_dir && (chroot(l->chroot_dir) || chdir("/")))
			_exit(126);
		execl(l->exe, l->exe, "-S", "-c", script, (char *)NULL);
		_exit(127);
	}
	close(pi[0]);
	close(po[1]);
	*in = pi[1];
	*out = po[0];
	return pid;
}

static void check_one(const struct interp *l)
{
	struct py_process *p = calloc(1, sizeof(*p));
	struct py_tnames t = {0};
	struct diag d = {0};
	char line[64];
	uint64_t keys, reads;
	int in = -1, out = -1;
	long tid;

	assert_non_null(p);
	child = spawn(l, &in, &out);
	assert_true(child > 0);
	if (child_read_line(out, line, sizeof(line)) || strcmp(line, "ready"))
		fail_msg("%s: the interpreter did not start", l->name);
	if (py_process_open(p, child, 0, &d))
		fail_msg("%s: %s", l->name, d.msg);
	/* No threading module: no names, and the search remembered. */
	assert_int_equal(py_tnames_read(p, &t, &d), 0);
	if (!t.miss_keys)
		fail_msg("%s: a search without threading left no stamp", l->name);
	keys = t.miss_keys;
	/* Again: the interpreter list and the stamp, no search (a read per
	 * module and per chunk of entries: about 40 here). */
	reads = p->mem.reads;
	assert_null(py_tnames_lookup(p, &t, (uint32_t)child));
	assert_int_equal(t.miss_keys, keys);
	if (p->mem.reads - reads > 8)
		fail_msg("%s: %llu reads for an unchanged sys.modules", l->name,
			 (unsigned long long)(p->mem.reads - reads));
	/* Now it imports threading and starts a named thread. */
	if (write(in, "go\n", 3) != 3 || child_read_line(out, line, sizeof(line)))
		fail_msg("%s: the thread did not start", l->name);
	tid = strtol(line, NULL, 10);
	assert_true(tid > 0);
	const char *name = py_tnames_lookup(p, &t, (uint32_t)tid);

	if (!name)
		fail_msg("%s: thread %ld unnamed after threading was imported", l->name, tid);
	assert_string_equal(name, "late-imported-thread");
	py_tnames_free(&t);
	free(p);
	close(in);
	close(out);
	kill_child();
}

static void test_late_threading(void **state)
{
	int ran = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(interps) / sizeof(interps[0]); i++) {
		char path[256];

		snprintf(path, sizeof(path), "%s%s",
			 interps[i].chroot_dir ? interps[i].chroot_dir : "", interps[i].exe);
		if (access(path, X_OK)) {
			fprintf(stderr, "note: %s absent (%s): not tested\n", interps[i].name,
				path);
			continue;
		}
		check_one(&interps[i]);
		ran++;
	}
	assert_true(ran > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_late_threading),
	};

	atexit(kill_child);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
