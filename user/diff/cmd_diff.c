// SPDX-License-Identifier: MIT
/*
 * bpfpy diff BASE NEW: what changed between two recordings, as a
 * differential flame graph (svg) or as folded lines with both counts
 * (collapsed, flamegraph.pl's difffolded format).
 *
 * Both inputs are read into one profile, BASE's samples as pid 1 and NEW's
 * as pid 2, every frame by its folded label (so a raw file and the
 * collapsed output of the same recording are the same input), each stack
 * weighing what its collapsed line would say: samples, or ns of a weighted
 * recording. Shares are of each side's own total, so recordings of
 * different lengths or rates compare: that is the normalisation.
 *
 * Inputs are hostile like convert's: a raw file goes through raw_read();
 * a collapsed file is read here, lines of at most RAW_MAX_LINE bytes, at
 * most BPFPY_MAX_DEPTH frames, a decimal count, no NUL; the first bad line
 * is named and nothing is written (exit 2).
 */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "diag.h"
#include "profile.h"
#include "raw_read.h"
#include "signals.h"
#include "text_escape.h"

#define SIDE_BASE 1u
#define SIDE_NEW  2u

struct diff_opts {
	const char *in[2], *output;
	const char *format; /* "collapsed" or "svg"; NULL: from -o, else collapsed */
	int force, quiet;
};

static const char doc[] =
    "Compare two recordings of the same program: BASE (before) and NEW (after), each a raw "
    "file (record -f raw) or collapsed lines (record -f collapsed, flamegraph.pl's "
    "format).\v"
    "Every stack's value is what its collapsed line says (samples; ns for --clock offcpu or "
    "wall recordings), and each side is normalised by its own total: a frame's share is "
    "its inclusive value over its side's total, and its change is NEW's share minus BASE's, "
    "in percentage points. So recordings of different lengths or rates compare.\n"
    "OUTPUT (-o FILE, -f FORMAT; the format from the extension, else collapsed on stdout):\n"
    "  collapsed  one line per stack, 'STACK BASE NEW' (sorted), BASE's value scaled by "
    "NEW's total over BASE's and rounded, so both columns are in NEW's units and a stack "
    "whose share did not change has BASE = NEW; flamegraph.pl draws it as a differential "
    "flame graph (difffolded.pl -n's format)\n"
    "  svg        a differential flame graph: widths are NEW's, red where a frame's share "
    "grew, blue where it shrank, the deeper the colour the larger the change (the largest "
    "is named in the subtitle); each tooltip gives NEW's and BASE's share and value and the "
    "change in points. Frames only BASE has are not drawn: swap the arguments to see them.\n"
    "At the end 'bpfpy diff: wrote FILE (N samples, FORMAT)' on stderr, N the stacks' "
    "samples of both inputs, and each side's total.\n"
    "Inputs are read as hostile: a bad line is named (FILE:LINE) and nothing is written "
    "(exit 2); an existing output is refused without --force (exit 2).\n\n"
    "EXAMPLES:\n"
    "  bpfpy diff before.raw after.raw -o change.svg\n"
    "  bpfpy diff before.folded after.folded | flamegraph.pl > change.svg\n\n" EXIT_CODES_DOC;

enum { OPT_FORCE = 256 };

static const struct argp_option options[] = {
    {"output", 'o', "FILE", 0, "Write here (default: collapsed on stdout)", 0},
    {"format", 'f', "FORMAT", 0, "collapsed or svg (default: from -o's extension)", 0},
    {"force", OPT_FORCE, NULL, 0, "Overwrite an existing output file", 0},
    {"quiet", 'q', NULL, 0, "No 'wrote' line and no totals", 0},
    {0},
};

static error_t parse(int key, char *arg, struct argp_state *state)
{
	struct diff_opts *o = state->input;
	const struct profile_format *f;

	switch (key) {
	case 'o':
		o->output = arg;
		break;
	case 'f':
		f = profile_format_find(arg, 0);
		if (!f || (strcmp(f->name, "collapsed") && strcmp(f->name, "svg")))
			argp_error(state, "-f must be collapsed or svg, not '%s'", arg);
		o->format = f->name;
		break;
	case OPT_FORCE:
		o->force = 1;
		break;
	case 'q':
		o->quiet = 1;
		break;
	case ARGP_KEY_ARG:
		if (state->arg_num >= 2)
			argp_error(state, "two inputs, BASE and NEW, not '%s' too", arg);
		o->in[state->arg_num] = arg;
		break;
	case ARGP_KEY_END:
		if (state->arg_num < 2)
			argp_error(state, "give BASE and NEW");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

struct side {
	struct profile *u;
	uint32_t side;
	int weighted;
	uint64_t period_ns;
	uint64_t total, samples;  /* the side's value; its samples (collapsed: counts) */
	char (*labels)[4096];	  /* BPFPY_MAX_DEPTH labels, one sample's */
	struct sym_frame *frames; /* BPFPY_MAX_DEPTH + 1 */
	char *line;		  /* collapsed: RAW_MAX_LINE + 1 */
};

/* One stack of n labels (s->labels, leaf first) weighing value into u,
 * standing for nsamples samples. */
static int add_stack(struct side *s, uint32_t n, uint32_t flags, uint64_t value, uint64_t nsamples)
{
	struct sym_sample smp = {.pid = s->side, .tid = s->side, .flags = flags};

	if (!value)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		s->frames[i] =
		    (struct sym_frame){.name = s->labels[i], .file = "", .kind = FRAME_KIND_MARK};
	smp.nframes = n;
	smp.frames = s->frames;
	s->total += value;
	s->samples += nsamples;
	return profile_add_weighted(s->u, &smp, value, 0);
}

static int on_meta(void *arg, const struct raw_meta *m)
{
	struct side *s = arg;

	if (m->kind == RAW_META_HEADER) {
		s->weighted = m->weighted;
		s->period_ns = m->period_ns;
	}
	return 0;
}

/* A raw sample, each frame as its folded label (unsanitized: the output
 * sanitizes once); the [truncated] root comes from the flag, as in record. */
static int on_sample(void *arg, const struct sym_sample *smp, uint64_t weight_ns,
		     uint32_t offcpu_reason)
{
	struct side *s = arg;

	(void)offcpu_reason;
	for (uint32_t i = 0; i < smp->nframes; i++)
		profile_label(s->labels[i], sizeof(s->labels[i]), smp->frames[i].name,
			      smp->frames[i].file, smp->frames[i].line, smp->frames[i].kind, 0);
	return add_stack(s, smp->nframes, smp->flags & SAMPLE_TRUNCATED,
			 s->weighted ? (weight_ns ? weight_ns : s->period_ns) : 1, 1);
}

/* One collapsed line (no LF, NUL-free, len bytes): frames root first. */
static int parse_collapsed(struct side *s, char *line, size_t len, const char **why)
{
	char *sp = memrchr(line, ' ', len), *end;
	uint32_t n = 0, nframes;
	uint64_t count;

	if (!sp || sp == line || !sp[1] || len - (size_t)(sp + 1 - line) > 19) {
		*why = "not 'STACK COUNT'";
		return -1;
	}
	for (end = sp + 1; *end >= '0' && *end <= '9'; end++)
		;
	if (*end || (sp[1] == '0' && sp[2])) {
		*why = "the count is not a decimal";
		return -1;
	}
	count = strtoull(sp + 1, NULL, 10);
	if (count > INT64_MAX) {
		*why = "the count is too large";
		return -1;
	}
	*sp = 0;
	/* Root first in the file, leaf first in a sample: count, then fill. */
	for (char *c = line; c; c = strchr(c, ';'), c = c ? c + 1 : NULL)
		if (++n > BPFPY_MAX_DEPTH) {
			*why = "more frames than bpfpy records";
			return -1;
		}
	nframes = n;
	for (char *c = line, *next; c; c = next) {
		char *field = c;
		uint32_t i = --n;

		next = strchr(c, ';');
		if (next)
			*next++ = 0;
		if (!*field) {
			*why = "an empty frame";
			return -1;
		}
		/* Folded keys are text_escape'd: read them back, or keep the
		 * bytes as they are when they are not (another tool's file). */
		if (text_unescape(s->labels[i], sizeof(s->labels[i]), field) < 0 ||
		    strlen(s->labels[i]) == 0)
			snprintf(s->labels[i], sizeof(s->labels[i]), "%s", field);
	}
	return add_stack(s, nframes, 0, count, count) ? -2 : 0;
}

static int read_collapsed(struct side *s, FILE *f, const char *name, struct diag *d)
{
	uint64_t lineno = 0;

	for (;;) {
		size_t len = 0;
		const char *why = NULL;
		int c = 0, rc;

		while (len <= RAW_MAX_LINE && (c = getc_unlocked(f)) != EOF && c != '\n')
			s->line[len++] = (char)c;
		if (!len && c == EOF)
			break;
		lineno++;
		if (len > RAW_MAX_LINE)
			return diag_set(d, EXIT_USAGE, "%s:%llu: longer than %u bytes", name,
					(unsigned long long)lineno, RAW_MAX_LINE);
		if (memchr(s->line, 0, len))
			return diag_set(d, EXIT_USAGE, "%s:%llu: a NUL byte", name,
					(unsigned long long)lineno);
		s->line[len] = 0;
		rc = parse_collapsed(s, s->line, len, &why);
		if (rc == -2)
			return diag_errno(d, ENOMEM, "%s", name);
		if (rc)
			return diag_set(d, EXIT_USAGE, "%s:%llu: %s: not collapsed stacks", name,
					(unsigned long long)lineno, why);
		if (c == EOF)
			break;
	}
	if (ferror(f))
		return diag_errno(d, errno ? errno : EIO, "%s", name);
	return 0;
}

/* A raw file says so on line 1 (version 2) or by its name (version 1). */
static int is_raw(FILE *f, const char *path)
{
	char head[12] = {0};
	size_t n = fread(head, 1, sizeof(head) - 1, f);
	size_t pl = strlen(path);

	rewind(f);
	return (n >= 10 && !memcmp(head, "#bpfpy raw", 10)) ||
	       (pl > 4 && !strcasecmp(path + pl - 4, ".raw"));
}

static int read_side(struct side *s, const char *path, struct diag *d)
{
	FILE *f = profile_open_input(path, d);
	uint64_t n = 0;
	int rc;

	if (!f)
		return -1;
	if (is_raw(f, path)) {
		rc = raw_read(f, path, on_sample, on_meta, s, &n, d);
		if (rc && !d->msg[0])
			diag_errno(d, ENOMEM, "%s", path);
	} else {
		rc = read_collapsed(s, f, path, d);
	}
	fclose(f);
	return rc;
}

struct dline {
	char *key;
	uint32_t side;
	uint64_t value;
};

static int dline_cmp(const void *a, const void *b)
{
	const struct dline *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	return c ? c : (x->side > y->side) - (x->side < y->side);
}

static int write_collapsed(FILE *f, const struct profile *u, uint64_t tot_base, uint64_t tot_new,
			   struct diag *d)
{
	struct profile_out_opts po = {0};
	struct dline *l = calloc(u->nstacks ? u->nstacks : 1, sizeof(*l));
	uint32_t n = 0;
	int rc = -1;

	if (!l)
		return diag_errno(d, ENOMEM, "diff");
	for (uint32_t i = 0; i < u->nstacks; i++) {
		l[n].key = collapsed_key(u, &u->stacks[i], &po);
		if (!l[n].key) {
			diag_errno(d, ENOMEM, "diff");
			goto out;
		}
		l[n].side = u->threads[u->stacks[i].thread].pid;
		l[n++].value = profile_stack_value(u, &u->stacks[i]);
	}
	qsort(l, n, sizeof(*l), dline_cmp);
	for (uint32_t i = 0; i < n;) {
		uint64_t v[3] = {0};
		uint32_t j = i;

		for (; j < n && !strcmp(l[j].key, l[i].key); j++)
			v[l[j].side] += l[j].value;
		/* long double: a count times a total stays exact past 2^53. */
		fprintf(f, "%s %llu %llu\n", l[i].key,
			(unsigned long long)((long double)v[SIDE_BASE] * tot_new / tot_base + 0.5L),
			(unsigned long long)v[SIDE_NEW]);
		i = j;
	}
	rc = ferror(f) ? diag_errno(d, errno ? errno : EIO, "writing the diff") : 0;
out:
	for (uint32_t i = 0; i < n; i++)
		free(l[i].key);
	free(l);
	return rc;
}

int cmd_diff(int argc, char **argv)
{
	struct diff_opts o = {0};
	struct argp argp = {options, parse, "BASE NEW", doc, NULL, NULL, NULL};
	struct side sides[2] = {{.side = SIDE_BASE}, {.side = SIDE_NEW}};
	struct profile_out_opts po = {0};
	struct out_file of = {0};
	struct diag d = {0};
	const char *format;
	char title[512], a[200], b[200];
	struct profile *u;
	FILE *out;
	int ret = EXIT_OK;

	if (argp_parse(&argp, argc, argv, 0, NULL, &o))
		return EXIT_USAGE;
	if (signals_install(&d))
		return diag_report(&d);
	format = o.format ? o.format : o.output ? profile_format_from_path(o.output) : "collapsed";
	if (!format || (strcmp(format, "collapsed") && strcmp(format, "svg"))) {
		fprintf(stderr, "bpfpy diff: -o %s: give -f collapsed or -f svg\n",
			text_esc(o.output, title, sizeof(title)));
		return EXIT_USAGE;
	}
	u = profile_new(1, "cpu");
	sides[0].labels = calloc(BPFPY_MAX_DEPTH, sizeof(*sides[0].labels));
	sides[0].frames = calloc(BPFPY_MAX_DEPTH + 1, sizeof(*sides[0].frames));
	sides[0].line = malloc(RAW_MAX_LINE + 1);
	if (!u || !sides[0].labels || !sides[0].frames || !sides[0].line) {
		diag_errno(&d, ENOMEM, "diff");
		ret = diag_report(&d);
		goto out;
	}
	profile_set_weighted(u, 1);
	profile_set_max_ordered(u, 0);
	sides[1].labels = sides[0].labels;
	sides[1].frames = sides[0].frames;
	sides[1].line = sides[0].line;
	for (int i = 0; i < 2; i++) {
		sides[i].u = u;
		if (read_side(&sides[i], o.in[i], &d)) {
			ret = diag_report(&d);
			goto out;
		}
		if (!sides[i].total) {
			diag_set(&d, EXIT_USAGE, "%s: no samples: nothing to compare",
				 text_esc(o.in[i], title, sizeof(title)));
			ret = diag_report(&d);
			goto out;
		}
	}
	if (u->oom) {
		diag_errno(&d, ENOMEM, "diff");
		ret = diag_report(&d);
		goto out;
	}
	if (o.output && out_file_open(&of, o.output, o.force, &d)) {
		ret = diag_report(&d);
		goto out;
	}
	out = o.output ? of.f : stdout;
	snprintf(title, sizeof(title), "bpfpy diff: %s -> %s", text_esc(o.in[0], a, sizeof(a)),
		 text_esc(o.in[1], b, sizeof(b)));
	po.title = title;
	if (!strcmp(format, "svg") ? svg_write_diff(out, u, SIDE_BASE, &po, &d)
				   : write_collapsed(out, u, sides[0].total, sides[1].total, &d)) {
		ret = diag_report(&d);
		goto out;
	}
	if (o.output) {
		if (out_file_commit(&of, &d)) {
			ret = diag_report(&d);
			goto out;
		}
		if (!o.quiet)
			out_file_wrote("diff", o.output, sides[0].samples + sides[1].samples,
				       format);
	} else {
		fflush(stdout);
	}
	if (!o.quiet)
		fprintf(stderr, "bpfpy diff: BASE %s: %llu, NEW %s: %llu (%s)\n", a,
			(unsigned long long)sides[0].total, b, (unsigned long long)sides[1].total,
			sides[0].weighted || sides[1].weighted ? "samples or ns, as their lines say"
							       : "samples");
	o.output = NULL;
out:
	if (o.output)
		out_file_abort(&of);
	profile_free(u);
	free(sides[0].labels);
	free(sides[0].frames);
	free(sides[0].line);
	return ret;
}
