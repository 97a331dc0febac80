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

#endif /* ORACLE_STATS_H */
