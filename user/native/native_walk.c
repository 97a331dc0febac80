// SPDX-License-Identifier: MIT
#include "native_walk.h"

#include <stddef.h>
#include <string.h>

#include "mem_reader.h"

static const struct unwind_row *env_row(const struct native_walk_env *env, uint32_t idx)
{
	return idx < env->nrows ? &env->rows[idx] : NULL;
}

#define NSTEP_ENV_T		 const struct native_walk_env
#define NSTEP_ROW(s, idx)	 env_row((s)->env, (idx))
#define NSTEP_READ(c, dst, addr) mem_read((c)->env->mem, (dst), sizeof(__u64), (addr))
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
	struct native_ctx c = {
	    .proc = env->proc, .out = (__u64 *)out->ips, .ip = ip, .sp = sp, .bp = bp, .env = env};

	_Static_assert(sizeof(out->ips[0]) == sizeof(__u64), "ips are the record's __u64");
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
