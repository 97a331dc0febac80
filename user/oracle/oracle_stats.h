/* SPDX-License-Identifier: MIT */
/*
 * The oracle's arithmetic: key distributions, their distance (TVD), the two
 * noise floors that say how much of a distance sampling alone explains, and
 * the aggregation of per-run figures. Formulas follow
 * shared/reference/oracle-method.md; the empirical floor is ours.
 *
 * A key is a whole stack, leaf first, frames "qualname:lineno" joined by
 * ';'. Weights are doubles so the same map holds sample counts and the
 * seconds of a snippet's measured ground truth.
 */
#ifndef ORACLE_STATS_H
#define ORACLE_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct diag;
struct keydist;

struct keydist *keydist_new(void);
void keydist_free(struct keydist *kd);
void keydist_clear(struct keydist *kd);

/* Add w to key's weight (creating it at 0). Returns the map's own copy of
 * the key, stable until clear/free, or NULL when out of memory. */
const char *keydist_add(struct keydist *kd, const char *key, double w);
double keydist_get(const struct keydist *kd, const char *key);
double keydist_total(const struct keydist *kd);
size_t keydist_nkeys(const struct keydist *kd);

/* Iterate: start with *it = 0; returns false when done. Order is the hash
 * table's, i.e. unspecified. */
bool keydist_next(const struct keydist *kd, size_t *it, const char **key, double *w);

/* out += in with every frame's ":lineno" removed ("a:3;b:9" -> "a;b"), so
 * that a line error and a structure error can be told apart. 0 or -1. */
int keydist_fn_only(const struct keydist *in, struct keydist *out);

/* The function-only form of one key into buf (truncated to size). */
void oracle_key_fn_only(const char *key, char *buf, size_t size);

/* Load a snippet's BPFPY_TRUTH file, {"phase_key": seconds, ...}, adding
 * each phase to kd. Malformed JSON or a non-number value is an error that
 * names the file (EXIT_FAIL). */
int keydist_load_truth(struct keydist *kd, const char *path, struct diag *d);

/* ½ Σ_k |p(k) − q(k)| over the union of keys, p and q normalised by their
 * totals. 0 when both are empty, 1 when exactly one is. */
double oracle_tvd(const struct keydist *p, const struct keydist *q);

/* The IID floor of oracle-method.md:
 *   ½ · sqrt(2/π) · sqrt(1/n_mode + 1/n_ref) · Σ_k sqrt(p_k (1 − p_k))
 * with p_k the reference's frequencies. n_ref may be INFINITY for a
 * reference without sampling noise (a measured ground truth). */
double oracle_tvd_floor(const struct keydist *ref, double n_mode, double n_ref);

/* Block length used by oracle_tvd_noise for n reference samples. */
size_t oracle_noise_block(size_t n);

/* The empirical floor: the reference's samples, in time order, dealt to
 * halves A and B in alternating blocks of `block` samples (0: choose with
 * oracle_noise_block), TVD(A, B) scaled to the sizes being compared by
 *   sqrt((1/n_mode + 1/n_ref) / (1/n_A + 1/n_B)).
 * Returns NAN when there are fewer than two blocks or no memory. */
double oracle_tvd_noise(const char *const *seq, size_t n, size_t block, double n_mode,
			double n_ref);

/* Per-run figures over runs: mean ± sample stdev (n − 1; 0 for one run),
 * median. NaN inputs are skipped (a run that produced no figure). */
struct oracle_agg {
	size_t n;
	double mean;
	double sd;
	double median;
};
void oracle_aggregate(const double *x, size_t n, struct oracle_agg *out);

/*
 * Tests of a difference between two runs (the regression gate, issue 27;
 * docs/oracle-gate.md). Every p-value is two-sided; the caller reads the
 * direction from the sign of the difference.
 */

/* Fisher's exact test of x1/n1 against x2/n2 (a 2x2 table): the sum of
 * the hypergeometric probabilities of every table with the same margins
 * that is no more likely than the one observed. 1 when both n are 0. */
double oracle_fisher_p(uint64_t x1, uint64_t n1, uint64_t x2, uint64_t n2);

/* The regularised incomplete beta function I_x(a, b) (continued fraction,
 * Lentz's method), for the Student t distribution below. */
double oracle_betai(double a, double b, double x);

/* Two-sided p of Student's t with df degrees of freedom: P(|T| >= |t|). */
double oracle_t_p2(double t, double df);

/* Welch's unequal-variance t test of mean m2 (sd s2, n2 values) against
 * m1 (s1, n1): the t statistic (positive when m2 > m1), the
 * Welch-Satterthwaite df, the two-sided p into the pointers (any may be
 * NULL). Returns the p; NAN when a side has fewer than 2 values or both
 * variances are 0 (p 1 then if the means are equal, 0 if not). */
double oracle_welch(double m1, double s1, double n1, double m2, double s2, double n2, double *t,
		    double *df);

/* Two-sided normal p, P(|Z| >= |z|), and the standard normal quantile
 * (0 < q < 1). */
double oracle_norm_p2(double z);
double oracle_norm_q(double q);

/* Holm's step-down correction of n p-values: adj[i] the adjusted p of
 * p[i] (reject at alpha when adj[i] <= alpha). NAN p-values are left out
 * of the family and their adj is NAN. */
void oracle_holm(const double *p, size_t n, double *adj);

/* The smallest rise of a proportion p1 (0..1) that two samples of n1 and
 * n2 detect with probability power in a two-sided test at level alpha:
 * Cohen's arcsine form, p2 = sin^2(asin(sqrt p1) + (z_{1-alpha/2} +
 * z_power) * sqrt(1/n1 + 1/n2) / 2). Returns p2 - p1 (1 - p1 at most). */
double oracle_mdd_prop(double p1, double n1, double n2, double alpha, double power);

/* The smallest difference of means a test of standard error se detects
 * with probability power at level alpha (normal approximation). */
double oracle_mdd_se(double se, double alpha, double power);

/* Block bootstrap of tvd_excess (raw TVD less the IID floor) between a
 * mode and its reference, each given as its time blocks (keydists of
 * consecutive samples): reps resamples, drawing as many blocks as there
 * are with replacement on both sides, the statistic recomputed each time.
 * Returns the resamples' standard deviation, the figure's standard error
 * (consecutive samples are correlated, so blocks, not samples, are drawn);
 * NAN with fewer than 2 blocks a side, or no memory. floor 0: raw TVD. */
double oracle_tvd_boot_se(struct keydist *const *mode, size_t nmode, struct keydist *const *ref,
			  size_t nref, int floor, int reps, uint64_t seed);

#endif /* ORACLE_STATS_H */
