/* SPDX-License-Identifier: MIT */
/*
 * Errors with context. Every failure a user can see carries an exit code
 * (documented in the README and in --help) and a message that names the
 * object and the address or file involved, e.g.
 *   "pid 1234: cannot read tstate at 0x7f..: Bad address"
 */
#ifndef DIAG_H
#define DIAG_H

#include <stddef.h>

/* Exit codes of every bpfpy command. Keep README.md in step. */
enum bpfpy_exit {
	EXIT_OK = 0,
	EXIT_FAIL = 1,	       /* anything not below */
	EXIT_USAGE = 2,	       /* bad flags or values */
	EXIT_NO_PROCESS = 3,   /* no such PID, or it exited */
	EXIT_NOT_PYTHON = 4,   /* not a CPython process */
	EXIT_UNSUPPORTED = 5,  /* CPython, but a version or build we refuse */
	EXIT_PERMISSION = 6,   /* lacking a capability: the message names it */
	EXIT_HOST = 7,	       /* the host cannot do it (BTF, BPF, perf events) */
	EXIT_CHECK_FAILED = 8, /* oracle --check: a mode broke a threshold */
	EXIT_REGRESSION = 9,   /* oracle --compare/--baseline: a row is significantly worse */
};

struct diag {
	int code;      /* enum bpfpy_exit */
	int sys_errno; /* errno of the failing call, 0 if none */
	char msg[512];
};

/* Set d (if not NULL) and return -1, so that "return diag_set(...)" reads well. */
int diag_set(struct diag *d, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Like diag_set, with the message of errno appended and its code chosen from
 * errno: ESRCH -> EXIT_NO_PROCESS, EPERM/EACCES -> EXIT_PERMISSION (the
 * message then names the missing capability, or the cause when every one is
 * held: priv_explain), anything else -> EXIT_FAIL. */
int diag_errno(struct diag *d, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Prefix an existing message: "pid 12: " + old. */
void diag_prefix(struct diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print "bpfpy: <msg>" on stderr and return the exit code. */
int diag_report(const struct diag *d);

#endif /* DIAG_H */
