// SPDX-License-Identifier: MIT
/*
 * The oracle's figures: per run and mode from the counts, then over runs as
 * oracle-method.md says (counts summed; errors%, µs, impossible%, raw_tvd,
 * tvd_excess as mean±sample-stdev; tvd_floor as the median), printed as the
 * original's table followed by our columns, and written as JSON.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "oracle_compare.h"
#include "oracle_run.h"
#include "profile.h"
#include "text_escape.h"

#define NCOLS 19
/* A reference that slows the target more than this is flagged. */
#define REF_SLOWDOWN_FLAG 10.0
/* A reference with fewer stacks than this is noted under the table. */
#define REF_FEW_STACKS 200

static double ratio(double a, double b)
{
	return b > 0 ? a / b : NAN;
}

/* The bpf-timer control among the modes, or -1. */
static int timer_mode(const struct oracle_plan *p)
{
	for (int m = 0; m < p->nmodes; m++)
		if (p->modes[m].kind == MODE_BPF_TIMER)
			return m;
	return -1;
}

void oracle_compute(const struct oracle_plan *p, struct oracle_case_result *cr)
{
	int tm = timer_mode(p);

	for (int run = 0; run < p->o->runs; run++) {
		struct oracle_result *ref = &cr->res[run * p->nmodes + p->ref];
		int ref_cpu = oracle_mode_cpu_clock(&p->modes[p->ref]);

		/* Walk cost (issue 13): what bpf costs beyond the interrupt of
		 * the same clock, measured on another target of the same case;
		 * the two intervals are independent, so they add in quadrature. */
		for (int m = 0; tm >= 0 && m < p->nmodes; m++) {
			struct oracle_result *r = &cr->res[run * p->nmodes + m];
			const struct oracle_result *c = &cr->res[run * p->nmodes + tm];

			if (p->modes[m].kind == MODE_BPF && !p->modes[m].low) {
				r->walk = r->slowdown - c->slowdown;
				r->walk_ci = sqrt(r->slowdown_ci * r->slowdown_ci +
						  c->slowdown_ci * c->slowdown_ci);
			}
		}

		for (int m = 0; m < p->nmodes; m++) {
			struct oracle_result *r = &cr->res[run * p->nmodes + m];
			double n = keydist_total(r->dist), n_ref;
			/* Clock-matched (issue 12, item 6): a cpu-clock mode sees
			 * on-CPU threads only, so it is compared with the
			 * reference's stacks of threads that were running; a wall
			 * mode with all of them. A cpu-clock reference has only
			 * running threads to offer. */
			int run_set =
			    oracle_mode_cpu_clock(&p->modes[m]) && keydist_total(ref->dist_run) > 0;
			const struct keydist *rd = run_set ? ref->dist_run : ref->dist;
			const char *const *rseq = run_set ? ref->seq_run : ref->seq;
			size_t rnseq = run_set ? ref->nseq_run : ref->nseq;

			r->ref_run = run_set || ref_cpu;
			n_ref = keydist_total(rd);

			r->errors_pct = 100 * ratio((double)r->errors, (double)r->attempts);
			r->impossible_pct = 100 * ratio((double)r->impossible, (double)r->stacks);
			/* An external tool that gave no attempt a cost said nothing
			 * about it: unknown ('-'), not free. */
			r->us = p->modes[m].kind == MODE_EXTERNAL && !r->us_sum
				    ? NAN
				    : ratio(r->us_sum, (double)r->attempts);
			r->us_sampler =
			    isnan(r->us) ? NAN : ratio(r->us_sampler_sum, (double)r->attempts);
			r->us_target =
			    r->us_target_known ? ratio(r->us_target_sum, (double)r->attempts) : NAN;
			if (r->truth && keydist_total(r->phases) > 0)
				r->tvd_truth = oracle_tvd(r->phases, r->truth);
			if (m == p->ref || n <= 0 || n_ref <= 0)
				continue;
			r->raw_tvd = oracle_tvd(r->dist, rd);
			r->tvd_floor = oracle_tvd_floor(rd, n, n_ref);
			r->tvd_excess = r->raw_tvd - r->tvd_floor;
			r->tvd_noise = oracle_tvd_noise(rseq, rnseq, 0, n, n_ref);
			{
				struct keydist *a = keydist_new(), *b = keydist_new();

				if (a && b && !keydist_fn_only(r->dist, a) &&
				    !keydist_fn_only(rd, b))
					r->tvd_fn = oracle_tvd(a, b);
				keydist_free(a);
				keydist_free(b);
			}
		}
	}
}

/* Modes that read the target with one and the same unwinder (CPython's
 * _remote_debugging: directly, or through its CLI), run alike: whatever
 * differs between them beyond sampling noise is an adapter's or a mode's
 * doing, not the unwinder's (issue 26: cpython-blocking's misnamed
 * class-call shim gave it tvd_excess 0.59 where tachyon-blocking had
 * 0.07). The CLI always caches frames (cache_frames=True): live, that
 * changes which torn stacks it sees (on raytrace.py 11% of cpython-live's
 * stacks were keys tachyon-live never showed), so tachyon-live is paired
 * with cpython-live-cache; a stopped target shows the same either way. */
static const char *const same_unwinder[][2] = {
    {"cpython-blocking", "tachyon-blocking"},
    {"cpython-live-cache", "tachyon-live"},
    /* task chains: the CLI's --async-aware caches frames too, and
     * cpython-async runs with its options */
    {"cpython-async", "tachyon-async"},
};

static int mode_index(const struct oracle_plan *p, const char *name)
{
	for (int m = 0; m < p->nmodes; m++)
		if (!strcmp(p->modes[m].name, name))
			return m;
	return -1;
}

/* Keys one mode shows and the other (of at least PAIR_MIN_OTHER stacks)
 * never does, each at least PAIR_KEY_SHARE of the first's stacks: past
 * PAIR_EXCLUSIVE of its stacks in all, a disagreement by itself. One
 * unwinder cannot show a stack that often through one door and never
 * through the other, while a misnamed frame does exactly that, spread
 * over every key it is in: each a small share, hidden inside the TVD's
 * bound (3.15's class-call shim misnamed on records.py: 3.8% at most for
 * one key, tvd 0.161 within a bound of 0.187). */
#define PAIR_EXCLUSIVE 0.05
#define PAIR_KEY_SHARE 0.01
#define PAIR_MIN_OTHER 200

struct pair_fig {
	double tvd, bound;  /* NAN: a mode has no stack */
	double excl;	    /* the share of keys absent from the other, larger side */
	char excl_key[160]; /* its largest such key */
	int excl_mode;	    /* whose keys those are */
	double excl_max;    /* what excl may be: max(PAIR_EXCLUSIVE, bound / 2) */
	int agree;
	int behind; /* a mode took under PAIR_KEPT_UP of its schedule's attempts */
	char behind_why[96];
};

/* Below this share of the attempts its schedule asked for, a mode fell
 * behind, and then it distorts the target in its own way (a blocking
 * sampler whose stops take longer than the gap between them leaves the
 * target running only just after each resume, at a pace each tool sets):
 * the pair says nothing about naming, so it is shown, not judged (the
 * run that showed it: docs/bench.md, "Figures behind the code"). */
#define PAIR_KEPT_UP 0.8

static void exclusive(const struct keydist *x, const struct keydist *y, int mode,
		      struct pair_fig *f)
{
	double nx = keydist_total(x), ny = keydist_total(y), w, sum = 0, top = 0;
	size_t it = 0;
	const char *k, *topk = "";

	if (ny < PAIR_MIN_OTHER)
		return;
	while (keydist_next(x, &it, &k, &w))
		if (w / nx >= PAIR_KEY_SHARE && w >= 10 && keydist_get(y, k) <= 0) {
			sum += w / nx;
			if (w > top) {
				top = w;
				topk = k;
			}
		}
	if (sum > f->excl) {
		f->excl = sum;
		f->excl_mode = mode;
		snprintf(f->excl_key, sizeof(f->excl_key), "%s", topk);
	}
}

/* Over all runs of the case (counts summed): TVD between the two modes'
 * distributions, and its bound, generous on purpose: twice the larger of
 * the IID floor (frequencies of the two pooled) and the empirical floor
 * (the first mode's interleaved halves, scaled to the two sizes), plus 0.05
 * for what differs between two targets run one after the other; and the
 * keys one mode has and the other never shows (above). */
static json_object *jnum(double x);

static void pair_figures(const struct oracle_plan *p, const struct oracle_case_result *cr, int a,
			 int b, struct pair_fig *f)
{
	struct keydist *da = keydist_new(), *db = keydist_new(), *pool = keydist_new();
	double na, nb, noise = 0;

	memset(f, 0, sizeof(*f));
	f->tvd = f->bound = NAN;
	if (!da || !db || !pool)
		goto out;
	for (int run = 0; run < p->o->runs; run++) {
		const struct oracle_result *ra = &cr->res[run * p->nmodes + a],
					   *rb = &cr->res[run * p->nmodes + b];
		size_t it = 0;
		const char *k;
		double w;

		while (keydist_next(ra->dist, &it, &k, &w))
			if (!keydist_add(da, k, w) || !keydist_add(pool, k, w))
				goto out;
		it = 0;
		while (keydist_next(rb->dist, &it, &k, &w))
			if (!keydist_add(db, k, w) || !keydist_add(pool, k, w))
				goto out;
	}
	na = keydist_total(da);
	nb = keydist_total(db);
	if (na <= 0 || nb <= 0)
		goto out;
	for (int i = 0; i < 2 && p->rate_khz > 0; i++) {
		double att = 0, want = 0;

		for (int run = 0; run < p->o->runs; run++) {
			const struct oracle_result *r = &cr->res[run * p->nmodes + (i ? b : a)];

			att += (double)r->attempts;
			want += p->rate_khz * 1000 * r->elapsed;
		}
		if (want > 0 && att < PAIR_KEPT_UP * want && !f->behind) {
			f->behind = 1;
			snprintf(f->behind_why, sizeof(f->behind_why),
				 "%s took %.0f of the %.0f attempts asked: fell behind",
				 p->modes[i ? b : a].name, att, want);
		}
	}
	f->tvd = oracle_tvd(da, db);
	noise = oracle_tvd_floor(pool, na, nb);
	{
		/* The empirical floor from the first mode only: its stacks
		 * come in time order, while Tachyon's CLI writes them grouped
		 * by stack, so halves of its sequence would differ by
		 * construction. */
		double e = oracle_tvd_noise(cr->res[a].seq, cr->res[a].nseq, 0, na, nb);

		if (!isnan(e) && e > noise)
			noise = e;
	}
	f->bound = 2 * noise + 0.05;
	exclusive(da, db, a, f);
	exclusive(db, da, b, f);
	/* Half the bound: exclusive stacks count fully in the TVD, so more
	 * than half of all the noise allows, under keys the other never
	 * shows, is no noise; live pairs with many torn keys (bound ~0.6)
	 * show 6% so by chance. */
	f->excl_max = fmax(PAIR_EXCLUSIVE, f->bound / 2);
	f->agree = f->behind || (f->tvd <= f->bound && f->excl <= f->excl_max);
out:
	keydist_free(da);
	keydist_free(db);
	keydist_free(pool);
}

void oracle_print_consistency(FILE *f, const struct oracle_plan *p,
			      const struct oracle_case_result *cr)
{
	for (size_t i = 0; i < sizeof(same_unwinder) / sizeof(same_unwinder[0]); i++) {
		int a = mode_index(p, same_unwinder[i][0]), b = mode_index(p, same_unwinder[i][1]);
		struct pair_fig pf;

		if (a < 0 || b < 0)
			continue;
		pair_figures(p, cr, a, b, &pf);
		fprintf(f, "consistency: %s vs %s (one unwinder): ", same_unwinder[i][0],
			same_unwinder[i][1]);
		if (isnan(pf.tvd)) {
			fprintf(f, "no figure (a mode has no stack)\n");
			continue;
		}
		fprintf(f, "tvd %.3f, bound %.3f; keys only one shows: %.1f%% (bound %.1f%%): ",
			pf.tvd, pf.bound, 100 * pf.excl, 100 * pf.excl_max);
		if (pf.behind)
			fprintf(f, "not judged (%s)\n", pf.behind_why);
		else
			fprintf(f, "%s\n",
				pf.agree ? "agree"
					 : "DISAGREE (beyond noise: an adapter or a mode misreads "
					   "what the unwinder gives)");
		if (!pf.behind && pf.excl > pf.excl_max)
			fprintf(f, "  only %s shows %.1f%% of its stacks, the most as %s\n",
				p->modes[pf.excl_mode].name, 100 * pf.excl, pf.excl_key);
	}
}

static json_object *jconsistency(const struct oracle_plan *p, const struct oracle_case_result *cr)
{
	json_object *arr = json_object_new_array();

	for (size_t i = 0; i < sizeof(same_unwinder) / sizeof(same_unwinder[0]); i++) {
		int a = mode_index(p, same_unwinder[i][0]), b = mode_index(p, same_unwinder[i][1]);
		struct pair_fig pf;
		json_object *j;

		if (a < 0 || b < 0)
			continue;
		pair_figures(p, cr, a, b, &pf);
		j = json_object_new_object();
		json_object_object_add(j, "a", json_object_new_string(same_unwinder[i][0]));
		json_object_object_add(j, "b", json_object_new_string(same_unwinder[i][1]));
		json_object_object_add(j, "tvd", jnum(pf.tvd));
		json_object_object_add(j, "bound", jnum(pf.bound));
		json_object_object_add(j, "exclusive_share", jnum(pf.excl));
		json_object_object_add(j, "exclusive_bound", jnum(pf.excl_max));
		json_object_object_add(j, "exclusive_key",
				       pf.excl > 0 ? json_object_new_string(pf.excl_key) : NULL);
		json_object_object_add(
		    j, "agree",
		    isnan(pf.tvd) || pf.behind ? NULL : json_object_new_boolean(pf.agree));
		json_object_object_add(j, "not_judged",
				       pf.behind ? json_object_new_string(pf.behind_why) : NULL);
		json_object_array_add(arr, j);
	}
	return arr;
}

/* The figure of every run of mode m, by field offset. */
static void gather(const struct oracle_plan *p, const struct oracle_case_result *cr, int m,
		   size_t off, struct oracle_agg *agg)
{
	double x[256];
	int n = p->o->runs < 256 ? p->o->runs : 256;

	for (int run = 0; run < n; run++)
		x[run] = *(const double *)((const char *)&cr->res[run * p->nmodes + m] + off);
	oracle_aggregate(x, (size_t)n, agg);
}

#define F(field) offsetof(struct oracle_result, field)

static void fmt_ms(char *buf, size_t len, const struct oracle_agg *a, int runs, const char *prec)
{
	char f[32];

	if (!a->n || isnan(a->mean)) {
		snprintf(buf, len, "-");
		return;
	}
	if (runs > 1) {
		snprintf(f, sizeof(f), "%s±%s", prec, prec);
		snprintf(buf, len, f, a->mean, a->sd);
	} else {
		snprintf(buf, len, prec, a->mean);
	}
}

/* A slowdown-like figure: mean over runs ± its 95% half-width (one run:
 * the run's own; N runs: sqrt(sum of squares) / N, as for a mean). */
static void fmt_ci(char *buf, size_t len, const struct oracle_plan *p,
		   const struct oracle_case_result *cr, int m, size_t off, size_t off_ci)
{
	double sum = 0, ss = 0;
	int n = 0, nci = 0;

	for (int run = 0; run < p->o->runs; run++) {
		const char *r = (const char *)&cr->res[run * p->nmodes + m];
		double x = *(const double *)(r + off), c = *(const double *)(r + off_ci);

		if (isnan(x))
			continue;
		sum += x;
		n++;
		if (!isnan(c)) {
			ss += c * c;
			nci++;
		}
	}
	if (!n)
		snprintf(buf, len, "-");
	else if (nci == n)
		snprintf(buf, len, "%.1f±%.1f", sum / n, sqrt(ss) / n);
	else
		snprintf(buf, len, "%.1f", sum / n);
}

static void fmt_med(char *buf, size_t len, const struct oracle_agg *a, const char *prec)
{
	if (!a->n || isnan(a->median))
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, prec, a->median);
}

struct mode_sum {
	uint64_t samples, stacks, impossible, lost, attempts;
};

static void sums(const struct oracle_plan *p, const struct oracle_case_result *cr, int m,
		 struct mode_sum *s)
{
	memset(s, 0, sizeof(*s));
	for (int run = 0; run < p->o->runs; run++) {
		const struct oracle_result *r = &cr->res[run * p->nmodes + m];

		s->samples += r->samples;
		s->stacks += r->stacks;
		s->impossible += r->impossible;
		s->lost += r->lost;
		s->attempts += r->attempts;
	}
}

static const char *const heads[NCOLS] = {
    "mode",	  "samples",   "stacks",    "µs",	  "errors%", "impossible", "impossible%",
    "tvd_excess", "tvd_floor", "raw_tvd",   "tvd_noise",  "tvd_fn",  "tvd_truth",  "slowdown%",
    "walk%",	  "lost",      "µs_target", "µs_sampler", "ref_set"};

/* Display width: µ is two bytes, one column. */
static int width(const char *s)
{
	int w = 0;

	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

void oracle_print_header(FILE *f, const struct oracle_plan *p, const struct oracle_python *py,
			 int ncases, int ncpus, double other_load)
{
	fprintf(f,
		"Python %s [%s] cases=%d runs=%d duration=%g rate_khz=%g warmup=%g "
		"poisson_sampling=%s\n",
		py->version, py->label, ncases, p->o->runs, p->o->duration, p->rate_khz,
		p->o->warmup, p->o->poisson ? "True" : "False");
	fprintf(f, "cpus=%d pinning=", ncpus);
	if (p->pinned)
		fprintf(f, "target:%d,sampler:%d", p->cpu_target, p->cpu_sampler);
	else
		fprintf(f, "none");
	fprintf(f, " other_load=%.2f", other_load);
	if (p->bpf_rate_hz > 0)
		fprintf(f, " bpf_rate_hz=%.0f%s", p->bpf_rate_hz,
			p->bpf_clamped ? " (clamped to kernel.perf_event_max_sample_rate)" : "");
	fprintf(f, "\n");
	fprintf(f, "reference=%s (%s)%s\n", p->modes[p->ref].name,
		p->ref_why[0] ? p->ref_why : "as asked",
		p->modes[p->ref].low ? "; Poisson times, 3x the window" : "");
	if (other_load > 0.25)
		fprintf(f,
			"WARNING: other processes used %.2f CPUs on average during the run; "
			"figures (µs, slowdown%%, errors%%) may be disturbed\n",
			other_load);
}

/* The case's heading line: name, operation, and the reference's key count. */
static void print_case_heading(FILE *f, const struct oracle_case_result *cr,
			       const struct oracle_result *ref0)
{
	fprintf(f, "\n%s (%s)%s ref_keys=%zu", cr->c->name, cr->c->operation,
		cr->c->no_rules ? " [no rules: distribution only]" : "", keydist_nkeys(ref0->dist));
	/* How many of the reference's stacks were of running threads: the
	 * set the "running" rows below were compared with. */
	if (keydist_total(ref0->dist_run) > 0)
		fprintf(f, " ref_running_stacks=%.0f/%.0f", keydist_total(ref0->dist_run),
			keydist_total(ref0->dist));
	fprintf(f, "\n");
}

/* Mode m's cells, in the order of heads[]. */
static void mode_cells(const struct oracle_plan *p, const struct oracle_case_result *cr, int m,
		       char (*row)[64])
{
	struct oracle_agg a;
	struct mode_sum s;
	int is_ref = m == p->ref;

	sums(p, cr, m, &s);
	snprintf(row[0], 64, "%s", p->modes[m].name);
	snprintf(row[1], 64, "%llu", (unsigned long long)s.samples);
	snprintf(row[2], 64, "%llu", (unsigned long long)s.stacks);
	gather(p, cr, m, F(us), &a);
	fmt_ms(row[3], 64, &a, p->o->runs, "%.2f");
	gather(p, cr, m, F(errors_pct), &a);
	fmt_ms(row[4], 64, &a, p->o->runs, "%.2f");
	snprintf(row[5], 64, "%llu", (unsigned long long)s.impossible);
	gather(p, cr, m, F(impossible_pct), &a);
	fmt_ms(row[6], 64, &a, p->o->runs, "%.2f");
	if (is_ref) {
		strcpy(row[7], "ref");
		strcpy(row[8], "-");
		strcpy(row[9], "ref");
		strcpy(row[10], "-");
		strcpy(row[11], "ref");
	} else {
		gather(p, cr, m, F(tvd_excess), &a);
		fmt_ms(row[7], 64, &a, p->o->runs, "%.3f");
		gather(p, cr, m, F(tvd_floor), &a);
		fmt_med(row[8], 64, &a, "%.3f");
		gather(p, cr, m, F(raw_tvd), &a);
		fmt_ms(row[9], 64, &a, p->o->runs, "%.3f");
		gather(p, cr, m, F(tvd_noise), &a);
		fmt_med(row[10], 64, &a, "%.3f");
		gather(p, cr, m, F(tvd_fn), &a);
		fmt_ms(row[11], 64, &a, p->o->runs, "%.3f");
	}
	gather(p, cr, m, F(tvd_truth), &a);
	fmt_ms(row[12], 64, &a, p->o->runs, "%.3f");
	fmt_ci(row[13], 64, p, cr, m, F(slowdown), F(slowdown_ci));
	fmt_ci(row[14], 64, p, cr, m, F(walk), F(walk_ci));
	snprintf(row[15], 64, "%llu", (unsigned long long)s.lost);
	gather(p, cr, m, F(us_target), &a);
	fmt_ms(row[16], 64, &a, p->o->runs, "%.2f");
	gather(p, cr, m, F(us_sampler), &a);
	fmt_ms(row[17], 64, &a, p->o->runs, "%.2f");
	/* What this row was compared with: all the reference's
	 * threads, or those running at the sample. */
	snprintf(row[18], 64, "%s",
		 is_ref				      ? "ref"
		 : p->modes[m].kind == MODE_BPF_TIMER ? "-"
		 : cr->res[m].ref_run		      ? "running"
						      : "all");
}

/* The heading row and nrows-1 mode rows, each column as wide as its widest
 * cell; the stacks column only when some mode's stacks differ from its
 * samples. */
static void print_cells(FILE *f, char (*cell)[NCOLS][64], int nrows, int show_stacks)
{
	int w[NCOLS] = {0};

	for (int r = 0; r < nrows; r++)
		for (int c = 0; c < NCOLS; c++)
			if (width(cell[r][c]) > w[c])
				w[c] = width(cell[r][c]);
	for (int r = 0; r < nrows; r++) {
		for (int c = 0; c < NCOLS; c++) {
			if (c == 2 && !show_stacks)
				continue;
			/* The mode left-aligned, figures right-aligned. */
			if (c == 0)
				fprintf(f, "%s%*s", cell[r][c], w[c] - width(cell[r][c]), "");
			else
				fprintf(f, "  %*s%s", w[c] - width(cell[r][c]), "", cell[r][c]);
		}
		fprintf(f, "\n");
	}
}

/* The notes under the table: a coarse reference, a distorting stopper,
 * and each window's own note. */
static void print_case_notes(FILE *f, const struct oracle_plan *p,
			     const struct oracle_case_result *cr, const struct oracle_result *ref0)
{
	/* A reference of few samples has few keys: every mode compared with
	 * it then shows a large tvd_excess that says little about the mode
	 * (the threads case at 10 kHz: ptrace-low stops 13 threads per
	 * sample, so its 5% duty allows 6-30 samples, 4-5 keys, where bpf
	 * sees 16-18). */
	if (keydist_total(ref0->dist) < REF_FEW_STACKS)
		fprintf(f,
			"note: the reference %s has only %.0f stacks (%zu keys): tvd figures "
			"against it are coarse; a longer --duration or --reference-mode "
			"bpf-poisson gives more\n",
			p->modes[p->ref].name, keydist_total(ref0->dist),
			keydist_nkeys(ref0->dist));
	for (int m = 0; m < p->nmodes; m++) {
		struct oracle_agg a;

		/* Issue 12, item 5: a reference (or a stopping mode that could be
		 * one) that slowed the target measured another program. */
		if (m != p->ref && p->modes[m].kind != MODE_PTRACE)
			continue;
		gather(p, cr, m, F(slowdown), &a);
		if (a.n && a.mean > REF_SLOWDOWN_FLAG)
			fprintf(
			    f,
			    "note: %s%s slowed the target by %.1f%% (> %.0f%%): what it "
			    "saw is a distorted run%s\n",
			    m == p->ref ? "the reference " : "", p->modes[m].name, a.mean,
			    REF_SLOWDOWN_FLAG,
			    m == p->ref && !p->modes[m].low
				? "; --reference-mode ptrace-low or bpf-poisson does not distort"
				: "");
	}
	for (int run = 0; run < p->o->runs; run++)
		for (int m = 0; m < p->nmodes; m++)
			if (cr->res[run * p->nmodes + m].note[0]) {
				char en[1024];

				fprintf(
				    f, "note: %s run %d: %s\n", p->modes[m].name, run,
				    text_esc(cr->res[run * p->nmodes + m].note, en, sizeof(en)));
			}
}

void oracle_print_case(FILE *f, const struct oracle_plan *p, const struct oracle_case_result *cr)
{
	char cell[ORACLE_MAX_MODES + 1][NCOLS][64];
	int show_stacks = 0;
	const struct oracle_result *ref0 = &cr->res[p->ref];

	for (int m = 0; m < p->nmodes; m++) {
		struct mode_sum s;

		sums(p, cr, m, &s);
		if (s.stacks != s.samples)
			show_stacks = 1;
	}
	print_case_heading(f, cr, ref0);
	for (int c = 0; c < NCOLS; c++)
		snprintf(cell[0][c], 64, "%s", heads[c]);
	for (int m = 0; m < p->nmodes; m++)
		mode_cells(p, cr, m, cell[m + 1]);
	print_cells(f, cell, p->nmodes + 1, show_stacks);
	print_case_notes(f, p, cr, ref0);
}

static json_object *jnum(double x)
{
	return isnan(x) || isinf(x) ? NULL : json_object_new_double(x);
}

static json_object *jdist(const struct keydist *kd)
{
	json_object *j = json_object_new_object();
	size_t it = 0;
	const char *k;
	double w;

	while (kd && keydist_next(kd, &it, &k, &w))
		json_object_object_add(j, k, json_object_new_double(w));
	return j;
}

/* A time-ordered sequence of keys as ORACLE_BLOCKS blocks of consecutive
 * samples, each [key index, count, ...] into "keys": what the gate's block
 * bootstrap draws from (oracle_compare.c), far smaller than the sequence. */
static json_object *jblocks(const char *const *seq, size_t n)
{
	json_object *j = json_object_new_object(), *keys = json_object_new_array();
	json_object *blocks = json_object_new_array();
	struct keydist *idx = keydist_new(), *blk = keydist_new();
	size_t nb = n < ORACLE_BLOCKS ? n : ORACLE_BLOCKS, i = 0;

	for (size_t b = 0; idx && blk && b < nb; b++) {
		json_object *jb = json_object_new_array();
		size_t end = (b + 1) * n / nb, it = 0;
		const char *k;
		double w;

		keydist_clear(blk);
		for (; i < end; i++) {
			if (keydist_get(idx, seq[i]) == 0) {
				keydist_add(idx, seq[i], (double)keydist_nkeys(idx) + 1);
				json_object_array_add(keys, json_object_new_string(seq[i]));
			}
			keydist_add(blk, seq[i], 1);
		}
		while (keydist_next(blk, &it, &k, &w)) {
			json_object_array_add(
			    jb, json_object_new_int64((int64_t)keydist_get(idx, k) - 1));
			json_object_array_add(jb, json_object_new_int64((int64_t)w));
		}
		json_object_array_add(blocks, jb);
	}
	keydist_free(idx);
	keydist_free(blk);
	json_object_object_add(j, "keys", keys);
	json_object_object_add(j, "blocks", blocks);
	return j;
}

/* The attempts' mean cost per block of consecutive attempts (µs): the
 * per-window figures the gate's Welch test on µs compares. */
static json_object *jus_blocks(const struct oracle_result *r)
{
	json_object *j = json_object_new_array();
	size_t nb = r->nus < ORACLE_BLOCKS ? r->nus : ORACLE_BLOCKS, i = 0;

	for (size_t b = 0; b < nb; b++) {
		size_t end = (b + 1) * r->nus / nb, n = end - i;
		double sum = 0;

		for (; i < end; i++)
			sum += r->us_seq[i];
		json_object_array_add(j, jnum(sum / (double)n));
	}
	return j;
}

static json_object *jrun(const struct oracle_result *r)
{
	json_object *j = json_object_new_object();

	json_object_object_add(j, "attempts", json_object_new_uint64(r->attempts));
	json_object_object_add(j, "samples", json_object_new_uint64(r->samples));
	json_object_object_add(j, "stacks", json_object_new_uint64(r->stacks));
	json_object_object_add(j, "errors", json_object_new_uint64(r->errors));
	json_object_object_add(j, "impossible", json_object_new_uint64(r->impossible));
	json_object_object_add(j, "lost", json_object_new_uint64(r->lost));
	json_object_object_add(j, "errors_pct", jnum(r->errors_pct));
	json_object_object_add(j, "impossible_pct", jnum(r->impossible_pct));
	json_object_object_add(j, "us", jnum(r->us));
	json_object_object_add(j, "us_target", jnum(r->us_target));
	json_object_object_add(j, "us_sampler", jnum(r->us_sampler));
	json_object_object_add(j, "raw_tvd", jnum(r->raw_tvd));
	json_object_object_add(j, "tvd_floor", jnum(r->tvd_floor));
	json_object_object_add(j, "tvd_excess", jnum(r->tvd_excess));
	json_object_object_add(j, "tvd_noise", jnum(r->tvd_noise));
	json_object_object_add(j, "tvd_fn", jnum(r->tvd_fn));
	json_object_object_add(j, "tvd_truth", jnum(r->tvd_truth));
	json_object_object_add(j, "slowdown_pct", jnum(r->slowdown));
	json_object_object_add(j, "slowdown_ci95", jnum(r->slowdown_ci));
	json_object_object_add(j, "slowdown_pairs", json_object_new_int(r->pairs));
	{
		json_object *pr = json_object_new_array();

		for (int i = 0; i < r->npairs && i < ORACLE_GATE_MAX_PAIRS; i++) {
			json_object *x = json_object_new_array();

			json_object_array_add(x, jnum(r->pair_rate[i][0]));
			json_object_array_add(x, jnum(r->pair_rate[i][1]));
			json_object_array_add(pr, x);
		}
		json_object_object_add(j, "slowdown_pair_rates", pr);
	}
	json_object_object_add(j, "walk_pct", jnum(r->walk));
	json_object_object_add(j, "walk_ci95", jnum(r->walk_ci));
	/* The mean rates of the on and the off sub-windows. */
	json_object_object_add(j, "progress_rate", jnum(r->progress_rate));
	json_object_object_add(j, "baseline_rate", jnum(r->off_rate));
	json_object_object_add(j, "elapsed_s", jnum(r->elapsed));
	json_object_object_add(j, "note", r->note[0] ? json_object_new_string(r->note) : NULL);
	json_object_object_add(j, "distribution", jdist(r->dist));
	json_object_object_add(j, "impossible_stacks", jdist(r->imp));
	json_object_object_add(j, "truth_phases", jdist(r->phases));
	json_object_object_add(j, "truth", r->truth ? jdist(r->truth) : NULL);
	json_object_object_add(j, "ref_set",
			       json_object_new_string(r->ref_run ? "running" : "all"));
	json_object_object_add(j, "running_distribution", jdist(r->dist_run));
	json_object_object_add(j, "seq_blocks", jblocks(r->seq, r->nseq));
	json_object_object_add(j, "running_seq_blocks", jblocks(r->seq_run, r->nseq_run));
	/* Attempts the cost blocks cover: fewer than attempts past the cap. */
	json_object_object_add(j, "us_attempts", json_object_new_uint64(r->nus));
	json_object_object_add(j, "us_blocks", r->us_seq ? jus_blocks(r) : NULL);
	return j;
}

/* The --mode value that makes m again (--baseline reruns it), as a JSON
 * string: "external:CMD" for a command named after itself, else its name
 * (a --peers name such as austin is not a --mode value: the header's
 * "peers" brings it back). */
static json_object *mode_arg(const struct oracle_mode *m, char *buf, size_t len)
{
	if (m->kind == MODE_EXTERNAL && m->cmd && !strncmp(m->name, "ext:", 4))
		snprintf(buf, len, "external:%s", m->cmd);
	else
		snprintf(buf, len, "%s", m->name);
	return json_object_new_string(buf);
}

json_object *oracle_json(const struct oracle_plan *p, const struct oracle_python *py,
			 struct oracle_case_result *crs, int ncases, int ncpus, double other_load)
{
	json_object *root = json_object_new_object(), *h = json_object_new_object();
	json_object *cases = json_object_new_array(), *margs = json_object_new_array();
	struct oracle_machine mach;

	oracle_machine(py, &mach);
	json_object_object_add(h, "format", json_object_new_string(ORACLE_JSON_FORMAT));
	json_object_object_add(h, "format_version", json_object_new_int(ORACLE_JSON_VERSION));
	json_object_object_add(h, "python_build_id", json_object_new_string(mach.build_id));
	json_object_object_add(h, "kernel", json_object_new_string(mach.kernel));
	json_object_object_add(h, "machine", json_object_new_string(mach.machine));
	json_object_object_add(h, "cpu_model", json_object_new_string(mach.cpu_model));
	json_object_object_add(h, "peers", json_object_new_boolean(p->o->peers));
	json_object_object_add(h, "reference_asked",
			       json_object_new_string(p->o->ref_name ? p->o->ref_name : "auto"));
	json_object_object_add(h, "slowdown_pairs_asked",
			       json_object_new_int(p->o->slowdown_pairs));
	char arg[PATH_MAX + 16];

	for (int m = 0; m < p->nmodes; m++)
		json_object_array_add(margs, mode_arg(&p->modes[m], arg, sizeof(arg)));
	json_object_object_add(h, "mode_args", margs);

	json_object_object_add(h, "python_version", json_object_new_string(py->version));
	json_object_object_add(h, "python_label", json_object_new_string(py->label));
	json_object_object_add(h, "python", json_object_new_string(py->python));
	json_object_object_add(h, "python_root", json_object_new_string(py->root));
	json_object_object_add(h, "cases", json_object_new_int(ncases));
	json_object_object_add(h, "runs", json_object_new_int(p->o->runs));
	json_object_object_add(h, "duration", json_object_new_double(p->o->duration));
	json_object_object_add(h, "rate_khz", json_object_new_double(p->rate_khz));
	json_object_object_add(h, "warmup", json_object_new_double(p->o->warmup));
	json_object_object_add(h, "poisson_sampling", json_object_new_boolean(p->o->poisson));
	json_object_object_add(h, "cpus", json_object_new_int(ncpus));
	json_object_object_add(h, "pinned", json_object_new_boolean(p->pinned));
	json_object_object_add(h, "cpu_target",
			       p->pinned ? json_object_new_int(p->cpu_target) : NULL);
	json_object_object_add(h, "cpu_sampler",
			       p->pinned ? json_object_new_int(p->cpu_sampler) : NULL);
	json_object_object_add(h, "other_load_cpus", jnum(other_load));
	json_object_object_add(h, "bpf_rate_hz", jnum(p->bpf_rate_hz));
	json_object_object_add(h, "bpf_rate_clamped", json_object_new_boolean(p->bpf_clamped));
	json_object_object_add(h, "reference_mode", json_object_new_string(p->modes[p->ref].name));
	json_object_object_add(root, "header", h);
	for (int ci = 0; ci < ncases; ci++) {
		struct oracle_case_result *cr = &crs[ci];
		json_object *jc = json_object_new_object(), *modes = json_object_new_array();

		json_object_object_add(jc, "name", json_object_new_string(cr->c->name));
		json_object_object_add(jc, "operation", json_object_new_string(cr->c->operation));
		json_object_object_add(jc, "snippet", json_object_new_string(cr->c->py));
		json_object_object_add(jc, "rules", json_object_new_boolean(!cr->c->no_rules));
		json_object_object_add(jc, "ref_keys",
				       json_object_new_uint64(keydist_nkeys(cr->res[p->ref].dist)));
		for (int m = 0; m < p->nmodes; m++) {
			json_object *jm = json_object_new_object(), *runs = json_object_new_array();
			char arg[PATH_MAX + 16];

			json_object_object_add(jm, "mode",
					       json_object_new_string(p->modes[m].name));
			json_object_object_add(jm, "reference",
					       json_object_new_boolean(m == p->ref));
			json_object_object_add(jm, "arg", mode_arg(&p->modes[m], arg, sizeof(arg)));
			if (p->modes[m].cmd)
				json_object_object_add(jm, "command",
						       json_object_new_string(p->modes[m].cmd));
			for (int run = 0; run < p->o->runs; run++)
				json_object_array_add(runs, jrun(&cr->res[run * p->nmodes + m]));
			json_object_object_add(jm, "runs", runs);
			json_object_array_add(modes, jm);
		}
		json_object_object_add(jc, "modes", modes);
		json_object_object_add(jc, "consistency", jconsistency(p, cr));
		json_object_array_add(cases, jc);
	}
	json_object_object_add(root, "cases", cases);
	return root;
}

int oracle_write_json(const char *path, json_object *root, int force, struct diag *d)
{
	struct out_file of;

	/* Through the one safe opener: json_object_to_file_ext() followed a
	 * symlink planted at the path and truncated what it pointed to. */
	if (out_file_open(&of, path, force, d))
		return -1;
	fputs(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
						       JSON_C_TO_STRING_NOSLASHESCAPE),
	      of.f);
	return out_file_commit(&of, d);
}

int oracle_empty(FILE *f, const struct oracle_plan *p, const struct oracle_case_result *crs,
		 int ncases)
{
	int empty = 0;

	for (int ci = 0; ci < ncases; ci++)
		for (int run = 0; run < p->o->runs; run++)
			for (int m = 0; m < p->nmodes; m++) {
				const struct oracle_result *r = &crs[ci].res[run * p->nmodes + m];

				/* The control takes no sample by design: only a
				 * window that failed is empty. */
				if (r->samples ||
				    (p->modes[m].kind == MODE_BPF_TIMER && !r->note[0]))
					continue;
				empty++;
				fprintf(f, "bpfpy oracle: %s: %s run %d took no sample: %s\n",
					crs[ci].c->name, p->modes[m].name, run,
					r->note[0]    ? r->note
					: r->attempts ? "every attempt failed"
						      : "the mode returned nothing in its window");
			}
	return empty;
}

int oracle_check(FILE *f, const struct oracle_plan *p, struct oracle_case_result *crs, int ncases)
{
	int broken = 0;

	for (int ci = 0; ci < ncases; ci++) {
		for (int m = 0; m < p->nmodes; m++) {
			struct oracle_agg e, i, x;

			if (p->modes[m].kind == MODE_BPF_TIMER)
				continue; /* no sample: nothing to check */
			gather(p, &crs[ci], m, F(errors_pct), &e);
			gather(p, &crs[ci], m, F(impossible_pct), &i);
			gather(p, &crs[ci], m, F(tvd_excess), &x);
			if (e.n && e.mean > p->o->max_errors) {
				fprintf(f, "check: %s %s: errors%% %.2f > %.2f\n", crs[ci].c->name,
					p->modes[m].name, e.mean, p->o->max_errors);
				broken++;
			}
			if (i.n && i.mean > p->o->max_impossible) {
				fprintf(f, "check: %s %s: impossible%% %.2f > %.2f\n",
					crs[ci].c->name, p->modes[m].name, i.mean,
					p->o->max_impossible);
				broken++;
			}
			if (m != p->ref && x.n && x.mean > p->o->max_tvd_excess) {
				fprintf(f, "check: %s %s: tvd_excess %.3f > %.3f\n",
					crs[ci].c->name, p->modes[m].name, x.mean,
					p->o->max_tvd_excess);
				broken++;
			}
			if (m != p->ref && !x.n) {
				fprintf(f, "check: %s %s: no tvd_excess (no possible stacks)\n",
					crs[ci].c->name, p->modes[m].name);
				broken++;
			}
		}
	}
	return broken;
}
