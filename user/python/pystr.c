// SPDX-License-Identifier: MIT
/*
 * str and bytes objects out of target memory. See pystr.h.
 */
#include "pystr.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "py_offsets.h"

/* PyASCIIObject.state: see py_offsets.h. */
#define STATE_KIND(s)	 PY_STR_STATE_KIND(s)
#define STATE_COMPACT(s) PY_STR_STATE_COMPACT(s)
#define STATE_ASCII(s)	 PY_STR_STATE_ASCII(s)

/* Code points read per process_vm_readv: a bounded stack buffer, and few
 * reads for the names we meet (almost all are shorter). */
#define CHUNK_CHARS 1024

size_t pystr_utf8(uint32_t cp, char *buf)
{
	unsigned char *b = (unsigned char *)buf;

	/* NUL would end the C string early; surrogates and values past
	 * U+10FFFF have no UTF-8 form at all. */
	if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
		memcpy(buf, PYSTR_REPLACEMENT, 3);
		return 3;
	}
	if (cp < 0x80) {
		b[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		b[0] = (unsigned char)(0xC0 | (cp >> 6));
		b[1] = (unsigned char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		b[0] = (unsigned char)(0xE0 | (cp >> 12));
		b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
		b[2] = (unsigned char)(0x80 | (cp & 0x3F));
		return 3;
	}
	b[0] = (unsigned char)(0xF0 | (cp >> 18));
	b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
	b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
	b[3] = (unsigned char)(0x80 | (cp & 0x3F));
	return 4;
}

/* Cut out[0..*pos) back to a character boundary that leaves room for the
 * ellipsis and the NUL, then append the ellipsis. */
static void truncate_utf8(char *out, size_t cap, size_t *pos)
{
	size_t want = cap > 4 ? cap - 4 : 0;

	/* Only whole characters were written, so out[*pos] is a boundary
	 * already unless we have to step back into the text. */
	if (*pos > want) {
		*pos = want;
		while (*pos > 0 && ((unsigned char)out[*pos] & 0xC0) == 0x80)
			(*pos)--;
	}
	if (*pos + 3 < cap) {
		memcpy(out + *pos, PYSTR_ELLIPSIS, 3);
		*pos += 3;
	}
}

/* length and state sit a few bytes apart (16 and 32 on x86_64): one read
 * instead of two, since each read is a system call on a live target. */
static int read_header(struct mem_reader *r, const struct py_offsets *o, uint64_t addr,
		       uint32_t *state, int64_t *length)
{
	uint32_t lo = o->unicode_length < o->unicode_state ? o->unicode_length : o->unicode_state;
	uint32_t hi_len = o->unicode_length + 8u, hi_state = o->unicode_state + 4u;
	uint32_t hi = hi_len > hi_state ? hi_len : hi_state;
	uint8_t buf[64];

	if (hi - lo > sizeof(buf))
		return mem_read(r, state, sizeof(*state), addr + o->unicode_state) ||
		       mem_read(r, length, sizeof(*length), addr + o->unicode_length);
	if (mem_read(r, buf, hi - lo, addr + lo))
		return -1;
	memcpy(state, buf + (o->unicode_state - lo), sizeof(*state));
	memcpy(length, buf + (o->unicode_length - lo), sizeof(*length));
	return 0;
}

static int fail(char *out, size_t cap)
{
	if (cap)
		out[0] = '\0';
	return -1;
}

int pystr_read(struct mem_reader *r, const struct py_offsets *o, uint64_t addr, char *out,
	       size_t cap)
{
	uint32_t state, kind;
	int64_t length;
	uint64_t data;
	size_t pos = 0, done = 0, todo;
	union {
		uint8_t u1[CHUNK_CHARS];
		uint16_t u2[CHUNK_CHARS];
		uint32_t u4[CHUNK_CHARS];
	} chunk;

	if (!cap)
		return -1;
	out[0] = '\0';
	r->last_errno = 0;
	if (!addr || read_header(r, o, addr, &state, &length))
		return fail(out, cap);
	kind = STATE_KIND(state);
	if (length < 0 || (kind != 1 && kind != 2 && kind != 4) ||
	    (STATE_ASCII(state) && kind != 1))
		return fail(out, cap);
	if (STATE_COMPACT(state)) {
		data = addr + (STATE_ASCII(state) ? o->ascii_data_off : o->compact_data_off);
	} else {
		/* Legacy strings (str subclasses) keep their characters in a
		 * separate block; PyUnicodeObject.data follows the compact
		 * header, i.e. sits where compact data would start. */
		if (mem_read(r, &data, sizeof(data), addr + o->compact_data_off) || !data)
			return fail(out, cap);
	}
	/* Every code point takes at least one output byte, so reading more
	 * than cap characters could never change the result. */
	todo = (uint64_t)length < cap ? (size_t)length : cap;
	while (done < todo) {
		size_t n = todo - done < CHUNK_CHARS ? todo - done : CHUNK_CHARS;

		if (mem_read(r, &chunk, n * kind, data + (uint64_t)done * kind))
			return fail(out, cap);
		for (size_t i = 0; i < n; i++) {
			uint32_t cp = kind == 1	  ? chunk.u1[i]
				      : kind == 2 ? chunk.u2[i]
						  : chunk.u4[i];
			char enc[4];
			size_t m;

			/* An "ASCII" string with a high byte is torn or not a
			 * str: replace rather than emit invalid UTF-8. */
			if (STATE_ASCII(state) && cp > 0x7F)
				cp = 0xFFFFFFFF;
			m = pystr_utf8(cp, enc);
			if (pos + m > cap - 1) {
				truncate_utf8(out, cap, &pos);
				out[pos] = '\0';
				return (int)pos;
			}
			memcpy(out + pos, enc, m);
			pos += m;
		}
		done += n;
	}
	if ((uint64_t)length > todo)
		truncate_utf8(out, cap, &pos);
	out[pos] = '\0';
	return (int)pos;
}

int pybytes_read(struct mem_reader *r, const struct py_offsets *o, uint64_t addr, uint8_t **out,
		 size_t *len, size_t cap)
{
	int64_t size;
	size_t n;
	uint8_t *buf;

	*out = NULL;
	*len = 0;
	r->last_errno = 0;
	if (!addr || mem_read(r, &size, sizeof(size), addr + o->bytes_size) || size < 0)
		return -1;
	n = (uint64_t)size > cap ? cap : (size_t)size;
	buf = malloc(n ? n : 1);
	if (!buf) {
		r->last_errno = ENOMEM;
		return -1;
	}
	if (n && mem_read(r, buf, n, addr + o->bytes_data)) {
		free(buf);
		return -1;
	}
	*out = buf;
	*len = n;
	return (uint64_t)size > cap ? 1 : 0;
}
