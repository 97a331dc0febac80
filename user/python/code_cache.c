// SPDX-License-Identifier: MIT
/*
 * Code-object cache. See code_cache.h for the contract; the notes here are
 * about how it stays cheap and bounded.
 *
 * Entries live in one array of cap slots, found through a chained hash on
 * the address and ordered by an intrusive LRU list (indices, not
 * pointers, so the array could be reallocated later without fixups).
 * Nothing is allocated per lookup; a fill allocates the two strings and
 * the line table, freed when the slot is reused. The array starts small and
 * doubles up to the bound: record -a holds a cache per process, and 200
 * caches allocated at their bound (4096 slots, 400 KiB each, zeroed) were
 * most of its RSS for the few dozen objects a light process shows.
 */
#include "code_cache.h"

#include <stdlib.h>
#include <string.h>

#include "linetable.h"
#include "pystr.h"
#include "walker_user.h"

#define NIL UINT32_MAX
/* Slots a new cache starts with. */
#define CACHE_FIRST_ALLOC 64

/* Names and files of refilled or evicted entries wait here before they are
 * freed, so that the strings of every frame of one stack stay valid while
 * the caller symbolizes the rest of it (a torn live read can name one
 * address twice, under two fingerprints: the second refills the entry the
 * first points into). A stack retires at most 2 strings a frame; when full,
 * the older half goes, which never holds the current stack's. */
#define RETIRED_MAX (8 * BPFPY_MAX_DEPTH)

struct slot {
	struct code_entry e;
	char *name, *file;   /* owned; NULL when the read failed */
	uint8_t *table;	     /* owned */
	uint32_t hnext;	     /* next slot in the hash chain */
	uint32_t prev, next; /* LRU list, head = most recently used */
};

struct code_cache {
	struct mem_reader *r;
	struct py_offsets o;
	struct slot *slots;
	size_t cap, size;
	size_t alloc; /* slots allocated: size <= alloc <= cap */
	uint32_t *buckets;
	uint32_t nbuckets; /* power of two */
	uint32_t lru_head, lru_tail;
	struct code_cache_stats st;
	struct code_entry fail; /* what a stale or unreadable lookup returns */
	char **retired;		/* RETIRED_MAX, oldest first */
	size_t nretired;
	code_names_fn names; /* the kernel's copies of freed objects' names */
	void *names_ctx;
	uint32_t names_pid;
	struct slot kslot; /* the last entry made from such a copy */
};

static uint32_t bucket_of(const struct code_cache *c, uint64_t addr)
{
	/* Code objects are 16-byte aligned heap blocks: multiply so that the
	 * low bits, all zero, do not pick the bucket. */
	return (uint32_t)((addr * 0x9E3779B97F4A7C15ULL) >> 32) & (c->nbuckets - 1);
}

static void lru_unlink(struct code_cache *c, uint32_t i)
{
	struct slot *s = &c->slots[i];

	if (s->prev != NIL)
		c->slots[s->prev].next = s->next;
	else
		c->lru_head = s->next;
	if (s->next != NIL)
		c->slots[s->next].prev = s->prev;
	else
		c->lru_tail = s->prev;
	s->prev = s->next = NIL;
}

static void lru_push_head(struct code_cache *c, uint32_t i)
{
	struct slot *s = &c->slots[i];

	s->prev = NIL;
	s->next = c->lru_head;
	if (c->lru_head != NIL)
		c->slots[c->lru_head].prev = i;
	c->lru_head = i;
	if (c->lru_tail == NIL)
		c->lru_tail = i;
}

static void touch(struct code_cache *c, uint32_t i)
{
	if (c->lru_head != i) {
		lru_unlink(c, i);
		lru_push_head(c, i);
	}
}

static uint32_t find(const struct code_cache *c, uint64_t addr)
{
	for (uint32_t i = c->buckets[bucket_of(c, addr)]; i != NIL; i = c->slots[i].hnext)
		if (c->slots[i].e.addr == addr)
			return i;
	return NIL;
}

static void hash_unlink(struct code_cache *c, uint32_t i)
{
	uint32_t *p = &c->buckets[bucket_of(c, c->slots[i].e.addr)];

	while (*p != NIL && *p != i)
		p = &c->slots[*p].hnext;
	if (*p == i)
		*p = c->slots[i].hnext;
}

static void retire(struct code_cache *c, char *s)
{
	if (!s)
		return;
	if (!c->retired) {
		c->retired = malloc(RETIRED_MAX * sizeof(*c->retired));
		if (!c->retired) { /* no room to wait: the old contract, free now */
			free(s);
			return;
		}
	}
	if (c->nretired == RETIRED_MAX) {
		size_t half = RETIRED_MAX / 2;

		for (size_t k = 0; k < half; k++)
			free(c->retired[k]);
		memmove(c->retired, c->retired + half, (RETIRED_MAX - half) * sizeof(*c->retired));
		c->nretired -= half;
	}
	c->retired[c->nretired++] = s;
}

void code_cache_end_sample(struct code_cache *c)
{
	for (size_t k = 0; k < c->nretired; k++)
		free(c->retired[k]);
	c->nretired = 0;
}

/* The table is only read inside a lookup; names may be held by the caller. */
static void slot_release(struct code_cache *c, struct slot *s)
{
	retire(c, s->name);
	retire(c, s->file);
	free(s->table);
	s->name = s->file = NULL;
	s->table = NULL;
}

struct code_cache *code_cache_new(struct mem_reader *r, const struct py_offsets *o, size_t cap)
{
	struct code_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (!cap)
		cap = CODE_CACHE_DEFAULT_CAP;
	if (cap > (1u << 24))
		cap = 1u << 24;
	c->r = r;
	c->o = *o;
	c->cap = cap;
	c->alloc = cap < CACHE_FIRST_ALLOC ? cap : CACHE_FIRST_ALLOC;
	/* Load factor at most 1/2 keeps chains short. */
	c->nbuckets = 1;
	while (c->nbuckets < 2 * c->alloc)
		c->nbuckets <<= 1;
	c->slots = calloc(c->alloc, sizeof(*c->slots));
	c->buckets = malloc(c->nbuckets * sizeof(*c->buckets));
	if (!c->slots || !c->buckets) {
		code_cache_free(c);
		return NULL;
	}
	memset(c->buckets, 0xff, c->nbuckets * sizeof(*c->buckets));
	c->lru_head = c->lru_tail = NIL;
	c->st.cap = cap;
	c->fail.name = c->fail.file = CODE_CACHE_UNKNOWN;
	return c;
}

void code_cache_clear(struct code_cache *c)
{
	for (size_t i = 0; i < c->size; i++)
		slot_release(c, &c->slots[i]);
	slot_release(c, &c->kslot);
	code_cache_end_sample(c);
	c->size = 0;
	c->st.size = 0;
	memset(c->buckets, 0xff, c->nbuckets * sizeof(*c->buckets));
	c->lru_head = c->lru_tail = NIL;
}

void code_cache_free(struct code_cache *c)
{
	if (!c)
		return;
	if (c->slots && c->buckets)
		code_cache_clear(c);
	free(c->retired);
	free(c->slots);
	free(c->buckets);
	free(c);
}

/* Read the code object's header exactly as the walker does (same size, same
 * buffer shape), so that our fingerprint and the walker's agree. */
static int read_header(struct code_cache *c, uint64_t addr, uint8_t *cbuf)
{
	uint32_t csize = c->o.code_read_size;

	if (csize > BPFPY_CODE_BUF)
		csize = BPFPY_CODE_BUF;
	memset(cbuf, 0, WALK_CBUF_SIZE + 8);
	return mem_read(c->r, cbuf, csize, addr);
}

static char *read_name(struct code_cache *c, uint64_t addr)
{
	char buf[PYSTR_DEFAULT_CAP];

	if (pystr_read(c->r, &c->o, addr, buf, sizeof(buf)) < 0)
		return NULL;
	return strdup(buf);
}

static void fill(struct code_cache *c, struct slot *s, uint64_t addr, uint32_t fp,
		 const uint8_t *cbuf)
{
	const struct py_offsets *o = &c->o;
	uint32_t name_off = o->code_qualname ? o->code_qualname : o->code_name;
	size_t len = 0;
	int rc;

	slot_release(c, s);
	memset(&s->e, 0, sizeof(s->e));
	s->e.addr = addr;
	s->e.fingerprint = fp;
	s->e.version_hex = o->version_hex;
	s->e.status = CODE_OK;
	s->e.firstlineno = (int)walk_u32(cbuf, o->code_firstlineno, WALK_CBUF_MASK);
	s->name = read_name(c, walk_u64(cbuf, name_off, WALK_CBUF_MASK));
	s->file = read_name(c, walk_u64(cbuf, o->code_filename, WALK_CBUF_MASK));
	rc = pybytes_read(c->r, o, walk_u64(cbuf, o->code_linetable, WALK_CBUF_MASK), &s->table,
			  &len, PYBYTES_DEFAULT_CAP);
	s->e.name = s->name ? s->name : CODE_CACHE_UNKNOWN;
	s->e.file = s->file ? s->file : CODE_CACHE_UNKNOWN;
	s->e.linetable = s->table;
	s->e.linetable_len = len;
	s->e.table_truncated = rc == 1;
}

/* Double the slots (at most to cap) and the buckets with them, rehashing
 * every slot in use (all of [0, size) is chained). -1 when out of memory:
 * the caller then evicts, as at the bound. */
static int grow_slots(struct code_cache *c)
{
	size_t n = c->alloc * 2 < c->cap ? c->alloc * 2 : c->cap;
	uint32_t nb = c->nbuckets, *b;
	struct slot *ns;

	if (n <= c->alloc)
		return -1;
	ns = realloc(c->slots, n * sizeof(*ns));
	if (!ns)
		return -1;
	memset(ns + c->alloc, 0, (n - c->alloc) * sizeof(*ns));
	c->slots = ns;
	c->alloc = n;
	while (nb < 2 * n)
		nb <<= 1;
	if (nb == c->nbuckets || !(b = malloc(nb * sizeof(*b))))
		return 0; /* old buckets: longer chains, still right */
	memset(b, 0xff, nb * sizeof(*b));
	free(c->buckets);
	c->buckets = b;
	c->nbuckets = nb;
	for (uint32_t i = 0; i < c->size; i++) {
		uint32_t k = bucket_of(c, c->slots[i].e.addr);

		c->slots[i].hnext = c->buckets[k];
		c->buckets[k] = i;
	}
	return 0;
}

/* A slot for a new address: a never-used one, or the least recently used. */
static uint32_t take_slot(struct code_cache *c, uint64_t addr)
{
	uint32_t i, b;

	/* Grow before evicting; when growing fails, evict as at the bound. */
	if (c->size == c->alloc && c->size < c->cap)
		(void)grow_slots(c);
	if (c->size < c->alloc) {
		i = (uint32_t)c->size++;
		c->st.size = c->size;
	} else {
		i = c->lru_tail;
		lru_unlink(c, i);
		hash_unlink(c, i);
		slot_release(c, &c->slots[i]);
		c->st.evictions++;
	}
	c->slots[i].e.addr = addr;
	b = bucket_of(c, addr);
	c->slots[i].hnext = c->buckets[b];
	c->buckets[b] = i;
	lru_push_head(c, i);
	return i;
}

void code_cache_set_names(struct code_cache *c, code_names_fn fn, void *ctx, uint32_t pid)
{
	c->names = fn;
	c->names_ctx = ctx;
	c->names_pid = pid;
}

/* A name the kernel copied: bytes of a str that claimed to be ASCII, from
 * a process we do not trust. The same rule as pystr_read: a byte past
 * 0x7F (torn, or a lie) and NUL become U+FFFD, so what we print is UTF-8. */
static char *copy_str(const char *s, size_t len)
{
	char *out = malloc(3 * len + 1), *p = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];

		p += pystr_utf8(ch < 0x80 ? ch : 0xFFFFFFFFu, p);
	}
	*p = '\0';
	return out;
}

/* The kernel's copy of (addr, fp) into k: 0, or -1 when there is none. */
static int kernel_copy(struct code_cache *c, uint64_t addr, uint32_t fp, struct code_copy *k)
{
	if (!c->names || !fp)
		return -1;
	return c->names(c->names_ctx, c->names_pid, addr, fp, k) ? -1 : 0;
}

void code_copy_gather(struct code_copy *out, code_chunk_fn chunk, void *ctx)
{
	struct code_name *n = &out->n;
	struct code_table_chunk buf;
	uint32_t at;

	if (!(n->flags & CODE_NAME_TABLE))
		return;
	if (n->table_len > CODE_TABLE_LIMIT)
		code_name_cut(n, CODE_TABLE_CHUNKS);
	memcpy(out->table, n->table, n->table_len < CODE_TABLE_MAX ? n->table_len : CODE_TABLE_MAX);
	for (uint32_t i = 0; (at = CODE_TABLE_MAX + i * CODE_TABLE_CHUNK) < n->table_len; i++) {
		if (chunk(ctx, i, &buf)) {
			code_name_cut(n, i); /* evicted */
			return;
		}
		memcpy(out->table + at, buf.bytes,
		       n->table_len - at < CODE_TABLE_CHUNK ? n->table_len - at : CODE_TABLE_CHUNK);
	}
}

/* Fill s from the kernel's copy k of (addr, fp); -1 when out of memory. */
static int fill_copy(struct code_cache *c, struct slot *s, uint64_t addr, uint32_t fp,
		     const struct code_copy *k)
{
	const struct code_name *n = &k->n;

	slot_release(c, s);
	memset(&s->e, 0, sizeof(s->e));
	s->name = copy_str(n->name, n->name_len < CODE_NAME_MAX ? n->name_len : CODE_NAME_MAX - 1);
	if (!s->name)
		return -1;
	if (n->flags & CODE_NAME_FILE)
		s->file = copy_str(n->file,
				   n->file_len < CODE_FILE_MAX ? n->file_len : CODE_FILE_MAX - 1);
	if (n->flags & CODE_NAME_TABLE) {
		s->e.linetable_len =
		    n->table_len < CODE_TABLE_LIMIT ? n->table_len : CODE_TABLE_LIMIT;
		s->table = malloc(s->e.linetable_len ? s->e.linetable_len : 1);
		if (s->table)
			memcpy(s->table, k->table, s->e.linetable_len);
		else
			s->e.linetable_len = 0;
		s->e.table_truncated = !!(n->flags & CODE_NAME_CUT);
	}
	s->e.addr = addr;
	s->e.fingerprint = fp;
	s->e.version_hex = c->o.version_hex;
	s->e.status = CODE_OK;
	s->e.from_copy = 1;
	s->e.firstlineno = n->firstlineno;
	s->e.name = s->name;
	s->e.file = s->file ? s->file : CODE_CACHE_UNKNOWN;
	s->e.linetable = s->table;
	return 0;
}

/* The entry for a freed (or replaced) object from the kernel's copy of its
 * names, or NULL when there is none. */
static const struct code_entry *kernel_entry(struct code_cache *c, uint64_t addr, uint32_t fp)
{
	struct code_copy k;

	if (kernel_copy(c, addr, fp, &k) || fill_copy(c, &c->kslot, addr, fp, &k))
		return NULL;
	c->st.kernel_named++;
	return &c->kslot.e;
}

/* Does what s read from the object say what the kernel's copy k says? */
static int agrees(const struct slot *s, const struct code_copy *k)
{
	const struct code_name *n = &k->n;

	return s->name && strlen(s->name) == n->name_len &&
	       !memcmp(s->name, n->name, n->name_len) &&
	       (!(n->flags & CODE_NAME_FILE) || (s->file && strlen(s->file) == n->file_len &&
						 !memcmp(s->file, n->file, n->file_len))) &&
	       s->e.firstlineno == n->firstlineno &&
	       (!(n->flags & CODE_NAME_TABLE) || (s->table && s->e.linetable_len >= n->table_len &&
						  !memcmp(s->table, k->table, n->table_len)));
}

/*
 * Fill slot s for the object the sample saw, now at addr with fingerprint
 * fp: from the kernel's copy when it is whole (file and all of the line
 * table), else by reading the object. The copy wins because it was taken
 * while the sampled thread ran that code, so the object and its line
 * table were alive; now the header can still match (freed, not yet reused)
 * while the table it points to is already gone, which gave wrong lines.
 * A cut copy (a table past CODE_TABLE_LIMIT, or its file not copied) gives
 * way to the object only where the two agree on all the copy holds: a
 * module's top-level code, freed once imported, kept its header while its
 * name read as "\x7f" and its lines went with its table.
 */
static void fill_sampled(struct code_cache *c, struct slot *s, uint64_t addr, uint32_t fp,
			 const uint8_t *cbuf)
{
	struct code_copy k;

	if (kernel_copy(c, addr, fp, &k)) {
		fill(c, s, addr, fp, cbuf);
		return;
	}
	if ((k.n.flags & CODE_NAME_FILE) && (k.n.flags & CODE_NAME_TABLE) &&
	    !(k.n.flags & CODE_NAME_CUT) && !fill_copy(c, s, addr, fp, &k)) {
		c->st.kernel_filled++;
		return;
	}
	fill(c, s, addr, fp, cbuf);
	if (agrees(s, &k))
		return;
	if (fill_copy(c, s, addr, fp, &k))
		fill(c, s, addr, fp, cbuf); /* out of memory: what was read, as before */
	else
		c->st.kernel_filled++;
}

static const struct code_entry *fail_entry(struct code_cache *c, uint64_t addr, uint32_t fp,
					   enum code_status why)
{
	const struct code_entry *k = kernel_entry(c, addr, fp);

	if (k)
		return k;
	c->fail.addr = addr;
	c->fail.fingerprint = fp;
	c->fail.version_hex = c->o.version_hex;
	c->fail.status = (uint8_t)why;
	return &c->fail;
}

const struct code_entry *code_cache_lookup(struct code_cache *c, uint64_t addr,
					   uint32_t fingerprint)
{
	uint8_t cbuf[WALK_CBUF_SIZE + 8];
	uint32_t i = find(c, addr), actual;

	if (i != NIL && fingerprint && c->slots[i].e.fingerprint == fingerprint) {
		c->st.hits++;
		touch(c, i);
		return &c->slots[i].e;
	}
	/* Unknown fingerprint, a reused address, or a new one: look at what
	 * is there now. */
	if (!addr || read_header(c, addr, cbuf)) {
		c->st.unreadable++;
		return fail_entry(c, addr, fingerprint, CODE_UNREADABLE);
	}
	actual = walk_fingerprint(cbuf, &c->o);
	if (fingerprint && fingerprint != actual) {
		/* The sampled object is gone. What is there now is not kept
		 * for the samples that will name it: it may be freed memory
		 * whose header still reads, and a new object with the same
		 * fingerprint (its strings and table reallocated where the
		 * old ones were, as an exec loop does) would then be served
		 * that entry, a table that was already garbage (3.9: lines
		 * past the file's end), rather than the kernel's copy. */
		c->st.stale++;
		return fail_entry(c, addr, fingerprint, CODE_STALE);
	}
	if (i != NIL && c->slots[i].e.fingerprint == actual) {
		/* The cached entry is still right for what is there now. */
		touch(c, i);
		if (!fingerprint)
			c->st.revalidated++;
		return &c->slots[i].e;
	}
	if (i != NIL) {
		c->st.refreshes++;
		touch(c, i);
	} else {
		c->st.misses++;
		i = take_slot(c, addr);
	}
	if (fingerprint)
		fill_sampled(c, &c->slots[i], addr, actual, cbuf);
	else
		fill(c, &c->slots[i], addr, actual, cbuf);
	return &c->slots[i].e;
}

/* The line, -1 if unknown, LINETABLE_CUT if unknown because the copy of
 * the table ends before the instruction's entry. */
static int entry_line(const struct code_entry *e, int instr)
{
	if (e->status != CODE_OK || !e->linetable)
		return -1;
	return linetable_line_cut(e->version_hex, e->linetable, e->linetable_len,
				  e->table_truncated, e->firstlineno, instr);
}

int code_cache_line(const struct code_entry *e, int instr)
{
	int line = entry_line(e, instr);

	return line == LINETABLE_CUT ? -1 : line;
}

void code_cache_cols(const struct code_entry *e, int instr, int *col, int *endcol)
{
	*col = *endcol = -1;
	if (e->status == CODE_OK && e->linetable)
		linetable_cols(e->version_hex, e->linetable, e->linetable_len, e->firstlineno,
			       instr, col, endcol);
}

int code_cache_symbolize(struct code_cache *c, const struct frame_rec *f, struct sym_frame *out)
{
	const struct code_entry *e = code_cache_lookup(c, f->code, f->fingerprint);

	/* Every field: callers reuse their frame arrays, and a kind left over
	 * from a native frame would draw this one as machine code. */
	*out = (struct sym_frame){.kind = FRAME_KIND_PYTHON};
	out->name = e->name;
	out->file = e->file;
	out->firstlineno = e->status == CODE_OK ? e->firstlineno : 0;
	/* The walker sends the raw instruction value; the layout turns it
	 * into an index (f_lasti, or an offset into co_code_adaptive). */
	out->line = entry_line(e, walk_instr_index(&c->o, f->instr));
	if (out->line == LINETABLE_CUT) {
		if (e->from_copy)
			c->st.lines_cut_copy++;
		else
			c->st.lines_cut++;
		out->line = -1;
	}
	return e->status;
}

int code_cache_sym(void *cache, const struct frame_rec *f, struct sym_frame *out)
{
	return code_cache_symbolize(cache, f, out);
}

void code_cache_get_stats(const struct code_cache *c, struct code_cache_stats *out)
{
	*out = c->st;
}
