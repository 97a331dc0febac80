// SPDX-License-Identifier: MIT
#include "cli_parse.h"

#include <argp.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <strings.h>

double parse_rate_hz(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v <= 0)
		return -1;
	if (*end == 'k' || *end == 'K') {
		v *= 1e3;
		end++;
	} else if (*end == 'm' || *end == 'M') {
		v *= 1e6;
		end++;
	}
	if (*end && strcasecmp(end, "hz"))
		return -1;
	return v;
}

int parse_pid_list(const char *s, pid_t *pids, int n, int max)
{
	const char *p = s;

	while (*p) {
		char *end;
		long v;

		errno = 0;
		v = strtol(p, &end, 10);
		if (errno || end == p || v <= 0 || v > 0x7fffffff || (*end && *end != ','))
			return -1;
		if (n >= max)
			return -1;
		pids[n++] = (pid_t)v;
		p = *end ? end + 1 : end;
	}
	return n;
}

double parse_seconds(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0)
		return -1;
	return v;
}

long cli_long(struct argp_state *state, const char *arg, long lo, long hi, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || *end || end == arg || v < lo || v > hi)
		argp_error(state, "%s must be %ld..%ld", what, lo, hi);
	return v;
}

enum { OPT_SUBPROCESSES = 0x5e1 };

static const struct argp_option target_sel_options[] = {
    {"pid", 'p', "PID[,PID...]", 0, "Processes to sample (repeatable)", 0},
    {"all", 'a', NULL, 0, "Every CPython process on the host, also those started later", 0},
    {"subprocesses", OPT_SUBPROCESSES, NULL, 0, "Also sample descendants of the targets", 0},
    {0},
};

static error_t target_sel_parse(int key, char *arg, struct argp_state *state)
{
	struct target_sel *t = state->input;

	switch (key) {
	case 'p':
		t->npids = parse_pid_list(arg, t->pids, t->npids, TARGET_SEL_MAX_PIDS);
		if (t->npids < 0)
			argp_error(state, "invalid PID list '%s' (at most %d PIDs)", arg,
				   TARGET_SEL_MAX_PIDS);
		break;
	case 'a':
		t->all = 1;
		break;
	case OPT_SUBPROCESSES:
		t->children = 1;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp target_sel_argp = {
    target_sel_options, target_sel_parse, NULL, NULL, NULL, NULL, NULL};
