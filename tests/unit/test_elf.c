// SPDX-License-Identifier: MIT
/*
 * The ELF reader (elf_file.h) over the real interpreters installed here: every pyenv
 * libpython, Debian's /usr/bin/python3.11, and the Debian sid chroot's
 * python3.14/3.15 when that chroot exists. Expected values come from the
 * interpreters themselves (sys.hexversion) and from binutils, never from a
 * table in this file.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <elf.h>

#include <cmocka.h>

#include "diag.h"
#include "elf_file.h"

#define SID	    "/var/cache/bpfpy/sid"
#define MAX_TARGETS 32

struct target {
	char name[64];
	char test_name[96];
	char file[PATH_MAX];   /* the ELF file defining the interpreter */
	char runcmd[PATH_MAX]; /* shell command prefix that runs it */
	int major, minor;      /* from the pyenv directory or file name */
	int is_exec;	       /* expect ET_EXEC */
	int expect_usdt;       /* -1: do not check */
};

static struct target targets[MAX_TARGETS];
static size_t ntargets;

static int run_capture(const char *cmd, char *out, size_t len)
{
	FILE *p = popen(cmd, "r");
	size_t n;

	if (!p)
		return -1;
	n = fread(out, 1, len - 1, p);
	out[n] = '\0';
	return pclose(p) == 0 && n ? 0 : -1;
}

/* The version the interpreter itself reports. */
static uint32_t hexversion_of(const struct target *t)
{
	char cmd[PATH_MAX + 128], out[64];

	snprintf(cmd, sizeof(cmd), "%s -c 'import sys; print(sys.hexversion)' 2>/dev/null",
		 t->runcmd);
	if (run_capture(cmd, out, sizeof(out)))
		return 0;
	return (uint32_t)strtoul(out, NULL, 10);
}

static void add_target(const char *name, const char *file, const char *runcmd, int major, int minor,
		       int is_exec, int usdt)
{
	struct target *t;

	if (ntargets == MAX_TARGETS)
		return;
	t = &targets[ntargets++];
	snprintf(t->name, sizeof(t->name), "%s", name);
	snprintf(t->file, sizeof(t->file), "%s", file);
	snprintf(t->runcmd, sizeof(t->runcmd), "%s", runcmd);
	t->major = major;
	t->minor = minor;
	t->is_exec = is_exec;
	t->expect_usdt = usdt;
}

static void find_targets(void)
{
	glob_t g;

	if (!glob("/root/.pyenv/versions/*/lib/libpython*.so.1.0", 0, NULL, &g)) {
		for (size_t i = 0; i < g.gl_pathc; i++) {
			char dir[32], run[PATH_MAX], name[64];
			int ma, mi;
			const char *v = g.gl_pathv[i] + strlen("/root/.pyenv/versions/");

			if (sscanf(v, "%d.%d", &ma, &mi) != 2)
				continue;
			if (strchr(v, '/') - v >= (ptrdiff_t)sizeof(dir))
				continue;
			snprintf(dir, sizeof(dir), "%.*s", (int)(strchr(v, '/') - v), v);
			snprintf(name, sizeof(name), "pyenv-%s", dir);
			snprintf(run, sizeof(run), "/root/.pyenv/versions/%s/bin/python", dir);
			/* pyenv builds here have no --with-dtrace */
			add_target(name, g.gl_pathv[i], run, ma, mi, 0, 0);
		}
		globfree(&g);
	}
	if (!access("/usr/bin/python3.11", X_OK))
		add_target("debian-3.11", "/usr/bin/python3.11", "/usr/bin/python3.11", 3, 11, 1,
			   1);
	else
		fprintf(stderr, "note: /usr/bin/python3.11 absent, Debian build not tested\n");
	if (!access(SID "/usr/bin/python3.14", X_OK))
		add_target("sid-3.14", SID "/usr/bin/python3.14", "chroot " SID " python3.14", 3,
			   14, -1, -1);
	if (!access(SID "/usr/bin/python3.15", X_OK))
		add_target("sid-3.15", SID "/usr/bin/python3.15", "chroot " SID " python3.15", 3,
			   15, -1, 1);
	if (access(SID "/usr/bin/python3.14", X_OK) && access(SID "/usr/bin/python3.15", X_OK))
		fprintf(stderr, "note: no sid chroot at %s, 3.14/3.15 not tested\n", SID);
}

static int at_least(const struct target *t, int ma, int mi)
{
	return t->major > ma || (t->major == ma && t->minor >= mi);
}

/* _PyRuntime exists from 3.7, its own section from 3.10 (seen here) and
 * Py_Version from 3.11; the section must be exactly the symbol's object. */
static void test_interpreter(void **state)
{
	const struct target *t = *state;
	struct diag d = {0};
	struct elfsym *e = elfsym_open_path(t->file, &d);
	uint64_t rt, rts, sec, secs, v, vs, base;
	uint32_t ver_file, hex;

	assert_non_null(e);
	if (t->is_exec >= 0)
		assert_int_equal(elfsym_type(e), t->is_exec ? ET_EXEC : ET_DYN);
	if (t->expect_usdt >= 0)
		assert_int_equal(elfsym_has_usdt(e), t->expect_usdt);

	assert_int_equal(elfsym_load_base(e, &base), 0);
	assert_int_equal(base & 4095, 0);
	assert_int_equal(elfsym_lookup(e, "PyCode_Type", &v, &vs), 0);
	assert_true(v >= base && vs > 0);
	assert_int_equal(elfsym_lookup(e, "_Py_NoneStruct", &v, NULL), 0);
	assert_int_equal(elfsym_lookup(e, "PyUnicode_Type", &v, NULL), 0);
	assert_int_equal(elfsym_lookup(e, "Py_Initialize", &v, NULL), 0);
	assert_int_equal(elfsym_lookup(e, "no_such_symbol_in_cpython", &v, NULL), -1);

	if (!at_least(t, 3, 7)) {
		assert_int_equal(elfsym_lookup(e, "_PyRuntime", &rt, NULL), -1);
		elfsym_close(e);
		return;
	}
	assert_int_equal(elfsym_lookup(e, "_PyRuntime", &rt, &rts), 0);
	assert_true(rt > base && rts > 0);
	if (at_least(t, 3, 11)) {
		assert_int_equal(elfsym_section(e, ".PyRuntime", &sec, &secs), 0);
		assert_int_equal(sec, rt);
		assert_true(secs >= rts);

		hex = hexversion_of(t);
		assert_int_not_equal(hex, 0);
		assert_int_equal(elfsym_lookup(e, "Py_Version", &v, &vs), 0);
		/* const unsigned long: 8 bytes here, the value in the low 4 */
		assert_int_equal(vs, sizeof(unsigned long));
		assert_int_equal(elfsym_read(e, v, &ver_file, sizeof(ver_file)), 0);
		assert_int_equal(ver_file, hex);
		assert_int_equal(ver_file >> 24, (uint32_t)t->major);
		assert_int_equal((ver_file >> 16) & 0xff, (uint32_t)t->minor);
	} else {
		assert_int_equal(elfsym_lookup(e, "Py_Version", &v, NULL), -1);
	}
	elfsym_close(e);
}

/* The build-id as binutils reads it. */
static void test_build_id_matches_readelf(void **state)
{
	(void)state;
	for (size_t i = 0; i < ntargets; i++) {
		char cmd[PATH_MAX + 64], out[4096], want[80], got[80];
		struct elfsym *e;
		char *s;

		snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", targets[i].file);
		if (run_capture(cmd, out, sizeof(out)) || !(s = strstr(out, "Build ID: "))) {
			fprintf(stderr, "note: readelf gives no build-id for %s\n",
				targets[i].file);
			continue;
		}
		sscanf(s + 10, "%79s", want);
		e = elfsym_open_path(targets[i].file, NULL);
		assert_non_null(e);
		assert_int_equal(elfsym_build_id(e, got, sizeof(got)), 0);
		assert_string_equal(got, want);
		/* too small a buffer is refused, not truncated */
		assert_int_equal(elfsym_build_id(e, got, 8), -1);
		elfsym_close(e);
	}
}

/* A static function is only in .symtab: found in the pyenv builds (which
 * keep it), absent from the stripped Debian executable. */
static void test_symtab_fallback(void **state)
{
	(void)state;
	for (size_t i = 0; i < ntargets; i++) {
		const struct target *t = &targets[i];
		struct elfsym *e = elfsym_open_path(t->file, NULL);
		uint64_t v;
		char cmd[PATH_MAX + 64], out[256];
		int in_symtab;

		assert_non_null(e);
		snprintf(cmd, sizeof(cmd), "nm '%s' 2>/dev/null | grep -c ' t frame_dealloc$'",
			 t->file);
		in_symtab = !run_capture(cmd, out, sizeof(out)) && atoi(out) > 0;
		assert_int_equal(elfsym_lookup(e, "frame_dealloc", &v, NULL), in_symtab ? 0 : -1);
		elfsym_close(e);
	}
}

/* Bytes past p_filesz (.bss) are not in the file and must not be invented. */
static void test_read_bounds(void **state)
{
	struct elfsym *e;
	uint64_t base;
	unsigned char buf[16], magic[4];

	(void)state;
	if (access("/usr/bin/python3.11", R_OK)) {
		fprintf(stderr, "note: skipped, /usr/bin/python3.11 absent\n");
		skip();
	}
	e = elfsym_open_path("/usr/bin/python3.11", NULL);
	assert_non_null(e);
	assert_int_equal(elfsym_load_base(e, &base), 0);
	/* the ELF header is the first bytes of the first PT_LOAD */
	assert_int_equal(elfsym_read(e, base, magic, 4), 0);
	assert_memory_equal(magic, ELFMAG, 4);
	assert_int_equal(elfsym_read(e, 0, buf, sizeof(buf)), base ? -1 : 0);
	assert_int_equal(elfsym_read(e, UINT64_MAX - 4, buf, sizeof(buf)), -1);
	assert_int_equal(elfsym_read(e, base, buf, ELFSYM_MAX_READ + 1), -1);
	elfsym_close(e);
}

static void test_not_elf(void **state)
{
	struct diag d = {0};
	int fd;

	(void)state;
	assert_null(elfsym_open_path("/etc/passwd", &d));
	assert_int_equal(d.code, EXIT_FAIL);
	assert_non_null(strstr(d.msg, "/etc/passwd"));
	memset(&d, 0, sizeof(d));
	assert_null(elfsym_open_path("/nonexistent/file", &d));
	assert_int_equal(d.sys_errno, ENOENT);
	memset(&d, 0, sizeof(d));
	fd = open("/proc", O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	assert_null(elfsym_open(fd, "/proc", &d)); /* closes fd */
	assert_non_null(strstr(d.msg, "not a regular file"));
}

/* Exercise every entry point on the file as loaded. */
static void poke(int fd)
{
	struct elfsym *e = elfsym_open(fd, "mutant", NULL);
	uint64_t v, s, base = 0;
	char buf[64], id[80];

	if (!e)
		return;
	elfsym_lookup(e, "main", &v, &s);
	elfsym_lookup(e, "_PyRuntime", &v, &s);
	elfsym_section(e, ".text", &v, &s);
	elfsym_load_base(e, &base);
	elfsym_read(e, base, buf, sizeof(buf));
	elfsym_read(e, base + 0x1000, buf, sizeof(buf));
	elfsym_build_id(e, id, sizeof(id));
	elfsym_has_usdt(e);
	elfsym_close(e);
}

/* Hostile files: truncations and random corruption of a real executable
 * must give errors, never crashes or reads outside the file (run under
 * make SAN=1 to have ASan watch). Deterministic: fixed seed. */
static void test_hostile(void **state)
{
	const char *src = "/bin/true";
	unsigned char *orig, *mut;
	struct stat st;
	int fd;

	(void)state;
	fd = open(src, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	orig = malloc((size_t)st.st_size);
	mut = malloc((size_t)st.st_size);
	assert_non_null(orig);
	assert_non_null(mut);
	assert_int_equal(read(fd, orig, (size_t)st.st_size), st.st_size);
	close(fd);

	srand(1);
	for (int iter = 0; iter < 600; iter++) {
		size_t len = (size_t)st.st_size;
		int mfd = memfd_create("elf-mutant", MFD_CLOEXEC);

		assert_true(mfd >= 0);
		memcpy(mut, orig, len);
		if (iter < 100) {
			len = (size_t)rand() % len; /* truncated */
		} else {
			/* Flip bytes, mostly in the headers where sizes and
			 * offsets live. */
			for (int k = 0; k < 1 + rand() % 24; k++) {
				size_t at =
				    rand() % 2 ? (size_t)rand() % 512 : (size_t)rand() % len;
				mut[at] = (unsigned char)rand();
			}
			if (iter % 3 == 0) {
				/* point the section headers past the end */
				Elf64_Ehdr *eh = (Elf64_Ehdr *)mut;

				eh->e_shoff = len - (size_t)(rand() % 64);
				eh->e_shnum = (uint16_t)rand();
			}
		}
		assert_int_equal(write(mfd, mut, len), (ssize_t)len);
		poke(mfd); /* takes the fd */
	}
	free(orig);
	free(mut);
}

/*
 * Sparse hostile copies of a real executable (issue 11 rows 1 and 2): a
 * section header claims 2 GiB inside a file made that long by a hole, so
 * a size check against the file passes and only a cap stops the read.
 */
#define HOSTILE_SRC "/usr/bin/python3.11"
#define GIB2	    (2ull << 30)

static long max_rss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* Copy HOSTILE_SRC to a fresh sparse file of GIB2 + 1 MiB, set section
 * name's sh_size to size, and if descsz is not 0 the first note's n_descsz
 * to descsz. Returns the path (static), or NULL (then the test skips). */
static const char *make_sparse(const char *name, uint64_t size, uint32_t descsz)
{
	static char path[64];
	struct stat st;
	unsigned char *buf;
	Elf64_Ehdr *eh;
	Elf64_Shdr *sh;
	const char *names;
	int in, out, found = 0;

	in = open(HOSTILE_SRC, O_RDONLY);
	if (in < 0)
		return NULL;
	assert_int_equal(fstat(in, &st), 0);
	buf = malloc((size_t)st.st_size);
	assert_non_null(buf);
	assert_int_equal(read(in, buf, (size_t)st.st_size), st.st_size);
	close(in);
	eh = (Elf64_Ehdr *)buf;
	sh = (Elf64_Shdr *)(buf + eh->e_shoff);
	names = (const char *)buf + sh[eh->e_shstrndx].sh_offset;
	for (int i = 0; i < eh->e_shnum; i++) {
		if (strcmp(names + sh[i].sh_name, name))
			continue;
		sh[i].sh_size = size;
		if (descsz)
			memcpy(buf + sh[i].sh_offset + 4, &descsz, 4);
		found = 1;
		break;
	}
	assert_true(found);
	snprintf(path, sizeof(path), "/tmp/bpfpy-test-elf.XXXXXX");
	out = mkstemp(path);
	assert_true(out >= 0);
	assert_int_equal(write(out, buf, (size_t)st.st_size), st.st_size);
	assert_int_equal(ftruncate(out, (off_t)(GIB2 + (1u << 20))), 0);
	close(out);
	free(buf);
	return path;
}

/* Row 1: n_descsz = 0x80000000 (2 * n + 1 wraps to 1 in 32 bits). */
static void test_note_overflow(void **state)
{
	const char *path = make_sparse(".note.gnu.build-id", 0x80000000ull + 64, 0x80000000u);
	long rss0 = max_rss_kb();
	struct elfsym *e;
	char id[65];
	uint64_t v;

	(void)state;
	if (!path)
		skip();
	e = elfsym_open_path(path, NULL);
	assert_non_null(e);
	assert_int_equal(elfsym_build_id(e, id, sizeof(id)), -1);
	assert_int_equal(elfsym_lookup(e, "Py_Initialize", &v, NULL), 0);
	elfsym_close(e);
	unlink(path);
	assert_true(max_rss_kb() - rss0 < 64 * 1024);
}

/* Row 2: tables claiming 2 GiB are refused, not read; the rest still works. */
static void test_oversized_sections(void **state)
{
	static const char *const secs[] = {".note.gnu.build-id", ".dynsym", ".dynstr", ".shstrtab",
					   ".note.stapsdt"};

	(void)state;
	for (size_t i = 0; i < sizeof(secs) / sizeof(secs[0]); i++) {
		const char *path = make_sparse(secs[i], GIB2 - GIB2 % 24, 0);
		long rss0 = max_rss_kb();
		struct usdt_probe *v = NULL;
		struct elfsym *e;
		uint64_t a, base;
		char id[65];
		int is_sym = !strcmp(secs[i], ".dynsym") || !strcmp(secs[i], ".dynstr");

		if (!path)
			skip();
		e = elfsym_open_path(path, NULL);
		assert_non_null(e);
		/* A stripped executable: .dynsym is its only symbol table. */
		assert_int_equal(elfsym_lookup(e, "Py_Initialize", &a, NULL), is_sym ? -1 : 0);
		assert_int_equal(elfsym_build_id(e, id, sizeof(id)),
				 !strcmp(secs[i], ".note.gnu.build-id") ? -1 : 0);
		assert_true(elfsym_usdt(e, &v, NULL) >= 0);
		free(v);
		assert_int_equal(elfsym_load_base(e, &base), 0);
		elfsym_close(e);
		unlink(path);
		if (max_rss_kb() - rss0 >= 64 * 1024)
			fail_msg("%s claiming 2 GiB: max RSS grew by %ld kB", secs[i],
				 max_rss_kb() - rss0);
	}
}

int main(void)
{
	struct CMUnitTest tests[MAX_TARGETS + 8];
	size_t n = 0;

	find_targets();
	for (size_t i = 0; i < ntargets; i++) {
		struct target *t = &targets[i];

		snprintf(t->test_name, sizeof(t->test_name), "interpreter %s", t->name);
		tests[n++] = (struct CMUnitTest){t->test_name, test_interpreter, NULL, NULL, t};
	}
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_build_id_matches_readelf);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_symtab_fallback);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_read_bounds);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_not_elf);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_hostile);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_note_overflow);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_oversized_sections);
	return _cmocka_run_group_tests("elf_file", tests, n, NULL, NULL);
}
