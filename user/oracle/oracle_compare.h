/* SPDX-License-Identifier: MIT */
/*
 * The oracle as a regression gate (issue 27; docs/oracle-gate.md): a run's
 * JSON compared with a baseline's, per case x mode x metric, with a test of
 * the difference fit for each figure, Holm's correction over the whole
 * family, and the smallest difference the runs could have detected.
 *   --compare BASE NEW  two JSON files, no target run
 *   --baseline BASE     run what BASE ran, then compare
 * Both exit EXIT_REGRESSION (9) when any row is significantly worse.
 */
#ifndef ORACLE_COMPARE_H
#define ORACLE_COMPARE_H

#include <stdio.h>

struct json_object;
struct diag;
struct oracle_opts;
struct oracle_python;

/* Blocks of consecutive samples (and attempts' costs) a window's JSON
 * keeps: the unit the gate resamples and averages. 40 blocks of a 3 s
 * window at 1 kHz are 75 ms each. */
#define ORACLE_BLOCKS	   40
#define ORACLE_JSON_FORMAT "bpfpy-oracle"
/* 2: seq_blocks, us_blocks and the machine facts, what the gate needs. */
#define ORACLE_JSON_VERSION 2
/* A baseline larger than this is refused (a 3-case 100 kHz run is ~2 MB). */
#define ORACLE_JSON_MAX (64L << 20)
/* Bootstrap resamples per tvd figure and side. */
#define ORACLE_BOOT_REPS 400

/* The facts a baseline must share with the run it is compared with. */
struct oracle_machine {
	char kernel[128], machine[72], cpu_model[128];
	char build_id[96]; /* the interpreter binary's GNU build-id, "" if none */
};
void oracle_machine(const struct oracle_python *py, struct oracle_machine *m);

/* Read a --json file as hostile input: a regular file of at most
 * ORACLE_JSON_MAX bytes, JSON of bounded depth, this format and version.
 * NULL with d set (EXIT_USAGE) otherwise. */
struct json_object *oracle_json_load(const char *path, struct diag *d);

/* --baseline: what BASE ran, for every option the command line left
 * unset (cases, modes, rate, duration, warmup, runs, Poisson, reference,
 * interpreter, pairs). Strings point into base. */
int oracle_baseline_opts(struct json_object *base, struct oracle_opts *o, const char **snippets,
			 const char **modes, struct diag *d);

/* The header facts of base and cur that differ and make a comparison
 * meaningless (interpreter build, rate, clock, reference, machine kind):
 * refused, naming each, unless o->force. 0, or -1 with d (EXIT_USAGE). */
int oracle_gate_match(struct json_object *base, struct json_object *cur,
		      const struct oracle_opts *o, struct diag *d);

/* The report on f (and o->junit): returns the rows found worse, or -1
 * with d set. */
int oracle_gate(FILE *f, const char *base_name, struct json_object *base, const char *cur_name,
		struct json_object *cur, const struct oracle_opts *o, struct diag *d);

#endif /* ORACLE_COMPARE_H */
