/* SPDX-License-Identifier: MIT */
/*
 * The one BPF loader: what every command that loads BPF programs (record,
 * trace, check, the oracle) needs around a libbpf skeleton, whichever it
 * is. Opening and loading with a diagnosis a user can act on (which
 * capability is missing, or where the verifier log is), libbpf's own log
 * only when asked for (-v), per-CPU counters summed, and one perf event per
 * online CPU.
 */
#ifndef BPF_LOADER_H
#define BPF_LOADER_H

#include <linux/perf_event.h>
#include <stdint.h>

#include <bpf/libbpf.h>

#include "diag.h"

/* libbpf's log on stderr with verbose (-v), as bcc's libbpf-tools do;
 * silent otherwise: its warnings (RLIMIT_MEMLOCK, missing kernel configs,
 * the verifier's log) would bury our one message, which says what failed. */
void bpf_loader_log(int verbose);

/* For a skeleton's X__open() that returned NULL (errno set): the diag. */
int bpf_loader_open_failed(const char *what, struct diag *d);

/* Load an opened skeleton (X__load() is bpf_object__load_skeleton). On
 * failure the diag names what, and for EPERM/EACCES the capabilities we
 * lack (EXIT_PERMISSION); other failures are EXIT_HOST, pointing at -v. */
int bpf_loader_load(struct bpf_object_skeleton *s, const char *what, struct diag *d);

/* The message and exit code for a refused privileged call (EPERM/EACCES)
 * needing CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN before 5.8). */
int bpf_loader_denied(struct diag *d, int err, const char *what);

/* out[k] = sum over possible CPUs of key k of a per-CPU array of u64, for
 * k < n. Keys that cannot be read count 0. Returns 0, or -1. */
int bpf_loader_percpu_sum(int map_fd, uint32_t n, uint64_t *out);

/*
 * Open attr on each of cpus[0..ncpus) and attach prog to it; pfd[i] and
 * links[i] receive the event and the link (-1 / NULL when that CPU went
 * offline meanwhile, which is skipped). Returns the number attached, or -1
 * with d set (EXIT_PERMISSION, EXIT_USAGE for a period the kernel refuses).
 * The caller closes what was opened, also on failure.
 */
int bpf_loader_attach_cpus(struct bpf_program *prog, struct perf_event_attr *attr, const int *cpus,
			   int ncpus, int *pfd, struct bpf_link **links, struct diag *d);

/*
 * The names the kernel copied on a code object's first sight (code_names
 * and the line table's chunks in code_tables, bpf/py_sample.bpf.h), for
 * code_cache_set_names(): ctx points to a struct code_name_maps. Every
 * program that includes py_sample.bpf.h fills the maps, so a frame whose
 * code object died before user space read it keeps its name and lines.
 * Returns 0 when found (a chunk gone from its map cuts the table there),
 * -1 when not.
 */
struct code_name_maps {
	int names_fd;  /* code_names */
	int tables_fd; /* code_tables */
};
struct code_copy;
int bpf_loader_code_name(void *maps, uint32_t pid, uint64_t addr, uint32_t fingerprint,
			 struct code_copy *out);

#endif /* BPF_LOADER_H */
