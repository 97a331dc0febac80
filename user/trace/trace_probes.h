/* SPDX-License-Identifier: MIT */
/*
 * The probes of bpfpy trace: from what the user typed to a file, an offset
 * or a USDT note in the target, checked before anything is attached so that
 * a typo gives a message naming what exists instead of a libbpf errno.
 */
#ifndef TRACE_PROBES_H
#define TRACE_PROBES_H

#include <stdio.h>

#include "py_process.h"
#include "trace_model.h"

struct bpf_program;
struct diag;

/* A probe as typed: --usdt PROVIDER:NAME, --uprobe/--uretprobe
 * BINARY:SYMBOL[+OFFSET]. kind is enum trace_kind. */
struct probe_spec {
	int kind;
	const char *text;
};

/*
 * Resolve every spec against the target into td->probes (ids in order),
 * pairing each --uretprobe with the --uprobe of the same BINARY:SYMBOL.
 * calls adds python:function__entry/return, refusing interpreters where
 * they are missing or incomplete (EXIT_UNSUPPORTED). Errors: EXIT_USAGE for
 * a probe, binary or symbol that is not there, with what is there.
 */
int trace_probes_resolve(struct trace_data *td, struct py_process *p,
			 const struct probe_spec *specs, int nspecs, int calls, struct diag *d);

/* Print the target interpreter's USDT probes and what its version or build
 * lacks. 0, or -1 with d set. */
int trace_list(FILE *f, struct py_process *p, struct diag *d);

/* Attach (or re-attach) every probe; on failure nothing stays attached. */
int trace_probes_attach(struct trace_data *td, struct bpf_program *usdt, struct bpf_program *up,
			struct bpf_program *uret, struct diag *d);
void trace_probes_detach(struct trace_data *td);
/* Detach probe i alone (its uprobe removed, its USDT semaphore released). */
void trace_probe_detach_one(struct trace_data *td, int i);

/* The value of a USDT semaphore in the target, -1 if unreadable. */
int trace_semaphore_value(struct py_process *p, uint64_t addr);

/* Read a NUL-terminated string from the target into buf (at most len-1
 * bytes). Returns its length, or -1. */
int trace_read_cstr(struct py_process *p, uint64_t addr, char *buf, size_t len);

#endif /* TRACE_PROBES_H */
