/* SPDX-License-Identifier: MIT */
/*
 * Which file in a live process holds the interpreter (the python executable
 * or libpython3.X.so), and where its globals are in the target's memory.
 */
#ifndef PY_BINARY_H
#define PY_BINARY_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "py_offsets.h"

struct diag;

struct py_binary {
	char path[PATH_MAX];	    /* how we opened it: /proc/PID/root/..., or a host path */
	uint64_t runtime_addr;	    /* &_PyRuntime in the target */
	uint64_t py_version_addr;   /* &Py_Version (3.11+), else 0 */
	uint64_t code_type_addr;    /* &PyCode_Type */
	uint64_t none_addr;	    /* &_Py_NoneStruct */
	uint64_t frame_type_addr;   /* &PyFrame_Type */
	uint64_t unicode_type_addr; /* &PyUnicode_Type */
	uint64_t load_bias;	    /* target address - file vaddr; 0 for ET_EXEC */
	uint32_t version_hex;	    /* PY_VERSION_HEX, or 0x030X0000 if approximate */
	int version_approximate;    /* only major.minor known (from name or symbols) */
	int is_shared_lib;	    /* libpython, not the executable */
	int has_usdt;		    /* the file has .note.stapsdt */
	char ns_note[128];	    /* "" or "mnt ns N (chroot DIR)" */
	char build_id[65];	    /* hex GNU build-id, "" if none */
	/* File offsets (where uprobes go) of py_thread_hook_names, 0 for a
	 * name the file does not define as code: py_binary_hook_offset(). */
	uint64_t hook_off[PY_THREAD_HOOK_NAMES];
};

/* The file offset of function name (one of py_thread_hook_names) in the
 * interpreter's file, 0 if it has none. */
uint64_t py_binary_hook_offset(const struct py_binary *b, const char *name);

/* Find the interpreter of process pid. 0 on success; -1 with d set:
 *   EXIT_NO_PROCESS   no such pid (or it exited)
 *   EXIT_NOT_PYTHON   no mapped python/libpython defines _PyRuntime,
 *                     or a kernel thread
 *   EXIT_UNSUPPORTED  Python 2, or 3.7 and older
 *   EXIT_PERMISSION   cannot read its maps or files (names CAP_SYS_PTRACE) */
int py_binary_find(pid_t pid, struct py_binary *b, struct diag *d);

/* py_binary_find reads each interpreter file once per bpfpy process: what
 * the file says about itself is kept, keyed by the opened file's device,
 * inode, size, mtime and ctime (64 files, least recently used out).
 * The counts are for the bench and the tests. */
struct py_binary_cache_stats {
	uint64_t hits, misses; /* files looked up / read */
};
void py_binary_cache_get_stats(struct py_binary_cache_stats *st);

/* Major and minor from a file name such as "python3.12", "libpython3.7m.so.1.0"
 * or "python2.7": 0, or -1 if the name says nothing. */
int py_version_from_name(const char *path, int *major, int *minor);

#endif /* PY_BINARY_H */
