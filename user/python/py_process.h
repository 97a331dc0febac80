/* SPDX-License-Identifier: MIT */
/*
 * A CPython process, ready to be read: its interpreter located, its version
 * known, and the struct proc_config that both the BPF programs and the
 * user-space walker consume filled in. Every command starts here.
 */
#ifndef PY_PROCESS_H
#define PY_PROCESS_H

#include <sys/types.h>

#include "bpfpy.h"
#include "diag.h"
#include "mem_reader.h"
#include "py_binary.h"
#include "py_offsets.h"

struct py_process {
	pid_t pid;
	char comm[32];
	char version[32];   /* "3.12.1", or "3.10" when only the minor is known */
	const char *binary; /* the interpreter's file as the target names it */
	struct py_binary bin;
	struct py_extra extra;
	struct proc_config cfg;
	struct mem_reader mem;
	int not_initialised; /* failed only because no interpreter exists yet */
	/* /proc/PID/exe at open: tells an execve since from a plain failure. */
	unsigned long long exe_dev, exe_ino;
};

/* Locate, identify and configure. max_depth 0 means the default. Errors:
 * those of py_binary_find() and py_offsets_*(), plus EXIT_NOT_PYTHON while
 * the interpreter is not initialised yet (no interpreter state) or when the
 * process exec'd another program while it was being opened. */
int py_process_open(struct py_process *p, pid_t pid, unsigned max_depth, struct diag *d);

/* After a failed read: did the process exec another program since it was
 * opened? Then, 1 with d set (exit 4, naming what it runs now); else 0.
 * (A re-exec of the same file is not told apart: same file, same layout.) */
int py_process_execd(const struct py_process *p, struct diag *d);

#endif /* PY_PROCESS_H */
