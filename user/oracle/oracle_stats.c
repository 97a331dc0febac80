// SPDX-License-Identifier: MIT
/*
 * Key distributions and the distances between them.
 *
 * The map is open addressing with linear probing over a power-of-two table.
 * A mode at 100 kHz for 3 s yields some 300k stacks but, for the shipped
 * snippets, tens to a few thousands of distinct keys, so lookups dominate
 * and must not allocate: the key is copied once, on first sight.
 */
#include "oracle_stats.h"

#include "diag.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct kd_slot {
	char *key; /* NULL: empty */
	uint64_t hash;
	double w;
};

struct keydist {
	struct kd_slot *slot;
	size_t cap; /* power of two, or 0 */
	size_t used;
	double total;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 1099511628211ULL;
	}
	return h;
}

struct keydist *keydist_new(void)
{
	return calloc(1, sizeof(struct keydist));
}

void keydist_clear(struct keydist *kd)
{
	size_t i;

	if (!kd)
		return;
	for (i = 0; i < kd->cap; i++)
		free(kd->slot[i].key);
	free(kd->slot);
	memset(kd, 0, sizeof(*kd));
}

void keydist_free(struct keydist *kd)
{
	keydist_clear(kd);
	free(kd);
}

static struct kd_slot *find(const struct keydist *kd, const char *key, uint64_t h)
{
	size_t i, mask = kd->cap - 1;

	if (!kd->cap)
		return NULL;
	for (i = h & mask;; i = (i + 1) & mask) {
		struct kd_slot *s = &kd->slot[i];

		if (!s->key || (s->hash == h && !strcmp(s->key, key)))
			return s;
	}
}

static int grow(struct keydist *kd)
{
	size_t ncap = kd->cap ? kd->cap * 2 : 64, i;
	struct kd_slot *old = kd->slot, *n = calloc(ncap, sizeof(*n));
	size_t ocap = kd->cap;

	if (!n)
		return -1;
	kd->slot = n;
	kd->cap = ncap;
	for (i = 0; i < ocap; i++) {
		if (old[i].key)
			*find(kd, old[i].key, old[i].hash) = old[i];
	}
	free(old);
	return 0;
}

const char *keydist_add(struct keydist *kd, const char *key, double w)
{
	uint64_t h = hash_str(key);
	struct kd_slot *s;

	/* Keep the load under 70%: linear probing degrades fast beyond it. */
	if ((kd->used + 1) * 10 > kd->cap * 7 && grow(kd))
		return NULL;
	s = find(kd, key, h);
	if (!s->key) {
		s->key = strdup(key);
		if (!s->key)
			return NULL;
		s->hash = h;
		s->w = 0;
		kd->used++;
	}
	s->w += w;
	kd->total += w;
	return s->key;
}

double keydist_get(const struct keydist *kd, const char *key)
{
	struct kd_slot *s = find(kd, key, hash_str(key));

	return s && s->key ? s->w : 0;
}

double keydist_total(const struct keydist *kd)
{
	return kd->total;
}

size_t keydist_nkeys(const struct keydist *kd)
{
	return kd->used;
}

bool keydist_next(const struct keydist *kd, size_t *it, const char **key, double *w)
{
	while (*it < kd->cap) {
		const struct kd_slot *s = &kd->slot[(*it)++];

		if (s->key) {
			*key = s->key;
			*w = s->w;
			return true;
		}
	}
	return false;
}

void oracle_key_fn_only(const char *key, char *buf, size_t size)
{
	size_t o = 0;
	const char *p = key;

	if (!size)
		return;
	/* A frame is everything up to ';'. Its line is the part after the last
	 * ':' of the frame, and only when that part is all digits: qualnames
	 * never hold ':', but "<unknown>"-style names without a line must pass
	 * through whole. */
	while (*p) {
		const char *end = strchr(p, ';'), *colon, *q;
		size_t len;

		if (!end)
			end = p + strlen(p);
		len = (size_t)(end - p);
		colon = NULL;
		for (q = p; q < end; q++)
			if (*q == ':')
				colon = q;
		if (colon && colon + 1 < end) {
			for (q = colon + 1; q < end && *q >= '0' && *q <= '9'; q++)
				;
			if (q == end)
				len = (size_t)(colon - p);
		}
		if (o + len + 1 >= size)
			len = o + 1 < size ? size - o - 1 : 0;
		memcpy(buf + o, p, len);
		o += len;
		if (!*end || o + 1 >= size)
			break;
		buf[o++] = ';';
		p = end + 1;
	}
	buf[o] = '\0';
}

int keydist_fn_only(const struct keydist *in, struct keydist *out)
{
	size_t it = 0;
	const char *key;
	double w;

	while (keydist_next(in, &it, &key, &w)) {
		size_t len = strlen(key) + 1;
		char *buf = malloc(len);

		if (!buf)
			return -1;
		oracle_key_fn_only(key, buf, len);
		if (!keydist_add(out, buf, w)) {
			free(buf);
			return -1;
		}
		free(buf);
	}
	return 0;
}

int keydist_load_truth(struct keydist *kd, const char *path, struct diag *d)
{
	json_object *root = json_object_from_file(path);

	if (!root)
		return diag_set(d, EXIT_FAIL, "%s: cannot read ground truth: %s", path,
				json_util_get_last_err() ? json_util_get_last_err()
							 : "invalid JSON");
	if (!json_object_is_type(root, json_type_object)) {
		json_object_put(root);
		return diag_set(d, EXIT_FAIL,
				"%s: ground truth must be a JSON object {\"phase\": seconds}",
				path);
	}
	json_object_object_foreach(root, k, v)
	{
		if (!json_object_is_type(v, json_type_double) &&
		    !json_object_is_type(v, json_type_int)) {
			/* k belongs to root: report before releasing it. */
			diag_set(d, EXIT_FAIL, "%s: phase \"%s\": expected seconds (a number)",
				 path, k);
			json_object_put(root);
			return -1;
		}
		if (!keydist_add(kd, k, json_object_get_double(v))) {
			diag_errno(d, ENOMEM, "%s: phase \"%s\"", path, k);
			json_object_put(root);
			return -1;
		}
	}
	json_object_put(root);
	return 0;
}

double oracle_tvd(const struct keydist *p, const struct keydist *q)
{
	double tp = p->total, tq = q->total, sum = 0;
	const char *key;
	size_t it = 0;
	double w;

	if (tp <= 0 && tq <= 0)
		return 0;
	if (tp <= 0 || tq <= 0)
		return 1;
	/* Keys of p, then keys of q that p lacks: the union, each once. */
	while (keydist_next(p, &it, &key, &w))
		sum += fabs(w / tp - keydist_get(q, key) / tq);
	it = 0;
	while (keydist_next(q, &it, &key, &w)) {
		if (keydist_get(p, key) == 0)
			sum += w / tq;
	}
	return sum / 2;
}

/*
 * Why this floor is too small at high rates: it is the expected TVD of two
 * samples of independent draws. A sampler at 100 kHz takes many samples
 * inside one iteration of a snippet whose phases last tens of microseconds
 * or more, so consecutive samples repeat the same key; n samples then carry
 * the information of far fewer independent draws (n divided by the
 * correlation length in samples), and the true noise exceeds this floor
 * by about the square root of that length. tvd_excess computed from it
 * then blames the sampler for noise. oracle_tvd_noise is the honest floor.
 */
double oracle_tvd_floor(const struct keydist *ref, double n_mode, double n_ref)
{
	double t = ref->total, s = 0, w;
	const char *key;
	size_t it = 0;

	if (t <= 0 || n_mode <= 0 || n_ref <= 0)
		return NAN;
	while (keydist_next(ref, &it, &key, &w)) {
		double p = w / t;

		s += sqrt(p * (1 - p));
	}
	return 0.5 * sqrt(2 / M_PI) * sqrt(1 / n_mode + 1 / n_ref) * s;
}

/*
 * Block length: a block must be much longer than the correlation length of
 * consecutive samples, or A and B see the same bursts and their distance
 * understates the noise (the IID floor's mistake again). It must also leave
 * enough blocks that both halves see the same slow drift of the workload
 * (warm caches, GC, frequency scaling). Forty blocks (twenty per half) at
 * least 50 samples long does both for the shipped snippets: at 100 kHz over
 * 3 s a block is 7500 samples (75 ms, hundreds of main-loop iterations); at
 * 1 kHz it is 75 samples, and the floor of 50 keeps a block above the
 * milliseconds a slow snippet iteration takes.
 */
size_t oracle_noise_block(size_t n)
{
	size_t b = (n + 39) / 40;

	return b < 50 ? 50 : b;
}

double oracle_tvd_noise(const char *const *seq, size_t n, size_t block, double n_mode, double n_ref)
{
	struct keydist *a, *b;
	double tvd, na, nb;
	size_t i;

	if (!block)
		block = oracle_noise_block(n);
	if (n < 2 * block || n_mode <= 0 || n_ref <= 0)
		return NAN;
	a = keydist_new();
	b = keydist_new();
	if (!a || !b)
		goto oom;
	for (i = 0; i < n; i++) {
		struct keydist *half = (i / block) % 2 ? b : a;

		if (!keydist_add(half, seq[i], 1))
			goto oom;
	}
	na = keydist_total(a);
	nb = keydist_total(b);
	tvd = oracle_tvd(a, b);
	keydist_free(a);
	keydist_free(b);
	/* TVD from sampling noise scales as sqrt(1/n1 + 1/n2). */
	return tvd * sqrt((1 / n_mode + 1 / n_ref) / (1 / na + 1 / nb));
oom:
	keydist_free(a);
	keydist_free(b);
	return NAN;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void oracle_aggregate(const double *x, size_t n, struct oracle_agg *out)
{
	double *v = malloc((n ? n : 1) * sizeof(*v)), sum = 0, ss = 0;
	size_t i, m = 0;

	out->n = 0;
	out->mean = out->sd = out->median = NAN;
	if (!v)
		return;
	for (i = 0; i < n; i++) {
		if (!isnan(x[i]))
			v[m++] = x[i];
	}
	if (m) {
		for (i = 0; i < m; i++)
			sum += v[i];
		out->mean = sum / (double)m;
		for (i = 0; i < m; i++)
			ss += (v[i] - out->mean) * (v[i] - out->mean);
		out->sd = m > 1 ? sqrt(ss / (double)(m - 1)) : 0;
		qsort(v, m, sizeof(*v), cmp_double);
		out->median = m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
	}
	out->n = m;
	free(v);
}

static double lchoose(double n, double k)
{
	return lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1);
}

double oracle_fisher_p(uint64_t x1, uint64_t n1, uint64_t x2, uint64_t n2)
{
	double n = (double)n1 + (double)n2, k = (double)x1 + (double)x2, lo, hi, obs, sum = 0;

	if (n1 + n2 == 0 || x1 > n1 || x2 > n2)
		return x1 > n1 || x2 > n2 ? NAN : 1;
	lo = k > (double)n2 ? k - (double)n2 : 0;
	hi = k < (double)n1 ? k : (double)n1;
	obs = lchoose(k, (double)x1) + lchoose(n - k, (double)n1 - (double)x1);
	for (double i = lo; i <= hi; i++) {
		double lp = lchoose(k, i) + lchoose(n - k, (double)n1 - i);

		/* "No more likely": equal within rounding counts as equal, as
		 * R's fisher.test does (relative 1e-7). */
		if (lp <= obs + 1e-7 * fabs(obs) + 1e-12)
			sum += exp(lp - lchoose(n, (double)n1));
	}
	return sum < 1 ? sum : 1;
}

/* The continued fraction of I_x(a, b) (Numerical Recipes' betacf). */
static double betacf(double a, double b, double x)
{
	const double tiny = 1e-300;
	double qab = a + b, qap = a + 1, qam = a - 1, c = 1, d = 1 - qab * x / qap, h;

	if (fabs(d) < tiny)
		d = tiny;
	d = 1 / d;
	h = d;
	for (int m = 1; m <= 1000; m++) {
		double m2 = 2.0 * m, aa = m * (b - m) * x / ((qam + m2) * (a + m2)), del;

		d = 1 + aa * d;
		d = fabs(d) < tiny ? 1 / tiny : 1 / d;
		c = 1 + aa / c;
		if (fabs(c) < tiny)
			c = tiny;
		h *= d * c;
		aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
		d = 1 + aa * d;
		d = fabs(d) < tiny ? 1 / tiny : 1 / d;
		c = 1 + aa / c;
		if (fabs(c) < tiny)
			c = tiny;
		del = d * c;
		h *= del;
		if (fabs(del - 1) < 1e-15)
			break;
	}
	return h;
}

double oracle_betai(double a, double b, double x)
{
	double bt;

	if (isnan(x) || a <= 0 || b <= 0)
		return NAN;
	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	bt = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
	return x < (a + 1) / (a + b + 2) ? bt * betacf(a, b, x) / a
					 : 1 - bt * betacf(b, a, 1 - x) / b;
}

double oracle_t_p2(double t, double df)
{
	if (isnan(t) || isnan(df) || df <= 0)
		return NAN;
	if (isinf(t))
		return 0;
	return oracle_betai(df / 2, 0.5, df / (df + t * t));
}

double oracle_welch(double m1, double s1, double n1, double m2, double s2, double n2, double *t,
		    double *df)
{
	double v1, v2, tt, d, p;

	if (t)
		*t = NAN;
	if (df)
		*df = NAN;
	if (n1 < 2 || n2 < 2 || isnan(m1) || isnan(m2) || isnan(s1) || isnan(s2))
		return NAN;
	v1 = s1 * s1 / n1;
	v2 = s2 * s2 / n2;
	if (v1 + v2 <= 0) {
		/* No spread at all: the figures are exact. */
		tt = m1 == m2 ? 0 : (m2 > m1 ? INFINITY : -INFINITY);
		d = n1 + n2 - 2;
		p = m1 == m2 ? 1 : 0;
	} else {
		tt = (m2 - m1) / sqrt(v1 + v2);
		d = (v1 + v2) * (v1 + v2) / (v1 * v1 / (n1 - 1) + v2 * v2 / (n2 - 1));
		p = oracle_t_p2(tt, d);
	}
	if (t)
		*t = tt;
	if (df)
		*df = d;
	return p;
}

double oracle_norm_p2(double z)
{
	return isnan(z) ? NAN : erfc(fabs(z) / sqrt(2));
}

double oracle_norm_q(double q)
{
	double lo = -40, hi = 40;

	if (!(q > 0 && q < 1))
		return NAN;
	/* Bisection on the CDF: slow (a few hundred erfc) but plainly right. */
	for (int i = 0; i < 200; i++) {
		double mid = (lo + hi) / 2;

		if (0.5 * erfc(-mid / sqrt(2)) < q)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

struct p_idx {
	double p;
	size_t i;
};

static int cmp_p_idx(const void *a, const void *b)
{
	double x = ((const struct p_idx *)a)->p, y = ((const struct p_idx *)b)->p;

	return (x > y) - (x < y);
}

void oracle_holm(const double *p, size_t n, double *adj)
{
	struct p_idx *v = malloc((n ? n : 1) * sizeof(*v));
	size_t m = 0;
	double run = 0;

	for (size_t i = 0; i < n; i++)
		adj[i] = NAN;
	if (!v) {
		/* No memory to sort: Bonferroni, which Holm improves on. */
		for (size_t i = 0; i < n; i++)
			adj[i] = isnan(p[i]) ? NAN : fmin(1, p[i] * (double)n);
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (!isnan(p[i]))
			v[m++] = (struct p_idx){p[i], i};
	qsort(v, m, sizeof(*v), cmp_p_idx);
	for (size_t j = 0; j < m; j++) {
		double a = fmin(1, (double)(m - j) * v[j].p);

		run = a > run ? a : run; /* adjusted p never falls down the order */
		adj[v[j].i] = run;
	}
	free(v);
}

double oracle_mdd_prop(double p1, double n1, double n2, double alpha, double power)
{
	double z, phi;

	if (n1 <= 0 || n2 <= 0 || isnan(p1))
		return NAN;
	p1 = p1 < 0 ? 0 : p1 > 1 ? 1 : p1;
	z = oracle_norm_q(1 - alpha / 2) + oracle_norm_q(power);
	phi = asin(sqrt(p1)) + z * sqrt(1 / n1 + 1 / n2) / 2;
	if (phi >= M_PI / 2)
		return 1 - p1;
	return sin(phi) * sin(phi) - p1;
}

double oracle_mdd_se(double se, double alpha, double power)
{
	if (isnan(se))
		return NAN;
	return (oracle_norm_q(1 - alpha / 2) + oracle_norm_q(power)) * se;
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* into += a uniformly drawn block of b[0..n), n times. */
static int draw_blocks(struct keydist *into, struct keydist *const *b, size_t n, uint64_t *s)
{
	keydist_clear(into);
	for (size_t i = 0; i < n; i++) {
		const struct keydist *blk = b[splitmix64(s) % n];
		size_t it = 0;
		const char *k;
		double w;

		while (keydist_next(blk, &it, &k, &w))
			if (!keydist_add(into, k, w))
				return -1;
	}
	return 0;
}

double oracle_tvd_boot_se(struct keydist *const *mode, size_t nmode, struct keydist *const *ref,
			  size_t nref, int floor, int reps, uint64_t seed)
{
	struct keydist *a = keydist_new(), *r = keydist_new();
	double sum = 0, ss = 0, se = NAN;
	int done = 0;

	if (!a || !r || nmode < 2 || nref < 2 || reps < 2)
		goto out;
	for (int i = 0; i < reps; i++) {
		double x;

		if (draw_blocks(a, mode, nmode, &seed) || draw_blocks(r, ref, nref, &seed))
			goto out;
		if (keydist_total(a) <= 0 || keydist_total(r) <= 0)
			continue;
		x = oracle_tvd(a, r);
		if (floor)
			x -= oracle_tvd_floor(r, keydist_total(a), keydist_total(r));
		sum += x;
		ss += x * x;
		done++;
	}
	if (done >= 2) {
		double mean = sum / done, var = (ss - done * mean * mean) / (done - 1);

		se = sqrt(var > 0 ? var : 0);
	}
out:
	keydist_free(a);
	keydist_free(r);
	return se;
}
