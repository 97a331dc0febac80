// SPDX-License-Identifier: MIT
#include "py_asyncio.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf_file.h"
#include "proc_maps.h"
#include "pyobj.h"
#include "pystr.h"
#include "stack_reader.h"
#include "walker_user.h"
#include "task_walker.h"

/* What a type object is to the task reader, by its tp_name. */
enum tkind {
	TK_OTHER = 0,
	TK_CORO, /* "coroutine" */
	TK_GEN,	 /* "generator" */
	TK_STR,
	TK_INT,
	TK_METHOD, /* "method": a bound method */
	TK_GATHER, /* "_GatheringFuture": asyncio.gather's future */
};

/* PyTypeObject.tp_name: after the variable-size object header in every
 * version (the debug offsets of 3.13+ say 24 as well). */
#define TYPE_TP_NAME 24

static int rd(struct mem_reader *r, uint64_t addr, uint64_t *v)
{
	*v = 0;
	return mem_read(r, v, sizeof(*v), addr);
}

static int type_kind(struct py_process *p, struct py_asyncio *a, uint64_t type)
{
	static const struct {
		const char *name;
		int kind;
	} names[] = {{"coroutine", TK_CORO}, {"generator", TK_GEN},
		     {"str", TK_STR},	     {"int", TK_INT},
		     {"method", TK_METHOD},  {"_GatheringFuture", TK_GATHER}};
	uint64_t tp_name;
	char buf[24];
	int kind = TK_OTHER;

	if (!type)
		return TK_OTHER;
	for (unsigned i = 0; i < a->ntypes; i++)
		if (a->types[i].type == type)
			return a->types[i].kind;
	if (rd(&p->mem, type + TYPE_TP_NAME, &tp_name) || !tp_name)
		return TK_OTHER; /* unreadable: not remembered, asked again */
	memset(buf, 0, sizeof(buf));
	if (mem_read(&p->mem, buf, sizeof(buf) - 1, tp_name))
		return TK_OTHER;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(buf, names[i].name))
			kind = names[i].kind;
	/* A ring: a target with more types than slots only costs reads. */
	a->types[a->next_type].type = type;
	a->types[a->next_type].kind = (uint8_t)kind;
	a->next_type = (a->next_type + 1) % PY_TASK_TYPES;
	if (a->ntypes < PY_TASK_TYPES)
		a->ntypes++;
	return kind;
}

static uint64_t field_u64(const uint8_t *b, unsigned off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

static int kind_of(struct py_process *p, struct py_asyncio *a, uint64_t obj)
{
	uint64_t type;

	if (!obj || rd(&p->mem, obj + p->cfg.off.ob_type, &type))
		return TK_OTHER;
	return type_kind(p, a, type);
}

/* ---- layout ------------------------------------------------------------ */

struct find_sec {
	uint8_t buf[PY_ASYNCIO_DEBUG_SIZE];
	int found;
};

/* The .AsyncioDebug section of the file at path (a target's), if any. */
static int section_of(pid_t pid, const char *path, struct find_sec *f)
{
	struct diag d = {0};
	struct elfsym *e = elfsym_open_target(pid, path, &d);
	uint64_t addr, size;
	int rc = -1;

	if (!e)
		return -1;
	if (!elfsym_section(e, ".AsyncioDebug", &addr, &size) && size >= PY_ASYNCIO_DEBUG_SIZE &&
	    !elfsym_read(e, addr, f->buf, PY_ASYNCIO_DEBUG_SIZE)) {
		f->found = 1;
		rc = 0;
	}
	elfsym_close(e);
	return rc;
}

/* 3.14: in the _asyncio extension, once imported; 3.15: in the file that
 * holds the interpreter. Each mapped file is tried once. */
static int find_section(struct py_process *p, struct find_sec *f, struct diag *d)
{
	struct proc_maps m = {0};
	const char *last = NULL;

	if (proc_maps_read(p->pid, &m, d))
		return -1;
	for (size_t i = 0; i < m.n && !f->found; i++) {
		const char *path = m.v[i].path, *base;

		if (!proc_map_is_file(&m.v[i]) || (last && !strcmp(last, path)))
			continue;
		last = path;
		base = strrchr(path, '/');
		base = base ? base + 1 : path;
		if (strncmp(base, "_asyncio.", 9) && strncmp(base, "python", 6) &&
		    strncmp(base, "libpython", 9))
			continue;
		section_of(p->pid, path, f);
	}
	proc_maps_free(&m);
	return 0;
}

int py_asyncio_init(struct py_process *p, struct py_asyncio *a, struct diag *d)
{
	struct find_sec f = {0};
	uint32_t hex = p->cfg.off.version_hex;

	memset(a, 0, sizeof(*a));
	/* 3.11-3.13 from the tables; <= 3.10 refused there. */
	if (!py_at_least(hex, 14)) {
		if (py_async_offsets(&p->cfg.off, NULL, 0, &p->extra, d))
			return -1;
		py_asyncio_find(p, a);
		return 0;
	}
	if (find_section(p, &f, d))
		return -1;
	if (!f.found)
		return 0; /* 3.14 before `import asyncio`: py_asyncio_find looks again */
	if (py_async_offsets(&p->cfg.off, f.buf, sizeof(f.buf), &p->extra, d))
		return -1;
	py_asyncio_find(p, a);
	return 0;
}

/* The kernel's part, from the layouts (bpfpy.h struct async_config). */
static void kernel_config(struct py_process *p, struct py_asyncio *a)
{
	const struct py_async *as = &p->extra.async;
	const struct py_objlayout *L = &p->extra.obj;

	memset(&a->k, 0, sizeof(a->k));
	a->k.current_tasks = as->model == PY_ASYNC_SETS ? a->current : 0;
	a->k.tstate_running_task = (uint16_t)as->tstate_running_task;
	a->k.task_coro = as->task_coro;
	a->k.task_name = as->task_name;
	a->k.gen_iframe = as->coro.gen_iframe;
	a->k.gen_owner = as->gen_owner;
	a->k.dict_keys = L->dict_keys;
	a->k.keys_log2_index_bytes = L->keys_index_bytes;
	a->k.keys_nentries = L->keys_nentries;
	a->k.keys_indices = L->keys_indices;
	/* The first awaiter: awaited_by where the version keeps it (3.14+),
	 * else the done callbacks (3.11-3.13). */
	a->k.task_awaited_by = as->task_awaited_by;
	a->k.task_awaited_by_is_set = as->task_awaited_by_is_set;
	a->k.task_is_task = as->task_is_task;
	a->k.set_used = as->set_used;
	a->k.set_mask = as->set_mask;
	a->k.set_table = as->set_table;
	a->k.task_callback0 = as->task_callback0;
	a->k.task_callbacks = as->task_awaited_by ? 0 : as->task_callbacks;
	a->k.list_size = as->list_size;
	a->k.list_items = as->list_items;
	a->k.tuple_items = L->tuple_items;
	a->k.cfunc_ml = as->cfunc_ml;
	a->k.cfunc_self = as->cfunc_self;
	memcpy(a->k.wakeup_name, as->wakeup_name, sizeof(a->k.wakeup_name));
	a->k.ob_type = p->cfg.off.ob_type;
	a->k.coro = as->coro;
}

int py_asyncio_find(struct py_process *p, struct py_asyncio *a)
{
	static const char *const modname[] = {"asyncio.tasks"};
	static const char *const names[] = {"Task", "_all_tasks", "_scheduled_tasks",
					    "_eager_tasks", "_current_tasks"};
	const struct py_objlayout *L = &p->extra.obj;
	uint64_t modules, mod, md, v[5] = {0};

	if (a->ready)
		return 1;
	if (p->extra.async.model == PY_ASYNC_NONE && py_at_least(p->cfg.off.version_hex, 14)) {
		struct find_sec f = {0};
		struct diag d = {0};

		if (find_section(p, &f, &d) || !f.found ||
		    py_async_offsets(&p->cfg.off, f.buf, sizeof(f.buf), &p->extra, &d))
			return 0;
	}
	if (p->extra.async.model == PY_ASYNC_DEBUG) {
		kernel_config(p, a);
		return a->ready = 1;
	}
	if (p->extra.async.model != PY_ASYNC_SETS || !L->keys_model)
		return 0;
	if (!(modules = pyobj_main_modules(&p->mem, &p->cfg.off, L, p->cfg.runtime_addr)) ||
	    pydict_get(&p->mem, &p->cfg.off, L, modules, modname, &mod, 1) != 1 ||
	    rd(&p->mem, mod + L->module_dict, &md) ||
	    pydict_get(&p->mem, &p->cfg.off, L, md, names, v, 5) < 2 || !v[0] || !v[4])
		return 0;
	a->task_type = v[0];
	a->all_tasks = v[1];
	a->scheduled = v[2];
	a->eager = v[3];
	a->current = v[4];
	kernel_config(p, a);
	return a->ready = 1;
}

/* ---- reading tasks --------------------------------------------------- */

struct reader {
	struct py_process *p;
	struct py_asyncio *a;
	struct py_task_graph *g;
	struct pyobj_memo memo;
};

static int is_task(struct reader *rd_, uint64_t obj)
{
	const struct py_async *as = &rd_->p->extra.async;
	uint64_t type;

	if (!obj)
		return 0;
	if (as->model == PY_ASYNC_DEBUG) {
		uint8_t t = 0;

		return !mem_read(&rd_->p->mem, &t, 1, obj + as->task_is_task) && t == 1;
	}
	return !rd(&rd_->p->mem, obj + rd_->p->cfg.off.ob_type, &type) && type == rd_->a->task_type;
}

static struct py_task *add_task(struct reader *R, uint64_t addr)
{
	struct py_task_graph *g = R->g;

	g->found++;
	if (g->n >= PY_TASKS_MAX) {
		g->cut_tasks++;
		return NULL;
	}
	if (g->n == g->cap) {
		size_t ncap = g->cap ? g->cap * 2 : 64;
		struct py_task *v = realloc(g->v, ncap * sizeof(*v));

		if (!v)
			return NULL;
		g->v = v;
		g->cap = ncap;
	}
	memset(&g->v[g->n], 0, sizeof(g->v[0]));
	g->v[g->n].addr = addr;
	return &g->v[g->n++];
}

/* Call fn with the keys of the set at set (PySetObject: a table of
 * (key, hash) entries, mask + 1 of them), up to 128 at a time, empty slots
 * left out. Dummies are passed too: fn checks what it gets. */
typedef void (*keys_fn)(struct reader *, const uint64_t *, size_t, uint64_t);

static void set_each(struct reader *R, uint64_t set, keys_fn fn, uint64_t arg)
{
	const struct py_async *as = &R->p->extra.async;
	uint64_t mask, table, chunk[2 * 128], keys[128];

	if (!set || rd(&R->p->mem, set + as->set_mask, &mask) ||
	    rd(&R->p->mem, set + as->set_table, &table) || !table)
		return;
	if (mask >= PY_TASK_SET_MAX) {
		R->g->cut_sets++;
		mask = PY_TASK_SET_MAX - 1;
	}
	for (uint64_t i = 0; i <= mask; i += 128) {
		uint64_t n = mask + 1 - i < 128 ? mask + 1 - i : 128;
		size_t nk = 0;

		if (mem_read(&R->p->mem, chunk, n * 16, table + i * 16))
			return;
		for (uint64_t k = 0; k < n; k++)
			if (chunk[2 * k])
				keys[nk++] = chunk[2 * k];
		if (nk)
			fn(R, keys, nk, arg);
	}
}

/* Add the objects among objs[0..n) that are tasks: their headers in one
 * call (mem_read_each), where a task's type is asyncio's Task, or (3.14+)
 * its is_task byte is set. */
static void add_tasks(struct reader *R, const uint64_t *objs, size_t n, uint64_t unused)
{
	const struct py_async *as = &R->p->extra.async;
	uint8_t hdr[128][16], ok[128];

	(void)unused;
	if (n > 128)
		n = 128;
	if (as->model == PY_ASYNC_DEBUG) {
		for (size_t k = 0; k < n; k++)
			if (is_task(R, objs[k]))
				add_task(R, objs[k]);
		return;
	}
	mem_read_each(&R->p->mem, hdr, sizeof(hdr[0]), objs, n, ok);
	for (size_t k = 0; k < n; k++)
		if (ok[k] && objs[k] && field_u64(hdr[k], R->p->cfg.off.ob_type) == R->a->task_type)
			add_task(R, objs[k]);
}

/* The referents of the weak references refs[0..n), then those that are
 * tasks: two calls for up to 128. */
static void add_weak_tasks(struct reader *R, const uint64_t *refs, size_t n, uint64_t unused)
{
	uint8_t wr[128][24], ok[128];
	uint64_t objs[128];
	size_t no = 0;

	if (n > 128)
		n = 128;
	mem_read_each(&R->p->mem, wr, sizeof(wr[0]), refs, n, ok);
	for (size_t k = 0; k < n; k++)
		if (ok[k])
			objs[no++] = field_u64(wr[k], R->p->extra.async.weakref_object);
	if (no)
		add_tasks(R, objs, no, unused);
}

/* A WeakSet's tasks: its "data" set of weak references. */
static void weakset_tasks(struct reader *R, uint64_t ws)
{
	static const char *const data[] = {"data"};
	uint64_t set = 0;

	if (ws && pyobj_attrs(&R->p->mem, &R->p->cfg.off, &R->p->extra.obj, &R->memo, ws, data,
			      &set, 1) == 1)
		set_each(R, set, add_weak_tasks, 0);
}

/* 3.14+: a circular list of task_node links from head (an llist_node). */
static void list_tasks(struct reader *R, uint64_t head)
{
	const struct py_async *as = &R->p->extra.async;
	uint64_t node;

	if (rd(&R->p->mem, head, &node))
		return;
	for (uint64_t i = 0; node && node != head; i++) {
		if (i >= PY_TASKS_MAX) {
			R->g->cut_tasks++;
			return;
		}
		add_task(R, node - as->task_node);
		if (rd(&R->p->mem, node, &node))
			return;
	}
}

static int cmp_task(const void *x, const void *y)
{
	const struct py_task *a = x, *b = y;

	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

const struct py_task *py_task_find(const struct py_task_graph *g, uint64_t addr)
{
	struct py_task key = {.addr = addr};

	if (!g->n)
		return NULL;
	return bsearch(&key, g->v, g->n, sizeof(*g->v), cmp_task);
}

/* Sort and drop repeats (a task in two sets, or met twice in a torn
 * list): one entry per address. */
static void dedup(struct py_task_graph *g)
{
	size_t w = 0;

	qsort(g->v, g->n, sizeof(*g->v), cmp_task);
	for (size_t i = 0; i < g->n; i++)
		if (!w || g->v[w - 1].addr != g->v[i].addr)
			g->v[w++] = g->v[i];
	g->n = w;
}

static void name_obj(struct reader *R, uint64_t name, char *out, size_t cap)
{
	uint64_t n;

	out[0] = 0;
	switch (kind_of(R->p, R->a, name)) {
	case TK_STR:
		if (pystr_read(&R->p->mem, &R->p->cfg.off, name, out, cap) > 0)
			return;
		break;
	case TK_INT:
		/* 3.12+ keep an unnamed task's number and format it when
		 * asked, as get_name() does. */
		if (!pylong_read_u64(&R->p->mem, &R->p->extra.obj, name, &n)) {
			snprintf(out, cap, "Task-%" PRIu64, n);
			return;
		}
		break;
	}
	R->g->bad_names++;
	out[0] = 0;
}

/* Bytes of a task object read at once (TaskObj is 144 to 176 bytes). */
#define TASK_BLOCK 512

/* A task's fields and state, from its object's first bytes (tb). */
static void parse_task(struct reader *R, struct py_task *t, const uint8_t *tb)
{
	const struct py_async *as = &R->p->extra.async;
	uint32_t state;

	t->coro = field_u64(tb, as->task_coro);
	t->name_obj = field_u64(tb, as->task_name);
	t->waiter = field_u64(tb, as->task_fut_waiter);
	t->callback0 = field_u64(tb, as->task_callback0);
	if (as->task_awaited_by) {
		t->awaited_by = field_u64(tb, as->task_awaited_by);
		t->awaited_by_is_set = tb[as->task_awaited_by_is_set];
	}
	memcpy(&state, tb + as->task_state, sizeof(state));
	t->state = state == PY_FUT_FINISHED    ? PY_TASK_DONE
		   : state == PY_FUT_CANCELLED ? PY_TASK_CANCELLED
					       : PY_TASK_PENDING;
}

/* Tasks read per batch: a handful of process_vm_readv calls for all of
 * them (mem_read_each): their objects, then their chains level by level
 * (each coroutine's block, then the slots holding what it awaits), then
 * the headers of what they wait on. */
#define TASK_BATCH 64

struct chain_walk {
	uint64_t gen;
	unsigned n, k; /* links so far; index of its task in the batch */
	struct frame_rec chain[PY_TASK_FRAMES];
};

/* Store the chain walked, outermost first as followed, leaf first. */
static void chain_done(struct py_task *t, const struct chain_walk *w)
{
	t->nframes = (uint8_t)w->n;
	for (unsigned f = 0; f < w->n; f++)
		t->frames[f] = w->chain[w->n - 1 - f];
}

static void read_chains(struct reader *R, struct py_task *const *ts, size_t n)
{
	const struct py_async *as = &R->p->extra.async;
	static struct chain_walk w[TASK_BATCH];
	static uint8_t cb[TASK_BATCH][CORO_BLOCK + 8];
	uint64_t addrs[TASK_BATCH], slots[TASK_BATCH], aw[TASK_BATCH];
	uint8_t ok[TASK_BATCH];
	size_t na = 0;

	for (size_t k = 0; k < n; k++)
		if (ts[k]->coro)
			w[na++] = (struct chain_walk){.gen = ts[k]->coro, .k = (unsigned)k};
	/* Each turn moves every chain still going one link on. */
	for (unsigned depth = 0; na && depth <= PY_TASK_FRAMES; depth++) {
		size_t nn = 0, ns = 0;

		for (size_t i = 0; i < na; i++)
			addrs[i] = w[i].gen;
		mem_read_each(&R->p->mem, cb, sizeof(cb[0]), addrs, na, ok);
		for (size_t i = 0; i < na; i++) {
			struct py_task *t = ts[w[i].k];
			struct coro_link l;
			__u64 type = 0;
			int kind;

			slots[i] = 0;
			if (!ok[i]) {
				chain_done(t, &w[i]);
				continue;
			}
			slots[i] = coro_parse(&as->coro, R->p->cfg.off.ob_type, w[i].gen, cb[i],
					      &type, &l);
			kind = type_kind(R->p, R->a, type);
			if ((kind != TK_CORO && kind != TK_GEN) || !l.code) {
				slots[i] = 0;
				chain_done(t, &w[i]);
				continue;
			}
			if (w[i].n == PY_TASK_FRAMES) {
				t->frames_cut = 1;
				R->g->cut_chains++;
				slots[i] = 0;
				chain_done(t, &w[i]);
				continue;
			}
			w[i].chain[w[i].n].code = l.code;
			w[i].chain[w[i].n].instr = (int32_t)(l.instr - l.code);
			w[i].chain[w[i].n].fingerprint = 0;
			w[i].n++;
			if (slots[i])
				addrs[ns++] = slots[i];
			else
				chain_done(t, &w[i]);
		}
		if (ns)
			mem_read_each(&R->p->mem, aw, sizeof(aw[0]), addrs, ns, ok);
		for (size_t i = 0, s = 0; i < na; i++) {
			uint64_t next;

			if (!slots[i])
				continue;
			next = ok[s] ? aw[s] & as->coro.ref_mask : 0;
			s++;
			if (!next || next == w[i].gen) {
				if (next) {
					ts[w[i].k]->frames_cut = 1;
					R->g->cut_chains++;
				}
				chain_done(ts[w[i].k], &w[i]);
				continue;
			}
			w[i].gen = next;
			w[nn++] = w[i];
		}
		na = nn;
	}
	for (size_t i = 0; i < na; i++) /* past the turns: cut */
		chain_done(ts[w[i].k], &w[i]);
}

/* The types of what each task waits on and of its first done callback,
 * for the edges: one call for a batch. */
static void read_edge_types(struct reader *R, struct py_task *const *ts, size_t n)
{
	uint8_t hdr[2 * TASK_BATCH][16], ok[2 * TASK_BATCH];
	uint64_t addrs[2 * TASK_BATCH];
	size_t m = 0;

	for (size_t k = 0; k < n; k++) {
		if (ts[k]->waiter)
			addrs[m++] = ts[k]->waiter;
		if (ts[k]->callback0)
			addrs[m++] = ts[k]->callback0;
	}
	if (m)
		mem_read_each(&R->p->mem, hdr, sizeof(hdr[0]), addrs, m, ok);
	for (size_t k = 0, i = 0; k < n; k++) {
		if (ts[k]->waiter) {
			ts[k]->waiter_type = ok[i] ? field_u64(hdr[i], R->p->cfg.off.ob_type) : 0;
			i++;
		}
		if (ts[k]->callback0) {
			ts[k]->callback0_type =
			    ok[i] ? field_u64(hdr[i], R->p->cfg.off.ob_type) : 0;
			i++;
		}
	}
}

static void read_tasks(struct reader *R)
{
	const struct py_async *as = &R->p->extra.async;
	struct py_task_graph *g = R->g;
	unsigned size = as->task_size < TASK_BLOCK ? as->task_size : TASK_BLOCK;
	static uint8_t tb[TASK_BATCH][TASK_BLOCK];
	uint64_t addrs[TASK_BATCH];
	uint8_t ok[TASK_BATCH];
	struct py_task *ts[TASK_BATCH];

	if (size < (unsigned)as->task_name + 8)
		return;
	for (size_t i0 = 0; i0 < g->n; i0 += TASK_BATCH) {
		size_t n = g->n - i0 < TASK_BATCH ? g->n - i0 : TASK_BATCH, nt = 0;

		for (size_t k = 0; k < n; k++)
			addrs[k] = g->v[i0 + k].addr;
		/* TASK_BLOCK bytes each, more than a task: one whose block
		 * fails is read again at its size. */
		mem_read_each(&R->p->mem, tb, TASK_BLOCK, addrs, n, ok);
		for (size_t k = 0; k < n; k++) {
			struct py_task *t = &g->v[i0 + k];

			if (!ok[k] && mem_read(&R->p->mem, tb[k], size, t->addr)) {
				R->g->unreadable++;
				continue;
			}
			parse_task(R, t, tb[k]);
			ts[nt++] = t;
		}
		read_chains(R, ts, nt);
		if (as->model == PY_ASYNC_SETS)
			read_edge_types(R, ts, nt);
	}
}

void py_asyncio_name(struct py_process *p, struct py_asyncio *a, struct py_task_graph *g)
{
	struct reader R = {.p = p, .a = a, .g = g};

	for (size_t i = 0; i < g->n; i++) {
		struct py_task *t = &g->v[i];

		name_obj(&R, t->name_obj, t->name, sizeof(t->name));
		if (!t->name[0])
			snprintf(t->name, sizeof(t->name), "Task at 0x%" PRIx64, t->addr);
	}
}

static void await_edge(struct reader *R, uint64_t child, uint64_t parent)
{
	struct py_task *c = (struct py_task *)py_task_find(R->g, child);

	if (!c || !py_task_find(R->g, parent) || child == parent)
		return;
	c->nawaiters++;
	if (!c->awaiter || parent < c->awaiter)
		c->awaiter = parent;
}

/* 3.11-3.13: a task awaits what its fut_waiter holds: a task, or a
 * gather's future whose _children are the tasks. A TaskGroup's parent
 * awaits a plain future instead: its children are found by their first
 * done callback, the group's _on_task_done, whose group names the parent. */
static void edges_from_waiter(struct reader *R, struct py_task *t)
{
	static const char *const kids[] = {"_children"}, *const parent[] = {"_parent_task"};
	const struct py_async *as = &R->p->extra.async;
	uint64_t w = t->waiter, list = 0, size, items, chunk[64], self, pt = 0;

	if (t->callback0 && type_kind(R->p, R->a, t->callback0_type) == TK_METHOD &&
	    !rd(&R->p->mem, t->callback0 + R->p->extra.async.method_self, &self) && self &&
	    pyobj_attrs(&R->p->mem, &R->p->cfg.off, &R->p->extra.obj, &R->memo, self, parent, &pt,
			1) == 1 &&
	    is_task(R, pt))
		await_edge(R, t->addr, pt);
	if (!w)
		return;
	if (t->waiter_type == R->a->task_type) {
		await_edge(R, w, t->addr);
		return;
	}
	if (type_kind(R->p, R->a, t->waiter_type) != TK_GATHER ||
	    pyobj_attrs(&R->p->mem, &R->p->cfg.off, &R->p->extra.obj, &R->memo, w, kids, &list,
			1) != 1 ||
	    !list || rd(&R->p->mem, list + as->list_size, &size) ||
	    rd(&R->p->mem, list + as->list_items, &items))
		return;
	if (size > PY_TASK_SET_MAX) {
		R->g->cut_sets++;
		size = PY_TASK_SET_MAX;
	}
	for (uint64_t i = 0; i < size; i += 64) {
		uint64_t n = size - i < 64 ? size - i : 64;

		if (mem_read(&R->p->mem, chunk, n * 8, items + i * 8))
			return;
		for (uint64_t k = 0; k < n; k++)
			await_edge(R, chunk[k], t->addr);
	}
}

/* 3.14+: a task's awaited_by: one object, or a set of them. */
static void edge_to(struct reader *R, const uint64_t *parents, size_t n, uint64_t child)
{
	for (size_t k = 0; k < n; k++)
		await_edge(R, child, parents[k]);
}

static void edges_from_awaited_by(struct reader *R, struct py_task *t)
{
	uint64_t ab = t->awaited_by;

	if (!ab)
		return;
	if (!t->awaited_by_is_set) {
		await_edge(R, t->addr, ab);
		return;
	}
	set_each(R, ab, edge_to, t->addr);
}

/* The current-tasks dict before the sort: running tasks join the graph
 * (an eager task may be in no set yet). */
static int add_current(void *ctx, uint64_t loop, uint64_t task)
{
	(void)loop;
	add_tasks(ctx, &task, 1, 0);
	return 0;
}

static int mark_running(void *ctx, uint64_t loop, uint64_t task)
{
	struct reader *R = ctx;
	struct py_task *t = (struct py_task *)py_task_find(R->g, task);

	(void)loop;
	if (t)
		t->state = PY_TASK_RUNNING;
	return 0;
}

int py_asyncio_read(struct py_process *p, struct py_asyncio *a, struct py_task_graph *g,
		    struct diag *d)
{
	struct reader R = {.p = p, .a = a, .g = g};
	const struct py_async *as = &p->extra.async;
	struct tstate_iter it = {0};
	uint64_t interps[8] = {0}, tstates[64];
	unsigned ninterp = 0, nts = 0;

	g->n = 0;
	g->found = g->cut_tasks = g->cut_sets = g->cut_chains = g->unreadable = g->bad_names = 0;
	if (!py_asyncio_find(p, a))
		return 0;
	if (as->model == PY_ASYNC_DEBUG) {
		for (uint32_t i = 0;
		     i < STACK_MAX_THREADS && tstate_iter_next(&p->mem, &p->cfg, &it, i); i++) {
			list_tasks(&R, it.tstate + as->tstate_tasks_head);
			if (nts < 64)
				tstates[nts++] = it.tstate;
			if (ninterp < 8 && (!ninterp || interps[ninterp - 1] != it.interp))
				interps[ninterp++] = it.interp;
		}
		if (it.err == WALK_ERR_READ_TSTATE && !nts)
			return diag_errno(d, p->mem.last_errno ? p->mem.last_errno : EFAULT,
					  "pid %d: cannot read the thread list", p->pid);
		for (unsigned i = 0; i < ninterp; i++)
			list_tasks(&R, interps[i] + as->interp_tasks_head);
	} else {
		weakset_tasks(&R, a->all_tasks);
		weakset_tasks(&R, a->scheduled);
		set_each(&R, a->eager, add_tasks, 0);
		pydict_scan(&p->mem, &p->extra.obj, a->current, add_current, &R);
	}
	dedup(g);
	read_tasks(&R);
	for (size_t i = 0; i < g->n; i++) {
		if (as->model == PY_ASYNC_DEBUG)
			edges_from_awaited_by(&R, &g->v[i]);
		else
			edges_from_waiter(&R, &g->v[i]);
	}
	if (as->model == PY_ASYNC_DEBUG) {
		for (unsigned i = 0; i < nts; i++) {
			uint64_t task;
			struct py_task *t;

			if (rd(&p->mem, tstates[i] + as->tstate_running_task, &task) || !task ||
			    !(t = (struct py_task *)py_task_find(g, task)))
				continue;
			t->state = PY_TASK_RUNNING;
			t->tid = stack_thread_tid(&p->mem, &p->cfg, tstates[i]);
		}
	} else {
		pydict_scan(&p->mem, &p->extra.obj, a->current, mark_running, &R);
	}
	return (int)g->n;
}

const char *py_task_state_name(int state)
{
	switch (state) {
	case PY_TASK_RUNNING:
		return "running";
	case PY_TASK_DONE:
		return "done";
	case PY_TASK_CANCELLED:
		return "cancelled";
	default:
		return "pending";
	}
}

/* The kernel's copy of a name object: a compact ASCII str, or (3.12+) an
 * int; 0 with out filled, -1 when it is neither or does not fit. */
static int name_from_raw(struct py_process *p, struct py_asyncio *a, const uint8_t *raw, char *out,
			 size_t cap)
{
	const struct py_offsets *o = &p->cfg.off;
	const struct py_objlayout *L = &p->extra.obj;
	uint64_t type, len;
	uint32_t state;

	memcpy(&type, raw + o->ob_type, sizeof(type));
	switch (type_kind(p, a, type)) {
	case TK_STR:
		if (o->unicode_state + 4 > TASK_NAME_RAW || o->unicode_length + 8 > TASK_NAME_RAW)
			return -1;
		memcpy(&state, raw + o->unicode_state, sizeof(state));
		memcpy(&len, raw + o->unicode_length, sizeof(len));
		if ((state & PY_STR_ASCII_MASK) != PY_STR_ASCII_VALUE ||
		    len > TASK_NAME_RAW - (uint64_t)o->ascii_data_off || len + 1 > cap)
			return -1;
		for (uint64_t i = 0; i < len; i++) {
			uint8_t c = raw[o->ascii_data_off + i];

			/* ASCII by its state; a torn copy could say otherwise. */
			if (c >= 0x80 || !c)
				return -1;
			out[i] = (char)c;
		}
		out[len] = 0;
		return 0;
	case TK_INT: {
		uint64_t tag, ndig;
		uint32_t dig[2] = {0, 0};

		if (L->long_size + 8 > TASK_NAME_RAW || L->long_digits + 8 > TASK_NAME_RAW)
			return -1;
		memcpy(&tag, raw + L->long_size, sizeof(tag));
		ndig = L->long_tagged ? tag >> 3 : tag;
		if ((L->long_tagged && (tag & 3) == 2) || (int64_t)ndig < 0 || ndig > 2)
			return -1;
		memcpy(dig, raw + L->long_digits, ndig * 4);
		snprintf(out, cap, "Task-%" PRIu64, (uint64_t)dig[0] | (uint64_t)dig[1] << 30);
		return 0;
	}
	}
	return -1;
}

const struct py_task *py_task_on_stack(const struct py_task_graph *g, uint16_t gen_iframe,
				       const __u64 *addrs, uint32_t n, uint32_t *idx)
{
	const struct py_task *best = NULL;

	*idx = n;
	for (size_t k = 0; k < g->n; k++) {
		const struct py_task *t = &g->v[k];

		if (t->state != PY_TASK_RUNNING || !t->coro)
			continue;
		for (uint32_t i = 0; i < *idx; i++)
			if (addrs[i] == t->coro + gen_iframe) {
				*idx = i;
				best = t;
				break;
			}
	}
	return best;
}

const char *py_task_name_of(struct py_process *p, struct py_asyncio *a, uint64_t task,
			    const uint8_t *raw, char *out, size_t cap)
{
	struct py_task_graph g = {0};
	struct reader R = {.p = p, .a = a, .g = &g};
	uint64_t name;

	if (raw && !name_from_raw(p, a, raw, out, cap))
		return out;
	if (!rd(&p->mem, task + p->extra.async.task_name, &name)) {
		name_obj(&R, name, out, cap);
		if (out[0])
			return out;
	}
	snprintf(out, cap, "Task at 0x%" PRIx64, task);
	return out;
}

void py_task_graph_free(struct py_task_graph *g)
{
	free(g->v);
	memset(g, 0, sizeof(*g));
}
