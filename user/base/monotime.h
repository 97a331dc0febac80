/* SPDX-License-Identifier: MIT */
/* CLOCK_MONOTONIC, the one clock every command measures and schedules by
 * (the kernel's bpf_ktime_get_ns() reads the same clock), and our own CPU
 * time. */
#ifndef MONOTIME_H
#define MONOTIME_H

#include <stdint.h>
#include <time.h>

static inline uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static inline double mono_s(void)
{
	return mono_ns() / 1e9;
}

/* CPU seconds this process has used (every thread, user and system):
 * what bpfpy itself costs the host, as its summaries report it. */
static inline double self_cpu_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

#endif /* MONOTIME_H */
