/* SPDX-License-Identifier: MIT */
/*
 * Every tick accounted for (issue 28): what became of each clock tick that
 * landed in a target thread, so that record's summary adds up:
 *
 *   ticks = samples written + errors + without a Python thread state
 *           + dropped (each by cause)
 *
 * The kernel's counters (bpfpy.h enum counter) say what it did with a tick
 * (thinned, no thread state, no exception, lost, emitted); user space says
 * what it did with each record it received (tick_tally_add). Off-CPU
 * intervals and --async-mode all's waiting-task samples are not ticks and
 * are not counted here.
 */
#ifndef TICK_TALLY_H
#define TICK_TALLY_H

#include <stdint.h>
#include <stdio.h>

#include "bpfpy.h"

/* What became of a tick's record in user space. */
enum tick_fate {
	FATE_WRITTEN = 0, /* a sample in the profile */
	FATE_ERROR,	  /* a failed walk, or a frame that could not be named */
	FATE_UNKNOWN_PID, /* its process exited or exec'd before it was read */
	FATE_IDLE,	  /* snapshot clock: not running, without --idle */
	FATE_GIL,	  /* --gil: its thread did not hold the GIL */
	FATE_EXC_UNNAMED, /* --exception: the type could not be named */
	FATE_EMPTY,	  /* no frame and no thread phase: nothing to draw */
	FATE_OOM,	  /* the profile could not grow */
	FATE__COUNT,
};

struct tick_tally {
	uint64_t fate[FATE__COUNT];
	uint64_t phase[3];			/* written, by sample_hdr.thread_phase */
	uint64_t err_by_cause[WALK_ERR__COUNT]; /* FATE_ERROR by cause */
};

/* Record h (off-CPU intervals are left out) met fate f. */
void tick_tally_add(struct tick_tally *t, const struct sample_hdr *h, enum tick_fate f);

/* The frame a sample of a thread being born or torn down is drawn under,
 * for sample_hdr.thread_phase; NULL for 0. */
const char *thread_phase_frame(unsigned phase);

/* The summary's sum and its lines, from the kernel's counters cnt: "ticks
 * N = ...", "written: ...", "errors: CAUSE N" (one a cause), "no Python
 * thread state: ...", "dropped: ..."; and the thread hooks' line when any
 * ran. cost_floor: the kernel's records are --cost-floor's, not samples. */
void tick_tally_summary(FILE *f, const struct tick_tally *t, const uint64_t *cnt, int cost_floor);

#endif /* TICK_TALLY_H */
