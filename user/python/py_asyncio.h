/* SPDX-License-Identifier: MIT */
/*
 * asyncio tasks of a live target, read out of process: which tasks exist,
 * their names and states, who awaits whom, and where each waiting task's
 * coroutine chain is suspended. For `dump --async` (target stopped) and
 * for `record --async`, whose samples carry the running task as the kernel
 * read it (struct task_rec) and take the awaiters' part of the chain from
 * here (docs/async.md says when that part is trusted).
 *
 * Layouts come from py_offsets (struct py_async); the reads of one task's
 * chain are bpf/task_walker.h's, the code the kernel runs. Everything read
 * is hostile: every list, set and chain is bounded, a cycle ends a walk,
 * and what was cut is counted in struct py_task_graph.
 */
#ifndef PY_ASYNCIO_H
#define PY_ASYNCIO_H

#include <stddef.h>
#include <stdint.h>

#include "bpfpy.h"
#include "diag.h"
#include "py_process.h"

#define PY_TASKS_MAX	  (1u << 17) /* tasks read per process */
#define PY_TASK_NAME_CAP  128	     /* bytes of a name kept, NUL included */
#define PY_TASK_FRAMES	  64	     /* links of one coroutine chain followed */
#define PY_TASK_SET_MAX	  (1u << 22) /* slots of one set (tasks, awaiters) scanned */
#define PY_TASK_TYPES	  32	     /* type objects whose kind is remembered */
#define PY_TASK_CHAIN_MAX 256	     /* tasks of one await chain, root included */

enum py_task_state {
	PY_TASK_PENDING = 0,
	PY_TASK_RUNNING,
	PY_TASK_DONE,
	PY_TASK_CANCELLED,
};

struct py_task {
	uint64_t addr, coro;
	uint64_t awaiter;   /* the awaiter followed: lowest address of them; 0 none */
	uint32_t nawaiters; /* tasks that await this one */
	uint32_t tid;	    /* running: the thread, as the target numbers it; 0 unknown */
	uint8_t state;	    /* enum py_task_state */
	uint8_t nframes;
	uint8_t frames_cut; /* the chain went on past PY_TASK_FRAMES, or looped */
	uint8_t awaited_by_is_set;
	/* Fields as read while stopped, for the edges and the names. */
	uint64_t name_obj, waiter, awaited_by, callback0;
	uint64_t waiter_type, callback0_type; /* 3.11-3.13 */
	char name[PY_TASK_NAME_CAP];	      /* py_asyncio_name(): "" before */
	/* Its coroutine chain, leaf (innermost await) first, as the walker
	 * records frames: instr the instruction pointer's byte offset from
	 * the code object, fingerprint 0 (read when named). */
	struct frame_rec frames[PY_TASK_FRAMES];
};

struct py_task_graph {
	struct py_task *v; /* sorted by addr */
	size_t n, cap;
	uint64_t found;	     /* task objects met, before the bound */
	uint64_t cut_tasks;  /* tasks past PY_TASKS_MAX, not read */
	uint64_t cut_sets;   /* sets or lists cut at PY_TASK_SET_MAX */
	uint64_t cut_chains; /* coroutine chains cut (too long, or a cycle) */
	uint64_t unreadable; /* tasks whose object could not be read */
	uint64_t bad_names;  /* names neither str nor int */
};

struct py_asyncio {
	struct async_config k; /* what the kernel gets (proc_config.async) */
	int ready;	       /* 1: layout known and (3.11-3.13) the module found */
	uint64_t task_type;    /* 3.11-3.13: asyncio's C Task type */
	uint64_t all_tasks, scheduled, eager, current; /* 3.11-3.13 module objects */
	struct {
		uint64_t type;
		uint8_t kind;
	} types[PY_TASK_TYPES];
	unsigned ntypes, next_type;
};

/*
 * The layout for p (py_async_offsets, with the .AsyncioDebug section of
 * the _asyncio module on 3.14, of the interpreter on 3.15) into
 * p->extra.async. Returns 0, or -1 with d set: exit 2 for 3.10 and older,
 * exit 1 when the section cannot be found (3.14: asyncio not imported yet
 * is not an error: 0 with a->ready 0, see py_asyncio_find).
 */
int py_asyncio_init(struct py_process *p, struct py_asyncio *a, struct diag *d);

/* Look again for what a late import of asyncio provides. Returns 1 when
 * a is ready (a->k filled for the kernel), 0 while not. Cheap to repeat. */
int py_asyncio_find(struct py_process *p, struct py_asyncio *a);

/* Every task of p now, into g (emptied first): addresses, states, who
 * awaits whom, coroutine chains, but not the names (a few reads each:
 * dump reads them after the target is resumed). Returns the task count,
 * or -1 with d set when p cannot be read at all. */
int py_asyncio_read(struct py_process *p, struct py_asyncio *a, struct py_task_graph *g,
		    struct diag *d);

/* The names of g's tasks (str, or Task-N for an int), escaped only when
 * printed; "Task at 0x…" where neither reads. */
void py_asyncio_name(struct py_process *p, struct py_asyncio *a, struct py_task_graph *g);

const struct py_task *py_task_find(const struct py_task_graph *g, uint64_t addr);

/* The running task of g whose coroutine frame (at coro + gen_iframe) is
 * the leafmost of one thread's frames, addrs[0..n) leaf first (as
 * stack_read_all_addrs gives them), its index in *idx; NULL when none is:
 * the thread runs no task of g, or is between a task's entry and its
 * coroutine's frame. What the kernel does on 3.11-3.13 (task_capture),
 * for a stack read while the target was stopped. */
const struct py_task *py_task_on_stack(const struct py_task_graph *g, uint16_t gen_iframe,
				       const __u64 *addrs, uint32_t n, uint32_t *idx);

/* The name of a task the kernel captured, from its copy of the name
 * object (raw, NULL when it copied none), else read now; "Task at 0x…"
 * when neither works. Returns out. */
const char *py_task_name_of(struct py_process *p, struct py_asyncio *a, uint64_t task,
			    const uint8_t *raw, char *out, size_t cap);

/* "pending", "running", "done", "cancelled". */
const char *py_task_state_name(int state);

void py_task_graph_free(struct py_task_graph *g);

#endif /* PY_ASYNCIO_H */
