/* SPDX-License-Identifier: MIT */
/*
 * record --opcodes: each sample's instruction mark (profile.h, "the
 * instruction mark"), made from the byte the kernel read at the leaf
 * frame's instruction (sample_hdr.leaf_op, op_flags) and named from the
 * target version's own opcode table (py_opcodes_for()). What the byte
 * means in each version: docs/opcodes.md.
 */
#ifndef OP_MARK_H
#define OP_MARK_H

#include <stdint.h>

#include "bpfpy.h"
#include "profile.h"
#include "record_targets.h"

/* What the summary's "--opcodes:" line counts. */
struct op_stats {
	uint64_t read;	      /* samples whose byte was read */
	uint64_t specialized; /* of those, a specialized form */
	uint64_t unnamed;     /* of those, a byte the version does not name */
	uint64_t not_read;    /* not started, past the end, or unreadable */
};

struct op_mark {
	struct sym_frame f;
	char name[96];
};

struct code_cache;
struct py_process;

/* The mark of the byte op read with flags (sample_hdr.leaf_op, op_flags, or
 * thread_stack's from the user-space walker) at leaf, the leaf frame, of a
 * process proc whose code cache is cache: what op_mark_make() does for
 * record, for any reader of the one walker (the oracle's modes). Strings as
 * op_mark_make()'s. */
void op_mark_of(const struct py_process *proc, struct code_cache *cache, uint8_t op, uint8_t flags,
		const struct frame_rec *leaf, struct op_mark *m, struct op_stats *st);

/* Make m the mark of the sample h of target t (frames: the kernel's, leaf
 * first; h->nframes > 0). The strings are the code cache's and m's: valid
 * until code_cache_end_sample(t->cache), and while m is. */
void op_mark_make(struct rec_target *t, const struct sample_hdr *h, const struct frame_rec *frames,
		  struct op_mark *m, struct op_stats *st);

/* The index of the first Python frame of a stack (leaf first), n when it
 * has none: where the mark goes, right leafward of it. */
uint32_t op_mark_at(const struct sym_frame *f, uint32_t n);

#endif /* OP_MARK_H */
