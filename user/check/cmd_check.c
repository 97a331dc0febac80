// SPDX-License-Identifier: MIT
/*
 * bpfpy check: can this host run bpfpy? Each line is a real attempt (load a
 * program, open a clock, fire a uprobe, seize a child), not a guess from
 * version numbers, so a ✓ means the thing works here and now.
 */
#include <argp.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "bpf_sampler.h"
#include "commands.h"
#include "diag.h"
#include "bpf_loader.h"
#include "hostcheck.skel.h"
#include "proc.h"

struct check_opts {
	int verbose;
};

static const char doc[] =
    "Check that this host can run bpfpy: kernel BTF, BPF program load, a perf_event "
    "program on the cpu-clock, the wall-clock task iterator, a uprobe, ptrace, and the "
    "capabilities held.\v"
    "Output: one line per check, ✓ or ✗, with what to do when a check fails.\n\n"
    "EXAMPLES:\n"
    "  sudo bpfpy check\n\n" EXIT_CODES_DOC
    " check exits 7 when sampling cannot work, 6 when only privileges are missing.";

static const struct argp_option options[] = {
    {"verbose", 'v', NULL, 0, "Show libbpf's log (verifier output on failure)", 0},
    {0},
};

static error_t parse(int key, char *arg, struct argp_state *state)
{
	struct check_opts *o = state->input;

	(void)arg;
	switch (key) {
	case 'v':
		o->verbose = 1;
		break;
	case ARGP_KEY_ARG:
		argp_usage(state);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static int failures, perm_failures;
static char missing_caps[160]; /* "CAP_X, CAP_Y": what to grant */

static void missing_cap(const char *name)
{
	size_t n = strlen(missing_caps);

	snprintf(missing_caps + n, sizeof(missing_caps) - n, "%s%s", n ? ", " : "", name);
}

static void line(int ok, int is_perm, const char *what, const char *detail)
{
	printf("  %s %-34s %s\n", ok ? "✓" : "✗", what, detail);
	if (!ok) {
		failures++;
		perm_failures += is_perm;
	}
}

/* A non-inlined function in our own text for the uprobe to hit. */
__attribute__((noinline)) int bpfpy_check_uprobe_target(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

static void check_caps(void)
{
	static const struct {
		int cap;
		const char *name, *why;
	} caps[] = {
	    {39, "CAP_BPF", "load BPF programs and maps"},
	    {38, "CAP_PERFMON", "open perf events, read user memory from BPF"},
	    {19, "CAP_SYS_PTRACE", "read and stop other processes (dump, oracle ptrace/live)"},
	    {21, "CAP_SYS_ADMIN", "trace's uprobes; record and dump need it only before 5.8"},
	};
	char detail[160];

	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		int held = proc_self_has_cap(caps[i].cap);

		snprintf(detail, sizeof(detail), "%s: %s", held ? "held" : "missing", caps[i].why);
		/* CAP_SYS_ADMIN is informational: CAP_BPF+CAP_PERFMON replace it. */
		if (caps[i].cap == 21)
			printf("  %s %-34s %s\n", held ? "✓" : "·", caps[i].name, detail);
		else
			line(held, 1, caps[i].name, detail);
		if (!held && caps[i].cap != 21)
			missing_cap(caps[i].name);
	}
}

static void check_btf(void)
{
	int ok = access("/sys/kernel/btf/vmlinux", R_OK) == 0;

	line(ok, 0, "kernel BTF (/sys/kernel/btf/vmlinux)",
	     ok ? "present: CO-RE programs relocate here"
		: "missing: needs a kernel built with CONFIG_DEBUG_INFO_BTF=y");
}

static void check_sampler(int verbose, int wall)
{
	struct bpf_sampler_opts so = {.rate_hz = 99, .verbose = verbose, .wall = wall};
	struct bpf_sampler *s = NULL;
	struct diag d = {0};
	char detail[600];
	const char *what = wall ? "wall-clock task iterator (iter.s)" : "BPF sampler loads";

	if (bpf_sampler_open(&s, &so, &d)) {
		line(0, d.code == EXIT_PERMISSION, what, d.msg);
		if (!wall)
			line(0, d.code == EXIT_PERMISSION, "perf_event on cpu-clock attaches",
			     "not tried: the sampler did not load");
		return;
	}
	if (!wall)
		line(1, 0, what, "verifier accepted the frame walker");
	if (bpf_sampler_start(s, &d) || (wall && bpf_sampler_snapshot(s, &d))) {
		line(0, d.code == EXIT_PERMISSION, wall ? what : "perf_event on cpu-clock attaches",
		     d.msg);
	} else if (wall) {
		line(1, 0, what, "loaded, attached and ran once");
	} else {
		snprintf(detail, sizeof(detail), "attached on %d online CPU(s), exact period mode",
			 bpf_sampler_ncpus(s));
		line(1, 0, "perf_event on cpu-clock attaches", detail);
	}
	bpf_sampler_close(s);
}

static void check_uprobe(void)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = "bpfpy_check_uprobe_target");
	struct hostcheck_bpf *skel = hostcheck_bpf__open();
	struct bpf_link *link;
	struct diag d = {0};
	char detail[160];

	if (!skel)
		bpf_loader_open_failed("uprobe check", &d);
	else if (bpf_loader_load(skel->skeleton, "uprobe check", &d))
		hostcheck_bpf__destroy(skel);
	if (d.code) {
		line(0, d.code == EXIT_PERMISSION, "uprobe attaches and fires", d.msg);
		return;
	}
	link = bpf_program__attach_uprobe_opts(skel->progs.check_uprobe, getpid(), "/proc/self/exe",
					       0, &uo);
	if (!link) {
		int err = errno;

		/* The kernel opens uprobe perf events for CAP_SYS_ADMIN only:
		 * CAP_PERFMON is not enough (EACCES). */
		snprintf(detail, sizeof(detail), "attach failed: %s%s", strerror(err),
			 err == EACCES || err == EPERM
			     ? " (uprobe perf events need CAP_SYS_ADMIN; only trace uses them)"
			     : "");
		line(0, err == EPERM || err == EACCES, "uprobe attaches and fires", detail);
		if (err == EPERM || err == EACCES)
			missing_cap("CAP_SYS_ADMIN (for trace)");
	} else {
		bpfpy_check_uprobe_target(1);
		snprintf(detail, sizeof(detail), "fired %llu time(s) for 1 call",
			 (unsigned long long)skel->bss->hits);
		line(skel->bss->hits == 1, 0, "uprobe attaches and fires", detail);
		bpf_link__destroy(link);
	}
	hostcheck_bpf__destroy(skel);
}

static void check_ptrace(void)
{
	char detail[200], scope[16] = "?";
	int yama = proc_yama_ptrace_scope();
	pid_t child;
	int st, err = 0;

	if (yama >= 0)
		snprintf(scope, sizeof(scope), "%d", yama);
	child = fork();
	if (child < 0) {
		line(0, 0, "ptrace seize/interrupt", strerror(errno));
		return;
	}
	if (child == 0) {
		pause();
		_exit(0);
	}
	if (ptrace(PTRACE_SEIZE, child, 0, 0))
		err = errno;
	else if (ptrace(PTRACE_INTERRUPT, child, 0, 0) || waitpid(child, &st, __WALL) != child)
		err = errno;
	kill(child, SIGKILL);
	waitpid(child, &st, 0);
	snprintf(detail, sizeof(detail), "%s (yama ptrace_scope=%s)",
		 err ? strerror(err) : "a child was seized and stopped", scope);
	line(!err, err == EPERM, "ptrace seize/interrupt", detail);
}

int cmd_check(int argc, char **argv)
{
	struct check_opts o = {0};
	struct argp argp = {options, parse, NULL, doc, NULL, NULL, NULL};

	if (argp_parse(&argp, argc, argv, 0, NULL, &o))
		return EXIT_USAGE;
	printf("%s on this host:\n", bpfpy_version);
	bpf_loader_log(o.verbose);
	check_caps();
	check_btf();
	check_sampler(o.verbose, 0);
	check_sampler(o.verbose, 1);
	check_uprobe();
	check_ptrace();
	if (!failures) {
		printf("All checks passed: record, dump, oracle and trace can run.\n");
		return EXIT_OK;
	}
	if (perm_failures == failures)
		printf("%d check(s) failed. All are privileges: grant %s, or run as root.\n",
		       failures, missing_caps[0] ? missing_caps : "the capabilities above");
	else
		printf("%d check(s) failed. Sampling cannot work on this host as it is.\n",
		       failures);
	return perm_failures == failures ? EXIT_PERMISSION : EXIT_HOST;
}
