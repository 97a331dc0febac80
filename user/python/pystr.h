/* SPDX-License-Identifier: MIT */
/*
 * Copy str and bytes objects out of a target process.
 *
 * Everything read is treated as hostile: lengths are capped before any
 * read, kinds are checked, and code points that UTF-8 cannot carry are
 * replaced, so that a torn or reused object gives a wrong-looking string
 * at worst, never an overrun or invalid UTF-8 on our output.
 */
#ifndef PYSTR_H
#define PYSTR_H

#include <stddef.h>
#include <stdint.h>

#include "bpfpy.h"
#include "mem_reader.h"

/*
 * Default caps: names and file paths, and line tables. Why 64 KiB for a
 * table: the code cache keeps up to CODE_CACHE_DEFAULT_CAP (4096) tables
 * per process, so a target full of huge code objects costs at most 256 MiB
 * of copies; and a table is decoded from its start on every frame lookup
 * (record symbolizes every frame of every sample), so its size is paid per
 * frame. 64 KiB covers some 30,000 lines on 3.8/3.9 (2 bytes a line) and
 * over 10,000 on 3.11+; past that, the lines beyond the copy are reported
 * unknown (linetable_line_cut), never guessed.
 */
#define PYSTR_DEFAULT_CAP   4096
#define PYBYTES_DEFAULT_CAP (64 * 1024)

/* What replaces code points that have no UTF-8 form (lone surrogates,
 * values past U+10FFFF, NUL) and what ends a truncated string. */
#define PYSTR_REPLACEMENT "\xEF\xBF\xBD" /* U+FFFD */
#define PYSTR_ELLIPSIS	  "\xE2\x80\xA6" /* U+2026 */

/*
 * Read the str object at addr into out as NUL-terminated UTF-8 of at most
 * cap bytes including the NUL. A string that does not fit is cut at a
 * character boundary and ends with PYSTR_ELLIPSIS (when cap leaves room
 * for it). Handles compact ASCII, compact Latin-1/UCS-2/UCS-4 and legacy
 * (non-compact, subclass) strings.
 *
 * Returns the number of bytes written before the NUL, or -1 (out is then
 * "") when the object cannot be read or does not look like a str;
 * r->last_errno tells read failures apart from malformed objects (0).
 */
int pystr_read(struct mem_reader *r, const struct py_offsets *o, uint64_t addr, char *out,
	       size_t cap);

/*
 * Read the bytes object at addr: *out receives a malloc'd copy (free() it)
 * of at most cap bytes, *len its length. Returns 0, 1 when the object was
 * longer than cap and the copy holds only its first cap bytes, or -1 on
 * failure (*out NULL, *len 0). An empty object gives *out non-NULL.
 */
int pybytes_read(struct mem_reader *r, const struct py_offsets *o, uint64_t addr, uint8_t **out,
		 size_t *len, size_t cap);

/* Encode one code point as UTF-8 into buf (4 bytes at least); invalid ones
 * become U+FFFD. Returns the byte count. Also encodes the names the kernel
 * copied (code_cache.c). */
size_t pystr_utf8(uint32_t cp, char *buf);

#endif /* PYSTR_H */
