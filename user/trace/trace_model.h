/* SPDX-License-Identifier: MIT */
/*
 * What bpfpy trace keeps in memory: its probes, the events that reached
 * user space (stacks and strings interned, so a million events of a few
 * stacks cost a few arrays), and per location the BPF counters plus the
 * latencies of completed entry/return pairs. The writers (trace_out.c)
 * read it; cmd_trace.c fills it.
 */
#ifndef TRACE_MODEL_H
#define TRACE_MODEL_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "bpfpy.h"
#include "splice.h"

struct bpf_link;
struct diag;

enum trace_kind { TRACE_USDT, TRACE_UPROBE, TRACE_URETPROBE };

#define TRACE_NONE UINT32_MAX /* no string / no stack */
/* Frames of one hit's stack at most: the probe, then Python frames, or with
 * --native the spliced stack (user/native/splice.h: SPLICE_MAX_OUT). */
#define TRACE_MAX_FRAMES (1 + SPLICE_MAX_OUT)

struct trace_probe {
	int id;	  /* cookie in BPF, index in trace_data.probes */
	int kind; /* enum trace_kind */
	int role; /* enum trace_role */
	int pair; /* the other half of an entry/return pair, or -1 */
	char label[256];
	char provider[64], name[64]; /* USDT */
	char path[PATH_MAX];	     /* file to attach to, as we open it */
	char symbol[128];	     /* uprobes */
	uint64_t add, file_off;
	char argfmt[3];		/* per kept argument: 's' string, 'i' int, 'x' hex, 0 none */
	const char *argname[2]; /* names of the kept arguments */
	uint64_t semaphore;	/* USDT: semaphore in the target, 0 if none */
	struct bpf_link *link;	/* NULL while detached */
	/* The last saturation check's interval: hits at saturated locations
	 * and at the others, for the detach rule (cmd_trace.c). */
	uint64_t dsat, dopen;
	uint64_t detached_at_ns; /* its last detach, 0 if never */
	uint64_t cut_locs;	 /* locations below the threshold at that detach */
};

struct trace_event {
	uint64_t ts_ns;
	uint64_t code; /* leaf code object: with probe_id, the location */
	uint64_t args[2];
	uint32_t pid, tid;
	uint32_t probe_id;
	uint32_t stack; /* interned folded stack, root first, or TRACE_NONE */
	uint32_t str[2];
	uint32_t loc;  /* index into trace_data.locs */
	uint32_t leaf; /* interned leaf function name, or TRACE_NONE */
	uint32_t flags;
};

struct trace_loc {
	uint32_t probe_id;
	uint32_t name; /* interned "qualname (file:firstline)", TRACE_NONE until seen */
	uint64_t code;
	uint64_t hits, emitted, first_ns, saturated_ns; /* from BPF */
	uint64_t seen_hits;				/* hits at the last saturation check */
	uint32_t last_fold;				/* last event's profile stack */
	/* --native: the last hit's native frames between the location's
	 * Python frame and the probe, folded root first; TRACE_NONE if none. */
	uint32_t native_via;
	uint64_t *lat; /* latencies of completed pairs opened here, ns */
	size_t nlat, caplat;
};

struct strtab {
	char **s;
	uint32_t n, cap;
	uint32_t *slots; /* id + 1, 0 empty */
	uint32_t nslots;
};

struct open_call {
	uint32_t tid;
	uint32_t depth, cap;
	uint32_t *ev; /* open entry events, innermost last */
};

struct trace_data {
	pid_t pid;
	char comm[32], version[32];
	uint32_t threshold;
	double interval_s, rearm_s;
	double cutoff_pct; /* --cutoff: see cmd_trace.c's detach rule */
	struct trace_probe *probes;
	int nprobes;
	struct trace_event *ev;
	size_t nev, capev;
	uint64_t ev_dropped; /* out of memory: events not kept */
	struct strtab strs;
	struct trace_loc *locs;
	uint32_t nlocs, caplocs;
	uint32_t *loc_slots;
	uint32_t nloc_slots;
	struct open_call *open;
	uint32_t nopen;
	uint64_t t0_ns, t1_ns; /* CLOCK_MONOTONIC = bpf_ktime_get_ns() */
	uint64_t detached_ns;  /* total time with the probes detached */
	uint32_t ndetach, nrearm;
	uint64_t walk_errors, lost, no_python;
};

uint32_t strtab_intern(struct strtab *t, const char *s);
static inline const char *strtab_get(const struct strtab *t, uint32_t id)
{
	return id == TRACE_NONE ? "" : t->s[id];
}
void strtab_free(struct strtab *t);

/* The location (probe, code), created on first use. TRACE_NONE on ENOMEM. */
uint32_t trace_loc_get(struct trace_data *td, uint32_t probe_id, uint64_t code);

/* Keep one event; pairs it with its entry if it is a return. */
int trace_add_event(struct trace_data *td, const struct trace_event *e);

/* Forget the open calls opened by probe entry_id: after its detach their
 * returns will never come. -1: every open call. */
void trace_forget_open(struct trace_data *td, int entry_id);

void trace_data_free(struct trace_data *td);

/* Writers; 0 or -1 with d set. */
int trace_write_summary(FILE *f, struct trace_data *td, int top, struct diag *d);
/* names: the threads' names (profile_thread_name), or NULL for "tid N". */
struct profile;
int trace_write_chrome(FILE *f, struct trace_data *td, const struct profile *names, struct diag *d);

#endif /* TRACE_MODEL_H */
