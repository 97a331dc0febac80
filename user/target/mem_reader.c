// SPDX-License-Identifier: MIT
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "mem_reader.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

static int read_pid(struct mem_reader *r, void *dst, size_t len, uint64_t addr)
{
	struct iovec local = {.iov_base = dst, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
	ssize_t n;

	if (!len)
		return 0;
	n = process_vm_readv(r->pid, &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len)
		return 0;
	r->last_errno = n < 0 ? errno : EFAULT;
	return -1;
}

static int read_image(struct mem_reader *r, void *dst, size_t len, uint64_t addr)
{
	for (size_t i = 0; i < r->nregions; i++) {
		const struct mem_region *g = &r->regions[i];

		if (addr >= g->addr && addr - g->addr <= g->len &&
		    len <= g->len - (addr - g->addr)) {
			memcpy(dst, (const char *)g->data + (addr - g->addr), len);
			return 0;
		}
	}
	r->last_errno = EFAULT;
	return -1;
}

void mem_reader_init_pid(struct mem_reader *r, pid_t pid)
{
	memset(r, 0, sizeof(*r));
	r->read = read_pid;
	r->pid = pid;
}

void mem_reader_init_image(struct mem_reader *r, const struct mem_region *regions, size_t n)
{
	memset(r, 0, sizeof(*r));
	r->read = read_image;
	r->regions = regions;
	r->nregions = n;
}
