/* SPDX-License-Identifier: MIT */
/*
 * Copying a code object's names into a struct code_name (bpfpy.h), written
 * once against WALK_READ like the walker, and included after frame_walker.h.
 *
 * Two readers run it. The kernel does, on the first sample that shows a
 * code object (name_step, bpf/py_sample.bpf.h), so that code freed before
 * user space gets to it still has a name. User space does when it
 * registers a process (bpf_sampler_seed, user/sampler/bpf_sampler.c), for
 * the code on the threads' stacks at that moment: under `record -a` each
 * light process is sampled only a few times a run, and naming on those
 * first samples was a third of the kernel's cost (reading three objects
 * and the map insert per code object; figures in docs/bench.md).
 *
 * Nothing here trusts the target: a length is checked against the buffer
 * and also masked, so that the verifier sees every read stay inside it, and
 * a name is kept only if the object still has the fingerprint it was
 * sampled with.
 */
#ifndef CODE_NAME_H
#define CODE_NAME_H

#include "frame_walker.h"

/*
 * Copy the compact ASCII str at addr into buf (cap bytes, a power of two);
 * its length, or -1 when it is not compact ASCII, is too long, or cannot
 * be read.
 */
WALK_INLINE int code_name_str(WALK_READER_T *r, const struct py_offsets *o, __u64 addr, char *buf,
			      __u32 cap)
{
	__u32 state = 0;
	__s64 len = 0;

	if (!addr || WALK_READ(r, &state, sizeof(state), addr + o->unicode_state) ||
	    WALK_READ(r, &len, sizeof(len), addr + o->unicode_length))
		return -1;
	if ((state & o->str_ascii_mask) != o->str_ascii_value || len < 0 || len >= cap)
		return -1;
	if (WALK_READ(r, buf, (__u32)len & (cap - 1), addr + o->ascii_data_off))
		return -1;
	return (int)len;
}

/* The line table (the bytes object at addr): its first CODE_TABLE_MAX bytes
 * into n->table, and how much of it the copy takes (CODE_TABLE_LIMIT at
 * most, the rest by code_name_chunk) into n->table_len; 0, or -1 when
 * unreadable. */
WALK_INLINE int code_name_table(WALK_READER_T *r, const struct py_offsets *o, __u64 addr,
				struct code_name *n)
{
	__s64 size = 0;

	if (!addr || WALK_READ(r, &size, sizeof(size), addr + o->bytes_size) || size < 0)
		return -1;
	if (size >= CODE_TABLE_MAX) {
		if (WALK_READ(r, n->table, CODE_TABLE_MAX, addr + o->bytes_data))
			return -1;
		n->table_len = size > CODE_TABLE_LIMIT ? CODE_TABLE_LIMIT : (__u16)size;
		if (size > CODE_TABLE_LIMIT)
			n->flags |= CODE_NAME_CUT;
		return 0;
	}
	if (WALK_READ(r, n->table, (__u32)size & (CODE_TABLE_MAX - 1), addr + o->bytes_data))
		return -1;
	n->table_len = (__u16)size;
	return 0;
}

/*
 * Fill n with the names of the code object at code, whose header is read
 * into cbuf (WALK_CBUF_SIZE + 8 bytes): 0, or -1 when the header cannot be
 * read, the object no longer has fingerprint fp, or its name is not a
 * compact ASCII str (then nothing is worth keeping). The file and the line
 * table are optional: flags say which were copied.
 */
WALK_INLINE int code_name_fill(WALK_READER_T *r, const struct py_offsets *o, __u64 code, __u32 fp,
			       __u8 *cbuf, struct code_name *n)
{
	__u32 csize = o->code_read_size > BPFPY_CODE_BUF ? BPFPY_CODE_BUF : o->code_read_size;
	__u32 name_off = o->code_qualname ? o->code_qualname : o->code_name;
	int len;

	if (WALK_READ(r, cbuf, csize & WALK_CBUF_MASK, code) || walk_fingerprint(cbuf, o) != fp)
		return -1;
	n->flags = 0;
	n->file_len = 0;
	n->table_len = 0;
	n->pad = 0;
	n->firstlineno = (__s32)walk_u32(cbuf, o->code_firstlineno, WALK_CBUF_MASK);
	len = code_name_str(r, o, walk_u64(cbuf, name_off, WALK_CBUF_MASK), n->name, CODE_NAME_MAX);
	if (len < 0)
		return -1;
	n->name_len = (__u16)len;
	len = code_name_str(r, o, walk_u64(cbuf, o->code_filename, WALK_CBUF_MASK), n->file,
			    CODE_FILE_MAX);
	if (len >= 0) {
		n->file_len = (__u16)len;
		n->flags |= CODE_NAME_FILE;
	}
	if (!code_name_table(r, o, walk_u64(cbuf, o->code_linetable, WALK_CBUF_MASK), n))
		n->flags |= CODE_NAME_TABLE;
	return 0;
}

/* n's copy of the line table ends where chunk i would start. */
WALK_INLINE void code_name_cut(struct code_name *n, __u32 i)
{
	n->table_len = (__u16)(CODE_TABLE_MAX + i * CODE_TABLE_CHUNK);
	n->flags |= CODE_NAME_CUT;
}

/*
 * Chunk i of the line table of n, the names code_name_fill() just took
 * from the header in cbuf, into buf: its length, 0 when the copy ends
 * before it, -1 when unreadable (n is then cut where the chunk starts).
 */
WALK_INLINE int code_name_chunk(WALK_READER_T *r, const struct py_offsets *o, const __u8 *cbuf,
				struct code_name *n, __u32 i, __u8 *buf)
{
	__u64 addr = walk_u64(cbuf, o->code_linetable, WALK_CBUF_MASK) + o->bytes_data;
	/* 64-bit: clang's 32-bit subtraction left the upper half of the
	 * register to the verifier, which then saw no bound on len. */
	__u64 at = CODE_TABLE_MAX + (__u64)i * CODE_TABLE_CHUNK, len;

	if (!(n->flags & CODE_NAME_TABLE) || n->table_len <= at)
		return 0;
	len = (__u64)n->table_len - at;
	if (len > CODE_TABLE_CHUNK)
		len = CODE_TABLE_CHUNK;
#ifdef __VMLINUX_H__
	/* Keep the clamp next to the read, where the verifier checks it. */
	barrier_var(len);
#endif
	if (WALK_READ(r, buf, len, addr + at)) {
		code_name_cut(n, i);
		return -1;
	}
	return (int)len;
}

/*
 * The per-process filter in front of the code_names map (proc_config's
 * named[]): one 64-bit tag per (code, fingerprint), never 0 (the empty
 * slot). Two-way: a tag's top bits choose a set of two adjacent slots (one
 * cache line's quarter), and it may sit in either. Direct-mapped, the 3-4
 * code objects of a light process's stacks shared a slot in a third of
 * processes, and those two then evicted each other on every sample, each
 * time a cold map lookup.
 */
WALK_INLINE __u64 code_named_tag(__u64 code, __u32 fp)
{
	return walk_mix(walk_mix(0x9e3779b97f4a7c15ULL, code), fp) | 1;
}

/* Index of the first slot of tag's set. */
WALK_INLINE __u32 code_named_set(__u64 tag)
{
	return ((__u32)(tag >> 61) & (PROC_NAMED_SLOTS / 2 - 1)) * 2;
}

WALK_INLINE int code_named_has(const __u64 *named, __u64 tag)
{
	__u32 s = code_named_set(tag);

	return named[s & (PROC_NAMED_SLOTS - 2)] == tag ||
	       named[(s + 1) & (PROC_NAMED_SLOTS - 1)] == tag;
}

/* Put tag in its set: an empty way first; a full set gives up the way its
 * tag's low bits choose, unless only_empty (then the set is left alone). */
WALK_INLINE void code_named_put(__u64 *named, __u64 tag, int only_empty)
{
	__u32 s = code_named_set(tag) & (PROC_NAMED_SLOTS - 2);

	if (named[s] == tag || named[s + 1] == tag)
		return;
	if (!named[s])
		named[s] = tag;
	else if (!named[s + 1])
		named[s + 1] = tag;
	else if (!only_empty)
		named[s + ((tag >> 1) & 1)] = tag;
}

#endif /* CODE_NAME_H */
