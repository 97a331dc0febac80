// SPDX-License-Identifier: MIT
/* Alternating on/off sub-windows and the slowdown they measure: see
 * oracle_gate.h. */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "monotime.h"
#include "oracle_gate.h"

void oracle_gate_init(struct oracle_gate *g, double start, double duration, int npairs,
		      uint64_t seed, volatile const uint64_t *progress, oracle_gate_fn toggle,
		      void *ctx)
{
	memset(g, 0, sizeof(*g));
	if (npairs < 1)
		npairs = (int)lround(duration / (2 * ORACLE_GATE_AUTO_S));
	if (npairs < 1)
		npairs = 1;
	if (npairs > ORACLE_GATE_MAX_PAIRS)
		npairs = ORACLE_GATE_MAX_PAIRS;
	g->start = start;
	g->npairs = npairs;
	g->win = duration / (2.0 * npairs);
	g->progress = progress;
	g->toggle = toggle;
	g->ctx = ctx;
	for (int i = 0; i < npairs; i++) {
		/* splitmix64: one bit per pair */
		uint64_t z = (seed += 0x9e3779b97f4a7c15ull);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		g->first_on[i] = (z ^ (z >> 31)) & 1;
	}
}

static int sub_on(const struct oracle_gate *g, int k)
{
	return (k % 2 == 0) == (g->first_on[k / 2] != 0);
}

static void set_on(struct oracle_gate *g, int on)
{
	if (oracle_gate_on(g) == on)
		return;
	__atomic_store_n(&g->on, on, __ATOMIC_RELEASE);
	if (g->toggle)
		g->toggle(g->ctx, on);
}

static void *gate_thread(void *arg)
{
	struct oracle_gate *g = arg;
	double last = g->start;

	for (int k = 0; k <= 2 * g->npairs; k++) {
		double at = g->start + k * g->win, now;

		/* Slept in short steps so that a stop is seen within 20 ms. */
		while (!__atomic_load_n(&g->quit, __ATOMIC_ACQUIRE) && (now = mono_s()) < at) {
			double s = fmin(at - now, 0.02);
			struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};

			nanosleep(&ts, NULL);
		}
		if (__atomic_load_n(&g->quit, __ATOMIC_ACQUIRE))
			break;
		/* Progress first, then the switch: the boundary is where it
		 * was read. */
		g->prog[k] = g->progress ? *g->progress : 0;
		g->t[k] = mono_s();
		if (k > 0 && sub_on(g, k - 1))
			g->on_s += g->t[k] - last;
		last = g->t[k];
		__atomic_store_n(&g->nb, k + 1, __ATOMIC_RELEASE);
		if (k < 2 * g->npairs)
			set_on(g, sub_on(g, k));
	}
	/* The window is over: the mode's own state from here (an external
	 * tool is continued, to end and be reaped; a clock stays off). */
	set_on(g, g->end_on);
	__atomic_store_n(&g->on, 0, __ATOMIC_RELEASE);
	return NULL;
}

/* Both threads: started flag set on success, errno on failure; joined
 * after *quit is raised when quit says so. */
static int thread_start(pthread_t *th, void *(*fn)(void *), void *arg, int *started)
{
	int e = pthread_create(th, NULL, fn, arg);

	if (e) {
		errno = e;
		return -1;
	}
	*started = 1;
	return 0;
}

static void thread_stop(pthread_t th, volatile int *quit, int raise, int *started)
{
	if (!*started)
		return;
	if (raise)
		__atomic_store_n(quit, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	*started = 0;
}

int oracle_gate_start(struct oracle_gate *g)
{
	return thread_start(&g->th, gate_thread, g, &g->started);
}

void oracle_gate_stop(struct oracle_gate *g)
{
	/* A window that ends on time waits for its last boundary (the mode's
	 * loop ends a little before it); one that ends early does not. */
	thread_stop(g->th, &g->quit, mono_s() < g->start + 2 * g->npairs * g->win - 0.1,
		    &g->started);
}

double oracle_t975(int df)
{
	static const double t[] = {NAN,	  12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
				   2.306, 2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
				   2.120, 2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
				   2.064, 2.060,  2.056, 2.052, 2.048, 2.045, 2.042};

	if (df < 1)
		return NAN;
	if (df < (int)(sizeof(t) / sizeof(t[0])))
		return t[df];
	return df < 60 ? 2.00 : df < 120 ? 1.98 : 1.96;
}

void oracle_gate_pair(const struct oracle_gate *g, int p, double *on, double *off)
{
	int nb = __atomic_load_n(&g->nb, __ATOMIC_ACQUIRE);
	double r[2];

	*on = *off = NAN;
	if (p < 0 || p >= g->npairs || 2 * p + 2 >= nb)
		return;
	for (int j = 0; j < 2; j++) {
		int k = 2 * p + j;

		r[j] = (double)(g->prog[k + 1] - g->prog[k]) / (g->t[k + 1] - g->t[k]);
	}
	*on = r[g->first_on[p] ? 0 : 1];
	*off = r[g->first_on[p] ? 1 : 0];
}

int oracle_gate_slowdown(const struct oracle_gate *g, double *mean, double *ci95, double *on_rate,
			 double *off_rate)
{
	double s[ORACLE_GATE_MAX_PAIRS], sum = 0, ss = 0, on = 0, off = 0;
	int n = 0, nb = __atomic_load_n(&g->nb, __ATOMIC_ACQUIRE);

	*mean = *ci95 = *on_rate = *off_rate = NAN;
	if (!g->progress)
		return 0;
	for (int p = 0; p < g->npairs && 2 * p + 2 < nb; p++) {
		double ron, roff;

		oracle_gate_pair(g, p, &ron, &roff);
		if (!(roff > 0))
			continue;
		s[n] = 100 * (1 - ron / roff);
		sum += s[n];
		on += ron;
		off += roff;
		n++;
	}
	if (!n)
		return 0;
	*mean = sum / n;
	*on_rate = on / n;
	*off_rate = off / n;
	for (int i = 0; i < n; i++)
		ss += (s[i] - *mean) * (s[i] - *mean);
	if (n >= 2)
		*ci95 = oracle_t975(n - 1) * sqrt(ss / (n - 1)) / sqrt((double)n);
	return n;
}

#define PLOG_STEP_S 0.005

static void *plog_thread(void *arg)
{
	struct oracle_plog *l = arg;
	struct timespec ts = {0, (long)(PLOG_STEP_S * 1e9)};

	while (!__atomic_load_n(&l->quit, __ATOMIC_ACQUIRE) && l->n < ORACLE_PLOG_MAX) {
		l->v[l->n] = *l->progress;
		l->t[l->n] = mono_s();
		__atomic_store_n(&l->n, l->n + 1, __ATOMIC_RELEASE);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int oracle_plog_start(struct oracle_plog *l, volatile const uint64_t *progress)
{
	l->n = 0;
	l->quit = 0;
	l->started = 0;
	l->progress = progress;
	if (!progress)
		return 0;
	return thread_start(&l->th, plog_thread, l, &l->started);
}

void oracle_plog_stop(struct oracle_plog *l)
{
	thread_stop(l->th, &l->quit, 1, &l->started);
}

/* The log entry nearest t (the log is in time order), or -1. */
static int plog_at(const struct oracle_plog *l, double t)
{
	int lo = 0, hi = l->n - 1;

	if (l->n < 2 || t < l->t[0] - PLOG_STEP_S || t > l->t[l->n - 1] + PLOG_STEP_S)
		return -1;
	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (l->t[mid] < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && t - l->t[lo - 1] < l->t[lo] - t)
		lo--;
	return lo;
}

/* Rates of the sub-windows of [a, b): their count, mean and variance. */
static int plog_subs(const struct oracle_plog *l, double a, double b, double *mean, double *var)
{
	int k = (int)lround((b - a) / ORACLE_GATE_AUTO_S), n = 0;
	double sum = 0, ss = 0, r[ORACLE_PLOG_MAX];

	if (k < 1)
		k = 1;
	for (int i = 0; i < k && n < ORACLE_PLOG_MAX; i++) {
		int x = plog_at(l, a + (b - a) * i / k), y = plog_at(l, a + (b - a) * (i + 1) / k);

		if (x < 0 || y <= x)
			continue;
		r[n] = (double)(l->v[y] - l->v[x]) / (l->t[y] - l->t[x]);
		sum += r[n++];
	}
	if (!n)
		return 0;
	*mean = sum / n;
	for (int i = 0; i < n; i++)
		ss += (r[i] - *mean) * (r[i] - *mean);
	*var = n > 1 ? ss / (n - 1) : NAN;
	return n;
}

int oracle_plog_slowdown(const struct oracle_plog *l, double off0, double off1, double on0,
			 double on1, double *mean, double *ci95, double *on_rate, double *off_rate)
{
	double mon, von, moff, voff;
	int non, noff;

	*mean = *ci95 = *on_rate = *off_rate = NAN;
	non = plog_subs(l, on0, on1, &mon, &von);
	noff = plog_subs(l, off0, off1, &moff, &voff);
	if (!non || !noff || !(moff > 0))
		return -1;
	*on_rate = mon;
	*off_rate = moff;
	*mean = 100 * (1 - mon / moff);
	/* The ratio's variance by the delta method, Welch's degrees of
	 * freedom taken as the smaller sample's. */
	if (non > 1 && noff > 1) {
		double q = mon / moff, v = von / non + q * q * voff / noff;

		*ci95 = 100 * oracle_t975((non < noff ? non : noff) - 1) * sqrt(v) / moff;
	}
	return 0;
}
