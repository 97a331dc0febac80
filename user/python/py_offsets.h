/* SPDX-License-Identifier: MIT */
/*
 * Everything bpfpy knows about CPython layouts, in one place.
 *
 * Up to 3.12 the layouts come from tables measured with pahole on real
 * builds (scripts/measure_offsets.sh re-measures them; the unit test holds
 * the tables to that file). From 3.13 the target describes itself: _PyRuntime
 * begins with _Py_DebugOffsets, and py_offsets_from_debug() turns those bytes
 * into the same struct py_offsets, so nothing below the caller cares which
 * path a version took.
 */
#ifndef PY_OFFSETS_H
#define PY_OFFSETS_H

#include <stddef.h>
#include <stdint.h>

#include "bpfpy.h"
#include "diag.h"

/* Bytes to read at &_PyRuntime for py_offsets_from_debug(). The struct is
 * 584 bytes in 3.13, 760 in 3.14 and 888 in 3.15; the slack lets a future
 * minor be recognised (and refused by name) rather than reported truncated.
 * _PyRuntime itself is far larger, so the read never leaves it. */
#define PY_DEBUG_OFFSETS_READ_SIZE 2048

/* Oldest and newest minor versions with a known layout. */
#define PY_OFFSETS_MIN_MINOR 8
#define PY_OFFSETS_MAX_MINOR 15

/*
 * What the walker does not need but the caller does: where the GIL state
 * lives (for proc_config.gil_locked_addr / gil_holder_addr, see
 * py_gil_addrs()), and a few sizes for sanity checks of target memory.
 * Offsets that a version lacks are 0.
 */
struct py_extra {
	uint32_t interp_id; /* PyInterpreterState.id (int64) */
	/* 0: the GIL is global, in _PyRuntime.ceval.gil (<=3.11).
	 * 1: per interpreter (3.12+): interp->ceval.gil points to it. */
	uint8_t gil_per_interp;
	uint8_t pad[3];
	uint32_t interp_ceval_gil; /* 3.12+: interp offset of the gil pointer */
	/* <=3.11: offsets from &_PyRuntime; 3.12+: inside the GIL state. */
	uint32_t gil_locked;	      /* int, nonzero while some thread holds it */
	uint32_t gil_holder;	      /* PyThreadState *, last thread to take it */
	uint32_t frame_size;	      /* sizeof the frame struct */
	uint32_t code_size;	      /* sizeof PyCodeObject (fixed part) */
	uint32_t tstate_size;	      /* 3.13+: sizeof PyThreadState; 0 before */
	uint32_t interp_threads_main; /* 3.14+: interp->threads.main; 0 before */
	uint32_t debug_size;	      /* 3.13+: bytes of _Py_DebugOffsets; 0 before */
};

/*
 * Fill o and x for a target whose PY_VERSION_HEX is version_hex, from the
 * measured tables (3.8 to 3.12, final releases only). Returns 0, or -1 with
 * d set: EXIT_UNSUPPORTED for a version out of range, a pre-release, or
 * 3.13+ (whose layout must come from py_offsets_from_debug()).
 */
int py_offsets_for_version(uint32_t version_hex, struct py_offsets *o, struct py_extra *x,
			   struct diag *d);

/*
 * Fill o and x from len bytes read at &_PyRuntime of a 3.13+ target (read
 * PY_DEBUG_OFFSETS_READ_SIZE bytes, fewer if that faults: the parser says
 * how many it needed). Everything used is validated first; on failure d
 * names the offending field: EXIT_NOT_PYTHON for a missing cookie,
 * EXIT_UNSUPPORTED for a free-threaded build, a pre-release or a minor whose
 * layout is unknown, EXIT_FAIL for a truncated or implausible table.
 */
int py_offsets_from_debug(const void *buf, size_t len, struct py_offsets *o, struct py_extra *x,
			  struct diag *d);

/*
 * Absolute addresses of the GIL's "locked" flag and "last holder" pointer.
 * For gil_per_interp, gil_state is the pointer the caller read at
 * main_interp + x->interp_ceval_gil (ignored otherwise). Returns 0, or -1
 * with both set to 0 when the location is unknown (gil_state is 0).
 */
int py_gil_addrs(const struct py_extra *x, uint64_t runtime_addr, uint64_t gil_state,
		 uint64_t *locked_addr, uint64_t *holder_addr);

/* "3.12.1", "3.13.0rc2", "3.14.0a1" into buf; returns buf. */
const char *py_version_str(uint32_t hex, char *buf, size_t len);

#endif /* PY_OFFSETS_H */
