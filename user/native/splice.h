/* SPDX-License-Identifier: MIT */
/*
 * One stack per sample, in true order, from what the kernel recorded with
 * --native / --kernel: the Python frames (the interpreter's own chain), the
 * native return addresses (unwound from the interrupted registers) and the
 * kernel's.
 *
 * The native stack holds one frame of the evaluation loop
 * (py_native_is_eval) for each C-level call of it, and each such call owns
 * a run of Python frames that the walker delimits with FRAME_INSTR_ENTRY
 * (bpf/bpfpy.h: set on the run's frame nearest the root). Walking a
 * complete native stack root to leaf, each eval frame is replaced by the
 * next run from the root; everything else stays a native frame. The kernel
 * frames go on top (the leaf end).
 *
 * What does not fit is counted by cause and never placed by guess: an
 * eval frame with no run left stays the native frame it is; Python frames
 * that no eval frame claimed go behind a mark frame saying so, at the leaf
 * end. When the native unwind stopped early (its root part is missing),
 * the runs are matched from the leaf instead and what is left of the
 * Python frames goes at the root behind [native unwind lost], where it
 * certainly is.
 */
#ifndef SPLICE_H
#define SPLICE_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "bpfpy.h"
#include "profile.h"

struct native_syms;

/* Native and kernel frames kept per sample at most (the kernel records
 * fewer; the bound is for a record that claims more). */
#define SPLICE_MAX_NATIVE 256
/* Frames of a spliced stack at most: Python, native and kernel, two marks. */
#define SPLICE_MAX_OUT (BPFPY_MAX_DEPTH + 2 * SPLICE_MAX_NATIVE + 2)

enum splice_cause {
	SPLICE_EVAL_EMPTY = 0, /* an eval-loop frame with no Python frame left for it */
	SPLICE_NO_MARKER,      /* Python frames ran out before the run's entry marker */
	SPLICE_PY_UNCLAIMED,   /* Python frames left over with the native stack complete */
	SPLICE_NATIVE_LOST,    /* Python frames beyond where the native unwind stopped */
	SPLICE_UNMAPPED,       /* a native address in no file mapping of the process */
	SPLICE_OVER_LIMIT,     /* native or kernel frames past SPLICE_MAX_NATIVE */
	SPLICE__COUNT
};

const char *splice_cause_name(int cause);

/* Lost native unwinding (the record's NATIVE_TRUNCATED / NATIVE_LOST). */
#define SPLICE_NATIVE_INCOMPLETE 1u

struct splice_input {
	const struct sym_frame *py; /* named Python frames, leaf first */
	const uint32_t *entry;	    /* per Python frame: nonzero on an entry marker */
	uint32_t npy;
	const struct sym_frame *native; /* leaf first */
	const uint8_t *is_eval;		/* per native frame */
	uint32_t nnative;
	const struct sym_frame *kernel; /* leaf first */
	uint32_t nkernel;
	unsigned flags; /* SPLICE_NATIVE_INCOMPLETE */
};

/* Names of the marks splice_stack() puts before unclaimed Python frames. */
#define SPLICE_MARK_LOST      "[native unwind lost]"
#define SPLICE_MARK_UNCLAIMED "[python frames not placed]"

/* The spliced stack, leaf first, into out (at most cap frames). Returns the
 * count; causes[] (SPLICE__COUNT counters) is added to. */
uint32_t splice_stack(const struct splice_input *in, struct sym_frame *out, uint32_t cap,
		      uint64_t *causes);

/*
 * All of it for one record: name the native (user) and kernel addresses of
 * pid through ns, mark the eval frames for version_hex, splice with the
 * Python frames py (named) / rec (as recorded, for the entry markers).
 * incomplete: the record says native unwinding stopped early. The result
 * points into sc (valid until the next call with it).
 */
struct splice_scratch;
struct splice_scratch *splice_scratch_new(void);
void splice_scratch_free(struct splice_scratch *sc);

struct splice_sample {
	pid_t pid;
	uint32_t version_hex;
	const struct sym_frame *py;
	const struct frame_rec *rec;
	uint32_t npy;
	const __u64 *uips; /* leaf first: [0] the interrupted IP */
	uint32_t nuser;
	const __u64 *kips; /* leaf first */
	uint32_t nkernel;
	int incomplete;
};

/* 0 and *out / *nout set, or -1 (ENOMEM). */
int splice_sample(struct native_syms *ns, struct splice_scratch *sc, const struct splice_sample *s,
		  const struct sym_frame **out, uint32_t *nout, uint64_t *causes);

/* The same from a ring-buffer record (bpfpy.h: its nnative user and
 * nkernel kernel addresses follow the nframes frame_rec rec; the caller
 * checked the record's size), py being rec named. */
int splice_record(struct native_syms *ns, struct splice_scratch *sc, const struct sample_hdr *h,
		  const struct frame_rec *rec, const struct sym_frame *py, uint32_t version_hex,
		  const struct sym_frame **out, uint32_t *nout, uint64_t *causes);

/* The summary's lines about it (bpfpy record/dump/trace): files named,
 * debug files used, kernel symbols, and each cause with a count. */
void splice_summary(FILE *f, struct native_syms *ns, const uint64_t *causes);

#endif /* SPLICE_H */
