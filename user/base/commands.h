/* SPDX-License-Identifier: MIT */
/* The subcommands of bpfpy, one file each (user/cmd_*.c). Each takes the
 * arguments after its name (argv[0] is "bpfpy NAME") and returns an exit
 * code of enum bpfpy_exit (user/base/diag.h). */
#ifndef COMMANDS_H
#define COMMANDS_H

int cmd_check(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_oracle(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_diff(int argc, char **argv);

/* Shared by the argp parsers. */
extern const char *bpfpy_version;
/* The exit-code table, printed at the end of every --help. */
#define EXIT_CODES_DOC                                                                             \
	"Exit codes: 0 ok, 1 failure, 2 bad usage, 3 no such process (or it exited), "             \
	"4 not a CPython process, 5 unsupported Python version or build, 6 missing "               \
	"privilege (the message names the capability), 7 the host cannot do it (BTF, BPF, "        \
	"perf events), 8 oracle --check failed, 9 oracle --compare/--baseline found a row "        \
	"significantly worse."

#endif /* COMMANDS_H */
