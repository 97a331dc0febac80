// SPDX-License-Identifier: MIT
/*
 * The oracle's HTML page. Same data as the JSON (per mode the distribution
 * and the impossible stacks, summed over runs as the table sums counts) and
 * the very table the text output prints: the text is rendered into memory
 * and split into cells, so the page can never show other columns or other
 * figures than the terminal. Everything is inline: the page is meant to be
 * mailed or attached to an issue and opened offline.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "oracle_html.h"
#include "profile.h"

#define TOP_KEYS       15
#define MAX_IMPOSSIBLE 50 /* per mode; the rest is counted, not listed */
#define NCOLOURS       8

/* A stack key with a break opportunity after each ';', so that a deep
 * stack wraps in its cell instead of widening the page. */
static void esc_key(FILE *f, const char *key)
{
	const char *p = key, *semi;

	while ((semi = strchr(p, ';'))) {
		char part[4096];
		size_t n = (size_t)(semi - p) + 1;

		if (n >= sizeof(part))
			n = sizeof(part) - 1;
		memcpy(part, p, n);
		part[n] = 0;
		out_put_markup(f, part);
		fputs("<wbr>", f);
		p = semi + 1;
	}
	out_put_markup(f, p);
}

/* Per mode, the runs summed: counts add up, as in the table. */
static int sum_runs(const struct oracle_plan *p, const struct oracle_case_result *cr, int m,
		    int impossible, struct keydist *out)
{
	for (int run = 0; run < p->o->runs; run++) {
		const struct oracle_result *r = &cr->res[run * p->nmodes + m];
		const struct keydist *kd = impossible ? r->imp : r->dist;
		size_t it = 0;
		const char *k;
		double w;

		while (kd && keydist_next(kd, &it, &k, &w))
			if (!keydist_add(out, k, w))
				return -1;
	}
	return 0;
}

struct row {
	const char *key;
	double score; /* the sort order */
};

static int by_score(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->score != y->score)
		return x->score < y->score ? 1 : -1;
	return strcmp(x->key, y->key); /* the same page for the same data */
}

/* The keys of kd, heaviest first (score = weight). NULL when out of memory. */
static struct row *sorted_keys(const struct keydist *kd, size_t *n)
{
	struct row *rows = calloc(keydist_nkeys(kd) + 1, sizeof(*rows));
	size_t it = 0, i = 0;
	const char *k;
	double w;

	if (!rows)
		return NULL;
	while (keydist_next(kd, &it, &k, &w))
		rows[i++] = (struct row){k, w};
	qsort(rows, i, sizeof(*rows), by_score);
	*n = i;
	return rows;
}

static void fmt_pct(char *buf, size_t len, double share)
{
	if (share <= 0)
		snprintf(buf, len, "0");
	else if (share < 0.001)
		snprintf(buf, len, "&lt;0.1%%");
	else
		snprintf(buf, len, "%.1f%%", 100 * share);
}

static const char css[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}\n"
    "h1{font-size:1.4em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}\n"
    "h3{font-size:1em;margin:1.2em 0 .4em}\n"
    "pre.hdr{background:#f5f5f5;padding:.5em;white-space:pre-wrap}\n"
    "table{border-collapse:collapse}\n"
    "table.fig td,table.fig th{border:1px solid #ddd;padding:2px 6px;text-align:right;"
    "font-variant-numeric:tabular-nums}\n"
    "table.fig td:first-child,table.fig th:first-child{text-align:left}\n"
    "table.fig tr.ref td{font-weight:bold}\n"
    "table.dist td{padding:1px 4px;vertical-align:middle}\n"
    "table.dist td.key{font:12px monospace;max-width:38em;word-break:break-word}\n"
    "table.dist tr:nth-child(even){background:#fafafa}\n"
    ".track{display:inline-block;width:14em;height:.9em;background:#eee;"
    "vertical-align:middle}\n"
    ".bar{height:100%}\n"
    ".pct{display:inline-block;width:4.5em;text-align:right;font-size:12px;"
    "font-variant-numeric:tabular-nums}\n"
    ".sw{display:inline-block;width:.9em;height:.9em;vertical-align:middle;margin:0 .3em}\n"
    ".m0{background:#4e79a7}.m1{background:#f28e2b}.m2{background:#59a14f}"
    ".m3{background:#e15759}.m4{background:#76b7b2}.m5{background:#b07aa1}"
    ".m6{background:#edc948}.m7{background:#9c755f}\n"
    "ul.imp{font:12px monospace;margin:.2em 0}ul.imp li{word-break:break-word}\n"
    ".none{color:#888}.note{color:#a33}\n";

/* The table as the terminal shows it, in cells. The text layout is known:
 * a header line of space-free column names, then one line per mode in
 * order, starting with the mode's name (which may hold spaces, so it is
 * matched, not split), then "note: " lines. Returns -1 when the text does
 * not look like that, and the caller shows it preformatted instead. */
static int table(FILE *f, const struct oracle_plan *p, const char *text)
{
	char *copy = strdup(text), *save = NULL, *line, *hdr = NULL;
	char *rows[ORACLE_MAX_MODES];
	int nrows = 0, ncols = 0, rc = -1;
	char *cols[64];

	if (!copy)
		return -1;
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!hdr && !strncmp(line, "mode ", 5))
			hdr = line;
		else if (hdr && nrows < p->nmodes)
			rows[nrows++] = line;
	}
	if (!hdr || nrows != p->nmodes)
		goto out;
	for (char *s2 = NULL, *c = strtok_r(hdr, " ", &s2); c && ncols < 64;
	     c = strtok_r(NULL, " ", &s2))
		cols[ncols++] = c;
	for (int m = 0; m < nrows; m++) {
		size_t l = strlen(p->modes[m].name);
		int n = 0;

		if (strncmp(rows[m], p->modes[m].name, l) || (rows[m][l] && rows[m][l] != ' '))
			goto out;
		for (char *s2 = NULL, *c = strtok_r(rows[m] + l, " ", &s2); c;
		     c = strtok_r(NULL, " ", &s2))
			n++;
		if (n != ncols - 1)
			goto out;
	}
	/* Checked; now written (strtok_r above cut each row in place, so the
	 * cells are walked as consecutive NUL-separated words). */
	fputs("<table class=\"fig\"><thead><tr>", f);
	for (int c = 0; c < ncols; c++) {
		fputs("<th>", f);
		out_put_markup(f, cols[c]);
		fputs("</th>", f);
	}
	fputs("</tr></thead><tbody>\n", f);
	for (int m = 0; m < nrows; m++) {
		char *cell = rows[m] + strlen(p->modes[m].name);

		fprintf(f, "<tr%s><td><span class=\"sw m%d\"></span>",
			m == p->ref ? " class=\"ref\"" : "", m % NCOLOURS);
		out_put_markup(f, p->modes[m].name);
		fputs("</td>", f);
		for (int c = 1; c < ncols; c++) {
			while (*cell == ' ' || !*cell)
				cell++;
			fputs("<td>", f);
			out_put_markup(f, cell);
			fputs("</td>", f);
			cell += strlen(cell);
		}
		fputs("</tr>\n", f);
	}
	fputs("</tbody></table>\n", f);
	rc = 0;
out:
	free(copy);
	return rc;
}

static void notes(FILE *f, const char *text)
{
	const char *p = text;

	while ((p = strstr(p, "note: "))) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char *l = strndup(p, n);

		if (p == text || p[-1] == '\n') {
			fputs("<p class=\"note\">", f);
			out_put_markup(f, l ? l : "");
			fputs("</p>\n", f);
		}
		free(l);
		p += n;
	}
}

/* Bars of the heaviest keys, each mode side by side. Keys are ranked by
 * their largest share in any mode, not by the reference's alone, so that a
 * mode's own wrong stack (absent from the reference) is shown, not hidden
 * below the cut. */
static int dist_chart(FILE *f, const struct oracle_plan *p, struct keydist **per_mode)
{
	struct keydist *all = keydist_new();
	double tot[ORACLE_MAX_MODES], top = 0, rest[ORACLE_MAX_MODES];
	struct row *rows = NULL;
	size_t n = 0, it = 0, shown;
	const char *k;
	double w;

	if (!all)
		return -1;
	for (int m = 0; m < p->nmodes; m++) {
		tot[m] = keydist_total(per_mode[m]);
		rest[m] = tot[m] > 0 ? 1 : 0;
		it = 0;
		while (keydist_next(per_mode[m], &it, &k, &w))
			if (!keydist_add(all, k, 0)) {
				keydist_free(all);
				return -1;
			}
	}
	rows = sorted_keys(all, &n);
	if (!rows) {
		keydist_free(all);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		rows[i].score = 0;
		for (int m = 0; m < p->nmodes; m++)
			if (tot[m] > 0 &&
			    keydist_get(per_mode[m], rows[i].key) / tot[m] > rows[i].score)
				rows[i].score = keydist_get(per_mode[m], rows[i].key) / tot[m];
	}
	qsort(rows, n, sizeof(*rows), by_score);
	shown = n < TOP_KEYS ? n : TOP_KEYS;
	if (shown)
		top = rows[0].score;
	fprintf(f,
		"<h3>Distribution: the %zu heaviest of %zu stack keys, share of each mode's "
		"possible stacks</h3>\n",
		shown, n);
	if (!n) {
		fputs("<p class=\"none\">no possible stacks in any mode</p>\n", f);
		goto out;
	}
	fputs("<table class=\"dist\"><thead><tr><th>stack (leaf first)</th>", f);
	for (int m = 0; m < p->nmodes; m++) {
		fprintf(f, "<th><span class=\"sw m%d\"></span>", m % NCOLOURS);
		out_put_markup(f, p->modes[m].name);
		fprintf(f, "%s</th>", m == p->ref ? " (ref)" : "");
	}
	fputs("</tr></thead><tbody>\n", f);
	for (size_t i = 0; i < shown; i++) {
		fputs("<tr><td class=\"key\" title=\"", f);
		out_put_markup(f, rows[i].key);
		fputs("\">", f);
		esc_key(f, rows[i].key);
		fputs("</td>", f);
		for (int m = 0; m < p->nmodes; m++) {
			double s = tot[m] > 0 ? keydist_get(per_mode[m], rows[i].key) / tot[m] : 0;
			char pct[32];

			rest[m] -= s;
			fmt_pct(pct, sizeof(pct), s);
			/* Scaled to the heaviest bar, so small shares still show;
			 * the number beside it is the share itself. */
			fprintf(
			    f,
			    "<td><div class=\"track\"><div class=\"bar m%d\" "
			    "style=\"width:%.2f%%\"></div></div><span class=\"pct\">%s</span></td>",
			    m % NCOLOURS, top > 0 ? 100 * s / top : 0, pct);
		}
		fputs("</tr>\n", f);
	}
	if (n > shown) {
		fprintf(f, "<tr><td class=\"key none\">%zu other keys</td>", n - shown);
		for (int m = 0; m < p->nmodes; m++) {
			char pct[32];

			/* 1 minus the shown shares leaves rounding dust. */
			fmt_pct(pct, sizeof(pct), rest[m] > 1e-9 ? rest[m] : 0);
			fprintf(f, "<td><span class=\"pct\">%s</span></td>", pct);
		}
		fputs("</tr>\n", f);
	}
	fputs("</tbody></table>\n", f);
out:
	free(rows);
	keydist_free(all);
	return 0;
}

static int impossible_list(FILE *f, const struct oracle_plan *p,
			   const struct oracle_case_result *cr)
{
	fputs("<h3>Impossible stacks seen</h3>\n", f);
	for (int m = 0; m < p->nmodes; m++) {
		struct keydist *imp = keydist_new();
		struct row *rows = NULL;
		size_t n = 0;

		if (!imp || sum_runs(p, cr, m, 1, imp) || !(rows = sorted_keys(imp, &n))) {
			keydist_free(imp);
			return -1;
		}
		fprintf(f, "<div class=\"imp\"><span class=\"sw m%d\"></span><b>", m % NCOLOURS);
		out_put_markup(f, p->modes[m].name);
		fprintf(f, "</b>: %.0f impossible in %zu distinct stacks", keydist_total(imp), n);
		if (n) {
			fputs("<ul class=\"imp\">\n", f);
			for (size_t i = 0; i < n && i < MAX_IMPOSSIBLE; i++) {
				fprintf(f, "<li>%.0f &times; ", rows[i].score);
				esc_key(f, rows[i].key);
				fputs("</li>\n", f);
			}
			if (n > MAX_IMPOSSIBLE)
				fprintf(f, "<li class=\"none\">and %zu more</li>\n",
					n - MAX_IMPOSSIBLE);
			fputs("</ul>", f);
		}
		fputs("</div>\n", f);
		free(rows);
		keydist_free(imp);
	}
	return 0;
}

/* The text the terminal gets from fn, as a string (NULL: out of memory). */
static char *captured_case(const struct oracle_plan *p, const struct oracle_case_result *cr)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *ms = open_memstream(&buf, &len);

	if (!ms)
		return NULL;
	oracle_print_case(ms, p, cr);
	if (fclose(ms)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static char *captured_header(const struct oracle_plan *p, const struct oracle_python *py,
			     int ncases, int ncpus, double other_load)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *ms = open_memstream(&buf, &len);

	if (!ms)
		return NULL;
	oracle_print_header(ms, p, py, ncases, ncpus, other_load);
	if (fclose(ms)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int write_case(FILE *f, const struct oracle_plan *p, const struct oracle_case_result *cr,
		      int ci)
{
	struct keydist *per_mode[ORACLE_MAX_MODES] = {0};
	char *text = captured_case(p, cr);
	int rc = -1;

	if (!text)
		return -1;
	fprintf(f, "<section class=\"case\" id=\"case-%d\"><h2>", ci);
	out_put_markup(f, cr->c->name);
	fputs("</h2>\n<p>", f);
	out_put_markup(f, cr->c->operation);
	fprintf(f, " &mdash; %zu keys in the reference, %d run%s</p>\n",
		keydist_nkeys(cr->res[p->ref].dist), p->o->runs, p->o->runs > 1 ? "s" : "");
	if (table(f, p, text)) {
		fputs("<pre>", f);
		out_put_markup(f, text);
		fputs("</pre>\n", f);
	} else {
		notes(f, text);
	}
	for (int m = 0; m < p->nmodes; m++)
		if (!(per_mode[m] = keydist_new()) || sum_runs(p, cr, m, 0, per_mode[m]))
			goto out;
	if (dist_chart(f, p, per_mode) || impossible_list(f, p, cr))
		goto out;
	fputs("</section>\n", f);
	rc = 0;
out:
	for (int m = 0; m < p->nmodes; m++)
		keydist_free(per_mode[m]);
	free(text);
	return rc;
}

int oracle_write_html(const char *path, const struct oracle_plan *p, const struct oracle_python *py,
		      struct oracle_case_result *crs, int ncases, int ncpus, double other_load,
		      struct diag *d)
{
	struct out_file of;
	char *hdr = captured_header(p, py, ncases, ncpus, other_load);

	if (!hdr)
		return diag_errno(d, ENOMEM, "--html %s", path);
	if (out_file_open(&of, path, p->o->force, d)) {
		free(hdr);
		return -1;
	}
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width\">\n<title>bpfpy oracle: ",
	      of.f);
	for (int ci = 0; ci < ncases; ci++) {
		out_put_markup(of.f, crs[ci].c->name);
		fputs(ci + 1 < ncases ? ", " : "", of.f);
	}
	fprintf(of.f, "</title>\n<style>\n%s</style></head><body>\n<h1>bpfpy oracle</h1>\n", css);
	fputs("<pre class=\"hdr\">", of.f);
	out_put_markup(of.f, hdr);
	fputs("</pre>\n<p>Modes:", of.f);
	for (int m = 0; m < p->nmodes; m++) {
		fprintf(of.f, " <span class=\"sw m%d\"></span>", m % NCOLOURS);
		out_put_markup(of.f, p->modes[m].name);
		fputs(m == p->ref ? " (reference)" : "", of.f);
	}
	fputs(". Cases:", of.f);
	for (int ci = 0; ci < ncases; ci++) {
		fprintf(of.f, " <a href=\"#case-%d\">", ci);
		out_put_markup(of.f, crs[ci].c->name);
		fputs("</a>", of.f);
	}
	fputs("</p>\n", of.f);
	free(hdr);
	for (int ci = 0; ci < ncases; ci++)
		if (write_case(of.f, p, &crs[ci], ci)) {
			out_file_abort(&of);
			return diag_errno(d, ENOMEM, "--html %s", path);
		}
	fputs("</body></html>\n", of.f);
	return out_file_commit(&of, d);
}
