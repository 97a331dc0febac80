// SPDX-License-Identifier: MIT
#include "trace_elf.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diag.h"
#include "elf_symbols.h"

/* Bounds on what a (possibly hostile) file may make us walk. */
#define MAX_NOTES  65536
#define MAX_PROBES 1024
#define NT_STAPSDT 3

static Elf *elf_open_fd(const char *path, int *fd, struct diag *d)
{
	Elf *e;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		diag_set(d, EXIT_FAIL, "libelf: %s", elf_errmsg(-1));
		return NULL;
	}
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0) {
		diag_errno(d, errno, "cannot open %s", path);
		return NULL;
	}
	e = elf_begin(*fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		diag_set(d, EXIT_FAIL, "%s: not an ELF file", path);
		if (e)
			elf_end(e);
		close(*fd);
		return NULL;
	}
	return e;
}

static void copy_str(char *dst, size_t cap, const char *src, const char *end)
{
	size_t n = strnlen(src, (size_t)(end - src));

	if (n >= cap)
		n = cap - 1;
	memcpy(dst, src, n);
	dst[n] = 0;
}

/* Add one note's probe, merging call sites of the same provider:name. */
static int add_probe(struct usdt_probe **v, int *n, int *cap, const char *desc, size_t len)
{
	const char *end = desc + len, *prov = desc + 24, *name, *args;
	struct usdt_probe p = {0};
	uint64_t sem;

	if (len < 27)
		return 0;
	memcpy(&sem, desc + 16, 8);
	name = memchr(prov, 0, (size_t)(end - prov));
	if (!name || ++name >= end)
		return 0;
	args = memchr(name, 0, (size_t)(end - name));
	args = args && args + 1 < end ? args + 1 : end;
	copy_str(p.provider, sizeof(p.provider), prov, end);
	copy_str(p.name, sizeof(p.name), name, end);
	if (args < end)
		copy_str(p.args, sizeof(p.args), args, end);
	for (int i = 0; i < *n; i++) {
		if (!strcmp((*v)[i].provider, p.provider) && !strcmp((*v)[i].name, p.name)) {
			(*v)[i].nsites++;
			return 0;
		}
	}
	if (*n >= MAX_PROBES)
		return 0;
	if (*n == *cap) {
		int nc = *cap ? 2 * *cap : 16;
		struct usdt_probe *nv = realloc(*v, (size_t)nc * sizeof(*nv));

		if (!nv)
			return -1;
		*v = nv;
		*cap = nc;
	}
	p.semaphore = sem;
	p.nsites = 1;
	(*v)[(*n)++] = p;
	return 0;
}

int usdt_list(const char *path, struct usdt_probe **out, struct diag *d)
{
	struct usdt_probe *v = NULL;
	int n = 0, cap = 0, fd;
	Elf *e = elf_open_fd(path, &fd, d);

	*out = NULL;
	if (!e)
		return -1;
	for (Elf_Scn *s = NULL; (s = elf_nextscn(e, s));) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t off = 0, name_off, desc_off, shstrndx;
		const char *sname;

		if (!gelf_getshdr(s, &sh) || sh.sh_type != SHT_NOTE ||
		    elf_getshdrstrndx(e, &shstrndx))
			continue;
		sname = elf_strptr(e, shstrndx, sh.sh_name);
		if (!sname || strcmp(sname, ".note.stapsdt"))
			continue;
		data = elf_getdata(s, NULL);
		for (int k = 0; data && k < MAX_NOTES; k++) {
			GElf_Nhdr nh;
			size_t next = gelf_getnote(data, off, &nh, &name_off, &desc_off);

			if (!next)
				break;
			if (nh.n_type == NT_STAPSDT && nh.n_namesz == 8 &&
			    !memcmp((char *)data->d_buf + name_off, "stapsdt", 8) &&
			    add_probe(&v, &n, &cap, (char *)data->d_buf + desc_off, nh.n_descsz)) {
				free(v);
				elf_end(e);
				close(fd);
				return diag_errno(d, ENOMEM, "%s: USDT notes", path);
			}
			off = next;
		}
	}
	elf_end(e);
	close(fd);
	*out = v;
	return n;
}

int elf_symbol_file_offset(const char *path, const char *sym, uint64_t add, uint64_t *off,
			   struct diag *d)
{
	struct elfsym *es = elfsym_open_path(path, d);
	uint64_t vaddr, size;
	size_t nph;
	int fd, found = 0;
	Elf *e;

	if (!es)
		return -1;
	if (elfsym_lookup(es, sym, &vaddr, &size)) {
		elfsym_close(es);
		return diag_set(d, EXIT_USAGE, "symbol '%s' is not in %s", sym, path);
	}
	elfsym_close(es);
	if (size && add >= size)
		return diag_set(d, EXIT_USAGE, "%s+0x%llx is past the end of %s (size %llu)", sym,
				(unsigned long long)add, sym, (unsigned long long)size);
	vaddr += add;
	e = elf_open_fd(path, &fd, d);
	if (!e)
		return -1;
	if (!elf_getphdrnum(e, &nph)) {
		for (size_t i = 0; i < nph && i < 1024; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD ||
			    !(ph.p_flags & PF_X))
				continue;
			if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
				*off = vaddr - ph.p_vaddr + ph.p_offset;
				found = 1;
				break;
			}
		}
	}
	elf_end(e);
	close(fd);
	if (!found)
		return diag_set(d, EXIT_USAGE, "symbol '%s' of %s is not in executable code", sym,
				path);
	return 0;
}
