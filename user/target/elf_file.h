/* SPDX-License-Identifier: MIT */
/*
 * The one ELF reader: every fact bpfpy needs from an ELF file (the python
 * executable, libpython, any file trace probes) comes from here, and every
 * libelf call in the tree is in elf.c. A file is opened once and answers
 * symbol values, section addresses, the load base, initialized bytes at a
 * virtual address, the build-id, USDT notes and file offsets.
 *
 * The file may come from a user or a container we do not trust: every size
 * read from it (section, note, symbol and string table) is checked against
 * the file's size and a named cap (ELF_MAX_* in elf_file.c, listed in
 * SECURITY.md) BEFORE anything is read, and only that bounded range is read.
 */
#ifndef ELF_FILE_H
#define ELF_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct diag;
struct elfsym;

/* Open an ELF file over fd, which the handle then owns (it is closed by
 * elfsym_close, or here on failure). name is only for messages. NULL with d
 * set (EXIT_FAIL) when fd is not a readable ELF file. */
struct elfsym *elfsym_open(int fd, const char *name, struct diag *d);
/* A file a target names, by any of the paths bpfpy knows its files by
 * (see proc_target_file_open): opened safely, never by a host path. */
struct elfsym *elfsym_open_target(pid_t pid, const char *path, struct diag *d);
/* A file the user named on our own command line or a test names (not a
 * target's): opened O_NONBLOCK and checked regular all the same. */
struct elfsym *elfsym_open_path(const char *path, struct diag *d);
void elfsym_close(struct elfsym *e);

/* e_type: ET_EXEC (fixed addresses) or ET_DYN (PIE, shared library). */
int elfsym_type(const struct elfsym *e);

/* A defined symbol's value (virtual address) and size: .dynsym first, then
 * .symtab. 0 if found, -1 if not. size may be NULL. */
int elfsym_lookup(struct elfsym *e, const char *name, uint64_t *value, uint64_t *size);

/* A section's address and size by name (e.g. ".PyRuntime"). 0 or -1. */
int elfsym_section(struct elfsym *e, const char *name, uint64_t *addr, uint64_t *size);

/* The lowest PT_LOAD's p_vaddr rounded down to the page, which is where the
 * kernel puts the file's lowest mapping: target address = that mapping's
 * start + (vaddr - base). 0, or -1 if the file has no PT_LOAD. */
int elfsym_load_base(struct elfsym *e, uint64_t *base);

/* Copy len bytes found at vaddr in the file's initialized (p_filesz) part of
 * a PT_LOAD segment. 0, or -1 if they are not all there (e.g. in .bss).
 * len is capped at ELFSYM_MAX_READ. */
#define ELFSYM_MAX_READ (1u << 20)
int elfsym_read(struct elfsym *e, uint64_t vaddr, void *buf, size_t len);

/* File offset of vaddr through the executable PT_LOAD that holds it (where
 * the kernel places a uprobe). 0, or -1 if no executable segment has it. */
int elfsym_file_offset(struct elfsym *e, uint64_t vaddr, uint64_t *off);

/* The idx-th PT_LOAD (counting PT_LOADs only) into seg. 0, or -1 past
 * the last. Native unwinding maps addresses through them. */
struct elfsym_seg {
	uint64_t vaddr, offset, filesz, memsz;
	int exec; /* PF_X */
};
int elfsym_segment(struct elfsym *e, size_t idx, struct elfsym_seg *seg);

/* The libelf handle, for libdw's CFI reader (user/native/unwind_tables.c):
 * valid until elfsym_close. Sizes of the sections it reads are checked
 * there first with elfsym_section. */
struct Elf *elfsym_elf(struct elfsym *e);

/* 1 if the file has a .note.stapsdt section (USDT probes), else 0. */
int elfsym_has_usdt(struct elfsym *e);

/* The GNU build-id as lowercase hex into hex[len]. 0, or -1 if there is none
 * or it does not fit. */
int elfsym_build_id(struct elfsym *e, char *hex, size_t len);

/* Each defined function symbol (STT_FUNC, STT_GNU_IFUNC, nonzero value) of
 * .symtab, then of .dynsym: fn(ctx, name, value, size, dynamic: 1 for
 * .dynsym), names as the tables hold them (valid during the call only). A nonzero return from fn
 * stops the walk and is returned; else 0, or -1 if neither table could be read (absent, or over
 * ELF_MAX_SYMTAB / ELF_MAX_STRTAB). */
typedef int (*elfsym_func_fn)(void *ctx, const char *name, uint64_t value, uint64_t size,
			      int dynamic);
int elfsym_each_func(struct elfsym *e, elfsym_func_fn fn, void *ctx);

/* 1 if the file has a .symtab (is not stripped), else 0. */
int elfsym_has_symtab(const struct elfsym *e);

/* .gnu_debuglink: the separate debug file's name into name[len] (a plain
 * file name: one holding '/' or a control byte is refused) and its CRC32.
 * 0, or -1 if there is none or it is malformed. */
int elfsym_debuglink(struct elfsym *e, char *name, size_t len, uint32_t *crc);

struct usdt_probe {
	char provider[64];
	char name[64];
	char args[128];	    /* first site's argument spec, e.g. "8@%rbx 8@%r12 -4@%eax" */
	uint64_t semaphore; /* file virtual address, 0 if none */
	int nsites;	    /* call sites (one probe can be inlined many times) */
};

/* The distinct provider:name probes of .note.stapsdt, in file order, into a
 * malloc'd array (*out, free() it). Returns the count (0 for a file without
 * notes) or -1 with d set. */
int elfsym_usdt(struct elfsym *e, struct usdt_probe **out, struct diag *d);

/* The same for a file of target pid (bpfpy trace). */
int usdt_list(pid_t pid, const char *path, struct usdt_probe **out, struct diag *d);

/* File offset of symbol sym (+ add) in a file of target pid, through the
 * PT_LOAD that holds it. 0, or -1 with d set (EXIT_USAGE when the symbol is
 * not there, naming the file). */
int elf_symbol_file_offset(pid_t pid, const char *path, const char *sym, uint64_t add,
			   uint64_t *off, struct diag *d);

#endif /* ELF_FILE_H */
