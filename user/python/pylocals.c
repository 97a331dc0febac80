// SPDX-License-Identifier: MIT
/*
 * Fast locals of a frame, named and shown. See pylocals.h.
 *
 * Everything read is hostile: tuple sizes are checked before they size a
 * read, at most PYLOCALS_PER_FRAME slots are read per frame and
 * PYLOCALS_PER_DUMP per dump, values are read into fixed buffers, and
 * nothing is followed further than one cell: a frame whose code object
 * lies costs a bounded number of reads and shows wrong-looking values at
 * worst.
 */
#include "pylocals.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyobj.h"
#include "pystr.h"
#include "text_escape.h"

/* A names tuple longer than this is refused: CPython's own limit on a
 * code object's locals is far below (the compiler's oparg widths). */
#define NAMES_MAX (1u << 16)
/* Bytes of a str's UTF-8 copied for a value: enough for the code points
 * shown (at most PYLOCALS_VALUE_CHARS, 4 bytes each) and a margin. */
#define STR_READ_CAP   1024
#define BYTES_READ_CAP (4 * PYLOCALS_VALUE_CHARS)
#define TYPE_NAME_READ 64

static const char *const kind_names[PYLOCAL__COUNT] = {
    [PYLOCAL_NONE] = "none",   [PYLOCAL_BOOL] = "bool",
    [PYLOCAL_INT] = "int",     [PYLOCAL_FLOAT] = "float",
    [PYLOCAL_STR] = "str",     [PYLOCAL_BYTES] = "bytes",
    [PYLOCAL_OTHER] = "other", [PYLOCAL_UNREADABLE] = "unreadable",
};

const char *pylocal_kind_name(int kind)
{
	return kind >= 0 && kind < PYLOCAL__COUNT ? kind_names[kind] : "other";
}

/* ---- formatting (pure) ---- */

const char *pylocals_fmt_float(double v, char *out, size_t size)
{
	char buf[40], digits[24];
	int exp = 0, nd = 0;
	size_t pos = 0;

	if (isnan(v))
		return snprintf(out, size, "nan"), out;
	if (isinf(v))
		return snprintf(out, size, "%sinf", v < 0 ? "-" : ""), out;
	/* The shortest %e that reads back as v: repr()'s digits. */
	for (int p = 1; p <= 17; p++) {
		snprintf(buf, sizeof(buf), "%.*e", p - 1, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	for (const char *s = buf; *s && *s != 'e'; s++)
		if (*s >= '0' && *s <= '9' && nd < (int)sizeof(digits) - 1)
			digits[nd++] = *s;
	exp = atoi(strchr(buf, 'e') + 1);
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = '\0';
	if (signbit(v))
		buf[pos++] = '-';
	/* repr() switches to an exponent outside 1e-4 <= |v| < 1e16. */
	if (exp < -4 || exp >= 16) {
		buf[pos++] = digits[0];
		if (nd > 1)
			pos += (size_t)snprintf(buf + pos, sizeof(buf) - pos, ".%s", digits + 1);
		snprintf(buf + pos, sizeof(buf) - pos, "e%c%02d", exp < 0 ? '-' : '+',
			 exp < 0 ? -exp : exp);
	} else if (exp < 0) {
		pos += (size_t)snprintf(buf + pos, sizeof(buf) - pos, "0.");
		for (int i = 0; i < -exp - 1; i++)
			buf[pos++] = '0';
		snprintf(buf + pos, sizeof(buf) - pos, "%s", digits);
	} else {
		for (int i = 0; i <= exp; i++)
			buf[pos++] = i < nd ? digits[i] : '0';
		snprintf(buf + pos, sizeof(buf) - pos, ".%s",
			 nd > exp + 1 ? digits + exp + 1 : "0");
	}
	snprintf(out, size, "%s", buf);
	return out;
}

const char *pylocals_fmt_digits(const uint32_t *digits, size_t n, int negative, char *out,
				size_t size)
{
	uint32_t a[PYLOCALS_INT_DIGITS];
	char tmp[PYLOCALS_INT_DIGITS * 10 + 4];
	size_t pos = sizeof(tmp) - 1;

	if (n > PYLOCALS_INT_DIGITS)
		n = PYLOCALS_INT_DIGITS;
	memcpy(a, digits, n * sizeof(*a));
	while (n && !a[n - 1])
		n--;
	tmp[pos] = '\0';
	/* Divide by 10^9 until nothing is left: each remainder is nine
	 * decimal digits (fewer for the last). rem << 30 | digit < 2^60. */
	while (n) {
		uint64_t rem = 0;

		for (size_t i = n; i-- > 0;) {
			uint64_t cur = rem << 30 | (a[i] & 0x3fffffffu);

			a[i] = (uint32_t)(cur / 1000000000u);
			rem = cur % 1000000000u;
		}
		while (n && !a[n - 1])
			n--;
		for (int k = 0; k < 9 && (n || rem); k++) {
			tmp[--pos] = (char)('0' + rem % 10);
			rem /= 10;
		}
	}
	if (pos == sizeof(tmp) - 1)
		tmp[--pos] = '0';
	else if (negative)
		tmp[--pos] = '-';
	snprintf(out, size, "%s", tmp + pos);
	return out;
}

/* Code points of the escaped token at s: an escape is its ASCII
 * characters, anything else one character of its UTF-8 length. */
static size_t token_len(const char *s, size_t *chars)
{
	size_t n;

	if (s[0] == '\\') {
		n = s[1] == 'x' ? 4 : 2;
		*chars = n;
		return n;
	}
	n = (size_t)utf8_seq_len(s);
	*chars = 1;
	return n ? n : 1;
}

const char *pylocals_fmt_quoted(const char *prefix, const char *data, size_t len, int cut,
				char *out, size_t size)
{
	static char in[STR_READ_CAP + 1], esc[4 * STR_READ_CAP + 8];
	size_t el = 0, pos, chars, budget;

	if (len > STR_READ_CAP) {
		len = STR_READ_CAP;
		cut = 1;
	}
	memcpy(in, data, len);
	in[len] = '\0';
	/* text_escape stops at NUL: escape the runs between NUL bytes, and
	 * each NUL as the escaper writes a control byte. */
	for (size_t i = 0; i < len;) {
		size_t need;

		if (!in[i]) {
			memcpy(esc + el, "\\x00", 5);
			el += 4;
			i++;
			continue;
		}
		need = text_escape(esc + el, sizeof(esc) - el, in + i, 0);
		if (need >= sizeof(esc) - el) {
			el += strlen(esc + el);
			cut = 1;
			break;
		}
		el += need;
		i += strlen(in + i);
	}
	esc[el] = '\0';
	pos = (size_t)snprintf(out, size, "%s", prefix);
	/* Room for the prefix and for the closing quote or the "…". */
	budget = PYLOCALS_VALUE_CHARS - strlen(prefix) - 1;
	for (size_t i = 0; i < el;) {
		size_t n = token_len(esc + i, &chars);

		if (chars > budget || pos + n + 4 > size) {
			cut = 1;
			break;
		}
		memcpy(out + pos, esc + i, n);
		pos += n;
		i += n;
		budget -= chars;
		if (i >= el)
			break;
	}
	snprintf(out + pos, size - pos, "%s", cut ? PYSTR_ELLIPSIS : "'");
	return out;
}

/* ---- reading ---- */

static int read_u64(struct pylocals *c, uint64_t addr, uint64_t *v)
{
	*v = 0;
	return mem_read(c->r, v, sizeof(*v), addr);
}

static void set_value(struct pylocal *e, int kind, const char *fmt, uint64_t addr)
{
	e->kind = (uint8_t)kind;
	snprintf(e->value, sizeof(e->value), fmt, (unsigned long long)addr);
}

/* tp_name of the type at type, into t->name (escaped, at most
 * TYPE_NAME_READ bytes of it); a name crossing into an unreadable page
 * keeps what was readable. */
static void type_name(struct pylocals *c, uint64_t name_addr, struct pylocals_type *t)
{
	pyobj_cstr(c->r, name_addr, TYPE_NAME_READ, t->name, sizeof(t->name));
}

/* What the object at addr is; NULL when its type cannot be read. */
static const struct pylocals_type *type_of(struct pylocals *c, uint64_t addr)
{
	static const struct {
		const char *name;
		int kind;
	} builtin[] = {{"NoneType", PYLOCAL_NONE}, {"bool", PYLOCAL_BOOL}, {"int", PYLOCAL_INT},
		       {"float", PYLOCAL_FLOAT},   {"str", PYLOCAL_STR},   {"bytes", PYLOCAL_BYTES},
		       {"cell", PYLOCAL_OTHER}};
	struct pylocals_type *t;
	uint64_t type, name_addr, flags;

	if (read_u64(c, addr + c->o->ob_type, &type) || !type)
		return NULL;
	t = &c->types[(type * 0x9e3779b97f4a7c15ULL) >> 58];
	if (t->addr == type)
		return t;
	if (read_u64(c, type + c->L->type_name, &name_addr) ||
	    read_u64(c, type + c->obj->type_flags, &flags))
		return NULL;
	memset(t, 0, sizeof(*t));
	type_name(c, name_addr, t);
	t->kind = PYLOCAL_OTHER;
	for (size_t i = 0; !(flags & PY_TPFLAGS_HEAPTYPE) && i < sizeof(builtin) / sizeof(*builtin);
	     i++)
		if (!strcmp(t->name, builtin[i].name)) {
			t->kind = (uint8_t)builtin[i].kind;
			t->is_cell = !strcmp(builtin[i].name, "cell");
		}
	t->addr = type;
	return t;
}

/* int and bool: ob_size (<= 3.11, negative for negative ints) or lv_tag
 * (3.12+: ndigits << 3 | sign, 0 positive, 1 zero, 2 negative). */
static int read_long(struct pylocals *c, uint64_t addr, struct pylocal *e, int is_bool)
{
	const struct py_objlayout *L = c->obj;
	uint32_t digits[PYLOCALS_INT_DIGITS], top;
	uint64_t tag, nd, bits;
	int neg;

	if (read_u64(c, addr + L->long_size, &tag))
		return -1;
	if (L->long_tagged) {
		if ((tag & 3) == 3)
			return -1;
		neg = (tag & 3) == 2;
		nd = (tag & 3) == 1 ? 0 : tag >> 3;
	} else {
		neg = (int64_t)tag < 0;
		nd = neg ? (uint64_t)(-(int64_t)tag) : tag;
	}
	if (is_bool) {
		snprintf(e->value, sizeof(e->value), "%s", nd ? "True" : "False");
		return 0;
	}
	if (nd <= PYLOCALS_INT_DIGITS) {
		if (nd && mem_read(c->r, digits, nd * 4, addr + L->long_digits))
			return -1;
		for (uint64_t i = 0; i < nd; i++)
			if (digits[i] >> 30)
				return -1;
		pylocals_fmt_digits(digits, (size_t)nd, neg, e->value, sizeof(e->value));
		return 0;
	}
	/* Too long to show: its size, from the top digit (2^26 digits, 2 Gbit,
	 * is past any int a program holds; a larger count is not an int). */
	if (nd > (1u << 26) || mem_read(c->r, &top, 4, addr + L->long_digits + (nd - 1) * 4) ||
	    !top || top >> 30)
		return -1;
	bits = (nd - 1) * 30;
	while (top) {
		bits++;
		top >>= 1;
	}
	snprintf(e->value, sizeof(e->value), "<%sint of %llu bits>", neg ? "negative " : "",
		 (unsigned long long)bits);
	return 0;
}

static int read_str(struct pylocals *c, uint64_t addr, struct pylocal *e)
{
	static char buf[STR_READ_CAP];
	int64_t length = 0;
	size_t n, cps = 0;
	int got;

	if (mem_read(c->r, &length, sizeof(length), addr + c->o->unicode_length) || length < 0)
		return -1;
	got = pystr_read(c->r, c->o, addr, buf, sizeof(buf));
	if (got < 0)
		return -1;
	n = (size_t)got;
	for (size_t i = 0; i < n; i++)
		cps += ((unsigned char)buf[i] & 0xC0) != 0x80;
	/* pystr_read ended a cut copy with its own "…": ours replaces it. */
	if ((int64_t)cps != length && n >= 3 && !memcmp(buf + n - 3, PYSTR_ELLIPSIS, 3))
		n -= 3;
	pylocals_fmt_quoted("'", buf, n, (int64_t)cps != length, e->value, sizeof(e->value));
	return 0;
}

static int read_bytes(struct pylocals *c, uint64_t addr, struct pylocal *e)
{
	uint8_t *data;
	size_t len;
	int rc = pybytes_read(c->r, c->o, addr, &data, &len, BYTES_READ_CAP);

	if (rc < 0)
		return -1;
	pylocals_fmt_quoted("b'", (const char *)data, len, rc == 1, e->value, sizeof(e->value));
	free(data);
	return 0;
}

/* The value of the object at addr into e; through one cell when deref
 * (a cell or free variable's slot). 0, or 1 when the slot is unbound (an
 * empty cell: nothing to show). */
static int read_value(struct pylocals *c, uint64_t addr, int deref, struct pylocal *e)
{
	const struct pylocals_type *t = type_of(c, addr);
	int rc = -1;

	if (t && deref && t->is_cell) {
		e->cell = 1;
		if (read_u64(c, addr + c->L->cell_ref, &addr))
			t = NULL;
		else if (!addr)
			return 1;
		else
			t = type_of(c, addr);
	}
	if (!t) {
		set_value(e, PYLOCAL_UNREADABLE, "<unreadable at 0x%llx>", addr);
		return 0;
	}
	e->kind = t->kind;
	switch (t->kind) {
	case PYLOCAL_NONE:
		snprintf(e->value, sizeof(e->value), "None");
		return 0;
	case PYLOCAL_BOOL:
	case PYLOCAL_INT:
		rc = read_long(c, addr, e, t->kind == PYLOCAL_BOOL);
		break;
	case PYLOCAL_FLOAT: {
		double v;

		if (!(rc = mem_read(c->r, &v, sizeof(v), addr + c->L->float_value)))
			pylocals_fmt_float(v, e->value, sizeof(e->value));
		break;
	}
	case PYLOCAL_STR:
		rc = read_str(c, addr, e);
		break;
	case PYLOCAL_BYTES:
		rc = read_bytes(c, addr, e);
		break;
	default:
		snprintf(e->value, sizeof(e->value), "<%s at 0x%llx>", t->name,
			 (unsigned long long)addr);
		return 0;
	}
	if (rc)
		set_value(e, PYLOCAL_UNREADABLE, "<unreadable at 0x%llx>", addr);
	return 0;
}

/* The size of the tuple at t and up to max of its items into items. */
static int read_tuple(struct pylocals *c, uint64_t t, uint64_t *items, uint32_t max, uint32_t *size)
{
	uint64_t n;

	*size = 0;
	if (!t || read_u64(c, t + c->obj->tuple_size, &n) || n > NAMES_MAX)
		return -1;
	*size = (uint32_t)n;
	if (n > max)
		n = max;
	return n && mem_read(c->r, items, n * 8, t + c->obj->tuple_items) ? -1 : 0;
}

/* Slots and names of a frame, as both models give them. */
struct slots {
	uint64_t name[PYLOCALS_PER_FRAME];
	uint64_t value[PYLOCALS_PER_FRAME];
	uint8_t deref[PYLOCALS_PER_FRAME];
	uint32_t n, total;
};

/* <= 3.10: locals, then cells, then frees; the names in three tuples. */
static const char *split_names(struct pylocals *c, uint64_t code, struct slots *s)
{
	const uint16_t offs[3] = {c->L->code_varnames, c->L->code_cellvars, c->L->code_freevars};

	s->n = s->total = 0;
	for (int k = 0; k < 3; k++) {
		uint64_t t;
		uint32_t size;

		if (read_u64(c, code + offs[k], &t) ||
		    read_tuple(c, t, s->name + s->n, PYLOCALS_PER_FRAME - s->n, &size))
			return "names unreadable";
		for (uint32_t i = s->n; i < PYLOCALS_PER_FRAME && i < s->n + size; i++)
			s->deref[i] = k > 0;
		s->total += size;
		s->n = s->total < PYLOCALS_PER_FRAME ? s->total : PYLOCALS_PER_FRAME;
	}
	return NULL;
}

/* 3.11+: one names tuple and a bytes object of as many kinds. */
static const char *kinds_names(struct pylocals *c, uint64_t code, struct slots *s)
{
	uint8_t kinds[PYLOCALS_PER_FRAME];
	uint64_t t, k, klen;

	if (read_u64(c, code + c->L->code_localsplusnames, &t) ||
	    read_tuple(c, t, s->name, PYLOCALS_PER_FRAME, &s->total))
		return "names unreadable";
	s->n = s->total < PYLOCALS_PER_FRAME ? s->total : PYLOCALS_PER_FRAME;
	if (read_u64(c, code + c->L->code_localspluskinds, &k) || !k ||
	    read_u64(c, k + c->o->bytes_size, &klen))
		return "kinds unreadable";
	if (klen != s->total)
		return "names and kinds disagree";
	if (s->n && mem_read(c->r, kinds, s->n, k + c->o->bytes_data))
		return "kinds unreadable";
	/* A hidden slot (PEP 709) is shown when bound, as locals() shows it
	 * inside the comprehension. */
	for (uint32_t i = 0; i < s->n; i++)
		s->deref[i] = (kinds[i] & (PY_FAST_CELL | PY_FAST_FREE)) != 0;
	return NULL;
}

/* One bound slot into the next pool entry; 0, or -1 when the pool is full. */
static int add_local(struct pylocals *c, const struct slots *s, uint32_t i,
		     struct pylocals_frame *out)
{
	struct pylocal *e;
	uint64_t v = s->value[i];

	if (c->used >= PYLOCALS_PER_DUMP)
		return -1;
	e = &c->pool[c->used];
	memset(e, 0, sizeof(*e));
	if (c->L->ref_tagged) {
		/* _PyStackRef: tag 3 is an int kept in the word itself. */
		if ((v & 3) == 3) {
			e->kind = PYLOCAL_INT;
			snprintf(e->value, sizeof(e->value), "%lld", (long long)((int64_t)v >> 2));
			v = 0;
		}
		v &= ~3ULL;
		if (!v && !e->kind)
			return 0; /* unbound */
	}
	if (v && read_value(c, v, s->deref[i], e))
		return 0; /* an empty cell */
	if (pystr_read(c->r, c->o, s->name[i], e->name, sizeof(e->name)) < 0)
		snprintf(e->name, sizeof(e->name), "?");
	c->used++;
	out->n++;
	return 0;
}

void pylocals_read_frame(struct pylocals *c, uint64_t frame, uint64_t code,
			 struct pylocals_frame *out)
{
	static struct slots s;
	const char *why;

	memset(out, 0, sizeof(*out));
	memset(&s, 0, sizeof(s));
	out->first = c->used;
	if (c->used >= PYLOCALS_PER_DUMP) {
		c->frames_cut++;
		snprintf(out->error, sizeof(out->error),
			 "the per-dump bound of %d locals was reached", PYLOCALS_PER_DUMP);
		return;
	}
	why = c->L->model == PY_LOCALS_SPLIT ? split_names(c, code, &s) : kinds_names(c, code, &s);
	if (why) {
		snprintf(out->error, sizeof(out->error), "%s (code object at 0x%llx)", why,
			 (unsigned long long)code);
		return;
	}
	out->not_read = s.total - s.n;
	if (s.n && mem_read(c->r, s.value, s.n * 8, frame + c->L->frame_localsplus)) {
		snprintf(out->error, sizeof(out->error), "cannot read %u slots at 0x%llx: %s", s.n,
			 (unsigned long long)(frame + c->L->frame_localsplus),
			 strerror(c->r->last_errno ? c->r->last_errno : EFAULT));
		return;
	}
	for (uint32_t i = 0; i < s.n; i++) {
		if (!s.value[i])
			continue; /* unbound (3.14+: NULL is tagged, see add_local) */
		if (add_local(c, &s, i, out)) {
			out->not_read += s.n - i;
			c->frames_cut++;
			break;
		}
	}
}

int pylocals_init(struct pylocals *c, struct mem_reader *r, const struct py_offsets *o,
		  const struct py_extra *x)
{
	memset(c, 0, sizeof(*c));
	if (x->locals.model == PY_LOCALS_NONE || !x->obj.tuple_items) {
		errno = ENOTSUP;
		return -1;
	}
	c->r = r;
	c->o = o;
	c->obj = &x->obj;
	c->L = &x->locals;
	c->pool = calloc(PYLOCALS_PER_DUMP, sizeof(*c->pool));
	if (!c->pool) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

void pylocals_free(struct pylocals *c)
{
	free(c->pool);
	c->pool = NULL;
}
