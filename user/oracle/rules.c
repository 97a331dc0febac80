// SPDX-License-Identifier: MIT
/*
 * Rules of the oracle's cases: parsing and matching. See rules.h for the
 * API and snippets/README.md for the format.
 *
 * Patterns are anchored sequences of quantified atoms over the stack, root
 * first, because that is how people read a call chain; the sampler hands us
 * the stack leaf first, so the matcher indexes it from the end. Matching
 * carries the set of reachable positions forward item by item (see
 * pattern_match), so a pattern of k items over n frames costs O(k·n)
 * whatever the quantifiers.
 */
#include "rules.h"

#include "diag.h"
#include "py_offsets.h"

#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NEST       8
#define MAX_RULES_FILE (1 << 20)
/* A rules file is input: a bound on items bounds the matcher's work per
 * stack (k·n). Real patterns have a handful of items ({m,n} repetition
 * covers recursion). */
#define MAX_PATTERN_ITEMS 256

struct line_range {
	int lo, hi;
};

enum atom_kind {
	ATOM_ANY,     /* "."  any frame */
	ATOM_FOREIGN, /* "~"  a frame of a file other than the snippet's */
	ATOM_FUNC,    /* name[@file][:lines] */
	ATOM_TASK,    /* "task:GLOB"  a [task NAME] mark whose NAME matches GLOB */
	ATOM_OP,      /* "op:GLOB"    an [op NAME] instruction mark whose NAME matches GLOB */
};

struct rule_atom {
	enum atom_kind kind;
	char *name;
	bool name_glob;
	char *file;	/* NULL: the snippet's own file */
	int file_parts; /* path components compared: 1 + slashes in file */
	struct line_range *lines;
	int nlines;
};

struct item {
	struct rule_atom atom;
	int min, max;
};

struct pattern {
	struct item *item;
	int n;
};

enum cond_op { OP_LT, OP_LE, OP_GT, OP_GE, OP_EQ, OP_NE };

struct cond {
	enum cond_op op;
	unsigned ver; /* major << 8 | minor */
	bool neg;     /* in the else branch */
};

struct conds {
	int n;
	struct cond c[MAX_NEST];
};

enum rule_kind { RULE_ALLOW, RULE_DENY };

struct rule {
	enum rule_kind kind;
	int family; /* -1: every thread */
	int line;
	char *label; /* NULL if none */
	struct pattern pat;
	struct conds cond;
};

struct expect_i {
	struct rule_expect pub;
	struct rule_atom atom;
	struct conds cond;
};

struct truth_i {
	struct rule_truth pub;
	struct rule_atom atom;
	struct conds cond;
};

struct rules {
	char *own;
	struct rule *rule;
	int nrule;
	char **family;
	int nfamily;
	struct expect_i **exp;
	int nexp;
	struct truth_i **tru;
	int ntru;
	bool opcodes; /* "opcodes": the modes name each sample's instruction */
};

struct tid_bind {
	int tid;
	int family; /* -1: empty slot */
};

struct rules_state {
	struct tid_bind *bind;
	size_t cap, used; /* power-of-two table of tid -> family */
	int *scratch;	  /* the matcher's, 3 * (frames + 2) */
	size_t scratch_cap;
	uint64_t steps; /* the matcher's work, for rules_state_steps() */
};

/* ---------------------------------------------------------------- parsing */

struct parser {
	const char *origin;
	int line;
	struct diag *d;
	struct rules *r;
	int family;
	struct conds cond;
	bool seen_else[MAX_NEST];
};

static int perr(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int perr(struct parser *p, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return diag_set(p->d, EXIT_USAGE, "%s:%d: %s", p->origin, p->line, msg);
}

static int oom(struct parser *p)
{
	return diag_errno(p->d, ENOMEM, "%s:%d", p->origin, p->line);
}

static bool all_digits(const char *s, size_t n)
{
	size_t i;

	if (!n)
		return false;
	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static int parse_int(const char *s, size_t n, int *out)
{
	long v = 0;
	size_t i;

	if (!all_digits(s, n) || n > 9)
		return -1;
	for (i = 0; i < n; i++)
		v = v * 10 + (s[i] - '0');
	*out = (int)v;
	return 0;
}

static bool has_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

static void atom_free(struct rule_atom *a)
{
	free(a->name);
	free(a->file);
	free(a->lines);
	memset(a, 0, sizeof(*a));
}

/* "12", "12-14", "3,7-9" */
static int parse_lines(struct parser *p, const char *tok, const char *s, struct rule_atom *a)
{
	while (*s) {
		const char *comma = strchr(s, ','), *dash;
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		struct line_range lr, *nl;

		dash = memchr(s, '-', len);
		if (dash) {
			if (parse_int(s, (size_t)(dash - s), &lr.lo) ||
			    parse_int(dash + 1, len - (size_t)(dash - s) - 1, &lr.hi) ||
			    lr.lo > lr.hi)
				return perr(p,
					    "bad line list in '%s': expected N, N-M (N <= M) or a "
					    "comma-separated list of them",
					    tok);
		} else {
			if (parse_int(s, len, &lr.lo))
				return perr(p,
					    "bad line list in '%s': expected N, N-M (N <= M) or a "
					    "comma-separated list of them",
					    tok);
			lr.hi = lr.lo;
		}
		nl = realloc(a->lines, (size_t)(a->nlines + 1) * sizeof(*nl));
		if (!nl)
			return oom(p);
		a->lines = nl;
		a->lines[a->nlines++] = lr;
		s += len;
		if (*s == ',') {
			s++;
			if (!*s)
				return perr(p, "bad line list in '%s': trailing ','", tok);
		}
	}
	return 0;
}

/* An atom without quantifier: ".", "~", name[@file][:lines]. */
static int parse_atom(struct parser *p, const char *tok, const char *s, size_t len,
		      struct rule_atom *a)
{
	const char *at, *colon = NULL, *q, *end = s + len;
	char *body;

	memset(a, 0, sizeof(*a));
	if (!len)
		return perr(p, "empty frame in '%s': expected a function name, '.', '~' or '*'",
			    tok);
	if (len == 1 && (*s == '.' || *s == '~')) {
		a->kind = *s == '.' ? ATOM_ANY : ATOM_FOREIGN;
		return 0;
	}
	/* "task:GLOB", "op:GLOB": no file, no lines (a mark has neither); an
	 * empty GLOB is any task, any instruction. */
	if ((len >= 5 && !strncmp(s, "task:", 5)) || (len >= 3 && !strncmp(s, "op:", 3))) {
		size_t skip = *s == 't' ? 5 : 3;

		a->kind = *s == 't' ? ATOM_TASK : ATOM_OP;
		a->name = strndup(s + skip, len - skip);
		if (!a->name)
			return oom(p);
		if (memchr(a->name, '{', len - skip) || memchr(a->name, '}', len - skip)) {
			atom_free(a);
			return perr(
			    p, "bad repetition in '%s': expected {m}, {m,} or {m,n} at the end",
			    tok);
		}
		a->name_glob = true;
		return 0;
	}
	a->kind = ATOM_FUNC;
	/* No Python name or file holds braces: one here is a repetition gone
	 * wrong, e.g. "hot{2,". */
	if (memchr(s, '{', len) || memchr(s, '}', len))
		return perr(p, "bad repetition in '%s': expected {m}, {m,} or {m,n} at the end",
			    tok);
	for (q = s; q < end; q++)
		if (*q == ':')
			colon = q;
	at = memchr(s, '@', len);
	if (colon && at && colon < at)
		return perr(
		    p, "bad frame '%s': expected name[@file][:lines], the file before the lines",
		    tok);
	body = strndup(s, (size_t)((colon ? colon : end) - s));
	if (!body)
		return oom(p);
	if (colon) {
		char *lines = strndup(colon + 1, (size_t)(end - colon - 1));

		if (!lines) {
			free(body);
			return oom(p);
		}
		if (!*lines || parse_lines(p, tok, lines, a)) {
			if (!*lines)
				perr(p, "bad frame '%s': expected line numbers after ':'", tok);
			free(lines);
			free(body);
			atom_free(a);
			return -1;
		}
		free(lines);
	}
	at = strchr(body, '@');
	if (at) {
		const char *f = at + 1;

		if (!*f || at == body) {
			free(body);
			atom_free(a);
			return perr(
			    p, "bad frame '%s': expected name@file with both parts non-empty", tok);
		}
		a->file = strdup(f);
		a->file_parts = 1;
		for (; *f; f++)
			a->file_parts += *f == '/';
		body[at - body] = '\0';
	}
	if (!strcmp(body, ".") || !strcmp(body, "~")) {
		free(body);
		atom_free(a);
		return perr(p, "bad frame '%s': '.' and '~' take no file or lines", tok);
	}
	a->name = body;
	a->name_glob = has_glob(body);
	if (at && !a->file) {
		atom_free(a);
		return oom(p);
	}
	return 0;
}

/* An item: an atom with an optional quantifier +, *, ?, {m}, {m,}, {m,n}.
 * A lone "*" is ".*". A trailing '*', '+' or '?' always quantifies, so a
 * name glob cannot end with one unless a file follows: "beta_*@*". */
static int parse_item(struct parser *p, const char *tok, struct item *it)
{
	size_t len = strlen(tok);
	char last = tok[len - 1];

	it->min = it->max = 1;
	if (!strcmp(tok, "*")) {
		it->min = 0;
		it->max = INT_MAX;
		return parse_atom(p, tok, ".", 1, &it->atom);
	}
	/* "name@*": the star is the file glob, not a repetition. */
	if (last == '*' && len >= 2 && tok[len - 2] == '@') {
		/* no quantifier */
	} else if (last == '+' || last == '*' || last == '?') {
		it->min = last == '+' ? 1 : 0;
		it->max = last == '?' ? 1 : INT_MAX;
		len--;
	} else if (last == '}') {
		const char *open = strrchr(tok, '{'), *comma;
		size_t inner;

		if (!open)
			return perr(p, "bad repetition in '%s': '}' without '{'", tok);
		inner = (size_t)(tok + len - 1 - open - 1);
		comma = memchr(open + 1, ',', inner);
		if (!comma) {
			if (parse_int(open + 1, inner, &it->min))
				goto bad;
			it->max = it->min;
		} else {
			size_t l1 = (size_t)(comma - open - 1), l2 = inner - l1 - 1;

			if (parse_int(open + 1, l1, &it->min))
				goto bad;
			if (!l2)
				it->max = INT_MAX;
			else if (parse_int(comma + 1, l2, &it->max))
				goto bad;
		}
		if (it->max < it->min || it->max == 0)
			goto bad;
		len = (size_t)(open - tok);
	}
	return parse_atom(p, tok, tok, len, &it->atom);
bad:
	return perr(
	    p, "bad repetition in '%s': expected {m}, {m,} or {m,n} with 0 <= m <= n, n > 0", tok);
}

static void pattern_free(struct pattern *pat)
{
	int i;

	for (i = 0; i < pat->n; i++)
		atom_free(&pat->item[i].atom);
	free(pat->item);
	pat->item = NULL;
	pat->n = 0;
}

/* Whitespace-separated items of s into pat. */
static int parse_pattern(struct parser *p, char *s, struct pattern *pat)
{
	char *save = NULL, *tok;

	memset(pat, 0, sizeof(*pat));
	for (tok = strtok_r(s, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		struct item *ni;

		if (pat->n == MAX_PATTERN_ITEMS) {
			pattern_free(pat);
			return perr(p, "pattern longer than %d items (use {m,n} repetition)",
				    MAX_PATTERN_ITEMS);
		}
		ni = realloc(pat->item, (size_t)(pat->n + 1) * sizeof(*ni));
		if (!ni) {
			pattern_free(pat);
			return oom(p);
		}
		pat->item = ni;
		if (parse_item(p, tok, &pat->item[pat->n])) {
			pattern_free(pat);
			return -1;
		}
		pat->n++;
	}
	if (!pat->n)
		return perr(p, "empty pattern: expected frames, root first, e.g. "
			       "'<module> main hot_a leaf_a'");
	return 0;
}

/* allow/deny [label] PATTERN */
static int parse_rule(struct parser *p, enum rule_kind kind, char *rest)
{
	struct rules *r = p->r;
	struct rule *nr, rule = {0};

	while (*rest == ' ' || *rest == '\t')
		rest++;
	if (*rest == '[') {
		char *close = strchr(rest, ']');

		if (!close)
			return perr(p, "unterminated label: expected '[label]' before the pattern");
		rule.label = strndup(rest + 1, (size_t)(close - rest - 1));
		if (!rule.label)
			return oom(p);
		rest = close + 1;
	}
	if (parse_pattern(p, rest, &rule.pat)) {
		free(rule.label);
		return -1;
	}
	rule.kind = kind;
	rule.family = p->family;
	rule.line = p->line;
	rule.cond = p->cond;
	nr = realloc(r->rule, (size_t)(r->nrule + 1) * sizeof(*nr));
	if (!nr) {
		free(rule.label);
		pattern_free(&rule.pat);
		return oom(p);
	}
	r->rule = nr;
	r->rule[r->nrule++] = rule;
	return 0;
}

static int next_tok(char **s, char **tok)
{
	*tok = strtok_r(NULL, " \t", s);
	return *tok ? 0 : -1;
}

static int parse_double(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return errno || end == s || *end ? -1 : 0;
}

/* A lone atom for expect/truth: no quantifier, not a wildcard. */
static int parse_lone_atom(struct parser *p, const char *tok, struct rule_atom *a)
{
	if (!strcmp(tok, "*"))
		return perr(p, "'*': expected a function (name[@file][:lines]), not a wildcard");
	if (parse_atom(p, tok, tok, strlen(tok), a))
		return -1;
	if (a->kind != ATOM_FUNC) {
		atom_free(a);
		return perr(p, "'%s': expected a function (name[@file][:lines]), not a wildcard",
			    tok);
	}
	return 0;
}

static int parse_expect(struct parser *p, char **save)
{
	struct expect_i *e, **ne;
	char *what, *share, *kw, *tol;

	if (next_tok(save, &what) || next_tok(save, &share))
		return perr(
		    p, "expected 'expect FRAME SHARE [tol TOL]', e.g. 'expect hot_a 0.5 tol 0.1'");
	e = calloc(1, sizeof(*e));
	if (!e)
		return oom(p);
	e->pub.tol = -1;
	if (parse_double(share, &e->pub.share) || e->pub.share < 0 || e->pub.share > 1) {
		free(e);
		return perr(p, "expect: share '%s' is not a number in [0, 1]", share);
	}
	if (!next_tok(save, &kw)) {
		if (strcmp(kw, "tol") || next_tok(save, &tol) || parse_double(tol, &e->pub.tol) ||
		    e->pub.tol < 0 || e->pub.tol > 1) {
			free(e);
			return perr(
			    p, "expect: expected 'tol TOL' with TOL in [0, 1] after the share");
		}
		if (!next_tok(save, &kw)) {
			free(e);
			return perr(p, "expect: unexpected '%s' after the tolerance", kw);
		}
	}
	if (parse_lone_atom(p, what, &e->atom)) {
		free(e);
		return -1;
	}
	e->pub.what = what = strdup(what);
	e->pub.line = p->line;
	e->pub.atom = &e->atom;
	e->cond = p->cond;
	ne = realloc(p->r->exp, (size_t)(p->r->nexp + 1) * sizeof(*ne));
	if (!what || !ne) {
		free(what);
		atom_free(&e->atom);
		free(e);
		return oom(p);
	}
	p->r->exp = ne;
	p->r->exp[p->r->nexp++] = e;
	return 0;
}

static int parse_truth(struct parser *p, char **save)
{
	struct truth_i *t, **nt;
	char *key, *what, *extra;

	if (next_tok(save, &key))
		return perr(p, "expected 'truth KEY [FRAME]', e.g. 'truth phase_a'");
	if (next_tok(save, &what))
		what = key;
	else if (!next_tok(save, &extra))
		return perr(p, "truth: unexpected '%s': expected 'truth KEY [FRAME]'", extra);
	t = calloc(1, sizeof(*t));
	if (!t)
		return oom(p);
	if (parse_lone_atom(p, what, &t->atom)) {
		free(t);
		return -1;
	}
	t->pub.key = strdup(key);
	t->pub.what = strdup(what);
	t->pub.line = p->line;
	t->pub.atom = &t->atom;
	t->cond = p->cond;
	nt = realloc(p->r->tru, (size_t)(p->r->ntru + 1) * sizeof(*nt));
	if (!t->pub.key || !t->pub.what || !nt) {
		free((char *)t->pub.key);
		free((char *)t->pub.what);
		atom_free(&t->atom);
		free(t);
		return oom(p);
	}
	p->r->tru = nt;
	p->r->tru[p->r->ntru++] = t;
	return 0;
}

/* if python OP X.Y */
static int parse_if(struct parser *p, char **save)
{
	static const char *ops[] = {"<", "<=", ">", ">=", "==", "!="};
	char *what, *op, *ver, *extra;
	int major, minor, i;
	struct cond c;
	char *dot;

	if (p->cond.n == MAX_NEST)
		return perr(p, "'if' nested deeper than %d", MAX_NEST);
	if (next_tok(save, &what) || strcmp(what, "python") || next_tok(save, &op) ||
	    next_tok(save, &ver) || !next_tok(save, &extra))
		return perr(p, "expected 'if python OP X.Y' with OP one of < <= > >= == !=");
	for (i = 0; i < 6; i++)
		if (!strcmp(op, ops[i]))
			break;
	if (i == 6)
		return perr(p, "unknown operator '%s': expected one of < <= > >= == !=", op);
	dot = strchr(ver, '.');
	if (!dot || parse_int(ver, (size_t)(dot - ver), &major) ||
	    parse_int(dot + 1, strlen(dot + 1), &minor) || major > 255 || minor > 255)
		return perr(p, "bad version '%s': expected MAJOR.MINOR, e.g. 3.12", ver);
	c.op = (enum cond_op)i;
	c.ver = PY_MAJOR_MINOR(PY_VERSION(major, minor));
	c.neg = false;
	p->seen_else[p->cond.n] = false;
	p->cond.c[p->cond.n++] = c;
	return 0;
}

static int parse_family(struct parser *p, char **save)
{
	struct rules *r = p->r;
	char *name, *extra, **nf;
	int i;

	if (next_tok(save, &name) || !next_tok(save, &extra))
		return perr(p, "expected 'family NAME' (one word)");
	if (p->family >= 0)
		return perr(p, "'family %s' inside family '%s': close it with 'end' first", name,
			    r->family[p->family]);
	if (p->cond.n)
		return perr(p, "'family' inside 'if': families are fixed, put the 'if' inside");
	for (i = 0; i < r->nfamily; i++) {
		if (!strcmp(r->family[i], name)) {
			p->family = i; /* reopening adds to it */
			return 0;
		}
	}
	nf = realloc(r->family, (size_t)(r->nfamily + 1) * sizeof(*nf));
	if (!nf)
		return oom(p);
	r->family = nf;
	r->family[r->nfamily] = strdup(name);
	if (!r->family[r->nfamily])
		return oom(p);
	p->family = r->nfamily++;
	return 0;
}

static int parse_line(struct parser *p, char *line)
{
	char *save = NULL, *dir, *hash = strchr(line, '#'), *extra;
	size_t off;

	if (hash)
		*hash = '\0';
	dir = strtok_r(line, " \t\r", &save);
	if (!dir)
		return 0;
	if (!strcmp(dir, "allow") || !strcmp(dir, "deny")) {
		/* The rest of the line, untokenised: a label may hold spaces. */
		off = (size_t)(dir - line) + strlen(dir) + 1;
		if (save && *save)
			return parse_rule(p, *dir == 'a' ? RULE_ALLOW : RULE_DENY, line + off);
		return perr(p, "%s: expected a pattern, e.g. '%s <module> main hot_a'", dir, dir);
	}
	if (!strcmp(dir, "family"))
		return parse_family(p, &save);
	if (!strcmp(dir, "end")) {
		if (!next_tok(&save, &extra))
			return perr(p, "end: unexpected '%s'", extra);
		if (p->family < 0)
			return perr(p, "'end' outside a family: expected 'family NAME' before it");
		if (p->cond.n)
			return perr(p, "'end' inside 'if': close the 'if' with 'endif' first");
		p->family = -1;
		return 0;
	}
	if (!strcmp(dir, "opcodes")) {
		if (!next_tok(&save, &extra))
			return perr(p, "opcodes: unexpected '%s'", extra);
		if (p->family >= 0 || p->cond.n)
			return perr(p, "'opcodes' is per case: put it outside families and ifs");
		p->r->opcodes = true;
		return 0;
	}
	if (!strcmp(dir, "if"))
		return parse_if(p, &save);
	if (!strcmp(dir, "else") || !strcmp(dir, "endif")) {
		if (!next_tok(&save, &extra))
			return perr(p, "%s: unexpected '%s'", dir, extra);
		if (!p->cond.n)
			return perr(p, "'%s' without 'if'", dir);
		if (*dir == 'e' && dir[1] == 'n') {
			p->cond.n--;
			return 0;
		}
		if (p->seen_else[p->cond.n - 1])
			return perr(p, "second 'else' for one 'if': expected 'endif'");
		p->seen_else[p->cond.n - 1] = true;
		p->cond.c[p->cond.n - 1].neg = true;
		return 0;
	}
	if (!strcmp(dir, "expect") || !strcmp(dir, "truth")) {
		if (p->family >= 0)
			return perr(p,
				    "'%s' inside family '%s': expectations are per case, "
				    "put them outside families",
				    dir, p->r->family[p->family]);
		return *dir == 'e' ? parse_expect(p, &save) : parse_truth(p, &save);
	}
	return perr(p,
		    "unknown directive '%s': expected allow, deny, family, end, if, else, endif, "
		    "expect, truth or opcodes",
		    dir);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

int rules_parse(const char *text, const char *origin, const char *own_file, struct rules **out,
		struct diag *d)
{
	struct parser p = {.origin = origin, .d = d, .family = -1};
	const char *s = text;
	struct rules *r;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r || !(r->own = strdup(base_name(own_file)))) {
		free(r);
		return diag_errno(d, ENOMEM, "%s", origin);
	}
	p.r = r;
	while (*s) {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);
		/* Where the next line starts, taken before the CR is cut off:
		 * advancing by the cut length left a last line "\r" without a
		 * newline in place, and the loop never ended. */
		const char *next = nl ? nl + 1 : s + len;
		char *line;

		if (len && s[len - 1] == '\r')
			len--; /* CRLF files */
		line = strndup(s, len);

		p.line++;
		if (!line) {
			rules_free(r);
			return oom(&p);
		}
		if (parse_line(&p, line)) {
			free(line);
			rules_free(r);
			return -1;
		}
		free(line);
		s = next;
	}
	if (p.cond.n) {
		rules_free(r);
		return perr(&p, "end of file inside 'if': expected 'endif'");
	}
	/* A family may run to the end of the file: 'end' only matters when
	 * global rules follow it. */
	*out = r;
	return 0;
}

int rules_load(const char *path, struct rules **out, struct diag *d)
{
	char own[512], *text;
	const char *b = base_name(path);
	size_t blen = strlen(b), n;
	FILE *f;
	int rc;

	*out = NULL;
	if (blen < 7 || strcmp(b + blen - 6, ".rules"))
		return diag_set(d, EXIT_USAGE, "%s: expected a file named <case>.rules", path);
	snprintf(own, sizeof(own), "%.*s.py", (int)(blen - 6), b);
	f = fopen(path, "r");
	if (!f) {
		diag_errno(d, errno, "cannot open rules file %s", path);
		d->code = EXIT_USAGE;
		return -1;
	}
	text = malloc(MAX_RULES_FILE + 1);
	if (!text) {
		fclose(f);
		return diag_errno(d, ENOMEM, "%s", path);
	}
	n = fread(text, 1, MAX_RULES_FILE + 1, f);
	if (ferror(f) || n > MAX_RULES_FILE) {
		fclose(f);
		free(text);
		return diag_set(d, EXIT_USAGE, "%s: %s", path,
				n > MAX_RULES_FILE ? "larger than 1 MiB" : "read error");
	}
	fclose(f);
	text[n] = '\0';
	if (memchr(text, '\0', n)) {
		free(text);
		return diag_set(d, EXIT_USAGE, "%s: binary data in a rules file", path);
	}
	rc = rules_parse(text, path, own, out, d);
	free(text);
	return rc;
}

void rules_free(struct rules *r)
{
	int i;

	if (!r)
		return;
	for (i = 0; i < r->nrule; i++) {
		free(r->rule[i].label);
		pattern_free(&r->rule[i].pat);
	}
	free(r->rule);
	for (i = 0; i < r->nfamily; i++)
		free(r->family[i]);
	free(r->family);
	for (i = 0; i < r->nexp; i++) {
		free((char *)r->exp[i]->pub.what);
		atom_free(&r->exp[i]->atom);
		free(r->exp[i]);
	}
	free(r->exp);
	for (i = 0; i < r->ntru; i++) {
		free((char *)r->tru[i]->pub.key);
		free((char *)r->tru[i]->pub.what);
		atom_free(&r->tru[i]->atom);
		free(r->tru[i]);
	}
	free(r->tru);
	free(r->own);
	free(r);
}

bool rules_opcodes(const struct rules *r)
{
	return r && r->opcodes;
}

const char *rules_own_file(const struct rules *r)
{
	return r->own;
}

/* --------------------------------------------------------------- matching */

static bool cond_holds(const struct cond *c, unsigned version_hex)
{
	unsigned v = PY_MAJOR_MINOR(version_hex);
	bool t = false;

	switch (c->op) {
	case OP_LT:
		t = v < c->ver;
		break;
	case OP_LE:
		t = v <= c->ver;
		break;
	case OP_GT:
		t = v > c->ver;
		break;
	case OP_GE:
		t = v >= c->ver;
		break;
	case OP_EQ:
		t = v == c->ver;
		break;
	case OP_NE:
		t = v != c->ver;
		break;
	}
	return t != c->neg;
}

static bool conds_hold(const struct conds *cs, unsigned version_hex)
{
	int i;

	for (i = 0; i < cs->n; i++)
		if (!cond_holds(&cs->c[i], version_hex))
			return false;
	return true;
}

bool rules_has_checks(const struct rules *r, unsigned version_hex)
{
	int i;

	for (i = 0; i < r->nrule; i++)
		if (conds_hold(&r->rule[i].cond, version_hex))
			return true;
	return false;
}

bool rules_has_families(const struct rules *r)
{
	return r->nfamily > 0;
}

/* The last n components of path ("a/b/c", 2 -> "b/c"). */
static const char *path_tail(const char *path, int n)
{
	const char *s = path + strlen(path);

	while (s > path) {
		if (s[-1] == '/' && --n == 0)
			return s;
		s--;
	}
	return path;
}

/* An unknown file matches any file condition: a sampler that could not read
 * co_filename has not shown a wrong one. */
static bool file_unknown(const char *file)
{
	return !file || !*file;
}

/*
 * Whether a known file satisfies atom a's FILE glob. Normally the frame's
 * last as many components as FILE has are compared. A sampler may send a
 * short path: Tachyon's collapsed output has the base name only
 * ("__init__.py" for json/__init__.py, "runners.py" for asyncio's). With
 * fewer components than FILE, an allow rule compares the components the
 * frame has with FILE's last ones (the rest is unknown: the benefit of the
 * doubt, as for a frame without a file), and a deny rule, which must be
 * shown, does not match: a glob of json's files would otherwise take any
 * base name ending in .py.
 */
static bool file_match(const struct rule_atom *a, const char *file, enum rule_kind kind)
{
	int have = 1;

	for (const char *s = file; *s; s++)
		have += *s == '/';
	if (have >= a->file_parts)
		return !fnmatch(a->file, path_tail(file, a->file_parts), 0);
	return kind == RULE_ALLOW && !fnmatch(path_tail(a->file, have), file, 0);
}

static bool is_own(const struct rules *r, const char *file)
{
	return file_unknown(file) || !strcmp(base_name(file), r->own);
}

static bool name_eq(const struct rule_atom *a, const char *name)
{
	const char *last;

	if (a->name_glob ? !fnmatch(a->name, name, 0) : !strcmp(a->name, name))
		return true;
	/* "Thread.run" or "f.<locals>.<listcomp>" (3.11+ qualnames) match
	 * "run" and "<listcomp>": rules stay the same on every version. */
	last = strrchr(name, '.');
	if (!last || !last[1])
		return false;
	return a->name_glob ? !fnmatch(a->name, last + 1, 0) : !strcmp(a->name, last + 1);
}

/*
 * A frame without a file (an external sampler that does not say it) is
 * given the benefit of the doubt both ways: an allow rule's file condition
 * accepts it, and a deny rule, which must be shown, takes it for the
 * snippet's own file. Were it to match a deny rule's "@a.py" too, every
 * b_* frame of such a sampler would be "b.py carrying an a function" and
 * the whole run impossible, for a file nobody showed.
 */
static bool atom_match(const struct rules *r, const struct rule_atom *a, const struct rule_frame *f,
		       enum rule_kind kind)
{
	const char *file = f->file;
	int i;

	if (kind == RULE_DENY && file_unknown(file))
		file = r->own;
	/* A task or instruction mark is no frame of any file: only "." and
	 * task:GLOB (op:GLOB) take it, so that "~+" over the loop's frames
	 * never swallows a task, nor a plain name an instruction. */
	if (f->task || a->kind == ATOM_TASK)
		return a->kind == ATOM_ANY ||
		       (f->task && a->kind == ATOM_TASK &&
			(!*a->name || !fnmatch(a->name, f->name ? f->name : "", 0)));
	/* An instruction the sampler did not report (name NULL: a tool that
	 * sends no marks) has the benefit of the doubt, as a frame without a
	 * file: an allow rule's op item takes it, a deny rule's does not. */
	if (f->op || a->kind == ATOM_OP)
		return a->kind == ATOM_ANY || (f->op && a->kind == ATOM_OP &&
					       (f->name ? !*a->name || !fnmatch(a->name, f->name, 0)
							: kind == RULE_ALLOW));
	switch (a->kind) {
	case ATOM_ANY:
		return true;
	case ATOM_FOREIGN:
		return file_unknown(file) || strcmp(base_name(file), r->own);
	case ATOM_FUNC:
	case ATOM_TASK:
	case ATOM_OP:
		break;
	}
	if (!f->name || !name_eq(a, f->name))
		return false;
	if (!a->file) {
		if (!is_own(r, file))
			return false;
	} else if (!file_unknown(file) && !file_match(a, file, kind)) {
		return false;
	}
	if (!a->nlines)
		return true;
	for (i = 0; i < a->nlines; i++)
		if (f->line >= a->lines[i].lo && f->line <= a->lines[i].hi)
			return true;
	return false;
}

/* Root-first frame i of a leaf-first stack of n. */
static const struct rule_frame *rf(const struct rule_frame *f, int n, int i)
{
	return &f[n - 1 - i];
}

static int ensure_scratch(struct rules_state *st, size_t need)
{
	int *ns;

	if (need <= st->scratch_cap)
		return 0;
	ns = malloc(need * sizeof(*ns));
	if (!ns)
		return -1;
	free(st->scratch);
	st->scratch = ns;
	st->scratch_cap = need;
	return 0;
}

/*
 * Matches pattern against the whole stack; *deepest gets how far from the
 * root it got: the furthest frame any item accepted from any position the
 * items before it can reach. A stack too big for memory is reported as not
 * matching.
 *
 * The set of positions (frames from the root) at which item pi can start
 * is carried forward one item at a time: from a reachable start fi, an
 * item of min..max repetitions whose atom accepts run consecutive frames
 * reaches every position in [fi + min, fi + min(run, max)], an interval.
 * The union of intervals is taken with a difference array, and the runs
 * are counted once per item, right to left. So every item costs O(n)
 * whatever its quantifier, and a pattern of k items O(k·n): no
 * backtracking (a ".{0,100000}" item used to try every end from every
 * start, O(n²) per item).
 */
static bool pattern_match(const struct rules *r, struct rules_state *st, const struct pattern *pat,
			  enum rule_kind kind, const struct rule_frame *f, int n, int *deepest)
{
	int *reach, *run, *diff, lo = 0, deep = 0;

	if (ensure_scratch(st, 3 * ((size_t)n + 2)))
		return false;
	reach = st->scratch;
	run = reach + n + 2;
	diff = run + n + 2;
	memset(reach, 0, ((size_t)n + 1) * sizeof(*reach));
	reach[0] = 1;
	for (int pi = 0; pi < pat->n; pi++) {
		const struct item *it = &pat->item[pi];
		int next_lo = -1, acc = 0;

		/* run[fi]: frames from fi on that the atom accepts in a row. */
		run[n] = 0;
		for (int fi = n - 1; fi >= lo; fi--) {
			st->steps++;
			if (it->atom.kind == ATOM_ANY)
				run[fi] = n - fi;
			else
				run[fi] = atom_match(r, &it->atom, rf(f, n, fi), kind)
					      ? run[fi + 1] + 1
					      : 0;
		}
		memset(diff + lo, 0, ((size_t)(n - lo) + 2) * sizeof(*diff));
		for (int fi = lo; fi <= n; fi++) {
			int k;

			st->steps++;
			if (!reach[fi])
				continue;
			k = run[fi] < it->max ? run[fi] : it->max;
			if (fi + k > deep)
				deep = fi + k;
			if (k < it->min)
				continue;
			diff[fi + it->min]++;
			diff[fi + k + 1]--;
		}
		for (int fi = lo; fi <= n; fi++) {
			acc += diff[fi];
			reach[fi] = acc > 0;
			if (reach[fi] && next_lo < 0)
				next_lo = fi;
		}
		if (next_lo < 0) {
			*deepest = deep;
			return false;
		}
		lo = next_lo;
	}
	*deepest = deep;
	return reach[n] != 0;
}

struct rules_state *rules_state_new(void)
{
	return calloc(1, sizeof(struct rules_state));
}

void rules_state_reset(struct rules_state *st)
{
	size_t i;

	for (i = 0; i < st->cap; i++)
		st->bind[i].family = -1;
	st->used = 0;
}

uint64_t rules_state_steps(const struct rules_state *st)
{
	return st ? st->steps : 0;
}

void rules_state_free(struct rules_state *st)
{
	if (!st)
		return;
	free(st->bind);
	free(st->scratch);
	free(st);
}

static struct tid_bind *bind_slot(const struct rules_state *st, int tid)
{
	size_t i, mask = st->cap - 1;

	if (!st->cap)
		return NULL;
	for (i = ((unsigned)tid * 2654435761u) & mask;; i = (i + 1) & mask)
		if (st->bind[i].family < 0 || st->bind[i].tid == tid)
			return &st->bind[i];
}

static int bound_family(const struct rules_state *st, int tid)
{
	struct tid_bind *b = bind_slot(st, tid);

	return b ? b->family : -1;
}

static int bind_tid(struct rules_state *st, int tid, int family)
{
	struct tid_bind *b;

	if ((st->used + 1) * 2 > st->cap) {
		size_t ocap = st->cap, i, ncap = ocap ? ocap * 2 : 64;
		struct tid_bind *old = st->bind, *nb = malloc(ncap * sizeof(*nb));

		if (!nb)
			return -1;
		for (i = 0; i < ncap; i++)
			nb[i].family = -1;
		st->bind = nb;
		st->cap = ncap;
		for (i = 0; i < ocap; i++)
			if (old[i].family >= 0)
				*bind_slot(st, old[i].tid) = old[i];
		free(old);
	}
	b = bind_slot(st, tid);
	if (b->family < 0)
		st->used++;
	b->tid = tid;
	b->family = family;
	return 0;
}

/* First applicable rule of kind and family matching the stack; -1 if none.
 * *best_line / *best_depth track the closest miss among allow rules. */
static int first_match(const struct rules *r, struct rules_state *st, enum rule_kind kind,
		       int family, const struct rule_frame *f, int n, unsigned ver, int *best_line,
		       int *best_depth)
{
	int i, depth = -1;

	for (i = 0; i < r->nrule; i++) {
		const struct rule *ru = &r->rule[i];

		if (ru->kind != kind || ru->family != family || !conds_hold(&ru->cond, ver))
			continue;
		if (pattern_match(r, st, &ru->pat, kind, f, n, &depth))
			return i;
		if (best_depth && depth > *best_depth) {
			*best_depth = depth;
			*best_line = ru->line;
		}
	}
	return -1;
}

static void describe_frame(char *buf, size_t size, const struct rule_frame *f)
{
	if (f->task || f->op) {
		snprintf(buf, size, "'[%s %s]'", f->task ? "task" : "op", f->name ? f->name : "?");
		return;
	}
	snprintf(buf, size, "'%s:%d' (%s)", f->name ? f->name : "?", f->line,
		 file_unknown(f->file) ? "unknown file" : base_name(f->file));
}

bool rules_match(const struct rules *r, struct rules_state *st, const struct rule_frame *frames,
		 int n, int tid, unsigned version_hex, struct rule_verdict *v)
{
	struct rule_verdict local;
	struct rules_state tmp = {0};
	int fam, matched = -2, i, hit, nallow = 0, best_line = 0, best_depth = -1, deny_fam;
	bool ok;

	if (!v)
		v = &local;
	memset(v, 0, sizeof(*v));
	v->possible = true;
	if (!st)
		st = &tmp; /* scratch only: no family can be bound without state */
	fam = bound_family(st, tid);

	/* Allow rules: global ones first (they bind nothing: a thread in the
	 * threading bootstrap belongs to no family yet), then the thread's
	 * family, or, for an unbound thread, the first family that fits. */
	if (first_match(r, st, RULE_ALLOW, -1, frames, n, version_hex, &best_line, &best_depth) >=
	    0)
		matched = -1;
	for (i = 0; i < r->nfamily && matched == -2; i++) {
		if ((fam < 0 || fam == i) && first_match(r, st, RULE_ALLOW, i, frames, n,
							 version_hex, &best_line, &best_depth) >= 0)
			matched = i;
	}
	for (i = 0; i < r->nrule; i++)
		nallow +=
		    r->rule[i].kind == RULE_ALLOW && conds_hold(&r->rule[i].cond, version_hex);

	deny_fam = fam >= 0 ? fam : matched;
	for (i = -1; i < r->nfamily; i++) {
		if (i >= 0 && i != deny_fam)
			continue;
		hit = first_match(r, st, RULE_DENY, i, frames, n, version_hex, NULL, NULL);
		if (hit >= 0) {
			const struct rule *ru = &r->rule[hit];

			v->possible = false;
			v->line = ru->line;
			snprintf(v->why, sizeof(v->why), "deny%s%s%s (line %d)",
				 ru->label ? " [" : "", ru->label ? ru->label : "",
				 ru->label ? "]" : "", ru->line);
			goto out;
		}
	}

	if (nallow && matched == -2) {
		char fr[160];

		v->possible = false;
		if (fam >= 0) {
			/* Name the family the stack does fit, if any: the usual
			 * bug is a stack attributed to the wrong thread. */
			for (i = 0; i < r->nfamily; i++) {
				if (i != fam && first_match(r, st, RULE_ALLOW, i, frames, n,
							    version_hex, NULL, NULL) >= 0) {
					snprintf(v->why, sizeof(v->why),
						 "thread %d is in family '%s' but shows a stack of "
						 "family '%s'",
						 tid, r->family[fam], r->family[i]);
					v->line = 0;
					goto out;
				}
			}
		}
		v->line = best_line;
		if (best_depth < 0) {
			snprintf(v->why, sizeof(v->why), "matches no allow rule");
		} else if (best_depth >= n) {
			snprintf(v->why, sizeof(v->why),
				 "matches no allow rule; closest, line %d, wants more than the %d "
				 "frames of the stack",
				 best_line, n);
		} else {
			describe_frame(fr, sizeof(fr), &frames[n - 1 - best_depth]);
			snprintf(
			    v->why, sizeof(v->why),
			    "matches no allow rule; closest, line %d, fits %d frame%s from the "
			    "root, then not frame %s",
			    best_line, best_depth, best_depth == 1 ? "" : "s", fr);
		}
		goto out;
	}
	if (matched >= 0 && fam < 0 && st != &tmp)
		bind_tid(st, tid, matched); /* on ENOMEM: judged again next time */
	fam = bound_family(st, tid);
out:
	v->family = fam >= 0 ? r->family[fam] : NULL;
	ok = v->possible;
	free(tmp.scratch);
	free(tmp.bind);
	return ok;
}

/* ------------------------------------------------------ expect and truth */

int rules_expects(const struct rules *r, unsigned version_hex, const struct rule_expect **out,
		  int max)
{
	int i, k = 0;

	for (i = 0; i < r->nexp; i++) {
		if (!conds_hold(&r->exp[i]->cond, version_hex))
			continue;
		if (k < max)
			out[k] = &r->exp[i]->pub;
		k++;
	}
	return k;
}

int rules_truths(const struct rules *r, unsigned version_hex, const struct rule_truth **out,
		 int max)
{
	int i, k = 0;

	for (i = 0; i < r->ntru; i++) {
		if (!conds_hold(&r->tru[i]->cond, version_hex))
			continue;
		if (k < max)
			out[k] = &r->tru[i]->pub;
		k++;
	}
	return k;
}

static bool any_frame(const struct rules *r, const struct rule_atom *a,
		      const struct rule_frame *frames, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (atom_match(r, a, &frames[i], RULE_ALLOW))
			return true;
	return false;
}

bool rules_expect_hit(const struct rules *r, const struct rule_expect *e,
		      const struct rule_frame *frames, int n)
{
	return e->atom && any_frame(r, e->atom, frames, n);
}

int rules_truth_classify(const struct rules *r, unsigned version_hex,
			 const struct rule_frame *frames, int n)
{
	int i, k = 0;

	for (i = 0; i < r->ntru; i++) {
		if (!conds_hold(&r->tru[i]->cond, version_hex))
			continue;
		if (any_frame(r, &r->tru[i]->atom, frames, n))
			return k;
		k++;
	}
	return -1;
}
