// SPDX-License-Identifier: MIT
/*
 * Weighted profiles (record --clock offcpu|wall) and thread names: what the
 * writers write when samples have nanoseconds rather than counts, read back
 * with our own parse of the folded grammar and with json-c for speedscope;
 * the off-CPU reasons' names; the GIL wait range from py_offsets. Expected
 * values are computed here from the synthetic samples.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "offcpu.h"
#include "profile.h"
#include "py_offsets.h"

#define PERIOD 1000000ull /* 1 ms: one on-CPU sample at 1 kHz */

static const struct sym_frame F_MAIN = {
    .name = "main", .file = "/srv/app.py", .line = 10, .firstlineno = 1};
static const struct sym_frame F_READ = {
    .name = "read_all", .file = "/srv/app.py", .line = 20, .firstlineno = 18};

/* pid 10: tid 11 on CPU 3 samples, tid 12 blocked in read twice (5 ms and
 * 7 ms) and once for the GIL (2 ms). */
static struct profile *make(void)
{
	struct profile *p = profile_new(PERIOD, "wall");
	struct sym_frame io[3] = {
	    {.name = offcpu_reason_frame(OFFCPU_IO), .file = ""}, F_READ, F_MAIN};
	struct sym_frame gil[3] = {
	    {.name = offcpu_reason_frame(OFFCPU_GIL), .file = ""}, F_READ, F_MAIN};
	struct sym_frame cpu[2] = {F_READ, F_MAIN};
	struct sym_sample s = {.pid = 10, .tid = 11, .nframes = 2, .frames = cpu};

	assert_non_null(p);
	profile_set_weighted(p, 1);
	for (int i = 0; i < 3; i++) {
		s.ts_ns = 1000 + (uint64_t)i;
		assert_int_equal(profile_add_weighted(p, &s, 0, 0), 0);
	}
	s.tid = 12;
	s.nframes = 3;
	s.frames = io;
	assert_int_equal(profile_add_weighted(p, &s, 5000000, OFFCPU_IO), 0);
	assert_int_equal(profile_add_weighted(p, &s, 7000000, OFFCPU_IO), 0);
	s.frames = gil;
	assert_int_equal(profile_add_weighted(p, &s, 2000000, OFFCPU_GIL), 0);
	/* A name with the folded separator and a control byte: sanitized. */
	assert_int_equal(profile_set_thread_name(p, 10, 12, "rd;er\x01"), 0);
	assert_int_equal(profile_set_thread_name(p, 10, 99, "nobody"), -1);
	return p;
}

static char *write_to_string(const struct profile *p,
			     int (*fn)(FILE *, const struct profile *,
				       const struct profile_out_opts *, struct diag *),
			     int threads)
{
	struct profile_out_opts o = {.threads = threads};
	struct diag d = {0};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(fn(f, p, &o, &d), 0);
	fclose(f);
	return buf;
}

static void test_folded_ns(void **state)
{
	struct profile *p = make();
	char *out = write_to_string(p, collapsed_write, 0);

	(void)state;
	assert_non_null(strstr(out, "main (/srv/app.py:10);read_all (/srv/app.py:20) 3000000\n"));
	assert_non_null(strstr(
	    out, "main (/srv/app.py:10);read_all (/srv/app.py:20);[off-cpu: io] 12000000\n"));
	assert_non_null(strstr(
	    out, "main (/srv/app.py:10);read_all (/srv/app.py:20);[off-cpu: gil] 2000000\n"));
	assert_int_equal(p->total_ns, 17000000);
	free(out);
	out = write_to_string(p, collapsed_write, 1);
	assert_non_null(strstr(out, "pid:10;tid:12 (rd:er\\x01);main"));
	assert_non_null(strstr(out, "pid:10;tid:11;main"));
	free(out);
	assert_string_equal(profile_thread_name(p, 10, 12), "rd;er\x01");
	assert_null(profile_thread_name(p, 10, 11));
	profile_free(p);
}

static void test_unweighted_counts(void **state)
{
	struct profile *p = profile_new(PERIOD, "cpu");
	struct sym_frame cpu[1] = {F_MAIN};
	struct sym_sample s = {.pid = 1, .tid = 1, .nframes = 1, .frames = cpu};
	char *out;

	(void)state;
	assert_int_equal(profile_add(p, &s), 0);
	assert_int_equal(profile_add(p, &s), 0);
	out = write_to_string(p, collapsed_write, 0);
	assert_string_equal(out, "main (/srv/app.py:10) 2\n");
	free(out);
	profile_free(p);
}

static void test_speedscope_ns(void **state)
{
	struct profile *p = make();
	char *out = write_to_string(p, speedscope_write, 0);
	json_object *root = json_tokener_parse(out), *profiles, *prof;
	uint64_t sum = 0;
	int named = 0;

	(void)state;
	assert_non_null(root);
	assert_true(json_object_object_get_ex(root, "profiles", &profiles));
	for (size_t i = 0; i < json_object_array_length(profiles); i++) {
		json_object *w, *end, *name;

		prof = json_object_array_get_idx(profiles, i);
		assert_true(json_object_object_get_ex(prof, "weights", &w));
		assert_true(json_object_object_get_ex(prof, "endValue", &end));
		assert_true(json_object_object_get_ex(prof, "name", &name));
		uint64_t tsum = 0;
		for (size_t k = 0; k < json_object_array_length(w); k++)
			tsum += (uint64_t)json_object_get_int64(json_object_array_get_idx(w, k));
		assert_int_equal(tsum, (uint64_t)json_object_get_int64(end));
		sum += tsum;
		named += !strncmp(json_object_get_string(name), "rd;er", 5);
	}
	assert_int_equal(sum, 17000000);
	assert_int_equal(named, 1);
	json_object_put(root);
	free(out);
	profile_free(p);
}

static void test_reasons(void **state)
{
	(void)state;
	assert_string_equal(offcpu_reason_frame(OFFCPU_GIL), "[off-cpu: gil]");
	assert_string_equal(offcpu_reason_frame(OFFCPU_PAGE_FAULT), "[off-cpu: page fault]");
	assert_string_equal(offcpu_reason_name(OFFCPU_SLEEP), "sleep");
	assert_string_equal(offcpu_reason_name(OFFCPU__COUNT + 5), "other");
	for (unsigned r = 1; r < OFFCPU__COUNT; r++) {
		char want[64];

		snprintf(want, sizeof(want), "[off-cpu: %s]", offcpu_reason_name(r));
		assert_string_equal(offcpu_reason_frame(r), want);
	}
}

static void test_gil_range(void **state)
{
	uint64_t lo, hi;

	(void)state;
	/* 3.12's per-interpreter GIL state at 0x7000: last_holder at +8. */
	assert_int_equal(py_gil_wait_range(0x7008, &lo, &hi), 0);
	assert_int_equal(lo, 0x7000);
	assert_true(hi > 0x7000 + 16 && hi <= 0x7000 + 512); /* past locked, inside the state */
	assert_int_equal(py_gil_wait_range(0, &lo, &hi), -1);
	assert_int_equal(lo, 0);
	assert_int_equal(hi, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_folded_ns),	  cmocka_unit_test(test_unweighted_counts),
	    cmocka_unit_test(test_speedscope_ns), cmocka_unit_test(test_reasons),
	    cmocka_unit_test(test_gil_range),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
