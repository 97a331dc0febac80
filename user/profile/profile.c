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

int profile_grow(void **arr, uint32_t *cap, uint32_t need, size_t size)
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

static uint32_t intern_str(struct profile *p, const char *s);

uint32_t profile_intern(struct profile *p, const char *s)
{
	return intern_str(p, s);
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
	if (profile_grow((void **)&p->strs, &p->cap_strs, p->nstrs + 1, sizeof(*p->strs)))
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
	if (profile_grow((void **)&p->mappings, &p->cap_mappings, p->nmappings + 1,
			 sizeof(*p->mappings)))
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
	if (profile_grow((void **)&p->funcs, &p->cap_funcs, p->nfuncs + 1, sizeof(k)))
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
	if (profile_grow((void **)&p->frames, &p->cap_frames, p->nframes + 1, sizeof(k)))
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
	if (profile_grow((void **)&p->threads, &p->cap_threads, p->nthreads + 1,
			 sizeof(*p->threads)))
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
	if (profile_grow((void **)&p->stacks, &p->cap_stacks, p->nstacks + 1, sizeof(*p->stacks)))
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
	strcpy(p->clock, clock && !strcmp(clock, "wall")     ? "wall"
			 : clock && !strcmp(clock, "offcpu") ? "offcpu"
							     : "cpu");
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

/*
 * Count one sample of stack sid (already interned under the sample's
 * thread): totals, times, and its place in the thread's time order. A
 * weight of 0 is one period (an on-CPU sample); offcpu_reason 0 is on-CPU.
 */
static void count_sample(struct profile *p, const struct sym_sample *s, uint32_t sid,
			 uint64_t weight_ns, uint32_t offcpu_reason)
{
	struct prof_stack *st = &p->stacks[sid];
	struct prof_thread *t = &p->threads[st->thread];
	uint64_t w = weight_ns ? weight_ns : p->period_ns;

	p->last_stack = sid;
	if (!st->count || s->ts_ns < st->first_ns)
		st->first_ns = s->ts_ns;
	if (s->ts_ns > st->last_ns)
		st->last_ns = s->ts_ns;
	st->count++;
	st->weight_ns += w;
	st->offcpu_reason = offcpu_reason;
	st->nidle += !!(s->flags & SAMPLE_IDLE);
	st->ngil += !!(s->flags & SAMPLE_GIL_HELD);
	st->ngilidle +=
	    (s->flags & (SAMPLE_GIL_HELD | SAMPLE_IDLE)) == (SAMPLE_GIL_HELD | SAMPLE_IDLE);

	if (!t->count || s->ts_ns < t->first_ns)
		t->first_ns = s->ts_ns;
	if (s->ts_ns > t->last_ns)
		t->last_ns = s->ts_ns;
	t->count++;
	t->weight_ns += w;
	p->total_ns += w;
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
			o->weight_ns = w;
			st->nordered++;
			st->ordered_ns += w;
			p->nordered++;
		}
	}
}

/* The stack of frame ids (leaf first, room for n + 1: a truncated stack
 * gets its marker at the root) under s's thread; UINT32_MAX on ENOMEM. */
static uint32_t stack_of(struct profile *p, const struct sym_sample *s, uint32_t *ids, uint32_t n)
{
	uint32_t th;

	if ((s->flags & SAMPLE_TRUNCATED) && n) {
		struct sym_frame tf = {.name = PROFILE_TRUNCATED_NAME, .file = ""};

		ids[n] = intern_frame(p, &tf);
		if (ids[n] == UINT32_MAX)
			return UINT32_MAX;
		n++;
	}
	th = intern_thread(p, s->pid, s->tid);
	if (th == UINT32_MAX)
		return UINT32_MAX;
	return intern_stack(p, th, ids, n);
}

static int oom(struct profile *p)
{
	p->oom = 1;
	errno = ENOMEM;
	return -1;
}

int profile_add(struct profile *p, const struct sym_sample *s)
{
	return profile_add_weighted(p, s, 0, 0);
}

int profile_add_weighted(struct profile *p, const struct sym_sample *s, uint64_t weight_ns,
			 uint32_t offcpu_reason)
{
	uint32_t stack_buf[64], *ids = stack_buf;
	uint32_t n = s->nframes, sid = UINT32_MAX;

	if (!n) {
		p->nempty++;
		return 0;
	}
	if (n + 1 > 64) {
		ids = malloc((n + 1) * sizeof(*ids));
		if (!ids)
			return oom(p);
	}
	for (uint32_t i = 0; i < n; i++) {
		ids[i] = intern_frame(p, &s->frames[i]);
		if (ids[i] == UINT32_MAX)
			goto out;
	}
	sid = stack_of(p, s, ids, n);
	if (sid != UINT32_MAX) {
		p->ntruncated += !!(s->flags & SAMPLE_TRUNCATED);
		count_sample(p, s, sid, weight_ns, offcpu_reason);
	}
out:
	if (ids != stack_buf)
		free(ids);
	return sid == UINT32_MAX ? oom(p) : 0;
}

/*
 * profile_add_raw()'s memo: two open-addressed tables, both kept at most
 * half full and both found by a 64-bit hash of the raw key.
 *
 * Frames: (pid, epoch, code, instr, fingerprint) -> frame id. A record not
 * yet named in the current sample is entered as pending (gen = the
 * sample's, idx = its place in the sample), so that a stack that repeats
 * one record 300 times (recursion) names it once; a pending entry left by
 * a sample that failed is just a miss for the next one.
 *
 * Stacks: (pid, tid, epoch, truncated, the raw records) -> stack id, the
 * records themselves kept in one pool of struct frame_rec so that a hit is
 * one hash over the records and one memcmp.
 */
struct raw_fslot {
	uint64_t code, epoch;
	uint32_t pid, fingerprint;
	int32_t instr;
	uint32_t id1; /* frame id + 1; 0: empty or pending */
	uint32_t gen; /* pending in sample gen; 0 with id1 0: empty */
	uint32_t idx;
};

struct raw_sslot {
	uint64_t hash, epoch;
	uint32_t pid, tid;
	uint32_t off; /* first record in the pool */
	uint16_t n;
	uint8_t trunc, used;
	uint32_t sid;
	uint32_t pad;
};

struct prof_raw {
	struct raw_fslot *f;
	uint32_t fcap, fn;
	struct raw_sslot *s;
	uint32_t scap, sn;
	struct frame_rec *pool;
	uint32_t pool_cap, pool_n;
	uint32_t gen;
	struct profile_raw_stats st;
	/* Per sample scratch, allocated once: no allocation per sample. */
	uint32_t ids[BPFPY_MAX_DEPTH + 1];
	uint32_t pend[BPFPY_MAX_DEPTH]; /* where a record's frame id comes from */
	struct sym_frame sf[BPFPY_MAX_DEPTH];
};

/* Most slots and pooled records the memo holds: within
 * PROFILE_RAW_MEMO_BYTES with every table at its largest. */
#define RAW_FSLOTS_MAX (1u << 15)
#define RAW_SSLOTS_MAX (1u << 14)
#define RAW_POOL_MAX                                                                               \
	((PROFILE_RAW_MEMO_BYTES - RAW_FSLOTS_MAX * sizeof(struct raw_fslot) -                     \
	  RAW_SSLOTS_MAX * sizeof(struct raw_sslot) - sizeof(struct prof_raw)) /                   \
	 sizeof(struct frame_rec))

#define MIX_K1 0x9e3779b97f4a7c15ull
#define MIX_K2 0xc2b2ae3d27d4eb4full

static inline uint64_t mix(uint64_t h, uint64_t v, uint64_t k)
{
	h = (h ^ v) * k;
	return h ^ (h >> 31);
}

static uint64_t frame_hash(uint32_t pid, uint64_t epoch, const struct frame_rec *f)
{
	uint64_t h = mix(MIX_K1, epoch ^ pid, MIX_K2);

	h = mix(h, f->code, MIX_K1);
	return mix(h, (uint64_t)f->fingerprint << 32 | (uint32_t)f->instr, MIX_K2);
}

/* Two lanes, so that the multiplies of one record overlap those of the
 * next: a 300-record stack hashes in well under a microsecond. */
static uint64_t stack_hash(const struct sample_hdr *h, uint64_t epoch, int trunc,
			   const struct frame_rec *f, uint32_t n)
{
	uint64_t a = mix(MIX_K1, epoch, MIX_K2);
	uint64_t b = mix(MIX_K2, (uint64_t)h->pid << 32 | h->tid, MIX_K1);

	b = mix(b, (uint64_t)n << 1 | (uint64_t)trunc, MIX_K1);
	for (uint32_t i = 0; i < n; i++) {
		a = mix(a, f[i].code, MIX_K1);
		b = mix(b, (uint64_t)f[i].fingerprint << 32 | (uint32_t)f[i].instr, MIX_K2);
	}
	return mix(a, b, MIX_K1);
}

static void raw_reset(struct prof_raw *r)
{
	if (r->f)
		memset(r->f, 0, r->fcap * sizeof(*r->f));
	if (r->s)
		memset(r->s, 0, r->scap * sizeof(*r->s));
	r->fn = r->sn = r->pool_n = 0;
	r->st.resets++;
}

/* Grow the frame table to hold need entries at most half full (rehashing
 * what it holds; pending entries die with the old table). -1: at the bound
 * or ENOMEM. */
static int fgrow(struct prof_raw *r, uint32_t need)
{
	uint32_t ncap = r->fcap ? r->fcap * 2 : 4096, moved = 0;
	struct raw_fslot *n;

	while (ncap < need * 2)
		ncap *= 2;
	if (ncap > RAW_FSLOTS_MAX)
		return -1;
	n = calloc(ncap, sizeof(*n));
	if (!n)
		return -1;
	for (uint32_t i = 0; i < r->fcap; i++) {
		struct raw_fslot *o = &r->f[i];
		struct frame_rec k = {o->code, o->instr, o->fingerprint};
		uint32_t j;

		if (!o->id1)
			continue;
		for (j = (uint32_t)frame_hash(o->pid, o->epoch, &k) & (ncap - 1);
		     n[j].id1 || n[j].gen; j = (j + 1) & (ncap - 1))
			;
		n[j] = *o;
		moved++;
	}
	free(r->f);
	r->f = n;
	r->fcap = ncap;
	r->fn = moved;
	return 0;
}

static int sgrow(struct prof_raw *r)
{
	uint32_t ncap = r->scap ? r->scap * 2 : 1024;
	struct raw_sslot *n;

	if (ncap > RAW_SSLOTS_MAX)
		return -1;
	n = calloc(ncap, sizeof(*n));
	if (!n)
		return -1;
	for (uint32_t i = 0; i < r->scap; i++) {
		uint32_t j;

		if (!r->s[i].used)
			continue;
		for (j = (uint32_t)r->s[i].hash & (ncap - 1); n[j].used; j = (j + 1) & (ncap - 1))
			;
		n[j] = r->s[i];
	}
	free(r->s);
	r->s = n;
	r->scap = ncap;
	return 0;
}

static int pool_grow(struct prof_raw *r, uint32_t need)
{
	uint32_t ncap = r->pool_cap ? r->pool_cap * 2 : 4096;
	struct frame_rec *np;

	while (ncap < need)
		ncap *= 2;
	if (ncap > RAW_POOL_MAX)
		ncap = RAW_POOL_MAX;
	if (ncap < need)
		return -1;
	np = realloc(r->pool, (size_t)ncap * sizeof(*np));
	if (!np)
		return -1;
	r->pool = np;
	r->pool_cap = ncap;
	return 0;
}

/* The slot of frame record f: its entry, or the empty slot where it goes. */
static struct raw_fslot *ffind(struct prof_raw *r, uint32_t pid, uint64_t epoch,
			       const struct frame_rec *f)
{
	uint32_t mask = r->fcap - 1, i = (uint32_t)frame_hash(pid, epoch, f) & mask;

	for (;; i = (i + 1) & mask) {
		struct raw_fslot *s = &r->f[i];

		if (!s->id1 && !s->gen)
			return s;
		if (s->code == f->code && s->instr == f->instr &&
		    s->fingerprint == f->fingerprint && s->pid == pid && s->epoch == epoch)
			return s;
	}
}

static struct raw_sslot *sfind(struct prof_raw *r, uint64_t hash, const struct sample_hdr *h,
			       uint64_t epoch, int trunc, const struct frame_rec *f, uint32_t n)
{
	uint32_t mask = r->scap - 1, i = (uint32_t)hash & mask;

	for (;; i = (i + 1) & mask) {
		struct raw_sslot *s = &r->s[i];

		if (!s->used)
			return s;
		if (s->hash == hash && s->n == n && s->pid == h->pid && s->tid == h->tid &&
		    s->epoch == epoch && s->trunc == trunc &&
		    !memcmp(&r->pool[s->off], f, n * sizeof(*f)))
			return s;
	}
}

/* Room for a whole sample of n records (each a new frame entry at worst),
 * one more stack entry and its n pooled records; when a part is at its
 * bound the memo starts afresh. -1: ENOMEM. */
static int raw_room(struct prof_raw *r, uint32_t n)
{
	int fok = (r->fn + n) * 2 <= r->fcap || !fgrow(r, r->fn + n);
	int sok = (r->sn + 1) * 2 <= r->scap || !sgrow(r);
	int pok = r->pool_n + n <= r->pool_cap || !pool_grow(r, r->pool_n + n);

	if (fok && sok && pok)
		return 0;
	raw_reset(r);
	if (n * 2 > r->fcap && fgrow(r, n))
		return -1;
	if (2 > r->scap && sgrow(r))
		return -1;
	return n > r->pool_cap && pool_grow(r, n) ? -1 : 0;
}

int profile_add_raw(struct profile *p, uint64_t epoch, const struct sample_hdr *h,
		    const struct frame_rec *frames, profile_sym_fn sym, void *ctx)
{
	struct sym_sample s = {.ts_ns = h->ts_ns,
			       .pid = h->pid,
			       .tid = h->tid,
			       .cpu = h->cpu,
			       .flags = h->flags,
			       .nframes = h->nframes};
	uint32_t n = h->nframes < BPFPY_MAX_DEPTH ? h->nframes : BPFPY_MAX_DEPTH;
	int trunc = !!(h->flags & SAMPLE_TRUNCATED);
	struct prof_raw *r = p->raw;
	struct raw_sslot *ss;
	uint64_t hash;
	uint32_t sid;
	int nomemo = 0;

	if (!n) {
		p->nempty++;
		return 0;
	}
	s.nframes = n;
	if (!r) {
		r = p->raw = calloc(1, sizeof(*r));
		if (!r)
			return oom(p);
	}
	if (raw_room(r, n))
		return oom(p);
	hash = stack_hash(h, epoch, trunc, frames, n);
	ss = sfind(r, hash, h, epoch, trunc, frames, n);
	if (ss->used) {
		r->st.stack_hits++;
		p->ntruncated += trunc;
		count_sample(p, &s, ss->sid, 0, 0);
		return 0;
	}
	r->st.stack_misses++;
	if (++r->gen == 0) /* 0 means "empty": never a sample's */
		r->gen = 1;
	/* Every record: a frame id, a name of this sample, or a new name. */
	for (uint32_t i = 0; i < n; i++) {
		struct raw_fslot *fs = ffind(r, h->pid, epoch, &frames[i]);

		if (fs->id1) {
			r->ids[i] = fs->id1 - 1;
			r->pend[i] = UINT32_MAX;
			r->st.frame_hits++;
			continue;
		}
		if (fs->gen == r->gen) { /* named earlier in this sample */
			r->pend[i] = fs->idx;
			continue;
		}
		if (sym(ctx, &frames[i], &r->sf[i]))
			return 1;
		r->st.frame_misses++;
		r->pend[i] = i;
		if (!frames[i].fingerprint) { /* unknown identity: named anew each time */
			nomemo = 1;
			continue;
		}
		if (!fs->gen) { /* a new entry (a stale pending one is reused) */
			fs->code = frames[i].code;
			fs->instr = frames[i].instr;
			fs->fingerprint = frames[i].fingerprint;
			fs->pid = h->pid;
			fs->epoch = epoch;
			r->fn++;
		}
		fs->gen = r->gen;
		fs->idx = i;
	}
	/* Every frame named: intern the new ones, in order, and remember them. */
	for (uint32_t i = 0; i < n; i++) {
		struct raw_fslot *fs;

		if (r->pend[i] == UINT32_MAX)
			continue;
		if (r->pend[i] < i) {
			r->ids[i] = r->ids[r->pend[i]];
			continue;
		}
		r->ids[i] = intern_frame(p, &r->sf[i]);
		if (r->ids[i] == UINT32_MAX)
			return oom(p);
		if (!frames[i].fingerprint)
			continue;
		fs = ffind(r, h->pid, epoch, &frames[i]);
		fs->id1 = r->ids[i] + 1;
		fs->gen = 0;
	}
	sid = stack_of(p, &s, r->ids, n);
	if (sid == UINT32_MAX)
		return oom(p);
	p->ntruncated += trunc;
	count_sample(p, &s, sid, 0, 0);
	/* A stack with a frame of unknown fingerprint (0: none come from the
	 * kernel, which never sends it) is counted but not memoized. */
	if (nomemo)
		return 0;
	ss->hash = hash;
	ss->epoch = epoch;
	ss->pid = h->pid;
	ss->tid = h->tid;
	ss->off = r->pool_n;
	ss->n = (uint16_t)n;
	ss->trunc = (uint8_t)trunc;
	ss->used = 1;
	ss->sid = sid;
	memcpy(&r->pool[r->pool_n], frames, n * sizeof(*frames));
	r->pool_n += n;
	r->sn++;
	return 0;
}

void profile_raw_stats(const struct profile *p, struct profile_raw_stats *out)
{
	if (p->raw)
		*out = p->raw->st;
	else
		memset(out, 0, sizeof(*out));
}

void profile_stack_add(struct profile *p, uint32_t stack, uint64_t n)
{
	if (stack >= p->nstacks)
		return;
	p->stacks[stack].count += n;
	p->stacks[stack].weight_ns += n * p->period_ns;
	p->threads[p->stacks[stack].thread].count += n;
	p->threads[p->stacks[stack].thread].weight_ns += n * p->period_ns;
	p->total += n;
	p->total_ns += n * p->period_ns;
}

static struct prof_comm *comm_entry(struct profile *p, uint32_t pid)
{
	for (uint32_t i = 0; i < p->ncomms; i++)
		if (p->comms[i].pid == pid)
			return &p->comms[i];
	if (profile_grow((void **)&p->comms, &p->cap_comms, p->ncomms + 1, sizeof(*p->comms))) {
		errno = ENOMEM;
		return NULL;
	}
	memset(&p->comms[p->ncomms], 0, sizeof(p->comms[0]));
	p->comms[p->ncomms].pid = pid;
	return &p->comms[p->ncomms++];
}

/* key = value into labels[*n] (replacing key), at most max. */
static int set_label(struct profile *p, struct prof_label *labels, uint32_t *n, uint32_t max,
		     const char *key, const char *value)
{
	uint32_t k = intern_str(p, key), v = intern_str(p, value);

	if (k == UINT32_MAX || v == UINT32_MAX) {
		errno = ENOMEM;
		return -1;
	}
	for (uint32_t i = 0; i < *n; i++)
		if (labels[i].key == k) {
			labels[i].value = v;
			return 0;
		}
	if (*n >= max) {
		errno = ENOSPC;
		return -1;
	}
	labels[(*n)++] = (struct prof_label){k, v};
	return 0;
}

int profile_set_proc_label(struct profile *p, uint32_t pid, const char *key, const char *value)
{
	struct prof_comm *c = comm_entry(p, pid);

	return c ? set_label(p, c->labels, &c->nlabels, PROF_PROC_LABELS, key, value) : -1;
}

int profile_set_label(struct profile *p, const char *key, const char *value)
{
	return set_label(p, p->labels, &p->nlabels, PROF_LABELS, key, value);
}

const struct prof_label *profile_proc_labels(const struct profile *p, uint32_t pid, uint32_t *n)
{
	for (uint32_t i = 0; i < p->ncomms; i++)
		if (p->comms[i].pid == pid) {
			*n = p->comms[i].nlabels;
			return p->comms[i].labels;
		}
	*n = 0;
	return NULL;
}

void profile_set_window(struct profile *p, uint64_t start_ns, uint64_t end_ns)
{
	p->window_start_ns = start_ns;
	p->window_end_ns = end_ns;
}

struct profile *profile_new_like(const struct profile *p)
{
	struct profile *n = profile_new(p->period_ns, p->clock);

	if (!n)
		return NULL;
	n->max_ordered = p->max_ordered;
	n->weighted = p->weighted;
	n->realtime_off = p->realtime_off;
	for (uint32_t i = 0; i < p->nlabels; i++)
		if (profile_set_label(n, profile_str(p, p->labels[i].key),
				      profile_str(p, p->labels[i].value))) {
			profile_free(n);
			return NULL;
		}
	return n;
}

int profile_set_comm(struct profile *p, uint32_t pid, const char *name)
{
	char *copy = utf8_dup(name ? name : "");
	struct prof_comm *c = copy ? comm_entry(p, pid) : NULL;

	if (!c) {
		free(copy);
		errno = ENOMEM;
		return -1;
	}
	free(c->name);
	c->name = copy;
	return 0;
}

void profile_set_weighted(struct profile *p, int on)
{
	p->weighted = on;
}

uint64_t profile_stack_value(const struct profile *p, const struct prof_stack *st)
{
	return p->weighted ? st->weight_ns : st->count;
}

static struct prof_thread *find_thread(const struct profile *p, uint32_t pid, uint32_t tid)
{
	struct thread_key k = {pid, tid};
	struct prof_slot *slot;

	if (!p->ithread.cap)
		return NULL;
	slot = ix_find(p, (struct prof_index *)&p->ithread, (uint32_t)fnv(FNV_INIT, &k, sizeof(k)),
		       thread_eq, &k);
	return slot->id1 ? &p->threads[slot->id1 - 1] : NULL;
}

int profile_set_thread_name(struct profile *p, uint32_t pid, uint32_t tid, const char *name)
{
	struct prof_thread *t = find_thread(p, pid, tid);
	char *copy;

	if (!t || !name)
		return -1;
	copy = utf8_dup(name);
	if (!copy)
		return -1;
	free(t->name);
	t->name = copy;
	return 0;
}

const char *profile_thread_name(const struct profile *p, uint32_t pid, uint32_t tid)
{
	const struct prof_thread *t = find_thread(p, pid, tid);

	return t ? t->name : NULL;
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
	for (uint32_t i = 0; i < p->nthreads; i++) {
		free(p->threads[i].order);
		free(p->threads[i].name);
	}
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
	profile_sources_free(p);
	if (p->raw) {
		free(p->raw->f);
		free(p->raw->s);
		free(p->raw->pool);
		free(p->raw);
	}
	free(p);
}

void profile_label(char *buf, size_t len, const char *name, const char *file, int line, int kind,
		   int no_lines)
{
	if (kind == FRAME_KIND_NATIVE || kind == FRAME_KIND_KERNEL)
		/* No line: the same label with or without no_lines. */
		snprintf(buf, len, "%s%s%s%s %s", name, *file ? " (" : "", file, *file ? ")" : "",
			 kind == FRAME_KIND_NATIVE ? "[native]" : "[kernel]");
	else if (!*file || kind == FRAME_KIND_MARK)
		snprintf(buf, len, "%s", name);
	else if (no_lines)
		snprintf(buf, len, "%s (%s)", name, file);
	else
		snprintf(buf, len, "%s (%s:%d)", name, file, line);
}

char *profile_frame_label(const struct profile *p, uint32_t key, int no_lines, int sanitize,
			  char *buf, size_t len)
{
	const struct prof_func *fn = &p->funcs[no_lines ? key : p->frames[key].func];
	const char *name = p->strs[fn->name], *file = p->strs[fn->file];

	char raw[4096];

	profile_label(raw, sizeof(raw), name, file, no_lines ? 0 : p->frames[key].line, fn->kind,
		      no_lines);
	if (sanitize)
		text_escape(buf, len, raw, TEXT_FOLDED);
	else
		snprintf(buf, len, "%s", raw);
	return buf;
}

void profile_set_realtime_off(struct profile *p, int64_t off)
{
	p->realtime_off = off;
}

/*
 * An instruction mark's addr (profile.h): bits 0-7 the byte, bit 8 set
 * when there is one, 9-32 the index + 1, 33-47 the column + 1, 48-62 the
 * end column + 1 (0: unknown), 63 PROF_OP_TAG.
 */
#define OP_HAS_BYTE  (1ull << 8)
#define OP_INDEX_AT  9
#define OP_INDEX_MAX ((1ll << 24) - 1)
#define OP_COL_AT    33
#define OP_ENDCOL_AT 48
#define OP_COL_MAX   0x7fff

void profile_op_name(char *buf, size_t len, const char *name, const char *base)
{
	if (base)
		snprintf(buf, len, "[op %s (%s)]", name, base);
	else
		snprintf(buf, len, "[op %s]", name);
}

uint64_t profile_op_addr(int byte, int64_t index, int col, int endcol)
{
	uint64_t a = PROF_OP_TAG;

	if (byte >= 0 && byte <= 0xff)
		a |= (uint64_t)byte | OP_HAS_BYTE;
	if (index >= 0 && index < OP_INDEX_MAX)
		a |= (uint64_t)(index + 1) << OP_INDEX_AT;
	if (col >= 0 && col < OP_COL_MAX)
		a |= (uint64_t)(col + 1) << OP_COL_AT;
	if (endcol >= 0 && endcol < OP_COL_MAX)
		a |= (uint64_t)(endcol + 1) << OP_ENDCOL_AT;
	return a;
}

/* n bytes of s into out[64], cut at a character (profile strings are
 * UTF-8, and a name read back from a raw file can be anything). */
static void op_copy(char *out, const char *s, size_t n)
{
	if (n > 63)
		for (n = 63; n && ((unsigned char)s[n] & 0xc0) == 0x80; n--)
			;
	snprintf(out, 64, "%.*s", (int)n, s);
}

int profile_op(const struct profile *p, uint32_t frame, struct prof_op *out)
{
	if (frame >= p->nframes || !profile_op_func(p, p->frames[frame].func, out))
		return 0;
	out->line = p->frames[frame].line;
	return 1;
}

int profile_op_func(const struct profile *p, uint32_t func, struct prof_op *out)
{
	const struct prof_func *fn;
	const char *name, *in, *open;
	size_t n, len;
	uint64_t a;

	if (func >= p->nfuncs)
		return 0;
	fn = &p->funcs[func];
	name = profile_str(p, fn->name);
	n = strlen(name);
	if (fn->kind != FRAME_KIND_MARK || !(fn->addr & PROF_OP_TAG) || n < 6 ||
	    strncmp(name, "[op ", 4) || name[n - 1] != ']')
		return 0;
	/* NAME is an identifier or "<...>", never with " (" in it. */
	in = name + 4;
	len = n - 5;
	open = memmem(in, len, " (", 2);
	out->specialized = open && in[len - 1] == ')';
	op_copy(out->name, in, out->specialized ? (size_t)(open - in) : len);
	if (out->specialized)
		op_copy(out->base, open + 2, len - (size_t)(open - in) - 3);
	else
		op_copy(out->base, out->name, strlen(out->name));
	a = fn->addr;
	out->byte = a & OP_HAS_BYTE ? (int)(a & 0xff) : -1;
	out->index = (int64_t)((a >> OP_INDEX_AT) & OP_INDEX_MAX) - 1;
	out->col = (int)((a >> OP_COL_AT) & OP_COL_MAX) - 1;
	out->endcol = (int)((a >> OP_ENDCOL_AT) & OP_COL_MAX) - 1;
	out->file = profile_str(p, fn->file);
	out->line = -1;
	return 1;
}
