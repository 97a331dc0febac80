// SPDX-License-Identifier: MIT
#include "bpf_sampler.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_loader.h"
#include "proc.h"
#include "sampler.skel.h"
#include "wallclock.skel.h"

#define MAX_CPUS 1024
/* Records handled per bpf_sampler_poll() at most. */
#define POLL_BATCH 4096

struct bpf_sampler {
	struct sampler_bpf *skel;    /* --clock cpu */
	struct wallclock_bpf *wskel; /* --clock wall */
	struct bpf_link *iter_link;
	struct bpf_link *exec_link; /* bpf/exec_watch.bpf.h */
	int configs_fd, counters_fd, execed_fd, names_fd;
	pid_t only_pid; /* wall clock: iterate this process's threads only */
	struct ring_buffer *rb;
	int ncpus;
	int cpus[MAX_CPUS];
	int pfd[MAX_CPUS];
	struct bpf_link *links[MAX_CPUS];
	uint64_t period_ns;
	double keep;
	bpf_sample_fn fn;
	void *fn_ctx;
	int handled;
	int stop;
	int wall;
	int targets_grow;
	int nprocs;
};

static int on_record(void *ctx, void *data, size_t size)
{
	struct bpf_sampler *s = ctx;
	const struct sample_hdr *h = data;

	if (size < sizeof(*h) || size < sizeof(*h) + (size_t)h->nframes * sizeof(struct frame_rec))
		return 0;
	s->handled++;
	if (s->fn && s->fn(s->fn_ctx, h, (const struct frame_rec *)(h + 1))) {
		s->stop = 1;
		return -ECANCELED;
	}
	/* ring_buffer__consume() drains until the buffer is empty, which never
	 * happens while the kernel writes faster than we symbolize: stop after
	 * a bounded batch so the caller's clock, deadline and signals are seen.
	 * libbpf stops only on a negative return; what is left stays queued. */
	if (s->handled >= POLL_BATCH)
		return -EAGAIN;
	return 0;
}

int bpf_sampler_open(struct bpf_sampler **out, const struct bpf_sampler_opts *o, struct diag *d)
{
	struct bpf_sampler *s;
	unsigned factor = o->poisson_factor ? o->poisson_factor : 8;
	unsigned mb = o->ringbuf_mb ? o->ringbuf_mb : 16;
	double base_hz = o->rate_hz;
	int err, events_fd;

	bpf_loader_log(o->verbose);
	if (o->rate_hz <= 0)
		return diag_set(d, EXIT_USAGE, "sampling rate must be positive");
	s = calloc(1, sizeof(*s));
	if (!s)
		return diag_errno(d, ENOMEM, "bpf sampler");
	for (int i = 0; i < MAX_CPUS; i++)
		s->pfd[i] = -1;
	if (o->poisson)
		base_hz *= factor;
	s->period_ns = (uint64_t)(1e9 / base_hz + 0.5);
	if (s->period_ns < 1000)
		s->period_ns = 1000;
	s->keep = o->poisson ? 1.0 / factor : 1.0;

	s->wall = o->wall;
	s->targets_grow = o->targets_grow;
	if (o->wall) {
		s->wskel = wallclock_bpf__open();
		if (!s->wskel) {
			bpf_loader_open_failed("wall-clock iterator", d);
			free(s);
			return -1;
		}
		bpf_map__set_max_entries(s->wskel->maps.events, mb << 20);
		err = bpf_loader_load(s->wskel->skeleton, "wall-clock iterator", d);
	} else {
		s->skel = sampler_bpf__open();
		if (!s->skel) {
			bpf_loader_open_failed("sampler", d);
			free(s);
			return -1;
		}
		if (o->poisson)
			s->skel->rodata->keep_below = (__u32)(4294967296.0 * s->keep);
		bpf_map__set_max_entries(s->skel->maps.events, mb << 20);
		err = bpf_loader_load(s->skel->skeleton, "sampler", d);
	}
	if (err) {
		bpf_sampler_close(s);
		return -1;
	}
	if (o->wall) {
		s->configs_fd = bpf_map__fd(s->wskel->maps.proc_configs);
		s->counters_fd = bpf_map__fd(s->wskel->maps.counters);
		s->execed_fd = bpf_map__fd(s->wskel->maps.execed);
		s->names_fd = bpf_map__fd(s->wskel->maps.code_names);
		events_fd = bpf_map__fd(s->wskel->maps.events);
	} else {
		s->configs_fd = bpf_map__fd(s->skel->maps.proc_configs);
		s->counters_fd = bpf_map__fd(s->skel->maps.counters);
		s->execed_fd = bpf_map__fd(s->skel->maps.execed);
		s->names_fd = bpf_map__fd(s->skel->maps.code_names);
		events_fd = bpf_map__fd(s->skel->maps.events);
	}
	s->rb = ring_buffer__new(events_fd, on_record, s, NULL);
	if (!s->rb) {
		err = errno;
		bpf_sampler_close(s);
		return diag_errno(d, err, "cannot set up the BPF ring buffer");
	}
	s->ncpus = online_cpus(s->cpus, MAX_CPUS);
	if (s->ncpus <= 0) {
		bpf_sampler_close(s);
		return diag_set(d, EXIT_HOST, "cannot read /sys/devices/system/cpu/online");
	}
	*out = s;
	return 0;
}

int bpf_sampler_start(struct bpf_sampler *s, struct diag *d)
{
	struct perf_event_attr attr = {
	    .type = PERF_TYPE_SOFTWARE,
	    .size = sizeof(attr),
	    .config = PERF_COUNT_SW_CPU_CLOCK,
	    .sample_period = s->period_ns, /* exact period, not adaptive frequency */
	};
	/* Without the exec hook a target that execs is still noticed, but only
	 * by its samples failing: worth a word, not worth refusing to record. */
	s->exec_link =
	    bpf_program__attach(s->wall ? s->wskel->progs.on_exec : s->skel->progs.on_exec);
	if (!s->exec_link)
		fprintf(stderr,
			"bpfpy: warning: cannot watch targets' execve (%s): a target that "
			"execs is not re-resolved\n",
			strerror(errno));
	if (s->wall) {
		/* One process: let the kernel iterate only its threads. */
		DECLARE_LIBBPF_OPTS(bpf_iter_attach_opts, opts);
		union bpf_iter_link_info linfo;

		memset(&linfo, 0, sizeof(linfo));
		if (s->only_pid) {
			linfo.task.pid = s->only_pid;
			opts.link_info = &linfo;
			opts.link_info_len = sizeof(linfo);
		}
		s->iter_link = bpf_program__attach_iter(s->wskel->progs.wall_snapshot, &opts);
		if (!s->iter_link)
			return diag_errno(d, errno, "cannot attach the wall-clock task iterator");
		return 0;
	}
	if (bpf_loader_attach_cpus(s->skel->progs.on_cpu_tick, &attr, s->cpus, s->ncpus, s->pfd,
				   s->links, d) < 0)
		return -1;
	return 0;
}

int bpf_sampler_add(struct bpf_sampler *s, pid_t pid, const struct proc_config *cfg, struct diag *d)
{
	__u32 key = pid;

	if (bpf_map_update_elem(s->configs_fd, &key, cfg, BPF_ANY))
		return diag_errno(d, errno, "pid %d: cannot register with the BPF sampler", pid);
	s->nprocs++;
	s->only_pid = s->nprocs == 1 && !s->targets_grow ? pid : 0;
	return 0;
}

void bpf_sampler_remove(struct bpf_sampler *s, pid_t pid)
{
	__u32 key = pid;

	bpf_map_delete_elem(s->configs_fd, &key);
	bpf_map_delete_elem(s->execed_fd, &key);
}

int bpf_sampler_take_exec(struct bpf_sampler *s, pid_t pid)
{
	__u32 key = pid;

	/* The kernel already dropped the config; deleting the flag is what
	 * makes this a one-shot report. */
	return bpf_map_delete_elem(s->execed_fd, &key) == 0;
}

int bpf_sampler_snapshot(struct bpf_sampler *s, struct diag *d)
{
	char buf[64];
	int fd;

	if (!s->iter_link)
		return diag_set(d, EXIT_FAIL, "wall-clock iterator not started");
	/* Each read of a fresh iterator fd runs the program over every task;
	 * the program writes nothing to the seq file, so one read ends it. */
	fd = bpf_iter_create(bpf_link__fd(s->iter_link));
	if (fd < 0)
		return diag_errno(d, errno, "cannot run the wall-clock iterator");
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
	return 0;
}

int bpf_sampler_poll(struct bpf_sampler *s, int timeout_ms, bpf_sample_fn fn, void *ctx)
{
	int err;

	s->fn = fn;
	s->fn_ctx = ctx;
	s->handled = 0;
	/* Records are written with BPF_RB_NO_WAKEUP, so epoll would sleep the
	 * whole timeout: consume what is there, sleep, consume again. */
	err = ring_buffer__consume(s->rb);
	if (err >= 0 && !s->handled && !s->stop && timeout_ms > 0) {
		usleep((useconds_t)timeout_ms * 1000);
		err = ring_buffer__consume(s->rb);
	}
	if (err < 0 && err != -EINTR && err != -EAGAIN && err != -ECANCELED)
		return -1;
	return s->handled;
}

int bpf_sampler_counters(struct bpf_sampler *s, uint64_t out[CNT__COUNT])
{
	return bpf_loader_percpu_sum(s->counters_fd, CNT__COUNT, out);
}

int bpf_sampler_code_name(void *sampler, uint32_t pid, uint64_t addr, uint32_t fingerprint,
			  struct code_name *out)
{
	struct bpf_sampler *s = sampler;
	struct code_name_key k = {.pid = pid, .fingerprint = fingerprint, .code = addr};

	return bpf_map_lookup_elem(s->names_fd, &k, out) ? -1 : 0;
}

uint64_t bpf_sampler_period_ns(const struct bpf_sampler *s)
{
	return s->period_ns;
}

double bpf_sampler_keep_prob(const struct bpf_sampler *s)
{
	return s->keep;
}

int bpf_sampler_ncpus(const struct bpf_sampler *s)
{
	return s->ncpus;
}

int bpf_sampler_set_enabled(struct bpf_sampler *s, bool on)
{
	int ret = 0;

	for (int i = 0; i < MAX_CPUS; i++)
		if (s->pfd[i] >= 0 &&
		    ioctl(s->pfd[i], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0))
			ret = -1;
	return ret;
}

void bpf_sampler_stop(struct bpf_sampler *s)
{
	for (int i = 0; i < MAX_CPUS; i++) {
		bpf_link__destroy(s->links[i]);
		s->links[i] = NULL;
		if (s->pfd[i] >= 0)
			close(s->pfd[i]);
		s->pfd[i] = -1;
	}
}

void bpf_sampler_close(struct bpf_sampler *s)
{
	if (!s)
		return;
	bpf_sampler_stop(s);
	ring_buffer__free(s->rb);
	bpf_link__destroy(s->iter_link);
	bpf_link__destroy(s->exec_link);
	sampler_bpf__destroy(s->skel);
	wallclock_bpf__destroy(s->wskel);
	free(s);
}
