// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the ELF reader (user/target/elf_file.c). bpfpy opens
 * the python executable and libpython of targets that may belong to a user
 * or container we do not trust, so the input is a whole file: it is written
 * to a memfd (a regular file, as elfsym_open requires) and every entry point
 * is called on it with the names bpfpy asks for.
 *
 * Two things make it more than byte flipping:
 *  - a structure-aware mutator (LLVMFuzzerCustomMutator): on a parseable
 *    ELF64 input it rewrites one field of the ELF header, a section header,
 *    a program header or a note header (sizes, offsets, counts, links) to a
 *    boundary value (0, 1, 2^31, 2^32-1, the file size, 2^63, 2^64-1, ...),
 *    which random bytes hit only by luck; otherwise libFuzzer's own mutation.
 *  - large sparse files: when e_ident[EI_NIDENT-1] (padding, ignored by
 *    readers) is 'S' the memfd is extended by a hole to 3 GiB, so sizes up
 *    to 3 GiB pass a check against the file and only the caps stop them.
 *    scripts/fuzz.sh runs with -rss_limit_mb=1024 -malloc_limit_mb=256: a
 *    read of a claimed size is a finding.
 */
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "diag.h"
#include "elf_file.h"

#define SPARSE_MARK 'S'
#define SPARSE_SIZE (3ull << 30)

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

static const char *const names[] = {"_PyRuntime", "PyCode_Type",    "_Py_NoneStruct",
				    "Py_Version", "PyUnicode_Type", ""};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct usdt_probe *probes = NULL;
	struct diag d;
	struct elfsym *e;
	uint64_t v = 0, sz = 0, base = 0, addr = 0, off;
	uint8_t buf[64];
	char hex[129];
	int fd = memfd_create("fuzz_elf", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	if (size >= EI_NIDENT && data[EI_NIDENT - 1] == SPARSE_MARK &&
	    ftruncate(fd, (off_t)SPARSE_SIZE)) {
		close(fd);
		return 0;
	}
	memset(&d, 0, sizeof(d));
	e = elfsym_open(fd, "fuzz", &d); /* owns fd from here */
	if (!e)
		return 0;
	elfsym_type(e);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!elfsym_lookup(e, names[i], &v, &sz)) {
			elfsym_read(e, v, buf, sz < sizeof(buf) ? sz : sizeof(buf));
			elfsym_file_offset(e, v, &off);
		}
	}
	if (!elfsym_section(e, ".PyRuntime", &addr, &sz))
		elfsym_read(e, addr, buf, sizeof(buf));
	elfsym_section(e, ".note.stapsdt", &addr, &sz);
	if (!elfsym_load_base(e, &base)) {
		elfsym_read(e, base, buf, sizeof(buf));
		elfsym_read(e, base + 0x1000, buf, 8);
		elfsym_read(e, UINT64_MAX - 4, buf, 8);
		elfsym_file_offset(e, base, &off);
	}
	elfsym_has_usdt(e);
	elfsym_build_id(e, hex, sizeof(hex));
	elfsym_build_id(e, hex, 3);
	if (elfsym_usdt(e, &probes, NULL) >= 0)
		free(probes);
	elfsym_close(e);
	return 0;
}

static uint64_t boundary(uint64_t file_size, unsigned r)
{
	static const uint64_t v[] = {0,
				     1,
				     7,
				     0x7fffffff,
				     0x80000000,
				     0xffffffff,
				     0x100000000ull,
				     2ull << 30,
				     SPARSE_SIZE - 64,
				     0x8000000000000000ull,
				     UINT64_MAX,
				     UINT64_MAX - 7};
	size_t n = sizeof(v) / sizeof(v[0]);

	switch (r % (n + 3)) {
	case 0:
		return file_size;
	case 1:
		return file_size ? file_size - 1 : 0;
	case 2:
		return (uint64_t)rand() * (uint64_t)rand();
	default:
		return v[r % n];
	}
}

/* Store x into a field of width w (4 or 8; 2 for counts) at p. */
static void put(uint8_t *p, unsigned w, uint64_t x)
{
	uint16_t x16 = (uint16_t)x;
	uint32_t x32 = (uint32_t)x;

	if (w == 2)
		memcpy(p, &x16, 2);
	else if (w == 4)
		memcpy(p, &x32, 4);
	else
		memcpy(p, &x, 8);
}

/* The field of a section header to rewrite: offset and width. */
static const struct {
	uint8_t off, w;
} shdr_fields[] =
    {
	{offsetof(Elf64_Shdr, sh_name), 4},	 {offsetof(Elf64_Shdr, sh_type), 4},
	{offsetof(Elf64_Shdr, sh_offset), 8},	 {offsetof(Elf64_Shdr, sh_size), 8},
	{offsetof(Elf64_Shdr, sh_link), 4},	 {offsetof(Elf64_Shdr, sh_entsize), 8},
	{offsetof(Elf64_Shdr, sh_addralign), 8},
},
  phdr_fields[] =
      {
	  {offsetof(Elf64_Phdr, p_type), 4},  {offsetof(Elf64_Phdr, p_offset), 8},
	  {offsetof(Elf64_Phdr, p_vaddr), 8}, {offsetof(Elf64_Phdr, p_filesz), 8},
	  {offsetof(Elf64_Phdr, p_memsz), 8}, {offsetof(Elf64_Phdr, p_flags), 4},
},
  ehdr_fields[] = {
      {offsetof(Elf64_Ehdr, e_shoff), 8},    {offsetof(Elf64_Ehdr, e_phoff), 8},
      {offsetof(Elf64_Ehdr, e_shnum), 2},    {offsetof(Elf64_Ehdr, e_phnum), 2},
      {offsetof(Elf64_Ehdr, e_shstrndx), 2}, {offsetof(Elf64_Ehdr, e_shentsize), 2},
};

#define N(a) (sizeof(a) / sizeof(a[0]))

/* One structure-aware rewrite of a parseable ELF64 image; 0 if it is not. */
static int mutate_elf(uint8_t *data, size_t size, unsigned r)
{
	Elf64_Ehdr eh;
	uint64_t fsz = size;

	if (size < sizeof(eh) || memcmp(data, ELFMAG, SELFMAG) || data[EI_CLASS] != ELFCLASS64)
		return 0;
	memcpy(&eh, data, sizeof(eh));
	if (eh.e_shentsize == sizeof(Elf64_Shdr) && eh.e_shnum && eh.e_shoff < size &&
	    (size - eh.e_shoff) / sizeof(Elf64_Shdr) >= eh.e_shnum && r % 8 < 4) {
		unsigned i = (unsigned)rand() % eh.e_shnum;
		uint8_t *sh = data + eh.e_shoff + (size_t)i * sizeof(Elf64_Shdr);
		Elf64_Shdr h;

		memcpy(&h, sh, sizeof(h));
		if (r % 8 == 3 && h.sh_type == SHT_NOTE && h.sh_offset < size &&
		    size - h.sh_offset >= 12) {
			/* A note header: n_namesz, n_descsz or n_type. */
			uint8_t *nh = data + h.sh_offset;
			size_t field = (unsigned)rand() % 3;

			put(nh + 4 * field, 4, boundary(fsz, (unsigned)rand()));
			return 1;
		}
		i = (unsigned)rand() % N(shdr_fields);
		put(sh + shdr_fields[i].off, shdr_fields[i].w, boundary(fsz, (unsigned)rand()));
		return 1;
	}
	if (eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum && eh.e_phoff < size &&
	    (size - eh.e_phoff) / sizeof(Elf64_Phdr) >= eh.e_phnum && r % 8 < 6) {
		unsigned i = (unsigned)rand() % eh.e_phnum, f = (unsigned)rand() % N(phdr_fields);

		put(data + eh.e_phoff + (size_t)i * sizeof(Elf64_Phdr) + phdr_fields[f].off,
		    phdr_fields[f].w, boundary(fsz, (unsigned)rand()));
		return 1;
	}
	if (r % 8 == 6) {
		unsigned f = (unsigned)rand() % N(ehdr_fields);

		put(data + ehdr_fields[f].off, ehdr_fields[f].w, boundary(fsz, (unsigned)rand()));
		return 1;
	}
	data[EI_NIDENT - 1] = data[EI_NIDENT - 1] == SPARSE_MARK ? 0 : SPARSE_MARK;
	return 1;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	srand(seed);
	/* Half the time libFuzzer's own byte-level mutation, which also
	 * grows, shrinks and splices inputs. */
	if (seed % 2 && mutate_elf(data, size, (unsigned)rand()))
		return size;
	return LLVMFuzzerMutate(data, size, max_size);
}
