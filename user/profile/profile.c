// SPDX-License-Identifier: MIT
/*
 * The profile model. See profile.h.
 *
 * Everything is interned through one kind of open-addressed index that
 * stores ids, not keys: the keys live in the dense arrays the writers walk,
 * so nothing is stored twice and the writers can index per-id arrays.
 */
#include "profile.h"
#include "native_symbols.h"
#include "text_escape.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t fnv(uint64_t h, const void *data, size_t len)
{
	const unsigned char *c = data;

	for (size_t i = 0; i < len; i++) {
		h ^= c[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

#define FNV_INIT 0xcbf29ce484222325ull

/* Grow a dense array by doubling. */
static int grow(void **arr, uint32_t *cap, uint32_t need, size_t size)
{
	uint32_t ncap = *cap ? *cap : 16;
	void *n;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	n = realloc(*arr, (size_t)ncap * size);
	if (!n)
		return -1;
	*arr = n;
	*cap = ncap;
	return 0;
}

/*
 * Find the slot for hash: the one holding an id eq() accepts, or the empty
 * slot where it belongs. The table is kept at most half full, so a probe
 * always ends.
 */
typedef int (*eq_fn)(const struct profile *p, uint32_t id, const void *key);

static struct prof_slot *ix_find(const struct profile *p, struct prof_index *ix, uint32_t hash,
				 eq_fn eq, const void *key)
{
	uint32_t mask = ix->cap - 1, i = hash & mask;

	for (;; i = (i + 1) & mask) {
		struct prof_slot *s = &ix->slots[i];

		if (!s->id1)
			return s;
		if (s->hash == hash && eq(p, s->id1 - 1, key))
			return s;
	}
}

static int ix_reserve(struct prof_index *ix)
{
	struct prof_slot *old = ix->slots, *n;
	uint32_t ocap = ix->cap, ncap;

	if (ix->cap && (ix->n + 1) * 2 <= ix->cap)
		return 0;
	ncap = ocap ? ocap * 2 : 64;
	n = calloc(ncap, sizeof(*n));
	if (!n)
		return -1;
	for (uint32_t i = 0; i < ocap; i++) {
		uint32_t j;

		if (!old[i].id1)
			continue;
		for (j = old[i].hash & (ncap - 1); n[j].id1; j = (j + 1) & (ncap - 1))
			;
		n[j] = old[i];
	}
	free(old);
	ix->slots = n;
	ix->cap = ncap;
	return 0;
}

/*
 * Copy s, replacing bytes that are not well-formed UTF-8 with U+FFFD. Every
 * output is UTF-8 (JSON, XML, protobuf strings), and one bad byte from a
 * torn read would otherwise make a whole file unreadable.
 */
static char *utf8_dup(const char *s)
{
	const unsigned char *c = (const unsigned char *)s;
	size_t len = strlen(s), o = 0;
	char *out = malloc(len * 3 + 1);

	if (!out)
		return NULL;
	while (*c) {
		int n = utf8_seq_len((const char *)c);

		if (n) {
			memcpy(out + o, c, n);
			o += n;
			c += n;
		} else {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			c++;
		}
	}
	out[o] = 0;
	return out;
}

static int str_eq(const struct profile *p, uint32_t id, const void *key)
{
	return !strcmp(p->strs[id], key);
}

/* Intern s (NULL as ""); UINT32_MAX on ENOMEM. */
static uint32_t intern_str(struct profile *p, const char *s)
{
	struct prof_slot *slot;
	uint32_t h;
	char *copy;

	if (!s)
		s = "";
	h = (uint32_t)fnv(FNV_INIT, s, strlen(s));
	if (ix_reserve(&p->istr))
		return UINT32_MAX;
	slot = ix_find(p, &p->istr, h, str_eq, s);
	if (slot->id1)
		return slot->id1 - 1;
	/* A string with bad bytes is stored sanitized, under the hash of its
	 * sanitized form: a repeat costs one failed probe, then finds it. */
	if (grow((void **)&p->strs, &p->cap_strs, p->nstrs + 1, sizeof(*p->strs)))
		return UINT32_MAX;
	copy = utf8_dup(s);
	if (!copy)
		return UINT32_MAX;
	if (strcmp(copy, s)) {
		/* Stored under its sanitized form, looked up by it too. */
		uint32_t id = UINT32_MAX;

		h = (uint32_t)fnv(FNV_INIT, copy, strlen(copy));
		slot = ix_find(p, &p->istr, h, str_eq, copy);
		if (slot->id1)
			id = slot->id1 - 1;
		if (id != UINT32_MAX) {
			free(copy);
			return id;
		}
	}
	p->strs[p->nstrs] = copy;
	slot->id1 = p->nstrs + 1;
	slot->hash = h;
	p->istr.n++;
	return p->nstrs++;
}

static int func_eq(const struct profile *p, uint32_t id, const void *key)
{
	return !memcmp(&p->funcs[id], key, sizeof(struct prof_func));
}

/* The Mapping of a native frame's file, one per path (linear: a profile
 * meets tens of libraries, and only on a function's first sample). */
static uint32_t intern_mapping(struct profile *p, const struct native_lib *l)
{
	uint32_t file = intern_str(p, l->path), bid = intern_str(p, l->build_id);

	if (file == UINT32_MAX || bid == UINT32_MAX)
		return 0;
	for (uint32_t i = 0; i < p->nmappings; i++)
		if (p->mappings[i].file == file)
			return i + 1;
	if (grow((void **)&p->mappings, &p->cap_mappings, p->nmappings + 1, sizeof(*p->mappings)))
		return 0;
	p->mappings[p->nmappings] = (struct prof_mapping){file, bid, l->start, l->limit, l->offset};
	return ++p->nmappings;
}

static uint32_t intern_func(struct profile *p, const struct sym_frame *f)
{
	struct prof_func k;
	struct prof_slot *slot;
	uint32_t h;

	memset(&k, 0, sizeof(k));
	k.name = intern_str(p, f->name && *f->name ? f->name : "[unknown]");
	k.file = intern_str(p, f->file);
	k.firstlineno = f->firstlineno;
	k.kind = (uint32_t)f->kind;
	k.addr = f->addr;
	if (f->lib)
		k.mapping = intern_mapping(p, f->lib);
	if (k.name == UINT32_MAX || k.file == UINT32_MAX || ix_reserve(&p->ifunc))
		return UINT32_MAX;
	h = (uint32_t)fnv(FNV_INIT, &k, sizeof(k));
	slot = ix_find(p, &p->ifunc, h, func_eq, &k);
	if (slot->id1)
		return slot->id1 - 1;
	if (grow((void **)&p->funcs, &p->cap_funcs, p->nfuncs + 1, sizeof(k)))
		return UINT32_MAX;
	p->funcs[p->nfuncs] = k;
	slot->id1 = p->nfuncs + 1;
	slot->hash = h;
	p->ifunc.n++;
	return p->nfuncs++;
}

static int frame_eq(const struct profile *p, uint32_t id, const void *key)
{
	return !memcmp(&p->frames[id], key, sizeof(struct prof_frame));
}

static uint32_t intern_frame(struct profile *p, const struct sym_frame *f)
{
	struct prof_frame k;
	struct prof_slot *slot;
	uint32_t h;

	memset(&k, 0, sizeof(k));
	k.func = intern_func(p, f);
	k.line = f->line;
	if (k.func == UINT32_MAX || ix_reserve(&p->iframe))
		return UINT32_MAX;
	h = (uint32_t)fnv(FNV_INIT, &k, sizeof(k));
	slot = ix_find(p, &p->iframe, h, frame_eq, &k);
	if (slot->id1)
		return slot->id1 - 1;
	if (grow((void **)&p->frames, &p->cap_frames, p->nframes + 1, sizeof(k)))
		return UINT32_MAX;
	p->frames[p->nframes] = k;
	slot->id1 = p->nframes + 1;
	slot->hash = h;
	p->iframe.n++;
	return p->nframes++;
}

struct thread_key {
	uint32_t pid, tid;
};

static int thread_eq(const struct profile *p, uint32_t id, const void *key)
{
	const struct thread_key *k = key;

	return p->threads[id].pid == k->pid && p->threads[id].tid == k->tid;
}

static uint32_t intern_thread(struct profile *p, uint32_t pid, uint32_t tid)
{
	struct thread_key k = {pid, tid};
	struct prof_slot *slot;
	uint32_t h = (uint32_t)fnv(FNV_INIT, &k, sizeof(k));

	if (ix_reserve(&p->ithread))
		return UINT32_MAX;
	slot = ix_find(p, &p->ithread, h, thread_eq, &k);
	if (slot->id1)
		return slot->id1 - 1;
	if (grow((void **)&p->threads, &p->cap_threads, p->nthreads + 1, sizeof(*p->threads)))
		return UINT32_MAX;
	memset(&p->threads[p->nthreads], 0, sizeof(*p->threads));
	p->threads[p->nthreads].pid = pid;
	p->threads[p->nthreads].tid = tid;
	slot->id1 = p->nthreads + 1;
	slot->hash = h;
	p->ithread.n++;
	return p->nthreads++;
}

struct stack_key {
	uint32_t thread, n;
	const uint32_t *frames;
};

static int stack_eq(const struct profile *p, uint32_t id, const void *key)
{
	const struct stack_key *k = key;
	const struct prof_stack *s = &p->stacks[id];

	return s->thread == k->thread && s->nframes == k->n &&
	       !memcmp(s->frames, k->frames, k->n * sizeof(*k->frames));
}

static uint32_t intern_stack(struct profile *p, uint32_t thread, const uint32_t *frames, uint32_t n)
{
	struct stack_key k = {thread, n, frames};
	struct prof_slot *slot;
	struct prof_stack *s;
	uint64_t h64 = fnv(FNV_INIT, &thread, sizeof(thread));
	uint32_t h;

	h = (uint32_t)fnv(h64, frames, n * sizeof(*frames));
	if (ix_reserve(&p->istack))
		return UINT32_MAX;
	slot = ix_find(p, &p->istack, h, stack_eq, &k);
	if (slot->id1)
		return slot->id1 - 1;
	if (grow((void **)&p->stacks, &p->cap_stacks, p->nstacks + 1, sizeof(*p->stacks)))
		return UINT32_MAX;
	s = &p->stacks[p->nstacks];
	memset(s, 0, sizeof(*s));
	s->frames = malloc((n ? n : 1) * sizeof(*frames));
	if (!s->frames)
		return UINT32_MAX;
	memcpy(s->frames, frames, n * sizeof(*frames));
	s->thread = thread;
	s->nframes = n;
	slot->id1 = p->nstacks + 1;
	slot->hash = h;
	p->istack.n++;
	return p->nstacks++;
}

struct profile *profile_new(uint64_t period_ns, const char *clock)
{
	struct profile *p = calloc(1, sizeof(*p));
	struct timespec rt, mono;

	if (!p)
		return NULL;
	p->period_ns = period_ns;
	strcpy(p->clock, clock && !strcmp(clock, "wall") ? "wall" : "cpu");
	p->max_ordered = PROFILE_MAX_ORDERED;
	p->last_stack = UINT32_MAX;
	/* Sample times are bpf_ktime_get_ns(), i.e. CLOCK_MONOTONIC; formats
	 * that carry a date (pprof time_nanos) need the offset to the epoch. */
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	p->realtime_off =
	    (int64_t)(rt.tv_sec - mono.tv_sec) * 1000000000 + (rt.tv_nsec - mono.tv_nsec);
	/* String id 0 is "", as pprof's string table wants. */
	if (intern_str(p, "") != 0) {
		profile_free(p);
		return NULL;
	}
	return p;
}

void profile_set_max_ordered(struct profile *p, uint64_t n)
{
	p->max_ordered = n;
}

int profile_add(struct profile *p, const struct sym_sample *s)
{
	uint32_t stack_buf[64], *ids = stack_buf;
	uint32_t n = s->nframes, th, sid;
	int trunc = (s->flags & SAMPLE_TRUNCATED) && n;
	struct prof_stack *st;
	struct prof_thread *t;
	int rc = -1;

	if (!n) {
		p->nempty++;
		return 0;
	}
	if (n + trunc > 64) {
		ids = malloc((n + trunc) * sizeof(*ids));
		if (!ids)
			goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		ids[i] = intern_frame(p, &s->frames[i]);
		if (ids[i] == UINT32_MAX)
			goto out;
	}
	if (trunc) {
		struct sym_frame tf = {.name = PROFILE_TRUNCATED_NAME, .file = ""};

		ids[n] = intern_frame(p, &tf);
		if (ids[n] == UINT32_MAX)
			goto out;
		p->ntruncated++;
	}
	th = intern_thread(p, s->pid, s->tid);
	if (th == UINT32_MAX)
		goto out;
	sid = intern_stack(p, th, ids, n + trunc);
	if (sid == UINT32_MAX)
		goto out;

	p->last_stack = sid;
	st = &p->stacks[sid];
	if (!st->count || s->ts_ns < st->first_ns)
		st->first_ns = s->ts_ns;
	if (s->ts_ns > st->last_ns)
		st->last_ns = s->ts_ns;
	st->count++;
	st->nidle += !!(s->flags & SAMPLE_IDLE);
	st->ngil += !!(s->flags & SAMPLE_GIL_HELD);

	t = &p->threads[th];
	if (!t->count || s->ts_ns < t->first_ns)
		t->first_ns = s->ts_ns;
	if (s->ts_ns > t->last_ns)
		t->last_ns = s->ts_ns;
	t->count++;
	if (!p->total || s->ts_ns < p->first_ns)
		p->first_ns = s->ts_ns;
	if (s->ts_ns > p->last_ns)
		p->last_ns = s->ts_ns;
	p->total++;

	/* Past the bound, or out of memory for the order, the sample still
	 * counts: only its place in time is lost. */
	if (p->nordered < p->max_ordered) {
		if (t->norder == t->order_cap) {
			uint64_t ncap = t->order_cap ? t->order_cap * 2 : 256;
			struct prof_ord *o = realloc(t->order, ncap * sizeof(*o));

			if (o) {
				t->order = o;
				t->order_cap = ncap;
			}
		}
		if (t->norder < t->order_cap) {
			struct prof_ord *o = &t->order[t->norder++];

			o->ts_ns = s->ts_ns;
			o->stack = sid;
			o->cpu = s->cpu;
			o->flags = s->flags;
			st->nordered++;
			p->nordered++;
		}
	}
	rc = 0;
out:
	if (ids != stack_buf)
		free(ids);
	if (rc) {
		p->oom = 1;
		errno = ENOMEM;
	}
	return rc;
}

void profile_stack_add(struct profile *p, uint32_t stack, uint64_t n)
{
	if (stack >= p->nstacks)
		return;
	p->stacks[stack].count += n;
	p->threads[p->stacks[stack].thread].count += n;
	p->total += n;
}

int profile_set_comm(struct profile *p, uint32_t pid, const char *name)
{
	char *copy = utf8_dup(name ? name : "");

	if (!copy)
		return -1;
	for (uint32_t i = 0; i < p->ncomms; i++) {
		if (p->comms[i].pid == pid) {
			free(p->comms[i].name);
			p->comms[i].name = copy;
			return 0;
		}
	}
	if (grow((void **)&p->comms, &p->cap_comms, p->ncomms + 1, sizeof(*p->comms))) {
		free(copy);
		errno = ENOMEM;
		return -1;
	}
	p->comms[p->ncomms].pid = pid;
	p->comms[p->ncomms++].name = copy;
	return 0;
}

const char *profile_comm(const struct profile *p, uint32_t pid)
{
	for (uint32_t i = 0; i < p->ncomms; i++)
		if (p->comms[i].pid == pid)
			return p->comms[i].name;
	return NULL;
}

void profile_free(struct profile *p)
{
	if (!p)
		return;
	for (uint32_t i = 0; i < p->nstrs; i++)
		free(p->strs[i]);
	for (uint32_t i = 0; i < p->nstacks; i++)
		free(p->stacks[i].frames);
	for (uint32_t i = 0; i < p->nthreads; i++)
		free(p->threads[i].order);
	for (uint32_t i = 0; i < p->ncomms; i++)
		free(p->comms[i].name);
	free(p->strs);
	free(p->funcs);
	free(p->frames);
	free(p->stacks);
	free(p->threads);
	free(p->comms);
	free(p->mappings);
	free(p->istr.slots);
	free(p->ifunc.slots);
	free(p->iframe.slots);
	free(p->istack.slots);
	free(p->ithread.slots);
	free(p);
}

char *profile_frame_label(const struct profile *p, uint32_t key, int no_lines, int sanitize,
			  char *buf, size_t len)
{
	const struct prof_func *fn = &p->funcs[no_lines ? key : p->frames[key].func];
	const char *name = p->strs[fn->name], *file = p->strs[fn->file];

	char raw[4096];

	if (fn->kind == FRAME_KIND_NATIVE || fn->kind == FRAME_KIND_KERNEL)
		/* No line: the same label with or without no_lines. */
		snprintf(raw, sizeof(raw), "%s%s%s%s %s", name, *file ? " (" : "", file,
			 *file ? ")" : "", fn->kind == FRAME_KIND_NATIVE ? "[native]" : "[kernel]");
	else if (!*file)
		snprintf(raw, sizeof(raw), "%s", name);
	else if (no_lines)
		snprintf(raw, sizeof(raw), "%s (%s)", name, file);
	else
		snprintf(raw, sizeof(raw), "%s (%s:%d)", name, file, p->frames[key].line);
	if (sanitize)
		text_escape(buf, len, raw, TEXT_FOLDED);
	else
		snprintf(buf, len, "%s", raw);
	return buf;
}
