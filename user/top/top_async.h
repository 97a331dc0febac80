/* SPDX-License-Identifier: MIT */
/* top --async: rows per task chain (top_async.c). */
#ifndef TOP_ASYNC_H
#define TOP_ASYNC_H

#include "profile.h"

/* The task-chain rows of p (stacks composed by async_compose), at most
 * rows_max, each line at most cols columns and ended by eol. */
void top_async_rows(const struct profile *p, int rows_max, int cols, const char *eol);

#endif /* TOP_ASYNC_H */
