// SPDX-License-Identifier: MIT
/*
 * bpfpy record: sample Python stacks inside the kernel and write a profile.
 *
 * The kernel does the walk (bpf/sampler.bpf.c, or bpf/wallclock.bpf.c for
 * --clock wall); this file only drains the ring buffer at a steady pace,
 * names frames through each target's code cache, and aggregates.
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

#include "monotime.h"
#include "native_symbols.h"
#include "splice.h"
#include "bpf_sampler.h"
#include "cli_parse.h"
#include "commands.h"
#include "diag.h"
#include "profile.h"
#include "signals.h"
#include "record_targets.h"
#include "stack_reader.h"
#include "text_escape.h"

#define MAX_PIDS 256
/* How often the ring buffer is drained and new processes are looked for. */
#define POLL_MS	      20
#define SCAN_EVERY_MS 250

struct record_opts {
	pid_t pids[MAX_PIDS];
	int npids;
	int all, children;
	double rate_hz;
	int poisson;
	unsigned poisson_factor;
	int wall, idle;
	double duration; /* 0: until Ctrl-C */
	const char *output;
	const struct profile_format *format; /* -f, from the format table */
	int threads, no_lines, force;
	unsigned max_depth;
	unsigned ringbuf_mb;
	int verbose, quiet;
	int native, kernel; /* --native, --kernel */
};

static const char doc[] =
    "Sample the Python stacks of one or more processes inside the kernel and write a "
    "profile.\v"
    "CLOCKS. --clock cpu (default): a BPF perf_event program on the software cpu-clock of "
    "every online CPU (exact period mode) walks the interrupted thread's frames while it is "
    "not running; a thread is sampled RATE times per second of CPU it uses. --clock wall: "
    "every thread of the targets, running or not, is snapshotted RATE times per second by a "
    "sleepable BPF task iterator; threads not running are flagged idle and dropped unless "
    "--idle.\n"
    "POISSON. --poisson on the cpu clock runs the clock at K x RATE (K = --poisson-factor, "
    "default 8) and keeps each tick with probability 1/K in the kernel: gaps between kept "
    "ticks are geometric on the base period 1/(K x RATE), mean 1/RATE, coefficient of "
    "variation sqrt(1-1/K) (0.94 for K=8), approaching the exponential law as K grows. On "
    "the wall clock the snapshot times are drawn in user space with exponential gaps on an "
    "absolute schedule (CV 1).\n"
    "OUTPUT (-o FILE, -f FORMAT; format from the extension by default): " PROFILE_FORMATS_MARK
    ". Without -o, collapsed goes to stdout. An existing path (file, symlink, FIFO, device) "
    "is refused without --force (exit 2); README \"Output files\" says what --force does "
    "with each.\n"
    "SUMMARY (stderr, at the end): samples per process (past 40 processes, the 40 with "
    "the most samples, then one line for the rest); ticks (clock ticks in a target "
    "thread), kept (after Poisson thinning), emitted (records that reached user space), lost "
    "(ring buffer full), errors by cause (a failed walk, or a frame whose code was freed "
    "before it could be named, is counted, never drawn), truncated "
    "(deeper than --max-depth, leaf part kept); effective rate = emitted samples / elapsed "
    "seconds; in-kernel cost = mean BPF time per kept tick, and per frame walked; code "
    "cache = code objects whose names and lines are held, now and at most in one "
    "process (a process's cache is bounded and freed when it exits), and how many the "
    "kernel named on first sight (so that code freed before we read it keeps its name); with "
    "--native/--kernel, native symbols (files named, of those through debug files, kernel "
    "symbols) and the parts of samples not placed in the stack, by cause (README: "
    "--native).\n\n"
    "EXAMPLES:\n"
    "  sudo bpfpy record -p 1234 -d 10 -o profile.svg\n"
    "  sudo bpfpy record -p 1234,5678 -F 10khz --poisson -o out.pb.gz\n"
    "  sudo bpfpy record -a -d 30 --threads -o host.folded\n"
    "  sudo bpfpy record -p 1234 --clock wall --idle -o wall.json\n\n" EXIT_CODES_DOC;

enum {
	OPT_POISSON = 256,
	OPT_POISSON_FACTOR,
	OPT_CLOCK,
	OPT_IDLE,
	OPT_THREADS,
	OPT_NO_LINES,
	OPT_FORCE,
	OPT_SUBPROCESSES,
	OPT_MAX_DEPTH,
	OPT_RINGBUF,
	OPT_NATIVE,
	OPT_KERNEL,
};

static const struct argp_option options[] = {
    {"pid", 'p', "PID[,PID...]", 0, "Processes to sample (repeatable)", 0},
    {"all", 'a', NULL, 0, "Every CPython process on the host, also those started later", 0},
    {"subprocesses", OPT_SUBPROCESSES, NULL, 0, "Also sample descendants of the targets", 0},
    {"rate", 'F', "RATE", 0, "Samples per second: 997, 10k, 10khz (default 1khz)", 0},
    {"poisson", OPT_POISSON, NULL, 0, "Random (Poisson) sampling times, see below", 0},
    {"poisson-factor", OPT_POISSON_FACTOR, "K", 0, "Base clock factor for --poisson (2..64)", 0},
    {"clock", OPT_CLOCK, "cpu|wall", 0, "On-CPU samples (default) or all threads", 0},
    {"idle", OPT_IDLE, NULL, 0, "Wall clock: keep samples of threads not running", 0},
    {"duration", 'd', "SECONDS", 0, "Stop after this long (default: at Ctrl-C)", 0},
    {"output", 'o', "FILE", 0, "Write the profile here (default: collapsed on stdout)", 0},
    {"format", 'f', "FORMAT", 0, PROFILE_FORMATS_MARK, 0},
    {"threads", OPT_THREADS, NULL, 0, "Keep threads apart (collapsed: pid:N;tid:N prefix)", 0},
    {"no-lines", OPT_NO_LINES, NULL, 0, "Aggregate by function, not line", 0},
    {"force", OPT_FORCE, NULL, 0, "Overwrite an existing output file", 0},
    {"max-depth", OPT_MAX_DEPTH, "N", 0, "Frames per stack at most (1..1024, default 1024)", 0},
    {"ringbuf-mb", OPT_RINGBUF, "MB", 0, "Ring buffer size (default 16)", 0},
    {"native", OPT_NATIVE, NULL, 0, "Native (C) frames too, spliced with the Python ones", 0},
    {"kernel", OPT_KERNEL, NULL, 0, "Kernel frames too, on top of the stack", 0},
    {"quiet", 'q', NULL, 0, "No progress line, no summary", 0},
    {"verbose", 'v', NULL, 0, "libbpf log and per-process notes on stderr", 0},
    {0},
};

static error_t parse(int key, char *arg, struct argp_state *state)
{
	struct record_opts *o = state->input;

	switch (key) {
	case 'p':
		o->npids = parse_pid_list(arg, o->pids, o->npids, MAX_PIDS);
		if (o->npids < 0)
			argp_error(state, "invalid PID list '%s'", arg);
		break;
	case 'a':
		o->all = 1;
		break;
	case OPT_SUBPROCESSES:
		o->children = 1;
		break;
	case 'F':
		o->rate_hz = parse_rate_hz(arg);
		if (o->rate_hz <= 0 || o->rate_hz > 1e6)
			argp_error(state, "invalid rate '%s' (e.g. 997, 10k, 10khz)", arg);
		break;
	case OPT_POISSON:
		o->poisson = 1;
		break;
	case OPT_POISSON_FACTOR:
		o->poisson_factor = (unsigned)cli_long(state, arg, 2, 64, "--poisson-factor");
		break;
	case OPT_CLOCK:
		if (!strcmp(arg, "wall"))
			o->wall = 1;
		else if (strcmp(arg, "cpu"))
			argp_error(state, "--clock must be cpu or wall");
		break;
	case OPT_IDLE:
		o->idle = 1;
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
		o->format = profile_format_find(arg, 0);
		if (!o->format)
			argp_error(state, "unknown format '%s'", arg);
		break;
	case OPT_THREADS:
		o->threads = 1;
		break;
	case OPT_NO_LINES:
		o->no_lines = 1;
		break;
	case OPT_FORCE:
		o->force = 1;
		break;
	case OPT_MAX_DEPTH:
		o->max_depth = (unsigned)cli_long(state, arg, 1, BPFPY_MAX_DEPTH, "--max-depth");
		break;
	case OPT_RINGBUF:
		o->ringbuf_mb = (unsigned)cli_long(state, arg, 1, 1024, "--ringbuf-mb");
		break;
	case OPT_NATIVE:
		o->native = 1;
		break;
	case OPT_KERNEL:
		o->kernel = 1;
		break;
	case 'q':
		o->quiet = 1;
		break;
	case 'v':
		o->verbose = 1;
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	case ARGP_KEY_END:
		if (!o->npids && !o->all)
			argp_error(state, "give -p PID or -a");
		if (o->idle && !o->wall)
			argp_error(state, "--idle goes with --clock wall");
		if ((o->native || o->kernel) && o->wall)
			argp_error(state, "--native and --kernel go with --clock cpu");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

struct rec_ctx {
	struct record_opts *o;
	struct target_set *ts;
	struct profile *prof;
	FILE *raw; /* streaming raw output, or NULL */
	struct sym_frame *frames;
	struct rec_target *last; /* target of the previous record */
	uint64_t samples, dropped_idle, errors, unknown_pid;
	uint64_t err_by_cause[WALK_ERR__COUNT];
	struct native_syms *ns; /* --native / --kernel */
	struct splice_scratch *sc;
	uint64_t splice_causes[SPLICE__COUNT];
};

static int on_sample(void *arg, const struct sample_hdr *h, const struct frame_rec *frames)
{
	struct rec_ctx *c = arg;
	struct rec_target *t = c->last;
	struct sym_sample s = {
	    .ts_ns = h->ts_ns,
	    .pid = h->pid,
	    .tid = h->tid,
	    .cpu = h->cpu,
	    .flags = h->flags,
	    .frames = c->frames,
	};
	int unnamed = 0;

	/* Consecutive records mostly come from one process: skip the scan of
	 * every target (dead ones included, with -a) on the per-sample path. */
	if (!t || t->exited || t->pid != (pid_t)h->pid)
		t = c->last = targets_find(c->ts, (pid_t)h->pid);
	if (!t || h->ts_ns < t->since_ns) { /* gone, or taken before an exec */
		c->unknown_pid++;
		return 0;
	}
	if (h->flags & SAMPLE_ERROR) {
		c->errors++;
		t->errors++;
		c->err_by_cause[h->err < WALK_ERR__COUNT ? h->err : 0]++;
		return 0;
	}
	if ((h->flags & SAMPLE_IDLE) && !c->o->idle) {
		c->dropped_idle++;
		t->idle++;
		return 0;
	}
	for (uint32_t i = 0; i < h->nframes && i < BPFPY_MAX_DEPTH; i++)
		unnamed |= code_cache_symbolize(t->cache, &frames[i], &c->frames[i]) != CODE_OK;
	if (unnamed) {
		/* A frame we cannot name (its code was freed before we, or the
		 * kernel, read it) makes no stack: an error of the sample. */
		code_cache_end_sample(t->cache);
		c->errors++;
		t->errors++;
		c->err_by_cause[WALK_ERR_UNNAMED]++;
		return 0;
	}
	s.nframes = h->nframes;
	if (c->ns && (h->nnative || h->nkernel))
		splice_record(c->ns, c->sc, h, frames, c->frames,
			      t->proc ? t->proc->bin.version_hex : 0, &s.frames, &s.nframes,
			      c->splice_causes);
	t->samples++;
	c->samples++;
	if (c->raw)
		raw_write_sample(c->raw, &s);
	else
		profile_add(c->prof, &s);
	code_cache_end_sample(t->cache);
	return 0;
}

/* Exponential gap with mean 1/rate, for wall-clock snapshots. */
static double exp_gap(double rate)
{
	double u = (random() + 1.0) / ((double)RAND_MAX + 2.0);

	return -log(u) / rate;
}

static void progress(const struct rec_ctx *c, struct bpf_sampler *s, double elapsed)
{
	uint64_t cnt[CNT__COUNT];

	if (bpf_sampler_counters(s, cnt))
		return;
	fprintf(stderr, "\r[%6.1fs] %llu samples, %.0f/s, %llu lost, %llu errors   ", elapsed,
		(unsigned long long)c->samples, elapsed > 0 ? c->samples / elapsed : 0.0,
		(unsigned long long)cnt[CNT_LOST], (unsigned long long)c->errors);
}

/* Rows of the summary beyond this are folded into one line: `record -a`
 * on a busy host meets thousands of processes (the soak: 1186 in ten
 * minutes), and the ones worth a row are those with the most samples. */
#define SUMMARY_ROWS 40

static int by_samples_desc(const void *a, const void *b)
{
	const struct rec_target *x = *(struct rec_target *const *)a;
	const struct rec_target *y = *(struct rec_target *const *)b;

	return x->samples < y->samples ? 1 : x->samples > y->samples ? -1 : 0;
}

static void print_target_rows(const struct target_set *ts)
{
	struct rec_target **v = ts->t, **sorted = NULL;
	uint64_t more_samples = 0, more_errors = 0;
	int n = ts->n, shown = n;

	if (n > SUMMARY_ROWS) {
		sorted = malloc((size_t)n * sizeof(*sorted));
		if (sorted) {
			memcpy(sorted, ts->t, (size_t)n * sizeof(*sorted));
			qsort(sorted, (size_t)n, sizeof(*sorted), by_samples_desc);
			v = sorted;
			shown = SUMMARY_ROWS;
		}
	}
	for (int i = 0; i < n; i++) {
		const struct rec_target *t = v[i];

		if (i >= shown) {
			more_samples += t->samples;
			more_errors += t->errors;
			continue;
		}
		char ec[64], ev[64];

		fprintf(stderr, "  pid %-7d %-16s CPython %-9s %8llu samples, %llu errors%s%s\n",
			t->pid, text_esc(t->comm, ec, sizeof(ec)),
			text_esc(t->version, ev, sizeof(ev)), (unsigned long long)t->samples,
			(unsigned long long)t->errors, t->idle ? ", idle dropped" : "",
			t->exited == TARGET_EXECED ? " (exec'd)"
			: t->exited		   ? " (exited)"
						   : "");
	}
	if (shown < n)
		fprintf(stderr,
			"  ... %d more processes, fewer samples each: %llu samples, %llu errors\n",
			n - shown, (unsigned long long)more_samples,
			(unsigned long long)more_errors);
	free(sorted);
}

static void summary(const struct rec_ctx *c, struct bpf_sampler *s, double elapsed)
{
	uint64_t cnt[CNT__COUNT];
	const struct record_opts *o = c->o;
	size_t now, peak;
	int live;

	if (bpf_sampler_counters(s, cnt))
		memset(cnt, 0, sizeof(cnt));
	fprintf(stderr, "bpfpy record: %.2f s, clock %s, asked %.0f Hz%s\n", elapsed,
		o->wall ? "wall" : "cpu", o->rate_hz,
		o->poisson ? (o->wall ? " (Poisson, exponential gaps)"
				      : " (Poisson: geometric gaps on a faster clock)")
			   : "");
	print_target_rows(c->ts);
	fprintf(stderr,
		"  ticks %llu, kept %llu, emitted %llu, lost %llu, no thread state %llu, "
		"truncated %llu\n",
		(unsigned long long)cnt[CNT_TICKS], (unsigned long long)cnt[CNT_KEPT],
		(unsigned long long)cnt[CNT_EMITTED], (unsigned long long)cnt[CNT_LOST],
		(unsigned long long)cnt[CNT_NO_PYTHON], (unsigned long long)cnt[CNT_TRUNCATED]);
	for (int e = 1; e < WALK_ERR__COUNT; e++)
		if (cnt[CNT_ERR_BASE + e])
			fprintf(stderr, "  errors: %s %llu\n", walk_error_name(e),
				(unsigned long long)cnt[CNT_ERR_BASE + e]);
	if (o->wall && c->dropped_idle)
		fprintf(stderr, "  idle samples dropped: %llu (keep them with --idle)\n",
			(unsigned long long)c->dropped_idle);
	if (c->ns)
		splice_summary(stderr, c->ns, c->splice_causes);
	now = targets_cache_usage(c->ts, &live, &peak);
	fprintf(stderr,
		"  code cache: %zu objects in %d live processes; largest cache %zu (bound %d); "
		"%llu named by the kernel\n",
		now, live, peak, CODE_CACHE_DEFAULT_CAP, (unsigned long long)cnt[CNT_NAMED]);
	fprintf(stderr, "  effective rate %.1f samples/s", elapsed > 0 ? c->samples / elapsed : 0);
	if (cnt[CNT_KEPT])
		fprintf(stderr, "; in-kernel cost %.2f us/sample, %.3f us/frame\n",
			cnt[CNT_COST_NS] / 1e3 / cnt[CNT_KEPT],
			cnt[CNT_FRAMES] ? cnt[CNT_COST_NS] / 1e3 / cnt[CNT_FRAMES] : 0.0);
	else
		fprintf(stderr, "\n");
}

static int record_loop(struct rec_ctx *c, struct bpf_sampler *s)
{
	struct record_opts *o = c->o;
	int tty = isatty(2) && !o->quiet;
	double t0 = mono_s(), last_scan = t0, last_progress = t0;
	double next_snap = t0, deadline = o->duration > 0 ? t0 + o->duration : INFINITY;
	struct diag d = {0};

	while (!signals_stop_requested()) {
		double now = mono_s();
		int wait_ms = POLL_MS;

		if (now >= deadline)
			break;
		if (o->wall && now >= next_snap) {
			if (bpf_sampler_snapshot(s, &d))
				return diag_report(&d);
			/* Absolute schedule: our own work never pushes it back. */
			next_snap += o->poisson ? exp_gap(o->rate_hz) : 1.0 / o->rate_hz;
			if (next_snap < now - 1.0) /* fell far behind: do not burst */
				next_snap = now;
		}
		if (o->wall) {
			double until = (next_snap - mono_s()) * 1000;

			wait_ms = until < 0 ? 0 : until < POLL_MS ? (int)until : POLL_MS;
		}
		bpf_sampler_poll(s, wait_ms, on_sample, c);
		now = mono_s();
		if (now - last_scan >= SCAN_EVERY_MS / 1000.0) {
			int alive;

			targets_scan(c->ts);
			alive = targets_reap(c->ts);
			if (c->ns) /* a PID seen again is another image */
				for (int i = 0; i < c->ts->n; i++)
					if (c->ts->t[i]->exited)
						native_syms_forget(c->ns, c->ts->t[i]->pid);
			if (!alive && !o->all) {
				if (!o->quiet)
					fprintf(stderr, "%sbpfpy record: every target exited\n",
						tty ? "\n" : "");
				break;
			}
			last_scan = now;
		}
		if (tty && now - last_progress >= 0.5) {
			progress(c, s, now - t0);
			last_progress = now;
		}
	}
	/* What the kernel wrote before we stopped still counts: stop the
	 * clocks first, or at high rates the drain would never catch up. */
	bpf_sampler_stop(s);
	while (bpf_sampler_poll(s, 0, on_sample, c) > 0)
		;
	if (tty)
		fprintf(stderr, "\n");
	if (!o->quiet)
		summary(c, s, mono_s() - t0);
	return EXIT_OK;
}

/* --help: the formats come from the one format table. */
static char *help_filter(int key, const char *text, void *input)
{
	(void)input;
	if (key == 'f' && text && !strcmp(text, PROFILE_FORMATS_MARK)) {
		char *names = profile_format_list(0, 0, 0);

		return names ? names : (char *)text;
	}
	return key == ARGP_KEY_HELP_POST_DOC ? profile_format_help(text, 0) : (char *)text;
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o = {.rate_hz = 1000};
	struct argp argp = {options, parse, NULL, doc, NULL, help_filter, NULL};
	struct target_set ts = {0};
	struct bpf_sampler *s = NULL;
	struct rec_ctx c = {.o = &o, .ts = &ts};
	struct profile_out_opts po = {0};
	struct out_file of = {0};
	struct diag d = {0};
	const struct profile_format *format;
	int ret = EXIT_OK;

	if (argp_parse(&argp, argc, argv, 0, NULL, &o))
		return EXIT_USAGE;
	/* Until sampling starts a signal ends us, removing the temp output. */
	if (signals_install(&d))
		return diag_report(&d);
	format = o.format   ? o.format
		 : o.output ? profile_format_for_path(o.output)
			    : profile_format_find("collapsed", 0);
	if (!format) {
		char *known = profile_format_list(0, 1, 0);

		fprintf(stderr, "bpfpy record: cannot tell the format of '%s': give -f (%s)\n",
			o.output, known ? known : "");
		free(known);
		return EXIT_USAGE;
	}
	/* Refuse an unwritable or existing output before sampling anything. */
	if (o.output && out_file_open(&of, o.output, o.force, &d))
		return diag_report(&d);
	srandom((unsigned)time(NULL) ^ (unsigned)getpid());
	ts.max_depth = o.max_depth;
	ts.all = o.all;
	ts.children = o.children;
	ts.verbose = o.verbose;
	c.frames = calloc(BPFPY_MAX_DEPTH, sizeof(*c.frames));
	c.prof = profile_new((uint64_t)(1e9 / o.rate_hz), o.wall ? "wall" : "cpu");
	if (o.native || o.kernel) {
		c.ns = native_syms_new();
		c.sc = splice_scratch_new();
	}
	if (!c.frames || !c.prof || ((o.native || o.kernel) && (!c.ns || !c.sc))) {
		diag_errno(&d, ENOMEM, "record");
		ret = diag_report(&d);
		goto out;
	}
	/* Only speedscope writes the profile's samples in time order (raw is
	 * streamed, not kept). For the others the order is memory spent for
	 * nothing: 24 bytes a sample, megabytes a minute for a long -a run. */
	if (!(format->flags & PROFILE_FMT_ORDERED))
		profile_set_max_ordered(c.prof, 0);
	{
		struct bpf_sampler_opts so = {
		    .rate_hz = o.rate_hz,
		    .poisson = o.poisson && !o.wall,
		    .poisson_factor = o.poisson_factor,
		    .ringbuf_mb = o.ringbuf_mb,
		    .verbose = o.verbose,
		    .wall = o.wall,
		    .targets_grow = o.all || o.children,
		    .native = o.native,
		    .kernel = o.kernel,
		};

		if (bpf_sampler_open(&s, &so, &d)) {
			ret = diag_report(&d);
			goto out;
		}
	}
	ts.sampler = s;
	for (int i = 0; i < o.npids; i++) {
		if (targets_add(&ts, o.pids[i], &d)) {
			ret = diag_report(&d);
			goto out;
		}
	}
	targets_scan(&ts);
	if (bpf_sampler_start(s, &d)) {
		ret = diag_report(&d);
		goto out;
	}
	/* From here on INT, TERM and HUP end the run and keep what it got. */
	signals_set_graceful(1);
	if (format->flags & PROFILE_FMT_STREAM)
		c.raw = o.output ? of.f : stdout;
	ret = record_loop(&c, s);
	for (int i = 0; i < ts.n; i++)
		profile_set_comm(c.prof, (uint32_t)ts.t[i]->pid, ts.t[i]->comm);
	po.threads = o.threads;
	po.no_lines = o.no_lines;
	po.force = o.force;
	if (ret == EXIT_OK && !c.raw) {
		FILE *f = o.output ? of.f : stdout;
		if (profile_format_write(format, f, c.prof, &po, &d))
			ret = diag_report(&d);
	}
	if (o.output) {
		if (ret == EXIT_OK && out_file_commit(&of, &d))
			ret = diag_report(&d);
		else if (ret != EXIT_OK)
			out_file_abort(&of);
		o.output = NULL;
	} else {
		fflush(stdout);
	}
out:
	if (o.output)
		out_file_abort(&of);
	bpf_sampler_close(s);
	targets_free(&ts);
	profile_free(c.prof);
	free(c.frames);
	native_syms_free(c.ns);
	splice_scratch_free(c.sc);
	return ret;
}
