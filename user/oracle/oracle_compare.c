// SPDX-License-Identifier: MIT
/*
 * The regression gate (oracle_compare.h): two oracle runs' JSON, row by
 * row, each figure with the test that fits how it was measured
 * (docs/oracle-gate.md says why each):
 *   impossible%, errors%  Fisher's exact test on the summed counts
 *   tvd_excess, tvd_fn    a block bootstrap's standard error a side,
 *                         normal test of the difference
 *   µs                    Welch on the per-block mean costs
 *   slowdown%             Welch on the per-pair figures
 * With --runs N >= 2 on both sides every figure is compared by Welch on
 * its per-run values instead: targets differ from run to run more than
 * samples within one run, and only between-run spread sees that.
 * Holm's correction runs over every test of the comparison.
 */
#include "oracle_compare.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <json-c/json.h>

#include "diag.h"
#include "elf_file.h"
#include "oracle_run.h"
#include "profile.h"
#include "text_escape.h"

/* Deep enough for the format (root, cases, modes, runs, blocks: 7). */
#define JSON_DEPTH 16

void oracle_machine(const struct oracle_python *py, struct oracle_machine *m)
{
	struct utsname u;
	char line[512], path[2 * PATH_MAX];
	FILE *f;
	struct elfsym *e;

	memset(m, 0, sizeof(*m));
	if (!uname(&u)) {
		snprintf(m->kernel, sizeof(m->kernel), "%s", u.release);
		snprintf(m->machine, sizeof(m->machine), "%s", u.machine);
	}
	f = fopen("/proc/cpuinfo", "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':');

		if (!strncmp(line, "model name", 10) && c) {
			c += 1 + (c[1] == ' ');
			c[strcspn(c, "\n")] = 0;
			snprintf(m->cpu_model, sizeof(m->cpu_model), "%s", c);
			break;
		}
	}
	if (f)
		fclose(f);
	/* py->python is inside py->root for a chroot's interpreter. */
	snprintf(path, sizeof(path), "%s%s", strcmp(py->root, "/") ? py->root : "", py->python);
	e = elfsym_open_path(path, NULL);
	if (e) {
		if (elfsym_build_id(e, m->build_id, sizeof(m->build_id)))
			m->build_id[0] = 0;
		elfsym_close(e);
	}
}

static int bad(struct diag *d, const char *path, const char *what)
{
	char en[1024];

	return diag_set(d, EXIT_USAGE, "%s: %s: not a bpfpy oracle --json file (version %d)",
			text_esc(path, en, sizeof(en)), what, ORACLE_JSON_VERSION);
}

static json_object *get(json_object *o, const char *key, json_type t)
{
	json_object *v;

	if (!o || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, t))
		return NULL;
	return v;
}

static const char *get_str(json_object *o, const char *key)
{
	json_object *v = get(o, key, json_type_string);

	return v ? json_object_get_string(v) : NULL;
}

/* A number, or NAN when absent, null or not a number. */
static double get_num(json_object *o, const char *key)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || !v)
		return NAN;
	if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
		return NAN;
	return json_object_get_double(v);
}

/* A count: an integer 0..2^48 (far above any window's), else -1. */
static int64_t get_count(json_object *o, const char *key)
{
	json_object *v = get(o, key, json_type_int);
	int64_t x;

	if (!v)
		return -1;
	x = json_object_get_int64(v);
	return x >= 0 && x <= (1LL << 48) ? x : -1;
}

/* The shape the gate reads, checked once so the rest may trust it. */
static int validate(json_object *root, const char *path, struct diag *d)
{
	json_object *h = get(root, "header", json_type_object), *cases;
	const char *fmt = get_str(h, "format");

	if (!h || !fmt || strcmp(fmt, ORACLE_JSON_FORMAT))
		return bad(d, path, "no header with format \"" ORACLE_JSON_FORMAT "\"");
	if (get_num(h, "format_version") != ORACLE_JSON_VERSION)
		return bad(d, path, "another format_version (an older bpfpy wrote it?)");
	if (!get_str(h, "python_version") || isnan(get_num(h, "rate_khz")) ||
	    isnan(get_num(h, "duration")) || get_count(h, "runs") < 1 ||
	    !get_str(h, "reference_mode"))
		return bad(d, path,
			   "header lacks python_version, rate_khz, duration, runs or "
			   "reference_mode");
	cases = get(root, "cases", json_type_array);
	if (!cases)
		return bad(d, path, "no cases array");
	for (size_t ci = 0; ci < json_object_array_length(cases); ci++) {
		json_object *c = json_object_array_get_idx(cases, ci);
		json_object *modes = get(c, "modes", json_type_array);

		if (!get_str(c, "name") || !modes)
			return bad(d, path, "a case without name or modes");
		for (size_t mi = 0; mi < json_object_array_length(modes); mi++) {
			json_object *m = json_object_array_get_idx(modes, mi);
			json_object *runs = get(m, "runs", json_type_array);

			if (!get_str(m, "mode") || !runs ||
			    (int64_t)json_object_array_length(runs) != get_count(h, "runs"))
				return bad(d, path,
					   "a mode without name, or not one entry per run");
			for (size_t ri = 0; ri < json_object_array_length(runs); ri++) {
				json_object *r = json_object_array_get_idx(runs, ri);
				static const char *const counts[] = {"attempts", "stacks", "errors",
								     "impossible"};

				for (size_t k = 0; k < 4; k++)
					if (get_count(r, counts[k]) < 0)
						return bad(d, path, "a run without its counts");
				if (get_count(r, "errors") > get_count(r, "attempts") ||
				    get_count(r, "impossible") > get_count(r, "stacks"))
					return bad(d, path,
						   "more errors or impossible than there "
						   "were attempts or stacks");
			}
		}
	}
	return 0;
}

json_object *oracle_json_load(const char *path, struct diag *d)
{
	char en[1024];
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	json_tokener *tok = NULL;
	json_object *root = NULL;

	text_esc(path, en, sizeof(en));
	if (fd < 0) {
		diag_errno(d, errno, "cannot open %s", en);
		d->code = EXIT_USAGE;
		return NULL;
	}
	/* A FIFO or a device could hang or never end: a regular file only. */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		diag_set(d, EXIT_USAGE, "%s: not a regular file", en);
		goto out;
	}
	if (st.st_size > ORACLE_JSON_MAX) {
		diag_set(d, EXIT_USAGE, "%s: %lld bytes, more than the %ld a baseline may have", en,
			 (long long)st.st_size, ORACLE_JSON_MAX);
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		diag_errno(d, ENOMEM, "%s", en);
		goto out;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	tok = json_tokener_new_ex(JSON_DEPTH);
	if (tok) {
		json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
		root = json_tokener_parse_ex(tok, buf, (int)got);
		if (!root || json_tokener_get_parse_end(tok) != got) {
			diag_set(d, EXIT_USAGE, "%s: not JSON (%s at byte %zu)", en,
				 root ? "trailing data"
				      : json_tokener_error_desc(json_tokener_get_error(tok)),
				 json_tokener_get_parse_end(tok));
			json_object_put(root);
			root = NULL;
		}
	} else {
		diag_errno(d, ENOMEM, "%s", en);
	}
	if (root && validate(root, path, d)) {
		json_object_put(root);
		root = NULL;
	}
out:
	if (tok)
		json_tokener_free(tok);
	free(buf);
	close(fd);
	return root;
}

int oracle_baseline_opts(json_object *base, struct oracle_opts *o, const char **snippets,
			 const char **modes, struct diag *d)
{
	json_object *h = get(base, "header", json_type_object);
	json_object *cases = get(base, "cases", json_type_array);
	json_object *margs = get(h, "mode_args", json_type_array);

	if (!o->nsnippets) {
		for (size_t i = 0; i < json_object_array_length(cases); i++) {
			json_object *c = json_object_array_get_idx(cases, i);
			/* The path it ran (a file given by path), else the name. */
			const char *s = get_str(c, "snippet");

			if (i >= ORACLE_MAX_CASES)
				return diag_set(d, EXIT_USAGE, "baseline: over %d cases",
						ORACLE_MAX_CASES);
			snippets[o->nsnippets++] = s && !access(s, R_OK) ? s : get_str(c, "name");
		}
		memcpy(o->snippets, snippets, (size_t)o->nsnippets * sizeof(*snippets));
	}
	if (!o->nmode_args) {
		for (size_t i = 0; margs && i < json_object_array_length(margs); i++) {
			json_object *a = json_object_array_get_idx(margs, i);
			const char *s = json_object_is_type(a, json_type_string)
					    ? json_object_get_string(a)
					    : NULL;

			if (!s)
				return diag_set(d, EXIT_USAGE,
						"baseline: a mode_args entry is "
						"not a string");
			if (o->nmode_args < ORACLE_MAX_MODES)
				modes[o->nmode_args++] = s;
		}
		memcpy(o->mode_args, modes, (size_t)o->nmode_args * sizeof(*modes));
		if (json_object_get_boolean(get(h, "peers", json_type_boolean)))
			o->peers = 1;
	}
	if (!o->rate_set) {
		o->rate_khz = get_num(h, "rate_khz");
		o->rate_set = 1;
	}
	if (!o->duration_set)
		o->duration = get_num(h, "duration");
	if (!o->warmup_set && !isnan(get_num(h, "warmup")))
		o->warmup = get_num(h, "warmup");
	if (!o->runs_set)
		o->runs = (int)get_count(h, "runs");
	if (json_object_get_boolean(get(h, "poisson_sampling", json_type_boolean)))
		o->poisson = 1;
	if (!o->ref_name)
		o->ref_name = get_str(h, "reference_asked");
	if (!o->python)
		o->python = get_str(h, "python_label");
	if (!o->slowdown_pairs && get_num(h, "slowdown_pairs_asked") > 0)
		o->slowdown_pairs = (int)get_num(h, "slowdown_pairs_asked");
	if (o->duration < 0.01 || o->runs < 1 || o->runs > 256 || o->rate_khz < 0 ||
	    o->rate_khz > 1000 || o->warmup < 0 || o->slowdown_pairs > ORACLE_GATE_MAX_PAIRS)
		return diag_set(d, EXIT_USAGE,
				"baseline: duration, runs, rate, warmup or pairs "
				"out of range");
	return 0;
}

int oracle_gate_match(json_object *base, json_object *cur, const struct oracle_opts *o,
		      struct diag *d)
{
	/* What makes the figures another experiment: a different build
	 * of the interpreter, rate, clock, reference or machine kind. */
	static const char *const facts[] = {
	    "python_version", "python_build_id", "rate_khz", "poisson_sampling",
	    "reference_mode", "cpu_model",	 "cpus",     "machine"};
	json_object *bh = get(base, "header", json_type_object);
	json_object *ch = get(cur, "header", json_type_object);
	char why[400] = "";
	size_t n = 0;

	for (size_t i = 0; i < sizeof(facts) / sizeof(facts[0]); i++) {
		json_object *a = NULL, *b = NULL;
		const char *sa, *sb;
		char ea[64], eb[64];

		json_object_object_get_ex(bh, facts[i], &a);
		json_object_object_get_ex(ch, facts[i], &b);
		sa = a ? json_object_get_string(a) : "null";
		sb = b ? json_object_get_string(b) : "null";
		if (!strcmp(sa, sb))
			continue;
		n += (size_t)snprintf(why + n, n < sizeof(why) ? sizeof(why) - n : 0,
				      "%s%s %s, now %s", n ? "; " : "", facts[i],
				      text_esc(sa, ea, sizeof(ea)), text_esc(sb, eb, sizeof(eb)));
	}
	if (!why[0])
		return 0;
	if (o->force) {
		fprintf(stderr, "bpfpy oracle: baseline differs (--force): %s\n", why);
		return 0;
	}
	return diag_set(d, EXIT_USAGE,
			"the baseline is another experiment: %s (--force compares anyway)", why);
}

/* ---- one side's figures, read from the JSON ---- */

enum metric { M_IMP, M_ERR, M_TVD, M_FN, M_US, M_SLOW, NMETRIC };

static const char *const metric_name[NMETRIC] = {"impossible%", "errors%", "tvd_excess",
						 "tvd_fn",	"µs",	   "slowdown%"};
/* --detect's names (ASCII). */
static const char *const metric_key[NMETRIC] = {"impossible", "errors", "tvd_excess",
						"tvd_fn",     "us",	"slowdown"};
static const char *const run_field[NMETRIC] = {"impossible_pct", "errors_pct", "tvd_excess",
					       "tvd_fn",	 "us",	       "slowdown_pct"};

/* A figure of one side: its value, and what a test needs. */
struct fig {
	double value;	 /* as the table shows it: mean over runs, or pooled */
	double x, n;	 /* counts: events, trials (summed over runs) */
	double mean, sd; /* Welch: the units' mean and sd */
	double nunits;	 /* runs, blocks or pairs */
	double se;	 /* bootstrap */
	const char *test;
};

static json_object *find_named(json_object *arr, const char *key, const char *name)
{
	for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
		json_object *x = json_object_array_get_idx(arr, i);
		const char *s = get_str(x, key);

		if (s && !strcmp(s, name))
			return x;
	}
	return NULL;
}

static void moments(const double *v, size_t n, struct fig *f)
{
	double sum = 0, ss = 0;
	size_t m = 0;

	for (size_t i = 0; i < n; i++)
		if (!isnan(v[i]))
			sum += v[i], m++;
	f->nunits = (double)m;
	f->mean = m ? sum / (double)m : NAN;
	for (size_t i = 0; i < n; i++)
		if (!isnan(v[i]))
			ss += (v[i] - f->mean) * (v[i] - f->mean);
	f->sd = m > 1 ? sqrt(ss / (double)(m - 1)) : NAN;
}

/* A run's blocks ("seq_blocks") as keydists; fn: function-only keys.
 * Returns how many, 0 when absent or malformed (indices out of range,
 * counts not counts: the figure is then n/a, not a crash). */
static size_t load_blocks(json_object *run, const char *field, int fn, struct keydist **out)
{
	json_object *b = get(run, field, json_type_object);
	json_object *keys = get(b, "keys", json_type_array),
		    *blocks = get(b, "blocks", json_type_array);
	size_t nb = blocks ? json_object_array_length(blocks) : 0,
	       nk = keys ? json_object_array_length(keys) : 0;
	char buf[8192];

	if (!keys || !blocks || nb > ORACLE_BLOCKS)
		return 0;
	for (size_t i = 0; i < nb; i++) {
		json_object *blk = json_object_array_get_idx(blocks, i);
		size_t len =
		    json_object_is_type(blk, json_type_array) ? json_object_array_length(blk) : 1;

		out[i] = keydist_new();
		if (!out[i] || len % 2)
			goto fail;
		for (size_t j = 0; j < len; j += 2) {
			json_object *ki = json_object_array_get_idx(blk, j);
			json_object *cn = json_object_array_get_idx(blk, j + 1);
			int64_t k =
			    json_object_is_type(ki, json_type_int) ? json_object_get_int64(ki) : -1;
			int64_t c =
			    json_object_is_type(cn, json_type_int) ? json_object_get_int64(cn) : -1;
			json_object *ks = k >= 0 && (size_t)k < nk
					      ? json_object_array_get_idx(keys, (size_t)k)
					      : NULL;
			const char *key = json_object_is_type(ks, json_type_string)
					      ? json_object_get_string(ks)
					      : NULL;

			if (!key || c < 0 || c > (1LL << 40))
				goto fail;
			if (fn) {
				oracle_key_fn_only(key, buf, sizeof(buf));
				key = buf;
			}
			if (!keydist_add(out[i], key, (double)c))
				goto fail;
		}
		continue;
	fail:
		for (size_t j = 0; j <= i; j++)
			keydist_free(out[j]);
		return 0;
	}
	return nb;
}

static void free_blocks(struct keydist **b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		keydist_free(b[i]);
}

/* Per-pair slowdown figures of a run, 100 (1 - on/off), into v. */
static size_t pair_figures(json_object *run, double *v)
{
	json_object *pr = get(run, "slowdown_pair_rates", json_type_array);
	size_t n = 0;

	for (size_t i = 0; pr && i < json_object_array_length(pr) && n < ORACLE_GATE_MAX_PAIRS;
	     i++) {
		json_object *p = json_object_array_get_idx(pr, i);
		json_object *on = json_object_array_get_idx(p, 0),
			    *off = json_object_array_get_idx(p, 1);

		if (!json_object_is_type(p, json_type_array) || !on || !off)
			continue;
		if (json_object_get_double(off) > 0)
			v[n++] =
			    100 * (1 - json_object_get_double(on) / json_object_get_double(off));
	}
	return n;
}

/* The figure of metric k for mode m of case c (runs as in the header),
 * ref the case's reference mode. */
static void figure(json_object *c, json_object *m, json_object *ref, int runs, int k, uint64_t seed,
		   struct fig *f)
{
	json_object *rs = get(m, "runs", json_type_array);
	double v[256 > ORACLE_GATE_MAX_PAIRS ? 256 : ORACLE_GATE_MAX_PAIRS] = {0};

	(void)c;
	memset(f, 0, sizeof(*f));
	f->value = f->mean = f->sd = f->se = NAN;
	for (int r = 0; r < runs && r < 256; r++)
		v[r] = get_num(json_object_array_get_idx(rs, (size_t)r), run_field[k]);
	moments(v, (size_t)(runs < 256 ? runs : 256), f);
	f->value = f->mean;
	if (runs >= 2) {
		f->test = "welch-runs";
		return;
	}
	json_object *r0 = json_object_array_get_idx(rs, 0);

	switch (k) {
	case M_IMP:
	case M_ERR:
		f->x = (double)get_count(r0, k == M_IMP ? "impossible" : "errors");
		f->n = (double)get_count(r0, k == M_IMP ? "stacks" : "attempts");
		f->test = "fisher";
		break;
	case M_TVD:
	case M_FN: {
		struct keydist *mb[ORACLE_BLOCKS], *rb[ORACLE_BLOCKS];
		json_object *rr = json_object_array_get_idx(get(ref, "runs", json_type_array), 0);
		const char *set = get_str(r0, "ref_set");
		size_t nm, nr;

		f->test = "bootstrap";
		if (m == ref || isnan(f->value))
			break;
		nm = load_blocks(r0, "seq_blocks", k == M_FN, mb);
		nr = load_blocks(
		    rr, set && !strcmp(set, "running") ? "running_seq_blocks" : "seq_blocks",
		    k == M_FN, rb);
		f->se = oracle_tvd_boot_se(mb, nm, rb, nr, k == M_TVD, ORACLE_BOOT_REPS, seed);
		free_blocks(mb, nm);
		free_blocks(rb, nr);
		break;
	}
	case M_US: {
		json_object *ub = get(r0, "us_blocks", json_type_array);
		size_t n = ub ? json_object_array_length(ub) : 0;

		n = n < ORACLE_BLOCKS ? n : ORACLE_BLOCKS;
		for (size_t i = 0; i < n; i++) {
			json_object *x = json_object_array_get_idx(ub, i);

			v[i] = x && (json_object_is_type(x, json_type_double) ||
				     json_object_is_type(x, json_type_int))
				   ? json_object_get_double(x)
				   : NAN;
		}
		moments(v, n, f);
		f->test = "welch-blocks";
		break;
	}
	case M_SLOW:
		moments(v, pair_figures(r0, v), f);
		f->test = "welch-pairs";
		if (f->nunits < 2 && !isnan(get_num(r0, "slowdown_ci95"))) {
			/* Unpaired (an external tool): its own Welch interval,
			 * read as a normal one. */
			f->se = get_num(r0, "slowdown_ci95") / 1.96;
			f->mean = f->value;
			f->test = "z-interval";
		}
		break;
	}
}

struct row {
	const char *cname, *mname;
	int k;
	struct fig b, n;
	double diff, p, padj, mdd;
	const char *verdict, *test;
};

/* The test of row r: its p and the standard error of the difference. */
static void test_row(struct row *r, double alpha_b, double power)
{
	struct fig *b = &r->b, *n = &r->n;
	double se = NAN;

	r->p = NAN;
	r->mdd = NAN;
	r->diff = n->value - b->value;
	r->test = b->test && n->test && !strcmp(b->test, n->test) ? b->test : "welch-runs";
	if (!strcmp(r->test, "fisher")) {
		if (b->n > 0 && n->n > 0) {
			r->p = oracle_fisher_p((uint64_t)b->x, (uint64_t)b->n, (uint64_t)n->x,
					       (uint64_t)n->n);
			r->diff = 100 * (n->x / n->n - b->x / b->n);
			r->mdd = 100 * oracle_mdd_prop(b->x / b->n, b->n, n->n, alpha_b, power);
		}
		return;
	}
	if (!strcmp(r->test, "bootstrap") || !strcmp(r->test, "z-interval")) {
		se = sqrt(b->se * b->se + n->se * n->se);
		if (!isnan(se) && se > 0 && !isnan(r->diff))
			r->p = oracle_norm_p2(r->diff / se);
		else if (se == 0 && !isnan(r->diff))
			r->p = r->diff == 0 ? 1 : 0;
	} else {
		r->p =
		    oracle_welch(b->mean, b->sd, b->nunits, n->mean, n->sd, n->nunits, NULL, NULL);
		if (b->nunits >= 2 && n->nunits >= 2)
			se = sqrt(b->sd * b->sd / b->nunits + n->sd * n->sd / n->nunits);
	}
	r->mdd = oracle_mdd_se(se, alpha_b, power);
}

static void fmt(char *buf, size_t len, double x, const char *f)
{
	if (isnan(x))
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, f, x);
}

static const char *prec(int k)
{
	return k == M_TVD || k == M_FN ? "%.3f" : "%.2f";
}

static const char *sprec(int k)
{
	return k == M_TVD || k == M_FN ? "%+.3f" : "%+.2f";
}

static int write_junit(const char *path, const struct row *rows, size_t n, int worse,
		       const struct oracle_opts *o, struct diag *d)
{
	struct out_file of;
	int skipped = 0;

	for (size_t i = 0; i < n; i++)
		skipped += isnan(rows[i].padj);
	if (out_file_open(&of, path, o->force, d))
		return -1;
	fprintf(of.f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<testsuites name=\"bpfpy oracle gate\" tests=\"%zu\" failures=\"%d\">\n"
		"<testsuite name=\"bpfpy oracle gate\" tests=\"%zu\" failures=\"%d\" "
		"errors=\"0\" skipped=\"%d\">\n",
		n, worse, n, worse, skipped);
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		char b[32], v[32], df[32], m[32], p[32];

		fmt(b, sizeof(b), r->b.value, prec(r->k));
		fmt(v, sizeof(v), r->n.value, prec(r->k));
		fmt(df, sizeof(df), r->diff, sprec(r->k));
		fmt(m, sizeof(m), r->mdd, prec(r->k));
		fmt(p, sizeof(p), r->padj, "%.4g");
		fputs("<testcase classname=\"", of.f);
		out_put_markup(of.f, r->cname);
		fputc('.', of.f);
		out_put_markup(of.f, r->mname);
		fputs("\" name=\"", of.f);
		out_put_markup(of.f, metric_name[r->k]);
		fputs("\">", of.f);
		if (!strcmp(r->verdict, "worse"))
			fprintf(
			    of.f,
			    "<failure message=\"worse: %s %s -&gt; %s (%s), p_holm %s, alpha "
			    "%g\" type=\"regression\">baseline %s new %s diff %s min_detectable "
			    "%s p_holm %s test %s verdict worse</failure>",
			    metric_name[r->k], b, v, df, p, o->alpha, b, v, df, m, p, r->test);
		else if (isnan(r->padj))
			fputs("<skipped message=\"no figure on one side\"/>", of.f);
		else
			fprintf(
			    of.f,
			    "<system-out>baseline %s new %s diff %s min_detectable %s p_holm %s "
			    "test %s verdict %s</system-out>",
			    b, v, df, m, p, r->test, r->verdict);
		fputs("</testcase>\n", of.f);
	}
	fputs("</testsuite>\n</testsuites>\n", of.f);
	return out_file_commit(&of, d);
}

/* --detect METRIC=DELTA: how long a run would see DELTA in METRIC on
 * every row (the MDD falls as 1/sqrt of the samples, blocks or runs). */
static int detect_lines(FILE *f, const struct row *rows, size_t n, const struct oracle_opts *o,
			double dur, int runs, struct diag *d)
{
	for (int i = 0; i < o->ndetect; i++) {
		char name[32];
		double want, worst = 0;
		int k;

		if (sscanf(o->detect[i], "%31[^=]=%lf", name, &want) != 2 || !(want > 0))
			return diag_set(d, EXIT_USAGE,
					"--detect wants METRIC=DELTA, e.g. "
					"impossible=1");
		for (k = 0; k < NMETRIC && strcmp(name, metric_key[k]); k++)
			;
		if (k == NMETRIC)
			return diag_set(d, EXIT_USAGE,
					"--detect: no metric '%.31s' (impossible, errors, "
					"tvd_excess, tvd_fn, us, slowdown)",
					name);
		for (size_t j = 0; j < n; j++)
			if (rows[j].k == k && rows[j].mdd > worst)
				worst = rows[j].mdd;
		if (!(worst > 0))
			fprintf(f, "detect %s=%g: no row has a figure\n", metric_key[k], want);
		else if (worst <= want)
			fprintf(f, "detect %s=%g: seen on every row (largest min_Δ %.3g)\n",
				metric_key[k], want, worst);
		else if (runs >= 2)
			fprintf(f, "detect %s=%g: largest min_Δ %.3g; --runs %.0f would see it\n",
				metric_key[k], want, worst,
				ceil(runs * (worst / want) * (worst / want)));
		else
			fprintf(f,
				"detect %s=%g: largest min_Δ %.3g; --duration %.1f would see it\n",
				metric_key[k], want, worst, dur * (worst / want) * (worst / want));
	}
	return 0;
}

/* The rows of one comparison, grown as the pairs are found. */
struct rows {
	struct row *v;
	size_t n, cap;
};

/* One side of a row: the case, the mode and the case's reference in one
 * run's JSON, and how many runs that JSON holds. */
struct side {
	json_object *c, *m, *ref;
	int runs;
};

/* A zeroed row at the end of rs, or NULL when out of memory (rs kept). */
static struct row *add_row(struct rows *rs)
{
	struct row *r;

	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? 2 * rs->cap : 64;
		struct row *nr = realloc(rs->v, cap * sizeof(*rs->v));

		if (!nr)
			return NULL;
		rs->v = nr;
		rs->cap = cap;
	}
	r = &rs->v[rs->n++];
	memset(r, 0, sizeof(*r));
	return r;
}

/* The reference of a case's modes (the last one flagged, as written). */
static json_object *reference_of(json_object *modes)
{
	json_object *ref = NULL;

	for (size_t mi = 0; mi < json_object_array_length(modes); mi++) {
		json_object *m = json_object_array_get_idx(modes, mi);

		if (json_object_get_boolean(get(m, "reference", json_type_boolean)))
			ref = m;
	}
	return ref;
}

/* A row per metric for one case x mode present on both sides. */
static int add_mode_rows(struct rows *rs, const char *cname, const char *mname,
			 const struct side *b, const struct side *n)
{
	for (int k = 0; k < NMETRIC; k++) {
		struct row *r = add_row(rs);

		if (!r)
			return -1;
		r->cname = cname;
		r->mname = mname;
		r->k = k;
		/* The same seed a side and row: the report is reproducible. */
		figure(b->c, b->m, b->ref, b->runs, k, 0x5eed0000u + rs->n, &r->b);
		figure(n->c, n->m, n->ref, n->runs, k, 0x5eed0000u + rs->n, &r->n);
		if ((k == M_TVD || k == M_FN) && b->m == b->ref)
			rs->n--; /* the reference has no distance to itself */
	}
	return 0;
}

/* Pairs the rows: every baseline case x mode must be in the new run; one
 * that is not is said on stderr and counted in *missing. -1: out of memory. */
static int pair_rows(json_object *bc, int bruns, json_object *cc, int cruns, struct rows *rs,
		     int *missing)
{
	for (size_t ci = 0; ci < json_object_array_length(bc); ci++) {
		json_object *c = json_object_array_get_idx(bc, ci);
		const char *cname = get_str(c, "name");
		json_object *c2 = find_named(cc, "name", cname);
		json_object *modes = get(c, "modes", json_type_array);
		struct side b = {.c = c, .ref = reference_of(modes), .runs = bruns};
		struct side n = {.c = c2,
				 .ref = c2 ? reference_of(get(c2, "modes", json_type_array)) : NULL,
				 .runs = cruns};

		for (size_t mi = 0; mi < json_object_array_length(modes); mi++) {
			const char *mname;

			b.m = json_object_array_get_idx(modes, mi);
			mname = get_str(b.m, "mode");
			n.m = c2 ? find_named(get(c2, "modes", json_type_array), "mode", mname)
				 : NULL;
			if (!n.m || !b.ref || !n.ref) {
				char e1[256], e2[256];

				fprintf(
				    stderr,
				    "bpfpy oracle: %s %s: in the baseline, not in the new run\n",
				    text_esc(cname, e1, sizeof(e1)),
				    text_esc(mname, e2, sizeof(e2)));
				(*missing)++;
				continue;
			}
			if (add_mode_rows(rs, cname, mname, &b, &n))
				return -1;
		}
	}
	return 0;
}

/* The other way round: case x mode rows of the new run the baseline lacks,
 * said on stderr; returns how many. */
static int count_new_only(json_object *bc, json_object *cc)
{
	int missing = 0;

	for (size_t ci = 0; ci < json_object_array_length(cc); ci++) {
		json_object *c = json_object_array_get_idx(cc, ci);
		json_object *c2 = find_named(bc, "name", get_str(c, "name"));
		json_object *modes = get(c, "modes", json_type_array);

		for (size_t mi = 0; mi < json_object_array_length(modes); mi++)
			if (!c2 ||
			    !find_named(get(c2, "modes", json_type_array), "mode",
					get_str(json_object_array_get_idx(modes, mi), "mode"))) {
				char e1[256], e2[256];

				fprintf(
				    stderr,
				    "bpfpy oracle: %s %s: in the new run, not in the baseline\n",
				    text_esc(get_str(c, "name"), e1, sizeof(e1)),
				    text_esc(get_str(json_object_array_get_idx(modes, mi), "mode"),
					     e2, sizeof(e2)));
				missing++;
			}
	}
	return missing;
}

/* What was compared with what, the tests' level, and the table's heading. */
static void print_gate_header(FILE *f, const char *base_name, json_object *bh, int bruns,
			      const char *cur_name, json_object *ch, int cruns,
			      const struct oracle_opts *o, size_t nrows)
{
	char eb[1024], ec[1024];

	fprintf(f,
		"gate: baseline %s (Python %s, runs=%d duration=%g rate_khz=%g) against %s "
		"(runs=%d duration=%g)\n",
		text_esc(base_name, eb, sizeof(eb)), get_str(bh, "python_version") ?: "?", bruns,
		get_num(bh, "duration"), get_num(bh, "rate_khz"),
		text_esc(cur_name, ec, sizeof(ec)), cruns, get_num(ch, "duration"));
	fprintf(f,
		"gate: alpha=%g two-sided, Holm over %zu tests; min_Δ: the change seen with "
		"power %g at alpha/%zu\n",
		o->alpha, nrows, o->power, nrows);
	/* Measured (docs/oracle-gate.md): one run a side sees the noise of
	 * sampling within its window, not the spread between targets and
	 * machine load, and called 7-10% of rows worse for the same samplers. */
	if (bruns < 2 || cruns < 2)
		fprintf(f, "gate: note: runs=1 on a side: the tests see sampling noise within one "
			   "window, not between runs; for a gate use --runs 3 or more on both "
			   "(docs/oracle-gate.md)\n");
	fprintf(f, "%-20s %-16s %-12s %10s %10s %10s %9s %8s  %-7s %s\n", "case", "mode", "metric",
		"baseline", "new", "Δ", "min_Δ", "p_holm", "verdict", "test");
}

struct tally {
	int worse, better, same, na;
};

/* Gives each row its Holm-adjusted p and verdict, prints it and counts it. */
static void print_gate_rows(FILE *f, struct row *rows, size_t nrows, const double *adj,
			    const struct oracle_opts *o, struct tally *t)
{
	for (size_t i = 0; i < nrows; i++) {
		struct row *r = &rows[i];
		char b[32], v[32], df[32], m[32], pa[32], e1[256], e2[256];

		r->padj = adj[i];
		if (isnan(r->padj))
			r->verdict = "n/a", t->na++;
		else if (r->padj <= o->alpha && r->diff > 0)
			r->verdict = "worse", t->worse++;
		else if (r->padj <= o->alpha && r->diff < 0)
			r->verdict = "better", t->better++;
		else
			r->verdict = "same", t->same++;
		fmt(b, sizeof(b), r->k <= M_ERR && r->b.n > 0 ? 100 * r->b.x / r->b.n : r->b.value,
		    prec(r->k));
		fmt(v, sizeof(v), r->k <= M_ERR && r->n.n > 0 ? 100 * r->n.x / r->n.n : r->n.value,
		    prec(r->k));
		fmt(df, sizeof(df), r->diff, sprec(r->k));
		fmt(m, sizeof(m), r->mdd, prec(r->k));
		fmt(pa, sizeof(pa), r->padj, "%.3g");
		/* µs is two bytes, one column. */
		fprintf(f, "%-20s %-16s %-*s %10s %10s %10s %9s %8s  %-7s %s\n",
			text_esc(r->cname, e1, sizeof(e1)), text_esc(r->mname, e2, sizeof(e2)),
			r->k == M_US ? 13 : 12, metric_name[r->k], b, v, df, m, pa, r->verdict,
			r->test);
	}
}

int oracle_gate(FILE *f, const char *base_name, json_object *base, const char *cur_name,
		json_object *cur, const struct oracle_opts *o, struct diag *d)
{
	json_object *bh = get(base, "header", json_type_object);
	json_object *ch = get(cur, "header", json_type_object);
	json_object *bc = get(base, "cases", json_type_array),
		    *cc = get(cur, "cases", json_type_array);
	int bruns = (int)get_count(bh, "runs"), cruns = (int)get_count(ch, "runs"), missing = 0;
	struct rows rs = {0};
	struct tally t = {0};
	double *p = NULL, *adj = NULL, alpha_b;

	if (pair_rows(bc, bruns, cc, cruns, &rs, &missing)) {
		free(rs.v);
		return diag_errno(d, ENOMEM, "gate");
	}
	missing += count_new_only(bc, cc);
	if (missing && !o->force) {
		free(rs.v);
		return diag_set(
		    d, EXIT_USAGE,
		    "%d case x mode rows are in one run only (another snippet or mode set; "
		    "--force compares the rows both have)",
		    missing);
	}
	p = calloc(rs.n + 1, sizeof(*p));
	adj = calloc(rs.n + 1, sizeof(*adj));
	if (!p || !adj) {
		free(rs.v), free(p), free(adj);
		return diag_errno(d, ENOMEM, "gate");
	}
	/* The MDD at Holm's first, strictest level: a row whose true change is
	 * that large is found with at least --power whatever the others do. */
	alpha_b = o->alpha / (double)(rs.n ? rs.n : 1);
	for (size_t i = 0; i < rs.n; i++) {
		test_row(&rs.v[i], alpha_b, o->power);
		p[i] = rs.v[i].p;
	}
	oracle_holm(p, rs.n, adj);
	print_gate_header(f, base_name, bh, bruns, cur_name, ch, cruns, o, rs.n);
	print_gate_rows(f, rs.v, rs.n, adj, o, &t);
	fprintf(f, "gate: %d worse, %d better, %d same, %d n/a%s\n", t.worse, t.better, t.same,
		t.na, t.worse ? " -- REGRESSION" : "");
	if (detect_lines(f, rs.v, rs.n, o, get_num(ch, "duration"), cruns, d) ||
	    (o->junit && write_junit(o->junit, rs.v, rs.n, t.worse, o, d)))
		t.worse = -1;
	free(rs.v);
	free(p);
	free(adj);
	return t.worse;
}
