/* SPDX-License-Identifier: MIT */
/*
 * Python objects read out of a live target: dicts (both key layouts, split
 * tables included), ints and instance attributes, with the layouts of
 * struct py_objlayout (py_offsets.h). Written for py_threads.c, which
 * follows sys.modules -> threading -> _active -> Thread._name.
 *
 * Everything read is hostile: every size is checked against its layout's
 * limits before it sizes a read, every scan is capped, nothing recurses,
 * and the reads follow a path fixed by the caller, so a dict that contains
 * itself, or keys that point back at their dict, cost a bounded number of
 * reads and give a failure or a wrong-looking answer, never a loop.
 */
#ifndef PYOBJ_H
#define PYOBJ_H

#include <stddef.h>
#include <stdint.h>

#include "bpfpy.h"
#include "mem_reader.h"
#include "py_offsets.h"

/* Entries of one dict scanned at most (sys.modules of a big application
 * has a few thousand); a dict claiming more is refused, not sampled. */
#define PYDICT_MAX_ENTRIES (1u << 16)
/* Entries read per process_vm_readv. */
#define PYDICT_CHUNK 128

/* Called for each live (key, value) pair, in insertion order; nonzero
 * stops the scan (and is what pydict_scan returns). */
typedef int (*pydict_fn)(void *ctx, uint64_t key, uint64_t value);

/* Scan the dict object at dict. Returns 0 when all pairs were visited, the
 * callback's nonzero value when it stopped the scan, or -1 when the dict
 * cannot be read or is malformed (r->last_errno is 0 for the latter). */
int pydict_scan(struct mem_reader *r, const struct py_objlayout *L, uint64_t dict, pydict_fn fn,
		void *ctx);

/* Where a scan of a dict ended, for pydict_scan_new. Zeroed: nothing
 * scanned yet. */
struct pydict_pos {
	uint64_t keys; /* the keys object scanned */
	uint64_t next; /* entries of it scanned */
	int full;      /* set by the call: it scanned from the first entry */
};

/* The pairs added since the scan that left pos, when the dict has kept its
 * keys object since (and is no split table); else all of them, with
 * pos->full set. pos is updated after a scan that ran to the end. Returns
 * as pydict_scan. For a dict that grows, like threading._active: each
 * call costs what was added, not the whole dict. */
int pydict_scan_new(struct mem_reader *r, const struct py_objlayout *L, uint64_t dict,
		    struct pydict_pos *pos, pydict_fn fn, void *ctx);

/* Scan keys (a PyDictKeysObject) whose values live apart, in a split
 * table's values array at values (the PyObject * array itself: past any
 * header), at most nvalues of them. Same returns. */
int pydict_scan_split(struct mem_reader *r, const struct py_objlayout *L, uint64_t keys,
		      uint64_t values, size_t nvalues, pydict_fn fn, void *ctx);

/* Is the object at addr a compact ASCII str equal to s (at most 64 bytes)?
 * 1, or 0 (not one, not equal, or unreadable). One read. */
int pystr_equals(struct mem_reader *r, const struct py_offsets *o, uint64_t addr, const char *s);

/* Look keys names[0..n) up in the dict at dict: vals[i] receives the value
 * of names[i], 0 where absent. Returns how many were found, or -1. */
int pydict_get(struct mem_reader *r, const struct py_offsets *o, const struct py_objlayout *L,
	       uint64_t dict, const char *const *names, uint64_t *vals, size_t n);

/*
 * What many lookups of the same names in instances of the same classes
 * learn once: the type last read (its flags, sizes, shared keys) and which
 * key objects are, or are not, one of the names. Attribute names are
 * interned strs that live as long as their class, so their addresses stand
 * for them; a stale entry (a class freed and its memory reused) can miss a
 * name or take another str for it, never read out of bounds. Zero it
 * before the first use; one memo per names array.
 */
#define PYOBJ_MEMO_KEYS 32
struct pyobj_memo {
	uint64_t type;
	uint64_t type_words[4]; /* flags, cached keys, basicsize, dictoffset */
	struct pyobj_memo_key {
		uint64_t key;
		int idx; /* index into names, or -1: none of them */
	} keys[PYOBJ_MEMO_KEYS];
	unsigned nkeys;
};

/* The same for the attributes an instance keeps in its own storage (its
 * __dict__ or its values: not its class's attributes, not slots). -1 also
 * for an object whose type keeps none that we know how to read. memo may
 * be NULL. */
int pyobj_attrs(struct mem_reader *r, const struct py_offsets *o, const struct py_objlayout *L,
		struct pyobj_memo *memo, uint64_t obj, const char *const *names, uint64_t *vals,
		size_t n);

/* sys.modules of the main interpreter (the last of the interpreter list)
 * of the runtime at runtime_addr, or 0 when unreadable. */
uint64_t pyobj_main_modules(struct mem_reader *r, const struct py_offsets *o,
			    const struct py_objlayout *L, uint64_t runtime_addr);

/* The int object at addr, when it is in [0, 2^64): 0 with *out set, or -1
 * (unreadable, negative, or more than 64 bits). */
int pylong_read_u64(struct mem_reader *r, const struct py_objlayout *L, uint64_t addr,
		    uint64_t *out);

/* A C string of the target (a type's tp_name), at most cap bytes of it
 * (cap <= 256), escaped (text_escape.h) into out, size bytes, and cut with
 * an ellipsis when it does not fit; a string running into an unreadable
 * page keeps what was readable; "?" when nothing is. */
void pyobj_cstr(struct mem_reader *r, uint64_t addr, size_t cap, char *out, size_t size);

/* Py_TPFLAGS_BASE_EXC_SUBCLASS: the type is BaseException or derives from it. */
#define PY_TPFLAGS_BASE_EXC_SUBCLASS (1ul << 30)

/* The tp_name of the exception type at type, escaped into out (as
 * pyobj_cstr): 0, or -1 when type is not readable as a type whose tp_flags
 * say it derives from BaseException. type_name is PyTypeObject.tp_name's
 * offset (struct py_locals). */
int pyobj_exc_type_name(struct mem_reader *r, const struct py_objlayout *L, uint16_t type_name,
			uint64_t type, char *out, size_t size);

#endif /* PYOBJ_H */
