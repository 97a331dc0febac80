// SPDX-License-Identifier: MIT
#include "tick_tally.h"

#include "stack_reader.h"

void tick_tally_add(struct tick_tally *t, const struct sample_hdr *h, enum tick_fate f)
{
	if (h->offcpu_reason) /* an off-CPU interval: not a tick */
		return;
	t->fate[f]++;
	if (f == FATE_WRITTEN && h->thread_phase < 3)
		t->phase[h->thread_phase]++;
	if (f == FATE_ERROR)
		t->err_by_cause[(h->flags & SAMPLE_ERROR) && h->err < WALK_ERR__COUNT
				    ? h->err
				    : WALK_ERR_UNNAMED]++;
}

const char *thread_phase_frame(unsigned phase)
{
	return phase == THREAD_PHASE_STARTING  ? "[thread starting]"
	       : phase == THREAD_PHASE_EXITING ? "[thread exiting]"
					       : NULL;
}

/* The causes a tick is dropped for: the kernel's, then user space's. */
#define NDROP 10
static const char *const drop_names[NDROP] = {
    "thinned (--poisson)",
    "lost (ring buffer full)",
    "without an exception (--exception)",
    "--cost-floor records",
    "of processes gone or exec'd",
    "idle (--idle keeps them)",
    "not holding the GIL (--gil)",
    "exception type not named (--exception)",
    "without frames",
    "out of memory",
};

static uint64_t dropped_causes(const struct tick_tally *t, const uint64_t *cnt, int cost_floor,
			       uint64_t v[NDROP])
{
	uint64_t sum = 0;

	v[0] = cnt[CNT_TICKS] >= cnt[CNT_KEPT] ? cnt[CNT_TICKS] - cnt[CNT_KEPT] : 0;
	v[1] = cnt[CNT_LOST];
	v[2] = cnt[CNT_NO_EXCEPTION];
	v[3] = cost_floor ? cnt[CNT_EMITTED] : 0;
	v[4] = t->fate[FATE_UNKNOWN_PID];
	v[5] = t->fate[FATE_IDLE];
	v[6] = t->fate[FATE_GIL];
	v[7] = t->fate[FATE_EXC_UNNAMED];
	v[8] = t->fate[FATE_EMPTY];
	v[9] = t->fate[FATE_OOM];
	for (int i = 0; i < NDROP; i++)
		sum += v[i];
	return sum;
}

void tick_tally_summary(FILE *f, const struct tick_tally *t, const uint64_t *cnt, int cost_floor)
{
	uint64_t v[NDROP], ticks = cnt[CNT_TICKS], written = t->fate[FATE_WRITTEN];
	uint64_t errors = t->fate[FATE_ERROR], none = cnt[CNT_NO_PYTHON], dropped, sum;
	int first = 1;

	dropped = dropped_causes(t, cnt, cost_floor, v);
	sum = written + errors + none + dropped;
	fprintf(f,
		"  ticks %llu = %llu written + %llu errors + %llu without a Python thread state + "
		"%llu dropped",
		(unsigned long long)ticks, (unsigned long long)written, (unsigned long long)errors,
		(unsigned long long)none, (unsigned long long)dropped);
	/* Never expected: says so rather than hide it. */
	if (sum != ticks)
		fprintf(f, " (%lld unaccounted)", (long long)(ticks - sum));
	fprintf(
	    f, "\n  written: %llu Python stacks, %llu [thread starting], %llu [thread exiting]\n",
	    (unsigned long long)t->phase[0], (unsigned long long)t->phase[THREAD_PHASE_STARTING],
	    (unsigned long long)t->phase[THREAD_PHASE_EXITING]);
	for (int e = 1; e < WALK_ERR__COUNT; e++)
		if (t->err_by_cause[e])
			fprintf(f, "  errors: %s %llu\n", walk_error_name(e),
				(unsigned long long)t->err_by_cause[e]);
	for (int i = 0; i < NDROP; i++) {
		if (!v[i])
			continue;
		fprintf(f, "%s%llu %s", first ? "  dropped: " : ", ", (unsigned long long)v[i],
			drop_names[i]);
		first = 0;
	}
	if (!first)
		fprintf(f, "\n");
	if (cnt[CNT_HOOK_RUNS])
		fprintf(f,
			"  threads: %llu born and %llu thread states cleared while sampled; thread "
			"hooks ran %llu times, in-kernel %.2f us each\n",
			(unsigned long long)cnt[CNT_THREADS_BORN],
			(unsigned long long)cnt[CNT_THREADS_CLEARED],
			(unsigned long long)cnt[CNT_HOOK_RUNS],
			cnt[CNT_HOOK_NS] / 1e3 / cnt[CNT_HOOK_RUNS]);
}
