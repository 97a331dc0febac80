// SPDX-License-Identifier: MIT
/*
 * dump --async: the asyncio task tree of a process (user/python/py_asyncio.c
 * reads it), printed as a tree from each root task down through the tasks
 * that await it, or as JSON. The target is stopped for the read like any
 * dump (unless --nonblocking); names and lines are read after the resume.
 */
#include "dump_async.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "code_cache.h"
#include "monotime.h"
#include "ptrace_stop.h"
#include "py_asyncio.h"
#include "signals.h"
#include "text_escape.h"

struct adump {
	struct py_process *p;
	struct py_asyncio a;
	struct py_task_graph g;
	struct code_cache *cache;
	uint64_t stopped_ns;
	int nread;
	struct diag *d;
	/* children[i]: index of the first task whose awaiter is task i, then
	 * next[] links siblings; -1 ends. */
	int *first, *next;
	uint8_t *shown;
};

static int read_stopped(void *arg, struct stopper *s)
{
	struct adump *c = arg;
	uint64_t t0 = mono_ns();

	c->nread = py_asyncio_read(c->p, &c->a, &c->g, c->d);
	c->stopped_ns = mono_ns() - t0 + s->last_stop_latency_ns;
	return c->nread < 0 ? -1 : 0;
}

static void link_children(struct adump *c)
{
	for (size_t i = 0; i < c->g.n; i++)
		c->first[i] = c->next[i] = -1;
	/* Backwards, so that siblings come out in address order. */
	for (size_t i = c->g.n; i-- > 0;) {
		const struct py_task *w =
		    c->g.v[i].awaiter ? py_task_find(&c->g, c->g.v[i].awaiter) : NULL;

		if (!w)
			continue;
		c->next[i] = c->first[w - c->g.v];
		c->first[w - c->g.v] = (int)i;
	}
}

static void put_frames(struct adump *c, const struct py_task *t, int indent)
{
	for (unsigned f = 0; f < t->nframes; f++) {
		struct sym_frame sf;

		code_cache_symbolize(c->cache, &t->frames[f], &sf);
		printf("%*s", indent + 4, "");
		text_put(stdout, sf.name);
		printf(" (");
		text_put(stdout, sf.file);
		if (sf.line >= 0)
			printf(":%d", sf.line);
		printf(")\n");
	}
	if (t->frames_cut)
		printf("%*s<coroutine chain cut at %d links>\n", indent + 4, "", PY_TASK_FRAMES);
	code_cache_end_sample(c->cache);
}

static void put_task(struct adump *c, size_t i, int depth)
{
	const struct py_task *t = &c->g.v[i];
	const struct py_task *w = t->awaiter ? py_task_find(&c->g, t->awaiter) : NULL;
	int indent = 2 * (depth < 32 ? depth : 32);

	c->shown[i] = 1;
	printf("%*s", indent, "");
	text_put(stdout, t->name);
	printf(" [%s", py_task_state_name(t->state));
	if (t->tid)
		printf(", thread %u", t->tid);
	printf("] 0x%" PRIx64, t->addr);
	if (w) {
		printf(", awaited by ");
		text_put(stdout, w->name);
		if (t->nawaiters > 1)
			printf(" (and %u more)", t->nawaiters - 1);
	}
	printf("\n");
	put_frames(c, t, indent);
	if (depth >= PY_TASK_CHAIN_MAX)
		return;
	for (int k = c->first[i]; k >= 0; k = c->next[k])
		if (!c->shown[k])
			put_task(c, (size_t)k, depth + 1);
}

static void print_text(struct adump *c, int nonblocking)
{
	const struct py_process *p = c->p;
	size_t counts[4] = {0};

	for (size_t i = 0; i < c->g.n; i++)
		counts[c->g.v[i].state & 3]++;
	printf("Process %d (", p->pid);
	text_put(stdout, p->comm);
	printf("): CPython ");
	text_put(stdout, p->version);
	printf("\nTasks: %zu (%zu running, %zu pending, %zu done, %zu cancelled)\n", c->g.n,
	       counts[PY_TASK_RUNNING], counts[PY_TASK_PENDING], counts[PY_TASK_DONE],
	       counts[PY_TASK_CANCELLED]);
	for (size_t i = 0; i < c->g.n; i++)
		if (!c->g.v[i].awaiter || !py_task_find(&c->g, c->g.v[i].awaiter)) {
			printf("\n");
			put_task(c, i, 0);
		}
	/* Tasks only reachable through a cycle of awaiters (hostile, or torn). */
	for (size_t i = 0; i < c->g.n; i++)
		if (!c->shown[i]) {
			printf("\n<in a cycle of awaiters>\n");
			put_task(c, i, 0);
		}
	if (c->g.cut_tasks || c->g.cut_sets || c->g.cut_chains || c->g.unreadable || c->g.bad_names)
		printf("\nasync: %" PRIu64 " tasks not read (over %u), %" PRIu64
		       " sets cut, %" PRIu64 " chains cut, %" PRIu64 " tasks unreadable, %" PRIu64
		       " names neither str nor int\n",
		       c->g.cut_tasks, PY_TASKS_MAX, c->g.cut_sets, c->g.cut_chains,
		       c->g.unreadable, c->g.bad_names);
	if (!nonblocking)
		printf("\nStopped the target for %.1f us.\n", c->stopped_ns / 1000.0);
}

static json_object *addr_json(uint64_t a)
{
	char buf[32];

	if (!a)
		return NULL;
	snprintf(buf, sizeof(buf), "0x%" PRIx64, a);
	return json_object_new_string(buf);
}

static void print_json(struct adump *c, int nonblocking)
{
	json_object *root = json_object_new_object(), *tasks = json_object_new_array(), *cut;

	json_object_object_add(root, "pid", json_object_new_int(c->p->pid));
	json_object_object_add(root, "version", json_object_new_string(c->p->version));
	json_object_object_add(root, "blocking", json_object_new_boolean(!nonblocking));
	json_object_object_add(root, "stopped_us",
			       nonblocking ? NULL : json_object_new_double(c->stopped_ns / 1000.0));
	for (size_t i = 0; i < c->g.n; i++) {
		const struct py_task *t = &c->g.v[i];
		const struct py_task *w = t->awaiter ? py_task_find(&c->g, t->awaiter) : NULL;
		json_object *jt = json_object_new_object(), *frames = json_object_new_array();

		json_object_object_add(jt, "address", addr_json(t->addr));
		json_object_object_add(jt, "name", json_object_new_string(t->name));
		json_object_object_add(jt, "state",
				       json_object_new_string(py_task_state_name(t->state)));
		json_object_object_add(jt, "thread", t->tid ? json_object_new_int64(t->tid) : NULL);
		json_object_object_add(jt, "awaiter", addr_json(w ? w->addr : 0));
		json_object_object_add(jt, "awaiter_name",
				       w ? json_object_new_string(w->name) : NULL);
		json_object_object_add(jt, "awaiters", json_object_new_int64(t->nawaiters));
		for (unsigned f = 0; f < t->nframes; f++) {
			json_object *jf = json_object_new_object();
			struct sym_frame sf;

			code_cache_symbolize(c->cache, &t->frames[f], &sf);
			json_object_object_add(jf, "name", json_object_new_string(sf.name));
			json_object_object_add(jf, "file", json_object_new_string(sf.file));
			json_object_object_add(jf, "line", json_object_new_int(sf.line));
			json_object_array_add(frames, jf);
		}
		code_cache_end_sample(c->cache);
		json_object_object_add(jt, "frames", frames);
		json_object_object_add(jt, "frames_cut", json_object_new_boolean(t->frames_cut));
		json_object_array_add(tasks, jt);
	}
	json_object_object_add(root, "tasks", tasks);
	cut = json_object_new_object();
	json_object_object_add(cut, "tasks_not_read",
			       json_object_new_int64((int64_t)c->g.cut_tasks));
	json_object_object_add(cut, "sets", json_object_new_int64((int64_t)c->g.cut_sets));
	json_object_object_add(cut, "chains", json_object_new_int64((int64_t)c->g.cut_chains));
	json_object_object_add(cut, "unreadable", json_object_new_int64((int64_t)c->g.unreadable));
	json_object_object_add(cut, "bad_names", json_object_new_int64((int64_t)c->g.bad_names));
	json_object_object_add(root, "cut", cut);
	printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
								JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(root);
}

int dump_async(struct py_process *p, int nonblocking, int json, struct diag *d)
{
	struct adump c = {.p = p, .d = d};
	int ret = EXIT_OK;

	if (py_asyncio_init(p, &c.a, d))
		return diag_report(d);
	if (!py_asyncio_find(p, &c.a)) {
		diag_set(d, EXIT_FAIL, "pid %d: asyncio is not imported (no task can exist)",
			 p->pid);
		return diag_report(d);
	}
	c.cache = code_cache_new(&p->mem, &p->cfg.off, 0);
	if (!c.cache) {
		diag_errno(d, ENOMEM, "dump --async");
		return diag_report(d);
	}
	if (nonblocking) {
		c.nread = py_asyncio_read(p, &c.a, &c.g, d);
		if (c.nread < 0)
			ret = EXIT_FAIL;
	} else if (signals_install(d) || stopper_with_stopped(p->pid, read_stopped, &c, d)) {
		ret = EXIT_FAIL;
	}
	if (ret == EXIT_OK) {
		/* After the resume: names cost the target nothing. */
		py_asyncio_name(p, &c.a, &c.g);
		c.first = calloc(c.g.n + 1, sizeof(int));
		c.next = calloc(c.g.n + 1, sizeof(int));
		c.shown = calloc(c.g.n + 1, 1);
		if (!c.first || !c.next || !c.shown) {
			diag_errno(d, ENOMEM, "dump --async");
			ret = EXIT_FAIL;
		}
	}
	if (ret == EXIT_OK) {
		link_children(&c);
		if (json)
			print_json(&c, nonblocking);
		else
			print_text(&c, nonblocking);
	} else {
		py_process_execd(p, d);
		ret = diag_report(d);
	}
	free(c.first);
	free(c.next);
	free(c.shown);
	code_cache_free(c.cache);
	py_task_graph_free(&c.g);
	return ret;
}
