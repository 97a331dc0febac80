/* SPDX-License-Identifier: MIT */
/*
 * Unwind tables for the in-kernel native unwinder (bpf/native_unwind.bpf.h):
 * from an ELF file's CFI (.eh_frame, or .debug_frame when it has no
 * .eh_frame), read with libdw, one sorted array of struct unwind_row
 * (bpfpy.h) covering every executable PT_LOAD: per address range, how to
 * compute the CFA (rsp or rbp plus an offset, the .plt pattern), where the
 * caller's rbp is, or that the range has no CFI (frame-pointer fallback),
 * ends the stack (return address undefined) or uses a rule the kernel does
 * not follow (a DWARF expression).
 *
 * The file may be hostile: CFI sections over UNW_MAX_CFI_BYTES are not
 * read, a table stops at UNW_MAX_ROWS rows, UNW_MAX_PROBES libdw lookups
 * and UNW_MAX_BUILD_MS of time; a table cut so is flagged (truncated), and
 * addresses past the cut have no CFI (frame pointers) rather than a guess.
 */
#ifndef UNWIND_TABLES_H
#define UNWIND_TABLES_H

#include <stddef.h>
#include <stdint.h>

#include "bpfpy.h"

struct diag;
struct elfsym;

#define UNW_MAX_CFI_BYTES (64u << 20)
#define UNW_MAX_ROWS	  (1u << 21)
#define UNW_MAX_PROBES	  (1u << 23)
#define UNW_MAX_BUILD_MS  5000

struct unwind_table {
	struct unwind_row *rows; /* sorted by pc, no two adjacent alike */
	uint32_t n, cap;
	/* what the build found, for messages and tests */
	uint32_t nocfi_rows, plt_rows, unsupported_rows, end_rows;
	uint32_t probes; /* libdw lookups made */
	int truncated;	 /* a cap was hit */
	int from_debug;	 /* rows come from .debug_frame */
	uint64_t build_ns;
};

/* Build the table of an opened ELF file. 0 (t filled, possibly with no
 * CFI at all: then every row is UNW_CFA_NONE), or -1 with d set. */
int unwind_table_build(struct elfsym *e, const char *name, struct unwind_table *t, struct diag *d);
void unwind_table_free(struct unwind_table *t);

/* The row that covers file address vaddr, or NULL (before the first row,
 * or past 32 bits). The same search as the kernel's. */
const struct unwind_row *unwind_table_find(const struct unwind_table *t, uint64_t vaddr);

/* The CFA offset in bytes (unscaled) of an rsp/rbp row. */
uint32_t unwind_row_cfa_off(const struct unwind_row *r);

/* "rsp+8 rbp=cfa-16" etc. for messages and tests. */
void unwind_row_str(const struct unwind_row *r, char *buf, size_t len);

#endif /* UNWIND_TABLES_H */
