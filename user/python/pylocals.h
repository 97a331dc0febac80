/* SPDX-License-Identifier: MIT */
/*
 * dump --locals: the fast locals of a Python frame (arguments, locals,
 * cells and free variables), each as its name and a short value, read out
 * of a stopped target with the layouts of struct py_locals (py_offsets.h).
 *
 * Values are shown, never evaluated: None, True/False, int, float, str and
 * bytes by their contents; anything else as "<TYPE at 0xADDR>". Only the
 * exact built-in types (static types, not heap types: a program cannot
 * make one that borrows the name) are read by their contents, so a class
 * named "int" is shown by type and address. Every value is bounded
 * (PYLOCALS_VALUE_CHARS characters), cut values end in "…" without their
 * closing quote, and every byte from the target goes through the one
 * escaper (text_escape.h): the value strings are ready to print as they
 * are. The names are not escaped here: the output escapes them as it
 * escapes function names.
 */
#ifndef PYLOCALS_H
#define PYLOCALS_H

#include <stddef.h>
#include <stdint.h>

#include "bpfpy.h"
#include "mem_reader.h"
#include "py_offsets.h"

/* Slots (locals, cells, frees) read per frame at most; the others are
 * counted, not read. */
#define PYLOCALS_PER_FRAME 64
/* Locals read per dump at most (all threads, all frames): past it the
 * remaining frames say so instead of showing locals. With the per-frame
 * bound this keeps a dump of a 1000-deep stack to a few thousand reads
 * while the target is stopped. */
#define PYLOCALS_PER_DUMP 4096
/* Characters (code points) of a value as shown, quotes and "…" included:
 * room for the exact decimal of a 390-bit int. */
#define PYLOCALS_VALUE_CHARS 120
/* Bytes of a name kept (UTF-8, before escaping). */
#define PYLOCALS_NAME_CAP 128
/* Bytes of a value as shown: PYLOCALS_VALUE_CHARS code points of UTF-8. */
#define PYLOCALS_VALUE_CAP (4 * PYLOCALS_VALUE_CHARS + 1)
/* CPython 30-bit digits shown as an exact decimal at most (390 bits,
 * 118 decimal digits); longer ints are shown by their size in bits. */
#define PYLOCALS_INT_DIGITS 13

enum pylocal_kind {
	PYLOCAL_NONE,
	PYLOCAL_BOOL,
	PYLOCAL_INT,
	PYLOCAL_FLOAT,
	PYLOCAL_STR,
	PYLOCAL_BYTES,
	PYLOCAL_OTHER,	    /* "<TYPE at 0xADDR>" */
	PYLOCAL_UNREADABLE, /* "<unreadable at 0xADDR>": torn or freed */
	PYLOCAL__COUNT,
};

struct pylocal {
	char name[PYLOCALS_NAME_CAP];	/* raw UTF-8: escape it to print it */
	char value[PYLOCALS_VALUE_CAP]; /* escaped already, see above */
	uint8_t kind;			/* enum pylocal_kind */
	uint8_t cell;			/* read through a cell (a cell or free variable) */
};

/* One frame's locals: entries [first, first + n) of the pool. */
struct pylocals_frame {
	uint32_t first, n;
	uint32_t not_read; /* slots past PYLOCALS_PER_FRAME, not read */
	/* "", or why the frame's locals were not read at all. */
	char error[112];
};

#define PYLOCALS_TYPE_SLOTS 64
struct pylocals_type {
	uint64_t addr; /* 0: empty slot */
	uint8_t kind;  /* what its objects are read as */
	uint8_t is_cell;
	char name[72]; /* tp_name, escaped and bounded */
};

struct pylocals {
	struct mem_reader *r;
	const struct py_offsets *o;
	const struct py_objlayout *obj;
	const struct py_locals *L;
	struct pylocal *pool; /* PYLOCALS_PER_DUMP entries */
	uint32_t used;
	uint32_t frames_cut; /* frames left unread by the per-dump bound */
	struct pylocals_type types[PYLOCALS_TYPE_SLOTS]; /* types seen, direct-mapped */
};

/* 0, or -1 (ENOMEM; or the version has no locals layout: errno ENOTSUP). */
int pylocals_init(struct pylocals *c, struct mem_reader *r, const struct py_offsets *o,
		  const struct py_extra *x);
void pylocals_free(struct pylocals *c);

/* The locals of the frame at frame (a PyFrameObject up to 3.10, a
 * _PyInterpreterFrame after) running the code object at code, into out.
 * Never fails as a whole: out->error says what was not read. */
void pylocals_read_frame(struct pylocals *c, uint64_t frame, uint64_t code,
			 struct pylocals_frame *out);

/* "int", "str", ...: the kind's name for JSON. */
const char *pylocal_kind_name(int kind);

/* Formatting, pure (unit tested). Each writes a NUL-terminated string of
 * at most PYLOCALS_VALUE_CHARS code points into out (size bytes,
 * PYLOCALS_VALUE_CAP at least) and returns out. */

/* A float as Python's repr() writes it: the shortest string that reads
 * back as the same double ("2.5", "0.1", "1e+16", "inf", "nan"). */
const char *pylocals_fmt_float(double v, char *out, size_t size);

/* The int whose magnitude is the n 30-bit digits (least significant
 * first), exact in decimal; n at most PYLOCALS_INT_DIGITS. */
const char *pylocals_fmt_digits(const uint32_t *digits, size_t n, int negative, char *out,
				size_t size);

/* prefix ("'" or "b'"), then data[0..len) escaped (NUL bytes as "\x00"),
 * then "'" -- or, when the whole would pass PYLOCALS_VALUE_CHARS or cut is
 * set (data is only the start of the value), as much as fits then "…" and
 * no closing quote. */
const char *pylocals_fmt_quoted(const char *prefix, const char *data, size_t len, int cut,
				char *out, size_t size);

#endif /* PYLOCALS_H */
