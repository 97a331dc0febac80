/* SPDX-License-Identifier: MIT */
/*
 * `bpfpy oracle --html FILE`: one self-contained page (no external
 * resources) with, per case, the table, each mode's distribution as bars
 * side by side and the impossible stacks each mode saw.
 */
#ifndef ORACLE_HTML_H
#define ORACLE_HTML_H

#include "oracle_run.h"

/* Write the page to path, which must not exist yet (the oracle has no
 * --force). 0, or -1 with d set. */
int oracle_write_html(const char *path, const struct oracle_plan *p, const struct oracle_python *py,
		      struct oracle_case_result *crs, int ncases, int ncpus, double other_load,
		      struct diag *d);

#endif /* ORACLE_HTML_H */
