/* SPDX-License-Identifier: MIT */
/*
 * /proc/PID/maps as an array. The paths are those the kernel prints for the
 * reader: relative to *our* root for a chrooted target, relative to the
 * target's mount namespace for a container (see proc_root.h for opening
 * them).
 */
#ifndef PROC_MAPS_H
#define PROC_MAPS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct diag;

struct proc_map {
	uint64_t start, end; /* [start, end) in the target */
	uint64_t offset;     /* file offset of start */
	uint64_t inode;	     /* 0 for anonymous memory */
	uint32_t dev_major, dev_minor;
	char perms[5]; /* "r-xp" */
	int deleted;   /* the file was unlinked; " (deleted)" cut from path */
	char *path;    /* "" when anonymous; "[heap]" etc. for specials */
};

struct proc_maps {
	struct proc_map *v;
	size_t n, cap;
};

/* Read /proc/PID/maps. 0 on success (a kernel thread yields n == 0), -1 with
 * d set: EXIT_NO_PROCESS "pid N: no such process", EXIT_PERMISSION naming
 * CAP_SYS_PTRACE, EXIT_FAIL otherwise. */
int proc_maps_read(pid_t pid, struct proc_maps *m, struct diag *d);

/* Parse maps text from any stream (used on fmemopen() buffers by tests). */
int proc_maps_parse(FILE *f, struct proc_maps *m, struct diag *d);

/* Parse one line (without or with its newline). 0, or -1 if malformed. On
 * success out->path points into line: the caller copies it if it must live. */
int proc_maps_parse_line(char *line, struct proc_map *out);

void proc_maps_free(struct proc_maps *m);

/* Whether a mapping is backed by a regular file (not anonymous, not [heap]). */
int proc_map_is_file(const struct proc_map *p);

/* Indexes of the mappings of one file (by path), lowest address first, at
 * most max of them stored in idx. Returns how many there are in total. */
size_t proc_maps_of_file(const struct proc_maps *m, const char *path, size_t *idx, size_t max);

/* Lowest start address of a file's mappings: 0, or -1 if it is not mapped. */
int proc_maps_file_base(const struct proc_maps *m, const char *path, uint64_t *base);

#endif /* PROC_MAPS_H */
