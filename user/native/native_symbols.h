/* SPDX-License-Identifier: MIT */
/*
 * Names for native (user-space machine code) and kernel addresses, as the
 * sampler reports them with --native / --kernel.
 *
 * A user address is placed in a mapping of the process (/proc/PID/maps),
 * the mapping's file is opened as the target sees it (through its root, or
 * the kernel's own handle /proc/PID/map_files: never a host path a target
 * could plant), and its function symbols come from the one ELF reader
 * (elf_file.c): .symtab and .dynsym, and when the file is stripped the
 * separate debug file that its build id or .gnu_debuglink names
 * (/usr/lib/debug/.build-id/xx/yyyy.debug, next to the file, its .debug/
 * folder, /usr/lib/debug/DIR), looked up in the target's root too. Symbol
 * tables are cached per build id (per device and inode for a file without
 * one), so a library mapped by a thousand processes is read once.
 *
 * Kernel addresses come from /proc/kallsyms, read once (bounded) and kept.
 *
 * An address no symbol covers is named "sym+0xOFF" after the closest symbol
 * below it in the same file when there is one, else "lib+0xOFF" by its file
 * offset: a name never claims more than the tables say.
 */
#ifndef NATIVE_SYMBOLS_H
#define NATIVE_SYMBOLS_H

#include <stdint.h>
#include <sys/types.h>

/* One mapped file, as pprof's Mapping wants it: the executable mapping in
 * the first process it was seen in. Owned by the cache, lives as long. */
struct native_lib {
	const char *path;     /* as /proc/PID/maps prints it */
	const char *name;     /* its last component, e.g. "libc.so.6" */
	const char *build_id; /* lowercase hex, "" if none */
	uint64_t start, limit, offset;
	int has_symbols; /* some table (file or debug file) could be read */
};

struct native_sym {
	const char *name;	      /* the function, or the "+0xOFF" form in buf */
	const struct native_lib *lib; /* NULL for a kernel address */
	const char *module;	      /* kernel: module name, or NULL for vmlinux */
	uint64_t sym_vaddr;	      /* the function's address in its file (or kernel) */
	uint64_t addr;		      /* the address looked up (ip, or ip-1 for returns) */
	int exact;		      /* a symbol covers addr (else the name is a +0xOFF form) */
	char buf[160];
};

struct native_syms;

struct native_syms *native_syms_new(void);
void native_syms_free(struct native_syms *ns);

/* Name user address ip of pid. ret: ip is a return address (every frame
 * but the interrupted one), looked up at ip - 1 so a call that ends its
 * function is not named after the next one. Returns 0 (out filled, always
 * with some name), or -1 when ip is in no file mapping of pid (out->name
 * then is "0xADDR" in out->buf, out->lib NULL). */
int native_syms_user(struct native_syms *ns, pid_t pid, uint64_t ip, int ret,
		     struct native_sym *out);

/* Name kernel address ip from /proc/kallsyms (read at the first call).
 * 0, or -1 (out->name "0xADDR") when it cannot be named: kallsyms hidden
 * (kptr_restrict) or unreadable, or ip below every symbol. */
int native_syms_kernel(struct native_syms *ns, uint64_t ip, int ret, struct native_sym *out);

/* Read pid's maps and the symbols of every executable file it maps now,
 * while it lives: a record drained after the process exited is then still
 * named (trace: probes that fire just before exit). The number of files,
 * or -1 (the process is gone or its maps unreadable). */
int native_syms_prime(struct native_syms *ns, pid_t pid);

/* pid exited (or exec'd): drop its maps; its files stay cached. */
void native_syms_forget(struct native_syms *ns, pid_t pid);

/* Counters for the summary: files whose symbols were read, of those from a
 * debug file, kernel symbols held. */
struct native_syms_stats {
	uint64_t files, debug_files, no_symbols, kernel_syms;
	uint64_t lookups, unmapped;
};
void native_syms_stats(const struct native_syms *ns, struct native_syms_stats *st);

#endif /* NATIVE_SYMBOLS_H */
