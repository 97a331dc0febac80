// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the ELF reader (user/target/elf_symbols.c). bpfpy opens the
 * python executable and libpython of targets that may live in a container
 * we do not control, so the input is a whole file: it is written to a
 * memfd (a regular file, as elfsym_open requires) and every entry point is
 * called on it with the names bpfpy asks for.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "diag.h"
#include "elf_file.h"

static const char *const names[] = {"_PyRuntime", "PyCode_Type",    "_Py_NoneStruct",
				    "Py_Version", "PyUnicode_Type", ""};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct diag d;
	struct elfsym *e;
	uint64_t v = 0, sz = 0, base = 0, addr = 0;
	uint8_t buf[64];
	char hex[129];
	int fd = memfd_create("fuzz_elf", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	memset(&d, 0, sizeof(d));
	e = elfsym_open(fd, "fuzz", &d); /* owns fd from here */
	if (!e)
		return 0;
	elfsym_type(e);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!elfsym_lookup(e, names[i], &v, &sz))
			elfsym_read(e, v, buf, sz < sizeof(buf) ? sz : sizeof(buf));
	}
	if (!elfsym_section(e, ".PyRuntime", &addr, &sz))
		elfsym_read(e, addr, buf, sizeof(buf));
	elfsym_section(e, ".note.stapsdt", &addr, &sz);
	if (!elfsym_load_base(e, &base)) {
		elfsym_read(e, base, buf, sizeof(buf));
		elfsym_read(e, base + 0x1000, buf, 8);
		elfsym_read(e, UINT64_MAX - 4, buf, 8);
	}
	elfsym_has_usdt(e);
	elfsym_build_id(e, hex, sizeof(hex));
	elfsym_build_id(e, hex, 3);
	elfsym_close(e);
	return 0;
}
