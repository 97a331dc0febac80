// SPDX-License-Identifier: MIT
#include "offcpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_loader.h"
#include "offcpu.skel.h"

struct offcpu {
	struct offcpu_bpf *skel;
	struct bpf_link *link;
	int counters_fd;
};

/* The sampler's maps the off-CPU program uses as its own: without them it
 * would see no process, name no code and write where nobody reads. */
static const char *const shared_maps[] = {"proc_configs", "tid_tstates", "tstate_owners",
					  "code_names",	  "code_tables", "events"};

int offcpu_open(struct offcpu **out, struct bpf_object *shared, const struct offcpu_opts *o,
		struct diag *d)
{
	struct offcpu *oc = calloc(1, sizeof(*oc));

	*out = NULL;
	if (!oc)
		return diag_errno(d, ENOMEM, "off-CPU program");
	oc->skel = offcpu_bpf__open();
	if (!oc->skel) {
		bpf_loader_open_failed("off-CPU program", d);
		free(oc);
		return -1;
	}
	oc->skel->rodata->min_block_ns = o->min_block_ns;
	for (size_t i = 0; i < sizeof(shared_maps) / sizeof(shared_maps[0]); i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(oc->skel->obj, shared_maps[i]);
		int fd = bpf_object__find_map_fd_by_name(shared, shared_maps[i]);

		if (!m || fd < 0 || bpf_map__reuse_fd(m, fd)) {
			int err = errno ? errno : ENOENT;

			offcpu_close(oc);
			return diag_errno(d, err, "off-CPU program: cannot share map %s",
					  shared_maps[i]);
		}
	}
	if (bpf_loader_load(oc->skel->skeleton, "off-CPU program", d)) {
		offcpu_close(oc);
		return -1;
	}
	oc->counters_fd = bpf_map__fd(oc->skel->maps.offcpu_counters);
	*out = oc;
	return 0;
}

int offcpu_start(struct offcpu *oc, struct diag *d)
{
	oc->link = bpf_program__attach(oc->skel->progs.on_switch);
	if (!oc->link)
		return diag_errno(d, errno, "cannot attach the off-CPU program to sched_switch");
	return 0;
}

/* Run offcpu_flush over every task once: the blocks still open are
 * written up to now. Best effort: without it they are only missing. */
static void flush_open_blocks(struct offcpu *oc)
{
	struct bpf_link *it = bpf_program__attach_iter(oc->skel->progs.offcpu_flush, NULL);
	char buf[64];
	int fd;

	if (!it) {
		fprintf(stderr, "bpfpy: warning: cannot flush off-CPU blocks still open (%s)\n",
			strerror(errno));
		return;
	}
	fd = bpf_iter_create(bpf_link__fd(it));
	if (fd >= 0) {
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		close(fd);
	}
	bpf_link__destroy(it);
}

void offcpu_stop(struct offcpu *oc)
{
	if (!oc || !oc->link)
		return;
	/* While still attached, so that a block ends exactly once: here, or
	 * at its switch-in, whichever takes it first. */
	flush_open_blocks(oc);
	bpf_link__destroy(oc->link);
	oc->link = NULL;
}

void offcpu_close(struct offcpu *oc)
{
	if (!oc)
		return;
	offcpu_stop(oc);
	offcpu_bpf__destroy(oc->skel);
	free(oc);
}

int offcpu_counters(struct offcpu *oc, uint64_t out[OFFC__COUNT])
{
	return bpf_loader_percpu_sum(oc->counters_fd, OFFC__COUNT, out);
}

static const char *const reason_names[OFFCPU__COUNT] = {
    [OFFCPU_NONE] = "other",	      [OFFCPU_GIL] = "gil",
    [OFFCPU_LOCK] = "lock",	      [OFFCPU_IO] = "io",
    [OFFCPU_SLEEP] = "sleep",	      [OFFCPU_PAGE_FAULT] = "page fault",
    [OFFCPU_PREEMPTED] = "preempted", [OFFCPU_OTHER] = "other",
};

static const char *const reason_frames[OFFCPU__COUNT] = {
    [OFFCPU_NONE] = "[off-cpu: other]",		 [OFFCPU_GIL] = "[off-cpu: gil]",
    [OFFCPU_LOCK] = "[off-cpu: lock]",		 [OFFCPU_IO] = "[off-cpu: io]",
    [OFFCPU_SLEEP] = "[off-cpu: sleep]",	 [OFFCPU_PAGE_FAULT] = "[off-cpu: page fault]",
    [OFFCPU_PREEMPTED] = "[off-cpu: preempted]", [OFFCPU_OTHER] = "[off-cpu: other]",
};

const char *offcpu_reason_name(unsigned reason)
{
	return reason < OFFCPU__COUNT ? reason_names[reason] : "other";
}

const char *offcpu_reason_frame(unsigned reason)
{
	return reason < OFFCPU__COUNT ? reason_frames[reason] : "[off-cpu: other]";
}
