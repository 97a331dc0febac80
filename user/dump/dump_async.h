/* SPDX-License-Identifier: MIT */
/* dump --async: the asyncio task tree of a process (dump_async.c). */
#ifndef DUMP_ASYNC_H
#define DUMP_ASYNC_H

#include "diag.h"
#include "py_process.h"

/* Print p's task tree (text, or JSON with json), the target stopped for
 * the read unless nonblocking. Returns an exit code (README "Exit codes"). */
int dump_async(struct py_process *p, int nonblocking, int json, struct diag *d);

#endif /* DUMP_ASYNC_H */
