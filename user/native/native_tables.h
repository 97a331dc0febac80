/* SPDX-License-Identifier: MIT */
/*
 * The unwind tables of the sampled processes, in the sampler's BPF maps
 * (bpf/native_unwind.bpf.h): one table per file, built once
 * (unwind_tables.h) and shared by every process that maps the file (key:
 * the device and inode /proc/PID/maps shows), and per process the sorted
 * list of its executable mappings with their load bias and table.
 *
 * bpf_sampler.c owns one of these when opened with native unwinding (and
 * cmd_trace.c for trace --native, on the tracer's maps): it
 * attaches each process it is given and detaches it on removal, and feeds
 * it every record, so that a sample that ran into an address outside every
 * known mapping (a library loaded since: ctypes loads libffi late) re-scans
 * that process's maps: the first such record at once, then at most every
 * NATIVE_REFRESH_MS.
 */
#ifndef NATIVE_TABLES_H
#define NATIVE_TABLES_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpfpy.h"

struct diag;
struct native_tables;

#define NATIVE_REFRESH_MS 250
/* Time one attach may spend building tables; files left then get none
 * (frame pointers only) until the next refresh. */
#define NATIVE_ATTACH_MS 10000
/* Files whose tables are kept (each costs its rows in native_rows). */
#define NATIVE_MAX_FILES 4096

/* Debug: BPFPY_NATIVE_RAW=FILE (a new file) turns native and kernel
 * unwinding on and writes every record's addresses there, one line each:
 *   S PID TID NFRAMES NNATIVE NKERNEL FLAGS | IP... | KIP...
 * (hex addresses, leaf first). The tests symbolize them independently. */
#define NATIVE_RAW_ENV "BPFPY_NATIVE_RAW"

struct native_tables *native_tables_new(int rows_fd, uint32_t rows_max, int procs_fd,
					int counters_fd, struct diag *d);
void native_tables_free(struct native_tables *nt);

/* The same tables kept in this process instead of BPF maps, for the
 * user-space unwinder (native_walk.h: bpfpy dump): attach and detach as
 * above, then read them with the two calls below. The counters and the
 * BPFPY_NATIVE_RAW dump are the sampler's only. */
struct native_tables *native_tables_new_local(struct diag *d);
/* pid's sorted executable mappings (as loaded into native_procs), or NULL
 * when it is not attached. */
const struct native_proc *native_tables_proc(const struct native_tables *nt, pid_t pid);
/* Every file's rows; native_map.first/count index them. */
const struct unwind_row *native_tables_rows(const struct native_tables *nt, uint32_t *n);

/* (Re)read pid's maps, build what tables are missing, load its mapping
 * list. 0, or -1 with d set (the process is gone or its maps unreadable).
 * A file whose table cannot be built is still listed, without a table: its
 * frames are followed by frame pointer and flagged. */
int native_tables_attach(struct native_tables *nt, pid_t pid, struct diag *d);
void native_tables_detach(struct native_tables *nt, pid_t pid);

/* Every record, as the ring buffer delivers it (size checked by the
 * caller): refresh on NATIVE_NO_MAP, the debug dump. */
void native_tables_on_record(struct native_tables *nt, const struct sample_hdr *h);

/* native_counters summed over CPUs (enum native_counter). 0 or -1. */
int native_tables_counters(struct native_tables *nt, uint64_t out[NCNT__COUNT]);

/* Two lines on f, after a recording: what the kernel unwound (stacks,
 * frames, cost, truncations) and why unwinding stopped early, by cause
 * (enum native_cause). Nothing when the counters cannot be read. */
void native_tables_summary(FILE *f, struct native_tables *nt);

struct native_tables_stats {
	uint32_t files;	       /* tables built (shared by every process) */
	uint32_t files_failed; /* files listed without a table */
	uint32_t rows, rows_max;
	uint32_t attaches, refreshes;
	double build_ms; /* total time building tables */
};
void native_tables_stats(const struct native_tables *nt, struct native_tables_stats *out);

/* The native addresses and kernel addresses of a record (after its
 * frames), for readers of records: NULL when there are none. */
static inline const __u64 *native_ips(const struct sample_hdr *h)
{
	return h->nnative ? (const __u64 *)((const struct frame_rec *)(h + 1) + h->nframes) : 0;
}

static inline const __u64 *kernel_ips(const struct sample_hdr *h)
{
	return h->nkernel
		   ? (const __u64 *)((const struct frame_rec *)(h + 1) + h->nframes) + h->nnative
		   : 0;
}

#endif /* NATIVE_TABLES_H */
