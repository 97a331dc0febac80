/* SPDX-License-Identifier: MIT */
/*
 * A case's rules: which stacks its snippet can possibly show, what share of
 * the time each part should take, and which phases of its measured ground
 * truth map to which frames. The format is documented, with examples, in
 * snippets/README.md; in short, one directive a line:
 *
 *   allow [label] PATTERN        a possible stack (root first, anchored)
 *   deny  [label] PATTERN        an impossible one, checked first
 *   family NAME ... end          rules of threads bound to family NAME
 *   if python >= 3.12 ... else ... endif
 *   expect ATOM SHARE [tol T]    share of stacks holding a frame like ATOM
 *   truth KEY [ATOM]             BPFPY_TRUTH phase KEY is time in ATOM
 *   opcodes                      the modes name each sample's instruction
 *
 * A case with no allow and no deny rule has no impossibility check.
 */
#ifndef RULES_H
#define RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct diag;
struct rules;
struct rules_state;
struct rule_atom;

/* One frame as the sampler reports it. name: qualname (3.11+) or co_name;
 * file: co_filename as recorded (any directory, NULL or "" if unknown);
 * line: 0 if unknown. task: an async sampler's [task NAME] mark (record
 * --async's chains, docs/async.md): name is the task's NAME, file and line
 * are not used; only ".", "*" and "task:GLOB" items match it. op: an
 * instruction mark (record --opcodes' [op NAME] or [op NAME (BASE)],
 * docs/opcodes.md): name is NAME, without the base; only ".", "*" and
 * "op:GLOB" items match it; NULL name: the sampler reported no instruction,
 * which an allow rule's op item takes and a deny rule's does not. */
struct rule_frame {
	const char *name;
	const char *file;
	int line;
	int task;
	int op;
};

/* Parse path. The snippet's own file, the one plain names refer to, is the
 * basename of path with ".rules" replaced by ".py". Errors name path:line and
 * what was expected (EXIT_USAGE); an unreadable file is EXIT_USAGE too. */
int rules_load(const char *path, struct rules **out, struct diag *d);

/* Parse text; origin names it in messages, own_file is the snippet's file
 * (a basename). */
int rules_parse(const char *text, const char *origin, const char *own_file, struct rules **out,
		struct diag *d);

void rules_free(struct rules *r);

const char *rules_own_file(const struct rules *r);

/* Whether the case's rules say "opcodes": its samples are to carry an
 * instruction mark at their leaf, which its rules judge (op:GLOB items). */
bool rules_opcodes(const struct rules *r);

/* Whether any allow or deny rule applies to this version: false for the
 * distribution-only cases, whose stacks are then all possible. */
bool rules_has_checks(const struct rules *r, unsigned version_hex);

/* Whether the rules bind threads to families. Without families a verdict
 * depends on the stack alone and may be cached by stack. */
bool rules_has_families(const struct rules *r);

/* Per-run state: the family each thread id was bound to on first sight. */
struct rules_state *rules_state_new(void);
void rules_state_reset(struct rules_state *st);
void rules_state_free(struct rules_state *st);

/* The matcher's work so far on st (frames tested and positions visited):
 * at most about 2·(k+1)·(n+1) per pattern of k items over n frames. For the
 * tests, which bound the work rather than the time. */
uint64_t rules_state_steps(const struct rules_state *st);

struct rule_verdict {
	bool possible;
	int line;	    /* line of the rule broken or closest missed, 0 if none */
	const char *family; /* the thread's family after this stack, NULL if none */
	char why[320];	    /* for the report: which rule, and where it failed */
};

/*
 * Is this stack possible? frames are leaf first (frames[0] is the running
 * one), n of them; tid is the OS thread id; version_hex the target's
 * PY_VERSION_HEX (version conditions compare its major.minor). A thread not
 * yet in a family is bound to the first family whose allow rules match.
 * v may be NULL. Needs st only when rules_has_families(); st may be NULL
 * otherwise. Returns v->possible.
 */
bool rules_match(const struct rules *r, struct rules_state *st, const struct rule_frame *frames,
		 int n, int tid, unsigned version_hex, struct rule_verdict *v);

struct rule_expect {
	const char *what; /* the atom as written, e.g. "hot_a" */
	double share;
	double tol; /* < 0: no tolerance given */
	int line;
	const struct rule_atom *atom;
};

struct rule_truth {
	const char *key;  /* phase key in the BPFPY_TRUTH file */
	const char *what; /* the atom as written */
	int line;
	const struct rule_atom *atom;
};

/* The expectations / truth phases that apply to version_hex, in file order:
 * up to max pointers into out; returns how many apply. */
int rules_expects(const struct rules *r, unsigned version_hex, const struct rule_expect **out,
		  int max);
int rules_truths(const struct rules *r, unsigned version_hex, const struct rule_truth **out,
		 int max);

/* Whether any frame of the stack matches the expectation's atom. */
bool rules_expect_hit(const struct rules *r, const struct rule_expect *e,
		      const struct rule_frame *frames, int n);

/* The truth phase a stack belongs to: the index (into rules_truths' list
 * for the same version) of the first phase, in file order, whose atom
 * matches a frame of the stack; -1 if none (the stack is outside every
 * phase and left out of the truth comparison). */
int rules_truth_classify(const struct rules *r, unsigned version_hex,
			 const struct rule_frame *frames, int n);

#endif /* RULES_H */
