// SPDX-License-Identifier: MIT
/*
 * The one table of profile output formats. record and trace ask it which
 * names (and aliases) exist, which format a file extension means, what the
 * --help text says about each, and which writer to call: adding a format is
 * one row here and its writer.
 *
 * "folded" is an alias of "collapsed" everywhere (-f folded, profile_write):
 * it is the name flamegraph.pl and inferno give the format, and ".folded" is
 * already its first extension, so refusing the word while guessing it from
 * the extension only surprised people.
 */
#include "profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int raw_write_all(FILE *f, const struct profile *p, const struct profile_out_opts *o,
			 struct diag *d)
{
	(void)o;
	return raw_write_profile(f, p, d);
}

static const char *const ext_collapsed[] = {".folded", ".collapsed", ".txt", NULL};
static const char *const ext_speedscope[] = {".json", NULL};
static const char *const ext_pprof[] = {".pb.gz", ".pprof", NULL};
static const char *const ext_svg[] = {".svg", NULL};
static const char *const ext_raw[] = {".raw", NULL};
static const char *const ext_chrome[] = {".trace.json", ".chrome.json", NULL};
static const char *const ext_pstats[] = {".pstats", ".prof", NULL};
static const char *const ext_gecko[] = {".json.gz", ".gecko.json.gz", NULL};
static const char *const ext_heatmap[] = {".html", ".heatmap.html", NULL};
static const char *const alias_collapsed[] = {"folded", NULL};
static const char *const no_alias[] = {NULL};

const struct profile_format profile_formats[] = {
    {"collapsed", ext_collapsed, alias_collapsed, collapsed_write,
     "root first, 'qualname (file:line)' frames, ';'-joined, then the count; alias folded",
     PROFILE_FMT_AGGREGATE},
    {"speedscope", ext_speedscope, no_alias, speedscope_write, NULL, PROFILE_FMT_ORDERED},
    {"pprof", ext_pprof, no_alias, pprof_write,
     "gzip'd profile.proto, sample types samples/count and cpu|wall/nanoseconds, labels pid, "
     "tid, comm, gil=held, idle=yes",
     PROFILE_FMT_AGGREGATE},
    {"svg", ext_svg, no_alias, svg_write, "interactive flame graph", PROFILE_FMT_AGGREGATE},
    {"raw", ext_raw, no_alias, raw_write_all,
     "one line per sample 'ts_ns pid tid cpu flags stack', stack leaf first", PROFILE_FMT_STREAM},
    {"chrome", ext_chrome, no_alias, chrome_write,
     "Trace Event JSON for Perfetto or chrome://tracing: per thread, nested slices from "
     "the samples in time order, stackFrames, process and thread names",
     PROFILE_FMT_ORDERED},
    {"pstats", ext_pstats, no_alias, pstats_write,
     "what Python's pstats.Stats and snakeviz load, one entry a function (file, first line, "
     "qualname): cc = samples with it on the stack, nc = its frames in them (nc/cc: "
     "recursion), tt = self seconds (it was the leaf), ct = inclusive seconds (on the "
     "stack), seconds being the samples' weights; callers from the stacks' edges",
     PROFILE_FMT_AGGREGATE},
    {"gecko", ext_gecko, no_alias, gecko_write,
     "gzip'd Gecko profile for profiler.firefox.com: per thread its samples in time order, "
     "stack, frame and string tables, categories Python, Native, Kernel, Off-CPU, Other, and "
     "a marker per off-CPU interval",
     PROFILE_FMT_ORDERED},
    {"heatmap", ext_heatmap, no_alias, heatmap_write,
     "a self-contained HTML page: per source file every line with its self and total share, "
     "with --opcodes its top opcodes, specialized share and hottest instruction's columns; "
     "files by samples, opened on the hottest line; record keeps the sources, read as the "
     "target could",
     PROFILE_FMT_AGGREGATE | PROFILE_FMT_SOURCES},
    {NULL, NULL, NULL, NULL, NULL, 0},
};

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcasecmp(s + n - m, suffix);
}

const struct profile_format *profile_format_find(const char *name, unsigned need)
{
	for (const struct profile_format *f = profile_formats; name && f->name; f++) {
		int hit = !strcmp(f->name, name);

		for (const char *const *a = f->aliases; !hit && *a; a++)
			hit = !strcmp(*a, name);
		if (hit)
			return !need || (f->flags & need) ? f : NULL;
	}
	return NULL;
}

/* The longest extension wins: ".trace.json" is chrome, ".json" speedscope. */
const struct profile_format *profile_format_for_path(const char *path)
{
	const struct profile_format *best = NULL;
	size_t best_len = 0;

	for (const struct profile_format *f = profile_formats; path && f->name; f++)
		for (const char *const *e = f->extensions; *e; e++)
			if (ends_with(path, *e) && strlen(*e) > best_len) {
				best = f;
				best_len = strlen(*e);
			}
	return best;
}

const char *profile_format_from_path(const char *path)
{
	const struct profile_format *f = profile_format_for_path(path);

	return f ? f->name : NULL;
}

/* Append s to the growing string *buf; -1 on ENOMEM (then *buf is freed). */
static int cat(char **buf, size_t *len, const char *s)
{
	size_t n = strlen(s);
	char *nb = realloc(*buf, *len + n + 1);

	if (!nb) {
		free(*buf);
		*buf = NULL;
		return -1;
	}
	memcpy(nb + *len, s, n + 1);
	*len += n;
	*buf = nb;
	return 0;
}

char *profile_format_list(unsigned need, int with_ext, int with_desc)
{
	char *buf = NULL;
	size_t len = 0;
	int first = 1;

	if (cat(&buf, &len, ""))
		return NULL;
	for (const struct profile_format *f = profile_formats; f->name; f++) {
		if (need && !(f->flags & need))
			continue;
		if ((!first && cat(&buf, &len, ", ")) || cat(&buf, &len, f->name))
			return NULL;
		first = 0;
		if (!with_ext && !with_desc)
			continue;
		if (cat(&buf, &len, " ("))
			return NULL;
		for (const char *const *e = f->extensions; with_ext && *e; e++)
			if ((e != f->extensions && cat(&buf, &len, ", ")) || cat(&buf, &len, *e))
				return NULL;
		if (with_desc && f->description &&
		    ((with_ext && cat(&buf, &len, ": ")) || cat(&buf, &len, f->description)))
			return NULL;
		if (cat(&buf, &len, ")"))
			return NULL;
	}
	return buf;
}

char *profile_format_help(const char *text, unsigned need)
{
	const char *mark = text ? strstr(text, PROFILE_FORMATS_MARK) : NULL;
	const char *tail = mark ? mark + strlen(PROFILE_FORMATS_MARK) : NULL;
	char *list, *out;
	size_t n;

	if (!mark)
		return (char *)text;
	list = profile_format_list(need, 1, 1);
	if (!list)
		return (char *)text;
	n = (size_t)(mark - text) + strlen(list) + strlen(tail) + 1;
	out = malloc(n);
	if (out)
		snprintf(out, n, "%.*s%s%s", (int)(mark - text), text, list, tail);
	free(list);
	return out ? out : (char *)text;
}

int profile_format_write(const struct profile_format *fmt, FILE *f, const struct profile *p,
			 const struct profile_out_opts *o, struct diag *d)
{
	static const struct profile_out_opts defaults;

	return fmt->write(f, p, o ? o : &defaults, d);
}
