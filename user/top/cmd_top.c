// SPDX-License-Identifier: MIT
/*
 * bpfpy top: a live view of where the targets' time goes, by function,
 * refreshed every second: the sampler of record (same BPF programs, same
 * targets, same code caches), aggregated in a profile as record does, and
 * drawn with a few ANSI sequences (no curses: they work in any terminal
 * emulator, tmux and screen included).
 *
 * The terminal is put in non-canonical mode without echo for single-key
 * commands and onto the alternate screen; it is restored on every way out:
 * q, the end of the targets, INT/TERM/HUP (graceful), and every other
 * signal through the release hook of signals.c, which runs before bpfpy
 * dies or stops (on SIGCONT the next refresh sets the mode again).
 */
#include <argp.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "bpf_sampler.h"
#include "cli_parse.h"
#include "commands.h"
#include "diag.h"
#include "monotime.h"
#include "profile.h"
#include "record_targets.h"
#include "signals.h"
#include "text_escape.h"
#include "async_stack.h"
#include "top_async.h"

#define POLL_MS 20

struct top_opts {
	struct target_sel sel; /* -p, -a, --subprocesses */
	int wall, idle;
	double rate_hz, duration;
	int sort; /* 'o' own, 't' total, 'n' name */
	int verbose;
	int async; /* --async: rows per task chain */
};

static const char doc[] =
    "A live view of the functions of one or more CPython processes, by share of samples, "
    "refreshed every second.\v"
    "The header names the targets, the clock and rate, then samples (per second over the "
    "last refresh), lost (ring buffer full) and errors (failed walks, frames that could "
    "not be named). Each row: OWN% (samples with the function as leaf), TOTAL% (samples "
    "with it anywhere on the stack), the same as counts, and the function as 'qualname "
    "(file)', escaped like every name bpfpy prints. Counts are since the start or the "
    "last reset.\n"
    "KEYS: o sort by own, t by total, n by name, r reset the counts, q quit (also Ctrl-C). "
    "Without a terminal on stdin keys are not read; without one on stdout each refresh is "
    "printed after the previous one, with no escape sequences.\n"
    "--async (CPython 3.11+, docs/async.md): rows per task chain instead, 'ROOT > ... > "
    "RUNNING' as record --async composes it (the running task and its first awaiter read "
    "in the kernel, the awaiters above from the task graph): OWN% the samples whose running "
    "task's chain is the row, TOTAL% those whose chain starts with it (the row's task and the "
    "tasks under it), and "
    "'(no task)' for samples of loops running none and of threads without one.\n"
    "The terminal is restored on every exit (q, Ctrl-C, the targets' end, any signal).\n\n"
    "EXAMPLES:\n"
    "  sudo bpfpy top -p 1234\n"
    "  sudo bpfpy top -a --clock wall\n"
    "  sudo bpfpy top -p 1234 --async\n\n" EXIT_CODES_DOC;

enum { OPT_CLOCK = 256, OPT_IDLE, OPT_ASYNC };

static const struct argp_option options[] = {
    {"clock", OPT_CLOCK, "cpu|wall", 0, "On-CPU samples (default) or all threads", 0},
    {"idle", OPT_IDLE, NULL, 0, "Wall clock: count threads not running too", 0},
    {"rate", 'F', "RATE", 0, "Samples per second per thread (default 100)", 0},
    {"duration", 'd', "SECONDS", 0, "Stop after this long (default: at q)", 0},
    {"async", OPT_ASYNC, NULL, 0, "Rows per asyncio task chain (Python 3.11+)", 0},
    {"verbose", 'v', NULL, 0, "libbpf log and per-process notes on stderr", 0},
    {0},
};

static error_t parse(int key, char *arg, struct argp_state *state)
{
	struct top_opts *o = state->input;

	switch (key) {
	case OPT_CLOCK:
		if (!strcmp(arg, "wall"))
			o->wall = 1;
		else if (strcmp(arg, "cpu"))
			argp_error(state, "--clock must be cpu or wall");
		break;
	case OPT_IDLE:
		o->idle = 1;
		break;
	case OPT_ASYNC:
		o->async = 1;
		break;
	case 'F':
		o->rate_hz = parse_rate_hz(arg);
		if (o->rate_hz <= 0 || o->rate_hz > 1e5)
			argp_error(state, "invalid rate '%s' (e.g. 97, 1k)", arg);
		break;
	case 'd':
		o->duration = parse_seconds(arg);
		if (o->duration <= 0)
			argp_error(state, "invalid duration '%s'", arg);
		break;
	case 'v':
		o->verbose = 1;
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &o->sel;
		break;
	case ARGP_KEY_END:
		if (!o->sel.npids && !o->sel.all)
			argp_error(state, "give -p PID or -a");
		if (o->idle && !o->wall)
			argp_error(state, "--idle goes with --clock wall");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* The terminal as we found it; written back by every way out. */
static struct termios saved_tio;
static volatile sig_atomic_t tio_saved, screen_on;

/* Async-signal-safe: the release hook and the normal exit. */
static void tty_restore(void)
{
	static const char leave[] = "\033[?25h\033[?1049l";

	if (screen_on) {
		(void)!write(1, leave, sizeof(leave) - 1);
		screen_on = 0;
	}
	if (tio_saved)
		tcsetattr(0, TCSANOW, &saved_tio);
}

/* Non-canonical, no echo: keys come one at a time, unseen. Again after a
 * SIGCONT (the stop handler restored the terminal before stopping). */
static void tty_raw(int keys, int screen)
{
	struct termios t;

	if (keys && !tcgetattr(0, &t)) {
		if (!tio_saved) {
			saved_tio = t;
			tio_saved = 1;
		}
		if (t.c_lflag & (ICANON | ECHO)) {
			t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
			t.c_cc[VMIN] = 0;
			t.c_cc[VTIME] = 0;
			tcsetattr(0, TCSANOW, &t);
		}
	}
	if (screen && !screen_on) {
		fputs("\033[?1049h\033[?25l", stdout);
		fflush(stdout);
		screen_on = 1;
	}
}

struct top_ctx {
	struct top_opts *o;
	struct target_set *ts;
	struct profile *prof;
	struct sym_frame *frames;
	struct rec_target *last;
	uint64_t samples, errors, window; /* window: since the last refresh */
	struct async_stats async;	  /* --async */
};

static int on_sample(void *arg, const struct sample_hdr *h, const struct frame_rec *frames)
{
	struct top_ctx *c = arg;
	struct rec_target *t = targets_of_record(c->ts, &c->last, h);
	struct sym_sample s = {
	    .ts_ns = h->ts_ns,
	    .pid = h->pid,
	    .tid = h->tid,
	    .cpu = h->cpu,
	    .flags = h->flags,
	    .frames = c->frames,
	};

	if (!t)
		return 0;
	if (h->flags & SAMPLE_ERROR) {
		c->errors++;
		return 0;
	}
	if ((h->flags & SAMPLE_IDLE) && !c->o->idle)
		return 0;
	if (c->o->async && t->async && t->proc && async_task_rec(h, frames)) {
		int unnamed = 0;

		s.nframes = async_compose(t, h, frames, async_task_rec(h, frames), c->frames,
					  BPFPY_MAX_DEPTH, &c->async, &unnamed);
		if (unnamed) {
			c->errors++;
			code_cache_end_sample(t->cache);
			return 0;
		}
	} else if (targets_symbolize(t, h, frames, c->frames)) {
		c->errors++;
		return 0;
	} else {
		s.nframes = h->nframes;
	}
	profile_add(c->prof, &s);
	t->samples++;
	c->samples++;
	c->window++;
	code_cache_end_sample(t->cache);
	return 0;
}

struct row {
	uint32_t func;
	uint64_t own, total;
	const struct profile *p;
};

static int sort_key; /* for qsort: one sort at a time */

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	int by_name = sort_key == 'n';

	if (!by_name) {
		uint64_t vx = sort_key == 't' ? x->total : x->own;
		uint64_t vy = sort_key == 't' ? y->total : y->own;

		if (vx != vy)
			return vx < vy ? 1 : -1;
	}
	{
		const struct prof_func *fx = &x->p->funcs[x->func], *fy = &y->p->funcs[y->func];
		int r = strcmp(profile_str(x->p, fx->name), profile_str(y->p, fy->name));

		if (r)
			return r;
		r = strcmp(profile_str(x->p, fx->file), profile_str(y->p, fy->file));
		if (r)
			return r;
	}
	return x->func < y->func ? -1 : x->func > y->func;
}

/* Own and total per function, over every stack of the profile. */
static struct row *tally(const struct profile *p, uint32_t *nrows)
{
	struct row *rows = calloc(p->nfuncs + 1, sizeof(*rows));
	uint32_t *seen = calloc(p->nfuncs + 1, sizeof(*seen)), n = 0;

	if (!rows || !seen) {
		free(rows);
		free(seen);
		return NULL;
	}
	for (uint32_t f = 0; f < p->nfuncs; f++)
		rows[f] = (struct row){.func = f, .p = p};
	for (uint32_t i = 0; i < p->nstacks; i++) {
		const struct prof_stack *st = &p->stacks[i];

		if (!st->nframes)
			continue;
		rows[p->frames[st->frames[0]].func].own += st->count;
		/* Recursion counts a function once per stack: stamp it. */
		for (uint32_t j = 0; j < st->nframes; j++) {
			uint32_t f = p->frames[st->frames[j]].func;

			if (seen[f] != i + 1) {
				seen[f] = i + 1;
				rows[f].total += st->count;
			}
		}
	}
	for (uint32_t f = 0; f < p->nfuncs; f++)
		if (rows[f].total)
			rows[n++] = rows[f];
	free(seen);
	*nrows = n;
	return rows;
}

/* At most cols columns of the escaped text s (ASCII and well-formed UTF-8
 * only, after text_escape), cut at a whole character. */
static void put_cols(FILE *f, const char *s, int cols)
{
	while (*s && cols > 0) {
		int n = utf8_seq_len(s);

		if (n <= 0)
			n = 1;
		fwrite(s, 1, (size_t)n, f);
		s += n;
		cols--;
	}
}

static void render(struct top_ctx *c, struct bpf_sampler *s, double elapsed, double rate,
		   int screen)
{
	const struct profile *p = c->prof;
	const char *eol = screen ? "\033[K\n" : "\n";
	struct winsize ws = {0};
	uint64_t cnt[CNT__COUNT] = {0};
	int rows_max = 40, cols = 120, live = 0;
	uint32_t nrows = 0;
	struct row *rows = tally(p, &nrows);
	char label[1024], ec[64], ev[64];

	if (screen && !ioctl(1, TIOCGWINSZ, &ws) && ws.ws_row > 6 && ws.ws_col > 40) {
		rows_max = ws.ws_row - 5;
		cols = ws.ws_col;
	}
	bpf_sampler_counters(s, cnt);
	if (screen)
		fputs("\033[H", stdout);
	printf("bpfpy top: ");
	for (int i = 0, shown = 0; i < c->ts->n; i++) {
		const struct rec_target *t = c->ts->t[i];

		if (t->exited)
			continue;
		live++;
		if (shown++ < 3)
			printf("%spid %d (%s, CPython %s)", shown > 1 ? ", " : "", t->pid,
			       text_esc(t->comm, ec, sizeof(ec)),
			       text_esc(t->version, ev, sizeof(ev)));
	}
	if (live > 3)
		printf(", %d more", live - 3);
	if (!live)
		printf("no live target");
	printf(" - %s clock, %.0f Hz, %.0f s%s", c->o->wall ? "wall" : "cpu", c->o->rate_hz,
	       elapsed, eol);
	printf("samples %llu (%.0f/s), lost %llu, errors %llu - sort: %s - keys: o own, t "
	       "total, n name, r reset, q quit%s",
	       (unsigned long long)c->samples, rate, (unsigned long long)cnt[CNT_LOST],
	       (unsigned long long)c->errors,
	       c->o->sort == 't'   ? "total"
	       : c->o->sort == 'n' ? "name"
				   : "own",
	       eol);
	printf("%s", eol);
	if (c->o->async) {
		top_async_rows(p, rows_max, cols, eol);
		rows_max = 0;
	} else {
		printf("  OWN%%  TOTAL%%      OWN    TOTAL  FUNCTION%s", eol);
	}
	if (rows && rows_max) {
		sort_key = c->o->sort;
		qsort(rows, nrows, sizeof(*rows), row_cmp);
		for (uint32_t i = 0; i < nrows && (int)i < rows_max; i++) {
			double tot = p->total ? (double)p->total : 1.0;

			printf("%6.1f %6.1f %8llu %8llu  ", 100.0 * rows[i].own / tot,
			       100.0 * rows[i].total / tot, (unsigned long long)rows[i].own,
			       (unsigned long long)rows[i].total);
			profile_frame_label(p, rows[i].func, 1, 1, label, sizeof(label));
			put_cols(stdout, label, cols - 34);
			fputs(eol, stdout);
		}
	}
	if (screen)
		fputs("\033[J", stdout);
	else
		fputs("\n", stdout);
	fflush(stdout);
	free(rows);
}

/* Keys typed since the last look: 1 to quit, 2 to redraw now. */
static int read_keys(struct top_ctx *c, int keys)
{
	char buf[32];
	ssize_t n;
	int redraw = 0;

	if (!keys)
		return 0;
	n = read(0, buf, sizeof(buf));
	for (ssize_t i = 0; i < n; i++) {
		switch (buf[i]) {
		case 'q':
		case 'Q':
			return 1;
		case 'o':
		case 't':
		case 'n':
			c->o->sort = buf[i];
			redraw = 2;
			break;
		case 'r': {
			struct profile *np = profile_new(c->prof->period_ns, c->prof->clock);

			if (np) { /* on ENOMEM the counts simply go on */
				profile_set_max_ordered(np, 0);
				profile_free(c->prof);
				c->prof = np;
				c->samples = 0;
			}
			redraw = 2;
			break;
		}
		}
	}
	return redraw;
}

int cmd_top(int argc, char **argv)
{
	struct top_opts o = {.rate_hz = 100, .sort = 'o'};
	struct argp_child children[] = {{&target_sel_argp, 0, "Targets:", 0}, {0}};
	struct argp argp = {options, parse, NULL, doc, children, NULL, NULL};
	struct target_set ts = {0};
	struct bpf_sampler *s = NULL;
	struct top_ctx c = {.o = &o, .ts = &ts};
	struct diag d = {0};
	int ret = EXIT_OK, keys, screen;
	double t0, last_draw, last_scan, next_snap, deadline, rate = 0;

	if (argp_parse(&argp, argc, argv, 0, NULL, &o))
		return EXIT_USAGE;
	if (signals_install(&d))
		return diag_report(&d);
	keys = isatty(0);
	screen = isatty(1);
	ts.all = o.sel.all;
	ts.children = o.sel.children;
	ts.verbose = o.verbose;
	ts.async = o.async;
	c.frames = calloc(BPFPY_MAX_DEPTH, sizeof(*c.frames));
	c.prof = profile_new((uint64_t)(1e9 / o.rate_hz), o.wall ? "wall" : "cpu");
	if (!c.frames || !c.prof) {
		diag_errno(&d, ENOMEM, "top");
		ret = diag_report(&d);
		goto out;
	}
	profile_set_max_ordered(c.prof, 0);
	{
		struct bpf_sampler_opts so = {
		    .rate_hz = o.rate_hz,
		    .verbose = o.verbose,
		    .wall = o.wall,
		    .targets_grow = o.sel.all || o.sel.children,
		};

		if (bpf_sampler_open(&s, &so, &d)) {
			ret = diag_report(&d);
			goto out;
		}
	}
	ts.sampler = s;
	for (int i = 0; i < o.sel.npids; i++)
		if (targets_add(&ts, o.sel.pids[i], &d)) {
			ret = diag_report(&d);
			goto out;
		}
	targets_scan(&ts);
	if (bpf_sampler_start(s, &d)) {
		ret = diag_report(&d);
		goto out;
	}
	signals_set_release_hook(tty_restore);
	signals_set_graceful(1);
	t0 = last_draw = last_scan = next_snap = mono_s();
	deadline = o.duration > 0 ? t0 + o.duration : INFINITY;
	tty_raw(keys, screen);
	render(&c, s, 0, 0, screen);
	while (!signals_stop_requested()) {
		double now = mono_s();

		if (now >= deadline)
			break;
		if (o.wall && now >= next_snap) {
			if (bpf_sampler_snapshot(s, &d)) {
				ret = diag_report(&d);
				break;
			}
			next_snap += 1.0 / o.rate_hz;
			if (next_snap < now - 1.0)
				next_snap = now;
		}
		{
			double until = o.wall ? (next_snap - mono_s()) * 1000 : POLL_MS;

			bpf_sampler_poll(s,
					 until < 0	   ? 0
					 : until < POLL_MS ? (int)until
							   : POLL_MS,
					 on_sample, &c);
		}
		switch (read_keys(&c, keys)) {
		case 1:
			goto out;
		case 2:
			render(&c, s, mono_s() - t0, rate, screen);
			break;
		}
		now = mono_s();
		if (now - last_scan >= 0.25) {
			targets_scan(&ts);
			if (o.async)
				async_targets_poll(&ts);
			if (!targets_reap(&ts) && !o.sel.all) {
				render(&c, s, now - t0, rate, screen);
				tty_restore();
				fprintf(stderr, "bpfpy top: every target exited\n");
				goto out;
			}
			last_scan = now;
		}
		if (now - last_draw >= 1.0) {
			rate = c.window / (now - last_draw);
			c.window = 0;
			tty_raw(keys, screen); /* again, after a SIGCONT */
			render(&c, s, now - t0, rate, screen);
			last_draw = now;
		}
	}
out:
	tty_restore();
	bpf_sampler_close(s);
	targets_free(&ts);
	profile_free(c.prof);
	free(c.frames);
	return ret;
}
