// SPDX-License-Identifier: MIT
#include "native_tables.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "bpf_loader.h"
#include "diag.h"
#include "elf_file.h"
#include "monotime.h"
#include "native_walk.h"
#include "proc_maps.h"
#include "proc_root.h"
#include "unwind_tables.h"

#define MAX_SEGS 8
/* Rows written to the BPF array per batch call. */
#define UPLOAD_BATCH 65536

/* A file's table, loaded at rows [first, first + count) of native_rows.
 * count 0: no table could be built (the file is then followed by frame
 * pointers); kept so that it is not retried on every refresh. */
struct nfile {
	uint64_t dev, ino;
	uint32_t first, count;
	struct elfsym_seg segs[MAX_SEGS]; /* its PT_LOADs, for the load bias */
	int nsegs;
};

struct nproc {
	pid_t pid;
	/* Last re-scan a record asked for, for the rate limit; 0 until the
	 * first: a library loaded since the attach (ctypes' libffi, often
	 * right after `trace -- CMD` attached) is then re-scanned at its first
	 * record instead of up to NATIVE_REFRESH_MS later. */
	uint64_t last_ns;
	struct native_proc *np; /* local tables: its mappings (else in native_procs) */
};

struct native_tables {
	int rows_fd, procs_fd, counters_fd;
	uint32_t rows_max, rows_used;
	struct nfile *files;
	size_t nfiles, fcap;
	struct nproc *procs;
	size_t nprocs, pcap;
	FILE *raw;
	struct native_tables_stats st;
	/* Local tables (rows_fd < 0, native_tables_new_local): the rows that
	 * would be in native_rows. */
	struct unwind_row *lrows;
	size_t lcap;
};

struct native_tables *native_tables_new(int rows_fd, uint32_t rows_max, int procs_fd,
					int counters_fd, struct diag *d)
{
	struct native_tables *nt = calloc(1, sizeof(*nt));
	const char *raw = getenv(NATIVE_RAW_ENV);

	if (!nt) {
		diag_errno(d, ENOMEM, "native unwind tables");
		return NULL;
	}
	nt->rows_fd = rows_fd;
	nt->procs_fd = procs_fd;
	nt->counters_fd = counters_fd;
	nt->rows_max = rows_max;
	nt->st.rows_max = rows_max;
	if (raw && *raw && rows_fd >= 0) {
		/* A debug output: a new file only, never one that exists. */
		int fd = open(raw, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

		nt->raw = fd >= 0 ? fdopen(fd, "w") : NULL;
		if (!nt->raw) {
			diag_errno(d, errno, "%s=%s: cannot create", NATIVE_RAW_ENV, raw);
			if (fd >= 0)
				close(fd);
			free(nt);
			return NULL;
		}
	}
	return nt;
}

void native_tables_free(struct native_tables *nt)
{
	if (!nt)
		return;
	if (nt->raw)
		fclose(nt->raw);
	for (size_t i = 0; i < nt->nprocs; i++)
		free(nt->procs[i].np);
	free(nt->files);
	free(nt->procs);
	free(nt->lrows);
	free(nt);
}

struct native_tables *native_tables_new_local(struct diag *d)
{
	return native_tables_new(-1, NATIVE_ROWS_MAX, -1, -1, d);
}

const struct native_proc *native_tables_proc(const struct native_tables *nt, pid_t pid)
{
	for (size_t i = 0; i < nt->nprocs; i++)
		if (nt->procs[i].pid == pid)
			return nt->procs[i].np;
	return NULL;
}

const struct unwind_row *native_tables_rows(const struct native_tables *nt, uint32_t *n)
{
	*n = nt->rows_used;
	return nt->lrows;
}

/* Room for one more element in *v (n used of *cap): 0, or -1. */
static int room(void **v, size_t *cap, size_t n, size_t elem)
{
	size_t ncap = *cap ? *cap * 2 : 16;
	void *nv;

	if (n < *cap)
		return 0;
	nv = realloc(*v, ncap * elem);
	if (!nv)
		return -1;
	*v = nv;
	*cap = ncap;
	return 0;
}

static struct nfile *file_find(struct native_tables *nt, uint64_t dev, uint64_t ino)
{
	for (size_t i = 0; i < nt->nfiles; i++)
		if (nt->files[i].dev == dev && nt->files[i].ino == ino)
			return &nt->files[i];
	return NULL;
}

/* Rows into native_rows at [first, first + n): batches, or one by one on a
 * kernel without batch updates of arrays. */
static int upload(struct native_tables *nt, uint32_t first, const struct unwind_row *rows,
		  uint32_t n)
{
	uint32_t *keys;

	if (nt->rows_fd < 0) {
		/* Local: the rows go where the user-space unwinder reads them. */
		size_t want = (size_t)first + n;

		if (want > nt->lcap) {
			size_t cap = nt->lcap ? nt->lcap : 65536;
			void *v;

			while (cap < want)
				cap *= 2;
			v = realloc(nt->lrows, cap * sizeof(*nt->lrows));
			if (!v)
				return -1;
			nt->lrows = v;
			nt->lcap = cap;
		}
		memcpy(nt->lrows + first, rows, (size_t)n * sizeof(*rows));
		return 0;
	}
	keys = malloc((size_t)(n < UPLOAD_BATCH ? n : UPLOAD_BATCH) * sizeof(*keys));
	if (!keys)
		return -1;
	for (uint32_t done = 0; done < n;) {
		uint32_t k = n - done < UPLOAD_BATCH ? n - done : UPLOAD_BATCH, cnt = k;

		for (uint32_t i = 0; i < k; i++)
			keys[i] = first + done + i;
		if (bpf_map_update_batch(nt->rows_fd, keys, rows + done, &cnt, NULL)) {
			for (uint32_t i = 0; i < k; i++)
				if (bpf_map_update_elem(nt->rows_fd, &keys[i], &rows[done + i],
							BPF_ANY)) {
					free(keys);
					return -1;
				}
		}
		done += k;
	}
	free(keys);
	return 0;
}

/* Build and load the table of the file mapped at m in pid; the new cache
 * entry (with count 0 when no table could be made), or NULL when the cache
 * is full. */
static struct nfile *file_add_fd(struct native_tables *nt, const struct proc_map *m, int fd)
{
	struct diag d = {0};
	struct unwind_table t;
	struct elfsym *e = NULL;
	struct nfile *f;

	if (nt->nfiles >= NATIVE_MAX_FILES) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if (room((void **)&nt->files, &nt->fcap, nt->nfiles, sizeof(*nt->files)))
		return NULL;
	f = &nt->files[nt->nfiles++];
	memset(f, 0, sizeof(*f));
	f->dev = (uint64_t)m->dev_major << 32 | m->dev_minor;
	f->ino = m->inode;
	e = fd >= 0 ? elfsym_open(fd, m->path, &d) : NULL;
	if (!e)
		goto none;
	while (f->nsegs < MAX_SEGS && !elfsym_segment(e, (size_t)f->nsegs, &f->segs[f->nsegs]))
		f->nsegs++;
	if (unwind_table_build(e, m->path, &t, &d))
		goto none;
	nt->st.build_ms += t.build_ns / 1e6;
	if (t.n <= nt->rows_max - nt->rows_used && !upload(nt, nt->rows_used, t.rows, t.n)) {
		f->first = nt->rows_used;
		f->count = t.n;
		nt->rows_used += t.n;
		nt->st.rows = nt->rows_used;
		nt->st.files++;
	} else {
		nt->st.files_failed++;
	}
	unwind_table_free(&t);
	elfsym_close(e);
	return f;
none:
	nt->st.files_failed++;
	elfsym_close(e);
	return f;
}

/* The same for the file mapped at m in pid, opened by the kernel's own
 * handle on the mapping first (the very file, even deleted or replaced),
 * the name inside the target's root second; none once past the deadline. */
static struct nfile *file_add(struct native_tables *nt, pid_t pid, const struct proc_map *m,
			      uint64_t deadline)
{
	struct diag d = {0};
	int fd = -1;

	if (mono_ns() <= deadline) {
		fd = proc_map_file_open(pid, m->start, m->end, &d);
		if (fd < 0)
			fd = proc_target_file_open(pid, m->path, &d);
	}
	return file_add_fd(nt, m, fd);
}

/*
 * The vDSO (clock_gettime and friends, where time.time() spends its time)
 * is the kernel's: one image for every 64-bit process of this boot, ours
 * included. Its table is built from our own copy, through a memfd so that
 * the one ELF reader reads it like any file. NULL if we have none or its
 * size differs from the target's (not the same image).
 */
#define VDSO_KEY UINT64_MAX

static struct nfile *vdso_file(struct native_tables *nt, const struct proc_map *tm)
{
	struct proc_maps self = {0};
	struct proc_map m = {0};
	struct diag d = {0};
	struct nfile *f = file_find(nt, VDSO_KEY, VDSO_KEY);
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	int fd;

	if (f || !base || proc_maps_read(getpid(), &self, &d))
		return f;
	for (size_t i = 0; i < self.n; i++)
		if (!strcmp(self.v[i].path, "[vdso]") && self.v[i].start == base)
			m = self.v[i];
	proc_maps_free(&self);
	if (!m.start || m.end - m.start != tm->end - tm->start)
		return NULL;
	fd = memfd_create("bpfpy-vdso", MFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (write(fd, (const void *)base, m.end - m.start) != (ssize_t)(m.end - m.start)) {
		close(fd);
		return NULL;
	}
	m.path = "[vdso]";
	m.dev_major = m.dev_minor = UINT32_MAX;
	m.inode = VDSO_KEY;
	return file_add_fd(nt, &m, fd);
}

/* The load bias of mapping m of file f: target address = file vaddr +
 * bias. The PT_LOAD that holds m's file offset decides (the kernel maps
 * segments at page granularity, so its start is rounded down). */
static int map_bias(const struct nfile *f, const struct proc_map *m, uint64_t *bias)
{
	for (int i = 0; i < f->nsegs; i++) {
		const struct elfsym_seg *s = &f->segs[i];

		if (m->offset + 4095 < s->offset || m->offset >= s->offset + s->filesz)
			continue;
		*bias = m->start - (s->vaddr + m->offset - s->offset);
		return 0;
	}
	return -1;
}

static int cmp_map(const void *a, const void *b)
{
	const struct native_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static struct nproc *proc_slot(struct native_tables *nt, pid_t pid, int create)
{
	for (size_t i = 0; i < nt->nprocs; i++)
		if (nt->procs[i].pid == pid)
			return &nt->procs[i];
	if (!create)
		return NULL;
	if (room((void **)&nt->procs, &nt->pcap, nt->nprocs, sizeof(*nt->procs)))
		return NULL;
	nt->procs[nt->nprocs] = (struct nproc){.pid = pid};
	return &nt->procs[nt->nprocs++];
}

int native_tables_attach(struct native_tables *nt, pid_t pid, struct diag *d)
{
	struct proc_maps maps = {0};
	struct native_proc *np;
	struct nproc *slot;
	uint64_t deadline = mono_ns() + (uint64_t)NATIVE_ATTACH_MS * 1000000;
	__u32 key = (__u32)pid;
	int ret = 0;

	if (proc_maps_read(pid, &maps, d))
		return -1;
	np = calloc(1, sizeof(*np));
	if (!np) {
		proc_maps_free(&maps);
		return diag_errno(d, ENOMEM, "pid %d: native mappings", (int)pid);
	}
	for (size_t i = 0; i < maps.n && np->nmaps < NATIVE_MAX_MAPS; i++) {
		const struct proc_map *m = &maps.v[i];
		struct native_map *out = &np->maps[np->nmaps];
		struct nfile *f;
		uint64_t bias;

		if (m->perms[2] != 'x')
			continue;
		out->start = m->start;
		out->end = m->end;
		/* Anonymous code (JIT, trampolines): listed with no table, so
		 * frame pointers there, not a lost stack. */
		if (!strcmp(m->path, "[vdso]")) {
			f = vdso_file(nt, m);
		} else if (!proc_map_is_file(m) || !m->inode) {
			np->nmaps++;
			continue;
		} else {
			f = file_find(nt, (uint64_t)m->dev_major << 32 | m->dev_minor, m->inode);
			if (!f)
				f = file_add(nt, pid, m, deadline);
		}
		if (f && f->count && !map_bias(f, m, &bias)) {
			out->bias = bias;
			out->first = f->first;
			out->count = f->count;
		}
		np->nmaps++;
	}
	qsort(np->maps, np->nmaps, sizeof(np->maps[0]), cmp_map);
	if (nt->procs_fd >= 0 && bpf_map_update_elem(nt->procs_fd, &key, np, BPF_ANY))
		ret = diag_errno(d, errno, "pid %d: cannot load its native mappings", (int)pid);
	slot = proc_slot(nt, pid, 1); /* listed: its records may ask for a re-scan */
	if (slot && nt->procs_fd < 0) {
		free(slot->np);
		slot->np = np;
		np = NULL;
	} else if (nt->procs_fd < 0) {
		ret = diag_errno(d, ENOMEM, "pid %d: native mappings", (int)pid);
	}
	nt->st.attaches++;
	free(np);
	proc_maps_free(&maps);
	return ret;
}

void native_tables_detach(struct native_tables *nt, pid_t pid)
{
	__u32 key = (__u32)pid;
	struct nproc *slot = proc_slot(nt, pid, 0);

	if (nt->procs_fd >= 0)
		bpf_map_delete_elem(nt->procs_fd, &key);
	if (slot) {
		free(slot->np);
		*slot = nt->procs[--nt->nprocs];
	}
}

static void raw_dump(FILE *f, const struct sample_hdr *h)
{
	const __u64 *ip = native_ips(h), *kip = kernel_ips(h);

	fprintf(f, "S %u %u %u %u %u %x |", h->pid, h->tid, h->nframes, h->nnative, h->nkernel,
		h->native_flags);
	for (unsigned i = 0; i < h->nnative; i++)
		fprintf(f, " %llx", (unsigned long long)ip[i]);
	fputs(" |", f);
	for (unsigned i = 0; i < h->nkernel; i++)
		fprintf(f, " %llx", (unsigned long long)kip[i]);
	fputc('\n', f);
}

void native_tables_on_record(struct native_tables *nt, const struct sample_hdr *h)
{
	if (nt->raw)
		raw_dump(nt->raw, h);
	if ((h->native_flags & NATIVE_LOST) && NATIVE_CAUSE(h->native_flags) == NATIVE_NO_MAP) {
		struct nproc *slot = proc_slot(nt, (pid_t)h->pid, 0);
		struct diag d = {0};

		/* Only processes we attached, and not more often than the
		 * limit: JIT code outside every mapping would ask each time. */
		if (slot && (!slot->last_ns ||
			     mono_ns() - slot->last_ns >= (uint64_t)NATIVE_REFRESH_MS * 1000000)) {
			slot->last_ns = mono_ns();
			nt->st.refreshes++;
			native_tables_attach(nt, (pid_t)h->pid, &d);
		}
	}
}

int native_tables_counters(struct native_tables *nt, uint64_t out[NCNT__COUNT])
{
	return bpf_loader_percpu_sum(nt->counters_fd, NCNT__COUNT, out);
}

void native_tables_summary(FILE *f, struct native_tables *nt)
{
	uint64_t n[NCNT__COUNT], lost = 0;

	if (native_tables_counters(nt, n))
		return;
	for (int i = 1; i < NATIVE_CAUSE__COUNT; i++)
		lost += n[NCNT_LOST_BASE + i];
	fprintf(f,
		"  native unwinding: %llu stacks, %.1f frames a stack (%llu by frame pointer), "
		"in-kernel %.2f us a stack; %llu truncated, %llu stopped early\n",
		(unsigned long long)n[NCNT_SAMPLES],
		n[NCNT_SAMPLES] ? (double)n[NCNT_FRAMES] / n[NCNT_SAMPLES] : 0.0,
		(unsigned long long)n[NCNT_FP_FRAMES],
		n[NCNT_SAMPLES] ? n[NCNT_NS] / 1e3 / n[NCNT_SAMPLES] : 0.0,
		(unsigned long long)n[NCNT_TRUNCATED], (unsigned long long)lost);
	/* Why, when it did: the first thing to read when a profile shows
	 * [native unwind lost]. */
	for (int i = 1, any = 0; i < NATIVE_CAUSE__COUNT; i++)
		if (n[NCNT_LOST_BASE + i]) {
			fprintf(f, "%s%s %llu", any ? ", " : "  native unwinding stopped early: ",
				native_cause_name(i), (unsigned long long)n[NCNT_LOST_BASE + i]);
			any = 1;
		}
	if (lost)
		fputc('\n', f);
}

void native_tables_stats(const struct native_tables *nt, struct native_tables_stats *out)
{
	*out = nt->st;
}
