// SPDX-License-Identifier: MIT
/*
 * The unwind-table builder (user/native/unwind_tables.h) over real ELF files:
 * libc, Debian's python3.11 (no frame pointers), every pyenv libpython and
 * the sid chroot's 3.14/3.15. The expected rules come from binutils
 * (`readelf --debug-dump=frames-interp`, an independent CFI reader), row by
 * row for every FDE, and from facts true of every x86_64 function (at its
 * first instruction the CFA is rsp+8).
 */
#include <glob.h>
#include <limits.h>
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
#include "unwind_tables.h"

#define MAX_FILES 32

static char files[MAX_FILES][PATH_MAX];
static char names[MAX_FILES][PATH_MAX + 16];
static size_t nfiles;

static void add_file(const char *p)
{
	if (nfiles < MAX_FILES && access(p, R_OK) == 0)
		snprintf(files[nfiles++], PATH_MAX, "%s", p);
}

static void find_files(void)
{
	glob_t g;

	add_file("/lib/x86_64-linux-gnu/libc.so.6");
	add_file("/usr/bin/python3.11");
	if (!glob("/root/.pyenv/versions/*/lib/libpython*.so.1.0", 0, NULL, &g)) {
		for (size_t i = 0; i < g.gl_pathc; i++)
			add_file(g.gl_pathv[i]);
		globfree(&g);
	}
	add_file("/var/cache/bpfpy/sid/usr/bin/python3.14");
	add_file("/var/cache/bpfpy/sid/usr/bin/python3.15");
}

/* A readelf rule as our row would say it: "rsp+16" with rbp "c-16"... */
static int expect_row(const char *cfa, const char *rbp, const char *ra, struct unwind_row *want)
{
	long off;

	memset(want, 0, sizeof(*want));
	if (!strcmp(ra, "u")) {
		want->kind = UNW_CFA_END;
		return 0;
	}
	if (strcmp(ra, "c-8"))
		return -1; /* not a rule we claim anything about */
	if (!strncmp(cfa, "rsp+", 4) || !strncmp(cfa, "rbp+", 4)) {
		off = strtol(cfa + 4, NULL, 10);
		want->kind = cfa[1] == 's' ? UNW_CFA_RSP : UNW_CFA_RBP;
		if (off > UINT16_MAX) {
			want->kind |= UNW_CFA_SCALED;
			off /= 8;
		}
		want->cfa_off = (uint16_t)off;
	} else if (!strcmp(cfa, "exp")) {
		want->kind = UNW_CFA_PLT; /* or unsupported: checked below */
		return 1;
	} else {
		return -1;
	}
	if (!rbp || !strcmp(rbp, "u") || !strcmp(rbp, "s")) {
		want->kind |= UNW_RBP_SAME << 4;
	} else if (rbp[0] == 'c') {
		want->kind |= UNW_RBP_CFA << 4;
		want->rbp_off = (int8_t)(strtol(rbp + 1, NULL, 10) / 8);
	} else {
		want->kind |= UNW_RBP_UNDEF << 4;
	}
	return 0;
}

/*
 * Every row readelf prints for an FDE of .eh_frame must be the row our
 * table gives at that LOC. Returns the rows compared.
 */
static unsigned compare_readelf(const char *path, const struct unwind_table *t)
{
	char cmd[PATH_MAX + 64], line[1024], cols[16][24];
	int ncols = 0, rbp_col = -1, ra_col = -1, in_eh = 0, in_fde = 0;
	unsigned compared = 0, bad = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames-interp '%s' 2>/dev/null", path);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long loc, lo, hi;
		char *p;
		int n = 0;

		if (!strncmp(line, "Contents of the ", 16)) {
			in_eh = strstr(line, ".eh_frame ") != NULL;
			continue;
		}
		if (!in_eh)
			continue;
		if (strstr(line, " CIE")) {
			ncols = 0; /* a CIE's initial rules: no address */
			in_fde = 0;
			continue;
		}
		if ((p = strstr(line, " FDE ")) && (p = strstr(p, "pc=")) &&
		    sscanf(p, "pc=%llx..%llx", &lo, &hi) == 2) {
			ncols = 0;
			in_fde = 1;
			continue;
		}
		if (strstr(line, "   LOC")) {
			char *tok = strtok(line, " \n");

			ncols = 0;
			rbp_col = ra_col = -1;
			while (tok && ncols < 16) {
				if (!strcmp(tok, "rbp"))
					rbp_col = ncols;
				if (!strcmp(tok, "ra"))
					ra_col = ncols;
				ncols++;
				tok = strtok(NULL, " \n");
			}
			continue;
		}
		if (!in_fde || !ncols || ra_col < 0 || sscanf(line, "%llx", &loc) != 1)
			continue;
		for (char *tok = strtok(line, " \n"); tok && n < 16; tok = strtok(NULL, " \n"))
			snprintf(cols[n++], sizeof(cols[0]), "%s", tok);
		if (n != ncols)
			continue;
		{
			struct unwind_row want;
			const struct unwind_row *got = unwind_table_find(t, loc);
			int e = expect_row(cols[1], rbp_col >= 0 ? cols[rbp_col] : NULL,
					   cols[ra_col], &want);
			char gs[64] = "none", ws[64];

			if (e < 0)
				continue;
			if (got)
				unwind_row_str(got, gs, sizeof(gs));
			unwind_row_str(&want, ws, sizeof(ws));
			if (!got ||
			    (e == 0 &&
			     (got->kind != want.kind ||
			      unwind_row_cfa_off(got) != unwind_row_cfa_off(&want) ||
			      (got->kind >> 4 == UNW_RBP_CFA && got->rbp_off != want.rbp_off))) ||
			    (e == 1 && (got->kind & 7) != UNW_CFA_PLT &&
			     (got->kind & 7) != UNW_CFA_UNSUPPORTED)) {
				if (bad++ < 10)
					print_message(
					    "%s: at %llx readelf says %s (rbp %s, ra %s), "
					    "table %s (want %s)\n",
					    path, loc, cols[1], rbp_col >= 0 ? cols[rbp_col] : "-",
					    cols[ra_col], gs, ws);
			}
			compared++;
		}
	}
	pclose(f);
	assert_int_equal(bad, 0);
	return compared;
}

static void test_file(void **state)
{
	const char *path = *state;
	struct diag d = {0};
	struct elfsym *e = elfsym_open_path(path, &d);
	struct unwind_table t;
	unsigned compared;

	assert_non_null(e);
	assert_int_equal(unwind_table_build(e, path, &t, &d), 0);
	assert_false(t.truncated);
	assert_true(t.n > 100);
	/* sorted, and no two neighbours alike */
	for (uint32_t i = 1; i < t.n; i++) {
		assert_true(t.rows[i].pc > t.rows[i - 1].pc);
		assert_false(t.rows[i].kind == t.rows[i - 1].kind &&
			     t.rows[i].cfa_off == t.rows[i - 1].cfa_off &&
			     t.rows[i].rbp_off == t.rows[i - 1].rbp_off);
	}
	compared = compare_readelf(path, &t);
	print_message("%s: %u rows, %u compared with readelf, %u without CFI, %u plt, %u "
		      "unsupported, %u probes, %.1f ms\n",
		      path, t.n, compared, t.nocfi_rows, t.plt_rows, t.unsupported_rows, t.probes,
		      t.build_ns / 1e6);
	assert_true(compared > 1000);
	unwind_table_free(&t);
	elfsym_close(e);
}

/* At the first instruction of any function the CFA is rsp+8 and the return
 * address at CFA-8, whatever the compiler: the call just pushed it. */
/* In file path, each of syms[0..n) starts with CFA = rsp+8; the
 * eval loop (where listed) is still rsp-based 64 bytes in. */
static void check_entries(const char *path, const char *const *syms, size_t n)
{
	struct diag d = {0};
	struct unwind_table t;
	struct elfsym *e = elfsym_open_path(path, &d);
	uint64_t v;

	if (!e)
		skip();
	assert_int_equal(unwind_table_build(e, path, &t, &d), 0);
	for (size_t i = 0; i < n; i++) {
		const struct unwind_row *r;

		assert_int_equal(elfsym_lookup(e, syms[i], &v, NULL), 0);
		r = unwind_table_find(&t, v);
		assert_non_null(r);
		assert_int_equal(r->kind & 7, UNW_CFA_RSP);
		assert_int_equal(r->cfa_off, 8);
		/* Debian builds without frame pointers: the eval loop's CFA
		 * stays rsp-based past its prologue. */
		if (!strcmp(syms[i], "_PyEval_EvalFrameDefault")) {
			r = unwind_table_find(&t, v + 64);
			assert_non_null(r);
			assert_int_equal(r->kind & 7, UNW_CFA_RSP);
			assert_true(r->cfa_off > 8);
		}
	}
	unwind_table_free(&t);
	elfsym_close(e);
}

static void test_function_entries(void **state)
{
	static const char *const libc_syms[] = {"qsort", "malloc", "getpid", "memcpy", "read"};
	static const char *const py_syms[] = {"_PyEval_EvalFrameDefault", "Py_BytesMain",
					      "PyObject_Call", "PyLong_FromLong"};

	(void)state;
	check_entries("/lib/x86_64-linux-gnu/libc.so.6", libc_syms,
		      sizeof(libc_syms) / sizeof(libc_syms[0]));
	check_entries("/usr/bin/python3.11", py_syms, sizeof(py_syms) / sizeof(py_syms[0]));
}

/* An ELF without any CFI still gets a table: all "no CFI" (frame pointers),
 * never a made-up rule. */
static void test_no_cfi(void **state)
{
	char path[] = "/tmp/bpfpy-unw-XXXXXX";
	char cmd[256];
	struct diag d = {0};
	struct unwind_table t;
	struct elfsym *e;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "objcopy --remove-section=.eh_frame --remove-section=.eh_frame_hdr "
		 "/lib/x86_64-linux-gnu/libc.so.6 %s 2>/dev/null",
		 path);
	if (system(cmd)) {
		unlink(path);
		skip();
	}
	e = elfsym_open_path(path, &d);
	assert_non_null(e);
	assert_int_equal(unwind_table_build(e, path, &t, &d), 0);
	for (uint32_t i = 0; i < t.n; i++)
		assert_int_equal(t.rows[i].kind & 7, UNW_CFA_NONE);
	unwind_table_free(&t);
	elfsym_close(e);
	unlink(path);
}

/* The ELF fuzzer's hostile seeds (sparse files claiming huge tables, bad
 * notes): a table or a refusal, within the caps, never a crash. */
static void test_hostile_seeds(void **state)
{
	glob_t g;
	unsigned tried = 0;

	(void)state;
	if (glob("tests/fuzz/corpus/elf/*", 0, NULL, &g))
		skip();
	for (size_t i = 0; i < g.gl_pathc; i++) {
		struct diag d = {0};
		struct unwind_table t;
		struct elfsym *e = elfsym_open_path(g.gl_pathv[i], &d);

		if (!e)
			continue;
		tried++;
		if (!unwind_table_build(e, g.gl_pathv[i], &t, &d)) {
			assert_true(t.n <= UNW_MAX_ROWS);
			assert_true(t.probes <= UNW_MAX_PROBES);
			assert_true(t.build_ns < (uint64_t)(UNW_MAX_BUILD_MS + 1000) * 1000000);
		}
		unwind_table_free(&t);
		elfsym_close(e);
	}
	globfree(&g);
	assert_true(tried > 0);
}

int main(void)
{
	struct CMUnitTest tests[MAX_FILES + 4];
	size_t n = 0;

	find_files();
	for (size_t i = 0; i < nfiles; i++) {
		snprintf(names[i], sizeof(names[i]), "table of %s", files[i]);
		tests[n++] = (struct CMUnitTest){names[i], test_file, NULL, NULL, files[i]};
	}
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_function_entries);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_no_cfi);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_hostile_seeds);
	return _cmocka_run_group_tests("unwind_tables", tests, n, NULL, NULL);
}
