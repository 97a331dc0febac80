/* SPDX-License-Identifier: MIT */
/*
 * The pure pieces of `bpfpy oracle`, kept apart so unit tests can pin them
 * down: the sampling schedule, the stack key, and the line protocol of
 * external samplers.
 */
#ifndef ORACLE_SCHED_H
#define ORACLE_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rules.h"

/*
 * Arrival times, absolute (seconds on any clock), from start to deadline.
 * Regular: start + i/rate. Poisson: exponential gaps of mean 1/rate, each
 * added to the previous arrival -- never to the time the sampler got there,
 * so a slow sample does not push the schedule back (late arrivals are then
 * taken at once, as the original does). rate <= 0 means "as fast as
 * possible": every arrival is start, i.e. already due.
 */
struct oracle_sched {
	double start, deadline, rate_hz, next;
	int poisson;
	uint64_t rng;
	uint64_t n; /* arrivals handed out */
};

void oracle_sched_init(struct oracle_sched *s, double start, double duration, double rate_hz,
		       int poisson, uint64_t seed);
/* The next arrival into *t; false once it would be at or past the deadline
 * (that arrival is never handed out). */
bool oracle_sched_next(struct oracle_sched *s, double *t);
/* Poisson only: later gaps have mean 1/rate_hz (rate_hz > 0); the arrival
 * already drawn stays. A reference that adapts its rate to what its own
 * samples cost (ptrace-low) stays a process whose times do not depend on
 * the target's state. Ignored for a regular schedule. */
void oracle_sched_set_rate(struct oracle_sched *s, double rate_hz);
/* A uniform double in (0, 1] from the schedule's generator (splitmix64). */
double oracle_sched_uniform(uint64_t *state);

/*
 * A stack's key, as oracle-method.md defines it: the whole stack, leaf
 * first, each frame "qualname:lineno", joined by ';' -- no file, no thread.
 * A frame whose line is unknown (<= 0) is written "qualname:?", so that it
 * never poses as a line. A task mark (rule_frame.task) is "[task NAME]",
 * "[task Task-N]" for asyncio's numbered name of an unnamed task.
 * ';' inside a name (it cannot happen in CPython,
 * but an external sampler may send anything) becomes ','. Returns the
 * length, or -1 when buf is too small (the key is then cut, still
 * terminated).
 */
int oracle_key_build(const struct rule_frame *frames, int n, char *buf, size_t size);

/*
 * One line of an external sampler's output (protocol in cmd_oracle.c's
 * --help and scripts/oracle_cpython_unwinder.py):
 *   [tid=N ]f1;f2;...;fk   a stack, ROOT FIRST (the collapsed-stack order),
 *                          each f "qualname[:lineno][@file]"; lineno is
 *                          digits or '?' (unknown); "@file" needs the
 *                          ":lineno" before it (so "a@b" is a name), and
 *                          splits at the first ":lineno@" (a file may hold
 *                          '@'). In name and file, %XX is the byte XX: a
 *                          sampler writes ';' '@' '%' and line breaks so.
 *                          A frame "[task NAME]" (a literal '[', no line,
 *                          no file) is an async sampler's task mark: the
 *                          frames rootward of it up to the next mark are
 *                          where task NAME is suspended (docs/async.md);
 *                          NAME is %XX-escaped like a name, and a trailing
 *                          " (N awaiters)" or " (N parents)" is dropped. A
 *                          function whose name starts with '[' is written
 *                          %5B.
 *   E [text]               a failed attempt
 *   . [US]                 end of the attempt holding the stacks above; US,
 *                          optional, is what that attempt cost the sampler
 *   # text, empty lines    ignored
 * A tool that never prints '.' makes every stack line one attempt.
 */
enum ext_kind { EXT_SKIP, EXT_STACK, EXT_ERROR, EXT_END };

struct ext_line {
	enum ext_kind kind;
	int tid;	  /* 0 when not given */
	double us;	  /* EXT_END: the attempt's cost, NAN when not given */
	int nframes;	  /* EXT_STACK: frames, LEAF FIRST after parsing */
	const char *text; /* EXT_ERROR: the message */
};

/* Cut a task name's " (N awaiters)" (record --async) or " (N parents)"
 * (Tachyon) in place: samplers that count awaiters and samplers that do
 * not then key a chain alike. */
void oracle_task_name_norm(char *name);

/* The frames of a task chain the oracle keys and judges: fr[0..n) leaf
 * first, cut after its rootmost task mark, so that the event loop's frames
 * below the root task (which record --async keeps, and CPython's async
 * unwinder never reports) are no part of the key. A stack without a mark
 * is kept whole. Returns the frame count kept. */
int oracle_task_chain_len(const struct rule_frame *fr, int n);

/* Parse line in place (names and files point into it; file NULL when not
 * given). frames gets up to max frames, leaf first; a deeper stack keeps its
 * leaf end. Returns the kind. */
enum ext_kind oracle_ext_parse(char *line, struct ext_line *out, struct rule_frame *frames,
			       int max);

#endif /* ORACLE_SCHED_H */
