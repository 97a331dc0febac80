// SPDX-License-Identifier: MIT
/*
 * Raw version 2 (user/profile/out_raw.c, raw_read.c): a weighted profile
 * with first lines, a native frame and its library, a mark frame, names
 * the stack text cannot hold (';', controls, " (" in a qualname), process
 * and thread names, written as raw and read back into a new profile as
 * convert does. Every writer must then write the same bytes for both, and
 * the replayed raw must be the raw itself. And raw to raw streamed, as
 * convert streams it, through many libraries.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "native_symbols.h"
#include "offcpu.h"
#include "profile.h"
#include "raw_read.h"

static const struct native_lib LIB = {.path = "/usr/lib/libz z.so",
				      .name = "libz z.so",
				      .build_id = "0a1b",
				      .start = 0x1000,
				      .limit = 0x9000,
				      .offset = 0x200};

static struct profile *make(void)
{
	struct profile *p = profile_new(1000000, "wall");
	struct sym_frame fr[5] = {
	    {.name = offcpu_reason_frame(OFFCPU_IO), .file = ""},
	    {.name = "inflate",
	     .file = "libz z.so",
	     .kind = FRAME_KIND_NATIVE,
	     .lib = &LIB,
	     .addr = 0x4242},
	    {.name = "[native unwind lost]", .file = "", .kind = FRAME_KIND_MARK},
	    {.name = "evil;\x1b[2J (x", .file = "/srv/a\nb.py", .line = 7, .firstlineno = 5},
	    {.name = "main", .file = "/srv/app.py", .line = 10, .firstlineno = 1},
	};
	/* Same text as frame 3 once cleaned, other function: #exact switches. */
	struct sym_frame twin[2] = {
	    {.name = "evil:\x1b[2J (x", .file = "/srv/a b.py", .line = 7, .firstlineno = 6}, fr[4]};
	struct sym_sample s = {.pid = 10, .tid = 11, .nframes = 5, .frames = fr};

	assert_non_null(p);
	profile_set_weighted(p, 1);
	profile_set_realtime_off(p, 1700000000000000000ll);
	s.ts_ns = 1000;
	assert_int_equal(profile_add_weighted(p, &s, 5000000, OFFCPU_IO), 0);
	s.ts_ns = 2000, s.frames = fr + 3, s.nframes = 2, s.flags = SAMPLE_GIL_HELD;
	assert_int_equal(profile_add_weighted(p, &s, 0, 0), 0);
	s.ts_ns = 3000, s.tid = 12, s.frames = twin;
	assert_int_equal(profile_add_weighted(p, &s, 0, 0), 0);
	assert_int_equal(profile_set_comm(p, 10, "py\\th\x07on"), 0);
	assert_int_equal(profile_set_thread_name(p, 10, 11, "main thr"), 0);
	assert_int_equal(profile_set_thread_name(p, 10, 12, ""), 0);
	return p;
}

struct replay {
	struct profile *p;
	int header;
};

static int on_sample(void *ctx, const struct sym_sample *s, uint64_t w, uint32_t reason)
{
	struct replay *r = ctx;

	return profile_add_weighted(r->p, s, w, reason);
}

static int on_meta(void *ctx, const struct raw_meta *m)
{
	struct replay *r = ctx;

	switch (m->kind) {
	case RAW_META_HEADER:
		r->header = 1;
		r->p = profile_new(m->period_ns, m->clock);
		profile_set_weighted(r->p, m->weighted);
		profile_set_realtime_off(r->p, m->realtime_off);
		return 0;
	case RAW_META_COMM:
		return profile_set_comm(r->p, m->pid, m->name);
	case RAW_META_THREAD:
		return profile_set_thread_name(r->p, m->pid, m->tid, m->name);
	default:
		return 0;
	}
}

static char *written(const struct profile *p, const char *format, int threads, size_t *n)
{
	struct profile_out_opts o = {.threads = threads};
	struct diag d = {0};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(profile_format_write(profile_format_find(format, 0), f, p, &o, &d), 0);
	fclose(f);
	if (n)
		*n = len;
	return buf;
}

static void test_round_trip(void **state)
{
	struct profile *p = make();
	struct replay r = {0};
	struct diag d = {0};
	char *raw = written(p, "raw", 0, NULL), *again;
	FILE *in = fmemopen(raw, strlen(raw), "r");
	uint64_t n = 0;
	static const char *const formats[] = {"collapsed", "speedscope", "pprof",
					      "svg",	   "chrome",	 "raw"};

	(void)state;
	/* Every kind of line this profile needs. */
	assert_non_null(strstr(raw, "#bpfpy raw 2 clock=wall period_ns=1000000 weighted=1 "
				    "realtime_off=1700000000000000000\n"));
	assert_non_null(strstr(raw, "\n#w 5000000 3\n"));
	assert_non_null(strstr(raw, "\n#lib 1 4096 36864 512 0a1b /usr/lib/libz z.so\n"));
	assert_non_null(strstr(raw, "\n#def 1 0 16962 1 inflate (libz z.so:0) [native]\n"));
	assert_non_null(strstr(raw, "\n#def 3 0 0 0 [native unwind lost] (:0)\n"));
	assert_non_null(strstr(raw, "\n#exact "));
	assert_non_null(strstr(raw, "\n#comm 10 py\\\\th\\x07on\n"));
	assert_non_null(strstr(raw, "\n#thread 10 12 \n"));
	assert_non_null(in);
	assert_int_equal(raw_read(in, "mem", on_sample, on_meta, &r, &n, &d), 0);
	fclose(in);
	assert_int_equal(r.header, 1);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < sizeof(formats) / sizeof(*formats); i++) {
		for (int threads = 0; threads < 2; threads++) {
			size_t la, lb;
			char *a = written(p, formats[i], threads, &la);
			char *b = written(r.p, formats[i], threads, &lb);

			assert_int_equal(la, lb); /* pprof is binary: lengths, then bytes */
			assert_memory_equal(a, b, la);
			free(a);
			free(b);
		}
	}
	again = written(r.p, "raw", 0, NULL);
	assert_string_equal(again, raw);
	free(again);
	free(raw);
	profile_free(p);
	profile_free(r.p);
}

struct restream {
	struct raw_stream rs;
	struct profile *p;
};

static int on_stream_sample(void *ctx, const struct sym_sample *s, uint64_t w, uint32_t reason)
{
	return raw_stream_write(&((struct restream *)ctx)->rs, s, w, reason);
}

static int on_stream_meta(void *ctx, const struct raw_meta *m)
{
	struct restream *r = ctx;

	if (m->kind != RAW_META_HEADER)
		return 0;
	r->p = profile_new(m->period_ns, m->clock);
	profile_set_realtime_off(r->p, m->realtime_off);
	return raw_stream_begin(&r->rs, r->p);
}

/* A raw file whose samples keep naming early libraries while later ones
 * arrive, streamed raw to raw: the same bytes. The reader's libraries
 * once lived in one array that grew with each #lib; the writer, which
 * tells libraries apart by address, then wrote a moved one again under a
 * new id (CI: test_convert's pyenv-3.12 native case, once ld.so showed
 * up late). */
static void test_stream_many_libs(void **state)
{
	enum { NLIBS = 300 };
	struct restream r = {0};
	struct diag d = {0};
	char *in = NULL, *out = NULL;
	size_t in_len = 0, out_len = 0;
	FILE *f = open_memstream(&in, &in_len);
	uint64_t n = 0;

	(void)state;
	assert_non_null(f);
	fprintf(f, "#bpfpy raw 2 clock=cpu period_ns=1000000 weighted=0 realtime_off=0\n");
	for (int i = 1; i <= NLIBS; i++) {
		fprintf(f, "#lib %d %d %d 0 - /lib/l%d.so\n", i, i * 4096, i * 4096 + 4096, i);
		fprintf(f, "#def 1 0 %d %d f%d (l%d.so:0) [native]\n", 16 + i, i, i, i);
		/* the new library's function under the first one's */
		fprintf(f, "%d 1 1 0 0 f%d (l%d.so:0) [native];f1 (l1.so:0) [native]\n", i, i, i);
	}
	fclose(f);
	f = open_memstream(&out, &out_len);
	assert_non_null(f);
	r.rs.f = f;
	FILE *src = fmemopen(in, in_len, "r");
	assert_non_null(src);
	assert_int_equal(raw_read(src, "mem", on_stream_sample, on_stream_meta, &r, &n, &d), 0);
	fclose(src);
	assert_int_equal(n, NLIBS);
	assert_int_equal(raw_stream_end(&r.rs, r.p, NULL), 0);
	fclose(f);
	/* the trailer (no names here) is all the stream adds */
	assert_true(out_len >= in_len);
	assert_memory_equal(out, in, in_len);
	assert_null(strstr(out + in_len, "#lib"));
	raw_stream_free(&r.rs);
	profile_free(r.p);
	free(in);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_round_trip),
					   cmocka_unit_test(test_stream_many_libs)};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
