// SPDX-License-Identifier: MIT
/*
 * bpfpy trace: USDT probes and uprobes on a CPython process, each hit with
 * the firing thread's Python stack, switched off where they have seen
 * enough (see bpf/tracer.bpf.c for the per-location threshold).
 *
 * This file owns the loop: drain the ring buffer, symbolize, and once per
 * --interval read the location counters: when every location that fired in
 * the interval is saturated, detach everything (USDT semaphores then drop to
 * zero and CPython skips even the probe's branch); --rearm attaches again.
 */
#include <argp.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "monotime.h"
#include "cli_parse.h"
#include "code_cache.h"
#include "commands.h"
#include "diag.h"
#include "profile.h"
#include "py_threads.h"
#include "signals.h"
#include "py_process.h"
#include "proc.h"
#include "text_escape.h"
#include "trace_model.h"
#include "trace_probes.h"
#include "launch.h"
#include "native_symbols.h"
#include "native_tables.h"
#include "splice.h"

#include "bpf_loader.h"
#include "tracer.skel.h"

#define MAX_SPECS 64
#define POLL_MS	  20

struct trace_opts {
	pid_t pid;
	struct probe_spec specs[MAX_SPECS];
	int nspecs;
	int calls, list;
	long threshold;
	double interval, rearm, duration, cutoff;
	const char *output, *format;
	const struct profile_format *pformat; /* -f names a profile format */
	int force, top;
	unsigned max_depth;
	int verbose, quiet;
	int native; /* --native (--kernel is refused) */
	char **cmd; /* trace -- CMD ARGS...: launch it */
};

static const char doc[] =
    "Trace USDT probes and uprobes of a CPython process, with the Python stack at every "
    "hit.\v"
    "EVENTS. --usdt PROVIDER:NAME (PROVIDER defaults to python) on the interpreter's markers: "
    "function__entry/return (3.15; 3.11 only for calls from C), gc__start/done, "
    "import__find__load__start/done, audit; string arguments are read from the target. "
    "--uprobe BINARY:SYMBOL[+OFFSET] and --uretprobe BINARY:SYMBOL on any function of a file "
    "the target maps (BINARY: a path as in /proc/PID/maps, a file name, its stem such as "
    "libc or libpython3.12, or 'python' for the interpreter's file); a --uretprobe paired "
    "with an --uprobe on the same symbol gives the latency of each call. --calls traces "
    "every Python call and return with function__entry/return, and refuses interpreters "
    "that lack them. --list prints the probes the target's interpreter has.\n"
    "THRESHOLD. A location is a probe plus the Python code object it fired in. Its first N "
    "hits (--threshold N, default 500) are emitted with their stack; later hits are only "
    "counted in the kernel. A probe cannot be switched off for one location (its trap is "
    "paid at every location), so every --interval (default 1 s) each probe that fired is "
    "detached -- an entry/return pair together -- once the hits at its locations still "
    "below N were at most --cutoff PCT (default 1, 0: none) of its hits in that interval; "
    "those rare locations are cut off where they are ('N locations below the threshold cut "
    "off' on stderr and in the summary). Detached, a uprobe is removed and a USDT semaphore "
    "released, and the target runs at full speed; once every probe is detached, --rearm S "
    "attaches them all again after S seconds of rest. --threshold 0 traces every hit and "
    "never detaches. See docs/trace-deinstrumentation.md.\n"
    "OUTPUT (-f): summary (default: top locations by hits; emitted, counted, when saturated; "
    "call latency count/total/mean/p50/p99 for entry/return pairs), chrome (trace-event "
    "JSON for Perfetto or chrome://tracing: B/E slices per thread for pairs, instant events "
    "otherwise, arguments and the Python stack in args, the stack also as sf into stackFrames, "
    "process_name and thread_name metadata), or a profile format: " PROFILE_FORMATS_MARK
    " -- the hits as stacks with the probe as leaf frame, weighted by hits: counted-only "
    "hits go to their location's last stack. An existing -o path is refused without "
    "--force (exit 2); once written: 'bpfpy trace: wrote FILE (N samples, FORMAT)' on stderr "
    "(N: events for chrome and summary, stacks' hits for a profile format).\n"
    "NATIVE. --native unwinds the C stack of every emitted hit in the kernel, from the "
    "probe's registers, with the unwind tables and the splice of record --native (see bpfpy "
    "record --help): the stacks of every format then hold 'name (lib) [native]' frames "
    "between the Python ones, in true order, and the summary shows under each location the "
    "native frames between its Python frame and the probe ('via ...'). Hits only counted "
    "cost what they did. --kernel is refused (exit 2): a uprobe or USDT hit stops the thread "
    "at a user instruction, so there is no kernel stack under it (bpf_get_stack would give "
    "none); record --kernel samples kernel stacks.\n\n"
    "LAUNCH. bpfpy trace [OPTIONS] -- CMD ARGS... runs CMD as record -- CMD does (see "
    "bpfpy record --help): the probes are attached before its first bytecode, tracing "
    "ends when it exits, and bpfpy exits with its status (128+N for signal N).\n\n"
    "EXAMPLES:\n"
    "  sudo bpfpy trace -p 1234 --list\n"
    "  sudo bpfpy trace --calls -f chrome -o t.json -- python3.15 app.py\n"
    "  sudo bpfpy trace -p 1234 --calls --threshold 0 -d 5 -f chrome -o calls.json\n"
    "  sudo bpfpy trace -p 1234 --usdt python:gc__start -d 10\n"
    "  sudo bpfpy trace -p 1234 --uprobe libsqlite3:sqlite3_step --uretprobe "
    "libsqlite3:sqlite3_step\n"
    "  sudo bpfpy trace -p 1234 --calls --rearm 30 -f collapsed -o calls.folded\n"
    "  sudo bpfpy trace -p 1234 --native --uprobe libc:qsort -f collapsed\n\n" EXIT_CODES_DOC;

enum {
	OPT_USDT = 256,
	OPT_UPROBE,
	OPT_URETPROBE,
	OPT_CALLS,
	OPT_LIST,
	OPT_THRESHOLD,
	OPT_INTERVAL,
	OPT_REARM,
	OPT_CUTOFF,
	OPT_FORCE,
	OPT_TOP,
	OPT_MAX_DEPTH,
	OPT_NATIVE,
	OPT_KERNEL,
};

static const struct argp_option options[] = {
    {"pid", 'p', "PID", 0, "Process to trace", 0},
    {"usdt", OPT_USDT, "PROVIDER:NAME", 0, "A USDT probe of the interpreter (repeatable)", 0},
    {"uprobe", OPT_UPROBE, "BIN:SYM[+OFF]", 0, "A function entry (repeatable)", 0},
    {"uretprobe", OPT_URETPROBE, "BIN:SYM", 0, "A function return (repeatable)", 0},
    {"calls", OPT_CALLS, NULL, 0, "Every Python call and return (function__entry/return)", 0},
    {"list", OPT_LIST, NULL, 0, "List the target interpreter's probes and exit", 0},
    {"threshold", OPT_THRESHOLD, "N", 0, "Hits emitted per location (default 500; 0: all)", 0},
    {"interval", OPT_INTERVAL, "SECONDS", 0, "Saturation check period (default 1)", 0},
    {"rearm", OPT_REARM, "SECONDS", 0, "Re-attach this long after a detach", 0},
    {"cutoff", OPT_CUTOFF, "PCT", 0,
     "Detach a probe when at most PCT% of its hits are unsaturated (default 1)", 0},
    {"duration", 'd', "SECONDS", 0, "Stop after this long (default: at exit or Ctrl-C)", 0},
    {"output", 'o', "FILE", 0, "Write here (default stdout)", 0},
    {"format", 'f', "FORMAT", 0, PROFILE_FORMATS_MARK, 0},
    {"force", OPT_FORCE, NULL, 0, "Overwrite an existing output file", 0},
    {"top", OPT_TOP, "N", 0, "Summary: locations shown (default 30)", 0},
    {"max-depth", OPT_MAX_DEPTH, "N", 0, "Frames per stack at most (1..1024)", 0},
    {"native", OPT_NATIVE, NULL, 0, CLI_NATIVE_HELP, 0},
    {"kernel", OPT_KERNEL, NULL, 0, CLI_KERNEL_HELP, 0},
    {"quiet", 'q', NULL, 0, "No notes on stderr", 0},
    {"verbose", 'v', NULL, 0, "libbpf log on stderr", 0},
    {0},
};

static error_t parse(int key, char *arg, struct argp_state *state)
{
	struct trace_opts *o = state->input;
	char *end;

	switch (key) {
	case 'p':
		o->pid = (pid_t)cli_long(state, arg, 1, 1 << 30, "-p");
		break;
	case OPT_USDT:
	case OPT_UPROBE:
	case OPT_URETPROBE:
		if (o->nspecs == MAX_SPECS)
			argp_error(state, "at most %d probes", MAX_SPECS);
		o->specs[o->nspecs].kind = key == OPT_USDT     ? TRACE_USDT
					   : key == OPT_UPROBE ? TRACE_UPROBE
							       : TRACE_URETPROBE;
		o->specs[o->nspecs++].text = arg;
		break;
	case OPT_CALLS:
		o->calls = 1;
		break;
	case OPT_LIST:
		o->list = 1;
		break;
	case OPT_THRESHOLD:
		o->threshold = cli_long(state, arg, 0, 1L << 31, "--threshold");
		break;
	case OPT_INTERVAL:
		o->interval = parse_seconds(arg);
		if (o->interval < 0.01)
			argp_error(state, "invalid --interval '%s'", arg);
		break;
	case OPT_REARM:
		o->rearm = parse_seconds(arg);
		if (o->rearm <= 0)
			argp_error(state, "invalid --rearm '%s'", arg);
		break;
	case OPT_CUTOFF:
		o->cutoff = strtod(arg, &end);
		if (end == arg || *end || !(o->cutoff >= 0 && o->cutoff < 100))
			argp_error(state, "invalid --cutoff '%s' (0 <= PCT < 100)", arg);
		break;
	case 'd':
		o->duration = parse_seconds(arg);
		if (o->duration <= 0)
			argp_error(state, "invalid duration '%s'", arg);
		break;
	case 'o':
		o->output = arg;
		break;
	case 'f':
		/* trace's own event formats, or a profile format of the one
		 * table that an aggregated, weighted profile can be written in. */
		o->pformat = profile_format_find(arg, PROFILE_FMT_AGGREGATE);
		if (strcmp(arg, "summary") && strcmp(arg, "chrome") && !o->pformat) {
			char *names = profile_format_list(PROFILE_FMT_AGGREGATE, 0, 0);

			argp_error(state, "unknown format '%s' (summary, chrome, %s)", arg,
				   names ? names : "");
		}
		o->format = o->pformat ? o->pformat->name : arg;
		break;
	case OPT_FORCE:
		o->force = 1;
		break;
	case OPT_TOP:
		o->top = (int)cli_long(state, arg, 1, 1000000, "--top");
		break;
	case OPT_MAX_DEPTH:
		o->max_depth = (unsigned)cli_long(state, arg, 1, BPFPY_MAX_DEPTH, "--max-depth");
		break;
	case OPT_NATIVE:
		o->native = 1;
		break;
	case OPT_KERNEL:
		/* At once: no probe this command attaches can ever have one. */
		argp_error(state, "--kernel: a uprobe or USDT hit stops the thread at a user "
				  "instruction, so there is no kernel stack to take (record "
				  "--kernel samples kernel stacks)");
		break;
	case 'q':
		o->quiet = 1;
		break;
	case 'v':
		o->verbose = 1;
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s' (a command to launch goes after --)",
			   arg);
		break;
	case ARGP_KEY_END:
		if (!o->pid && !o->cmd)
			argp_error(state, "give -p PID or -- CMD ARGS...");
		if (o->pid && o->cmd)
			argp_error(state, "-- CMD launches its own target: no -p with it");
		if (!o->list && !o->calls && !o->nspecs)
			argp_error(state, "give --usdt, --uprobe, --uretprobe, --calls or --list");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

struct tctx {
	struct trace_opts *o;
	struct trace_data *td;
	struct py_process *proc;
	struct launch *launch; /* trace -- CMD, or NULL */
	struct code_cache *cache;
	struct sym_frame *frames;
	struct sym_frame *pframes; /* the probe, then frames: one profile sample */
	struct profile *prof;	   /* every hit, for the profile formats */
	struct py_tnames tnames;   /* threading names of the target */
	uint32_t named;		   /* of the profile's threads, how many were named */
	char *buf;		   /* folded stack being built */
	size_t buflen;
	/* --native: the tables the tracer unwinds with, naming, splicing */
	struct native_tables *nt;
	struct native_syms *ns;
	struct splice_scratch *sc;
	uint64_t splice_causes[SPLICE__COUNT];
};

/* Frames f[from..to) (leaf first) as one folded line, root first, each
 * label one field: the one label of every folded output, sanitized. */
static void fold_frames(char *p, char *end, const struct sym_frame *f, uint32_t from, uint32_t to)
{
	char raw[1024];

	*p = 0;
	for (uint32_t i = to; i-- > from && p < end - 2;) {
		size_t n;

		profile_label(raw, sizeof(raw), f[i].name, f[i].file, f[i].line, f[i].kind, 0);
		n = text_escape(p, (size_t)(end - 1 - p), raw, TEXT_FOLDED);
		p += n < (size_t)(end - 1 - p) ? n : strlen(p);
		if (i > from)
			*p++ = ';';
		*p = 0;
	}
}

static uint32_t decode_arg(struct tctx *c, const struct trace_probe *tp, int i, uint64_t v)
{
	char s[512];

	if (tp->argfmt[i] != 's')
		return TRACE_NONE;
	if (trace_read_cstr(c->proc, v, s, sizeof(s)) < 0)
		snprintf(s, sizeof(s), "<unreadable 0x%llx>", (unsigned long long)v);
	return strtab_intern(&c->td->strs, s);
}

/* Threads the profile met for the first time get their names while they
 * live (the target may be gone when the output is written): the threading
 * name where it is read, else the OS name, as record gives them. Counted by
 * the profile's thread table, so a hit of a known thread pays nothing. */
static void name_new_threads(struct tctx *c)
{
	for (; c->named < c->prof->nthreads; c->named++) {
		const struct prof_thread *th = &c->prof->threads[c->named];
		const char *pyname = py_tnames_lookup(c->proc, &c->tnames, th->tid);
		char name[64];

		if (!pyname && proc_thread_comm((pid_t)th->pid, (pid_t)th->tid, name, sizeof(name)))
			continue;
		profile_set_thread_name(c->prof, th->pid, th->tid, pyname ? pyname : name);
	}
}

static int on_record(void *arg, void *data, size_t size)
{
	struct tctx *c = arg;
	const struct sample_hdr *h = data;
	const struct frame_rec *fr = (const struct frame_rec *)(h + 1);
	struct trace_data *td = c->td;
	struct trace_event e = {0};
	const struct trace_probe *tp;
	const struct sym_frame *st = c->frames; /* the stack, leaf first */
	uint32_t nst = h->nframes < BPFPY_MAX_DEPTH ? h->nframes : BPFPY_MAX_DEPTH, npy = nst;
	char *p = c->buf, *end = c->buf + c->buflen;

	if (size < sizeof(*h) ||
	    size < sizeof(*h) + (size_t)h->nframes * sizeof(*fr) +
		       ((size_t)h->nnative + h->nkernel) * sizeof(__u64) ||
	    !(h->flags & SAMPLE_TRACE) || h->probe_id >= (uint32_t)td->nprobes)
		return 0;
	if (c->nt) /* a library loaded since the attach: its table */
		native_tables_on_record(c->nt, h);
	tp = &td->probes[h->probe_id];
	e.ts_ns = h->ts_ns;
	e.pid = h->pid;
	e.tid = h->tid;
	e.probe_id = h->probe_id;
	e.flags = h->flags;
	e.args[0] = h->args[0];
	e.args[1] = h->args[1];
	e.code = h->nframes ? fr[0].code : 0;
	e.str[0] = decode_arg(c, tp, 0, h->args[0]);
	e.str[1] = decode_arg(c, tp, 1, h->args[1]);
	e.stack = e.leaf = TRACE_NONE;
	if (h->flags & SAMPLE_ERROR)
		td->walk_errors++;
	for (uint32_t i = 0; i < npy; i++)
		code_cache_symbolize(c->cache, &fr[i], &c->frames[i]);
	/* --native: one stack in true order, as record splices it. */
	if (c->ns && h->nnative && !(h->flags & SAMPLE_ERROR))
		splice_record(c->ns, c->sc, h, fr, c->frames, c->proc->bin.version_hex, &st, &nst,
			      c->splice_causes);
	if (nst > TRACE_MAX_FRAMES - 1)
		nst = TRACE_MAX_FRAMES - 1;
	*p = 0;
	if (h->flags & SAMPLE_TRUNCATED)
		p += snprintf(p, (size_t)(end - p), "%s;", PROFILE_TRUNCATED_NAME);
	fold_frames(p, end, st, 0, nst);
	if (nst) {
		e.stack = strtab_intern(&td->strs, c->buf);
		if (npy)
			e.leaf = strtab_intern(&td->strs, c->frames[0].name);
	}
	e.loc = trace_loc_get(td, e.probe_id, e.code);
	{
		/* Root first in the output, so the probe is the leaf. */
		struct sym_sample ps = {
		    .ts_ns = h->ts_ns,
		    .pid = h->pid,
		    .tid = h->tid,
		    .flags = nst ? h->flags & SAMPLE_TRUNCATED : 0,
		    .nframes = 1 + nst,
		    .frames = c->pframes,
		};
		char leaf[272];

		snprintf(leaf, sizeof(leaf), "[%s]", tp->label);
		c->pframes[0] = (struct sym_frame){.name = leaf};
		memcpy(c->pframes + 1, st, nst * sizeof(*st));
		if (!profile_add(c->prof, &ps) && e.loc != TRACE_NONE)
			td->locs[e.loc].last_fold = c->prof->last_stack;
		name_new_threads(c);
	}
	if (e.loc != TRACE_NONE && c->ns && npy) {
		/* The native frames above the location's Python frame. */
		uint32_t k = 0;

		while (k < nst && st[k].kind != FRAME_KIND_PYTHON)
			k++;
		if (k && k < nst)
			fold_frames(c->buf, end, st, 0, k);
		td->locs[e.loc].native_via =
		    k && k < nst ? strtab_intern(&td->strs, c->buf) : TRACE_NONE;
	}
	if (e.loc != TRACE_NONE && td->locs[e.loc].name == TRACE_NONE && npy) {
		snprintf(c->buf, c->buflen, "%s (%s:%d)", c->frames[0].name, c->frames[0].file,
			 c->frames[0].firstlineno);
		td->locs[e.loc].name = strtab_intern(&td->strs, c->buf);
	}
	trace_add_event(td, &e);
	code_cache_end_sample(c->cache);
	return 0;
}

/* Copy the BPF location counters into td and, per probe, split the hits
 * since the last call into those at saturated locations (dsat) and the
 * rest (dopen). Returns how many locations fired. */
static int sync_locs(struct tracer_bpf *skel, struct trace_data *td)
{
	int fd = bpf_map__fd(skel->maps.loc_stats), fired = 0;
	struct trace_loc_key key, next, *prev = NULL;
	struct trace_loc_stats st;

	for (int i = 0; i < td->nprobes; i++)
		td->probes[i].dsat = td->probes[i].dopen = 0;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &st))
			continue;
		uint32_t li = trace_loc_get(td, key.probe_id, key.code);
		struct trace_loc *l;

		if (li == TRACE_NONE || key.probe_id >= (uint32_t)td->nprobes)
			continue;
		l = &td->locs[li];
		l->hits = st.hits;
		l->emitted = st.emitted;
		l->first_ns = st.first_ns;
		l->saturated_ns = st.saturated_ns;
		if (l->hits > l->seen_hits) {
			struct trace_probe *tp = &td->probes[key.probe_id];

			fired++;
			if (td->threshold && l->hits >= td->threshold)
				tp->dsat += l->hits - l->seen_hits;
			else
				tp->dopen += l->hits - l->seen_hits;
		}
		l->seen_hits = l->hits;
	}
	return fired;
}

/*
 * The detach rule, per probe (an entry/return pair counts as one: they go
 * together, so the timeline never holds half a call). A probe cannot be
 * switched off for one location only -- its trap is paid by every hit at
 * every location -- so it goes when, over the last interval, it fired and
 * the hits at locations still below the threshold were at most --cutoff
 * percent of its hits (0: none at all). Those few locations then stop
 * where they are; the summary counts them as cut off. Without the cutoff,
 * one function called once a second keeps the probe of every call in.
 */
static int probe_done(const struct trace_data *td, int i, double cutoff_pct)
{
	const struct trace_probe *a = &td->probes[i];
	const struct trace_probe *b = a->pair >= 0 ? &td->probes[a->pair] : NULL;
	uint64_t sat = a->dsat + (b ? b->dsat : 0), open = a->dopen + (b ? b->dopen : 0);

	if (!sat && !open)
		return 0; /* idle: it costs nothing, and saturation is not known */
	return !open || (double)open * 100.0 <= cutoff_pct * (double)(sat + open);
}

static uint64_t count_cut(const struct trace_data *td, int probe_id)
{
	uint64_t n = 0;

	for (uint32_t k = 0; k < td->nlocs; k++)
		n += (int)td->locs[k].probe_id == probe_id && td->locs[k].hits &&
		     td->locs[k].hits < td->threshold;
	return n;
}

/* Detach every attached probe (pair) the rule lets go; returns how many
 * probes are still attached. */
static int detach_done(struct tctx *c, struct tracer_bpf *skel, struct ring_buffer *rb)
{
	struct trace_data *td = c->td;
	int drained = 0, left = 0;

	sync_locs(skel, td);
	for (int i = 0; i < td->nprobes; i++) {
		struct trace_probe *tp = &td->probes[i], *b;

		if (!tp->link || tp->role == TRACE_ROLE_RETURN ||
		    !probe_done(td, i, td->cutoff_pct))
			continue;
		if (!drained++) /* what fired before the detach still counts */
			ring_buffer__consume(rb);
		b = tp->pair >= 0 ? &td->probes[tp->pair] : NULL;
		/* Entry first: a return still in flight then pops its own bit. */
		trace_probe_detach_one(td, i);
		if (b)
			trace_probe_detach_one(td, b->id);
		if (tp->role == TRACE_ROLE_ENTRY)
			trace_forget_open(td, i);
		tp->detached_at_ns = mono_ns();
		tp->cut_locs = count_cut(td, i) + (b ? count_cut(td, b->id) : 0);
		if (b) {
			b->detached_at_ns = tp->detached_at_ns;
			b->cut_locs = 0;
		}
		if (!c->o->quiet)
			fprintf(stderr,
				"bpfpy trace: %s%s%s detached at %.2f s: saturated "
				"(%llu location%s below the threshold cut off)\n",
				tp->label, b ? " + " : "", b ? b->label : "",
				(tp->detached_at_ns - td->t0_ns) / 1e9,
				(unsigned long long)tp->cut_locs, tp->cut_locs == 1 ? "" : "s");
	}
	for (int i = 0; i < td->nprobes; i++)
		left += td->probes[i].link != NULL;
	return left;
}

static int target_alive(pid_t pid, unsigned long long starttime)
{
	return proc_starttime(pid) == starttime && starttime;
}

static void clear_pair_stacks(struct tracer_bpf *skel)
{
	int fd = bpf_map__fd(skel->maps.pair_stacks);
	__u32 k, next;

	while (!bpf_map_get_next_key(fd, NULL, &next)) {
		k = next;
		if (bpf_map_delete_elem(fd, &k))
			break;
	}
}

static int trace_loop(struct tctx *c, struct tracer_bpf *skel, struct ring_buffer *rb)
{
	struct trace_opts *o = c->o;
	struct trace_data *td = c->td;
	unsigned long long st = proc_starttime(td->pid);
	uint64_t now = mono_ns(), next_check = now + (uint64_t)(o->interval * 1e9);
	uint64_t deadline = o->duration > 0 ? now + (uint64_t)(o->duration * 1e9) : UINT64_MAX;
	uint64_t detached_at = 0;
	double grace = INFINITY;
	struct diag d = {0};

	while ((c->launch || !signals_stop_requested()) && now < deadline) {
		if (ring_buffer__consume(rb) == 0)
			usleep(POLL_MS * 1000);
		now = mono_ns();
		/* A launched command is our child: a zombie until reaped. */
		if (c->launch && launch_should_end(c->launch, now / 1e9, &grace, "trace", 0))
			break;
		if (now < next_check)
			continue;
		next_check = now + (uint64_t)(o->interval * 1e9);
		if (!target_alive(td->pid, st)) {
			if (!o->quiet)
				fprintf(stderr, "bpfpy trace: pid %d exited\n", td->pid);
			break;
		}
		if (!detached_at && td->threshold && !detach_done(c, skel, rb)) {
			trace_forget_open(td, -1);
			detached_at = mono_ns();
			td->ndetach++;
			if (!o->quiet)
				fprintf(stderr,
					"bpfpy trace: every probe saturated at %.2f s: "
					"probes detached%s\n",
					(detached_at - td->t0_ns) / 1e9,
					o->rearm > 0 ? "" : " (no --rearm: for good)");
		} else if (detached_at && o->rearm > 0 && now - detached_at >= o->rearm * 1e9) {
			clear_pair_stacks(skel);
			if (trace_probes_attach(td, skel->progs.trace_usdt,
						skel->progs.trace_uprobe,
						skel->progs.trace_uretprobe, &d))
				return diag_report(&d);
			td->detached_ns += now - detached_at;
			detached_at = 0;
			td->nrearm++;
			sync_locs(skel, td); /* new baseline: hits while detached are none */
		}
	}
	ring_buffer__consume(rb);
	now = mono_ns();
	if (detached_at)
		td->detached_ns += now - detached_at;
	td->t1_ns = now;
	sync_locs(skel, td);
	return EXIT_OK;
}

static void read_counters(struct tracer_bpf *skel, struct trace_data *td)
{
	uint64_t cnt[CNT__COUNT];

	if (bpf_loader_percpu_sum(bpf_map__fd(skel->maps.counters), CNT__COUNT, cnt))
		return;
	td->lost = cnt[CNT_LOST];
	td->no_python = cnt[CNT_NO_PYTHON];
}

/* --native, on stderr after the output: what the kernel unwound and what
 * the splice could not place (the same lines as record's). */
static void native_note(struct tctx *c)
{
	if (!c->nt || c->o->quiet)
		return;
	native_tables_summary(stderr, c->nt);
	splice_summary(stderr, c->ns, c->splice_causes);
}

/* Into of (opened before tracing began) or stdout. */
static int write_output(struct trace_opts *o, struct trace_data *td, struct profile *prof,
			struct out_file *of, struct diag *d)
{
	const char *fmt = o->format ? o->format : "summary";
	FILE *f = o->output ? of->f : stdout;
	uint64_t n = td->nev;
	int err;

	if (!strcmp(fmt, "chrome")) {
		err = trace_write_chrome(f, td, prof, d);
		n = td->nev;
	} else if (o->pformat) {
		/* Hits only counted in the kernel have no stack of their own;
		 * their location's code object is the leaf, so its last stack
		 * is the best stand-in and keeps the weights equal to the hits. */
		for (uint32_t i = 0; i < td->nlocs; i++) {
			const struct trace_loc *l = &td->locs[i];

			if (l->hits > l->emitted && l->last_fold != TRACE_NONE)
				profile_stack_add(prof, l->last_fold, l->hits - l->emitted);
		}
		profile_set_comm(prof, (uint32_t)td->pid, td->comm);
		err = profile_format_write(o->pformat, f, prof, NULL, d);
		n = prof->total;
	} else {
		err = trace_write_summary(f, td, o->top ? o->top : 30, d);
	}
	/* The table is worth having next to a timeline or folded stacks. */
	if (!err && strcmp(fmt, "summary") && !o->quiet)
		trace_write_summary(stderr, td, o->top ? o->top : 30, d);
	if (!o->output) {
		fflush(stdout);
		return err;
	}
	if (err) {
		out_file_abort(of);
		return -1;
	}
	if (out_file_commit(of, d))
		return -1;
	if (!o->quiet)
		out_file_wrote("trace", o->output, n, fmt);
	return 0;
}

static int open_tracer(struct tracer_bpf **out, struct tctx *c, struct diag *d)
{
	struct tracer_bpf *skel = tracer_bpf__open();
	struct trace_data *td = c->td;
	__u32 key = (__u32)td->pid;

	if (!skel)
		return bpf_loader_open_failed("tracer", d);
	*out = skel;
	skel->rodata->threshold = td->threshold;
	/* Off, the unwinder is dead code to the verifier: a hit costs what
	 * it did, and the rows array is not 32 MiB. */
	skel->rodata->want_native = !!c->o->native;
	if (!c->o->native)
		bpf_map__set_max_entries(skel->maps.native_rows, 1);
	bpf_map__set_max_entries(skel->maps.events, 16 << 20);
	if (bpf_loader_load(skel->skeleton, "tracer", d))
		return -1;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.proc_configs), &key, &c->proc->cfg, BPF_ANY))
		return diag_errno(d, errno, "pid %d: cannot register with the BPF tracer", td->pid);
	if (c->o->native) {
		c->nt = native_tables_new(bpf_map__fd(skel->maps.native_rows),
					  bpf_map__max_entries(skel->maps.native_rows),
					  bpf_map__fd(skel->maps.native_procs),
					  bpf_map__fd(skel->maps.native_counters), d);
		if (!c->nt)
			return -1;
		/* Without its tables the hits still come, their native stacks
		 * ending at once (flagged, counted). */
		if (native_tables_attach(c->nt, td->pid, d)) {
			diag_prefix(d, "warning: native stacks lost: ");
			diag_report(d);
		}
		/* Hits drained after the target exited are named all the same:
		 * its maps and files are read now, while it lives. */
		native_syms_prime(c->ns, td->pid);
	}
	for (int i = 0; i < td->nprobes; i++) {
		struct trace_probe_cfg pc = {.role = (__u32)td->probes[i].role};
		__u32 id = (__u32)i;

		if (bpf_map_update_elem(bpf_map__fd(skel->maps.probe_cfgs), &id, &pc, BPF_ANY))
			return diag_errno(d, errno, "cannot configure probe %d", i);
	}
	return 0;
}

/* --help: the profile formats come from the one format table. */
static char *help_filter(int key, const char *text, void *input)
{
	(void)input;
	if (key == 'f' && text && !strcmp(text, PROFILE_FORMATS_MARK)) {
		char *names = profile_format_list(PROFILE_FMT_AGGREGATE, 0, 0);
		char *out = names ? malloc(strlen(names) + 32) : NULL;

		if (out)
			sprintf(out, "summary (default), chrome, %s", names);
		free(names);
		return out ? out : (char *)text;
	}
	if (key == ARGP_KEY_HELP_POST_DOC)
		return profile_format_help(text, PROFILE_FMT_AGGREGATE);
	return (char *)text;
}

/*
 * trace -- CMD: start it stopped (the probes go in before its first
 * bytecode) and follow its execs until it is Python. 0 with o->pid set,
 * else the exit code, reported, and CMD ended.
 */
static int trace_launch(struct trace_opts *o, struct launch *l, struct tctx *c, struct diag *d)
{
	char ec[64];
	int r, ret;

	if (launch_start(l, o->cmd, d))
		return diag_report(d);
	c->launch = l;
	r = launch_until_python(l, LAUNCH_READY_S, o->quiet, 1, d);
	if (r) {
		if (r > 0)
			diag_set(d, EXIT_NOT_PYTHON, "pid %d (%s): not a CPython process to trace",
				 l->pid, text_esc(o->cmd[0], ec, sizeof(ec)));
		ret = diag_report(d);
		launch_end(l);
		return ret;
	}
	o->pid = l->pid;
	return 0;
}

/* What the probes' bookkeeping needs of the options and the process. */
static void trace_data_init(struct trace_data *td, const struct trace_opts *o,
			    const struct py_process *proc)
{
	td->pid = o->pid;
	td->threshold = (uint32_t)o->threshold;
	td->interval_s = o->interval;
	td->rearm_s = o->rearm;
	td->cutoff_pct = o->cutoff;
	snprintf(td->comm, sizeof(td->comm), "%s", proc->comm);
	snprintf(td->version, sizeof(td->version), "%s", proc->version);
}

/* The drain's buffers and caches; -1 when one could not be had (the
 * caller frees what was, with tctx_free). */
static int tctx_alloc(struct tctx *c, struct py_process *proc, int native)
{
	c->cache = code_cache_new(&proc->mem, &proc->cfg.off, 0);
	c->frames = calloc(BPFPY_MAX_DEPTH, sizeof(*c->frames));
	c->pframes = calloc(TRACE_MAX_FRAMES, sizeof(*c->pframes));
	if (native) {
		c->ns = native_syms_new();
		c->sc = splice_scratch_new();
	}
	c->prof = profile_new(0, "wall");
	c->buflen = 256 * 1024;
	c->buf = malloc(c->buflen);
	if (!c->cache || !c->frames || !c->buf || !c->pframes || !c->prof ||
	    (native && (!c->ns || !c->sc)))
		return -1;
	return 0;
}

static void tctx_free(struct tctx *c)
{
	code_cache_free(c->cache);
	free(c->frames);
	free(c->pframes);
	profile_free(c->prof);
	py_tnames_free(&c->tnames);
	free(c->buf);
	native_tables_free(c->nt);
	native_syms_free(c->ns);
	splice_scratch_free(c->sc);
}

int cmd_trace(int argc, char **argv)
{
	struct trace_opts o = {.threshold = 500, .interval = 1.0, .cutoff = 1.0};
	struct argp argp = {options, parse, NULL, doc, NULL, help_filter, NULL};
	struct trace_data td = {0};
	struct py_process proc;
	struct tracer_bpf *skel = NULL;
	struct ring_buffer *rb = NULL;
	struct tctx c = {.o = &o, .td = &td, .proc = &proc};
	struct out_file of = {0};
	struct diag d = {0};
	char ec[64], ev[64];
	struct launch l = {.pid = -1, .tty = -1, .errpipe = -1};
	int ret = EXIT_OK;
	struct code_name_maps names = {-1, -1};

	if (launch_split_argv(&argc, argv, &o.cmd, "trace"))
		return EXIT_USAGE;
	if (argp_parse(&argp, argc, argv, 0, NULL, &o))
		return EXIT_USAGE;
	if (signals_install(&d))
		return diag_report(&d);
	bpf_loader_log(o.verbose);
	if (o.cmd && (ret = trace_launch(&o, &l, &c, &d)))
		return ret;
	if (py_process_open(&proc, o.pid, o.max_depth, &d)) {
		ret = diag_report(&d);
		goto out;
	}
	if (o.list) {
		ret = trace_list(stdout, &proc, &d) ? diag_report(&d) : EXIT_OK;
		goto out;
	}
	trace_data_init(&td, &o, &proc);
	if (trace_probes_resolve(&td, &proc, o.specs, o.nspecs, o.calls, &d)) {
		ret = diag_report(&d);
		goto out;
	}
	/* Refuse an existing or unwritable output before tracing anything. */
	if (o.output && out_file_open(&of, o.output, o.force, &d)) {
		o.output = NULL;
		ret = diag_report(&d);
		goto out;
	}
	if (tctx_alloc(&c, &proc, o.native)) {
		diag_errno(&d, ENOMEM, "trace");
		ret = diag_report(&d);
		goto out;
	}
	if (open_tracer(&skel, &c, &d)) {
		ret = diag_report(&d);
		goto out;
	}
	/* A hit's code object may be gone (or the process exited) by the
	 * time its record is drained: the tracer copied the names on first
	 * sight, as record's sampler does. */
	names.names_fd = bpf_map__fd(skel->maps.code_names);
	names.tables_fd = bpf_map__fd(skel->maps.code_tables);
	code_cache_set_names(c.cache, bpf_loader_code_name, &names, (uint32_t)proc.pid);
	rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_record, &c, NULL);
	if (!rb) {
		diag_errno(&d, errno, "cannot set up the BPF ring buffer");
		ret = diag_report(&d);
		goto out;
	}
	/* From here on INT, TERM and HUP end the run and keep what it got. */
	signals_set_graceful(1);
	td.t0_ns = mono_ns();
	if (trace_probes_attach(&td, skel->progs.trace_usdt, skel->progs.trace_uprobe,
				skel->progs.trace_uretprobe, &d)) {
		ret = diag_report(&d);
		goto out;
	}
	launch_release(&l);
	if (!o.quiet)
		fprintf(stderr,
			"bpfpy trace: pid %d (%s), CPython %s: %d probe%s attached, "
			"threshold %ld%s\n",
			o.pid, text_esc(proc.comm, ec, sizeof(ec)),
			text_esc(proc.version, ev, sizeof(ev)), td.nprobes,
			td.nprobes == 1 ? "" : "s", o.threshold,
			o.threshold ? "" : " (full tracing)");
	ret = trace_loop(&c, skel, rb);
	trace_probes_detach(&td);
	read_counters(skel, &td);
	if (ret == EXIT_OK && write_output(&o, &td, c.prof, &of, &d))
		ret = diag_report(&d);
	else if (ret == EXIT_OK)
		o.output = NULL; /* committed */
	if (ret == EXIT_OK)
		native_note(&c);
out:
	if (o.output && of.f)
		out_file_abort(&of);
	trace_probes_detach(&td);
	ring_buffer__free(rb);
	tracer_bpf__destroy(skel);
	tctx_free(&c);
	trace_data_free(&td);
	/* Launched: once the output is written, CMD's status is ours. */
	if (o.cmd) {
		if (ret == EXIT_OK && launch_reap(&l))
			ret = launch_exit_code(&l);
		launch_end(&l);
	}
	return ret;
}
