// SPDX-License-Identifier: MIT
#include "elf_symbols.h"

#include "diag.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Caps on counts read from the file. Real CPython builds have ~30 sections,
 * ~12 program headers and ~30k symbols; a hostile file claiming more than
 * these is refused rather than walked. */
#define MAX_SECTIONS 4096
#define MAX_PHDRS    1024
#define MAX_SYMS     (1u << 22)
#define MAX_NOTES    1024

struct elfsym {
	int fd;
	Elf *elf;
	int type;
	size_t shstrndx;
	size_t nsections;
	size_t nphdrs;
	uint64_t file_size;
	Elf_Scn *dynsym, *symtab;
};

static int libelf_ready(void)
{
	static int ready = -1;

	if (ready < 0)
		ready = elf_version(EV_CURRENT) != EV_NONE;
	return ready;
}

struct elfsym *elfsym_open(int fd, const char *name, struct diag *d)
{
	struct elfsym *e;
	struct stat st;
	GElf_Ehdr eh;

	if (!name)
		name = "ELF file";
	if (fd < 0) {
		diag_set(d, EXIT_FAIL, "%s: no file", name);
		return NULL;
	}
	if (!libelf_ready()) {
		diag_set(d, EXIT_FAIL, "%s: libelf: %s", name, elf_errmsg(-1));
		close(fd);
		return NULL;
	}
	if (fstat(fd, &st)) {
		diag_errno(d, errno, "%s: fstat", name);
		close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		diag_set(d, EXIT_FAIL, "%s: not a regular file", name);
		close(fd);
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		diag_errno(d, ENOMEM, "%s", name);
		close(fd);
		return NULL;
	}
	e->fd = fd;
	e->file_size = (uint64_t)st.st_size;
	/* ELF_C_READ, not ELF_C_READ_MMAP: a file truncated under us must give
	 * a read error, not SIGBUS. */
	e->elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!e->elf || elf_kind(e->elf) != ELF_K_ELF || !gelf_getehdr(e->elf, &eh)) {
		diag_set(d, EXIT_FAIL, "%s: not an ELF file%s%s", name, e->elf ? ": " : "",
			 e->elf ? elf_errmsg(-1) : "");
		goto fail;
	}
	e->type = eh.e_type;
	if (elf_getshdrnum(e->elf, &e->nsections) || elf_getphdrnum(e->elf, &e->nphdrs) ||
	    elf_getshdrstrndx(e->elf, &e->shstrndx)) {
		diag_set(d, EXIT_FAIL, "%s: bad ELF headers: %s", name, elf_errmsg(-1));
		goto fail;
	}
	if (e->nsections > MAX_SECTIONS || e->nphdrs > MAX_PHDRS) {
		diag_set(d, EXIT_FAIL, "%s: implausible ELF (%zu sections, %zu segments)", name,
			 e->nsections, e->nphdrs);
		goto fail;
	}
	for (Elf_Scn *s = NULL; (s = elf_nextscn(e->elf, s));) {
		GElf_Shdr sh;

		if (!gelf_getshdr(s, &sh))
			continue;
		if (sh.sh_type == SHT_DYNSYM && !e->dynsym)
			e->dynsym = s;
		else if (sh.sh_type == SHT_SYMTAB && !e->symtab)
			e->symtab = s;
	}
	return e;
fail:
	elfsym_close(e);
	return NULL;
}

struct elfsym *elfsym_open_path(const char *path, struct diag *d)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		diag_errno(d, errno, "cannot open %s", path);
		return NULL;
	}
	return elfsym_open(fd, path, d);
}

void elfsym_close(struct elfsym *e)
{
	if (!e)
		return;
	if (e->elf)
		elf_end(e->elf);
	if (e->fd >= 0)
		close(e->fd);
	free(e);
}

int elfsym_type(const struct elfsym *e)
{
	return e->type;
}

static int lookup_in(struct elfsym *e, Elf_Scn *scn, const char *name, uint64_t *value,
		     uint64_t *size)
{
	GElf_Shdr sh;
	Elf_Data *data;
	size_t n;

	if (!scn || !gelf_getshdr(scn, &sh) || !sh.sh_entsize)
		return -1;
	data = elf_getdata(scn, NULL);
	if (!data || !data->d_size)
		return -1;
	n = data->d_size / sh.sh_entsize;
	if (n > MAX_SYMS)
		n = MAX_SYMS;
	for (size_t i = 1; i < n; i++) {
		GElf_Sym sym;
		const char *s;

		if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_name)
			continue;
		/* elf_strptr checks the offset against the string table and
		 * that the string ends inside it. */
		s = elf_strptr(e->elf, sh.sh_link, sym.st_name);
		if (!s || strcmp(s, name))
			continue;
		*value = sym.st_value;
		if (size)
			*size = sym.st_size;
		return 0;
	}
	return -1;
}

int elfsym_lookup(struct elfsym *e, const char *name, uint64_t *value, uint64_t *size)
{
	if (!lookup_in(e, e->dynsym, name, value, size))
		return 0;
	return lookup_in(e, e->symtab, name, value, size);
}

static Elf_Scn *find_section(struct elfsym *e, const char *name, GElf_Shdr *sh)
{
	for (Elf_Scn *s = NULL; (s = elf_nextscn(e->elf, s));) {
		const char *sn;

		if (!gelf_getshdr(s, sh))
			continue;
		sn = elf_strptr(e->elf, e->shstrndx, sh->sh_name);
		if (sn && !strcmp(sn, name))
			return s;
	}
	return NULL;
}

int elfsym_section(struct elfsym *e, const char *name, uint64_t *addr, uint64_t *size)
{
	GElf_Shdr sh;

	if (!find_section(e, name, &sh))
		return -1;
	*addr = sh.sh_addr;
	if (size)
		*size = sh.sh_size;
	return 0;
}

int elfsym_load_base(struct elfsym *e, uint64_t *base)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t page = pg > 0 ? (uint64_t)pg : 4096;
	int found = 0;

	/* The page, not p_align: the kernel maps each segment at the page
	 * boundary below its p_vaddr (plus the bias); p_align only decides
	 * where the bias may fall. */
	for (size_t i = 0; i < e->nphdrs; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (!found || ph.p_vaddr < *base)
			*base = ph.p_vaddr;
		found = 1;
	}
	if (!found)
		return -1;
	*base &= ~(page - 1);
	return 0;
}

int elfsym_read(struct elfsym *e, uint64_t vaddr, void *buf, size_t len)
{
	if (len > ELFSYM_MAX_READ)
		return -1;
	for (size_t i = 0; i < e->nphdrs; i++) {
		GElf_Phdr ph;
		uint64_t delta, off;
		size_t done = 0;

		if (!gelf_getphdr(e->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr < ph.p_vaddr || vaddr - ph.p_vaddr >= ph.p_filesz)
			continue;
		delta = vaddr - ph.p_vaddr;
		if (len > ph.p_filesz - delta)
			return -1;
		if (ph.p_offset > e->file_size || delta > e->file_size - ph.p_offset ||
		    len > e->file_size - ph.p_offset - delta)
			return -1;
		off = ph.p_offset + delta;
		while (done < len) {
			ssize_t r =
			    pread(e->fd, (char *)buf + done, len - done, (off_t)(off + done));

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				return -1;
			done += (size_t)r;
		}
		return 0;
	}
	return -1;
}

int elfsym_has_usdt(struct elfsym *e)
{
	GElf_Shdr sh;

	return find_section(e, ".note.stapsdt", &sh) && sh.sh_type == SHT_NOTE;
}

int elfsym_build_id(struct elfsym *e, char *hex, size_t len)
{
	static const char digits[] = "0123456789abcdef";

	for (Elf_Scn *s = NULL; (s = elf_nextscn(e->elf, s));) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;

		if (!gelf_getshdr(s, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(s, NULL);
		if (!data)
			continue;
		for (int k = 0; k < MAX_NOTES; k++) {
			size_t next = gelf_getnote(data, off, &nh, &name_off, &desc_off);
			const unsigned char *desc;

			if (!next)
				break;
			off = next;
			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((const char *)data->d_buf + name_off, "GNU", 4))
				continue;
			if (!nh.n_descsz || nh.n_descsz * 2 + 1 > len)
				return -1;
			desc = (const unsigned char *)data->d_buf + desc_off;
			for (size_t i = 0; i < nh.n_descsz; i++) {
				hex[2 * i] = digits[desc[i] >> 4];
				hex[2 * i + 1] = digits[desc[i] & 15];
			}
			hex[2 * nh.n_descsz] = '\0';
			return 0;
		}
	}
	return -1;
}
