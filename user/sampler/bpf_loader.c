// SPDX-License-Identifier: MIT
#include "bpf_loader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "bpfpy.h"
#include "code_cache.h"
#include "privilege.h"
#include "proc.h"

static int libbpf_all(enum libbpf_print_level level, const char *fmt, va_list args)
{
	(void)level;
	return vfprintf(stderr, fmt, args);
}

static int libbpf_none(enum libbpf_print_level level, const char *fmt, va_list args)
{
	(void)level;
	(void)fmt;
	(void)args;
	return 0;
}

void bpf_loader_log(int verbose)
{
	libbpf_set_print(verbose ? libbpf_all : libbpf_none);
}

int bpf_loader_open_failed(const char *what, struct diag *d)
{
	return diag_errno(d, errno ? errno : EINVAL, "cannot open the BPF %s", what);
}

int bpf_loader_denied(struct diag *d, int err, const char *what)
{
	int bpf = proc_self_has_cap(PRIV_CAP_BPF), perfmon = proc_self_has_cap(PRIV_CAP_PERFMON);
	int admin = proc_self_has_cap(PRIV_CAP_SYS_ADMIN);
	char missing[80] = "";

	if (!bpf && !admin)
		snprintf(missing, sizeof(missing), "CAP_BPF");
	if (!perfmon && !admin)
		snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), "%s%s",
			 missing[0] ? " and " : "", "CAP_PERFMON");
	if (missing[0])
		return diag_set(d, EXIT_PERMISSION,
				"cannot load the BPF %s: %s: missing %s (or run as root; kernels "
				"before 5.8 need CAP_SYS_ADMIN)",
				what, strerror(err), missing);
	/* Every capability is there and the kernel still says no: a lockdown,
	 * an LSM or a sysctl decides, not us. */
	return diag_set(d, EXIT_PERMISSION,
			"cannot load the BPF %s: %s although CAP_BPF, CAP_PERFMON%s are held "
			"(kernel lockdown, an LSM or a seccomp filter refuses it)",
			what, strerror(err), admin ? " and CAP_SYS_ADMIN" : "");
}

int bpf_loader_load(struct bpf_object_skeleton *s, const char *what, struct diag *d)
{
	int err = bpf_object__load_skeleton(s);

	if (!err)
		return 0;
	if (err == -EPERM || err == -EACCES)
		return bpf_loader_denied(d, -err, what);
	return diag_set(d, EXIT_HOST,
			"cannot load the BPF %s: %s (run with -v for the verifier log)", what,
			strerror(-err));
}

int bpf_loader_percpu_sum(int map_fd, uint32_t n, uint64_t *out)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals;

	if (ncpu <= 0)
		return -1;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals)
		return -1;
	for (uint32_t k = 0; k < n; k++) {
		out[k] = 0;
		if (bpf_map_lookup_elem(map_fd, &k, vals))
			continue;
		for (int c = 0; c < ncpu; c++)
			out[k] += vals[c];
	}
	free(vals);
	return 0;
}

int bpf_loader_attach_cpus(struct bpf_program *prog, struct perf_event_attr *attr, const int *cpus,
			   int ncpus, int *pfd, struct bpf_link **links, struct diag *d)
{
	int attached = 0;

	for (int i = 0; i < ncpus; i++) {
		int fd = syscall(__NR_perf_event_open, attr, -1, cpus[i], -1, PERF_FLAG_FD_CLOEXEC);

		pfd[i] = -1;
		links[i] = NULL;
		if (fd < 0) {
			if (errno == ENODEV) /* went offline since the list was read */
				continue;
			if (errno == EACCES || errno == EPERM)
				return diag_set(d, EXIT_PERMISSION,
						"cannot open the cpu-clock on CPU %d: %s (needs "
						"CAP_PERFMON, or root)",
						cpus[i], strerror(errno));
			if (errno == EINVAL)
				return diag_set(d, EXIT_USAGE,
						"cpu-clock period %llu ns refused on CPU %d: rate "
						"above kernel.perf_event_max_sample_rate?",
						(unsigned long long)attr->sample_period, cpus[i]);
			return diag_errno(d, errno, "perf_event_open(cpu-clock, CPU %d)", cpus[i]);
		}
		pfd[i] = fd;
		links[i] = bpf_program__attach_perf_event(prog, fd);
		if (!links[i])
			return diag_errno(d, errno, "cannot attach the sampler to CPU %d", cpus[i]);
		attached++;
	}
	if (!attached)
		return diag_set(d, EXIT_HOST, "no online CPU accepted a cpu-clock event");
	return attached;
}

struct chunk_ctx {
	int tables_fd;
	struct code_table_key k;
};

static int chunk_lookup(void *ctx, uint32_t i, struct code_table_chunk *buf)
{
	struct chunk_ctx *c = ctx;

	c->k.chunk = i;
	return bpf_map_lookup_elem(c->tables_fd, &c->k, buf) ? -1 : 0;
}

int bpf_loader_code_name(void *maps, uint32_t pid, uint64_t addr, uint32_t fingerprint,
			 struct code_copy *out)
{
	struct chunk_ctx c = {
	    .tables_fd = ((const struct code_name_maps *)maps)->tables_fd,
	    .k = {.name = {.pid = pid, .fingerprint = fingerprint, .code = addr}}};

	if (bpf_map_lookup_elem(((const struct code_name_maps *)maps)->names_fd, &c.k.name,
				&out->n))
		return -1;
	code_copy_gather(out, chunk_lookup, &c);
	return 0;
}
