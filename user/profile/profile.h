/* SPDX-License-Identifier: MIT */
/*
 * The profile model: symbolized samples go in, aggregated stacks come out,
 * and every output format (folded, speedscope, pprof, SVG, raw) is written
 * from it.
 *
 * Strings, functions and frames are interned, so a stack is an array of
 * small integers and a million samples of the same few stacks cost a few
 * counters. Stacks are kept per (pid, tid): the writers decide whether to
 * merge threads (the default) or keep them apart (--threads).
 *
 * The writers (user/out_*.c) read the structures below directly; nothing
 * else should. Everyone else uses the functions.
 */
#ifndef PROFILE_H
#define PROFILE_H

#include <stdint.h>
#include <stdio.h>

#include "bpfpy.h"
#include "diag.h"

/* What a frame is (sym_frame.kind, prof_func.kind). Python frames are 0,
 * so every writer that knows no other kind keeps working. */
enum frame_kind {
	FRAME_KIND_PYTHON = 0,
	FRAME_KIND_NATIVE, /* user-space machine code: file is the library's name */
	FRAME_KIND_KERNEL, /* file is the module's name, "" for vmlinux */
	FRAME_KIND_MARK,   /* a note in the stack, e.g. "[native unwind lost]" */
};

struct native_lib;

/*
 * record --opcodes: the instruction mark. A sample recorded with --opcodes
 * has one frame of kind FRAME_KIND_MARK right leafward of its Python leaf
 * frame (between that frame and any native frame it called; rootward of
 * the [exception T], [gc] and off-CPU marks), naming the instruction the
 * leaf frame was executing:
 *
 *   name  "[op NAME]", or "[op NAME (BASE)]" when NAME is a specialized
 *         form of BASE. NAME is the opcode's name in the target's version
 *         (user/python/gen/opcodes.c): INSTRUMENTED_*, ENTER_EXECUTOR and
 *         EXTENDED_ARG as they are, "<op N>" for a byte the version does
 *         not name, "<not started>" when the frame had started no
 *         instruction, "<past end>" when its index lay past the bytecode's
 *         end, "<unread>" when the byte could not be read.
 *   file  the Python leaf frame's file (sym_frame.file, prof_func.file)
 *   line  the Python leaf frame's line (sym_frame.line, prof_frame.line)
 *   addr  PROF_OP_TAG, and packed by profile_op_addr(): the byte, the
 *         instruction's index and its columns (sym_frame.addr,
 *         prof_func.addr)
 *
 * The labels of the folded formats show the name alone. Writers and
 * readers do not parse any of it themselves: profile_op() does.
 */
#define PROF_OP_TAG (1ull << 63)

struct prof_op {
	char name[64];	 /* NAME (cut at 63 bytes) */
	char base[64];	 /* BASE for a specialized form, else NAME again */
	int specialized; /* 1: the name carried a base */
	int byte;	 /* the opcode byte, -1 for none (not started, unread) */
	int64_t index;	 /* the instruction's index in code units, -1 unknown */
	/* Its columns on its line, 0-based UTF-8 bytes as CPython's line
	 * table counts them (3.11+), -1 unknown; endcol also -1 where the
	 * instruction's span ends on a later line. */
	int col, endcol;
	const char *file; /* the profile's string: valid while the profile is */
	int line;
};

struct profile;

/* The mark's name for NAME and BASE (NULL: not specialized) into buf. */
void profile_op_name(char *buf, size_t len, const char *name, const char *base);

/* func addr of an instruction mark: byte (-1 none), index (-1 unknown;
 * from 2^24 - 1 on, unknown), col and endcol (-1 unknown; from 32767 on,
 * unknown). */
uint64_t profile_op_addr(int byte, int64_t index, int col, int endcol);

/* 1 with *out filled if frame (a frame id of p) is an instruction mark;
 * 0 if it is any other frame. */
int profile_op(const struct profile *p, uint32_t frame, struct prof_op *out);
/* The same for a function id (no_lines writers; out->line is then -1). */
int profile_op_func(const struct profile *p, uint32_t func, struct prof_op *out);

/* One symbolized frame. name is the qualname, e.g. "Class.method". */
struct sym_frame {
	const char *name;
	const char *file;
	int line;
	int firstlineno;
	/* --native / --kernel (user/native/splice.c); zero for Python. */
	int kind;		      /* enum frame_kind */
	const struct native_lib *lib; /* native: the mapped file, for pprof */
	uint64_t addr;		      /* native, kernel: the function's address in its file */
};

/* One symbolized sample, as the symbolizer hands it to the profile. */
struct sym_sample {
	uint64_t ts_ns; /* bpf_ktime_get_ns(), CLOCK_MONOTONIC */
	uint32_t pid, tid, cpu;
	uint32_t flags; /* SAMPLE_* from bpf/bpfpy.h */
	uint32_t nframes;
	const struct sym_frame *frames; /* leaf first */
};

/* Default bound on samples kept in time order (for speedscope). */
#define PROFILE_MAX_ORDERED 1000000u

/* Name given to the frame added at the root of a SAMPLE_TRUNCATED stack, so
 * that stacks missing their outer frames do not pose as complete ones. */
#define PROFILE_TRUNCATED_NAME "[truncated]"

struct prof_func {
	uint32_t name, file; /* string ids */
	int firstlineno;
	uint32_t kind;	  /* enum frame_kind */
	uint64_t addr;	  /* native, kernel: sym_frame.addr */
	uint32_t mapping; /* native: index into mappings + 1; 0 none */
	uint32_t spare;	  /* no padding: funcs are compared with memcmp */
};

/* A native frame's file, as pprof's Mapping (first process it was seen in). */
struct prof_mapping {
	uint32_t file, build_id; /* string ids: the path, the hex build id */
	uint64_t start, limit, offset;
};

struct prof_frame {
	uint32_t func; /* index into funcs */
	int line;
};

struct prof_stack {
	uint32_t thread; /* index into threads */
	uint32_t nframes;
	uint32_t *frames; /* frame ids, leaf first */
	uint64_t count;
	uint64_t nidle, ngil; /* samples with SAMPLE_IDLE, SAMPLE_GIL_HELD */
	uint64_t first_ns, last_ns;
	uint64_t nordered;	/* of count, how many sit in the thread's order */
	uint64_t weight_ns;	/* weighted profiles: sum of the samples' weights */
	uint64_t ordered_ns;	/* of weight_ns, how much sits in the thread's order */
	uint32_t offcpu_reason; /* enum offcpu_reason of its samples; 0: on-CPU */
	uint64_t ngilidle;	/* of count, with both SAMPLE_GIL_HELD and SAMPLE_IDLE */
};

/* A sample kept in time order: enough to replay it (raw) or draw it in
 * sequence (speedscope). */
struct prof_ord {
	uint64_t ts_ns;
	uint32_t stack, cpu, flags;
	uint64_t weight_ns; /* weighted profiles: the sample's weight */
};

struct prof_thread {
	uint32_t pid, tid;
	uint64_t count;
	uint64_t first_ns, last_ns;
	struct prof_ord *order; /* arrival order; at most max_ordered overall */
	uint64_t norder, order_cap;
	uint64_t weight_ns; /* weighted profiles: sum of its samples' weights */
	char *name;	    /* OS thread name (comm), NULL if unknown */
};

/* Labels of a process (record: cgroup, container, python_version) or of
 * the whole profile (host), as interned string ids: key, value. */
#define PROF_PROC_LABELS 4
#define PROF_LABELS	 2
struct prof_label {
	uint32_t key, value;
};

struct prof_comm {
	uint32_t pid;
	char *name; /* NULL: labels only, comm unknown */
	struct prof_label labels[PROF_PROC_LABELS];
	uint32_t nlabels;
};

/* Open-addressed index from a hash to an id; equality is the caller's. */
struct prof_index {
	struct prof_slot {
		uint32_t id1; /* id + 1; 0 is empty */
		uint32_t hash;
	} * slots;
	uint32_t cap, n;
};

struct profile {
	uint64_t period_ns;
	char clock[8];	      /* "cpu" or "wall" */
	int64_t realtime_off; /* CLOCK_REALTIME - CLOCK_MONOTONIC at creation */

	char **strs;
	uint32_t nstrs, cap_strs;
	struct prof_func *funcs;
	uint32_t nfuncs, cap_funcs;
	struct prof_frame *frames;
	uint32_t nframes, cap_frames;
	struct prof_stack *stacks;
	uint32_t nstacks, cap_stacks;
	struct prof_thread *threads;
	uint32_t nthreads, cap_threads;
	struct prof_comm *comms;
	uint32_t ncomms, cap_comms;
	struct prof_mapping *mappings;
	uint32_t nmappings, cap_mappings;
	struct prof_index istr, ifunc, iframe, istack, ithread;

	uint64_t total;	     /* samples aggregated */
	uint64_t nempty;     /* samples without frames (failed walks): counted only */
	uint64_t ntruncated; /* samples with SAMPLE_TRUNCATED */
	uint64_t first_ns, last_ns;
	uint64_t max_ordered, nordered;
	uint32_t last_stack; /* the stack of the last profile_add() with frames */
	int oom;	     /* an allocation failed: the profile is incomplete */
	/* Weighted (record --clock offcpu|wall): every sample has a weight in
	 * nanoseconds, and the writers write those instead of counts. */
	int weighted;
	uint64_t total_ns;
	struct prof_raw *raw; /* profile_add_raw()'s memo of raw records, see profile.c */
	/* Labels every sample carries (pprof), e.g. host. */
	struct prof_label labels[PROF_LABELS];
	uint32_t nlabels;
	/* The window the profile covers (CLOCK_MONOTONIC ns; 0, 0: from the
	 * first sample to the last), for pprof's time_nanos and duration. */
	uint64_t window_start_ns, window_end_ns;
	/* Source files (sources.c), for the heatmap: by file string id. */
	struct prof_source *sources;
	uint32_t nsources, cap_sources;
	uint32_t *source_of; /* string id -> index + 1 into sources; 0 none */
	uint32_t nsource_of;
	uint64_t source_bytes; /* text kept, against PROFILE_SOURCES_MAX */
};

/*
 * A source file as the heatmap shows it (sources.c). record reads it while
 * the target lives, as the target could (proc_root_read_as_target), and raw
 * carries it, so convert writes what record wrote; nothing else reads a
 * file a profile names. The text is kept as lines: split where Python
 * splits them (LF, CRLF, CR), bytes that are not well-formed UTF-8 and NUL
 * made U+FFFD, a line longer than PROFILE_SOURCE_LINE_MAX bytes cut on a
 * character and ended with U+2026, at most PROFILE_SOURCE_MAX_LINES lines
 * (then cut = 1). Doing it again to the lines so made changes nothing, which
 * is what lets raw round-trip them.
 */
#define PROFILE_SOURCE_MAX_BYTES (4u << 20)    /* a file larger is not read */
#define PROFILE_SOURCE_LINE_MAX	 1024u	       /* bytes of a line kept */
#define PROFILE_SOURCE_MAX_LINES 200000u       /* lines of a file kept */
#define PROFILE_SOURCES_MAX	 (64ull << 20) /* text kept in one profile */
struct prof_source {
	uint32_t file;	 /* string id */
	uint32_t nlines; /* lines 1..nlines are line[0..nlines-1] */
	char *text;	 /* the lines, each NUL-terminated, one after the other */
	uint32_t *off;	 /* line i starts at text + off[i] */
	int cut;	 /* lines past PROFILE_SOURCE_MAX_LINES were left out */
	char *why;	 /* no text: why not (valid UTF-8), else NULL */
};
/* The source of file (a name) from len bytes of text, cut if lines were
 * left out of it already (raw's "#src ... 1"): 0; 1 when its lines would
 * take the profile past PROFILE_SOURCES_MAX bytes (then kept as missing,
 * with that reason); -1 with errno = ENOMEM. A file given twice keeps its
 * first. */
int profile_set_source(struct profile *p, const char *file, const char *text, size_t len, int cut);
/* file has no source to show, for why (any bytes; kept as valid UTF-8). */
int profile_set_source_missing(struct profile *p, const char *file, const char *why);
/* The source entry of a file string id, or NULL (nothing was tried). */
const struct prof_source *profile_source(const struct profile *p, uint32_t file);
/* Line n (1-based) of src, or NULL past its end. */
static inline const char *profile_source_line(const struct prof_source *src, uint32_t n)
{
	return src->text && n >= 1 && n <= src->nlines ? src->text + src->off[n - 1] : NULL;
}
/* Grow the dense array *arr of *cap elements of size bytes to hold need,
 * by doubling (from 16): 0, or -1 (ENOMEM; *arr left as it was). The
 * profile's tables and its writers' own use it. */
int profile_grow(void **arr, uint32_t *cap, uint32_t need, size_t size);
/* The id of s in p's strings, added if new; UINT32_MAX on ENOMEM. */
uint32_t profile_intern(struct profile *p, const char *s);
void profile_sources_free(struct profile *p);

struct profile_out_opts {
	int threads;	   /* keep threads apart: prefix pid:N;tid:N */
	int no_lines;	   /* aggregate by function, not by line */
	int force;	   /* overwrite an existing file or symlink */
	const char *title; /* SVG title; NULL for a default */
	/* pprof: prefixed to every absolute file name, so that `go tool pprof
	 * -list` opens a chroot's or container's sources from the host. */
	const char *source_root;
};

/* clock: "cpu", "wall" or "offcpu" (anything else is taken as "cpu"). NULL
 * on ENOMEM. */
struct profile *profile_new(uint64_t period_ns, const char *clock);
/* Bound the samples kept in time order (default PROFILE_MAX_ORDERED); later
 * samples are only aggregated. */
void profile_set_max_ordered(struct profile *p, uint64_t n);
/* 0, or -1 with errno = ENOMEM. A sample without frames is only counted
 * (p->nempty): no format can draw an empty stack honestly. */
int profile_add(struct profile *p, const struct sym_sample *s);
/* The same for a weighted profile (profile_set_weighted): the sample weighs
 * weight_ns (0: one period_ns of the clock, an on-CPU sample), and an
 * off-CPU interval has its reason (enum offcpu_reason, 0 for on-CPU). */
int profile_add_weighted(struct profile *p, const struct sym_sample *s, uint64_t weight_ns,
			 uint32_t offcpu_reason);
/* Weigh a stack seen before (an id from last_stack) n more samples, with
 * no time of their own: for hits counted where no stack was read (trace's
 * counted-only hits). Ignored for an unknown id. */
void profile_stack_add(struct profile *p, uint32_t stack, uint64_t n);

/*
 * The hot path of record: aggregate a sample as the kernel wrote it (h and
 * its h->nframes frame records, leaf first; anything after them, such as
 * native frames, is not read). A stack seen before under the same (pid,
 * tid, epoch, truncated flag) and the same raw records (code address,
 * instruction, fingerprint) is counted without symbolizing anything; a
 * frame record seen before under the same (pid, epoch) reuses its frame.
 * Only the rest goes through sym(ctx, f, out), which names one frame as
 * code_cache_symbolize() does (0: named; strings valid until the caller's
 * sample is done) and is called at most once per record and sample.
 *
 * epoch names the image pid's addresses belong to: records of one pid
 * merge only within one epoch, so the caller changes it whenever the
 * addresses may mean something else (an exec, a reused pid). Any value
 * that differs between the two images does (record: the registration's
 * CLOCK_MONOTONIC time).
 *
 * The sample is counted as profile_add() would count it (h's ts, cpu,
 * flags; a SAMPLE_TRUNCATED stack gets its marker; time order kept within
 * the bound) and p->last_stack is its stack. Returns 0; 1 when a frame
 * could not be named (nothing is counted: the caller's error); -1 with
 * errno = ENOMEM. The memo is bounded (PROFILE_RAW_MEMO_BYTES) and simply
 * starts afresh when full: it is a cache, the profile keeps everything.
 */
typedef int (*profile_sym_fn)(void *ctx, const struct frame_rec *f, struct sym_frame *out);
#define PROFILE_RAW_MEMO_BYTES (8u << 20)
int profile_add_raw(struct profile *p, uint64_t epoch, const struct sample_hdr *h,
		    const struct frame_rec *frames, profile_sym_fn sym, void *ctx);
/* What the memo did, for tests and the curious. */
struct profile_raw_stats {
	uint64_t stack_hits, stack_misses; /* samples counted from a memoized stack, or not */
	uint64_t frame_hits, frame_misses; /* frames of missed stacks: memoized, or sym()'d */
	uint64_t resets;		   /* the memo filled up and started afresh */
};
void profile_raw_stats(const struct profile *p, struct profile_raw_stats *out);
int profile_set_comm(struct profile *p, uint32_t pid, const char *name);
/* A label of process pid's samples (key replaced if set; at most
 * PROF_PROC_LABELS keys) or of every sample (PROF_LABELS keys): 0, or -1
 * (ENOMEM, or ENOSPC past the bound). Strings are made valid UTF-8. */
int profile_set_proc_label(struct profile *p, uint32_t pid, const char *key, const char *value);
int profile_set_label(struct profile *p, const char *key, const char *value);
/* Process pid's labels, or NULL (*n = 0). */
const struct prof_label *profile_proc_labels(const struct profile *p, uint32_t pid, uint32_t *n);
/* The time the profile covers, CLOCK_MONOTONIC ns (record --rotate). */
void profile_set_window(struct profile *p, uint64_t start_ns, uint64_t end_ns);
/* An empty profile set up as p is (period, clock, weighting, bound on the
 * ordered samples, realtime offset, whole-profile labels): the next window
 * of a rotation. NULL on ENOMEM. */
struct profile *profile_new_like(const struct profile *p);
/* Samples weigh their weight_ns (see sym_sample), and outputs write
 * nanoseconds rather than counts. Call before the first profile_add(). */
void profile_set_weighted(struct profile *p, int on);
/* The weight of a stack or a thread, in the unit its writers use: its
 * nanoseconds when weighted, else its count of samples. */
uint64_t profile_stack_value(const struct profile *p, const struct prof_stack *st);
/* Name thread (pid, tid), as first seen in a sample or later: 0, or -1 on
 * ENOMEM or an unknown thread. The name is made valid UTF-8. */
int profile_set_thread_name(struct profile *p, uint32_t pid, uint32_t tid, const char *name);
/* The OS name of a thread of the profile, or NULL. */
const char *profile_thread_name(const struct profile *p, uint32_t pid, uint32_t tid);
/* The comm of pid, or NULL. */
const char *profile_comm(const struct profile *p, uint32_t pid);
/* CLOCK_REALTIME - CLOCK_MONOTONIC of the recording (profile_new() takes
 * this host's, now): for convert, which replays a recording's. */
void profile_set_realtime_off(struct profile *p, int64_t off);
void profile_free(struct profile *p);

/* Interned string by id. */
static inline const char *profile_str(const struct profile *p, uint32_t id)
{
	return p->strs[id];
}

/* The id writers group a frame by: its function under no_lines, else the
 * frame itself. Both id spaces are dense, so writers can index arrays. */
static inline uint32_t profile_frame_key(const struct profile *p, uint32_t frame, int no_lines)
{
	return no_lines ? p->frames[frame].func : frame;
}

/* One frame's label as every folded output writes it, unsanitized, into
 * buf: "qualname (file:line)", "qualname (file)" under no_lines, just the
 * name for a mark (FRAME_KIND_MARK, whatever its file) or a frame without
 * a file, "name (lib) [native]", "name [kernel]" or "name (module)
 * [kernel]" (enum frame_kind). */
void profile_label(char *buf, size_t len, const char *name, const char *file, int line, int kind,
		   int no_lines);

/* The label of a key from profile_frame_key(): "qualname (file:line)", or
 * "qualname (file)" under no_lines, or just the name for a frame without a
 * file (such as PROFILE_TRUNCATED_NAME), into buf.
 * With sanitize, the label goes through the one folded-key sanitizer
 * (text_escape with TEXT_FOLDED: ';' becomes ':', controls \xNN), so it
 * is one field of one line. Returns buf. */
char *profile_frame_label(const struct profile *p, uint32_t key, int no_lines, int sanitize,
			  char *buf, size_t len);

/* Writers. Each returns 0, or -1 with d set. They write to f and never
 * close it. */
int collapsed_write(FILE *f, const struct profile *p, const struct profile_out_opts *o,
		    struct diag *d);
/* One stack's folded key as collapsed_write writes it (without the count),
 * malloc'd; NULL with errno = ENOMEM. */
char *collapsed_key(const struct profile *p, const struct prof_stack *st,
		    const struct profile_out_opts *o);
/* svg_write's differential flame graph: p holds two profiles, the samples
 * of pid base_pid being BASE's and all others NEW's; widths are NEW's,
 * colours the change of each frame's share of its side's total (diff). */
int svg_write_diff(FILE *f, const struct profile *p, uint32_t base_pid,
		   const struct profile_out_opts *o, struct diag *d);
int speedscope_write(FILE *f, const struct profile *p, const struct profile_out_opts *o,
		     struct diag *d);
int pprof_write(FILE *f, const struct profile *p, const struct profile_out_opts *o, struct diag *d);
int svg_write(FILE *f, const struct profile *p, const struct profile_out_opts *o, struct diag *d);
/* Python's pstats (cProfile's marshal'd stats; what each number means:
 * out_pstats.c). */
int pstats_write(FILE *f, const struct profile *p, const struct profile_out_opts *o,
		 struct diag *d);
/* The Firefox Profiler's Gecko format, gzip'd (out_gecko.c). */
int gecko_write(FILE *f, const struct profile *p, const struct profile_out_opts *o, struct diag *d);
/* data gzip'd onto f (a gzip wrapper, no time in its header): 0 or -1. */
int profile_gzip(FILE *f, const uint8_t *data, size_t len);
/* s (NULL as "") as a JSON string, quotes included: json-c escapes it. */
void json_put_str(FILE *f, const char *s);
/* A source heatmap, one self-contained HTML page (out_heatmap.c). */
int heatmap_write(FILE *f, const struct profile *p, const struct profile_out_opts *o,
		  struct diag *d);
/* Chrome Trace Event Format: the samples as a timeline (out_chrome.c). */
int chrome_write(FILE *f, const struct profile *p, const struct profile_out_opts *o,
		 struct diag *d);
/* Its stack-frame table ("stackFrames", with "sf" ids), shared with trace's
 * Chrome output: chrome_frames_add interns a stack given root first and
 * returns the id of its leaf (-1 on ENOMEM or n = 0); chrome_frames_write
 * writes '"stackFrames":{...}' (-1 if an add failed); chrome_put_meta writes
 * one metadata event (what: "process_name" or "thread_name");
 * chrome_put_thread_meta the thread_name event of a thread, "NAME (tid N)"
 * (NAME cut at 150 bytes, on a character) or "tid N" when tname is NULL. */
struct chrome_frames;
struct chrome_frames *chrome_frames_new(void);
int64_t chrome_frames_add(struct chrome_frames *cf, const char *const *names, uint32_t n);
int chrome_frames_write(FILE *f, const struct chrome_frames *cf);
void chrome_frames_free(struct chrome_frames *cf);
void chrome_put_meta(FILE *f, const char *what, uint32_t pid, uint32_t tid, const char *name);
void chrome_put_thread_meta(FILE *f, uint32_t pid, uint32_t tid, const char *tname);
/* The raw format is a stream, one line per sample (grammar in out_raw.c).
 * raw_write_profile() replays the samples kept in time order, and fails if
 * any were aggregated past the bound: streams longer than that must be
 * written as they come with raw_write_sample(). raw_write_sample() writes
 * the bare sample line (version 1); the version 2 stream, which carries
 * everything the other writers read, is struct raw_stream's. */
int raw_write_sample(FILE *f, const struct sym_sample *s);
int raw_write_profile(FILE *f, const struct profile *p, struct diag *d);

/* What a "#def" line tells about the frames of one text: their kind, first
 * line, address and library (a "#lib" id, 0 none). A frame no #def named
 * has the kind its text says, and zeros. */
struct raw_def {
	int kind, firstlineno;
	uint64_t addr;
	uint32_t lib;
	/* "#exact": the true name and file where the text's are not (';' and
	 * controls cleaned, " (" in a name); NULL: the text's. Owned. */
	char *name, *file;
};
/* Frame text -> raw_def, for the writer (what it told) and the reader (what
 * it was told). raw_defs_find: the entry of text (len bytes), added with
 * zeros if add; NULL if absent, or on ENOMEM, or past RAW_MAX_DEFS. Entries
 * stay where they are until raw_defs_free. */
#define RAW_MAX_DEFS (1u << 24)
struct raw_defs;
struct raw_def *raw_defs_find(struct raw_defs **m, const char *text, size_t len, int add);
void raw_defs_free(struct raw_defs *m);

/* The stream again, for samples already in p (record's profile_add_raw):
 * s's head fields and the frames of stack (its p->last_stack), each
 * frame's text made once and then copied. Zero-initialise, set f.
 * raw_stream_begin() makes it a version 2 stream (header line now, then
 * "#w", "#def" and "#lib" lines ahead of the samples that need them);
 * raw_stream_write() writes a sample from its own frames, as
 * raw_write_sample() does, with its weight (profile_add_weighted()'s
 * weight_ns and offcpu_reason: 0, 0 for none); raw_stream_end() the trailer
 * (p's process and thread names, once they are final, and the source root
 * pprof was given: profile_out_opts.source_root, NULL for none). Each returns 0, or -1 (ENOMEM or a
 * write error). */
struct raw_stream {
	FILE *f;
	char **text; /* by frame id */
	uint32_t *len;
	uint32_t cap;
	char *line; /* one sample's frames, written at once */
	size_t line_cap;
	int meta;	       /* version 2: raw_stream_begin() was called */
	struct raw_defs *defs; /* what the #def lines told so far */
	struct raw_def **told; /* by frame id: its text's entry in defs */
	struct raw_def *want;  /* by frame id: its facts (valid where told is set) */
	const void **libs;     /* the #lib lines written: id - 1 -> key */
	uint32_t nlibs, cap_libs;
	uint32_t *off; /* raw_stream_write: where each frame's text starts */
};
int raw_stream_begin(struct raw_stream *rs, const struct profile *p);
int raw_stream_sample(struct raw_stream *rs, const struct profile *p, uint32_t stack,
		      const struct sym_sample *s);
int raw_stream_write(struct raw_stream *rs, const struct sym_sample *s, uint64_t weight_ns,
		     uint32_t offcpu_reason);
int raw_stream_end(struct raw_stream *rs, const struct profile *p, const char *source_root);
void raw_stream_free(struct raw_stream *rs);

/*
 * Output files. Created beside the destination under a temporary name and
 * moved into place only when complete, so a reader never sees half a
 * profile. Without force an existing path (file, symlink, anything) is
 * refused, and the final step is link(2), which fails rather than replaces
 * if the path appeared meanwhile. With force, rename(2) replaces the path
 * itself: a symlink there is replaced, never followed.
 */
struct out_file {
	FILE *f;
	char *path, *tmp;
	int force;
};

int out_file_open(struct out_file *of, const char *path, int force, struct diag *d);
/* Flush, close and move into place. Frees of in any case. */
int out_file_commit(struct out_file *of, struct diag *d);
/* Close and remove the temporary file. */
void out_file_abort(struct out_file *of);
/* The line every command prints on stderr once it wrote a file:
 * "bpfpy CMD: wrote PATH (N samples, FORMAT)", the path escaped. */
void out_file_wrote(const char *cmd, const char *path, uint64_t samples, const char *format);

/*
 * The one format table (formats.c). Every command that writes a profile
 * asks it: names and aliases for -f, the format an extension means, the
 * --help text, the writer.
 */
#define PROFILE_FMT_AGGREGATE 1u /* written from the aggregated stacks */
#define PROFILE_FMT_ORDERED   2u /* needs the samples in time order */
#define PROFILE_FMT_STREAM    4u /* one line per sample, as they come */
#define PROFILE_FMT_SOURCES   8u /* shows source files: record reads them (sources.c) */

struct profile_format {
	const char *name;
	const char *const *extensions; /* NULL-terminated, ".folded"; matched case-blind */
	const char *const *aliases;    /* NULL-terminated */
	int (*write)(FILE *f, const struct profile *p, const struct profile_out_opts *o,
		     struct diag *d);
	const char *description; /* for --help; NULL: the name says it */
	unsigned flags;		 /* PROFILE_FMT_* */
};

/* Ends with a row whose name is NULL. */
extern const struct profile_format profile_formats[];

/* By name or alias, and only if it has a flag of need (0: any); or NULL. */
const struct profile_format *profile_format_find(const char *name, unsigned need);
/* By the path's extension, or NULL. */
const struct profile_format *profile_format_for_path(const char *path);
/* The name of profile_format_for_path(path), or NULL. */
const char *profile_format_from_path(const char *path);
/* "collapsed, speedscope, ..." of the formats with a flag of need (0: all),
 * each followed by " (extensions: description)" when asked; malloc'd, NULL
 * on ENOMEM. */
char *profile_format_list(unsigned need, int with_ext, int with_desc);
/* For argp's help_filter: text with PROFILE_FORMATS_MARK replaced by
 * profile_format_list(need, 1, 1), malloc'd; text itself if it has no mark
 * (or on ENOMEM), as argp expects. */
#define PROFILE_FORMATS_MARK "@FORMATS@"
char *profile_format_help(const char *text, unsigned need);
/* fmt's writer (o NULL: defaults). */
int profile_format_write(const struct profile_format *fmt, FILE *f, const struct profile *p,
			 const struct profile_out_opts *o, struct diag *d);
/* Write p to path in format (a name or alias; NULL: from the extension). 0,
 * or -1 with d set: EXIT_USAGE for an unknown format or a path that exists
 * or cannot be created. */
int profile_write(const struct profile *p, const char *path, const char *format,
		  const struct profile_out_opts *opts, struct diag *d);

/* s as XML/HTML text or attribute content: markup characters escaped,
 * controls made spaces. Every name from a target goes through this (the SVG,
 * the oracle's HTML report). NULL prints nothing. */
void out_put_markup(FILE *f, const char *s);

#endif /* PROFILE_H */
