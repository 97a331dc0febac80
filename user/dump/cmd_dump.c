// SPDX-License-Identifier: MIT
/*
 * bpfpy dump: the Python stack of every thread of a process, now. By default
 * every thread is ptrace-stopped for the read and the symbolization, so the
 * snapshot is consistent; --nonblocking reads while the target runs.
 *
 * --native: each stopped thread's registers are unwound by the one native
 * unwinder (bpf/native_step.h, here through native_walk.h) over the tables
 * record builds (native_tables.c, kept in this process), and spliced and
 * named as record does (splice.c), so a dump shows the stack record would.
 * The tables are built before the stop: while stopped, only the registers
 * and the stack words are read; names come after the resume.
 */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "monotime.h"
#include "code_cache.h"
#include "native_symbols.h"
#include "native_tables.h"
#include "native_walk.h"
#include "splice.h"
#include "cli_parse.h"
#include "commands.h"
#include "diag.h"
#include "proc.h"
#include "proc_ns.h"
#include "ptrace_stop.h"
#include "py_process.h"
#include "py_threads.h"
#include "pylocals.h"
#include "signals.h"
#include "dump_async.h"
#include "stack_reader.h"
#include "text_escape.h"
#include "walker_user.h"

/* Threads shown at most; the count of the others is reported. */
#define DUMP_MAX_THREADS 512

struct dump_opts {
	pid_t pid;
	int nonblocking;
	int json;
	unsigned max_depth;
	int verbose;
	int native;
	int async;
	int locals;
};

struct dumped_frame {
	char *name, *file;
	int line;
	int kind; /* enum frame_kind */
};

struct dumped_thread {
	struct thread_stack *ts; /* frames as read */
	struct dumped_frame *frames;
	uint32_t nframes;
	struct native_walk_out *nw; /* --native: the thread's native stack, NULL if not read */
	int regs_failed;	    /* --native: stopped, but PTRACE_GETREGS failed */
	uint32_t tid;		    /* OS tid; from fs base when the version lacks it */
	uint32_t ns_tid;	    /* the target's id of it, where its PID namespace differs */
	char name[64];		    /* OS name (/proc/PID/task/TID/comm), "" if unknown */
	char pyname[PY_TNAME_CAP];  /* threading name, "" if unknown */
	/* --locals: one per frame of ts (Python frames, leaf first), NULL
	 * when the stack was not read. */
	struct pylocals_frame *locals;
};

struct dump_ctx {
	struct py_process *p;
	struct code_cache *cache;
	struct thread_stack *stacks;
	struct dumped_thread *threads;
	struct py_tnames tnames;
	int count, shown;
	uint64_t stopped_ns;
	struct diag *d;
	/* --native */
	struct native_tables *nt;
	struct native_walk_env env;
	struct native_walk_out *nw; /* one per shown thread */
	struct native_syms *ns;
	struct splice_scratch *sc;
	uint64_t causes[SPLICE__COUNT];
	uint64_t unwind_ns, unwind_reads; /* of the stop: for -v */
	uint32_t unwound, unwound_frames;
	/* --locals */
	__u64 *frame_addrs; /* DUMP_MAX_THREADS x BPFPY_MAX_DEPTH */
	struct pylocals pl;
	int locals;
};

static const char doc[] =
    "Print the Python stack of every thread of every interpreter of process PID, leaf "
    "first, as 'qualname (file:line)'.\v"
    "By default every thread of the target is ptrace-stopped while its stacks are read and "
    "symbolized, then resumed: the snapshot is consistent, and the time the target was "
    "stopped is printed last ('Stopped the target for X us.'). --nonblocking reads while the "
    "target "
    "runs (nothing stopped; a stack may be torn, which is reported as an error, not shown).\n"
    "Per thread: the OS thread id as the host sees it, and beside it (ns tid) the id in "
    "the target's PID namespace where that differs, e.g. in a container (on Python <= 3.10, which "
    "does not store it, it is found "
    "from the thread's fs base while stopped, and shown as the pthread id with "
    "--nonblocking), and whether it holds the GIL where the version lets us see it; then, "
    "on a line of its own ('  name: NAME'), its threading name where it is read (Python "
    "3.8-3.15), else its OS name (comm); where both are known and differ, the OS name "
    "follows ('  comm: NAME').\n"
    "--json prints one object: pid, comm, version, binary, blocking, stopped_us, threads "
    "[{tid, ns_tid (null outside a container), pthread_id, name (null if unknown), comm (the "
    "thread's OS name, null if unknown), gil: "
    "held|released|unknown, truncated, "
    "error, frames [{name, file, "
    "line}]}]; line is -1 when unknown.\n"
    "--native adds each thread's native (C) frames, unwound from its registers while it is "
    "stopped with the unwind tables record --native uses (built before the stop), and "
    "spliced with the Python frames as record does: 'name (lib) [native]' lines; the "
    "eval loop's frames are replaced by the Python frames they run. An unwind that stopped "
    "early says why ('<native unwind stopped: ...>'). In JSON, frames get kind "
    "(python|native|mark) and threads a native object {frames, fp_frames, truncated, lost}.\n"
    "--async (Python 3.11+; older versions are refused with exit 2) prints the asyncio "
    "task tree instead: a line 'Tasks: N (R running, P pending, D done, C cancelled)', then "
    "each root task (awaited by no task) and, indented under each task, the tasks it awaits, "
    "each as 'NAME [STATE(, thread TID)] ADDRESS(, awaited by NAME (and K more))' with its "
    "coroutine chain leaf first (the innermost await first). A task awaited by several "
    "(gather, wait) sits under the one at the lowest address. --json gives tasks "
    "[{address, name, state, thread, awaiter, awaiter_name, awaiters, frames [{name, file, "
    "line}], frames_cut}] and cut {tasks_not_read, sets, chains, unreadable, bad_names}: "
    "what the bounds of docs/async.md left out.\n"
    "--locals adds, under each Python frame, its fast locals (arguments, locals, cells and "
    "free variables, in the code object's order), one 'NAME = VALUE' line each, read while "
    "the target is stopped. Values are shown, never evaluated: None, bools, ints, floats "
    "(as repr() writes them), str and bytes (quoted, control bytes as \\xNN) by their "
    "contents, only for the exact built-in types; anything else, subclasses included, as "
    "'<TYPE at 0xADDR>'; an int past 390 bits as '<int of N bits>'; a value unset yet is "
    "not listed. A value is cut at 120 characters and then ends in '\u2026' with no closing "
    "quote; a frame shows 64 locals at most and a dump 4096 ('<K more locals not read>'); "
    "a frame whose locals cannot be read says why ('<locals not read: ...>'). In JSON each "
    "Python frame gets locals [{name, value, kind (none|bool|int|float|str|bytes|other|"
    "unreadable)}], locals_not_read and locals_error. Module frames have none: a module's "
    "names are its globals. See docs/dump.md.\n\n"
    "EXAMPLES:\n"
    "  sudo bpfpy dump -p 1234\n"
    "  sudo bpfpy dump -p 1234 --native\n"
    "  sudo bpfpy dump -p 1234 --nonblocking --json\n"
    "  sudo bpfpy dump -p 1234 --locals\n"
    "  sudo bpfpy dump -p 1234 --async\n\n" EXIT_CODES_DOC;

enum { OPT_NATIVE = 0x100, OPT_ASYNC, OPT_LOCALS };

static const struct argp_option options[] = {
    {"pid", 'p', "PID", 0, "Process to dump (required)", 0},
    {"nonblocking", 'n', NULL, 0, "Read while the target runs; stop nothing", 0},
    {"json", 'j', NULL, 0, "Print JSON", 0},
    {"max-depth", 'D', "N", 0, "Frames per thread at most (default 1024, the maximum)", 0},
    {"native", OPT_NATIVE, NULL, 0, "Native (C) frames too, spliced with the Python ones", 0},
    {"locals", OPT_LOCALS, NULL, 0,
     "Each frame's local variables (names and short values; bounds in the text below)", 0},
    {"async", OPT_ASYNC, NULL, 0,
     "The asyncio task tree instead of the threads' stacks (Python 3.11+)", 0},
    {"verbose", 'v', NULL, 0, "More detail on stderr", 0},
    {0},
};

static error_t parse(int key, char *arg, struct argp_state *state)
{
	struct dump_opts *o = state->input;
	char *end;
	long v;

	switch (key) {
	case 'p':
		errno = 0;
		v = strtol(arg, &end, 10);
		if (errno || *end || v <= 0 || v > 0x7fffffff)
			argp_error(state, "invalid PID '%s'", arg);
		o->pid = (pid_t)v;
		break;
	case 'n':
		o->nonblocking = 1;
		break;
	case 'j':
		o->json = 1;
		break;
	case 'D':
		o->max_depth = (unsigned)cli_long(state, arg, 1, BPFPY_MAX_DEPTH, "--max-depth");
		break;
	case 'v':
		o->verbose = 1;
		break;
	case OPT_NATIVE:
		o->native = 1;
		break;
	case OPT_ASYNC:
		o->async = 1;
		break;
	case OPT_LOCALS:
		o->locals = 1;
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	case ARGP_KEY_END:
		if (!o->pid)
			argp_error(state, "-p PID is required");
		/* The registers of a running thread cannot be read. */
		if (o->async && o->native)
			argp_error(state,
				   "--async prints tasks, not native stacks: not with --native");
		if (o->async && o->locals)
			argp_error(state, "--async prints tasks, not frames: not with --locals");
		if (o->native && o->nonblocking)
			argp_error(state,
				   "--native needs the threads stopped: not with --nonblocking");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* Read every thread's frames; with s, every thread is stopped now. Only the
 * frame walk happens here: names and lines are read after the resume, since
 * the fingerprint of each frame tells if a code object changed meanwhile. */
static int read_all(struct dump_ctx *c, struct stopper *s)
{
	const struct py_offsets *o = &c->p->cfg.off;
	struct ns_tids nt;

	if (stack_read_all_addrs(&c->p->mem, &c->p->cfg, c->stacks, c->frame_addrs,
				 DUMP_MAX_THREADS, &c->count, c->d))
		return -1;
	if (proc_ns_tids_read(c->p->pid, &nt, c->d))
		return -1;
	c->shown = c->count < DUMP_MAX_THREADS ? c->count : DUMP_MAX_THREADS;
	for (int i = 0; i < c->shown; i++) {
		struct thread_stack *ts = &c->stacks[i];
		struct dumped_thread *t = &c->threads[i];

		t->ts = ts;
		t->tid = ts->tid;
		/* <= 3.10 keeps only pthread_t, which glibc makes the fs base. */
		for (int k = 0; s && !o->tstate_native_thread_id && k < stopper_count(s); k++) {
			uint64_t fs = 0;

			if (!stopper_thread_fsbase(s, k, &fs, NULL) && fs == ts->pthread_id)
				t->tid = (uint32_t)stopper_tid(s, k);
		}
		/* 3.11+ stores the id the target sees: in a container, not ours. */
		if (nt.nested && t->tid) {
			t->ns_tid =
			    o->tstate_native_thread_id ? t->tid : proc_ns_inner_tid(&nt, t->tid);
			if (o->tstate_native_thread_id)
				t->tid = proc_ns_host_tid(&nt, t->ns_tid);
			if (t->ns_tid == t->tid)
				t->ns_tid = 0;
		}
	}
	proc_ns_tids_free(&nt);
	return 0;
}

/* While stopped, --native: each shown thread's native stack from its
 * registers. Only reads here (registers, stack words); naming waits for the
 * resume, and the tables were built before the stop. */
static void unwind_stopped(struct dump_ctx *c, struct stopper *s)
{
	uint64_t t0 = mono_ns(), r0 = c->p->mem.reads;

	for (int k = 0; k < stopper_count(s); k++) {
		uint32_t tid = (uint32_t)stopper_tid(s, k);

		for (int i = 0; i < c->shown; i++) {
			struct dumped_thread *t = &c->threads[i];
			struct user_regs_struct regs;
			struct diag d = {0};

			if (t->tid != tid || t->nw || t->regs_failed)
				continue;
			if (stopper_thread_regs(s, k, &regs, &d)) {
				t->regs_failed = 1;
				break;
			}
			native_walk(&c->env, regs.rip, regs.rsp, regs.rbp, &c->nw[i]);
			t->nw = &c->nw[i];
			c->unwound++;
			c->unwound_frames += t->nw->n;
			break;
		}
	}
	c->unwind_ns = mono_ns() - t0;
	c->unwind_reads = c->p->mem.reads - r0;
}

static char *dup_or(const char *s, const char *dflt)
{
	return strdup(s ? s : dflt);
}

/* After the resume, --native: name the thread's native frames and splice
 * them with its (named) Python frames, as record does; t->frames becomes
 * the spliced stack. 0, or -1 (ENOMEM). */
static int splice_thread(struct dump_ctx *c, struct dumped_thread *t)
{
	const struct thread_stack *ts = t->ts;
	struct sym_frame *py = calloc(t->nframes ? t->nframes : 1, sizeof(*py));
	const struct sym_frame *out;
	struct dumped_frame *nf;
	uint32_t nout = 0;
	struct splice_sample ss = {
	    .pid = c->p->pid,
	    .version_hex = c->p->bin.version_hex,
	    .py = py,
	    .rec = ts->frames,
	    .npy = t->nframes,
	    .uips = (const __u64 *)t->nw->ips,
	    .nuser = t->nw->n,
	    /* Either stack missing its root part: runs are matched from the
	     * leaf, where both are whole (a Python walk cut at --max-depth
	     * keeps its leaf frames). */
	    .incomplete = (t->nw->flags & (NATIVE_LOST | NATIVE_TRUNCATED)) != 0 ||
			  (ts->flags & SAMPLE_TRUNCATED),
	};

	if (!py)
		return -1;
	for (uint32_t f = 0; f < t->nframes; f++)
		py[f] = (struct sym_frame){.name = t->frames[f].name,
					   .file = t->frames[f].file,
					   .line = t->frames[f].line};
	if (splice_sample(c->ns, c->sc, &ss, &out, &nout, c->causes) ||
	    !(nf = calloc(nout ? nout : 1, sizeof(*nf)))) {
		free(py);
		return -1;
	}
	for (uint32_t f = 0; f < nout; f++) {
		nf[f].name = dup_or(out[f].name, CODE_CACHE_UNKNOWN);
		nf[f].file = dup_or(out[f].file, "");
		nf[f].line = out[f].kind == FRAME_KIND_PYTHON ? out[f].line : -1;
		nf[f].kind = out[f].kind;
		if (!nf[f].name || !nf[f].file) {
			for (uint32_t k = 0; k <= f; k++) {
				free(nf[k].name);
				free(nf[k].file);
			}
			free(nf);
			free(py);
			return -1;
		}
	}
	free(py);
	for (uint32_t f = 0; f < t->nframes; f++) {
		free(t->frames[f].name);
		free(t->frames[f].file);
	}
	free(t->frames);
	t->frames = nf;
	t->nframes = nout;
	return 0;
}

static int symbolize_all(struct dump_ctx *c)
{
	struct diag nd = {0};

	/* After the resume too, and optional: a target whose threading
	 * module cannot be read keeps its OS names. */
	py_tnames_read(c->p, &c->tnames, &nd);
	for (int i = 0; i < c->shown; i++) {
		struct dumped_thread *t = &c->threads[i];
		const struct thread_stack *ts = t->ts;
		const char *pyname;

		t->frames = calloc(ts->nframes ? ts->nframes : 1, sizeof(*t->frames));
		if (!t->frames)
			return diag_errno(c->d, ENOMEM, "dump");
		/* After the resume: the name costs the target nothing. */
		if (t->tid && proc_thread_comm(c->p->pid, (pid_t)t->tid, t->name, sizeof(t->name)))
			t->name[0] = '\0';
		pyname = py_tnames_find(&c->tnames, t->tid, ts->pthread_id);
		snprintf(t->pyname, sizeof(t->pyname), "%s", pyname ? pyname : "");
		for (uint32_t f = 0; f < ts->nframes; f++) {
			struct sym_frame sf;

			code_cache_symbolize(c->cache, &ts->frames[f], &sf);
			t->frames[f].name = dup_or(sf.name, CODE_CACHE_UNKNOWN);
			t->frames[f].file = dup_or(sf.file, CODE_CACHE_UNKNOWN);
			t->frames[f].line = sf.line;
			t->nframes = f + 1;
			if (!t->frames[f].name || !t->frames[f].file)
				return diag_errno(c->d, ENOMEM, "dump");
		}
		if (t->nw && splice_thread(c, t))
			return diag_errno(c->d, ENOMEM, "dump: splicing native frames");
	}
	return 0;
}

/* --locals, right after the walk and still stopped: the values are the
 * target's live memory, which the resume would let change. 0, or -1
 * (ENOMEM) with c->d set. */
static int read_locals(struct dump_ctx *c)
{
	for (int i = 0; c->locals && i < c->shown; i++) {
		struct dumped_thread *t = &c->threads[i];
		const struct thread_stack *ts = t->ts;
		const __u64 *addrs = c->frame_addrs + (size_t)i * BPFPY_MAX_DEPTH;

		if ((ts->flags & SAMPLE_ERROR) || !ts->nframes)
			continue;
		t->locals = calloc(ts->nframes, sizeof(*t->locals));
		if (!t->locals)
			return diag_errno(c->d, ENOMEM, "dump --locals");
		for (uint32_t f = 0; f < ts->nframes; f++)
			pylocals_read_frame(&c->pl, addrs[f], ts->frames[f].code, &t->locals[f]);
	}
	return 0;
}

static int read_stopped(void *arg, struct stopper *s)
{
	struct dump_ctx *c = arg;
	uint64_t t0 = mono_ns();
	int ret = read_all(c, s);

	if (!ret)
		ret = read_locals(c);

	if (!ret && c->nt)
		unwind_stopped(c, s);
	/* From the first interrupt to the end of the read; the resume that
	 * follows adds a few microseconds per thread. */
	c->stopped_ns = mono_ns() - t0 + s->last_stop_latency_ns;
	return ret;
}

static const char *gil_word(uint8_t flags)
{
	if (!(flags & SAMPLE_GIL_KNOWN))
		return "unknown";
	return flags & SAMPLE_GIL_HELD ? "held" : "released";
}

static void put_frame(const struct dumped_frame *fr)
{
	printf("    ");
	text_put(stdout, fr->name);
	if (fr->kind == FRAME_KIND_MARK) {
		printf("\n");
		return;
	}
	if (fr->kind != FRAME_KIND_PYTHON) {
		/* As record's collapsed output names it: qsort_r (libc.so.6) [native] */
		if (fr->file[0]) {
			printf(" (");
			text_put(stdout, fr->file);
			printf(")");
		}
		printf(" [%s]\n", fr->kind == FRAME_KIND_KERNEL ? "kernel" : "native");
		return;
	}
	printf(" (");
	text_put(stdout, fr->file);
	if (fr->line >= 0)
		printf(":%d", fr->line);
	printf(")\n");
}

/* Frames of a printed stack, Python and native, that locals_map() maps. */
#define LOCALS_MAP_MAX (BPFPY_MAX_DEPTH + NATIVE_MAX_DEPTH + 8)
static int32_t locals_py[LOCALS_MAP_MAX];

/* --locals: the frames of t->frames that are t->ts's Python frames, by
 * index, in *py (t->nframes entries, -1 for the others); 0 when they
 * cannot be matched (a splice that dropped some): no locals shown then. */
static int locals_map(const struct dumped_thread *t, int32_t *py)
{
	uint32_t k = 0;

	for (uint32_t f = 0; f < t->nframes; f++)
		py[f] = t->frames[f].kind == FRAME_KIND_PYTHON ? (int32_t)k++ : -1;
	return t->locals && k == t->ts->nframes;
}

/* --locals: one frame's, each on a line under the frame's: the name as
 * every name is printed, the value as pylocals made it (escaped there). */
static void put_locals(const struct pylocals *pl, const struct pylocals_frame *lf)
{
	if (lf->error[0]) {
		printf("        <locals not read: %s>\n", lf->error);
		return;
	}
	for (uint32_t i = 0; i < lf->n; i++) {
		const struct pylocal *e = &pl->pool[lf->first + i];

		printf("        ");
		text_put(stdout, e->name);
		printf(" = %s\n", e->value);
	}
	if (lf->not_read)
		printf("        <%u more locals not read: at most %d a frame, %d a dump>\n",
		       lf->not_read, PYLOCALS_PER_FRAME, PYLOCALS_PER_DUMP);
}

/* --native: what the native part of a thread's stack lacks, if anything. */
static void put_native_notes(const struct dumped_thread *t)
{
	const struct native_walk_out *nw = t->nw;

	if (!nw) {
		printf("    <native stack not read: %s>\n",
		       t->regs_failed ? "its registers are unreadable (PTRACE_GETREGS failed)"
		       : t->tid	      ? "the thread was not stopped"
				      : "no OS thread");
		return;
	}
	if (nw->flags & NATIVE_LOST)
		printf("    <native unwind stopped: %s>\n",
		       native_cause_name(NATIVE_CAUSE(nw->flags)));
	if (nw->flags & NATIVE_TRUNCATED)
		printf("    <native stack truncated at %u frames>\n", (unsigned)NATIVE_MAX_DEPTH);
	if (nw->fp_frames)
		printf("    <%u native frames found by frame pointer: no CFI there>\n",
		       nw->fp_frames);
}

static void print_text(const struct dump_ctx *c, const struct dump_opts *o)
{
	const struct py_process *p = c->p;

	/* Every string here comes from the target: escaped, so that a name
	 * cannot drive the terminal or forge a line (docs/formats.md). */
	printf("Process %d (", p->pid);
	text_put(stdout, p->comm);
	printf("): CPython ");
	text_put(stdout, p->version);
	printf(", ");
	text_put(stdout, p->binary);
	printf("%s", p->bin.ns_note[0] ? ", " : "");
	text_put(stdout, p->bin.ns_note);
	printf("\n");
	for (int i = 0; i < c->shown; i++) {
		const struct dumped_thread *t = &c->threads[i];

		/* A thread state with no thread yet: Thread.start() made it and
		 * the new thread has not begun running (seen under thread churn). */
		if (t->tid)
			printf("\nThread %u", t->tid);
		else if (t->ns_tid)
			printf("\nThread ? (gone from the host)");
		else if (t->ts->pthread_id)
			printf("\nThread pthread 0x%llx", (unsigned long long)t->ts->pthread_id);
		else
			printf("\nThread (not started yet)");
		if (t->ns_tid)
			printf(" (ns tid %u)", t->ns_tid);
		if (t->ts->flags & SAMPLE_GIL_KNOWN)
			printf(" (GIL %s)", gil_word(t->ts->flags));
		printf(":\n");
		if (t->pyname[0] ||
		    t->name[0]) { /* a line of its own: the header's grammar stays */
			printf("  name: ");
			text_put(stdout, t->pyname[0] ? t->pyname : t->name);
			printf("\n");
		}
		if (t->pyname[0] && t->name[0] && strcmp(t->pyname, t->name)) {
			printf("  comm: ");
			text_put(stdout, t->name);
			printf("\n");
		}
		if (t->ts->flags & SAMPLE_ERROR) {
			printf("    <stack not read: %s>\n", walk_error_name(t->ts->err));
			if (!t->nw) /* with --native, its native frames still show */
				continue;
		} else if (!t->ts->nframes) {
			printf("    <no Python frames>\n");
		}
		int32_t *py = locals_py;
		int lm = t->nframes <= LOCALS_MAP_MAX && locals_map(t, py);

		for (uint32_t f = 0; f < t->nframes; f++) {
			put_frame(&t->frames[f]);
			if (lm && py[f] >= 0)
				put_locals(&c->pl, &t->locals[py[f]]);
		}
		if (t->ts->flags & SAMPLE_TRUNCATED)
			printf("    <truncated at %u frames: deeper frames not shown>\n",
			       t->ts->nframes);
		if (o->native)
			put_native_notes(t);
	}
	if (c->count > c->shown)
		printf("\n%d more threads not shown\n", c->count - c->shown);
	if (!o->nonblocking)
		printf("\nStopped the target for %.1f us.\n", c->stopped_ns / 1000.0);
}

static const char *kind_word(int kind)
{
	return kind == FRAME_KIND_NATIVE   ? "native"
	       : kind == FRAME_KIND_KERNEL ? "kernel"
	       : kind == FRAME_KIND_MARK   ? "mark"
					   : "python";
}

/* --native: {frames, fp_frames, truncated, lost}, lost the cause or null;
 * null when the thread's native stack was not read. */
static json_object *native_json(const struct dumped_thread *t)
{
	json_object *j;

	if (!t->nw)
		return NULL;
	j = json_object_new_object();
	json_object_object_add(j, "frames", json_object_new_int64(t->nw->n));
	json_object_object_add(j, "fp_frames", json_object_new_int64(t->nw->fp_frames));
	json_object_object_add(j, "truncated",
			       json_object_new_boolean(t->nw->flags & NATIVE_TRUNCATED));
	json_object_object_add(
	    j, "lost",
	    t->nw->flags & NATIVE_LOST
		? json_object_new_string(native_cause_name(NATIVE_CAUSE(t->nw->flags)))
		: NULL);
	return j;
}

/* --locals: [{name, value, kind}] of one frame. */
static json_object *locals_json(const struct pylocals *pl, const struct pylocals_frame *lf)
{
	json_object *a = json_object_new_array();

	for (uint32_t i = 0; i < lf->n; i++) {
		const struct pylocal *e = &pl->pool[lf->first + i];
		json_object *j = json_object_new_object();

		json_object_object_add(j, "name", json_object_new_string(e->name));
		json_object_object_add(j, "value", json_object_new_string(e->value));
		json_object_object_add(j, "kind",
				       json_object_new_string(pylocal_kind_name(e->kind)));
		json_object_array_add(a, j);
	}
	return a;
}

/* --locals: the frame's locals, how many were not read, and why none were. */
static void frame_locals_json(json_object *jf, const struct pylocals *pl,
			      const struct pylocals_frame *lf)
{
	json_object_object_add(jf, "locals", lf ? locals_json(pl, lf) : NULL);
	json_object_object_add(jf, "locals_not_read", json_object_new_int64(lf ? lf->not_read : 0));
	json_object_object_add(jf, "locals_error",
			       lf && lf->error[0] ? json_object_new_string(lf->error) : NULL);
}

static void print_json(const struct dump_ctx *c, const struct dump_opts *o)
{
	const struct py_process *p = c->p;
	json_object *root = json_object_new_object(), *threads = json_object_new_array();

	json_object_object_add(root, "pid", json_object_new_int(p->pid));
	json_object_object_add(root, "comm", json_object_new_string(p->comm));
	json_object_object_add(root, "version", json_object_new_string(p->version));
	json_object_object_add(root, "binary", json_object_new_string(p->binary));
	json_object_object_add(root, "blocking", json_object_new_boolean(!o->nonblocking));
	json_object_object_add(root, "stopped_us",
			       o->nonblocking ? NULL
					      : json_object_new_double(c->stopped_ns / 1000.0));
	json_object_object_add(root, "threads_total", json_object_new_int(c->count));
	for (int i = 0; i < c->shown; i++) {
		const struct dumped_thread *t = &c->threads[i];
		json_object *jt = json_object_new_object(), *frames = json_object_new_array();

		json_object_object_add(jt, "tid", t->tid ? json_object_new_int64(t->tid) : NULL);
		json_object_object_add(jt, "ns_tid",
				       t->ns_tid ? json_object_new_int64(t->ns_tid) : NULL);
		json_object_object_add(jt, "pthread_id", json_object_new_uint64(t->ts->pthread_id));
		json_object_object_add(jt, "name",
				       t->pyname[0] ? json_object_new_string(t->pyname)
				       : t->name[0] ? json_object_new_string(t->name)
						    : NULL);
		json_object_object_add(jt, "comm",
				       t->name[0] ? json_object_new_string(t->name) : NULL);
		json_object_object_add(jt, "gil", json_object_new_string(gil_word(t->ts->flags)));
		json_object_object_add(jt, "truncated",
				       json_object_new_boolean(t->ts->flags & SAMPLE_TRUNCATED));
		json_object_object_add(jt, "error",
				       t->ts->flags & SAMPLE_ERROR
					   ? json_object_new_string(walk_error_name(t->ts->err))
					   : NULL);
		int lm = o->locals && t->nframes <= LOCALS_MAP_MAX && locals_map(t, locals_py);

		for (uint32_t f = 0; f < t->nframes; f++) {
			json_object *jf = json_object_new_object();

			json_object_object_add(jf, "name",
					       json_object_new_string(t->frames[f].name));
			json_object_object_add(jf, "file",
					       json_object_new_string(t->frames[f].file));
			json_object_object_add(jf, "line", json_object_new_int(t->frames[f].line));
			if (o->native)
				json_object_object_add(
				    jf, "kind",
				    json_object_new_string(kind_word(t->frames[f].kind)));
			if (o->locals && t->frames[f].kind == FRAME_KIND_PYTHON)
				frame_locals_json(jf, &c->pl, lm ? &t->locals[locals_py[f]] : NULL);
			json_object_array_add(frames, jf);
		}
		if (o->native)
			json_object_object_add(jt, "native", native_json(t));
		json_object_object_add(jt, "frames", frames);
		json_object_array_add(threads, jt);
	}
	json_object_object_add(root, "threads", threads);
	printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
								JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(root);
}

/* --native, before the stop: the tables of every executable mapping of the
 * target (its maps as they are now), so that the stop itself only reads. 0,
 * or -1 with c->d set. */
static int native_prepare(struct dump_ctx *c, const struct dump_opts *o)
{
	struct native_tables_stats st;
	uint64_t t0 = mono_ns();

	c->nw = calloc(DUMP_MAX_THREADS, sizeof(*c->nw));
	c->ns = native_syms_new();
	c->sc = splice_scratch_new();
	if (!c->nw || !c->ns || !c->sc)
		return diag_errno(c->d, ENOMEM, "dump --native");
	c->nt = native_tables_new_local(c->d);
	if (!c->nt || native_tables_attach(c->nt, c->p->pid, c->d))
		return -1;
	c->env.proc = native_tables_proc(c->nt, c->p->pid);
	c->env.rows = native_tables_rows(c->nt, &c->env.nrows);
	c->env.mem = &c->p->mem;
	if (!c->env.proc)
		return diag_set(c->d, EXIT_FAIL, "pid %d: no native mappings", c->p->pid);
	native_tables_stats(c->nt, &st);
	if (o->verbose)
		fprintf(stderr,
			"native tables: %u mappings, %u files (%u without a table), %u rows, %.1f "
			"ms (before the stop)\n",
			c->env.proc->nmaps, st.files + st.files_failed, st.files_failed, st.rows,
			(mono_ns() - t0) / 1e6);
	return 0;
}

/* --locals, before the stop: the frame address table and the pool. 0, or
 * -1 with c->d set. */
static int locals_prepare(struct dump_ctx *c)
{
	char v[32];

	c->frame_addrs =
	    calloc((size_t)DUMP_MAX_THREADS * BPFPY_MAX_DEPTH, sizeof(*c->frame_addrs));
	if (!c->frame_addrs)
		return diag_errno(c->d, ENOMEM, "dump --locals");
	if (pylocals_init(&c->pl, &c->p->mem, &c->p->cfg.off, &c->p->extra)) {
		if (errno == ENOMEM)
			return diag_errno(c->d, ENOMEM, "dump --locals");
		return diag_set(c->d, EXIT_UNSUPPORTED,
				"pid %d: Python %s: no fast-locals layout known for --locals",
				c->p->pid, py_version_str(c->p->cfg.off.version_hex, v, sizeof(v)));
	}
	c->locals = 1;
	return 0;
}

int cmd_dump(int argc, char **argv)
{
	struct dump_opts o = {0};
	struct argp argp = {options, parse, NULL, doc, NULL, NULL, NULL};
	struct diag d = {0};
	struct py_process p;
	struct dump_ctx c = {.p = &p, .d = &d};
	int ret = EXIT_OK;

	if (argp_parse(&argp, argc, argv, 0, NULL, &o))
		return EXIT_USAGE;
	if (py_process_open(&p, o.pid, o.max_depth, &d))
		return diag_report(&d);
	if (o.async)
		return dump_async(&p, o.nonblocking, o.json, &d);
	c.stacks = calloc(DUMP_MAX_THREADS, sizeof(*c.stacks));
	c.threads = calloc(DUMP_MAX_THREADS, sizeof(*c.threads));
	c.cache = code_cache_new(&p.mem, &p.cfg.off, 0);
	if (!c.stacks || !c.threads || !c.cache) {
		diag_errno(&d, ENOMEM, "dump");
		ret = diag_report(&d);
		goto out;
	}
	if (o.native && native_prepare(&c, &o)) {
		ret = diag_report(&d);
		goto out;
	}
	if (o.locals && locals_prepare(&c)) {
		ret = diag_report(&d);
		goto out;
	}
	if (o.nonblocking) {
		if (read_all(&c, NULL) || read_locals(&c))
			ret = EXIT_FAIL;
	} else {
		if (signals_install(&d) || stopper_with_stopped(p.pid, read_stopped, &c, &d))
			ret = EXIT_FAIL;
	}
	if (ret == EXIT_OK && symbolize_all(&c))
		ret = EXIT_FAIL;
	if (ret == EXIT_OK && o.native && o.verbose) {
		fprintf(stderr,
			"native unwind: %u threads, %u frames, %llu reads, %.1f us of the stop\n",
			c.unwound, c.unwound_frames, (unsigned long long)c.unwind_reads,
			c.unwind_ns / 1000.0);
		splice_summary(stderr, c.ns, c.causes);
	}
	if (ret != EXIT_OK) {
		/* A read that failed because the target became another program
		 * says so, rather than naming an address of the old one. */
		py_process_execd(&p, &d);
		ret = diag_report(&d);
	}
	if (ret == EXIT_OK) {
		if (o.json)
			print_json(&c, &o);
		else
			print_text(&c, &o);
	}
out:
	for (int i = 0; i < c.shown; i++) {
		for (uint32_t f = 0; c.threads[i].frames && f < c.threads[i].nframes; f++) {
			free(c.threads[i].frames[f].name);
			free(c.threads[i].frames[f].file);
		}
		free(c.threads[i].frames);
		free(c.threads[i].locals);
	}
	pylocals_free(&c.pl);
	free(c.frame_addrs);
	native_tables_free(c.nt);
	native_syms_free(c.ns);
	splice_scratch_free(c.sc);
	free(c.nw);
	code_cache_free(c.cache);
	py_tnames_free(&c.tnames);
	free(c.stacks);
	free(c.threads);
	return ret;
}
