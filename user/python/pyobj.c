// SPDX-License-Identifier: MIT
/*
 * Dicts, ints and instance attributes of a target, read out of process.
 * See pyobj.h; the layouts are struct py_objlayout (py_offsets.h).
 */
#include "pyobj.h"

#include <stdio.h>
#include <string.h>

#include "pystr.h"
#include "text_escape.h"

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static int read_u64(struct mem_reader *r, uint64_t addr, uint64_t *out)
{
	return mem_read(r, out, sizeof(*out), addr);
}

/* A malformed object: a failure that is no read error. */
static int malformed(struct mem_reader *r)
{
	r->last_errno = 0;
	return -1;
}

/* Where a keys object's entries are, how many, and how wide. */
struct keys_info {
	uint64_t entries;
	uint64_t n;
	unsigned esize, key_off, value_off;
};

static int keys_info(struct mem_reader *r, const struct py_objlayout *L, uint64_t keys,
		     struct keys_info *k)
{
	uint8_t hdr[64];
	uint64_t size, n, index_bytes;

	if (!keys || !L->keys_indices || L->keys_indices > sizeof(hdr) ||
	    L->keys_nentries + 8u > L->keys_indices)
		return malformed(r);
	if (mem_read(r, hdr, L->keys_indices, keys))
		return -1;
	n = get_u64(hdr + L->keys_nentries);
	if (L->keys_model == PY_KEYS_SIZE) {
		if (L->keys_size + 8u > L->keys_indices)
			return malformed(r);
		size = get_u64(hdr + L->keys_size);
		/* A power of two, from PyDict_MINSIZE (8) up: a torn or
		 * foreign object fails here rather than sizing a read. */
		if (size < 8 || size > (1ull << 30) || (size & (size - 1)))
			return malformed(r);
		index_bytes = size * (size <= 0xff ? 1 : size <= 0xffff ? 2 : 4);
		k->esize = PY_DICT_ENTRY_SIZE;
	} else if (L->keys_model == PY_KEYS_LOG2) {
		unsigned l2, l2ib, kind, want;

		if (L->keys_size >= L->keys_indices || L->keys_index_bytes >= L->keys_indices ||
		    L->keys_kind >= L->keys_indices)
			return malformed(r);
		l2 = hdr[L->keys_size];
		l2ib = hdr[L->keys_index_bytes];
		kind = hdr[L->keys_kind];
		if (l2 < 3 || l2 > 30 || kind > 2)
			return malformed(r);
		/* The index width follows from the size (new_keys_object). */
		want = l2 < 8 ? l2 : l2 < 16 ? l2 + 1 : l2 + 2;
		if (l2ib != want)
			return malformed(r);
		size = 1ull << l2;
		index_bytes = 1ull << l2ib;
		k->esize =
		    kind == PY_DICT_KIND_GENERAL ? PY_DICT_ENTRY_SIZE : PY_DICT_UNICODE_ENTRY_SIZE;
	} else {
		return malformed(r);
	}
	if (n > size || n > PYDICT_MAX_ENTRIES)
		return malformed(r);
	k->entries = keys + L->keys_indices + index_bytes;
	k->n = n;
	/* (hash, key, value), or (key, value) without the hash. */
	k->key_off = k->esize == PY_DICT_ENTRY_SIZE ? 8 : 0;
	k->value_off = k->key_off + 8;
	return k->entries < keys ? malformed(r) : 0;
}

/* What a scan calls: one for each pair, or many once a chunk with the
 * chunk's pairs (pydict_get: then one batch reads all their keys). */
struct scan_cb {
	pydict_fn one;
	int (*many)(void *ctx, const uint64_t *keys, const uint64_t *vals, size_t m);
	void *ctx;
};

/* The entries of keys; a value comes from the entry, or from values[i]
 * (split) when values is nonzero. */
static int scan_entries(struct mem_reader *r, const struct keys_info *k, uint64_t values,
			size_t nvalues, uint64_t from, const struct scan_cb *cb)
{
	uint8_t ebuf[PYDICT_CHUNK * PY_DICT_ENTRY_SIZE];
	uint64_t vbuf[PYDICT_CHUNK], keys[PYDICT_CHUNK], vals[PYDICT_CHUNK];
	uint64_t n = k->n;

	if (values && nvalues < n)
		n = nvalues;
	for (uint64_t i = from; i < n; i += PYDICT_CHUNK) {
		size_t m = n - i < PYDICT_CHUNK ? (size_t)(n - i) : PYDICT_CHUNK, live = 0;
		int rc = 0;

		if (mem_read(r, ebuf, m * k->esize, k->entries + i * k->esize))
			return -1;
		if (values && mem_read(r, vbuf, m * 8, values + i * 8))
			return -1;
		for (size_t j = 0; j < m && !rc; j++) {
			uint64_t key = get_u64(ebuf + j * k->esize + k->key_off);
			uint64_t val =
			    values ? vbuf[j] : get_u64(ebuf + j * k->esize + k->value_off);

			/* A deleted entry (NULL key or value), or a split
			 * slot this object never set. */
			if (!key || !val)
				continue;
			if (cb->many) {
				keys[live] = key;
				vals[live++] = val;
			} else {
				rc = cb->one(cb->ctx, key, val);
			}
		}
		if (!rc && live)
			rc = cb->many(cb->ctx, keys, vals, live);
		if (rc)
			return rc;
	}
	return 0;
}

int pydict_scan_split(struct mem_reader *r, const struct py_objlayout *L, uint64_t keys,
		      uint64_t values, size_t nvalues, pydict_fn fn, void *ctx)
{
	struct keys_info k;
	struct scan_cb cb = {.one = fn, .ctx = ctx};

	if (!values || keys_info(r, L, keys, &k))
		return values ? -1 : malformed(r);
	return scan_entries(r, &k, values, nvalues, 0, &cb);
}

/* 3.13+: a values array's header gives its capacity and whether it is
 * still in use; before, the keys' count bounds it. */
static int values_of(struct mem_reader *r, const struct py_objlayout *L, uint64_t values,
		     int need_valid, uint64_t *items, size_t *nvalues)
{
	uint8_t h[8];

	*items = values + L->values_items;
	*nvalues = PYDICT_MAX_ENTRIES;
	if (!L->values_header)
		return 0;
	if (mem_read(r, h, sizeof(h), values))
		return -1;
	if (need_valid && !h[L->values_valid])
		return malformed(r);
	*nvalues = h[L->values_capacity];
	return 0;
}

static int dict_scan(struct mem_reader *r, const struct py_objlayout *L, uint64_t dict,
		     struct pydict_pos *pos, const struct scan_cb *cb)
{
	uint64_t from;
	int rc;

	uint8_t hdr[64];
	uint64_t keys, values, items;
	size_t need = 0, nvalues;
	struct keys_info k;

	if (L->dict_keys + 8u > need)
		need = L->dict_keys + 8u;
	if (L->dict_values + 8u > need)
		need = L->dict_values + 8u;
	if (!dict || need > sizeof(hdr))
		return malformed(r);
	if (mem_read(r, hdr, need, dict))
		return -1;
	keys = get_u64(hdr + L->dict_keys);
	values = get_u64(hdr + L->dict_values);
	if (keys_info(r, L, keys, &k))
		return -1;
	/* Entries are appended until the table is rebuilt, and a rebuilt one
	 * has new keys: same keys, only the entries past pos->next are new.
	 * A split table's values may change in place: always read in full. */
	pos->full = values || keys != pos->keys || k.n < pos->next;
	from = pos->full ? 0 : pos->next;
	if (!values)
		rc = scan_entries(r, &k, 0, 0, from, cb);
	else if (values_of(r, L, values, 0, &items, &nvalues))
		return -1;
	else
		rc = scan_entries(r, &k, items, nvalues, 0, cb);
	if (rc == 0) {
		pos->keys = keys;
		pos->next = k.n;
	}
	return rc;
}

int pydict_scan(struct mem_reader *r, const struct py_objlayout *L, uint64_t dict, pydict_fn fn,
		void *ctx)
{
	struct pydict_pos pos = {0};
	struct scan_cb cb = {.one = fn, .ctx = ctx};

	return dict_scan(r, L, dict, &pos, &cb);
}

int pydict_scan_new(struct mem_reader *r, const struct py_objlayout *L, uint64_t dict,
		    struct pydict_pos *pos, pydict_fn fn, void *ctx)
{
	struct scan_cb cb = {.one = fn, .ctx = ctx};

	return dict_scan(r, L, dict, pos, &cb);
}

int pystr_equals(struct mem_reader *r, const struct py_offsets *o, uint64_t addr, const char *s)
{
	uint8_t buf[256];
	size_t n = strlen(s), need = (size_t)o->ascii_data_off + n;
	uint32_t state;
	uint64_t len;

	if (n > 64 || need > sizeof(buf) || o->unicode_state + 4u > o->ascii_data_off ||
	    o->unicode_length + 8u > o->ascii_data_off || !addr)
		return 0;
	/* An unreadable tail means a shorter object: not equal either. */
	if (mem_read(r, buf, need, addr))
		return 0;
	memcpy(&state, buf + o->unicode_state, sizeof(state));
	len = get_u64(buf + o->unicode_length);
	return (state & PY_STR_ASCII_MASK) == PY_STR_ASCII_VALUE && len == n &&
	       !memcmp(buf + o->ascii_data_off, s, n);
}

/* Bytes of a key read to compare it: a str header and a name of up to 64. */
#define KEY_BUF 128

struct lookup {
	struct mem_reader *r;
	const struct py_offsets *o;
	const char *const *names;
	uint64_t *vals;
	size_t n, found;
	struct pyobj_memo *memo; /* or NULL */
};

/* Bytes of a key that tell which of the names still wanted it is: the str
 * header and the longest such name. 0 if the layout cannot say. */
static size_t key_need(const struct lookup *l)
{
	size_t maxn = 0, need;

	for (size_t i = 0; i < l->n; i++)
		if (!l->vals[i] && strlen(l->names[i]) > maxn)
			maxn = strlen(l->names[i]);
	need = (size_t)l->o->ascii_data_off + maxn;
	if (maxn > 64 || need > KEY_BUF || l->o->unicode_state + 4u > l->o->ascii_data_off ||
	    l->o->unicode_length + 8u > l->o->ascii_data_off)
		return 0;
	return need;
}

/* Which of the names still wanted is the key whose first key_need() bytes
 * are buf? -1 if none. */
static int key_in_buf(const struct lookup *l, const uint8_t *buf)
{
	uint32_t state;
	uint64_t len;

	memcpy(&state, buf + l->o->unicode_state, sizeof(state));
	len = get_u64(buf + l->o->unicode_length);
	if ((state & PY_STR_ASCII_MASK) != PY_STR_ASCII_VALUE)
		return -1;
	for (size_t i = 0; i < l->n; i++)
		if (!l->vals[i] && len == strlen(l->names[i]) &&
		    !memcmp(buf + l->o->ascii_data_off, l->names[i], len))
			return (int)i;
	return -1;
}

/* The same where the read of key_need() bytes failed (a short str at the
 * end of a mapping): one read per name. */
static int key_by_name(struct lookup *l, uint64_t key)
{
	for (size_t i = 0; i < l->n; i++)
		if (!l->vals[i] && pystr_equals(l->r, l->o, key, l->names[i]))
			return (int)i;
	return -1;
}

/* Which of the names still wanted is key? One read for all of them, or
 * one per name where that read fails. -1 if none. */
static int key_match(struct lookup *l, uint64_t key)
{
	uint8_t buf[KEY_BUF];
	size_t need = key_need(l);

	if (!need || !key)
		return -1;
	if (mem_read(l->r, buf, need, key))
		return key_by_name(l, key);
	return key_in_buf(l, buf);
}

/* key_match through the memo: a key seen before costs no read. */
static int key_match_memo(struct lookup *l, uint64_t key)
{
	struct pyobj_memo *m = l->memo;
	int i;

	for (unsigned k = 0; m && k < m->nkeys; k++)
		if (m->keys[k].key == key)
			return m->keys[k].idx >= 0 && !l->vals[m->keys[k].idx] ? m->keys[k].idx
									       : -1;
	i = key_match(l, key);
	/* A miss against the names still wanted is a miss against all: the
	 * ones found are other keys of this dict, and keys are unique. */
	if (m && m->nkeys < PYOBJ_MEMO_KEYS)
		m->keys[m->nkeys++] = (struct pyobj_memo_key){key, i};
	return i;
}

static int lookup_one(void *ctx, uint64_t key, uint64_t value)
{
	struct lookup *l = ctx;
	int i = key_match_memo(l, key);

	if (i >= 0) {
		l->vals[i] = value;
		l->found++;
	}
	return l->found == l->n;
}

static void lookup_init(struct lookup *l, struct mem_reader *r, const struct py_offsets *o,
			const char *const *names, uint64_t *vals, size_t n)
{
	*l = (struct lookup){.r = r, .o = o, .names = names, .vals = vals, .n = n};
	memset(vals, 0, n * sizeof(*vals));
}

/* A chunk's pairs at once: every key read in one batch (mem_read_each),
 * where a read per key was most of a scan of sys.modules (some 60 keys) or
 * of threading's dict (some 150). */
static int lookup_many(void *ctx, const uint64_t *keys, const uint64_t *vals, size_t m)
{
	static _Thread_local uint8_t buf[PYDICT_CHUNK * KEY_BUF];
	struct lookup *l = ctx;
	uint8_t ok[PYDICT_CHUNK];
	size_t need = key_need(l);

	if (!need || m > PYDICT_CHUNK)
		return 0;
	/* Each key's need bytes, as key_match reads them: no more, or a
	 * short str at a mapping's end would fail the batch's read. */
	mem_read_each(l->r, buf, need, keys, m, ok);
	for (size_t j = 0; j < m; j++) {
		int i = ok[j] ? key_in_buf(l, buf + j * need) : key_by_name(l, keys[j]);

		if (i >= 0) {
			l->vals[i] = vals[j];
			if (++l->found == l->n)
				return 1;
		}
	}
	return 0;
}

int pydict_get(struct mem_reader *r, const struct py_offsets *o, const struct py_objlayout *L,
	       uint64_t dict, const char *const *names, uint64_t *vals, size_t n)
{
	struct lookup l;
	struct pydict_pos pos = {0};
	struct scan_cb cb = {.many = lookup_many, .ctx = &l};

	lookup_init(&l, r, o, names, vals, n);
	if (dict_scan(r, L, dict, &pos, &cb) < 0)
		return -1;
	return (int)l.found;
}

/* The part of a type that says where its instances keep attributes. */
struct type_info {
	uint64_t flags, cached_keys;
	int64_t basicsize, dictoffset;
};

static int type_info(struct mem_reader *r, const struct py_offsets *o, const struct py_objlayout *L,
		     struct pyobj_memo *memo, uint64_t obj, struct type_info *t)
{
	uint64_t type, v[4];

	if (read_u64(r, obj + o->ob_type, &type) || !type)
		return -1;
	if (memo && memo->type == type) {
		memcpy(v, memo->type_words, sizeof(v));
	} else if (read_u64(r, type + L->type_flags, &v[0]) ||
		   read_u64(r, type + L->type_cached_keys, &v[1]) ||
		   read_u64(r, type + L->type_basicsize, &v[2]) ||
		   read_u64(r, type + L->type_dictoffset, &v[3])) {
		return -1;
	} else if (memo) {
		memo->type = type;
		memcpy(memo->type_words, v, sizeof(v));
	}
	t->flags = v[0];
	t->cached_keys = v[1];
	t->basicsize = (int64_t)v[2];
	t->dictoffset = (int64_t)v[3];
	return 0;
}

int pyobj_attrs(struct mem_reader *r, const struct py_offsets *o, const struct py_objlayout *L,
		struct pyobj_memo *memo, uint64_t obj, const char *const *names, uint64_t *vals,
		size_t n)
{
	struct type_info t;
	struct lookup l;
	uint64_t dict = 0, values = 0, items, w;
	size_t nvalues;
	int managed, rc;

	lookup_init(&l, r, o, names, vals, n);
	l.memo = memo;
	if (!obj || L->attrs_model == PY_ATTRS_NONE || type_info(r, o, L, memo, obj, &t))
		return -1;
	managed = L->flag_managed_dict && (t.flags & L->flag_managed_dict);
	/* Pre-header words sit below the object: an address that low is no
	 * object of ours. */
	if (managed && obj < 64)
		return malformed(r);
	if (!managed) {
		/* A dict at a positive tp_dictoffset (negative ones count from
		 * the end of a variable-size object: not a Thread's case). */
		if (t.dictoffset <= 0 || t.dictoffset > (1 << 16))
			return malformed(r);
		if (read_u64(r, obj + (uint64_t)t.dictoffset, &dict))
			return -1;
	} else if (L->attrs_model == PY_ATTRS_VALUES_PTR) {
		if (read_u64(r, obj + (uint64_t)(int64_t)L->managed_values, &values) ||
		    (!values && read_u64(r, obj + (uint64_t)(int64_t)L->managed_dict, &dict)))
			return -1;
	} else if (L->attrs_model == PY_ATTRS_DORV) {
		if (read_u64(r, obj + (uint64_t)(int64_t)L->managed_dict, &w))
			return -1;
		if (w & 1)
			values = w + 1;
		else
			dict = w;
	} else if (L->attrs_model == PY_ATTRS_INLINE) {
		if (read_u64(r, obj + (uint64_t)(int64_t)L->managed_dict, &dict))
			return -1;
		if (!dict && L->flag_inline_values && (t.flags & L->flag_inline_values)) {
			if (t.basicsize < 16 || t.basicsize > (1 << 16))
				return malformed(r);
			values = obj + (uint64_t)t.basicsize;
		}
	}
	if (values) {
		if (values_of(r, L, values, L->attrs_model == PY_ATTRS_INLINE, &items, &nvalues))
			return -1;
		rc = pydict_scan_split(r, L, t.cached_keys, items, nvalues, lookup_one, &l);
	} else if (dict) {
		rc = pydict_scan(r, L, dict, lookup_one, &l);
	} else {
		return 0; /* no attribute set yet */
	}
	return rc < 0 ? -1 : (int)l.found;
}

int pylong_read_u64(struct mem_reader *r, const struct py_objlayout *L, uint64_t addr,
		    uint64_t *out)
{
	uint32_t digits[3];
	uint64_t tag, nd, v = 0;

	if (!addr || read_u64(r, addr + L->long_size, &tag))
		return -1;
	if (L->long_tagged) {
		/* lv_tag: ndigits << 3 | sign, sign 0 positive, 1 zero, 2 negative. */
		if ((tag & 3) == 1) {
			*out = 0;
			return 0;
		}
		if ((tag & 3) != 0)
			return malformed(r);
		nd = tag >> 3;
	} else {
		if ((int64_t)tag < 0)
			return malformed(r);
		nd = tag;
	}
	/* 30-bit digits: three hold 90 bits, and anything past 64 is refused. */
	if (nd > 3)
		return malformed(r);
	if (nd && mem_read(r, digits, nd * 4, addr + L->long_digits))
		return -1;
	for (uint64_t i = nd; i-- > 0;) {
		if (digits[i] >> 30 || (i == 2 && digits[i] >> 4))
			return malformed(r);
		v = v << 30 | digits[i];
	}
	*out = v;
	return 0;
}

/* Interpreters followed at most to the main one, the list's last. */
#define PYOBJ_MAX_INTERPS 64

uint64_t pyobj_main_modules(struct mem_reader *r, const struct py_offsets *o,
			    const struct py_objlayout *L, uint64_t runtime_addr)
{
	uint64_t interp = 0, next = 0, modules = 0;

	if (mem_read(r, &next, sizeof(next), runtime_addr + o->runtime_interpreters_head))
		return 0;
	for (int i = 0; next && i < PYOBJ_MAX_INTERPS; i++) {
		interp = next;
		if (mem_read(r, &next, sizeof(next), interp + o->interp_next))
			return 0;
	}
	if (!interp || next || mem_read(r, &modules, sizeof(modules), interp + L->interp_modules))
		return 0;
	return modules;
}

void pyobj_cstr(struct mem_reader *r, uint64_t addr, size_t cap, char *out, size_t size)
{
	char raw[257] = {0};
	size_t first;

	if (cap > sizeof(raw) - 1)
		cap = sizeof(raw) - 1;
	first = 4096 - (addr & 4095);
	if (first > cap)
		first = cap;
	if (!addr || mem_read(r, raw, first, addr)) {
		snprintf(out, size, "?");
		return;
	}
	if (first < cap && !memchr(raw, 0, first) &&
	    mem_read(r, raw + first, cap - first, addr + first))
		raw[first] = '\0';
	if (text_escape(out, size, raw, 0) >= size && size > 4)
		snprintf(out + size - 4, 4, "%s", PYSTR_ELLIPSIS);
}

int pyobj_exc_type_name(struct mem_reader *r, const struct py_objlayout *L, uint16_t type_name,
			uint64_t type, char *out, size_t size)
{
	uint64_t flags = 0, name = 0;

	if (!type || !type_name || !L->type_flags ||
	    mem_read(r, &flags, sizeof(flags), type + L->type_flags) ||
	    !(flags & PY_TPFLAGS_BASE_EXC_SUBCLASS) ||
	    mem_read(r, &name, sizeof(name), type + type_name) || !name)
		return -1;
	pyobj_cstr(r, name, 96, out, size);
	return 0;
}
