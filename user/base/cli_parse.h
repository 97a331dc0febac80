/* SPDX-License-Identifier: MIT */
/* Parsers for the values users type, shared by every command's argp. */
#ifndef CLI_PARSE_H
#define CLI_PARSE_H

#include <sys/types.h>

struct argp_state;

/* "997", "10k", "10khz", "1.5kHz", "100hz", "2mhz" -> Hz. -1 if malformed. */
double parse_rate_hz(const char *s);
/* "1234" or "1,2,3" appended to pids (up to max). Returns the new count, -1
 * if malformed. */
int parse_pid_list(const char *s, pid_t *pids, int n, int max);
/* Non-negative seconds, e.g. "2", "0.5". -1 if malformed. */
double parse_seconds(const char *s);

/* A whole decimal number in lo..hi, or argp_error "WHAT must be lo..hi"
 * (which exits with the usage code). */
long cli_long(struct argp_state *state, const char *arg, long lo, long hi, const char *what);

/*
 * Which processes a sampling command (record, top) watches: -p PID[,PID...]
 * (repeatable), -a (every CPython process, also later ones) and
 * --subprocesses (the targets' descendants too). One argp child parses them
 * for every such command: the parent points state->child_inputs[0] at its
 * struct target_sel in ARGP_KEY_INIT and checks "-p, -a or --" itself.
 */
#define TARGET_SEL_MAX_PIDS 256
struct target_sel {
	pid_t pids[TARGET_SEL_MAX_PIDS];
	int npids;
	int all, children;
};
extern const struct argp target_sel_argp;

/* --native and --kernel mean the same for every command that has them
 * (record, trace): one wording of their help. */
#define CLI_NATIVE_HELP "Native (C) frames too, spliced with the Python ones"
#define CLI_KERNEL_HELP "Kernel frames too, on top of the stack"

#endif /* CLI_PARSE_H */
