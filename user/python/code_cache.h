/* SPDX-License-Identifier: MIT */
/*
 * Per-process cache of code objects: (code address, fingerprint) ->
 * qualname, file, first line and line table.
 *
 * Code objects die and their addresses are reused (exec/compile loops,
 * reloaded modules), so an address alone names nothing. Every frame from
 * the walker carries walk_fingerprint() of the code object as it was when
 * sampled; an entry answers only for the fingerprint it was filled with.
 * A different one means the address was reused: the entry is re-read.
 * If what we read now still differs from the sample's fingerprint, the
 * object changed between sample and lookup, and the frame is reported as
 * unknown rather than under another function's name.
 *
 * The cache is bounded (least recently used entries are evicted) and
 * counts what it does, so that a cache that thrashes is visible.
 */
#ifndef CODE_CACHE_H
#define CODE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "bpfpy.h"
#include "mem_reader.h"
#include "profile.h" /* struct sym_frame */

#define CODE_CACHE_DEFAULT_CAP 4096

/* What we get for names we could not read. */
#define CODE_CACHE_UNKNOWN "<unknown>"

enum code_status {
	CODE_OK = 0,	 /* identified; a string may still be CODE_CACHE_UNKNOWN */
	CODE_UNREADABLE, /* the code object's header could not be read */
	CODE_STALE,	 /* the object at this address is no longer the sampled one */
};

struct code_entry {
	uint64_t addr;
	uint32_t fingerprint;	 /* walk_fingerprint() of the object we read */
	uint32_t version_hex;	 /* for the line-table format */
	uint8_t status;		 /* enum code_status */
	uint8_t table_truncated; /* line table longer than the part held */
	uint8_t from_copy;	 /* made from the kernel's copy (code_names_fn) */
	int firstlineno;
	const char *name; /* co_qualname (co_name before 3.11) */
	const char *file; /* co_filename */
	const uint8_t *linetable;
	size_t linetable_len;
};

struct code_cache_stats {
	uint64_t hits;	      /* fingerprint matched: no read at all */
	uint64_t misses;      /* address not cached: filled */
	uint64_t refreshes;   /* address cached under another fingerprint: re-read */
	uint64_t revalidated; /* fingerprint 0: header read, cached entry confirmed */
	uint64_t stale;	      /* the object changed since the sample */
	uint64_t unreadable;  /* header read failed */
	uint64_t evictions;
	/* Of stale + unreadable, the frames the kernel had named on first
	 * sight (code_cache_set_names); the others are unknown. */
	uint64_t kernel_named;
	/* Misses filled from the kernel's copy rather than by reading the
	 * object: whole copies, and cut ones the object no longer matches
	 * (see code_cache.c fill_sampled). */
	uint64_t kernel_filled;
	/* Frames symbolized with line unknown (-1) because the instruction
	 * lies past the part of the line table held: the PYBYTES_DEFAULT_CAP
	 * bytes read from the object (lines_cut), or the CODE_TABLE_LIMIT the
	 * kernel copied of code freed before it was read (lines_cut_copy). */
	uint64_t lines_cut, lines_cut_copy;
	size_t size, cap;
};

struct code_cache;

/*
 * A cache for one process, reading through r with layout o (both must
 * outlive the cache; o is copied). cap 0 means CODE_CACHE_DEFAULT_CAP.
 * NULL when out of memory.
 */
struct code_cache *code_cache_new(struct mem_reader *r, const struct py_offsets *o, size_t cap);
void code_cache_free(struct code_cache *c);

/* Forget everything (the process exec'd, or its pid was reused). */
void code_cache_clear(struct code_cache *c);

/*
 * The entry for the code object at addr as the walker saw it (fingerprint
 * from struct frame_rec; 0 = unknown, the header is then read and checked
 * anyway). Never NULL: failures give an entry whose status says why and
 * whose strings are CODE_CACHE_UNKNOWN.
 *
 * Lifetime: the entry belongs to the cache and stays valid only until the
 * next call on it. Its name and file strings stay valid longer: until
 * code_cache_end_sample(), _clear or _free, so a caller may symbolize every
 * frame of a stack and then use them all (profile_add interns them; a
 * torn read can name one address under two fingerprints, and the second
 * lookup refills the entry the first frame points into). Callers that keep
 * names beyond the sample must copy or intern them.
 */
const struct code_entry *code_cache_lookup(struct code_cache *c, uint64_t addr,
					   uint32_t fingerprint);

/* The caller is done with the strings of the stack it symbolized: free
 * those that entries gave up meanwhile. (Without it they are freed in
 * bulk, the older half, once 8192 wait: memory stays bounded either way.) */
void code_cache_end_sample(struct code_cache *c);

/* Line of instruction instr (code units, -1 = before the first) of an
 * entry, -1 when unknown: also when the entry's table was cut at
 * PYBYTES_DEFAULT_CAP before the instruction's entry (never the line where
 * the copy happens to end). */
int code_cache_line(const struct code_entry *e, int instr);

/* The columns of instruction instr (code units) of an entry, 3.11+, as
 * linetable_cols() gives them; both -1 when unknown (also for an
 * instruction past the part of the table held). */
void code_cache_cols(const struct code_entry *e, int instr, int *col, int *endcol);

/*
 * Symbolize one frame from the walker (f->instr raw, as the walker records
 * it; converted with walk_instr_index()) into out (strings as for
 * code_cache_lookup: valid until code_cache_end_sample()). Returns the
 * entry's enum code_status; the frame is filled in every case.
 */
int code_cache_symbolize(struct code_cache *c, const struct frame_rec *f, struct sym_frame *out);
/* The same, shaped as a profile_sym_fn (profile.h) with the cache as ctx. */
int code_cache_sym(void *cache, const struct frame_rec *f, struct sym_frame *out);

/*
 * Where names of freed code objects come from: fn fills out with what the
 * kernel copied on the first sample that showed (pid, addr, fingerprint)
 * (the BPF maps code_names and code_tables, bpf_loader_code_name: the
 * names and the line table, whole or its first CODE_TABLE_LIMIT bytes,
 * gathered into one buffer) and returns 0, or -1
 * when it has nothing. Consulted when the object cannot be read or is no
 * longer the sampled one (the entry's name then comes from the copy, its
 * file may be CODE_CACHE_UNKNOWN, its lines those the copied prefix of the
 * line table covers), and on a miss: a whole copy is used instead of
 * reading the object, and a cut one unless the object read agrees with it
 * (names, first line, the copied part of the table; a freed object's
 * header can outlive its strings). fn NULL: no copies (the default).
 */
struct code_copy {
	struct code_name n; /* n.table_len bytes of the table are in table */
	uint8_t table[CODE_TABLE_LIMIT];
};
typedef int (*code_names_fn)(void *ctx, uint32_t pid, uint64_t addr, uint32_t fingerprint,
			     struct code_copy *out);
void code_cache_set_names(struct code_cache *c, code_names_fn fn, void *ctx, uint32_t pid);

/* For a code_names_fn: out->n as found in code_names, gather its line
 * table into out->table, chunk i from chunk(ctx, i, buf) (0 when found).
 * A chunk not found (evicted) cuts the table where it starts; a table_len
 * past CODE_TABLE_LIMIT (not bpfpy's kernel) is cut there. */
typedef int (*code_chunk_fn)(void *ctx, uint32_t i, struct code_table_chunk *buf);
void code_copy_gather(struct code_copy *out, code_chunk_fn chunk, void *ctx);

void code_cache_get_stats(const struct code_cache *c, struct code_cache_stats *out);

#endif /* CODE_CACHE_H */
