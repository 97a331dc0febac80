// SPDX-License-Identifier: MIT
/*
 * threading names out of a live target. See py_threads.h.
 *
 * Why _native_id and not the dict's key alone: the key is the pthread_t,
 * which the samples do not carry (they carry the kernel's tid), and
 * before 3.11 no thread state records the tid either; Thread._native_id
 * (3.8+) is the tid as the target's PID namespace sees it. Both are kept:
 * dump matches the pthread_t of each thread state it walked.
 */
#include "py_threads.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc_ns.h"
#include "pystr.h"

/* Interpreters followed to find the main one (the list's last). */
static int read_ptr(struct mem_reader *r, uint64_t addr, uint64_t *out)
{
	return mem_read(r, out, sizeof(*out), addr);
}

/* The modules dict's keys object and entry count: what changes with every
 * import (py_tnames.miss_keys). 0, or -1 if unreadable. */
static int modules_stamp(struct mem_reader *r, const struct py_objlayout *L, uint64_t modules,
			 uint64_t *keys, uint64_t *nentries)
{
	if (read_ptr(r, modules + L->dict_keys, keys) || !*keys ||
	    read_ptr(r, *keys + L->keys_nentries, nentries))
		return -1;
	return 0;
}

/* threading._active of the main interpreter, or 0. A search that finds
 * no threading module is remembered in t and not repeated until the
 * modules dict gains an entry. */
static uint64_t find_active(struct py_process *p, struct py_tnames *t)
{
	const struct py_objlayout *L = &p->extra.obj;
	const struct py_offsets *o = &p->cfg.off;
	struct mem_reader *r = &p->mem;
	static const char *const tname[] = {"threading"}, *const aname[] = {"_active"};
	uint64_t modules, mod, md, active, keys, nentries;
	int stamped, found;

	if (!(modules = pyobj_main_modules(r, o, L, p->cfg.runtime_addr)))
		return 0;
	stamped = !modules_stamp(r, L, modules, &keys, &nentries);
	if (stamped && t->miss_keys == keys && t->miss_nentries == nentries)
		return 0; /* no import since the last search */
	found = pydict_get(r, o, L, modules, tname, &mod, 1);
	if (found == 0 && stamped) {
		t->miss_keys = keys;
		t->miss_nentries = nentries;
	}
	if (found != 1 || read_ptr(r, mod + L->module_dict, &md) ||
	    pydict_get(r, o, L, md, aname, &active, 1) != 1)
		return 0;
	return active;
}

struct collect {
	struct py_process *p;
	struct py_tnames *t;
	size_t n0;		/* entries before this scan */
	struct pyobj_memo memo; /* every Thread has the same few classes */
};

static int collect_one(void *ctx, uint64_t key, uint64_t thread)
{
	static const char *const names[] = {"_name", "_native_id"};
	struct collect *c = ctx;
	struct py_process *p = c->p;
	const struct py_objlayout *L = &p->extra.obj;
	struct py_tname *e;
	uint64_t vals[2], ident, tid = 0;

	if (c->t->n - c->n0 >= PY_TNAMES_MAX)
		return 1;
	if (pylong_read_u64(&p->mem, L, key, &ident) ||
	    pyobj_attrs(&p->mem, &p->cfg.off, L, &c->memo, thread, names, vals, 2) < 1 || !vals[0])
		return 0;
	if (c->t->n == c->t->cap) {
		size_t ncap = c->t->cap ? c->t->cap * 2 : 16;
		struct py_tname *v = realloc(c->t->v, ncap * sizeof(*v));

		if (!v)
			return -1;
		c->t->v = v;
		c->t->cap = ncap;
	}
	e = &c->t->v[c->t->n];
	if (pystr_read(&p->mem, &p->cfg.off, vals[0], e->name, sizeof(e->name)) <= 0)
		return 0;
	/* None until the thread started (and the None object holds no int:
	 * it is skipped by address where known, by range otherwise). */
	if (vals[1] && vals[1] != p->cfg.none_addr &&
	    (pylong_read_u64(&p->mem, L, vals[1], &tid) || tid > UINT32_MAX))
		tid = 0;
	e->ident = ident;
	e->tid = (uint32_t)tid;
	c->t->n++;
	return 0;
}

/* _native_id is the target's own tid: in a container, translate it (the
 * entries from n0 on, those just read). */
static void host_tids(struct py_process *p, struct py_tnames *t, size_t n0)
{
	struct diag d = {0};
	struct ns_tids nt;

	if (t->n <= n0 || !proc_ns_pid_nested(p->pid))
		return;
	if (proc_ns_tids_read(p->pid, &nt, &d)) {
		for (size_t i = n0; i < t->n; i++)
			t->v[i].tid = 0;
		return;
	}
	for (size_t i = n0; i < t->n; i++)
		t->v[i].tid = t->v[i].tid ? proc_ns_host_tid(&nt, t->v[i].tid) : 0;
	proc_ns_tids_free(&nt);
}

/* Scan _active into t: from where the last scan ended (incremental), or
 * from the start. Then the names of this scan are t->v[n0..n). */
static int scan_active(struct py_process *p, struct py_tnames *t, int incremental, struct diag *d)
{
	size_t n0 = t->n;
	struct collect c = {.p = p, .t = t, .n0 = n0};
	int rc = -1;

	if (!p->extra.obj.keys_model)
		return 0;
	if (!incremental)
		t->pos = (struct pydict_pos){0};
	/* The cached dict first: it lives as long as the module does. */
	for (int pass = 0; pass < 2 && rc < 0; pass++) {
		if (!t->active || pass) {
			t->active = find_active(p, t);
			t->pos = (struct pydict_pos){0};
		}
		if (!t->active)
			break;
		t->n = n0;
		rc = pydict_scan_new(&p->mem, &p->extra.obj, t->active, &t->pos, collect_one, &c);
	}
	if (rc < 0) {
		t->n = n0;
		if (p->mem.last_errno == ESRCH || p->mem.last_errno == EPERM)
			return diag_errno(d, p->mem.last_errno,
					  "pid %d: cannot read threading names", (int)p->pid);
		return 0;
	}
	host_tids(p, t, n0);
	if (t->pos.full && n0) { /* a scan from the start replaces the old names */
		memmove(t->v, t->v + n0, (t->n - n0) * sizeof(*t->v));
		t->n -= n0;
	}
	return (int)t->n;
}

int py_tnames_read(struct py_process *p, struct py_tnames *t, struct diag *d)
{
	t->n = 0;
	return scan_active(p, t, 0, d);
}

int py_tnames_update(struct py_process *p, struct py_tnames *t, struct diag *d)
{
	/* Names of ended threads pile up: past the cap, start afresh. */
	if (t->n >= PY_TNAMES_MAX)
		return py_tnames_read(p, t, d);
	return scan_active(p, t, 1, d);
}

const char *py_tnames_find(const struct py_tnames *t, uint32_t tid, uint64_t ident)
{
	for (size_t i = t->n; i-- > 0;)
		if ((tid && t->v[i].tid == tid) || (ident && t->v[i].ident == ident))
			return t->v[i].name;
	return NULL;
}

const char *py_tnames_lookup(struct py_process *p, struct py_tnames *t, uint32_t tid)
{
	struct diag d = {0};
	const char *name = py_tnames_find(t, tid, 0);

	if (name || !p)
		return name;
	if (py_tnames_update(p, t, &d) < 0)
		return NULL;
	return py_tnames_find(t, tid, 0);
}

void py_tnames_free(struct py_tnames *t)
{
	free(t->v);
	memset(t, 0, sizeof(*t));
}
