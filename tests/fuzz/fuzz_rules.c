// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the oracle's rules parser and matcher (user/oracle/rules.c).
 *
 * Input: rules text, optionally followed by a NUL and a stack description
 * ("name@file:line;name;..." root first) that is matched against the parsed
 * rules, so the fuzzer drives the matcher too. Without a stack part a few
 * fixed stacks are matched. The matcher's work must stay linear: each
 * pattern of k items costs at most 2·(k+1)·(n+1) steps over n frames, a
 * rule is tried at most 4 times a verdict, and the items and rules of a
 * file number fewer than its bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "rules.h"

#define MAX_FRAMES 2048

static struct rule_frame frames[MAX_FRAMES];

/* Fill frames (leaf first) from "a@f:1;b;c" (root first), in place. */
static int parse_stack(char *s, struct rule_frame *out, int max)
{
	struct rule_frame tmp[MAX_FRAMES];
	int n = 0;
	char *save = NULL;

	for (char *tok = strtok_r(s, ";", &save); tok && n < max;
	     tok = strtok_r(NULL, ";", &save)) {
		char *at = strchr(tok, '@'), *colon;

		size_t len = strlen(tok);

		tmp[n].name = tok;
		tmp[n].file = NULL;
		tmp[n].line = 0;
		tmp[n].task = 0;
		tmp[n].op = 0;
		/* "[task NAME]": a task frame, as oracle_sched.c makes them, so
		 * task:GLOB items are fuzzed against task frames too; "[op NAME]"
		 * an instruction mark, for op:GLOB items. */
		if (len > 7 && !strncmp(tok, "[task ", 6) && tok[len - 1] == ']') {
			tok[len - 1] = '\0';
			tmp[n].name = tok + 6;
			tmp[n].task = 1;
			at = NULL;
		} else if (len > 5 && !strncmp(tok, "[op ", 4) && tok[len - 1] == ']') {
			tok[len - 1] = '\0';
			tmp[n].name = tok + 4;
			tmp[n].op = 1;
			at = NULL;
		}
		if (at) {
			*at = '\0';
			tmp[n].file = at + 1;
			colon = strrchr(at + 1, ':');
			if (colon) {
				*colon = '\0';
				tmp[n].line = atoi(colon + 1);
			}
		}
		n++;
	}
	for (int i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	return n;
}

static size_t text_len; /* bytes of the rules text, for the work bound */

static void exercise(const struct rules *r, struct rules_state *st, const struct rule_frame *f,
		     int n, int tid)
{
	static const unsigned versions[] = {0x030801f0, 0x030b07f0, 0x030c01f0, 0x030f02f0};
	const struct rule_expect *ex[16];
	const struct rule_truth *tr[16];
	struct rule_verdict v;

	for (size_t k = 0; k < sizeof(versions) / sizeof(versions[0]); k++) {
		unsigned ver = versions[k];
		int ne, nt;

		uint64_t before = rules_state_steps(st);

		rules_has_checks(r, ver);
		rules_match(r, st, f, n, tid, ver, &v);
		if (rules_state_steps(st) - before > 8ull * (text_len + 1) * ((uint64_t)n + 2))
			abort();
		/* The verdict's text is a C string, always. */
		if (memchr(v.why, '\0', sizeof(v.why)) == NULL)
			abort();
		ne = rules_expects(r, ver, ex, 16);
		for (int i = 0; i < ne && i < 16; i++)
			rules_expect_hit(r, ex[i], f, n);
		nt = rules_truths(r, ver, tr, 16);
		(void)nt;
		rules_truth_classify(r, ver, f, n);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *stack;
	struct rules *r = NULL;
	struct rules_state *st;
	struct diag d;
	size_t tlen;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	tlen = strlen(text);
	text_len = tlen;
	stack = tlen < size ? text + tlen + 1 : NULL;
	memset(&d, 0, sizeof(d));
	if (rules_parse(text, "fuzz.rules", "fuzz.py", &r, &d)) {
		if (!d.msg[0])
			abort(); /* every refusal says why */
		free(text);
		return 0;
	}
	rules_own_file(r);
	rules_has_families(r);
	st = rules_state_new();
	if (st) {
		if (stack) {
			int n = parse_stack(stack, frames, MAX_FRAMES);

			exercise(r, st, frames, n, 1);
			exercise(r, st, frames, n, 2);
		}
		{
			struct rule_frame f[3] = {{"leaf", "fuzz.py", 3, 0, 0},
						  {"main", "fuzz.py", 2, 0, 0},
						  {"<module>", "fuzz.py", 1, 0, 0}};

			exercise(r, st, f, 3, 1);
			exercise(r, st, f, 0, 3);
		}
		rules_state_reset(st);
		rules_state_free(st);
	}
	rules_free(r);
	free(text);
	return 0;
}
