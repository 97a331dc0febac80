// SPDX-License-Identifier: MIT
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "mem_reader.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

/* iovecs per process_vm_readv (IOV_MAX is 1024 on Linux). */
#define EACH_BATCH 256

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

size_t mem_read_each(struct mem_reader *r, void *dst, size_t len, const uint64_t *addrs, size_t n,
		     uint8_t *ok)
{
	struct iovec local[EACH_BATCH], remote[EACH_BATCH];
	size_t done = 0, i = 0;

	memset(ok, 0, n);
	if (!len)
		return 0;
	if (r->read != read_pid) { /* an image: memcpy each */
		for (i = 0; i < n; i++)
			done += ok[i] = !mem_read(r, (char *)dst + i * len, len, addrs[i]);
		return done;
	}
	while (i < n) {
		size_t m = n - i < EACH_BATCH ? n - i : EACH_BATCH, whole;
		ssize_t got;

		for (size_t k = 0; k < m; k++) {
			local[k] = (struct iovec){(char *)dst + (i + k) * len, len};
			remote[k] = (struct iovec){(void *)(uintptr_t)addrs[i + k], len};
		}
		r->reads++;
		r->bytes += m * len;
		got = process_vm_readv(r->pid, local, m, remote, m, 0);
		if (got < 0) {
			r->last_errno = errno;
			if (errno != EFAULT) /* ESRCH, EPERM: the rest would fail too */
				return done;
			got = 0;
		}
		/* The reads before the first that failed are whole; that one
		 * is not (even if part of it came), and the next call starts
		 * past it. */
		whole = (size_t)got / len;
		for (size_t k = 0; k < whole; k++)
			ok[i + k] = 1;
		done += whole;
		if (whole < m)
			r->last_errno = EFAULT;
		i += whole < m ? whole + 1 : m;
	}
	return done;
}
