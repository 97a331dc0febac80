// SPDX-License-Identifier: MIT
/*
 * The cgroup readers of proc.h: which line of /proc/PID/cgroup is the
 * process's cgroup (v2, v1, hybrid), and the container id each runtime's
 * path shape names, on paths as docker, containerd, CRI-O, podman and
 * kubelet make them, and on hostile ones (a cgroup name is anyone's with a
 * delegated subtree: near-miss hex, uppercase, one digit short or long,
 * conmon's scope, ids in the middle of a component, 4 KiB paths). And this
 * process's own cgroup against what the kernel says.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "proc.h"

#define ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void expect_id(const char *path, const char *want)
{
	char id[65] = "x";
	int found = cgroup_container_id(path, id, sizeof(id));

	if (!want) {
		if (found)
			fail_msg("%s: found %s, expected none", path, id);
		return;
	}
	if (!found)
		fail_msg("%s: expected %s, found none", path, want);
	assert_string_equal(id, want);
}

static void test_runtimes(void **state)
{
	(void)state;
	expect_id("/system.slice/docker-" ID ".scope", ID);
	expect_id("/docker/" ID, ID);
	expect_id("/system.slice/docker-" ID ".scope/init.scope", ID); /* systemd inside */
	expect_id("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_5678."
		  "slice/cri-containerd-" ID ".scope",
		  ID);
	expect_id("/kubepods/burstable/pod12345678-aaaa-bbbb-cccc-1234567890ab/" ID, ID);
	expect_id("/kubepods.slice/kubepods-pod0a.slice/crio-" ID ".scope", ID);
	expect_id("/machine.slice/libpod-" ID ".scope/container", ID);
	expect_id("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID ".scope",
		  ID);
	expect_id("/libpod_parent/libpod-" ID "/" ID, ID);
	/* The innermost one names the process's container. */
	expect_id("/docker/" ID "/docker/ffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
		  "ffffff",
		  "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff");
}

static void test_not_containers(void **state)
{
	(void)state;
	expect_id("/", NULL);
	expect_id("", NULL);
	expect_id("/user.slice/user-0.slice/session-3.scope", NULL);
	expect_id("/system.slice/ssh.service", NULL);
	/* podman's monitor, beside the container: not in it. */
	expect_id("/machine.slice/libpod-conmon-" ID ".scope", NULL);
	/* A bare id anywhere but under a runtime's directory. */
	expect_id("/" ID, NULL);
	expect_id("/user.slice/" ID, NULL);
}

static void test_hostile(void **state)
{
	char big[8192];
	size_t n = 0;

	(void)state;
	/* One digit short, one long, uppercase, a non-hex letter. */
	expect_id("/docker/" ID "0", NULL);
	expect_id("/docker/"
		  "123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		  NULL);
	expect_id("/docker/0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", NULL);
	expect_id("/docker/g123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", NULL);
	expect_id("/system.slice/docker-" ID ".scopex", NULL);
	expect_id("/system.slice/docker-" ID, NULL);
	expect_id("/system.slice/xdocker-" ID ".scope", NULL);
	expect_id("/system.slice/docker-" ID ".scope\n0::/evil", NULL);
	expect_id("/system.slice/docker-\x1b[2J" ID ".scope", NULL);
	/* Slashes only, then a runtime's name with nothing after it. */
	expect_id("////////", NULL);
	expect_id("/docker/", NULL);
	expect_id("docker-" ID ".scope", ID); /* relative, as in a cgroup namespace */
	/* A very deep path: found at the leaf, nothing read past the end. */
	while (n + 8 < sizeof(big) - 80) {
		memcpy(big + n, "/a", 2);
		n += 2;
	}
	snprintf(big + n, sizeof(big) - n, "/docker/%s", ID);
	expect_id(big, ID);
	big[n] = 0;
	expect_id(big, NULL);
	{ /* Too small a buffer: refused, not overrun. */
		char small[10] = "unchanged";

		assert_int_equal(cgroup_container_id("/docker/" ID, small, sizeof(small)), 0);
		assert_string_equal(small, "unchanged");
	}
}

static void test_parse_file(void **state)
{
	char buf[256];

	(void)state;
	assert_int_equal(
	    proc_cgroup_parse("0::/system.slice/docker-" ID ".scope\n", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/system.slice/docker-" ID ".scope");
	/* Hybrid: v1 controllers and the v2 line; v2 wins. */
	assert_int_equal(proc_cgroup_parse("12:pids:/docker/" ID "\n1:name=systemd:/x\n0::/y\n",
					   buf, sizeof(buf)),
			 0);
	assert_string_equal(buf, "/y");
	/* v1 only: the first path that is not the root. */
	assert_int_equal(proc_cgroup_parse("3:cpu:/\n2:memory:/docker/" ID "\n", buf, sizeof(buf)),
			 0);
	assert_string_equal(buf, "/docker/" ID);
	assert_int_equal(proc_cgroup_parse("garbage\n", buf, sizeof(buf)), -1);
	assert_int_equal(proc_cgroup_parse("", buf, sizeof(buf)), -1);
	/* Cut to the buffer, NUL-terminated. */
	assert_int_equal(proc_cgroup_parse("0::/" ID ID "\n", buf, 16), 0);
	assert_int_equal(strlen(buf), 15);
}

static void test_self(void **state)
{
	char mine[512], text[4096];
	FILE *f = fopen("/proc/self/cgroup", "r");
	size_t n;

	(void)state;
	assert_non_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = 0;
	assert_int_equal(proc_cgroup(getpid(), mine, sizeof(mine)), 0);
	assert_true(mine[0] == '/');
	/* What the file says, on the line we chose. */
	assert_non_null(strstr(text, mine));
	assert_int_equal(proc_cgroup(-1, mine, sizeof(mine)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_runtimes), cmocka_unit_test(test_not_containers),
	    cmocka_unit_test(test_hostile),  cmocka_unit_test(test_parse_file),
	    cmocka_unit_test(test_self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
