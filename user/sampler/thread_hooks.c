// SPDX-License-Identifier: MIT
#include "thread_hooks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "diag.h"
#include "proc_root.h"
#include "py_binary.h"
#include "py_offsets.h"

struct hooked {
	pid_t pid;
	struct bpf_link *spawn, *clear;
};

struct thread_hooks {
	struct bpf_program *spawn, *clear, *clone, *exit;
	struct bpf_link *clone_link, *exit_link;
	struct hooked *v;
	int n, cap;
	int failed;
};

struct thread_hooks *thread_hooks_new(struct bpf_object *obj)
{
	const char *env = getenv("BPFPY_THREAD_HOOKS");
	struct thread_hooks *h;

	if (!obj || (env && !strcmp(env, "0")))
		return NULL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->spawn = bpf_object__find_program_by_name(obj, "on_thread_spawn");
	h->clear = bpf_object__find_program_by_name(obj, "on_tstate_clear");
	h->clone = bpf_object__find_program_by_name(obj, "on_thread_clone");
	h->exit = bpf_object__find_program_by_name(obj, "on_thread_exit");
	if (!h->spawn || !h->clear || !h->clone || !h->exit) {
		free(h);
		return NULL;
	}
	return h;
}

/* The host's clone and exit tracepoints, once, with the first process. */
static int attach_host(struct thread_hooks *h, struct diag *d)
{
	if (h->clone_link && h->exit_link)
		return 0;
	if (!h->clone_link)
		h->clone_link = bpf_program__attach(h->clone);
	if (!h->exit_link)
		h->exit_link = bpf_program__attach(h->exit);
	if (!h->clone_link || !h->exit_link)
		return diag_errno(d, errno, "cannot attach the thread clone and exit tracepoints");
	return 0;
}

int thread_hooks_add(struct thread_hooks *h, pid_t pid, const struct py_binary *b, uint32_t hex,
		     struct diag *d)
{
	const char *spawn = py_thread_spawn_symbol(hex);
	uint64_t soff = py_binary_hook_offset(b, spawn);
	uint64_t coff = py_binary_hook_offset(b, PY_TSTATE_CLEAR_SYMBOL);
	LIBBPF_OPTS(bpf_uprobe_opts, o);
	struct hooked k = {.pid = pid};
	char fd_path[64];
	int fd, err;

	if (!h)
		return 0;
	h->failed++; /* until it is attached */
	if (!spawn || !soff || !coff)
		return diag_set(d, EXIT_UNSUPPORTED, "pid %d: %s has no %s and %s to hook", pid,
				b->path, spawn ? spawn : "known spawn function",
				PY_TSTATE_CLEAR_SYMBOL);
	if (h->n == h->cap) {
		int cap = h->cap ? h->cap * 2 : 16;
		struct hooked *nv = realloc(h->v, (size_t)cap * sizeof(*nv));

		if (!nv)
			return diag_errno(d, ENOMEM, "thread hooks");
		h->v = nv;
		h->cap = cap;
	}
	if (attach_host(h, d))
		return -1;
	/* The kernel resolves the path we give: hand it the inode the one
	 * safe opener checked, as trace does for its probes. */
	fd = proc_target_file_open(pid, b->path, d);
	if (fd < 0)
		return -1;
	snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%d", fd);
	k.spawn = bpf_program__attach_uprobe_opts(h->spawn, pid, fd_path, (size_t)soff, &o);
	err = errno;
	if (k.spawn) {
		k.clear = bpf_program__attach_uprobe_opts(h->clear, pid, fd_path, (size_t)coff, &o);
		err = errno;
	}
	close(fd);
	if (!k.spawn || !k.clear) {
		bpf_link__destroy(k.spawn);
		return diag_errno(d, err, "pid %d: cannot attach the thread hooks to %s (%s, %s)",
				  pid, b->path, spawn, PY_TSTATE_CLEAR_SYMBOL);
	}
	h->v[h->n++] = k;
	h->failed--;
	return 0;
}

void thread_hooks_remove(struct thread_hooks *h, pid_t pid)
{
	for (int i = 0; h && i < h->n; i++)
		if (h->v[i].pid == pid) {
			bpf_link__destroy(h->v[i].spawn);
			bpf_link__destroy(h->v[i].clear);
			h->v[i] = h->v[--h->n];
			return;
		}
}

void thread_hooks_stats(const struct thread_hooks *h, int *watched, int *failed)
{
	*watched = h ? h->n : 0;
	*failed = h ? h->failed : 0;
}

void thread_hooks_free(struct thread_hooks *h)
{
	if (!h)
		return;
	for (int i = 0; i < h->n; i++) {
		bpf_link__destroy(h->v[i].spawn);
		bpf_link__destroy(h->v[i].clear);
	}
	bpf_link__destroy(h->clone_link);
	bpf_link__destroy(h->exit_link);
	free(h->v);
	free(h);
}
