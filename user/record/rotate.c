// SPDX-License-Identifier: MIT
/*
 * record --rotate (rotate.h): windows, their files, and the bound on DIR.
 */
#include "rotate.h"
#include "cli_parse.h"
#include "signals.h"
#include "text_escape.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_FORMATS 2
/* The longest host name kept in a file name (HOST_NAME_MAX is 64). */
#define HOST_FILE_MAX 64
/* Files of DIR looked at by one prune at most: a directory of millions of
 * foreign files must not stall the writer for long. */
#define PRUNE_MAX 100000

enum { OPT_ROTATE = 400, OPT_KEEP, OPT_KEEP_BYTES, OPT_WINDOW_STATS };

static const struct argp_option rotate_options[] = {
    {"rotate", OPT_ROTATE, "SECONDS", 0,
     "Agent: one profile per window of SECONDS (1..86400) in the directory -o DIR/, named "
     "bpfpy-%Y%m%dT%H%M%SZ-HOST.pb.gz (plus -f FORMAT's file); sampling never stops "
     "between windows (docs/agent.md)",
     0},
    {"keep", OPT_KEEP, "N", 0, "--rotate: keep the N newest windows' files in DIR", 0},
    {"keep-bytes", OPT_KEEP_BYTES, "BYTES", 0,
     "--rotate: keep DIR's bpfpy files under BYTES (k, M, G suffixes; the newest window "
     "always stays)",
     0},
    {"window-stats", OPT_WINDOW_STATS, NULL, 0,
     "--rotate: a line on stderr at each window's end: its samples, bpfpy's CPU since the "
     "last window's end (the first: since the start), RSS and open fds, targets live and freed, "
     "code objects cached, the window's stacks (make soak)",
     0},
    {0},
};

static uint64_t parse_bytes(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !(v > 0))
		return 0;
	switch (*end) {
	case 'k':
	case 'K':
		v *= 1024, end++;
		break;
	case 'm':
	case 'M':
		v *= 1024.0 * 1024, end++;
		break;
	case 'g':
	case 'G':
		v *= 1024.0 * 1024 * 1024, end++;
		break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	return *end || v >= 1e18 ? 0 : (uint64_t)v;
}

static error_t rotate_parse(int key, char *arg, struct argp_state *state)
{
	struct rotate_opts *o = state->input;

	switch (key) {
	case OPT_ROTATE:
		o->every_s = parse_seconds(arg);
		if (!(o->every_s >= 1) || o->every_s > 86400)
			argp_error(state, "invalid --rotate '%s' (1 to 86400 seconds)", arg);
		break;
	case OPT_KEEP:
		o->keep = (unsigned)cli_long(state, arg, 1, 10000000, "--keep");
		break;
	case OPT_KEEP_BYTES:
		o->keep_bytes = parse_bytes(arg);
		if (!o->keep_bytes)
			argp_error(state, "invalid --keep-bytes '%s' (e.g. 500M)", arg);
		break;
	case OPT_WINDOW_STATS:
		o->stats = 1;
		break;
	case ARGP_KEY_END:
		if ((o->keep || o->keep_bytes || o->stats) && !o->every_s)
			argp_error(state,
				   "--keep, --keep-bytes and --window-stats go with --rotate");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp rotate_argp = {rotate_options, rotate_parse, NULL, NULL, NULL, NULL, NULL};

/* A window handed to the writer thread. */
struct job {
	struct profile *prof;
	char stem[160]; /* bpfpy-...Z-HOST */
	char stamp[20]; /* its %Y%m%dT%H%M%SZ, for messages */
};

struct rotator {
	struct rotate_opts o;
	char *dir; /* as given, without trailing slashes (but "/") */
	const struct profile_format *formats[MAX_FORMATS];
	int nformats, quiet;
	struct profile_out_opts po;
	char host[256];			   /* escaped, for the label */
	char host_file[HOST_FILE_MAX + 1]; /* [A-Za-z0-9._-] only, for file names */
	uint64_t start_ns, due_ns, every_ns;
	int hup;
	/* The writer: one window in flight at most. */
	pthread_t thread;
	int running;
	struct job job;
	/* Written by the thread, read after a join. */
	unsigned written, failed, pruned;
	uint64_t samples, empty, lost_samples;
	unsigned cuts;
	double cpu_s; /* our CPU at the last cut, for --window-stats */
};

/* bpfpy's CPU so far, user and system, every thread. */
static double self_cpu(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* VmRSS and RssAnon of /proc/self/status, kB; -1 if unreadable. RSS
 * includes the ring buffer's pages once the kernel has written them (a
 * mapping of fixed size, resident as far as the busiest burst so far
 * reached); RssAnon is what bpfpy itself allocated, the figure a recording
 * of days must keep flat. */
static void self_rss_kb(long *rss, long *anon)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");

	*rss = *anon = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", rss) != 1)
			(void)sscanf(line, "RssAnon: %ld", anon);
	if (f)
		fclose(f);
}

static int self_fds(void)
{
	DIR *dp = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	while (dp && (de = readdir(dp)))
		n += de->d_name[0] != '.';
	if (dp)
		closedir(dp);
	return dp ? n - 1 : -1; /* not the one opendir holds */
}

/* --window-stats: what a recording of days must keep flat. */
static void window_stats(struct rotator *r, const struct profile *p, struct target_set *ts)
{
	uint64_t cut[2];
	size_t peak, cached = targets_cache_usage(ts, &(int){0}, &peak, cut);
	double cpu = self_cpu(), dur = (p->window_end_ns - p->window_start_ns) / 1e9;
	int live = 0;
	long rss, anon;

	self_rss_kb(&rss, &anon);
	for (int i = 0; i < ts->n; i++)
		live += !ts->t[i]->exited;
	/* The CPU since the last cut: the window's draining and naming, and
	 * the writing of the window before it (the first one: the start). */
	fprintf(
	    stderr,
	    "bpfpy record: window %u %s: %llu samples, %u stacks; CPU %.3f s (%.3f%% of a "
	    "core); RSS %ld kB (anon %ld kB), %d fds; targets %d live, %d freed; code cache %zu "
	    "objects (largest %zu)\n",
	    ++r->cuts, r->job.stamp, (unsigned long long)p->total, p->nstacks, cpu - r->cpu_s,
	    dur > 0 ? 100 * (cpu - r->cpu_s) / dur : 0.0, rss, anon, self_fds(), live, ts->gone,
	    cached, peak);
	r->cpu_s = cpu;
}

/* The host name, escaped for the label and cleaned for a file name. */
static void read_host(struct rotator *r)
{
	char h[256] = "";
	size_t k = 0;

	if (gethostname(h, sizeof(h) - 1) || !h[0])
		snprintf(h, sizeof(h), "localhost");
	h[sizeof(h) - 1] = 0;
	text_escape(r->host, sizeof(r->host), h, 0);
	for (const char *s = h; *s && k < HOST_FILE_MAX; s++) {
		char c = *s;

		r->host_file[k++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
					    (c >= '0' && c <= '9') || c == '.' || c == '-' ||
					    c == '_'
					? c
					: '_';
	}
	r->host_file[k] = 0;
}

/* DIR is a directory we can write: 0, or -1 with d set (EXIT_USAGE). */
static int check_dir(const char *dir, struct diag *d)
{
	struct stat st;

	if (stat(dir, &st))
		return diag_set(d, EXIT_USAGE, "--rotate: %s: %s (give an existing directory)", dir,
				strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return diag_set(d, EXIT_USAGE, "--rotate: %s is not a directory", dir);
	if (access(dir, W_OK | X_OK))
		return diag_set(d, EXIT_USAGE, "--rotate: cannot write in %s: %s", dir,
				strerror(errno));
	return 0;
}

int rotate_open(struct rotator **rp, const struct rotate_opts *o, const char *dir,
		const struct profile_format *extra, const struct profile_out_opts *po, int quiet,
		struct diag *d)
{
	struct rotator *r = calloc(1, sizeof(*r));
	size_t n;

	*rp = NULL;
	if (!r || !(r->dir = strdup(dir))) {
		free(r);
		return diag_errno(d, ENOMEM, "--rotate");
	}
	for (n = strlen(r->dir); n > 1 && r->dir[n - 1] == '/'; n--)
		r->dir[n - 1] = 0;
	if (check_dir(r->dir, d)) {
		free(r->dir);
		free(r);
		return -1;
	}
	r->o = *o;
	r->po = *po;
	r->quiet = quiet;
	r->formats[r->nformats++] = profile_format_find("pprof", 0);
	if (extra && extra != r->formats[0])
		r->formats[r->nformats++] = extra;
	r->every_ns = (uint64_t)(o->every_s * 1e9);
	read_host(r);
	*rp = r;
	return 0;
}

int record_label_host(struct profile *p, const struct rotator *r)
{
	struct rotator tmp;

	if (!r) {
		read_host(&tmp);
		r = &tmp;
	}
	return profile_set_label(p, "host", r->host);
}

void rotate_begin(struct rotator *r, uint64_t now_ns)
{
	r->start_ns = now_ns;
	r->due_ns = now_ns + r->every_ns;
}

int rotate_stop_requested(struct rotator *r)
{
	int sig = signals_stop_requested();

	if (r && sig == SIGHUP) {
		signals_take_stop();
		r->hup = 1;
		return 0;
	}
	return sig;
}

static void join_writer(struct rotator *r)
{
	if (r->running)
		pthread_join(r->thread, NULL);
	r->running = 0;
}

int rotate_due(struct rotator *r, uint64_t now_ns)
{
	if (r->hup) {
		struct diag d = {0};

		r->hup = 0;
		join_writer(r); /* its prune reads host_file */
		read_host(r);
		if (check_dir(r->dir, &d)) {
			fputs("bpfpy record: SIGHUP: ", stderr);
			text_put(stderr, d.msg);
			fputs(" (windows fail until it is back)\n", stderr);
		} else if (!r->quiet) {
			fputs("bpfpy record: SIGHUP: writing to ", stderr);
			text_put(stderr, r->dir);
			fprintf(stderr, " as host %s\n", r->host_file);
		}
	}
	return now_ns >= r->due_ns;
}

/* bpfpy-YYYYmmddTHHMMSSZ-HOST: is name one of ours (for this host, in a
 * format of the table, no hidden temporary)? Its stem length, or 0. */
static size_t our_stem(const struct rotator *r, const char *name)
{
	size_t hl = strlen(r->host_file), sl = 6 + 16 + 1 + hl;
	const char *ext;

	if (strncmp(name, "bpfpy-", 6) || strlen(name) <= sl)
		return 0;
	for (int i = 0; i < 16; i++) {
		char c = name[6 + i];

		if (i == 8 ? c != 'T' : i == 15 ? c != 'Z' : (c < '0' || c > '9'))
			return 0;
	}
	if (name[22] != '-' || strncmp(name + 23, r->host_file, hl))
		return 0;
	ext = name + sl;
	if (*ext != '.' || strchr(ext + 1, '/'))
		return 0;
	/* The rest is exactly one extension of the format table. */
	for (const struct profile_format *f = profile_formats; f->name; f++)
		for (const char *const *e = f->extensions; e && *e; e++)
			if (!strcmp(ext, *e))
				return sl;
	return 0;
}

struct entry {
	char *name;
	uint64_t size;
};

static int by_name_desc(const void *a, const void *b)
{
	return -strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

/* Our regular files in DIR (never a symlink's target), newest first. */
static int list_ours(const struct rotator *r, int dfd, struct entry **out)
{
	DIR *dp = fdopendir(dup(dfd));
	struct entry *v = NULL;
	int n = 0, cap = 0;
	struct dirent *de;

	if (!dp)
		return -1;
	for (int seen = 0; (de = readdir(dp)) && seen < PRUNE_MAX; seen++) {
		struct stat st;

		if (!our_stem(r, de->d_name) ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			struct entry *nv =
			    realloc(v, (size_t)(cap = cap ? 2 * cap : 64) * sizeof(*v));

			if (!nv)
				break;
			v = nv;
		}
		v[n].name = strdup(de->d_name);
		if (!v[n].name)
			break;
		v[n++].size = (uint64_t)st.st_size;
	}
	closedir(dp);
	qsort(v, (size_t)n, sizeof(*v), by_name_desc);
	*out = v;
	return n;
}

/* --keep, --keep-bytes: delete the oldest windows' files past either. */
static void prune(struct rotator *r)
{
	int dfd, n, windows = 0, drop = 0;
	struct entry *v = NULL;
	uint64_t bytes = 0;

	if (!r->o.keep && !r->o.keep_bytes)
		return;
	dfd = open(r->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	n = list_ours(r, dfd, &v);
	for (int i = 0; i < n; i++) {
		size_t sl = our_stem(r, v[i].name);
		/* A new window: its stem differs from the previous file's. */
		int fresh = !i || strncmp(v[i].name, v[i - 1].name, sl);

		if (fresh && !drop) {
			windows++;
			/* The newest window stays whatever its size. */
			if (windows > 1 &&
			    ((r->o.keep && (unsigned)windows > r->o.keep) ||
			     (r->o.keep_bytes && bytes + v[i].size > r->o.keep_bytes)))
				drop = 1;
		}
		if (!drop && !fresh && windows > 1 && r->o.keep_bytes &&
		    bytes + v[i].size > r->o.keep_bytes)
			drop = 1; /* the rest of a window that does not fit */
		if (drop) {
			if (!unlinkat(dfd, v[i].name, 0))
				r->pruned++;
		} else {
			bytes += v[i].size;
		}
	}
	for (int i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	close(dfd);
}

/* The writer thread: every format of the window, then the bound. */
static void *write_job(void *arg)
{
	struct rotator *r = arg;
	struct job *j = &r->job;
	int ok = 1;

	for (int i = 0; i < r->nformats; i++) {
		const struct profile_format *f = r->formats[i];
		char path[PATH_MAX];
		struct diag d = {0};

		snprintf(path, sizeof(path), "%s%s%s%s", r->dir, strcmp(r->dir, "/") ? "/" : "",
			 j->stem, f->extensions[0]);
		if (profile_write(j->prof, path, f->name, &r->po, &d)) {
			fprintf(stderr, "bpfpy record: window %s not written: ", j->stamp);
			text_put(stderr, d.msg);
			fputc('\n', stderr);
			ok = 0;
			break;
		}
		if (!r->quiet)
			out_file_wrote("record", path, j->prof->total, f->name);
	}
	if (ok) {
		r->written++;
		r->samples += j->prof->total;
		r->empty += j->prof->nempty;
		prune(r);
	} else {
		r->failed++;
		r->lost_samples += j->prof->total + j->prof->nempty;
	}
	profile_free(j->prof);
	j->prof = NULL;
	return NULL;
}

int rotate_cut(struct rotator *r, struct profile **prof, struct target_set *ts, uint64_t now_ns,
	       int final)
{
	struct profile *old = *prof, *fresh = final ? NULL : profile_new_like(old);
	/* Named by its start on the schedule, not by when the loop got to it:
	 * names a second or more apart, even when a cut comes late. */
	time_t when =
	    (time_t)(((int64_t)(r->due_ns - r->every_ns) + old->realtime_off) / 1000000000);
	struct tm tm;
	sigset_t all, prev;
	int rc;

	if ((!final && !fresh) || targets_label_profile(ts, old)) {
		profile_free(fresh);
		return -1;
	}
	profile_set_window(old, r->start_ns, now_ns);
	*prof = fresh;
	join_writer(r); /* the previous window, long written unless DIR is slow */
	gmtime_r(&when, &tm);
	strftime(r->job.stamp, sizeof(r->job.stamp), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(r->job.stem, sizeof(r->job.stem), "bpfpy-%s-%s", r->job.stamp, r->host_file);
	r->job.prof = old;
	r->start_ns = now_ns;
	if (r->o.stats)
		window_stats(r, old, ts);
	/* On the window's own schedule; one that fell far behind restarts. */
	r->due_ns += r->every_ns;
	if (r->due_ns <= now_ns)
		r->due_ns = now_ns + r->every_ns;
	/* Signals go to the loop's thread, never to the writer. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &prev);
	rc = pthread_create(&r->thread, NULL, write_job, r);
	pthread_sigmask(SIG_SETMASK, &prev, NULL);
	if (rc)
		write_job(r); /* no thread to be had: written here */
	else
		r->running = 1;
	if (final)
		join_writer(r);
	return 0;
}

void rotate_summary(const struct rotator *r, FILE *f, uint64_t samples)
{
	fprintf(f,
		"  rotate: %u windows written (%llu samples, %llu without frames; the run "
		"counted %llu), %u failed (%llu samples), %u old files removed\n",
		r->written, (unsigned long long)r->samples, (unsigned long long)r->empty,
		(unsigned long long)samples, r->failed, (unsigned long long)r->lost_samples,
		r->pruned);
}

unsigned rotate_failed(const struct rotator *r)
{
	return r->failed;
}

void rotate_close(struct rotator *r)
{
	if (!r)
		return;
	join_writer(r);
	profile_free(r->job.prof);
	free(r->dir);
	free(r);
}
