// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the frame walker (bpf/frame_walker.h through
 * user/python/stack_reader.c) and the symbolizer behind it (user/python/code_cache.c,
 * user/python/pystr.c, user/python/linetable.c), fed with random memory images.
 *
 * A real CPython layout is used (the pahole tables for 3.8-3.12, the
 * _Py_DebugOffsets blobs of tests/data for 3.13-3.15), and everything the
 * walker reads at run time - thread states, frames, code objects, strings,
 * line tables - comes from the fuzzer, as it would from a hostile target.
 *
 * Input: byte 0 picks the version, byte 1 holds flags, then records
 * [slot u8][len u16 LE][len bytes], each placing a region at
 * SLOT_ADDR(slot). _PyRuntime is slot 0; PyCode_Type and None are fixed
 * addresses outside every slot. Pointers inside the regions are the
 * fuzzer's business: the seeds (built by this file's seed generator, see
 * FUZZ_SEED_MAIN) link runtime -> interp -> tstate -> frames -> code ->
 * str/bytes as the real interpreter does, and mutation starts from there.
 *
 * Checked beyond "no crash, no sanitizer report": every walk ends within
 * the depth bound, every name is bounded NUL-terminated UTF-8.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "code_cache.h"
#include "diag.h"
#include "mem_reader.h"
#include "py_offsets.h"
#include "pystr.h"
#include "stack_reader.h"

#ifndef FUZZ_DATA_DIR
#define FUZZ_DATA_DIR "tests/data"
#endif

#define SLOT_BASE    0x7f0000000000ull
#define SLOT_ADDR(k) (SLOT_BASE + (uint64_t)(k)*0x10000ull)
#define NSLOTS	     32
#define CODE_TYPE    0x7e0000001000ull
#define NONE_ADDR    0x7e0000002000ull
#define NVERSIONS    8
#define MAX_THREADS  4

enum { F_GIL = 1, F_SMALL_CACHE = 2, F_SHALLOW = 4 };

static struct proc_config configs[NVERSIONS];
static int have_config[NVERSIONS];

static int load_config(int i, struct proc_config *cfg)
{
	static const uint32_t table[] = {0x030812f0, 0x030912f0, 0x030a0df0, 0x030b07f0,
					 0x030c01f0};
	struct py_extra x;
	struct diag d;

	memset(cfg, 0, sizeof(*cfg));
	memset(&d, 0, sizeof(d));
	if (i < 5) {
		if (py_offsets_for_version(table[i], &cfg->off, &x, &d))
			return -1;
	} else {
		char path[512], buf[PY_DEBUG_OFFSETS_READ_SIZE];
		FILE *f;
		size_t n;

		snprintf(path, sizeof(path), "%s/debug_offsets_3.%d.bin", FUZZ_DATA_DIR, 8 + i);
		f = fopen(path, "rb");
		if (!f)
			return -1;
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		if (py_offsets_from_debug(buf, n, &cfg->off, &x, &d))
			return -1;
	}
	cfg->runtime_addr = SLOT_ADDR(0);
	cfg->code_type_addr = CODE_TYPE;
	cfg->none_addr = NONE_ADDR;
	cfg->max_depth = BPFPY_DEFAULT_DEPTH;
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	for (int i = 0; i < NVERSIONS; i++)
		have_config[i] = load_config(i, &configs[i]) == 0;
	return 0;
}

/* A name must be valid, bounded output: NUL within the cap, no NUL-free
 * overrun, and UTF-8 without stray continuation bytes at its start. */
static void check_name(const char *s)
{
	size_t n = strnlen(s, PYSTR_DEFAULT_CAP + 1);

	if (n > PYSTR_DEFAULT_CAP || ((unsigned char)s[0] & 0xC0) == 0x80)
		abort();
}

static struct thread_stack threads[MAX_THREADS];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mem_region regions[NSLOTS];
	struct proc_config cfg;
	struct mem_reader r;
	struct code_cache *cc;
	struct diag d;
	size_t nreg = 0, pos = 2;
	int count = 0, vi, flags;

	if (size < 2)
		return 0;
	vi = data[0] % NVERSIONS;
	flags = data[1];
	if (!have_config[vi])
		return 0;
	cfg = configs[vi];
	if (flags & F_GIL) {
		cfg.gil_locked_addr = SLOT_ADDR(NSLOTS - 1);
		cfg.gil_holder_addr = SLOT_ADDR(NSLOTS - 1) + 8;
	}
	if (flags & F_SHALLOW)
		cfg.max_depth = 3;
	/* Regions point into the input itself: libFuzzer's copy is exactly
	 * size bytes, so a read past a region that ends the input is caught. */
	while (pos + 3 <= size && nreg < NSLOTS) {
		unsigned slot = data[pos] % NSLOTS;
		size_t len = (size_t)data[pos + 1] | (size_t)data[pos + 2] << 8;

		pos += 3;
		if (len > size - pos)
			len = size - pos;
		regions[nreg].addr = SLOT_ADDR(slot);
		regions[nreg].data = data + pos;
		regions[nreg].len = len;
		nreg++;
		pos += len;
	}
	mem_reader_init_image(&r, regions, nreg);
	memset(&d, 0, sizeof(d));
	if (stack_read_all(&r, &cfg, threads, MAX_THREADS, &count, &d)) {
		if (!d.msg[0])
			abort();
		return 0;
	}
	if (count < 0 || count > STACK_MAX_THREADS)
		abort();
	cc = code_cache_new(&r, &cfg.off, flags & F_SMALL_CACHE ? 2 : 0);
	if (!cc)
		return 0;
	for (int t = 0; t < count && t < MAX_THREADS; t++) {
		const struct thread_stack *ts = &threads[t];

		if (ts->nframes > cfg.max_depth || ts->visited > cfg.max_depth + 64)
			abort(); /* the walk must stay within its bound */
		walk_error_name(ts->err);
		for (uint32_t i = 0; i < ts->nframes; i++) {
			struct sym_frame sf;
			const struct code_entry *e;

			code_cache_symbolize(cc, &ts->frames[i], &sf);
			check_name(sf.name);
			check_name(sf.file);
			e = code_cache_lookup(cc, ts->frames[i].code, 0);
			check_name(e->name);
			code_cache_line(e, -1);
			code_cache_line(e, ts->frames[i].instr);
		}
	}
	/* Every region start as a str and a bytes object, with small caps to
	 * reach the truncation paths. */
	for (size_t i = 0; i < nreg; i++) {
		char out[16];
		uint8_t *b;
		size_t blen;
		int n = pystr_read(&r, &cfg.off, regions[i].addr, out, 1 + i % sizeof(out));

		if (n >= (int)(1 + i % sizeof(out)) || (n >= 0 && out[n] != '\0'))
			abort();
		if (pybytes_read(&r, &cfg.off, regions[i].addr, &b, &blen, 64) >= 0) {
			if (blen > 64)
				abort();
			free(b);
		}
	}
	code_cache_free(cc);
	return 0;
}

#ifdef FUZZ_SEED_MAIN
/*
 * Seed generator: a well-formed image per version, as the real interpreter
 * lays it out (one thread, four frames, two code objects, names, a file
 * name and a line table), written to DIR/seed_3.N. Built by mk/fuzz.mk with
 * the plain compiler; the seeds are committed.
 */
struct img {
	uint8_t buf[65536];
	size_t len;
};

static void put(struct img *im, unsigned slot, const void *p, size_t n)
{
	im->buf[im->len++] = (uint8_t)slot;
	im->buf[im->len++] = (uint8_t)(n & 0xff);
	im->buf[im->len++] = (uint8_t)(n >> 8);
	memcpy(im->buf + im->len, p, n);
	im->len += n;
}

static void w64(uint8_t *b, unsigned off, uint64_t v)
{
	memcpy(b + off, &v, 8);
}

static void w32(uint8_t *b, unsigned off, uint32_t v)
{
	memcpy(b + off, &v, 4);
}

/* A compact ASCII str. */
static size_t make_str(const struct py_offsets *o, uint8_t *b, const char *s)
{
	size_t n = strlen(s);

	memset(b, 0, 256);
	w64(b, o->ob_type, 0x7e0000003000ull);
	w64(b, o->unicode_length, n);
	w32(b, o->unicode_state, (1u << 2) | (1u << 5) | (1u << 6));
	memcpy(b + o->ascii_data_off, s, n + 1);
	return o->ascii_data_off + n + 1;
}

int main(int argc, char **argv)
{
	static const uint8_t lt657[] = {0xf0, 0x03, 0x01, 0x01, 0x01, 0xdb, 0x00, 0x09,
					0xf2, 0x02, 0x09, 0x01, 0x11, 0xf0, 0x18, 0x00};
	static const uint8_t lt626[] = {0x06, 0x01, 0x08, 0x01, 0x04, 0x02, 0x02, 0x01};
	static const uint8_t lnotab[] = {0x02, 0x01, 0x04, 0x01, 0x06, 0x02};

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	LLVMFuzzerInitialize(&argc, &argv);
	for (int vi = 0; vi < NVERSIONS; vi++) {
		const struct proc_config *cfg = &configs[vi];
		const struct py_offsets *o = &cfg->off;
		static struct img im;
		uint8_t b[1024];
		char path[600];
		FILE *f;
		size_t n;

		if (!have_config[vi])
			continue;
		memset(&im, 0, sizeof(im));
		im.buf[im.len++] = (uint8_t)vi;
		im.buf[im.len++] = F_GIL;
		/* runtime -> interp */
		memset(b, 0, sizeof(b));
		w64(b, o->runtime_interpreters_head, SLOT_ADDR(1));
		put(&im, 0, b, o->runtime_interpreters_head + 8u);
		/* interp -> tstate; no next interpreter */
		memset(b, 0, sizeof(b));
		w64(b, o->interp_threads_head, SLOT_ADDR(2));
		n = o->interp_threads_head > o->interp_next ? o->interp_threads_head
							    : o->interp_next;
		put(&im, 1, b, n + 8);
		/* tstate: current frame (or cframe), ids, no next thread */
		memset(b, 0, sizeof(b));
		if (o->frame_model == FRAME_MODEL_CFRAME) {
			w64(b, o->tstate_frame, SLOT_ADDR(3));
		} else {
			w64(b, o->tstate_frame, SLOT_ADDR(4));
		}
		if (o->tstate_native_thread_id)
			w64(b, o->tstate_native_thread_id, 4242);
		w64(b, o->tstate_thread_id, 0x7f00deadbeefull);
		if (o->has_base_frame)
			w64(b, o->tstate_base_frame, SLOT_ADDR(7));
		put(&im, 2, b, 512);
		if (o->frame_model == FRAME_MODEL_CFRAME) {
			memset(b, 0, sizeof(b));
			w64(b, o->cframe_current_frame, SLOT_ADDR(4));
			put(&im, 3, b, o->cframe_current_frame + 8u);
		}
		/* frames 4 -> 5 -> 6 (-> 7 = base frame on 3.15) */
		for (unsigned k = 4; k <= 7; k++) {
			uint64_t code = SLOT_ADDR(k % 2 ? 9 : 8);

			if (k == 7 && !o->has_base_frame)
				break;
			memset(b, 0, sizeof(b));
			w64(b, o->frame_previous,
			    k < 6 || o->has_base_frame ? SLOT_ADDR(k + 1) : 0);
			if (k == 7)
				w64(b, o->frame_previous, 0);
			w64(b, o->frame_code, code);
			if (o->frame_model == FRAME_MODEL_OBJECT)
				w32(b, o->frame_instr, 2 * (k - 3));
			else
				w64(b, o->frame_instr, code + o->code_adaptive + 2 * (k - 3));
			if (o->frame_model != FRAME_MODEL_OBJECT)
				b[o->frame_owner] = 0;
			put(&im, k, b, o->frame_read_size);
		}
		/* two code objects sharing file and line table */
		for (unsigned k = 8; k <= 9; k++) {
			memset(b, 0, sizeof(b));
			w64(b, o->ob_type, CODE_TYPE);
			w32(b, o->code_argcount, k - 8);
			w32(b, o->code_firstlineno, 10 * k);
			w64(b, o->code_name, SLOT_ADDR(k + 2));
			if (o->code_qualname)
				w64(b, o->code_qualname, SLOT_ADDR(k + 2));
			w64(b, o->code_filename, SLOT_ADDR(12));
			w64(b, o->code_linetable, SLOT_ADDR(13));
			put(&im, k, b, o->code_read_size + 64u);
		}
		put(&im, 10, b, make_str(o, b, "Widget.spin"));
		put(&im, 11, b, make_str(o, b, "<module>"));
		put(&im, 12, b, make_str(o, b, "/tmp/t3.py"));
		{
			const uint8_t *lt = o->version_hex >= 0x030b0000   ? lt657
					    : o->version_hex >= 0x030a0000 ? lt626
									   : lnotab;
			size_t ltn = o->version_hex >= 0x030b0000   ? sizeof(lt657)
				     : o->version_hex >= 0x030a0000 ? sizeof(lt626)
								    : sizeof(lnotab);

			memset(b, 0, sizeof(b));
			w64(b, o->bytes_size, ltn);
			memcpy(b + o->bytes_data, lt, ltn);
			put(&im, 13, b, o->bytes_data + ltn + 1);
		}
		/* GIL: locked, held by our tstate */
		memset(b, 0, sizeof(b));
		w32(b, 0, 1);
		w64(b, 8, SLOT_ADDR(2));
		put(&im, NSLOTS - 1, b, 16);
		snprintf(path, sizeof(path), "%s/seed_3.%d", argv[1], 8 + vi);
		f = fopen(path, "wb");
		if (!f || fwrite(im.buf, 1, im.len, f) != im.len) {
			perror(path);
			return 1;
		}
		fclose(f);
	}
	return 0;
}
#endif
