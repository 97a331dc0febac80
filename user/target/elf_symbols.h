/* SPDX-License-Identifier: MIT */
/*
 * The few facts bpfpy needs from an ELF file (the python executable or
 * libpython): symbol values, section addresses, the load base, initialized
 * bytes at a virtual address, build-id, USDT notes. Built on libelf. The
 * file may come from a container we do not trust: every size read from it
 * is checked against the file and capped.
 */
#ifndef ELF_SYMBOLS_H
#define ELF_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct diag;
struct elfsym;

/* Open an ELF file over fd, which the handle then owns (it is closed by
 * elfsym_close, or here on failure). name is only for messages. NULL with d
 * set (EXIT_FAIL) when fd is not a readable ELF file. */
struct elfsym *elfsym_open(int fd, const char *name, struct diag *d);
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

/* 1 if the file has a .note.stapsdt section (USDT probes), else 0. */
int elfsym_has_usdt(struct elfsym *e);

/* The GNU build-id as lowercase hex into hex[len]. 0, or -1 if there is none
 * or it does not fit. */
int elfsym_build_id(struct elfsym *e, char *hex, size_t len);

#endif /* ELF_SYMBOLS_H */
