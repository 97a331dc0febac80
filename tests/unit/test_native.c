// SPDX-License-Identifier: MIT
/*
 * --native user side: the symbolizer (native_symbols.h) on this very
 * process (libc's qsort, a static function of this test, a glibc-internal
 * function that only libc6-dbg's debug file names, a kernel function from
 * /proc/kallsyms) and the splice (splice.h) on stacks shaped as the kernel
 * records them. Expected names come from the loader (dlsym, dladdr) and
 * from the files, never from a table here.
 */
#include <dlfcn.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "diag.h"
#include "elf_file.h"
#include "native_symbols.h"
#include "profile.h"
#include "py_offsets.h"
#include "splice.h"

__attribute__((noinline)) static int local_function_of_the_test(int x)
{
	return x * 3 + 1;
}

static void test_libc_qsort(void **state)
{
	struct native_syms *ns = native_syms_new();
	struct native_sym s;
	void *q = dlsym(RTLD_DEFAULT, "qsort");

	(void)state;
	assert_non_null(ns);
	assert_non_null(q);
	assert_int_equal(native_syms_user(ns, getpid(), (uint64_t)(uintptr_t)q + 4, 0, &s), 0);
	assert_string_equal(s.name, "qsort");
	assert_non_null(s.lib);
	assert_string_equal(s.lib->name, "libc.so.6");
	assert_true(s.exact);
	/* A return address right after a call at qsort's start is qsort's. */
	assert_int_equal(native_syms_user(ns, getpid(), (uint64_t)(uintptr_t)q + 1, 1, &s), 0);
	assert_string_equal(s.name, "qsort");
	native_syms_free(ns);
}

static void test_local_symbol(void **state)
{
	struct native_syms *ns = native_syms_new();
	struct native_sym s;
	uint64_t a = (uint64_t)(uintptr_t)local_function_of_the_test + 2;

	(void)state;
	assert_int_equal(local_function_of_the_test(1), 4);
	assert_int_equal(native_syms_user(ns, getpid(), a, 0, &s), 0);
	assert_string_equal(s.name, "local_function_of_the_test");
	assert_string_equal(s.lib->name, "test_native");
	native_syms_free(ns);
}

static int find_libc(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	if (strstr(info->dlpi_name, "/libc.so.6")) {
		*(struct dl_phdr_info *)ctx = *info;
		return 1;
	}
	return 0;
}

/* msort_with_tmp (a .part.0 of it) is static in glibc: not in libc.so.6's .dynsym, and the
 * file has no .symtab; only the debug file (libc6-dbg, by build id) has
 * it. The address comes from that file too, through the ELF reader. */
static void test_debug_file(void **state)
{
	struct dl_phdr_info libc = {0};
	struct native_syms *ns = native_syms_new();
	struct native_syms_stats st;
	struct native_sym s;
	struct elfsym *e, *dbg;
	struct diag d = {0};
	char bid[72], path[256];
	uint64_t v, size;

	(void)state;
	assert_int_equal(dl_iterate_phdr(find_libc, &libc), 1);
	e = elfsym_open_path(libc.dlpi_name, &d);
	assert_non_null(e);
	assert_int_equal(elfsym_build_id(e, bid, sizeof(bid)), 0);
	assert_int_equal(elfsym_lookup(e, "msort_with_tmp.part.0", &v, &size), -1);
	elfsym_close(e);
	snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%.2s/%s.debug", bid, bid + 2);
	dbg = elfsym_open_path(path, &d);
	if (!dbg) {
		skip(); /* libc6-dbg not installed (make deps-test installs it) */
		return;
	}
	assert_int_equal(elfsym_lookup(dbg, "msort_with_tmp.part.0", &v, &size), 0);
	elfsym_close(dbg);
	assert_int_equal(
	    native_syms_user(ns, getpid(), (uint64_t)libc.dlpi_addr + v + size / 2, 1, &s), 0);
	assert_string_equal(s.name, "msort_with_tmp.part.0");
	assert_true(s.exact);
	native_syms_stats(ns, &st);
	assert_true(st.debug_files >= 1);
	native_syms_free(ns);
}

static void test_unmapped(void **state)
{
	struct native_syms *ns = native_syms_new();
	struct native_sym s;

	(void)state;
	assert_int_equal(native_syms_user(ns, getpid(), 0x10, 0, &s), -1);
	assert_string_equal(s.name, "0x10");
	assert_null(s.lib);
	native_syms_free(ns);
}

static void test_kernel(void **state)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	struct native_syms *ns = native_syms_new();
	struct native_sym s;
	char line[512], name[256];
	unsigned long long addr = 0, a;
	char type;

	(void)state;
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %255s", &a, &type, name) == 3 &&
		    !strcmp(name, "ksys_read")) {
			addr = a;
			break;
		}
	fclose(f);
	if (!addr) {
		skip(); /* kallsyms hidden from us */
		return;
	}
	assert_int_equal(native_syms_kernel(ns, addr + 8, 1, &s), 0);
	assert_string_equal(s.name, "ksys_read");
	assert_null(s.module);
	native_syms_free(ns);
}

static const char *const py[] = {"order_cb", "sort_block", "<module>"};

static struct sym_frame pyf(int i)
{
	return (struct sym_frame){.name = py[i], .file = "t.py", .line = i + 1};
}

static struct sym_frame nat(const char *name)
{
	return (struct sym_frame){.name = name, .file = "lib", .kind = FRAME_KIND_NATIVE};
}

static void expect(const struct sym_frame *out, uint32_t n, const char *const *names, uint32_t m)
{
	assert_int_equal(n, m);
	for (uint32_t i = 0; i < n; i++)
		assert_string_equal(out[i].name, names[i]);
}

/* The qsort program on 3.11+: one eval call runs <module> and sort_block
 * (marker on <module>), ctypes calls qsort, whose callback enters a second
 * eval call running order_cb (marker on it). */
static void test_splice_qsort(void **state)
{
	struct sym_frame p[3] = {pyf(0), pyf(1), pyf(2)}, out[32];
	uint32_t entry[3] = {1, 0, 1};
	struct sym_frame n[] = {nat("_PyEval_EvalFrameDefault"),
				nat("_ctypes_callproc_cb"),
				nat("msort_with_tmp.part.0"),
				nat("qsort"),
				nat("ffi_call"),
				nat("_PyEval_EvalFrameDefault"),
				nat("main")};
	uint8_t ev[] = {1, 0, 0, 0, 0, 1, 0};
	struct sym_frame k[] = {{.name = "irq", .file = "", .kind = FRAME_KIND_KERNEL}};
	struct splice_input in = {p, entry, 3, n, ev, 7, k, 1, 0};
	uint64_t causes[SPLICE__COUNT] = {0};
	static const char *const want[] = {
	    "irq",   "order_cb", "_ctypes_callproc_cb", "msort_with_tmp.part.0",
	    "qsort", "ffi_call", "sort_block",		"<module>",
	    "main"};

	(void)state;
	expect(out, splice_stack(&in, out, 32, causes), want, 9);
	for (int c = 0; c < SPLICE__COUNT; c++)
		assert_int_equal(causes[c], 0);
	/* <=3.10: one eval call per frame, every frame marked. */
	uint32_t all[3] = {1, 1, 1};
	struct sym_frame n2[] = {nat("_PyEval_EvalFrameDefault"), nat("qsort"),
				 nat("_PyEval_EvalFrameDefault"), nat("_PyEval_EvalFrameDefault"),
				 nat("main")};
	uint8_t ev2[] = {1, 0, 1, 1, 0};
	struct splice_input in2 = {p, all, 3, n2, ev2, 5, NULL, 0, 0};
	static const char *const want2[] = {"order_cb", "qsort", "sort_block", "<module>", "main"};

	expect(out, splice_stack(&in2, out, 32, causes), want2, 5);
	/* Seen on 3.12: order_cb's frame already popped, its eval call still
	 * on the native stack. The root run stays below qsort. */
	struct splice_input in3 = {p + 1, entry + 1, 2, n, ev, 7, NULL, 0, 0};
	static const char *const want3[] = {"_PyEval_EvalFrameDefault",
					    "_ctypes_callproc_cb",
					    "msort_with_tmp.part.0",
					    "qsort",
					    "ffi_call",
					    "sort_block",
					    "<module>",
					    "main"};

	expect(out, splice_stack(&in3, out, 32, causes), want3, 8);
	assert_int_equal(causes[SPLICE_EVAL_EMPTY], 1);
}

static void test_splice_causes(void **state)
{
	struct sym_frame p[3] = {pyf(0), pyf(1), pyf(2)}, out[32];
	uint32_t entry[3] = {1, 0, 1};
	struct sym_frame n[] = {nat("_PyEval_EvalFrameDefault"), nat("qsort")};
	uint8_t ev[] = {1, 0};
	uint64_t causes[SPLICE__COUNT] = {0};
	struct splice_input in = {p, entry, 3, n, ev, 2, NULL, 0, SPLICE_NATIVE_INCOMPLETE};
	static const char *const lost[] = {"order_cb", "qsort", SPLICE_MARK_LOST, "sort_block",
					   "<module>"};

	(void)state;
	/* The unwind stopped in qsort: the rest is at the root, marked. */
	expect(out, splice_stack(&in, out, 32, causes), lost, 5);
	assert_int_equal(causes[SPLICE_NATIVE_LOST], 1);
	/* Complete, root first: the eval frame takes <module>;sort_block, and
	 * order_cb, owned by no eval frame here, stays at the leaf, marked. */
	in.flags = 0;
	static const char *const unclaimed[] = {"order_cb", SPLICE_MARK_UNCLAIMED, "sort_block",
						"<module>", "qsort"};
	expect(out, splice_stack(&in, out, 32, causes), unclaimed, 5);
	assert_int_equal(causes[SPLICE_PY_UNCLAIMED], 1);
	/* More eval frames than runs (the leaf one entered, its frame not yet
	 * pushed): the leaf one stays native, the others keep their runs. */
	struct sym_frame n3[] = {nat("_PyEval_EvalFrameDefault"), nat("_PyEval_EvalFrameDefault"),
				 nat("_PyEval_EvalFrameDefault")};
	uint8_t ev3[] = {1, 1, 1};
	struct splice_input in3 = {p, entry, 3, n3, ev3, 3, NULL, 0, 0};
	static const char *const extra[] = {"_PyEval_EvalFrameDefault", "order_cb", "sort_block",
					    "<module>"};

	expect(out, splice_stack(&in3, out, 32, causes), extra, 4);
	assert_int_equal(causes[SPLICE_EVAL_EMPTY], 1);
	/* No marker at all (a walker without them): counted. */
	uint32_t none[3] = {0, 0, 0};
	struct splice_input in4 = {p, none, 3, n3, ev3, 1, NULL, 0, 0};

	splice_stack(&in4, out, 32, causes);
	assert_int_equal(causes[SPLICE_NO_MARKER], 1);
	/* The cap holds. */
	assert_int_equal(splice_stack(&in3, out, 2, causes), 2);
}

static void test_eval_names(void **state)
{
	uint32_t v311 = PY_VERSION(3, 11), v38 = PY_VERSION(3, 8);

	(void)state;
	assert_true(py_native_is_eval(v311, "_PyEval_EvalFrameDefault"));
	assert_true(py_native_is_eval(v311, "_PyEval_EvalFrameDefault.cold"));
	assert_true(py_native_is_eval(v38, "_PyEval_EvalFrameDefault"));
	assert_false(py_native_is_eval(v311, "_PyEval_EvalFrameDefaultX"));
	assert_false(py_native_is_eval(v311, "_PyEval_EvalFrame"));
	assert_false(py_native_is_eval(v311, "PyEval_EvalFrameEx"));
	assert_false(py_native_is_eval(PY_VERSION(2, 7), "_PyEval_EvalFrameDefault"));
	assert_false(py_native_is_eval(v311, NULL));
}

static void expect_collapsed(const struct profile *p, const struct profile_out_opts *o,
			     const char *want)
{
	struct diag d = {0};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_int_equal(collapsed_write(f, p, o, &d), 0);
	fclose(f);
	assert_string_equal(buf, want);
	free(buf);
}

/* Every format keeps the kinds apart: collapsed annotates, raw too,
 * pprof gets the file's Mapping (checked by go tool pprof in
 * test_native.sh). */
static void test_outputs(void **state)
{
	struct native_lib lib = {.path = "/usr/lib/x86_64-linux-gnu/libc.so.6",
				 .name = "libc.so.6",
				 .build_id = "abcd",
				 .start = 0x7f0000028000,
				 .limit = 0x7f000017d000,
				 .offset = 0x28000};
	struct sym_frame fr[] = {
	    {.name = "ksys_read",
	     .file = "",
	     .kind = FRAME_KIND_KERNEL,
	     .addr = 0xffffffff81000000},
	    {.name = "order_cb", .file = "t.py", .line = 7, .firstlineno = 6},
	    {.name = "qsort",
	     .file = "libc.so.6",
	     .kind = FRAME_KIND_NATIVE,
	     .lib = &lib,
	     .addr = 0x3ffd0},
	    {.name = "sort_block", .file = "t.py", .line = 12, .firstlineno = 10},
	};
	struct sym_sample smp = {.ts_ns = 1, .pid = 1, .tid = 1, .nframes = 4, .frames = fr};
	struct profile *p = profile_new(1000000, "cpu");
	struct profile_out_opts o = {0};
	struct diag d = {0};
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_int_equal(profile_add(p, &smp), 0);
	expect_collapsed(p, &o,
			 "sort_block (t.py:12);qsort (libc.so.6) [native];order_cb "
			 "(t.py:7);ksys_read [kernel] 1\n");
	o.no_lines = 1;
	expect_collapsed(p, &o,
			 "sort_block (t.py);qsort (libc.so.6) [native];order_cb "
			 "(t.py);ksys_read [kernel] 1\n");
	f = open_memstream(&buf, &len);
	assert_int_equal(raw_write_sample(f, &smp), 0);
	fclose(f);
	assert_non_null(strstr(buf, ";qsort (libc.so.6:0) [native];"));
	free(buf);
	f = open_memstream(&buf, &len);
	assert_int_equal(speedscope_write(f, p, &o, &d), 0);
	fclose(f);
	assert_non_null(strstr(buf, "{\"name\":\"qsort [native]\",\"file\":\"libc.so.6\"}"));
	assert_non_null(strstr(buf, "{\"name\":\"ksys_read [kernel]\"}"));
	free(buf);
	f = open_memstream(&buf, &len);
	assert_int_equal(svg_write(f, p, &o, &d), 0);
	fclose(f);
	assert_non_null(strstr(buf, "qsort (libc.so.6) [native]"));
	free(buf);
	assert_int_equal(p->nmappings, 1);
	assert_int_equal(p->mappings[0].start, lib.start);
	assert_string_equal(profile_str(p, p->mappings[0].build_id), "abcd");
	profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_libc_qsort),	  cmocka_unit_test(test_local_symbol),
	    cmocka_unit_test(test_debug_file),	  cmocka_unit_test(test_unmapped),
	    cmocka_unit_test(test_kernel),	  cmocka_unit_test(test_splice_qsort),
	    cmocka_unit_test(test_splice_causes), cmocka_unit_test(test_eval_names),
	    cmocka_unit_test(test_outputs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
