/* SPDX-License-Identifier: MIT */
/*
 * The ELF facts bpfpy trace needs beyond elf_symbols.h: the USDT probes a
 * file declares (with their semaphores, so that a test or --list can read
 * them in the target), and where a symbol lies in the file, because the
 * kernel places a uprobe by file offset, not by address.
 */
#ifndef TRACE_ELF_H
#define TRACE_ELF_H

#include <stddef.h>
#include <stdint.h>

struct diag;

struct usdt_probe {
	char provider[64];
	char name[64];
	char args[128];	    /* first site's argument spec, e.g. "8@%rbx 8@%r12 -4@%eax" */
	uint64_t semaphore; /* file virtual address, 0 if none */
	int nsites;	    /* call sites (one probe can be inlined many times) */
};

/* The distinct provider:name probes of path's .note.stapsdt, in file
 * order, into a malloc'd array (*out, free() it). Returns the count (0 for
 * a file without notes) or -1 with d set when the file is not readable ELF. */
int usdt_list(const char *path, struct usdt_probe **out, struct diag *d);

/* File offset of symbol sym (+ add) in path, through the PT_LOAD that
 * holds it. 0, or -1 with d set (EXIT_USAGE when the symbol is not there,
 * naming the file). */
int elf_symbol_file_offset(const char *path, const char *sym, uint64_t add, uint64_t *off,
			   struct diag *d);

#endif /* TRACE_ELF_H */
