// SPDX-License-Identifier: MIT
/*
 * The profile model and every output format, checked by reading each file
 * back with what its users read it with: our own parse of the folded
 * grammar, json-c for speedscope, `go tool pprof` for pprof, xmllint for
 * the SVG. Expected counts are computed here from the synthetic samples,
 * independently of profile.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile.h"

#define PERIOD 10000000ull /* 10 ms */

static const struct sym_frame F_MAIN = {
    .name = "main", .file = "/srv/app.py", .line = 10, .firstlineno = 1};
static const struct sym_frame F_RUN = {
    .name = "Server.run", .file = "/srv/app.py", .line = 20, .firstlineno = 18};
static const struct sym_frame F_HELLO = {
    .name = "h\xc3\xa9llo", .file = "/srv/app.py", .line = 31, .firstlineno = 30};
static const struct sym_frame F_SEMI = {
    .name = "semi;colon", .file = "/srv/weird.py", .line = 5, .firstlineno = 4};
static const struct sym_frame F_MARK = {
    .name = "<&>\"'", .file = "/srv/weird.py", .line = 7, .firstlineno = 6};
static const struct sym_frame F_FIB = {
    .name = "fib", .file = "/srv/fib.py", .line = 3, .firstlineno = 1};
static const struct sym_frame F_JSON = {.name = "dumps",
					.file = "/usr/lib/python3.11/json/__init__.py",
					.line = 231,
					.firstlineno = 183};
static const struct sym_frame F_REQ = {.name = "Session.get",
				       .file = "/venv/site-packages/requests/s.py",
				       .line = 600,
				       .firstlineno = 590};

/* Stacks, leaf first, and how often each thread takes them. */
struct spec {
	uint32_t pid, tid, flags;
	int n;
	const struct sym_frame *fr[8];
	int count;
};

static const struct spec specs[] = {
    {100, 101, 0, 2, {&F_RUN, &F_MAIN}, 7},
    {100, 101, 0, 3, {&F_HELLO, &F_RUN, &F_MAIN}, 5},
    {100, 102, 0, 3, {&F_HELLO, &F_RUN, &F_MAIN}, 4},
    {100, 102, 0, 6, {&F_FIB, &F_FIB, &F_FIB, &F_FIB, &F_FIB, &F_MAIN}, 9},
    {100, 102, 0, 3, {&F_SEMI, &F_FIB, &F_MAIN}, 2},
    {200, 201, SAMPLE_GIL_KNOWN | SAMPLE_GIL_HELD, 3, {&F_MARK, &F_SEMI, &F_MAIN}, 3},
    {200, 201, 0, 3, {&F_JSON, &F_REQ, &F_MAIN}, 6},
    {200, 201, SAMPLE_TRUNCATED, 2, {&F_FIB, &F_FIB}, 1},
};
#define NSPECS (sizeof(specs) / sizeof(specs[0]))

static char tmpdir[64];

static struct profile *make_profile(uint64_t max_ordered, uint64_t *total)
{
	struct profile *p = profile_new(PERIOD, "cpu");
	struct sym_frame fr[8];
	uint64_t ts = 1000000000;

	assert_non_null(p);
	if (max_ordered)
		profile_set_max_ordered(p, max_ordered);
	assert_int_equal(profile_set_comm(p, 100, "python3"), 0);
	assert_int_equal(profile_set_comm(p, 200, "w\xc3\xb6rker"), 0);
	*total = 0;
	/* Interleave the specs so order matters: round-robin until done. */
	for (int round = 0;; round++) {
		int any = 0;

		for (size_t i = 0; i < NSPECS; i++) {
			struct sym_sample s = {0};

			if (round >= specs[i].count)
				continue;
			any = 1;
			for (int j = 0; j < specs[i].n; j++)
				fr[j] = *specs[i].fr[j];
			s.ts_ns = ts;
			ts += PERIOD;
			s.pid = specs[i].pid;
			s.tid = specs[i].tid;
			s.cpu = (uint32_t)i % 2;
			s.flags = specs[i].flags;
			s.nframes = (uint32_t)specs[i].n;
			s.frames = fr;
			assert_int_equal(profile_add(p, &s), 0);
			(*total)++;
		}
		if (!any)
			break;
	}
	/* A failed walk: counted, not drawn. */
	{
		struct sym_sample s = {ts, 100, 101, 0, SAMPLE_ERROR, 0, NULL};

		assert_int_equal(profile_add(p, &s), 0);
	}
	assert_int_equal(p->total, *total);
	assert_int_equal(p->nempty, 1);
	return p;
}

static void clean(char *dst, const char *src)
{
	for (; *src; src++)
		*dst++ = *src == ';' ? ':' : *src;
	*dst = 0;
}

/* The folded line of a spec, computed here and not by the code under test. */
static void expected_line(const struct spec *s, int threads, char *buf, size_t len)
{
	char name[256], file[256];
	size_t o = 0;

	buf[0] = 0;
	if (threads)
		o += snprintf(buf, len, "pid:%u;tid:%u;", s->pid, s->tid);
	if (s->flags & SAMPLE_TRUNCATED)
		o += snprintf(buf + o, len - o, "%s;", PROFILE_TRUNCATED_NAME);
	for (int j = s->n - 1; j >= 0; j--) {
		clean(name, s->fr[j]->name);
		clean(file, s->fr[j]->file);
		o += snprintf(buf + o, len - o, "%s (%s:%d)%s", name, file, s->fr[j]->line,
			      j ? ";" : "");
	}
}

static char *path_in(const char *name)
{
	static char buf[4][256];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", tmpdir, name);
	return buf[k];
}

static int setup(void **state)
{
	(void)state;
	strcpy(tmpdir, "/tmp/bpfpy-profout-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return getenv("KEEP") ? 0 : (system(cmd) == 0 ? 0 : -1);
}

static void check_folded(const char *path, int threads)
{
	char line[4096], want[4096];
	uint64_t got[NSPECS] = {0}, want_n[NSPECS] = {0};
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	for (size_t i = 0; i < NSPECS; i++) {
		expected_line(&specs[i], threads, want, sizeof(want));
		for (size_t j = 0; j < NSPECS; j++) {
			char other[4096];

			expected_line(&specs[j], threads, other, sizeof(other));
			if (!strcmp(want, other)) {
				want_n[i] += specs[j].count;
			}
		}
	}
	while (fgets(line, sizeof(line), f)) {
		char *sp = strrchr(line, ' ');
		int found = 0;

		assert_non_null(sp);
		*sp = 0;
		for (size_t i = 0; i < NSPECS; i++) {
			expected_line(&specs[i], threads, want, sizeof(want));
			if (!strcmp(line, want)) {
				got[i] += strtoull(sp + 1, NULL, 10);
				found = 1;
				break; /* first spec with this line owns it */
			}
		}
		if (!found)
			fail_msg("unexpected folded line: %s", line);
	}
	fclose(f);
	for (size_t i = 0; i < NSPECS; i++) {
		char l[4096];
		int owner = 1;

		expected_line(&specs[i], threads, want, sizeof(want));
		for (size_t j = 0; j < i; j++) {
			expected_line(&specs[j], threads, l, sizeof(l));
			owner &= strcmp(l, want) != 0;
		}
		if (owner)
			assert_int_equal(got[i], want_n[i]);
	}
}

static int starts_with(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

static void test_folded(void **state)
{
	struct profile_out_opts o = {0};
	struct diag d = {0};
	uint64_t total;
	struct profile *p = make_profile(0, &total);
	char line[4096];
	FILE *f;

	(void)state;
	assert_int_equal(profile_write(p, path_in("a.folded"), NULL, &o, &d), 0);
	check_folded(path_in("a.folded"), 0);
	o.threads = 1;
	assert_int_equal(profile_write(p, path_in("t.collapsed"), NULL, &o, &d), 0);
	check_folded(path_in("t.collapsed"), 1);

	/* no_lines: one line per function path, file without line. */
	o.threads = 0;
	o.no_lines = 1;
	assert_int_equal(profile_write(p, path_in("n.txt"), NULL, &o, &d), 0);
	f = fopen(path_in("n.txt"), "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		assert_null(strstr(line, ".py:"));
		assert_true(starts_with(line, "main (/srv/app.py);") ||
			    starts_with(line, PROFILE_TRUNCATED_NAME ";fib (/srv/fib.py);"));
	}
	fclose(f);
	profile_free(p);
}

static void test_speedscope(void **state)
{
	struct profile_out_opts o = {0};
	struct diag d = {0};
	uint64_t total, sum = 0;
	struct profile *p = make_profile(0, &total);
	json_object *root, *frames, *profiles, *v;
	size_t nframes;

	(void)state;
	assert_int_equal(profile_write(p, path_in("s.json"), NULL, &o, &d), 0);
	root = json_object_from_file(path_in("s.json"));
	assert_non_null(root);
	assert_true(json_object_object_get_ex(root, "$schema", &v));
	assert_string_equal(json_object_get_string(v),
			    "https://www.speedscope.app/file-format-schema.json");
	assert_true(json_object_object_get_ex(root, "shared", &v));
	assert_true(json_object_object_get_ex(v, "frames", &frames));
	nframes = json_object_array_length(frames);
	assert_true(nframes >= 8);
	assert_true(json_object_object_get_ex(root, "profiles", &profiles));
	assert_int_equal(json_object_array_length(profiles), 3);
	for (size_t i = 0; i < 3; i++) {
		json_object *pr = json_object_array_get_idx(profiles, i), *samples, *weights, *x;

		assert_true(json_object_object_get_ex(pr, "type", &x));
		assert_string_equal(json_object_get_string(x), "sampled");
		assert_true(json_object_object_get_ex(pr, "unit", &x));
		assert_string_equal(json_object_get_string(x), "nanoseconds");
		assert_true(json_object_object_get_ex(pr, "name", &x));
		assert_non_null(strstr(json_object_get_string(x), "pid "));
		assert_true(json_object_object_get_ex(pr, "samples", &samples));
		assert_true(json_object_object_get_ex(pr, "weights", &weights));
		assert_int_equal(json_object_array_length(samples),
				 json_object_array_length(weights));
		for (size_t j = 0; j < json_object_array_length(weights); j++) {
			json_object *st = json_object_array_get_idx(samples, j);
			json_object *f0;
			const char *root_name;

			sum += json_object_get_int64(json_object_array_get_idx(weights, j));
			/* Root first: every stack here starts at main or, if
			 * truncated, at the marker. */
			f0 = json_object_array_get_idx(
			    frames, json_object_get_int(json_object_array_get_idx(st, 0)));
			assert_true(json_object_object_get_ex(f0, "name", &x));
			root_name = json_object_get_string(x);
			assert_true(!strcmp(root_name, "main") ||
				    !strcmp(root_name, PROFILE_TRUNCATED_NAME));
			for (size_t k = 0; k < json_object_array_length(st); k++)
				assert_true((size_t)json_object_get_int(
						json_object_array_get_idx(st, k)) < nframes);
		}
	}
	assert_int_equal(sum, total * PERIOD);
	/* The names survive the trip through JSON untouched. */
	{
		int seen = 0;

		for (size_t i = 0; i < nframes; i++) {
			json_object_object_get_ex(json_object_array_get_idx(frames, i), "name", &v);
			seen += !strcmp(json_object_get_string(v), "<&>\"'") ||
				!strcmp(json_object_get_string(v), "semi;colon") ||
				!strcmp(json_object_get_string(v), "h\xc3\xa9llo");
		}
		assert_int_equal(seen, 3);
	}
	json_object_put(root);
	profile_free(p);

	/* Past the bound, samples still count in full. */
	p = make_profile(5, &total);
	assert_int_equal(p->nordered, 5);
	assert_int_equal(profile_write(p, path_in("b.json"), NULL, &o, &d), 0);
	root = json_object_from_file(path_in("b.json"));
	assert_non_null(root);
	json_object_object_get_ex(root, "profiles", &profiles);
	sum = 0;
	for (size_t i = 0; i < json_object_array_length(profiles); i++) {
		json_object *w;

		json_object_object_get_ex(json_object_array_get_idx(profiles, i), "weights", &w);
		for (size_t j = 0; j < json_object_array_length(w); j++)
			sum += json_object_get_int64(json_object_array_get_idx(w, j));
	}
	assert_int_equal(sum, total * PERIOD);
	json_object_put(root);
	/* ... but raw, which promises every sample, refuses. */
	assert_int_equal(profile_write(p, path_in("b.raw"), NULL, &o, &d), -1);
	assert_int_equal(d.code, EXIT_USAGE);
	assert_int_equal(access(path_in("b.raw"), F_OK), -1);
	profile_free(p);
}

static int have_cmd(const char *cmd)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "command -v %s >/dev/null 2>&1", cmd);
	return system(buf) == 0;
}

/* Leaf counts by function name, from the specs. */
static uint64_t want_flat(const char *name)
{
	uint64_t n = 0;

	for (size_t i = 0; i < NSPECS; i++)
		if (!strcmp(specs[i].fr[0]->name, name))
			n += specs[i].count;
	return n;
}

/* Run a pprof command on path; its stdout, or NULL (skipped) without go. */
static FILE *pprof_cmd(const char *args, const char *path)
{
	char cmd[512];

	if (!have_cmd("go"))
		return NULL;
	snprintf(cmd, sizeof(cmd), "go tool pprof %s '%s' 2>/dev/null", args, path);
	return popen(cmd, "r");
}

static void test_pprof(void **state)
{
	/* pprof -top shortens names the way it shortens C++ templates when
	 * system_name is set; it is empty, so "<&>\"'" shows whole (as
	 * <module> and <lambda> do, issue 15). */
	static const struct {
		const struct sym_frame *fr;
		const char *shown;
	} leaves[] = {{&F_RUN, "Server.run"},  {&F_HELLO, "h\xc3\xa9llo"}, {&F_FIB, "fib"},
		      {&F_SEMI, "semi;colon"}, {&F_MARK, "<&>\"'"},	   {&F_JSON, "dumps"}};
	struct profile_out_opts o = {0};
	struct diag d = {0};
	uint64_t total, got[6] = {0}, sum = 0;
	struct profile *p = make_profile(0, &total);
	char line[4096];
	int header = 0, nlines = 0, full = 0, gil = 0;
	FILE *f;

	(void)state;
	assert_int_equal(profile_write(p, path_in("p.pb.gz"), NULL, &o, &d), 0);
	o.no_lines = 1;
	assert_int_equal(profile_write(p, path_in("n.pprof"), NULL, &o, &d), 0);
	profile_free(p);
	f = pprof_cmd("-top -nodecount=100", path_in("p.pb.gz"));
	if (!f) {
		print_message("SKIP pprof check: `go` not found (apt-get install golang-go)\n");
		skip();
	}
	/*
	 *       flat  flat%   sum%        cum   cum%
	 *          9 23.68% 23.68%         14 36.84%  fib
	 */
	while (fgets(line, sizeof(line), f)) {
		char *name;
		unsigned long long flat, cum;
		double a, b, c;
		int off = 0;

		line[strcspn(line, "\n")] = 0;
		if (strstr(line, "flat%")) {
			header = 1;
			continue;
		}
		if (!header)
			continue;
		if (sscanf(line, " %llu %lf%% %lf%% %llu %lf%% %n", &flat, &a, &b, &cum, &c, &off) <
			5 ||
		    !off)
			fail_msg("unparsable pprof line: %s", line);
		name = line + off;
		nlines++;
		sum += flat;
		for (size_t i = 0; i < 6; i++)
			if (!strcmp(name, leaves[i].shown))
				got[i] += flat;
	}
	assert_int_equal(pclose(f), 0);
	assert_true(header);
	assert_true(nlines >= 6);
	/* The truncated stack's leaf is fib too, and counts for it. */
	for (size_t i = 0; i < 6; i++)
		assert_int_equal(got[i], want_flat(leaves[i].fr->name));
	assert_int_equal(sum, total);

	/* -raw: full names, both sample types, the labels. */
	f = pprof_cmd("-raw", path_in("p.pb.gz"));
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		full += strstr(line, "(<&>\"')") != NULL;
		full += strstr(line, "samples/count[dflt] cpu/nanoseconds") != NULL;
		full += strstr(line, "pid:[200] tid:[201]") != NULL;
		full += strstr(line, "Period: 10000000") != NULL;
		gil += strstr(line, "gil:[held]") != NULL;
	}
	assert_int_equal(pclose(f), 0);
	assert_true(full >= 4);
	/* Only the GIL-holding sample of the table is labelled so. */
	assert_int_equal(gil, 1);

	/* no_lines loads too and counts the same. */
	f = pprof_cmd("-top -nodecount=100", path_in("n.pprof"));
	assert_non_null(f);
	full = 0;
	while (fgets(line, sizeof(line), f))
		full += strstr(line, "Total samples = ") != NULL;
	assert_int_equal(pclose(f), 0);
	assert_int_equal(full, 1);
}

static void test_svg(void **state)
{
	struct profile_out_opts o = {.title = "t<i>tle & co"};
	struct diag d = {0};
	uint64_t total;
	struct profile *p = make_profile(0, &total);
	char cmd[512], *buf;
	struct stat st;
	FILE *f;

	(void)state;
	assert_int_equal(profile_write(p, path_in("f.svg"), NULL, &o, &d), 0);
	o.threads = 1;
	assert_int_equal(profile_write(p, path_in("t.svg"), NULL, &o, &d), 0);
	profile_free(p);
	assert_int_equal(stat(path_in("f.svg"), &st), 0);
	buf = calloc(1, st.st_size + 1);
	f = fopen(path_in("f.svg"), "r");
	assert_int_equal(fread(buf, 1, st.st_size, f), (size_t)st.st_size);
	fclose(f);
	assert_non_null(strstr(buf, "h\xc3\xa9llo (/srv/app.py:31)"));
	assert_non_null(strstr(buf, "&lt;&amp;&gt;&quot;&apos; (/srv/weird.py:7)"));
	assert_non_null(strstr(buf, "semi;colon"));
	assert_non_null(strstr(buf, "t&lt;i&gt;tle &amp; co"));
	assert_null(strstr(buf, "<&>"));
	/* Self-contained: nothing to fetch. */
	assert_null(strstr(buf, "href"));
	assert_null(strstr(buf, "src="));
	assert_non_null(strstr(buf, "function zoom"));
	free(buf);
	if (!have_cmd("xmllint")) {
		print_message("SKIP XML check: xmllint not found (apt-get install "
			      "libxml2-utils)\n");
		skip();
	}
	snprintf(cmd, sizeof(cmd), "xmllint --noout '%s' '%s'", path_in("f.svg"), path_in("t.svg"));
	assert_int_equal(system(cmd), 0);
}

static void test_raw(void **state)
{
	struct profile_out_opts o = {0};
	struct diag d = {0};
	uint64_t total, n = 0, last = 0;
	struct profile *p = make_profile(0, &total);
	struct sym_frame fr[2] = {F_SEMI, F_MAIN};
	struct sym_sample s = {42, 7, 8, 1, SAMPLE_GIL_KNOWN, 2, fr};
	char line[4096];
	char *buf;
	size_t len;
	FILE *f;

	(void)state;
	f = open_memstream(&buf, &len);
	assert_int_equal(raw_write_sample(f, &s), 0);
	s.nframes = 0;
	assert_int_equal(raw_write_sample(f, &s), 0);
	fclose(f);
	assert_string_equal(buf, "42 7 8 1 2 semi:colon (/srv/weird.py:5);main (/srv/app.py:10)\n"
				 "42 7 8 1 2 -\n");
	free(buf);

	assert_int_equal(profile_write(p, path_in("r.raw"), NULL, &o, &d), 0);
	profile_free(p);
	f = fopen(path_in("r.raw"), "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long ts;
		unsigned pid, tid, cpu, flags;
		int off = 0;

		/* Version 2: the header first, the '#' lines are not samples. */
		if (!n && !last)
			assert_memory_equal(line, "#bpfpy raw 2 clock=cpu ", 23);
		if (line[0] == '#') {
			last += !last;
			continue;
		}
		assert_int_equal(
		    sscanf(line, "%llu %u %u %u %u %n", &ts, &pid, &tid, &cpu, &flags, &off), 5);
		assert_true(ts >= last);
		last = ts;
		assert_null(strstr(line, PROFILE_TRUNCATED_NAME));
		n++;
	}
	fclose(f);
	assert_int_equal(n, total);
}

static int no_temp_left(void)
{
	DIR *dir = opendir(tmpdir);
	struct dirent *e;
	int left = 0;

	while ((e = readdir(dir)))
		left += strstr(e->d_name, ".tmp") != NULL;
	closedir(dir);
	return !left;
}

static void slurp(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = 0;
	fclose(f);
}

static void test_clobber(void **state)
{
	struct profile_out_opts o = {0};
	struct diag d = {0};
	uint64_t total;
	struct profile *p = make_profile(0, &total);
	char buf[256];
	FILE *f;

	(void)state;
	/* An existing file is kept unless forced. */
	f = fopen(path_in("keep.folded"), "w");
	fputs("precious\n", f);
	fclose(f);
	assert_int_equal(profile_write(p, path_in("keep.folded"), NULL, &o, &d), -1);
	assert_int_equal(d.code, EXIT_USAGE);
	assert_non_null(strstr(d.msg, "keep.folded"));
	slurp(path_in("keep.folded"), buf, sizeof(buf));
	assert_string_equal(buf, "precious\n");
	o.force = 1;
	assert_int_equal(profile_write(p, path_in("keep.folded"), NULL, &o, &d), 0);
	slurp(path_in("keep.folded"), buf, sizeof(buf));
	assert_null(strstr(buf, "precious"));

	/* A symlink is refused, and even forced it is replaced, never
	 * followed: the target stays as it was. */
	o.force = 0;
	f = fopen(path_in("target"), "w");
	fputs("target\n", f);
	fclose(f);
	assert_int_equal(symlink(path_in("target"), path_in("link.svg")), 0);
	assert_int_equal(profile_write(p, path_in("link.svg"), NULL, &o, &d), -1);
	assert_int_equal(d.code, EXIT_USAGE);
	assert_non_null(strstr(d.msg, "symlink"));
	/* A dangling symlink too. */
	assert_int_equal(symlink(path_in("nowhere"), path_in("dangling.json")), 0);
	assert_int_equal(profile_write(p, path_in("dangling.json"), NULL, &o, &d), -1);
	assert_int_equal(access(path_in("nowhere"), F_OK), -1);
	o.force = 1;
	assert_int_equal(profile_write(p, path_in("link.svg"), NULL, &o, &d), 0);
	slurp(path_in("target"), buf, sizeof(buf));
	assert_string_equal(buf, "target\n");
	{
		struct stat st;

		assert_int_equal(lstat(path_in("link.svg"), &st), 0);
		assert_true(S_ISREG(st.st_mode));
	}

	/* Unwritable or unknown: usage errors naming the path. */
	memset(&d, 0, sizeof(d));
	assert_int_equal(profile_write(p, "/nonexistent-dir/x.folded", NULL, &o, &d), -1);
	assert_int_equal(d.code, EXIT_USAGE);
	assert_non_null(strstr(d.msg, "/nonexistent-dir/x.folded"));
	assert_int_equal(profile_write(p, path_in("x.unknown"), NULL, &o, &d), -1);
	assert_int_equal(d.code, EXIT_USAGE);
	assert_int_equal(profile_write(p, path_in("x.folded"), "bogus", &o, &d), -1);
	assert_int_equal(d.code, EXIT_USAGE);
	assert_int_equal(profile_write(p, path_in("x.any"), "pprof", &o, &d), 0);
	assert_true(no_temp_left());
	profile_free(p);
}

/* -o /dev/null: an existing device is refused without --force (issue 11
 * row 6: FIFOs and devices were written in place unasked); with it, it is
 * written into, never replaced by a regular file. */
static void test_device_output(void **state)
{
	struct out_file of;
	struct diag d = {0};
	struct stat st;

	(void)state;
	assert_int_equal(out_file_open(&of, "/dev/null", 0, &d), -1);
	assert_int_equal(d.code, EXIT_USAGE);
	assert_non_null(strstr(d.msg, "as a device"));
	assert_int_equal(out_file_open(&of, "/dev/null", 1, &d), 0);
	assert_true(fprintf(of.f, "x 1\n") > 0);
	assert_int_equal(out_file_commit(&of, &d), 0);
	assert_int_equal(stat("/dev/null", &st), 0);
	assert_true(S_ISCHR(st.st_mode));
}

/* A FIFO: refused without --force; with it and no reader, refused at once
 * (O_NONBLOCK: ENXIO) instead of hanging; with a reader, written in place. */
static void test_fifo_output(void **state)
{
	struct out_file of;
	struct diag d = {0};
	char buf[64] = {0};
	int rfd;

	(void)state;
	assert_int_equal(mkfifo(path_in("fifo"), 0600), 0);
	assert_int_equal(out_file_open(&of, path_in("fifo"), 0, &d), -1);
	assert_non_null(strstr(d.msg, "as a FIFO"));
	assert_int_equal(out_file_open(&of, path_in("fifo"), 1, &d), -1);
	assert_int_equal(d.code, EXIT_USAGE);
	assert_non_null(strstr(d.msg, "no process reads"));
	rfd = open(path_in("fifo"), O_RDONLY | O_NONBLOCK);
	assert_true(rfd >= 0);
	assert_int_equal(out_file_open(&of, path_in("fifo"), 1, &d), 0);
	assert_true(fprintf(of.f, "x 1\n") > 0);
	assert_int_equal(out_file_commit(&of, &d), 0);
	assert_int_equal(read(rfd, buf, sizeof(buf) - 1), 4);
	assert_string_equal(buf, "x 1\n");
	close(rfd);
	/* A symlink to /proc/self/fd/N with --force writes into fd N. */
	{
		int pfd[2];

		assert_int_equal(pipe(pfd), 0);
		snprintf(buf, sizeof(buf), "/proc/self/fd/%d", pfd[1]);
		assert_int_equal(symlink(buf, path_in("tofd")), 0);
		assert_int_equal(out_file_open(&of, path_in("tofd"), 0, &d), -1);
		assert_int_equal(out_file_open(&of, path_in("tofd"), 1, &d), 0);
		fputs("y 2\n", of.f);
		assert_int_equal(out_file_commit(&of, &d), 0);
		memset(buf, 0, sizeof(buf));
		assert_int_equal(read(pfd[0], buf, sizeof(buf) - 1), 4);
		assert_string_equal(buf, "y 2\n");
		assert_true(access(path_in("tofd"), F_OK) == 0);
		{
			struct stat st;

			assert_int_equal(lstat(path_in("tofd"), &st), 0);
			assert_true(S_ISLNK(st.st_mode));
		}
		close(pfd[0]);
		close(pfd[1]);
	}
}

/* The one format table: names, aliases, extensions, writers. */
static void test_format_table(void **state)
{
	const struct profile_format *f;
	char *list;

	(void)state;
	f = profile_format_find("folded", 0);
	assert_non_null(f);
	assert_string_equal(f->name, "collapsed");
	assert_ptr_equal(f, profile_format_find("collapsed", 0));
	assert_ptr_equal(f->write, collapsed_write);
	assert_ptr_equal(profile_format_find("pprof", 0)->write, pprof_write);
	assert_null(profile_format_find("bogus", 0));
	assert_null(profile_format_find(NULL, 0));
	/* raw is a stream, speedscope needs the order: trace asks for
	 * aggregate formats only. */
	assert_null(profile_format_find("raw", PROFILE_FMT_AGGREGATE));
	assert_null(profile_format_find("speedscope", PROFILE_FMT_AGGREGATE));
	assert_non_null(profile_format_find("svg", PROFILE_FMT_AGGREGATE));
	assert_ptr_equal(profile_format_for_path("x.FOLDED"), f);
	list = profile_format_list(0, 0, 0);
	assert_string_equal(
	    list, "collapsed, speedscope, pprof, svg, raw, chrome, pstats, gecko, heatmap");
	free(list);
	list = profile_format_list(PROFILE_FMT_AGGREGATE, 0, 0);
	assert_string_equal(list, "collapsed, pprof, svg, pstats, heatmap");
	free(list);
	list = profile_format_help("a " PROFILE_FORMATS_MARK " b", 0);
	assert_non_null(strstr(list, "a collapsed (.folded, .collapsed, .txt: root first"));
	assert_non_null(strstr(list, "raw (.raw: one line per sample"));
	assert_non_null(strstr(list, ") b"));
	free(list);
	{
		const char *t = "no mark";

		assert_ptr_equal(profile_format_help(t, 0), t);
	}
	/* Every extension maps back to its own row. */
	for (f = profile_formats; f->name; f++)
		for (const char *const *e = f->extensions; *e; e++)
			assert_ptr_equal(profile_format_for_path(*e), f);
}

static void test_format_from_path(void **state)
{
	(void)state;
	assert_string_equal(profile_format_from_path("a.folded"), "collapsed");
	assert_string_equal(profile_format_from_path("a.collapsed"), "collapsed");
	assert_string_equal(profile_format_from_path("dir.d/a.txt"), "collapsed");
	assert_string_equal(profile_format_from_path("a.json"), "speedscope");
	assert_string_equal(profile_format_from_path("a.pb.gz"), "pprof");
	assert_string_equal(profile_format_from_path("a.pprof"), "pprof");
	assert_string_equal(profile_format_from_path("A.SVG"), "svg");
	assert_string_equal(profile_format_from_path("a.raw"), "raw");
	assert_string_equal(profile_format_from_path("a.prof"), "pstats");
	assert_string_equal(profile_format_from_path("a.pstats"), "pstats");
	/* The longer extension wins: .json.gz is gecko, .json speedscope. */
	assert_string_equal(profile_format_from_path("a.json.gz"), "gecko");
	assert_string_equal(profile_format_from_path("a.html"), "heatmap");
	assert_null(profile_format_from_path("a.gz"));
	assert_null(profile_format_from_path("folded"));
}

static void test_model(void **state)
{
	struct profile *p = profile_new(1000, "wall");
	struct sym_frame fr[3] = {
	    F_FIB, F_FIB, {.name = "bad\xff\xfe", .file = "/x.py", .line = 1, .firstlineno = 1}};
	struct sym_sample s = {5, 1, 2, 0, SAMPLE_IDLE, 3, fr};
	char label[256];

	(void)state;
	assert_string_equal(p->clock, "wall");
	assert_int_equal(profile_add(p, &s), 0);
	assert_int_equal(profile_add(p, &s), 0);
	assert_int_equal(p->nstacks, 1);
	assert_int_equal(p->stacks[0].count, 2);
	assert_int_equal(p->stacks[0].nidle, 2);
	/* Recursion interns to the same frame. */
	assert_int_equal(p->stacks[0].frames[0], p->stacks[0].frames[1]);
	/* Bad UTF-8 becomes U+FFFD, so JSON and XML stay valid. */
	profile_frame_label(p, p->stacks[0].frames[2], 0, 1, label, sizeof(label));
	assert_string_equal(label, "bad\xef\xbf\xbd\xef\xbf\xbd (/x.py:1)");
	assert_null(profile_comm(p, 1));
	profile_set_comm(p, 1, "a");
	profile_set_comm(p, 1, "b");
	assert_string_equal(profile_comm(p, 1), "b");
	/* Deep stacks take the heap path. */
	{
		struct sym_frame deep[300];

		for (int i = 0; i < 300; i++)
			deep[i] = F_FIB;
		s.nframes = 300;
		s.frames = deep;
		s.flags = SAMPLE_TRUNCATED;
		assert_int_equal(profile_add(p, &s), 0);
		assert_int_equal(p->stacks[1].nframes, 301);
		assert_int_equal(p->ntruncated, 1);
	}
	profile_free(p);
}

/* record --opcodes' instruction marks (profile.h): what profile_op()
 * reads back of what profile_op_name() and profile_op_addr() made, the
 * bounds of each field, the folded label, and frames that are not marks. */
static void test_op_mark(void **state)
{
	struct profile *p = profile_new(1000, "cpu");
	char spec[96], plain[96];
	struct sym_frame fr[3] = {{.kind = FRAME_KIND_MARK, .file = "/srv/app.py", .line = 12},
				  {.kind = FRAME_KIND_MARK, .file = "/srv/app.py", .line = 12},
				  F_MAIN};
	struct sym_sample s = {5, 1, 2, 0, 0, 3, fr};
	struct prof_op op;
	char label[256];

	(void)state;
	profile_op_name(spec, sizeof(spec), "BINARY_OP_ADD_INT", "BINARY_OP");
	profile_op_name(plain, sizeof(plain), "<not started>", NULL);
	assert_string_equal(spec, "[op BINARY_OP_ADD_INT (BINARY_OP)]");
	fr[0].name = spec;
	fr[0].addr = profile_op_addr(130, 41, 12, 17);
	fr[1].name = plain;
	fr[1].addr = profile_op_addr(-1, (int64_t)1 << 40, 70000, -5); /* all unknown */
	assert_int_equal(profile_add(p, &s), 0);
	assert_int_equal(profile_op(p, p->stacks[0].frames[0], &op), 1);
	assert_string_equal(op.name, "BINARY_OP_ADD_INT");
	assert_string_equal(op.base, "BINARY_OP");
	assert_int_equal(op.specialized, 1);
	assert_int_equal(op.byte, 130);
	assert_int_equal(op.index, 41);
	assert_int_equal(op.col, 12);
	assert_int_equal(op.endcol, 17);
	assert_string_equal(op.file, "/srv/app.py");
	assert_int_equal(op.line, 12);
	assert_int_equal(profile_op(p, p->stacks[0].frames[1], &op), 1);
	assert_string_equal(op.name, "<not started>");
	assert_string_equal(op.base, "<not started>");
	assert_int_equal(op.specialized, 0);
	assert_int_equal(op.byte, -1);
	assert_int_equal(op.index, -1);
	assert_int_equal(op.col, -1);
	assert_int_equal(op.endcol, -1);
	/* A Python frame, a mark without the tag: not instruction marks. */
	assert_int_equal(profile_op(p, p->stacks[0].frames[2], &op), 0);
	assert_int_equal(profile_op(p, UINT32_MAX, &op), 0);
	fr[0].addr = 0;
	assert_int_equal(profile_add(p, &s), 0);
	assert_int_equal(profile_op(p, p->stacks[1].frames[0], &op), 0);
	/* The folded label is the name alone, whatever file the mark has. */
	profile_frame_label(p, p->stacks[0].frames[0], 0, 1, label, sizeof(label));
	assert_string_equal(label, "[op BINARY_OP_ADD_INT (BINARY_OP)]");
	/* The largest values that fit, and a name past the buffer, cut. */
	fr[0].addr = profile_op_addr(255, ((int64_t)1 << 24) - 2, 32765, 32765);
	fr[0].name = "[op AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA]";
	assert_int_equal(profile_add(p, &s), 0);
	assert_int_equal(profile_op(p, p->stacks[2].frames[0], &op), 1);
	assert_int_equal(op.byte, 255);
	assert_int_equal(op.index, ((int64_t)1 << 24) - 2);
	assert_int_equal(op.col, 32765);
	assert_int_equal(op.endcol, 32765);
	assert_int_equal(strlen(op.name), 63);
	/* Cut at a character: 31 two-byte ones fit in 63 bytes, not 32. */
	fr[0].name =
	    "[op \xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9]";
	assert_int_equal(profile_add(p, &s), 0);
	assert_int_equal(profile_op(p, p->stacks[3].frames[0], &op), 1);
	assert_int_equal(strlen(op.name), 62);
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_model),	  cmocka_unit_test(test_fifo_output),
	    cmocka_unit_test(test_format_table),  cmocka_unit_test(test_format_from_path),
	    cmocka_unit_test(test_folded),	  cmocka_unit_test(test_speedscope),
	    cmocka_unit_test(test_pprof),	  cmocka_unit_test(test_svg),
	    cmocka_unit_test(test_raw),		  cmocka_unit_test(test_clobber),
	    cmocka_unit_test(test_device_output), cmocka_unit_test(test_op_mark),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
