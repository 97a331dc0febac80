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
	uint64_t reads, bytes; /* what was asked for, for cost accounting (a
				* mem_read_each counts a read per syscall) */
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

/*
 * Read len bytes at each of addrs[0..n) into dst + i * len, as n mem_reads
 * would, but a live process's in as few process_vm_readv calls as its
 * failures allow (one when all succeed; a failed one ends a call, and the
 * next starts past it). ok[i] is set to 1 for each complete read, 0 for
 * the others. Returns how many completed. For the scans that read one
 * small object per dict entry (pyobj.c's key lookups), where a syscall a
 * key was most of their cost.
 */
size_t mem_read_each(struct mem_reader *r, void *dst, size_t len, const uint64_t *addrs, size_t n,
		     uint8_t *ok);

#endif /* MEM_READER_H */
