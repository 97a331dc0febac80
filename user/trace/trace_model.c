// SPDX-License-Identifier: MIT
#include "trace_model.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint32_t hash_str(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h;
}

static uint32_t hash_u64(uint64_t v)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdULL;
	v ^= v >> 33;
	return (uint32_t)v;
}

/* Open addressing at load <= 1/2: grow and rehash the ids we hold. */
static int strtab_grow(struct strtab *t)
{
	uint32_t ns = t->nslots ? 2 * t->nslots : 1024;
	uint32_t *slots = calloc(ns, sizeof(*slots));

	if (!slots)
		return -1;
	for (uint32_t id = 0; id < t->n; id++) {
		uint32_t i = hash_str(t->s[id]) & (ns - 1);

		while (slots[i])
			i = (i + 1) & (ns - 1);
		slots[i] = id + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = ns;
	return 0;
}

uint32_t strtab_intern(struct strtab *t, const char *s)
{
	uint32_t i;

	if (2 * (t->n + 1) > t->nslots && strtab_grow(t))
		return TRACE_NONE;
	for (i = hash_str(s) & (t->nslots - 1); t->slots[i]; i = (i + 1) & (t->nslots - 1))
		if (!strcmp(t->s[t->slots[i] - 1], s))
			return t->slots[i] - 1;
	if (t->n == t->cap) {
		uint32_t nc = t->cap ? 2 * t->cap : 256;
		char **ns = realloc(t->s, nc * sizeof(*ns));

		if (!ns)
			return TRACE_NONE;
		t->s = ns;
		t->cap = nc;
	}
	t->s[t->n] = strdup(s);
	if (!t->s[t->n])
		return TRACE_NONE;
	t->slots[i] = t->n + 1;
	return t->n++;
}

void strtab_free(struct strtab *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

static uint32_t loc_hash(uint32_t probe_id, uint64_t code)
{
	return hash_u64(code ^ ((uint64_t)probe_id << 56) ^ probe_id);
}

static int loc_grow(struct trace_data *td)
{
	uint32_t ns = td->nloc_slots ? 2 * td->nloc_slots : 256;
	uint32_t *slots = calloc(ns, sizeof(*slots));

	if (!slots)
		return -1;
	for (uint32_t id = 0; id < td->nlocs; id++) {
		uint32_t i = loc_hash(td->locs[id].probe_id, td->locs[id].code) & (ns - 1);

		while (slots[i])
			i = (i + 1) & (ns - 1);
		slots[i] = id + 1;
	}
	free(td->loc_slots);
	td->loc_slots = slots;
	td->nloc_slots = ns;
	return 0;
}

uint32_t trace_loc_get(struct trace_data *td, uint32_t probe_id, uint64_t code)
{
	uint32_t i, mask;
	struct trace_loc *l;

	if (2 * (td->nlocs + 1) > td->nloc_slots && loc_grow(td))
		return TRACE_NONE;
	mask = td->nloc_slots - 1;
	for (i = loc_hash(probe_id, code) & mask; td->loc_slots[i]; i = (i + 1) & mask) {
		l = &td->locs[td->loc_slots[i] - 1];
		if (l->probe_id == probe_id && l->code == code)
			return td->loc_slots[i] - 1;
	}
	if (td->nlocs == td->caplocs) {
		uint32_t nc = td->caplocs ? 2 * td->caplocs : 64;
		struct trace_loc *nl = realloc(td->locs, nc * sizeof(*nl));

		if (!nl)
			return TRACE_NONE;
		td->locs = nl;
		td->caplocs = nc;
	}
	l = &td->locs[td->nlocs];
	memset(l, 0, sizeof(*l));
	l->probe_id = probe_id;
	l->code = code;
	l->name = TRACE_NONE;
	l->last_fold = TRACE_NONE;
	l->native_via = TRACE_NONE;
	td->loc_slots[i] = td->nlocs + 1;
	return td->nlocs++;
}

static struct open_call *open_of(struct trace_data *td, uint32_t tid)
{
	struct open_call *o;

	for (uint32_t i = 0; i < td->nopen; i++)
		if (td->open[i].tid == tid)
			return &td->open[i];
	o = realloc(td->open, (td->nopen + 1) * sizeof(*o));
	if (!o)
		return NULL;
	td->open = o;
	o = &td->open[td->nopen++];
	memset(o, 0, sizeof(*o));
	o->tid = tid;
	return o;
}

static void add_latency(struct trace_loc *l, uint64_t ns)
{
	if (l->nlat == l->caplat) {
		size_t nc = l->caplat ? 2 * l->caplat : 64;
		uint64_t *nv = realloc(l->lat, nc * sizeof(*nv));

		if (!nv)
			return;
		l->lat = nv;
		l->caplat = nc;
	}
	l->lat[l->nlat++] = ns;
}

/* Entries push, returns pop: BPF emits a return exactly when it emitted
 * its entry, so the top of the thread's stack is the call that returns. */
static void pair_event(struct trace_data *td, uint32_t idx)
{
	const struct trace_event *e = &td->ev[idx];
	const struct trace_probe *p = &td->probes[e->probe_id];
	struct open_call *o;

	if (p->pair < 0)
		return;
	o = open_of(td, e->tid);
	if (!o)
		return;
	if (p->role == TRACE_ROLE_ENTRY) {
		if (o->depth == o->cap) {
			uint32_t nc = o->cap ? 2 * o->cap : 64;
			uint32_t *nv = realloc(o->ev, nc * sizeof(*nv));

			if (!nv)
				return;
			o->ev = nv;
			o->cap = nc;
		}
		o->ev[o->depth++] = idx;
	} else if (p->role == TRACE_ROLE_RETURN && o->depth) {
		const struct trace_event *b = &td->ev[o->ev[--o->depth]];

		if (b->probe_id == (uint32_t)p->pair && b->loc != TRACE_NONE &&
		    e->ts_ns >= b->ts_ns)
			add_latency(&td->locs[b->loc], e->ts_ns - b->ts_ns);
	}
}

int trace_add_event(struct trace_data *td, const struct trace_event *e)
{
	if (td->nev == td->capev) {
		size_t nc = td->capev ? 2 * td->capev : 4096;
		struct trace_event *nv = realloc(td->ev, nc * sizeof(*nv));

		if (!nv) {
			td->ev_dropped++;
			return -1;
		}
		td->ev = nv;
		td->capev = nc;
	}
	td->ev[td->nev] = *e;
	pair_event(td, (uint32_t)td->nev);
	td->nev++;
	return 0;
}

void trace_forget_open(struct trace_data *td, int entry_id)
{
	for (uint32_t i = 0; i < td->nopen; i++) {
		struct open_call *o = &td->open[i];
		uint32_t k = 0;

		/* Other pairs' calls keep their order: they nest on their own. */
		for (uint32_t j = 0; j < o->depth; j++)
			if (entry_id >= 0 && td->ev[o->ev[j]].probe_id != (uint32_t)entry_id)
				o->ev[k++] = o->ev[j];
		o->depth = k;
	}
}

void trace_data_free(struct trace_data *td)
{
	for (uint32_t i = 0; i < td->nlocs; i++)
		free(td->locs[i].lat);
	for (uint32_t i = 0; i < td->nopen; i++)
		free(td->open[i].ev);
	free(td->open);
	free(td->locs);
	free(td->loc_slots);
	free(td->ev);
	free(td->probes);
	strtab_free(&td->strs);
}
