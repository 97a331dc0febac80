// SPDX-License-Identifier: MIT
/*
 * bpfpy: an eBPF sampler of CPython stacks, and an oracle of how truthful
 * any such sampler is. This file only dispatches to user/cmd_*.c.
 */
#include <argp.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "diag.h"

const char *bpfpy_version = "bpfpy 0.1.0";

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *doc;
} commands[] = {
    {"check", cmd_check, "can this host run bpfpy? (BTF, BPF, perf events, uprobes, ptrace)"},
    {"dump", cmd_dump, "the Python stack of every thread of a process, now"},
    {"record", cmd_record, "sample stacks in the kernel (cpu or wall clock) and write a profile"},
    {"oracle", cmd_oracle, "measure how truthful each sampling mode is on known programs"},
    {"trace", cmd_trace, "Python stacks at USDT/uprobe events, with adaptive de-instrumentation"},
    {"top", cmd_top, "a live view of the functions using the CPU, refreshed each second"},
    {"convert", cmd_convert, "a raw recording into any other format, with record's writers"},
    {"diff", cmd_diff, "what changed between two recordings: differential flame graph or folded"},
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: bpfpy COMMAND [OPTION...]\n\nCommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].doc);
	fprintf(f, "\n'bpfpy COMMAND --help' describes each command and its output.\n%s\n",
		EXIT_CODES_DOC);
}

int main(int argc, char **argv)
{
	char name[64];

	/* argp_error() exits with EX_USAGE (64) by default; ours is 2. */
	argp_err_exit_status = EXIT_USAGE;
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("%s\n", bpfpy_version);
		return EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[1], commands[i].name))
			continue;
		/* argp prints "bpfpy dump: ..." in its messages this way. */
		snprintf(name, sizeof(name), "bpfpy %s", commands[i].name);
		argv[1] = name;
		return commands[i].fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "bpfpy: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
