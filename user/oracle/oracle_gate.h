/* SPDX-License-Identifier: MIT */
/*
 * The slowdown measurement (issue 13, item 3): a mode's window on one
 * target is cut into npairs pairs of equal sub-windows, sampling on in one
 * of each pair and off in the other (the order drawn per pair, so that a
 * drift of the target's pace does not favour either), and the target's
 * progress counter read at every boundary. The slowdown is the mean over
 * pairs of 100 * (1 - on rate / off rate), with a Student t 95% interval on
 * those paired figures: the off half of a pair is the same target, a few
 * tenths of a second away, so the machine's other load mostly cancels.
 *
 * A thread keeps the boundaries (the mode's own loop may sleep through
 * one); the mode asks oracle_gate_on() before each attempt, or is told
 * through toggle (the bpf perf events, an external tool's SIGSTOP/SIGCONT).
 */
#ifndef ORACLE_GATE_H
#define ORACLE_GATE_H

#include <pthread.h>
#include <stdint.h>

/* 256: make bench's 10 kHz rows use 192 pairs, to bring the walk's
 * share (bpf - bpf-timer, about 1.5 points) within an interval of about
 * +-1 point; 64 gave +-1.4-1.6. */
#define ORACLE_GATE_MAX_PAIRS 256
/* Sub-window length when the pairs are not given. Measured on this 2-CPU
 * VM under other load: over 3 s, 30 pairs of 50 ms gave a 95% half-width
 * of 8 points where 3 pairs of 0.5 s gave 32 -- the pace swings are
 * slower than 50 ms, so neighbours cancel them. */
#define ORACLE_GATE_AUTO_S 0.05

/* Turn sampling on (1) or off (0); called from the gate's thread. */
typedef void (*oracle_gate_fn)(void *ctx, int on);

struct oracle_gate {
	double start, win;
	int npairs;
	unsigned char first_on[ORACLE_GATE_MAX_PAIRS];
	double t[2 * ORACLE_GATE_MAX_PAIRS + 1];
	uint64_t prog[2 * ORACLE_GATE_MAX_PAIRS + 1];
	int nb;				   /* boundaries recorded */
	volatile const uint64_t *progress; /* NULL: no counter, no slowdown */
	oracle_gate_fn toggle;
	void *ctx;
	pthread_t th;
	int started;
	volatile int on, quit;
	int end_on;  /* what toggle is told once the window is over (default 0) */
	double on_s; /* seconds sampling was on, once stopped */
};

/* Set up npairs pairs over [start, start + duration); the order of each
 * pair comes from seed; npairs 0: sub-windows of ORACLE_GATE_AUTO_S.
 * toggle may be NULL. */
void oracle_gate_init(struct oracle_gate *g, double start, double duration, int npairs,
		      uint64_t seed, volatile const uint64_t *progress, oracle_gate_fn toggle,
		      void *ctx);
/* Start the boundary thread: 0, or -1 with errno. */
int oracle_gate_start(struct oracle_gate *g);
/* Whether sampling is on now (cheap: a load). */
static inline int oracle_gate_on(const struct oracle_gate *g)
{
	return __atomic_load_n(&g->on, __ATOMIC_ACQUIRE);
}
/* End the thread (early if the window ended early), sampling left off. */
void oracle_gate_stop(struct oracle_gate *g);
/* Mean slowdown% over complete pairs into *mean, the 95% half-width into
 * *ci95 (NAN below 2 pairs), the mean on and off progress rates; returns
 * the number of pairs used (0: no counter, or none complete). */
int oracle_gate_slowdown(const struct oracle_gate *g, double *mean, double *ci95, double *on_rate,
			 double *off_rate);
/* Pair p's on and off rates (NAN when incomplete). */
void oracle_gate_pair(const struct oracle_gate *g, int p, double *on, double *off);
/* Student t quantile 0.975 for df degrees of freedom. */
double oracle_t975(int df);

/*
 * External tools are not paused: a stopped tool catches up the samples it
 * missed (Tachyon's loop samples back to back until its schedule is met),
 * and a blocking one may be stopped while it holds the target. Their
 * slowdown compares, on the same target, a window with the tool absent
 * (just before it is started) with the window it says it sampled (from its
 * 'S' line, or given after the fact by 'S late'), both cut into
 * ORACLE_GATE_AUTO_S sub-windows; the interval is Welch's on the two sets of
 * sub-window rates (unpaired, so wider). A log of the progress counter
 * every PLOG_STEP_S gives the rate over any span after the fact.
 */
#define ORACLE_PLOG_MAX 8192
struct oracle_plog {
	volatile const uint64_t *progress;
	double t[ORACLE_PLOG_MAX];
	uint64_t v[ORACLE_PLOG_MAX];
	int n;
	pthread_t th;
	int started;
	volatile int quit;
};
/* Start logging (0, or -1 with errno); NULL progress logs nothing. */
int oracle_plog_start(struct oracle_plog *l, volatile const uint64_t *progress);
void oracle_plog_stop(struct oracle_plog *l);
/* Slowdown% of [on0, on1) against [off0, off1), 95% half-width into *ci95;
 * the mean rates. 0, or -1 when a span is not in the log. */
int oracle_plog_slowdown(const struct oracle_plog *l, double off0, double off1, double on0,
			 double on1, double *mean, double *ci95, double *on_rate, double *off_rate);

#endif /* ORACLE_GATE_H */
