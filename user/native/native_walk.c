// SPDX-License-Identifier: MIT
#include "native_walk.h"

#include <stddef.h>
#include <string.h>

#include "mem_reader.h"

/*
 * The stack words a walk reads lie above the thread's sp, close to one
 * another: they are copied in spans of NATIVE_WALK_SPAN bytes, one
 * process_vm_readv each, rather than one per word, since the target is
 * stopped while they are read. A span that crosses into unmapped memory
 * (the top of the stack) is retried up to the end of its page, which holds
 * the word.
 */
#define NATIVE_WALK_SPAN 16384u
#define PAGE		 4096u

struct walk_io {
	const struct native_walk_env *env;
	uint64_t base;
	uint32_t len;
	uint8_t buf[NATIVE_WALK_SPAN];
};

static const struct unwind_row *io_row(const struct walk_io *io, uint32_t idx)
{
	return idx < io->env->nrows ? &io->env->rows[idx] : NULL;
}

static int io_read(struct walk_io *io, void *dst, uint64_t addr)
{
	const uint32_t w = sizeof(__u64);

	if (addr >= io->base && io->len >= w && addr - io->base <= io->len - w) {
		memcpy(dst, io->buf + (addr - io->base), w);
		return 0;
	}
	io->len = 0;
	if (addr > UINT64_MAX - NATIVE_WALK_SPAN)
		return -1;
	if (!mem_read(io->env->mem, io->buf, NATIVE_WALK_SPAN, addr)) {
		io->len = NATIVE_WALK_SPAN;
	} else {
		uint32_t to_page = PAGE - (uint32_t)(addr & (PAGE - 1));

		if (to_page < w || mem_read(io->env->mem, io->buf, to_page, addr))
			return mem_read(io->env->mem, dst, w, addr); /* the word alone */
		io->len = to_page;
	}
	io->base = addr;
	memcpy(dst, io->buf, w);
	return 0;
}

#define NSTEP_ENV_T		 struct walk_io
#define NSTEP_ROW(s, idx)	 io_row((s)->env, (idx))
#define NSTEP_READ(c, dst, addr) io_read((c)->env, (dst), (addr))
#define NSTEP_LOOP(n, fn, data)                                                                    \
	do {                                                                                       \
		for (__u32 nstep_i_ = 0; nstep_i_ < (__u32)(n); nstep_i_++)                        \
			if ((fn)(nstep_i_, (data)))                                                \
				break;                                                             \
	} while (0)

#include "native_step.h"

static const char *const cause_names[NATIVE_CAUSE__COUNT] = {
    [NATIVE_OK] = "ok",
    [NATIVE_NO_PROC] = "process not attached",
    [NATIVE_NO_MAP] = "address in no known mapping",
    [NATIVE_READ] = "stack unreadable",
    [NATIVE_BAD_FRAME] = "bad frame (CFA not above the stack pointer)",
    [NATIVE_UNSUPPORTED] = "CFI rule not followed (expression)",
    [NATIVE_NO_REGS] = "no user registers",
};

const char *native_cause_name(unsigned cause)
{
	return cause < NATIVE_CAUSE__COUNT && cause_names[cause] ? cause_names[cause] : "unknown";
}

void native_walk(const struct native_walk_env *env, uint64_t ip, uint64_t sp, uint64_t bp,
		 struct native_walk_out *out)
{
	struct walk_io io; /* not zeroed: only buf[0, len) is ever read */
	struct native_ctx c = {
	    .proc = env->proc, .out = (__u64 *)out->ips, .ip = ip, .sp = sp, .bp = bp, .env = &io};

	_Static_assert(sizeof(out->ips[0]) == sizeof(__u64), "ips are the record's __u64");
	io.env = env;
	io.base = 0;
	io.len = 0;
	/* The same bound and flags as the sampler's native_append. */
	NSTEP_LOOP(NATIVE_MAX_DEPTH, native_step, &c);
	out->n = c.n < NATIVE_MAX_DEPTH ? c.n : NATIVE_MAX_DEPTH;
	out->fp_frames = c.fp_frames;
	out->flags = c.fp ? NATIVE_FP_FALLBACK : 0;
	if (c.cause)
		out->flags |= NATIVE_LOST | ((uint32_t)c.cause << NATIVE_CAUSE_SHIFT);
	else if (!c.done)
		out->flags |= NATIVE_TRUNCATED;
}
