// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the _Py_DebugOffsets parser (user/python/py_offsets.c):
 * the bytes a 3.13+ target keeps at &_PyRuntime, which a hostile process
 * controls entirely. The parser must refuse or accept without reading past
 * len, and what it accepts must keep the walker's reads inside its fixed
 * buffers (it masks offsets, but sizes it is told are checked here).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "py_offsets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct py_offsets o;
	struct py_extra x;
	struct diag d;
	uint64_t locked, holder;
	char v[32];
	/* Exact-size copy: a read past len is an ASan report. */
	uint8_t *buf = malloc(size ? size : 1);

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	memset(&d, 0, sizeof(d));
	if (py_offsets_from_debug(buf, size, &o, &x, &d) == 0) {
		/* Accepted: the version it names must be one we know. */
		if (PY_MAJOR(o.version_hex) != 3 || !py_has_debug_offsets(o.version_hex) ||
		    PY_MINOR(o.version_hex) > PY_OFFSETS_MAX_MINOR)
			abort();
		/* Every offset kept lies inside its struct, whose size the
		 * parser bounds (64 MiB at most for the interpreter): a value
		 * near 2^64 must be refused, not wrapped and truncated. */
		if (x.interp_id >= 64u << 20 || x.interp_ceval_gil >= 64u << 20 ||
		    x.interp_threads_main >= 64u << 20 || o.frame_previous >= x.frame_size ||
		    o.frame_code >= x.frame_size || o.frame_instr >= x.frame_size ||
		    o.frame_owner >= x.frame_size || o.tstate_next >= x.tstate_size ||
		    o.tstate_frame >= x.tstate_size || o.code_linetable >= x.code_size ||
		    o.code_firstlineno >= x.code_size)
			abort();
		py_gil_addrs(&x, 0x7f0000000000ull, 0x7f0000100000ull, &locked, &holder);
		py_gil_addrs(&x, 0x7f0000000000ull, 0, &locked, &holder);
		py_version_str(o.version_hex, v, sizeof(v));
	} else {
		/* Refused: a message and a code, always. */
		if (!d.msg[0] || d.code == 0)
			abort();
	}
	py_version_str(size >= 4 ? (uint32_t)buf[0] << 24 | buf[1] << 16 | buf[2] << 8 | buf[3] : 0,
		       v, sizeof(v));
	py_version_str(0x030c01f0, v, 1);
	free(buf);
	return 0;
}
