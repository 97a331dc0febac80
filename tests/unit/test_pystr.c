// SPDX-License-Identifier: MIT
/*
 * str and bytes readers: memory images of hand-built objects of every kind
 * and shape, then real objects read out of live interpreters of every
 * version we have, including a str subclass (a legacy, non-compact string).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <signal.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "pystr.h"

/* Layouts measured with pahole on the pyenv builds: length +16, state +32
 * everywhere; PyASCIIObject is 48 bytes up to 3.11 (it has a wstr
 * pointer) and 40 from 3.12; PyCompactUnicodeObject 72 and 56. bytes:
 * ob_size +16, ob_sval +32. */
static struct py_offsets offsets(int ascii_off, int compact_off)
{
	struct py_offsets o;

	memset(&o, 0, sizeof(o));
	o.unicode_length = 16;
	o.unicode_state = 32;
	o.ascii_data_off = (uint8_t)ascii_off;
	o.compact_data_off = (uint8_t)compact_off;
	o.bytes_size = 16;
	o.bytes_data = 32;
	return o;
}

#define IMG_BASE 0x7f0000100000ull

/* Build a str object in buf: header per o, then n code points of kind. */
static size_t make_str(uint8_t *buf, const struct py_offsets *o, int kind, int ascii, int compact,
		       const uint32_t *cps, int64_t n, int64_t claimed_len)
{
	uint32_t state = (uint32_t)kind << 2 | (uint32_t)compact << 5 | (uint32_t)ascii << 6;
	size_t off = ascii ? o->ascii_data_off : o->compact_data_off;

	memset(buf, 0xAA, off);
	memcpy(buf + o->unicode_length, &claimed_len, 8);
	memcpy(buf + o->unicode_state, &state, 4);
	for (int64_t i = 0; i < n; i++) {
		uint8_t *p = buf + off + (size_t)i * (size_t)kind;

		if (kind == 1)
			*p = (uint8_t)cps[i];
		else if (kind == 2) {
			uint16_t v = (uint16_t)cps[i];
			memcpy(p, &v, 2);
		} else
			memcpy(p, &cps[i], 4);
	}
	return off + (size_t)n * (size_t)kind;
}

static int read_one(const struct py_offsets *o, uint8_t *buf, size_t len, char *out, size_t cap)
{
	struct mem_region reg = {IMG_BASE, buf, len};
	struct mem_reader r;

	mem_reader_init_image(&r, &reg, 1);
	return pystr_read(&r, o, IMG_BASE, out, cap);
}

static int64_t decode_str(const char *s, uint32_t *cps, size_t max)
{
	size_t n = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p && n < max; n++) {
		if (*p < 0x80)
			cps[n] = *p++;
		else if (*p < 0xE0)
			cps[n] = (uint32_t)(p[0] & 0x1F) << 6 | (p[1] & 0x3F), p += 2;
		else if (*p < 0xF0)
			cps[n] = (uint32_t)(p[0] & 0x0F) << 12 | (uint32_t)(p[1] & 0x3F) << 6 |
				 (p[2] & 0x3F),
			p += 3;
		else
			cps[n] = (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3F) << 12 |
				 (uint32_t)(p[2] & 0x3F) << 6 | (p[3] & 0x3F),
			p += 4;
	}
	return (int64_t)n;
}

/* Round trip: UTF-8 -> code points -> object of kind -> pystr_read. */
static void check_kind(const struct py_offsets *o, const char *utf8, int kind, int ascii)
{
	static uint8_t buf[1 << 16];
	uint32_t cps[256];
	char out[PYSTR_DEFAULT_CAP];
	int64_t n = decode_str(utf8, cps, 256);
	size_t len = make_str(buf, o, kind, ascii, 1, cps, n, n);

	assert_int_equal(read_one(o, buf, len, out, sizeof(out)), (int)strlen(utf8));
	assert_string_equal(out, utf8);
}

static void test_kinds(void **state)
{
	(void)state;
	for (int v = 0; v < 2; v++) {
		struct py_offsets o = v ? offsets(40, 56) : offsets(48, 72);

		check_kind(&o, "hello_world", 1, 1);
		check_kind(&o, "", 1, 1);
		check_kind(&o, "h\xC3\xA9llo", 1, 0);		      /* héllo, Latin-1 */
		check_kind(&o, "\xCE\xA9\xE2\x89\x88", 2, 0);	      /* Ω≈, UCS-2 */
		check_kind(&o, "\xF0\x9D\x94\x98nicode", 4, 0);	      /* 𝔘nicode, UCS-4 */
		check_kind(&o, "\xC3\xBF\xC4\x80\xEF\xBF\xBF", 2, 0); /* U+FF U+100 U+FFFF */
	}
}

static void test_invalid_code_points(void **state)
{
	static uint8_t buf[4096];
	struct py_offsets o = offsets(40, 56);
	char out[64];
	uint32_t ucs2[] = {'a', 0xD800, 'b', 0xDFFF};
	uint32_t ucs4[] = {0x110000, 0, 0x10FFFF, 0xFFFFFFFF};
	uint32_t ascii[] = {'o', 0xC8, 'k'};
	size_t len;
	(void)state;

	len = make_str(buf, &o, 2, 0, 1, ucs2, 4, 4);
	assert_int_equal(read_one(&o, buf, len, out, sizeof(out)), 8);
	assert_string_equal(out, "a" PYSTR_REPLACEMENT "b" PYSTR_REPLACEMENT);

	len = make_str(buf, &o, 4, 0, 1, ucs4, 4, 4);
	read_one(&o, buf, len, out, sizeof(out));
	assert_string_equal(out, PYSTR_REPLACEMENT PYSTR_REPLACEMENT
			    "\xF4\x8F\xBF\xBF" PYSTR_REPLACEMENT);

	/* a byte above 0x7f in a string whose header says ASCII */
	len = make_str(buf, &o, 1, 1, 1, ascii, 3, 3);
	read_one(&o, buf, len, out, sizeof(out));
	assert_string_equal(out, "o" PYSTR_REPLACEMENT "k");
}

static int valid_utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		int n = *p < 0x80 ? 1 : *p >= 0xF0 ? 4 : *p >= 0xE0 ? 3 : *p >= 0xC0 ? 2 : 0;

		if (!n)
			return 0;
		for (int i = 1; i < n; i++)
			if ((p[i] & 0xC0) != 0x80)
				return 0;
		p += n;
	}
	return 1;
}

static void test_truncation(void **state)
{
	static uint8_t buf[1 << 16];
	static uint32_t cps[6000];
	struct py_offsets o = offsets(40, 56);
	char out[PYSTR_DEFAULT_CAP], small[8];
	size_t len;
	int n;
	(void)state;

	for (int i = 0; i < 6000; i++)
		cps[i] = 'a' + i % 26;
	/* exactly fits: 4095 bytes + NUL, no ellipsis */
	len = make_str(buf, &o, 1, 1, 1, cps, 4095, 4095);
	assert_int_equal(read_one(&o, buf, len, out, sizeof(out)), 4095);
	assert_int_equal(out[4094], 'a' + 4094 % 26);
	/* one more character: cut, ellipsis, still within the cap */
	len = make_str(buf, &o, 1, 1, 1, cps, 4096, 4096);
	n = read_one(&o, buf, len, out, sizeof(out));
	assert_int_equal(n, 4095);
	assert_string_equal(out + n - 3, PYSTR_ELLIPSIS);
	assert_int_equal(out[4091], 'a' + 4091 % 26);
	/* 6000 two-byte characters: cut on a character boundary */
	for (int i = 0; i < 6000; i++)
		cps[i] = 0x3A9; /* Ω */
	len = make_str(buf, &o, 2, 0, 1, cps, 6000, 6000);
	n = read_one(&o, buf, len, out, sizeof(out));
	assert_true(n > 4000 && n <= 4095);
	assert_true(valid_utf8(out));
	assert_string_equal(out + n - 3, PYSTR_ELLIPSIS);
	assert_int_equal((n - 3) % 2, 0);
	/* four-byte characters into a tiny buffer */
	for (int i = 0; i < 10; i++)
		cps[i] = 0x1D518;
	len = make_str(buf, &o, 4, 0, 1, cps, 10, 10);
	n = read_one(&o, buf, len, small, sizeof(small));
	assert_int_equal(n, 7);
	assert_string_equal(small, "\xF0\x9D\x94\x98" PYSTR_ELLIPSIS);
	/* no room for one character and the ellipsis: the ellipsis alone */
	n = read_one(&o, buf, len, small, 6);
	assert_int_equal(n, 3);
	assert_string_equal(small, PYSTR_ELLIPSIS);
	/* no room even for the ellipsis: cut silently, never overrun */
	n = read_one(&o, buf, len, small, 3);
	assert_int_equal(n, 0);
	assert_string_equal(small, "");
	/* a length far beyond the object: only cap characters are read */
	for (int i = 0; i < 5000; i++)
		cps[i] = 'z';
	len = make_str(buf, &o, 1, 1, 1, cps, 5000, (int64_t)1 << 40);
	n = read_one(&o, buf, len, out, sizeof(out));
	assert_int_equal(n, 4095);
}

static void test_malformed(void **state)
{
	static uint8_t buf[4096];
	struct py_offsets o = offsets(40, 56);
	uint32_t cps[] = {'a', 'b', 'c'};
	char out[64];
	size_t len;
	struct mem_region reg;
	struct mem_reader r;
	(void)state;

	len = make_str(buf, &o, 3, 0, 1, cps, 3, 3); /* kind 3 does not exist */
	assert_int_equal(read_one(&o, buf, len, out, sizeof(out)), -1);
	assert_string_equal(out, "");
	len = make_str(buf, &o, 2, 1, 1, cps, 3, 3); /* ASCII must be kind 1 */
	assert_int_equal(read_one(&o, buf, len, out, sizeof(out)), -1);
	len = make_str(buf, &o, 1, 1, 1, cps, 3, -5); /* negative length */
	assert_int_equal(read_one(&o, buf, len, out, sizeof(out)), -1);
	len = make_str(buf, &o, 1, 1, 1, cps, 3, 100); /* length past the object */
	assert_int_equal(read_one(&o, buf, len, out, sizeof(out)), -1);
	/* unmapped */
	reg = (struct mem_region){IMG_BASE, buf, 16};
	mem_reader_init_image(&r, &reg, 1);
	assert_int_equal(pystr_read(&r, &o, IMG_BASE, out, sizeof(out)), -1);
	assert_int_equal(r.last_errno, EFAULT);
	assert_int_equal(pystr_read(&r, &o, 0, out, sizeof(out)), -1);
	assert_int_equal(pystr_read(&r, &o, IMG_BASE, out, 0), -1);
}

/* A legacy string: header only, characters in another block. */
static void test_legacy(void **state)
{
	static uint8_t obj[128], chars[64];
	struct py_offsets o = offsets(40, 56);
	uint32_t st = 2u << 2; /* kind 2, not compact, not ASCII */
	int64_t n = 3;
	uint64_t data = IMG_BASE + 0x1000;
	uint16_t text[] = {'x', 0x3A9, 'y'};
	struct mem_region reg[2] = {{IMG_BASE, obj, sizeof(obj)}, {data, chars, sizeof(chars)}};
	struct mem_reader r;
	char out[64];
	(void)state;

	memcpy(obj + 16, &n, 8);
	memcpy(obj + 32, &st, 4);
	memcpy(obj + 56, &data, 8);
	memcpy(chars, text, sizeof(text));
	mem_reader_init_image(&r, reg, 2);
	assert_int_equal(pystr_read(&r, &o, IMG_BASE, out, sizeof(out)), 4);
	assert_string_equal(out, "x\xCE\xA9y");
}

static void test_bytes_image(void **state)
{
	static uint8_t obj[256];
	struct py_offsets o = offsets(40, 56);
	struct mem_region reg = {IMG_BASE, obj, sizeof(obj)};
	struct mem_reader r;
	uint8_t *out;
	size_t len;
	int64_t size = 200;
	(void)state;

	for (int i = 0; i < 200; i++)
		obj[32 + i] = (uint8_t)i;
	memcpy(obj + 16, &size, 8);
	mem_reader_init_image(&r, &reg, 1);
	assert_int_equal(pybytes_read(&r, &o, IMG_BASE, &out, &len, PYBYTES_DEFAULT_CAP), 0);
	assert_int_equal(len, 200);
	assert_memory_equal(out, obj + 32, 200);
	free(out);
	assert_int_equal(pybytes_read(&r, &o, IMG_BASE, &out, &len, 50), 1);
	assert_int_equal(len, 50);
	assert_memory_equal(out, obj + 32, 50);
	free(out);
	size = 0;
	memcpy(obj + 16, &size, 8);
	assert_int_equal(pybytes_read(&r, &o, IMG_BASE, &out, &len, 50), 0);
	assert_non_null(out);
	assert_int_equal(len, 0);
	free(out);
	size = -1;
	memcpy(obj + 16, &size, 8);
	assert_int_equal(pybytes_read(&r, &o, IMG_BASE, &out, &len, 50), -1);
	assert_null(out);
	size = 1000; /* past the region, below the cap */
	memcpy(obj + 16, &size, 8);
	assert_int_equal(pybytes_read(&r, &o, IMG_BASE, &out, &len, 4096), -1);
	assert_null(out);
}

/* --- live interpreters ------------------------------------------------ */

struct live_py {
	const char *argv[6];
	int ascii_off, compact_off;
};

static const char live_src[] =
    "import sys\n"
    "class S(str): pass\n"
    "objs = ['hello', 'h\\xe9llo', '\\u03a9\\u2248', '\\U0001d518nicode', 'x' * 5000,\n"
    "        S('sub\\xe9\\u03a9'), bytes(range(256)) * 3]\n"
    "print(' '.join(str(id(o)) for o in objs), flush=True)\n"
    "sys.stdin.read()\n";

static pid_t spawn(const char *const *argv, int *to_child, FILE **from_child)
{
	int in[2], out[2];
	pid_t pid;

	if (pipe(in) || pipe(out))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	*to_child = in[1];
	*from_child = fdopen(out[0], "r");
	return pid;
}

static void check_live(const struct live_py *py)
{
	struct py_offsets o = offsets(py->ascii_off, py->compact_off);
	unsigned long long id[7];
	struct mem_reader r;
	char out[PYSTR_DEFAULT_CAP], line[1024];
	uint8_t *b;
	size_t len;
	int to = -1, status, n;
	FILE *from = NULL;
	pid_t pid = spawn(py->argv, &to, &from);

	assert_true(pid > 0);
	assert_non_null(fgets(line, sizeof(line), from));
	assert_int_equal(sscanf(line, "%llu %llu %llu %llu %llu %llu %llu", &id[0], &id[1], &id[2],
				&id[3], &id[4], &id[5], &id[6]),
			 7);
	mem_reader_init_pid(&r, pid);
	assert_int_equal(pystr_read(&r, &o, id[0], out, sizeof(out)), 5);
	assert_string_equal(out, "hello");
	pystr_read(&r, &o, id[1], out, sizeof(out));
	assert_string_equal(out, "h\xC3\xA9llo");
	pystr_read(&r, &o, id[2], out, sizeof(out));
	assert_string_equal(out, "\xCE\xA9\xE2\x89\x88");
	pystr_read(&r, &o, id[3], out, sizeof(out));
	assert_string_equal(out, "\xF0\x9D\x94\x98nicode");
	n = pystr_read(&r, &o, id[4], out, sizeof(out));
	assert_int_equal(n, 4095);
	assert_int_equal(strspn(out, "x"), 4092);
	assert_string_equal(out + 4092, PYSTR_ELLIPSIS);
	pystr_read(&r, &o, id[5], out, sizeof(out));
	assert_string_equal(out, "sub\xC3\xA9\xCE\xA9");
	assert_int_equal(pybytes_read(&r, &o, id[6], &b, &len, PYBYTES_DEFAULT_CAP), 0);
	assert_int_equal(len, 768);
	for (size_t i = 0; i < len; i++)
		assert_int_equal(b[i], i % 256);
	free(b);
	close(to);
	fclose(from);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* gone: a read now fails with ESRCH, not garbage */
	assert_int_equal(pystr_read(&r, &o, id[0], out, sizeof(out)), -1);
	assert_int_equal(r.last_errno, ESRCH);
}

#define PYENV "/root/.pyenv/versions/"
#define SID   "/var/cache/bpfpy/sid"

static void test_live(void **state)
{
	static const struct live_py pys[] = {
	    {{PYENV "3.8.18/bin/python3.8", "-c", live_src, NULL}, 48, 72},
	    {{PYENV "3.9.18/bin/python3.9", "-c", live_src, NULL}, 48, 72},
	    {{PYENV "3.10.13/bin/python3.10", "-c", live_src, NULL}, 48, 72},
	    {{PYENV "3.11.7/bin/python3.11", "-c", live_src, NULL}, 48, 72},
	    {{PYENV "3.12.1/bin/python3.12", "-c", live_src, NULL}, 40, 56},
	    {{PYENV "3.13.0/bin/python3.13", "-c", live_src, NULL}, 40, 56},
	    {{"chroot", SID, "python3.14", "-c", live_src, NULL}, 40, 56},
	    {{"chroot", SID, "python3.15", "-c", live_src, NULL}, 40, 56},
	};
	int ran = 0;
	(void)state;

	signal(SIGPIPE, SIG_IGN);
	for (size_t i = 0; i < sizeof(pys) / sizeof(pys[0]); i++) {
		const char *bin = pys[i].argv[0];
		char path[256];

		if (!strcmp(bin, "chroot")) {
			snprintf(path, sizeof(path), "%s/usr/bin/%s", SID, pys[i].argv[2]);
			if (access(path, X_OK) || geteuid() != 0)
				continue;
		} else if (access(bin, X_OK)) {
			continue;
		}
		check_live(&pys[i]);
		ran++;
	}
	/* Without any interpreter this test would prove nothing. */
	assert_true(ran >= 1);
	print_message("read live strings from %d interpreters\n", ran);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kinds),      cmocka_unit_test(test_invalid_code_points),
	    cmocka_unit_test(test_truncation), cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_legacy),     cmocka_unit_test(test_bytes_image),
	    cmocka_unit_test(test_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
