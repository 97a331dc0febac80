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
