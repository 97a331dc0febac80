/* SPDX-License-Identifier: MIT */
/*
 * The read-memory primitive behind the user-space build of the frame walker
 * (bpf/frame_walker.h): a live process through process_vm_readv, or a memory
 * image (a list of regions) in unit tests and fuzzers.
 */
#ifndef MEM_READER_H
#define MEM_READER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct mem_region {
	uint64_t addr;
	const void *data;
	size_t len;
};

struct mem_reader {
	int (*read)(struct mem_reader *r, void *dst, size_t len, uint64_t addr);
	pid_t pid;			  /* live process, or 0 */
	const struct mem_region *regions; /* image, or NULL */
	size_t nregions;
	uint64_t reads, bytes; /* what was asked for, for cost accounting */
	int last_errno;	       /* errno of the last failed read */
};

void mem_reader_init_pid(struct mem_reader *r, pid_t pid);
void mem_reader_init_image(struct mem_reader *r, const struct mem_region *regions, size_t n);

/* 0 on success, -1 with r->last_errno set (EFAULT for unmapped memory,
 * ESRCH when the process is gone, EPERM without CAP_SYS_PTRACE). A short
 * read is a failure: the walker never works on half a struct. */
static inline int mem_read(struct mem_reader *r, void *dst, size_t len, uint64_t addr)
{
	r->reads++;
	r->bytes += len;
	return r->read(r, dst, len, addr);
}

#endif /* MEM_READER_H */
