// SPDX-License-Identifier: MIT
/*
 * bpfpy convert: a raw recording (record -f raw) into any other format,
 * through the same profile and the same writers as record itself, so that a
 * recording can be replayed and looked at again in another viewer.
 */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_parse.h"
#include "commands.h"
#include "diag.h"
#include "profile.h"
#include "raw_read.h"
#include "signals.h"

struct convert_opts {
	const char *input, *output, *source_root;
	const struct profile_format *format;
	double rate_hz;
	const char *clock; /* NULL: the header's, or wall if any sample says so */
	int rate_set;	   /* -F given: it wins over the header's */
	int threads, no_lines, force, quiet;
};

static const char doc[] =
    "Turn a raw recording (bpfpy record -f raw) into another format with the writers "
    "record uses.\v"
    "IN is read as hostile input: lines of at most 4 MiB, at most 1024 frames, every field "
    "checked; the first bad line is named (file:line, the field) and nothing is written "
    "(exit 2). OUTPUT (-o FILE, -f FORMAT; format from the extension by default): "
    "" PROFILE_FORMATS_MARK ". Without -o, collapsed goes to stdout. "
    "An existing path is refused without --force (exit 2). "
    "At the end, 'bpfpy convert: wrote FILE (N samples, FORMAT)' on stderr.\n"
    "A raw file of record's (version 2) carries the rate, clock, weights, wall-clock start, "
    "functions' first lines, native frames' addresses and libraries, process and thread "
    "names: every format comes out byte for byte as record writes it. A version 1 file (no "
    "'#bpfpy raw' line) has none of that: give -F as recorded (default 1khz), and its "
    "process and thread names, first lines and wall-clock start are lost.\n\n"
    "EXAMPLES:\n"
    "  bpfpy convert app.raw -o app.pb.gz\n"
    "  bpfpy convert app.raw -f svg -o app.svg --threads\n\n" EXIT_CODES_DOC;

enum {
	OPT_CLOCK = 256,
	OPT_THREADS,
	OPT_NO_LINES,
	OPT_FORCE,
	OPT_SOURCE_ROOT,
};

static const struct argp_option options[] = {
    {"output", 'o', "FILE", 0, "Write here (default: collapsed on stdout)", 0},
    {"format", 'f', "FORMAT", 0, PROFILE_FORMATS_MARK, 0},
    {"rate", 'F', "RATE", 0, "The rate it was recorded at (default: the file's, else 1khz)", 0},
    {"clock", OPT_CLOCK, "cpu|wall", 0,
     "Its clock (default: the file's, else wall if its samples say so)", 0},
    {"threads", OPT_THREADS, NULL, 0, "Keep threads apart, as record --threads", 0},
    {"no-lines", OPT_NO_LINES, NULL, 0, "Aggregate by function, not line", 0},
    {"force", OPT_FORCE, NULL, 0, "Overwrite an existing output file", 0},
    {"source-root", OPT_SOURCE_ROOT, "DIR", 0, "pprof: prefix source paths with DIR", 0},
    {"quiet", 'q', NULL, 0, "No 'wrote' line", 0},
    {0},
};

static error_t parse(int key, char *arg, struct argp_state *state)
{
	struct convert_opts *o = state->input;

	switch (key) {
	case 'o':
		o->output = arg;
		break;
	case 'f':
		o->format = profile_format_find(arg, 0);
		if (!o->format)
			argp_error(state, "unknown format '%s'", arg);
		break;
	case 'F':
		o->rate_hz = parse_rate_hz(arg);
		if (o->rate_hz <= 0 || o->rate_hz > 1e6)
			argp_error(state, "invalid rate '%s' (e.g. 997, 10k, 10khz)", arg);
		o->rate_set = 1;
		break;
	case OPT_CLOCK:
		if (strcmp(arg, "cpu") && strcmp(arg, "wall"))
			argp_error(state, "--clock must be cpu or wall");
		o->clock = arg;
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
	case OPT_SOURCE_ROOT:
		o->source_root = arg;
		break;
	case 'q':
		o->quiet = 1;
		break;
	case ARGP_KEY_ARG:
		if (o->input)
			argp_error(state, "one input file, not '%s' too", arg);
		o->input = arg;
		break;
	case ARGP_KEY_END:
		if (!o->input)
			argp_error(state, "give the raw file to convert");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

struct conv_ctx {
	const struct convert_opts *o;
	const struct profile_format *format;
	struct profile *prof;  /* made at the header, or the first sample */
	struct raw_stream raw; /* raw to raw: streamed, as record streams it */
	int wall, oom, header;
	char *source_root; /* the file's #source_root */
};

/* The profile as record made it: a version 2 header says how (the rate,
 * clock and origin of the recording; -F and --clock, when given, win),
 * version 1 has only the options. */
static int make_profile(struct conv_ctx *c, const struct raw_meta *h)
{
	const struct convert_opts *o = c->o;
	uint64_t period = o->rate_set || !h ? (uint64_t)(1e9 / o->rate_hz) : h->period_ns;

	c->prof = profile_new(period, o->clock ? o->clock : h ? h->clock : "cpu");
	if (!c->prof) {
		c->oom = 1;
		return -1;
	}
	if (h) {
		profile_set_weighted(c->prof, h->weighted);
		profile_set_realtime_off(c->prof, h->realtime_off);
	}
	/* As record does: only the ordered formats need the samples in order. */
	if (!(c->format->flags & PROFILE_FMT_ORDERED))
		profile_set_max_ordered(c->prof, 0);
	if (h && c->raw.f && raw_stream_begin(&c->raw, c->prof))
		return -1;
	return 0;
}

static int on_meta(void *arg, const struct raw_meta *m)
{
	struct conv_ctx *c = arg;

	if (m->kind == RAW_META_HEADER) {
		c->header = 1;
		return make_profile(c, m);
	}
	if (!c->prof && make_profile(c, NULL))
		return -1;
	if (m->kind == RAW_META_SOURCE_ROOT) { /* --source-root, when given, wins */
		free(c->source_root);
		c->source_root = strdup(m->name);
		c->oom = !c->source_root;
		return c->oom ? -1 : 0;
	}
	errno = 0;
	if (m->kind == RAW_META_SOURCE || m->kind == RAW_META_NOSOURCE) {
		/* The sources record read (the heatmap's): convert opens no file
		 * a recording names, so a file without one stays without. */
		if ((m->kind == RAW_META_SOURCE
			 ? profile_set_source(c->prof, m->name, m->text, m->len, m->cut)
			 : profile_set_source_missing(c->prof, m->name, m->text)) < 0) {
			c->oom = 1;
			return -1;
		}
		return 0;
	}
	if (m->kind == RAW_META_COMM)
		profile_set_comm(c->prof, m->pid, m->name);
	else /* a thread without samples has no name to keep */
		profile_set_thread_name(c->prof, m->pid, m->tid, m->name);
	if (errno == ENOMEM) {
		c->oom = 1;
		return -1;
	}
	return 0;
}

static int on_sample(void *arg, const struct sym_sample *s, uint64_t weight_ns,
		     uint32_t offcpu_reason)
{
	struct conv_ctx *c = arg;

	if (!c->prof && make_profile(c, NULL))
		return -1;
	c->wall |= !!(s->flags & SAMPLE_WALL);
	if (c->raw.f && raw_stream_write(&c->raw, s, weight_ns, offcpu_reason))
		return -1;
	/* Raw to raw keeps the profile too: its trailer is the profile's. */
	if (profile_add_weighted(c->prof, s, weight_ns, offcpu_reason)) {
		c->oom = 1;
		return -1;
	}
	return 0;
}

static char *help_filter(int key, const char *text, void *input)
{
	(void)input;
	if (key == 'f' && text && !strcmp(text, PROFILE_FORMATS_MARK)) {
		char *names = profile_format_list(0, 0, 0);

		return names ? names : (char *)text;
	}
	return key == ARGP_KEY_HELP_POST_DOC ? profile_format_help(text, 0) : (char *)text;
}

int cmd_convert(int argc, char **argv)
{
	struct convert_opts o = {.rate_hz = 1000};
	struct argp argp = {options, parse, "IN.raw", doc, NULL, help_filter, NULL};
	struct profile_out_opts po = {0};
	struct out_file of = {0};
	struct conv_ctx c = {0};
	struct diag d = {0};
	const struct profile_format *format;
	uint64_t n = 0;
	FILE *in, *out;
	int ret = EXIT_OK;

	if (argp_parse(&argp, argc, argv, 0, NULL, &o))
		return EXIT_USAGE;
	if (signals_install(&d))
		return diag_report(&d);
	format = o.format   ? o.format
		 : o.output ? profile_format_for_path(o.output)
			    : profile_format_find("collapsed", 0);
	if (!format) {
		char *known = profile_format_list(0, 1, 0);

		fprintf(stderr, "bpfpy convert: cannot tell the format of '%s': give -f (%s)\n",
			o.output, known ? known : "");
		free(known);
		return EXIT_USAGE;
	}
	in = profile_open_input(o.input, &d);
	if (!in)
		return diag_report(&d);
	if (o.output && out_file_open(&of, o.output, o.force, &d)) {
		fclose(in);
		return diag_report(&d);
	}
	out = o.output ? of.f : stdout;
	c.o = &o;
	c.format = format;
	if (format->flags & PROFILE_FMT_STREAM)
		c.raw.f = out;
	if (raw_read(in, o.input, on_sample, on_meta, &c, &n, &d)) {
		if (c.raw.f && ferror(c.raw.f))
			diag_errno(&d, errno ? errno : EIO, "writing raw samples");
		else if (c.oom || !d.msg[0]) /* a callback stopped it: memory */
			diag_errno(&d, ENOMEM, "%s: after %llu samples", o.input,
				   (unsigned long long)n);
		ret = diag_report(&d);
		goto out;
	}
	if (!c.prof && make_profile(&c, NULL)) { /* an empty file */
		diag_errno(&d, ENOMEM, "convert");
		ret = diag_report(&d);
		goto out;
	}
	/* Version 1 tells the clock only by its samples' flags, known once
	 * they are read. */
	if (!o.clock && !c.header && c.wall)
		snprintf(c.prof->clock, sizeof(c.prof->clock), "wall");
	po.source_root = o.source_root ? o.source_root : c.source_root;
	if (c.raw.f && raw_stream_end(&c.raw, c.prof, po.source_root)) {
		diag_errno(&d, errno ? errno : EIO, "writing raw samples");
		ret = diag_report(&d);
		goto out;
	}
	po.threads = o.threads;
	po.no_lines = o.no_lines;
	po.force = o.force;
	if (!c.raw.f && profile_format_write(format, out, c.prof, &po, &d)) {
		ret = diag_report(&d);
		goto out;
	}
	if (o.output) {
		if (out_file_commit(&of, &d)) {
			ret = diag_report(&d);
		} else if (!o.quiet) {
			out_file_wrote("convert", o.output, c.raw.f ? n : c.prof->total,
				       format->name);
		}
		o.output = NULL;
	} else {
		fflush(stdout);
	}
out:
	if (o.output)
		out_file_abort(&of);
	fclose(in);
	profile_free(c.prof);
	raw_stream_free(&c.raw);
	free(c.source_root);
	return ret;
}
