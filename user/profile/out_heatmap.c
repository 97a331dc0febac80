// SPDX-License-Identifier: MIT
/*
 * A source heatmap as one self-contained HTML page: per source file, every
 * line with the share of samples whose innermost Python frame is on it
 * (self) and the share of samples with it anywhere on the stack (total,
 * counted once per sample however deep the recursion); with record
 * --opcodes, the opcodes sampled on it ([op NAME] marks), the specialized
 * share and the column span of its hottest instruction (3.11+). A file list
 * sorted by samples, the hottest lines of the whole profile, and a page
 * that opens on the hottest line.
 *
 * Every string in the page came from a target (file names, source lines,
 * opcode names, why a source is missing): each goes through the one markup
 * escaper, and none is put in the script, which reads only numbers and ids
 * the writer made. A Content-Security-Policy forbids any load: the page
 * opens offline and cannot call out.
 *
 * The sources are what the profile carries (sources.c): record reads them
 * as the target could, while it lives; convert has only what raw carried.
 */
#include "profile.h"
#include "id_map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define TOP_OPS	  3  /* opcodes named per line */
#define TOP_LINES 15 /* the page's list of hottest lines */

struct hm_line {
	uint32_t file; /* index into hm.files */
	int line;
	uint64_t self, total, stamp; /* stamp: the stack that last counted total */
	uint64_t nops, nspec;	     /* samples with an [op] mark here; of them specialized */
	uint32_t nspan;		     /* spans seen (hm.spans entries) */
};

struct hm_file {
	uint32_t str; /* the name's string id */
	uint64_t self, total, stamp;
	uint32_t *lines, nlines, cap; /* indices into hm.lines, sorted by line once done */
	uint32_t hot;		      /* its line with most self (index into hm.lines) */
	uint32_t rank;		      /* its place in the file list */
};

struct hm_op { /* an opcode on a line, or (kind 1) an instruction there */
	uint32_t line, kind;
	uint32_t name; /* string id of the mark (kind 0) */
	int c0, c1;    /* kind 1: its columns */
	uint64_t count;
};

struct hm {
	const struct profile *p;
	struct hm_line *lines;
	uint32_t nlines, cap_lines;
	struct hm_file *files;
	uint32_t nfiles, cap_files;
	struct hm_op *ops;
	uint32_t nops, cap_ops;
	struct id_map line_ix, file_ix, op_ix;
	uint64_t sum;	   /* the stacks' values: what every share is of */
	uint64_t op_total; /* samples with an [op] mark */
	uint32_t *order;   /* files in list order */
	uint32_t hot;	   /* the hottest line, or UINT32_MAX */
};

static int64_t file_of(struct hm *h, uint32_t str)
{
	int fresh;
	int64_t i = id_map_intern(&h->file_ix, str, &fresh);

	if (i < 0 || !fresh)
		return i;
	if (profile_grow((void **)&h->files, &h->cap_files, h->nfiles + 1, sizeof(*h->files)))
		return -1;
	memset(&h->files[h->nfiles], 0, sizeof(*h->files));
	h->files[h->nfiles].str = str;
	h->files[h->nfiles].hot = UINT32_MAX;
	return h->nfiles++;
}

static int64_t line_of(struct hm *h, uint32_t str, int line)
{
	int64_t fi = file_of(h, str), i;
	struct hm_file *f;
	int fresh;

	if (fi < 0)
		return -1;
	i = id_map_intern(&h->line_ix, (uint64_t)str << 32 | (uint32_t)line, &fresh);
	if (i < 0 || !fresh)
		return i;
	f = &h->files[fi];
	if (profile_grow((void **)&h->lines, &h->cap_lines, h->nlines + 1, sizeof(*h->lines)) ||
	    profile_grow((void **)&f->lines, &f->cap, f->nlines + 1, sizeof(*f->lines)))
		return -1;
	memset(&h->lines[h->nlines], 0, sizeof(*h->lines));
	h->lines[h->nlines].file = (uint32_t)fi;
	h->lines[h->nlines].line = line;
	f->lines[f->nlines++] = h->nlines;
	return h->nlines++;
}

/* An opcode (kind 0, name its mark's string id) or an instruction (kind
 * 1, name its index, -1 unknown: then told apart by its columns c0-c1) of
 * line li. */
static int op_add(struct hm *h, uint32_t li, uint32_t kind, int64_t name, int c0, int c1,
		  uint64_t v)
{
	uint32_t k = !kind ? (uint32_t)name & 0x7fffffffu
		     : name >= 0
			 ? 1u << 31 | ((uint32_t)name & 0xffffffu)
			 : 3u << 30 | (uint32_t)(c0 & 0x7fff) << 15 | (uint32_t)(c1 & 0x7fff);
	uint64_t key = (uint64_t)li << 32 | k;
	int fresh;
	int64_t i = id_map_intern(&h->op_ix, key, &fresh);

	if (i < 0)
		return -1;
	if (fresh) {
		if (profile_grow((void **)&h->ops, &h->cap_ops, h->nops + 1, sizeof(*h->ops)))
			return -1;
		h->ops[h->nops++] = (struct hm_op){li, kind, (uint32_t)name, c0, c1, 0};
		h->lines[li].nspan += kind;
	}
	h->ops[i].count += v;
	return 0;
}

/* The column span of an instruction mark: 0 and [col, endcol) in its
 * line's bytes, or -1 when it has none (before 3.11, a span ending on a
 * later line, an empty one such as RESUME's, or not read). */
static int op_span(const struct prof_op *op, int *c0, int *c1)
{
	if (op->col < 0 || op->endcol <= op->col)
		return -1;
	*c0 = op->col;
	*c1 = op->endcol;
	return 0;
}

/* One stack: self on its innermost Python line, total on each of its
 * lines and files once, its leaf-most [op] mark on the mark's line. */
static int hm_stack(struct hm *h, const struct prof_stack *st, uint64_t stamp)
{
	const struct profile *p = h->p;
	uint64_t v = profile_stack_value(p, st);
	int self_done = 0, op_done = 0;
	struct prof_op op;

	h->sum += v;
	for (uint32_t j = 0; j < st->nframes; j++) {
		const struct prof_frame *fr = &p->frames[st->frames[j]];
		const struct prof_func *fn = &p->funcs[fr->func];
		int64_t li;

		if (!op_done && fn->kind == FRAME_KIND_MARK && profile_op(p, st->frames[j], &op)) {
			int c0, c1;

			op_done = 1;
			if (!*op.file)
				continue;
			li = line_of(h, fn->file, fr->line);
			if (li < 0 || op_add(h, (uint32_t)li, 0, fn->name, 0, 0, v) ||
			    (!op_span(&op, &c0, &c1) &&
			     op_add(h, (uint32_t)li, 1, op.index, c0, c1, v)))
				return -1;
			h->lines[li].nops += v;
			h->lines[li].nspec += op.specialized ? v : 0;
			h->op_total += v;
			continue;
		}
		if (fn->kind != FRAME_KIND_PYTHON || !*profile_str(p, fn->file))
			continue;
		li = line_of(h, fn->file, fr->line);
		if (li < 0)
			return -1;
		if (!self_done) {
			self_done = 1;
			h->lines[li].self += v;
			h->files[h->lines[li].file].self += v;
		}
		if (h->lines[li].stamp != stamp) {
			h->lines[li].stamp = stamp;
			h->lines[li].total += v;
		}
		if (h->files[h->lines[li].file].stamp != stamp) {
			h->files[h->lines[li].file].stamp = stamp;
			h->files[h->lines[li].file].total += v;
		}
	}
	return 0;
}

static const struct hm *sort_h; /* qsort's context: one writer at a time */

static int line_cmp(const void *a, const void *b)
{
	const struct hm_line *x = &sort_h->lines[*(const uint32_t *)a];
	const struct hm_line *y = &sort_h->lines[*(const uint32_t *)b];

	return (x->line > y->line) - (x->line < y->line);
}

/* Files by self, then total, then name: the list's order. */
static int file_cmp(const void *a, const void *b)
{
	const struct hm_file *x = &sort_h->files[*(const uint32_t *)a];
	const struct hm_file *y = &sort_h->files[*(const uint32_t *)b];

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return strcmp(profile_str(sort_h->p, x->str), profile_str(sort_h->p, y->str));
}

/* Is line a hotter than b: more self, then more total, then the list's
 * earlier file, then the lower line. */
static int hotter(const struct hm *h, uint32_t a, uint32_t b)
{
	const struct hm_line *x = &h->lines[a], *y = &h->lines[b];

	if (b == UINT32_MAX)
		return 1;
	if (x->self != y->self)
		return x->self > y->self;
	if (x->total != y->total)
		return x->total > y->total;
	if (x->file != y->file)
		return h->files[x->file].rank < h->files[y->file].rank;
	return x->line < y->line;
}

static int hm_build(struct hm *h)
{
	for (uint32_t i = 0; i < h->p->nstacks; i++)
		if (hm_stack(h, &h->p->stacks[i], (uint64_t)i + 1))
			return -1;
	h->order = malloc((h->nfiles ? h->nfiles : 1) * sizeof(*h->order));
	if (!h->order)
		return -1;
	sort_h = h;
	for (uint32_t i = 0; i < h->nfiles; i++) {
		h->order[i] = i;
		qsort(h->files[i].lines, h->files[i].nlines, sizeof(uint32_t), line_cmp);
	}
	qsort(h->order, h->nfiles, sizeof(*h->order), file_cmp);
	for (uint32_t i = 0; i < h->nfiles; i++)
		h->files[h->order[i]].rank = i;
	h->hot = UINT32_MAX;
	for (uint32_t i = 0; i < h->nlines; i++) {
		struct hm_file *f = &h->files[h->lines[i].file];

		if (!h->lines[i].self)
			continue;
		if (hotter(h, i, f->hot))
			f->hot = i;
		if (hotter(h, i, h->hot))
			h->hot = i;
	}
	return 0;
}

static void hm_free(struct hm *h)
{
	for (uint32_t i = 0; i < h->nfiles; i++)
		free(h->files[i].lines);
	free(h->files);
	free(h->lines);
	free(h->ops);
	free(h->order);
	id_map_free(&h->line_ix);
	id_map_free(&h->file_ix);
	id_map_free(&h->op_ix);
}

/* n bytes of s as markup (s need not end there). */
static void put_markup_n(FILE *f, const char *s, size_t n)
{
	char buf[PROFILE_SOURCE_LINE_MAX + 1];

	while (n) {
		size_t k = n < sizeof(buf) - 1 ? n : sizeof(buf) - 1;

		memcpy(buf, s, k);
		buf[k] = '\0';
		out_put_markup(f, buf);
		s += k, n -= k;
	}
}

/* A share of the profile, "12.34%", or nothing for none. */
static void put_share(FILE *f, uint64_t v, uint64_t of)
{
	if (v && of)
		fprintf(f, "%.2f%%", 100.0 * (double)v / (double)of);
}

/* The most sampled instruction (with columns) of line li, or -1. */
static int64_t hot_span(const struct hm *h, uint32_t li)
{
	int64_t best = -1;

	if (!h->lines[li].nspan)
		return -1;
	for (uint32_t i = 0; i < h->nops; i++)
		if (h->ops[i].line == li && h->ops[i].kind &&
		    (best < 0 || h->ops[i].count > h->ops[best].count))
			best = i;
	return best;
}

/* "NAME 62%, NAME 30%, …" for the opcodes of line li, most sampled first. */
static void put_ops(FILE *f, const struct hm *h, uint32_t li)
{
	uint32_t top[TOP_OPS], n = 0;

	for (uint32_t i = 0; i < h->nops; i++) {
		uint32_t k;

		if (h->ops[i].line != li || h->ops[i].kind)
			continue;
		for (k = n; k > 0 && h->ops[top[k - 1]].count < h->ops[i].count; k--)
			if (k < TOP_OPS)
				top[k] = top[k - 1];
		if (k < TOP_OPS) {
			top[k] = i;
			n += n < TOP_OPS;
		}
	}
	for (uint32_t k = 0; k < n; k++) {
		const char *name = profile_str(h->p, h->ops[top[k]].name) + 4; /* "[op " */
		size_t len = strlen(name);

		fputs(k ? ", " : "", f);
		put_markup_n(f, name, len && name[len - 1] == ']' ? len - 1 : len);
		fputc(' ', f);
		put_share(f, h->ops[top[k]].count, h->lines[li].nops);
	}
}

/* The source text of a line, the hottest instruction's span marked. */
static void put_code(FILE *f, const struct hm *h, uint32_t li, const char *text)
{
	int64_t s = hot_span(h, li);
	size_t len = strlen(text);
	size_t a, b;

	if (s < 0) {
		out_put_markup(f, text);
		return;
	}
	a = h->ops[s].c0 < 0 ? 0 : (size_t)h->ops[s].c0;
	b = h->ops[s].c1 < 0 ? 0 : (size_t)h->ops[s].c1;
	a = a > len ? len : a;
	b = b > len ? len : b < a ? a : b;
	/* Columns are bytes of the line: keep the mark on whole characters. */
	while (a > 0 && ((unsigned char)text[a] & 0xc0) == 0x80)
		a--;
	while (b < len && ((unsigned char)text[b] & 0xc0) == 0x80)
		b++;
	put_markup_n(f, text, a);
	fputs("<mark>", f);
	put_markup_n(f, text + a, b - a);
	fputs("</mark>", f);
	out_put_markup(f, text + b);
}

/* One row: line, shares, specialized share, span, opcodes, source (text
 * NULL: none). li: the line's entry, UINT32_MAX for a line not sampled. */
static void put_row(FILE *f, const struct hm *h, uint32_t fi, uint32_t li, int line,
		    const char *text)
{
	const struct hm_line *l = li == UINT32_MAX ? NULL : &h->lines[li];
	const struct hm_line *hot = h->hot == UINT32_MAX ? NULL : &h->lines[h->hot];
	double heat = l && hot && hot->self ? (double)l->self / (double)hot->self : 0;
	int64_t s = l ? hot_span(h, li) : -1;

	fprintf(f, "<tr id=\"f%u-%d\" data-line=\"%d\" data-self=\"%llu\" data-total=\"%llu\"",
		h->files[fi].rank, line, line, l ? (unsigned long long)l->self : 0ull,
		l ? (unsigned long long)l->total : 0ull);
	if (l && l->nops)
		fprintf(f, " data-ops=\"%llu\" data-spec=\"%llu\"", (unsigned long long)l->nops,
			(unsigned long long)l->nspec);
	/* Warmer and more opaque as self nears the hottest line's. */
	if (heat > 0)
		fprintf(f, " style=\"background:rgba(255,%d,0,%.3f)\"", (int)(160 - 120 * heat),
			0.12 + 0.68 * heat);
	else if (l && l->total)
		fputs(" class=\"on-stack\"", f);
	fprintf(f, "><td class=\"ln\">%d</td><td class=\"self\">", line);
	if (l)
		put_share(f, l->self, h->sum);
	fputs("</td><td class=\"total\">", f);
	if (l)
		put_share(f, l->total, h->sum);
	fputs("</td><td class=\"spec\">", f);
	if (l && l->nops)
		fprintf(f, "%.2f%%", 100.0 * (double)l->nspec / (double)l->nops);
	fputs("</td><td class=\"col\">", f);
	if (s >= 0)
		fprintf(f, "%d-%d", h->ops[s].c0, h->ops[s].c1);
	fputs("</td><td class=\"ops\">", f);
	if (l && l->nops)
		put_ops(f, h, li);
	fputs("</td><td class=\"code\"><code>", f);
	if (text && l)
		put_code(f, h, li, text);
	else if (text)
		out_put_markup(f, text);
	fputs("</code></td></tr>\n", f);
}

/* What the page says of a file's source, and the source itself (or NULL). */
static const struct prof_source *put_source_note(FILE *f, const struct hm *h, uint32_t fi)
{
	const struct prof_source *src = profile_source(h->p, h->files[fi].str);

	fputs("<p class=\"src-note\">", f);
	if (!src) {
		fputs("Source: not in this profile (lines only).", f);
	} else if (src->why) {
		fputs("Source: not shown: ", f);
		out_put_markup(f, src->why);
	} else {
		fprintf(f, "Source: %u lines%s, as read at record time.", src->nlines,
			src->cut ? " (more were left out)" : "");
	}
	fputs("</p>\n", f);
	return src && !src->why ? src : NULL;
}

/* A file's view: its shares, its source note, and every line. */
static void put_file(FILE *f, const struct hm *h, uint32_t fi)
{
	const struct hm_file *hf = &h->files[fi];
	const struct prof_source *src;
	uint32_t k = 0;

	fprintf(f, "<section class=\"file\" id=\"f%u\" data-hot=\"", hf->rank);
	if (hf->hot != UINT32_MAX)
		fprintf(f, "%d", h->lines[hf->hot].line);
	fputs("\"><h2><code>", f);
	out_put_markup(f, profile_str(h->p, hf->str));
	fputs("</code></h2>\n<p class=\"meta\">self ", f);
	put_share(f, hf->self, h->sum);
	fputs(hf->self ? ", total " : "0%, total ", f);
	put_share(f, hf->total, h->sum);
	fprintf(f,
		" of the samples; %u lines sampled. <button type=\"button\" class=\"sort\" "
		"data-by=\"line\">sort by self share</button></p>\n",
		hf->nlines);
	src = put_source_note(f, h, fi);
	fputs("<table class=\"lines\"><thead><tr><th>line</th><th>self</th><th>total</th>"
	      "<th class=\"spec\">specialized</th><th class=\"col\">columns</th>"
	      "<th class=\"ops\">top opcodes</th><th>source</th></tr></thead><tbody>\n",
	      f);
	/* Sampled lines before line 1 (-1: before the first instruction). */
	for (; k < hf->nlines && h->lines[hf->lines[k]].line < 1; k++)
		put_row(f, h, fi, hf->lines[k], h->lines[hf->lines[k]].line, NULL);
	for (uint32_t n = 1; src && n <= src->nlines; n++) {
		uint32_t li = UINT32_MAX;

		if (k < hf->nlines && h->lines[hf->lines[k]].line == (int)n)
			li = hf->lines[k++];
		put_row(f, h, fi, li, (int)n, profile_source_line(src, n));
	}
	/* Without a source, or past its end (the file changed since). */
	for (; k < hf->nlines; k++)
		put_row(f, h, fi, hf->lines[k], h->lines[hf->lines[k]].line, NULL);
	fputs("</tbody></table></section>\n", f);
}

/* A link that shows file fi at line li (UINT32_MAX: its top), named by
 * the file, or with at_line by its base name and the line (the full name
 * in its title). */
static void put_link(FILE *f, const struct hm *h, uint32_t fi, uint32_t li, int at_line)
{
	const char *name = profile_str(h->p, h->files[fi].str), *base = strrchr(name, '/');
	uint32_t rank = h->files[fi].rank;

	if (li != UINT32_MAX)
		fprintf(f, "<a href=\"#f%u-%d\" data-file=\"f%u\" data-line=\"%d\"", rank,
			h->lines[li].line, rank, h->lines[li].line);
	else
		fprintf(f, "<a href=\"#f%u\" data-file=\"f%u\" data-line=\"\"", rank, rank);
	if (!at_line || li == UINT32_MAX) {
		fputs(">", f);
		out_put_markup(f, name);
		fputs("</a>", f);
		return;
	}
	fputs(" title=\"", f);
	out_put_markup(f, name);
	fputs("\">", f);
	out_put_markup(f, base && base[1] ? base + 1 : name);
	fprintf(f, ":%d</a>", h->lines[li].line);
}

static int hot_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return hotter(sort_h, x, y) ? -1 : hotter(sort_h, y, x) ? 1 : 0;
}

/* The hottest lines of the whole profile, and the file list. */
static int put_lists(FILE *f, const struct hm *h)
{
	uint32_t *hl = malloc((h->nlines ? h->nlines : 1) * sizeof(*hl)), n = 0;

	if (!hl)
		return -1;
	for (uint32_t i = 0; i < h->nlines; i++)
		if (h->lines[i].self)
			hl[n++] = i;
	sort_h = h;
	qsort(hl, n, sizeof(*hl), hot_cmp);
	fputs("<h2>Hottest lines</h2><table id=\"hotlines\"><thead><tr><th>self</th><th>total"
	      "</th><th>line</th></tr></thead><tbody>\n",
	      f);
	for (uint32_t i = 0; i < n && i < TOP_LINES; i++) {
		fprintf(f, "<tr data-self=\"%llu\"><td>", (unsigned long long)h->lines[hl[i]].self);
		put_share(f, h->lines[hl[i]].self, h->sum);
		fputs("</td><td>", f);
		put_share(f, h->lines[hl[i]].total, h->sum);
		fputs("</td><td>", f);
		put_link(f, h, h->lines[hl[i]].file, hl[i], 1);
		fputs("</td></tr>\n", f);
	}
	free(hl);
	fputs("</tbody></table>\n<h2>Files</h2><table id=\"files\"><thead><tr><th>file</th>"
	      "<th>self</th><th>total</th></tr></thead><tbody>\n",
	      f);
	for (uint32_t i = 0; i < h->nfiles; i++) {
		const struct hm_file *hf = &h->files[h->order[i]];

		fprintf(f, "<tr data-file=\"f%u\" data-self=\"%llu\" data-total=\"%llu\"><td>", i,
			(unsigned long long)hf->self, (unsigned long long)hf->total);
		put_link(f, h, h->order[i], hf->hot, 0);
		fputs("</td><td>", f);
		put_share(f, hf->self, h->sum);
		fputs("</td><td>", f);
		put_share(f, hf->total, h->sum);
		fputs("</td></tr>\n", f);
	}
	fputs("</tbody></table>\n", f);
	return 0;
}

static const char css[] =
    "body{margin:0;font:13px/1.35 sans-serif;color:#222;display:flex;flex-direction:column;"
    "height:100vh}header{padding:6px 12px;border-bottom:1px solid #ccc;flex:none}"
    "h1{font-size:17px;margin:2px 0}h2{font-size:14px;margin:10px 0 4px}header p{margin:2px 0}"
    "#wrap{flex:1;display:flex;min-height:0}nav{width:30%;max-width:480px;overflow:auto;"
    "padding:0 10px;border-right:1px solid #ccc}main{flex:1;overflow:auto;padding:0 10px}"
    "table{border-collapse:collapse}td,th{padding:0 6px;text-align:right;white-space:nowrap}"
    "th{position:sticky;top:0;background:#eee}#files td:first-child,#files th:first-child,"
    "#hotlines td:last-child,#hotlines th:last-child{text-align:left;white-space:normal;"
    "word-break:break-all}body.no-ops .col,body.no-ops .ops,body.no-ops .spec{display:none}"
    "td.code,th:last-child,td.ops,th.ops{text-align:left}td.code code{white-space:pre}"
    "td.ops{white-space:normal;min-width:14em;max-width:20em;font-size:11px;line-height:1.2}"
    "td.ln{color:#888}tr.on-stack{background:#eef3ff}tr.hot{outline:2px solid #c00}"
    "tr.sel{background:#ffe9c0}mark{background:#ff0;outline:1px solid #a80}"
    "section.file h2 code{word-break:break-all;white-space:normal}";

/* Reads only the ids and numbers the writer made: shows a file, sorts its
 * lines by self share and back, opens on the hottest line (or the #fN-LINE
 * of the address), and notes whether that line is in view
 * (body data-hot-in-view), for the tests. */
static const char js[] =
    "(function(){var main=document.querySelector('main'),B=document.body;"
    "function show(id,line){var s=document.querySelectorAll('section.file'),i,r=null;"
    "for(i=0;i<s.length;i++)s[i].hidden=s[i].id!==id;"
    "var fr=document.querySelectorAll('#files tr[data-file]');"
    "for(i=0;i<fr.length;i++)fr[i].classList.toggle('sel',fr[i].dataset.file===id);"
    "var o=document.querySelector('tr.hot');if(o)o.classList.remove('hot');"
    "if(line!==undefined&&line!=='')r=document.getElementById(id+'-'+line);"
    "B.dataset.shown=id||'';"
    "if(r){r.classList.add('hot');r.scrollIntoView({block:'center'});"
    "var a=r.getBoundingClientRect(),m=main.getBoundingClientRect();"
    "B.dataset.hotInView=a.top>=m.top&&a.bottom<=m.bottom?'1':'0';}else main.scrollTop=0;}"
    "function sort(b){var tb=b.closest('section').querySelector('tbody'),"
    "rows=Array.prototype.slice.call(tb.rows),share=b.dataset.by!=='share';"
    "rows.sort(function(x,y){var d=0;if(share)d=Number(y.dataset.self)-Number(x.dataset.self)"
    "||Number(y.dataset.total)-Number(x.dataset.total);"
    "return d||Number(x.dataset.line)-Number(y.dataset.line);});"
    "rows.forEach(function(r){tb.appendChild(r);});b.dataset.by=share?'share':'line';"
    "b.textContent=share?'sort by line':'sort by self share';}"
    "document.addEventListener('click',function(e){var a=e.target.closest('a[data-file]');"
    "if(a){e.preventDefault();show(a.dataset.file,a.dataset.line);"
    "history.replaceState(null,'',a.getAttribute('href'));return;}"
    "var b=e.target.closest('button.sort');if(b)sort(b);});"
    "var m=location.hash.match(/^#(f[0-9]+)(?:-(-?[0-9]+))?$/);"
    "if(m)show(m[1],m[2]);else show(B.dataset.hotFile,B.dataset.hotLine);})();";

/* The header: what the numbers are of, and what the page has or lacks. */
static void put_header(FILE *f, const struct hm *h)
{
	uint32_t with = 0, without = 0;

	for (uint32_t i = 0; i < h->nfiles; i++) {
		const struct prof_source *s = profile_source(h->p, h->files[i].str);

		with += s && !s->why;
		without += !s || s->why;
	}
	fputs("<header><h1>bpfpy heatmap</h1><p id=\"summary\">", f);
	if (h->p->weighted)
		fprintf(f, "%.6f s (clock %s: shares of nanoseconds)", (double)h->sum / 1e9,
			h->p->clock);
	else
		fprintf(f, "%llu samples (clock %s, every %.3f ms)", (unsigned long long)h->sum,
			h->p->clock, (double)h->p->period_ns / 1e6);
	fprintf(f,
		" in %u files. Self: the innermost Python frame is on the line; total: the "
		"line is on the stack (once a sample).</p>\n<p id=\"ops-note\">",
		h->nfiles);
	if (h->op_total)
		fprintf(f,
			"Opcodes: %.2f%% of the samples name the instruction that ran ([op] "
			"marks of record --opcodes); per line its most sampled opcodes, the "
			"share in a specialized form, and the columns of its most sampled "
			"instruction (3.11+).",
			100.0 * (double)h->op_total / (double)(h->sum ? h->sum : 1));
	else
		fputs("Opcodes: none in this recording (record --opcodes adds them): lines only.",
		      f);
	fputs("</p>\n<p id=\"src-note\">", f);
	if (!h->p->nsources)
		fputs("Sources: none in this profile (record keeps them when an output is a "
		      "heatmap; convert reads no file a recording names): lines without their "
		      "text.",
		      f);
	else
		fprintf(f,
			"Sources: %u of %u files, read by record as each target could read "
			"it, at its first sample there.",
			with, with + without);
	fputs("</p></header>\n", f);
}

int heatmap_write(FILE *f, const struct profile *p, const struct profile_out_opts *o,
		  struct diag *d)
{
	struct hm h = {.p = p};
	int rc = -1;

	(void)o;
	if (hm_build(&h)) {
		diag_errno(d, ENOMEM, "heatmap");
		goto out;
	}
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	      "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n"
	      "<title>bpfpy heatmap</title><style>",
	      f);
	fputs(css, f);
	fputs("</style></head>\n<body", f);
	if (!h.op_total)
		fputs(" class=\"no-ops\"", f);
	if (h.hot != UINT32_MAX)
		fprintf(f, " data-hot-file=\"f%u\" data-hot-line=\"%d\"",
			h.files[h.lines[h.hot].file].rank, h.lines[h.hot].line);
	fputs(">\n", f);
	put_header(f, &h);
	fputs("<div id=\"wrap\"><nav>\n", f);
	if (put_lists(f, &h)) {
		diag_errno(d, ENOMEM, "heatmap");
		goto out;
	}
	fputs("</nav><main>\n", f);
	for (uint32_t i = 0; i < h.nfiles; i++)
		put_file(f, &h, h.order[i]);
	fprintf(f, "</main></div>\n<script>%s</script>\n</body></html>\n", js);
	if (ferror(f)) {
		diag_errno(d, errno ? errno : EIO, "writing the heatmap");
		goto out;
	}
	rc = 0;
out:
	hm_free(&h);
	return rc;
}
