/* SPDX-License-Identifier: MIT */
/*
 * Python's threading names, read out of process (no stop): the
 * interpreter's modules dict -> "threading" -> its dict -> "_active", a
 * dict {ident: Thread}, and of each Thread its _name and _native_id. See
 * README "Thread names" for the versions (3.8 to 3.15, every layout of
 * py_offsets' struct py_objlayout).
 *
 * Only the main interpreter's threading module is read: threads that run
 * in a subinterpreter keep their OS name.
 */
#ifndef PY_THREADS_H
#define PY_THREADS_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "py_process.h"
#include "pyobj.h"

/* Bytes of a name kept, NUL included: a longer name is cut at a character
 * and ends with an ellipsis (pystr_read). */
#define PY_TNAME_CAP 128
/* Threads named per process at most (threading._active entries read). */
#define PY_TNAMES_MAX 4096

struct py_tname {
	uint64_t ident; /* threading.get_ident(): the pthread_t, tstate->thread_id */
	uint32_t tid;	/* host tid (from _native_id), 0 if unknown */
	char name[PY_TNAME_CAP];
};

struct py_tnames {
	struct py_tname *v;
	size_t n, cap;
	uint64_t active;       /* threading._active found last time, 0 if none */
	struct pydict_pos pos; /* how much of it v holds */
	/* The last search found no "threading" in sys.modules: the modules
	 * dict's keys object and its entry count then. Every insertion (an
	 * import) bumps the count or replaces the keys, so while both stay
	 * the search is not repeated: it costs a read per module, and a
	 * process that never imports threading would pay it for each new
	 * thread's every retry (record's pending names). */
	uint64_t miss_keys, miss_nentries;
};

/*
 * Read every Python thread name of p now, replacing t's. Returns the
 * count (0: no threading module yet, a version whose layout is unknown,
 * or nothing readable), or -1 with d set when the process cannot be read
 * at all (ESRCH, EPERM). Malformed objects are skipped, never trusted.
 */
int py_tnames_read(struct py_process *p, struct py_tnames *t, struct diag *d);

/* Add the names of the threads _active gained since the last read (all of
 * them when it was rebuilt, or never read): what a thread seen for the
 * first time needs, at the cost of the threads added, not of all. Names
 * of threads that ended stay (a tid the kernel reuses meanwhile finds the
 * newer name: the last entry wins). Returns as py_tnames_read. */
int py_tnames_update(struct py_process *p, struct py_tnames *t, struct diag *d);

/* The name of host thread tid, or of the thread whose pthread_t is ident
 * (either may be 0), or NULL; the newest entry where several match. */
const char *py_tnames_find(const struct py_tnames *t, uint32_t tid, uint64_t ident);

/* As py_tnames_find by tid, with py_tnames_update first when tid is not
 * known yet: for a thread seen for the first time. NULL if none. */
const char *py_tnames_lookup(struct py_process *p, struct py_tnames *t, uint32_t tid);

/* An empty table that keeps what t learnt of where to look (threading's
 * _active, a search that found no threading): for a full read beside t
 * that must not pay those searches again. */
static inline struct py_tnames py_tnames_cues(const struct py_tnames *t)
{
	return (struct py_tnames){
	    .active = t->active, .miss_keys = t->miss_keys, .miss_nentries = t->miss_nentries};
}

void py_tnames_free(struct py_tnames *t);

#endif /* PY_THREADS_H */
