// SPDX-License-Identifier: MIT
#include "elf_file.h"

#include "diag.h"
#include "proc_root.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * Caps on what a file may make us read or walk. Each is far above what a
 * real CPython build has (measured on pyenv 3.6-3.13, Debian 3.11 and sid
 * 3.14/3.15: ~30 sections, ~12 program headers, symbol tables up to 370 KiB,
 * string tables up to 400 KiB, note sections of a few KiB), and low enough
 * that a file claiming more costs at most a few tens of MiB of memory. A
 * file over a cap loses that table (the lookup fails), it is never read
 * whole. SECURITY.md lists them.
 */
/* Section headers: libelf allocates one descriptor per section at
 * elf_begin, so the count is checked before libelf sees the file. */
#define ELF_MAX_SECTIONS 4096
/* Program headers walked for the load base and file offsets. */
#define ELF_MAX_PHDRS 1024
/* Bytes of one symbol table (.dynsym or .symtab): ~700k 64-bit symbols. */
#define ELF_MAX_SYMTAB (16u << 20)
/* Bytes of one symbol string table (.dynstr or .strtab). */
#define ELF_MAX_STRTAB (16u << 20)
/* Bytes of the section-name string table (.shstrtab, ~300 bytes real). */
#define ELF_MAX_SHSTRTAB (1u << 20)
/* Bytes of one SHT_NOTE section (.note.gnu.build-id is 36, .note.stapsdt
 * a few KiB with every CPython marker). */
#define ELF_MAX_NOTE_SECTION (1u << 20)
/* Notes walked in one section. */
#define ELF_MAX_NOTES 65536
/* Bytes of a GNU build-id descriptor (SHA-1 gives 20; ld allows md5, uuid,
 * sha1 or a 0x-hex string, which bpfpy keeps in a 65-byte hex buffer). */
#define ELF_MAX_BUILD_ID 32
/* Distinct USDT probes kept (CPython declares 10). */
#define ELF_MAX_PROBES 1024
/* Bytes of a .gnu_debuglink section: a file name, padding and a CRC. */
#define ELF_MAX_DEBUGLINK 4096

#define NT_STAPSDT 3

/* A table read from the file: exactly the bytes of its bounded range. */
struct table {
	unsigned char *buf;
	size_t len;
	int tried; /* read attempted (buf NULL if it failed or was over its cap) */
};

struct symtab {
	Elf_Scn *scn;
	struct table syms, strs;
	size_t entsize, n;
};

struct elfsym {
	int fd;
	Elf *elf;
	int type;
	int is64;
	size_t shstrndx;
	size_t nsections;
	size_t nphdrs;
	uint64_t file_size;
	struct table shstr;
	struct symtab dyn, sym;
};

static int libelf_ready(void)
{
	static int ready = -1;

	if (ready < 0)
		ready = elf_version(EV_CURRENT) != EV_NONE;
	return ready;
}

static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

/* Is [off, off + size) inside the file? In 64 bits, without overflow. */
static int in_file(const struct elfsym *e, uint64_t off, uint64_t size)
{
	return off <= e->file_size && size <= e->file_size - off;
}

/* Read [off, off + size) into t, if it is in the file and within cap. The
 * check comes first: nothing over the cap is allocated or read. */
static int read_table(struct elfsym *e, struct table *t, uint64_t off, uint64_t size, uint64_t cap)
{
	if (t->tried)
		return t->buf ? 0 : -1;
	t->tried = 1;
	if (!size || size > cap || !in_file(e, off, size))
		return -1;
	t->buf = malloc((size_t)size);
	if (!t->buf)
		return -1;
	if (pread_all(e->fd, t->buf, (size_t)size, off)) {
		free(t->buf);
		t->buf = NULL;
		return -1;
	}
	t->len = (size_t)size;
	return 0;
}

/* The NUL-terminated string at off in t, or NULL if it does not end there. */
static const char *table_str(const struct table *t, uint64_t off)
{
	if (!t->buf || off >= t->len || !memchr(t->buf + off, 0, t->len - off))
		return NULL;
	return (const char *)t->buf + off;
}

/*
 * Check the header's counts and ranges before libelf sees the file:
 * elf_begin allocates per section and gelf_getshdr/gelf_getphdr read whole
 * header tables, sized by fields we have not checked yet.
 */
static int check_headers(struct elfsym *e, const char *name, struct diag *d)
{
	unsigned char ident[EI_NIDENT];
	uint64_t shoff, phoff, shnum, phnum, shent, phent;

	if (e->file_size < sizeof(Elf32_Ehdr) || pread_all(e->fd, ident, sizeof(ident), 0) ||
	    memcmp(ident, ELFMAG, SELFMAG))
		return diag_set(d, EXIT_FAIL, "%s: not an ELF file", name);
	if (ident[EI_DATA] != ELFDATA2LSB ||
	    (ident[EI_CLASS] != ELFCLASS64 && ident[EI_CLASS] != ELFCLASS32))
		return diag_set(d, EXIT_FAIL, "%s: not a little-endian ELF32/ELF64 file", name);
	e->is64 = ident[EI_CLASS] == ELFCLASS64;
	if (e->is64) {
		Elf64_Ehdr h;

		if (e->file_size < sizeof(h) || pread_all(e->fd, &h, sizeof(h), 0))
			return diag_set(d, EXIT_FAIL, "%s: truncated ELF header", name);
		shoff = h.e_shoff, phoff = h.e_phoff, shnum = h.e_shnum, phnum = h.e_phnum;
		shent = h.e_shentsize, phent = h.e_phentsize;
		if (shoff && !shnum) { /* extended numbering: the count is in shdr 0 */
			Elf64_Shdr s0;

			if (!in_file(e, shoff, sizeof(s0)) ||
			    pread_all(e->fd, &s0, sizeof(s0), shoff))
				return diag_set(d, EXIT_FAIL, "%s: bad section header 0", name);
			shnum = s0.sh_size;
		}
	} else {
		Elf32_Ehdr h;

		if (pread_all(e->fd, &h, sizeof(h), 0))
			return diag_set(d, EXIT_FAIL, "%s: truncated ELF header", name);
		shoff = h.e_shoff, phoff = h.e_phoff, shnum = h.e_shnum, phnum = h.e_phnum;
		shent = h.e_shentsize, phent = h.e_phentsize;
		if (shoff && !shnum) {
			Elf32_Shdr s0;

			if (!in_file(e, shoff, sizeof(s0)) ||
			    pread_all(e->fd, &s0, sizeof(s0), shoff))
				return diag_set(d, EXIT_FAIL, "%s: bad section header 0", name);
			shnum = s0.sh_size;
		}
	}
	if (shnum > ELF_MAX_SECTIONS || phnum > ELF_MAX_PHDRS)
		return diag_set(d, EXIT_FAIL,
				"%s: implausible ELF (%llu sections, %llu segments; at most %d and "
				"%d)",
				name, (unsigned long long)shnum, (unsigned long long)phnum,
				ELF_MAX_SECTIONS, ELF_MAX_PHDRS);
	/* Counts are capped, so the products cannot overflow. */
	if ((shnum && !in_file(e, shoff, shnum * shent)) ||
	    (phnum && !in_file(e, phoff, phnum * phent)))
		return diag_set(d, EXIT_FAIL, "%s: ELF header tables lie outside the file", name);
	return 0;
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
	if (check_headers(e, name, d))
		goto fail;
	/* ELF_C_READ, not ELF_C_READ_MMAP: a file truncated under us must give
	 * a read error, not SIGBUS. libelf then reads only the headers; section
	 * contents are read here, by bounded ranges (read_table). */
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
	if (e->nsections > ELF_MAX_SECTIONS || e->nphdrs > ELF_MAX_PHDRS) {
		diag_set(d, EXIT_FAIL, "%s: implausible ELF (%zu sections, %zu segments)", name,
			 e->nsections, e->nphdrs);
		goto fail;
	}
	for (Elf_Scn *s = NULL; (s = elf_nextscn(e->elf, s));) {
		GElf_Shdr sh;

		if (!gelf_getshdr(s, &sh))
			continue;
		if (sh.sh_type == SHT_DYNSYM && !e->dyn.scn)
			e->dyn.scn = s;
		else if (sh.sh_type == SHT_SYMTAB && !e->sym.scn)
			e->sym.scn = s;
	}
	if (e->shstrndx < e->nsections) {
		Elf_Scn *s = elf_getscn(e->elf, e->shstrndx);
		GElf_Shdr sh;

		if (s && gelf_getshdr(s, &sh) && sh.sh_type == SHT_STRTAB)
			read_table(e, &e->shstr, sh.sh_offset, sh.sh_size, ELF_MAX_SHSTRTAB);
	}
	return e;
fail:
	elfsym_close(e);
	return NULL;
}

struct elfsym *elfsym_open_target(pid_t pid, const char *path, struct diag *d)
{
	int fd = proc_target_file_open(pid, path, d);

	return fd < 0 ? NULL : elfsym_open(fd, path, d);
}

struct elfsym *elfsym_open_path(const char *path, struct diag *d)
{
	int fd = open_regular_nonblock(AT_FDCWD, path, d);

	return fd < 0 ? NULL : elfsym_open(fd, path, d);
}

static void symtab_free(struct symtab *t)
{
	free(t->syms.buf);
	free(t->strs.buf);
}

void elfsym_close(struct elfsym *e)
{
	if (!e)
		return;
	if (e->elf)
		elf_end(e->elf);
	if (e->fd >= 0)
		close(e->fd);
	free(e->shstr.buf);
	symtab_free(&e->dyn);
	symtab_free(&e->sym);
	free(e);
}

int elfsym_type(const struct elfsym *e)
{
	return e->type;
}

/* Load a symbol table and its string table (sh_link), each bounded. */
static int symtab_load(struct elfsym *e, struct symtab *t)
{
	GElf_Shdr sh, ssh;
	Elf_Scn *ss;
	size_t want = e->is64 ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym);

	if (t->syms.tried)
		return t->syms.buf && t->strs.buf ? 0 : -1;
	if (!t->scn || !gelf_getshdr(t->scn, &sh) || sh.sh_entsize != want ||
	    sh.sh_link >= e->nsections || !(ss = elf_getscn(e->elf, sh.sh_link)) ||
	    !gelf_getshdr(ss, &ssh) || ssh.sh_type != SHT_STRTAB) {
		t->syms.tried = 1;
		return -1;
	}
	if (read_table(e, &t->syms, sh.sh_offset, sh.sh_size, ELF_MAX_SYMTAB) ||
	    read_table(e, &t->strs, ssh.sh_offset, ssh.sh_size, ELF_MAX_STRTAB))
		return -1;
	t->entsize = want;
	t->n = t->syms.len / want;
	return 0;
}

/* Symbol i of t, widened: the fields a lookup uses are named alike in both
 * classes, so one copy serves ELF32 and ELF64. */
#define SYM_FROM(type, p, s)                                                                       \
	do {                                                                                       \
		type v_;                                                                           \
		memcpy(&v_, (p), sizeof(v_));                                                      \
		*(s) = (GElf_Sym){.st_name = v_.st_name,                                           \
				  .st_info = v_.st_info,                                           \
				  .st_shndx = v_.st_shndx,                                         \
				  .st_value = v_.st_value,                                         \
				  .st_size = v_.st_size};                                          \
	} while (0)

static void get_sym(const struct elfsym *e, const struct symtab *t, size_t i, GElf_Sym *s)
{
	const unsigned char *p = t->syms.buf + i * t->entsize;

	if (e->is64)
		SYM_FROM(Elf64_Sym, p, s);
	else
		SYM_FROM(Elf32_Sym, p, s);
}

static int lookup_in(struct elfsym *e, struct symtab *t, const char *name, uint64_t *value,
		     uint64_t *size)
{
	if (symtab_load(e, t))
		return -1;
	for (size_t i = 1; i < t->n; i++) {
		GElf_Sym sym;
		const char *s;

		get_sym(e, t, i, &sym);
		if (sym.st_shndx == SHN_UNDEF || !sym.st_name)
			continue;
		s = table_str(&t->strs, sym.st_name);
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
	if (!lookup_in(e, &e->dyn, name, value, size))
		return 0;
	return lookup_in(e, &e->sym, name, value, size);
}

static int each_func_in(struct elfsym *e, struct symtab *t, elfsym_func_fn fn, void *ctx,
			int dynamic)
{
	if (symtab_load(e, t))
		return -1;
	for (size_t i = 1; i < t->n; i++) {
		GElf_Sym sym;
		const char *s;
		int type, rc;

		get_sym(e, t, i, &sym);
		type = GELF_ST_TYPE(sym.st_info);
		if (sym.st_shndx == SHN_UNDEF || !sym.st_name || !sym.st_value ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		s = table_str(&t->strs, sym.st_name);
		if (s && *s && (rc = fn(ctx, s, sym.st_value, sym.st_size, dynamic)))
			return rc;
	}
	return 0;
}

int elfsym_each_func(struct elfsym *e, elfsym_func_fn fn, void *ctx)
{
	int a = each_func_in(e, &e->sym, fn, ctx, 0), b;

	if (a > 0)
		return a;
	b = each_func_in(e, &e->dyn, fn, ctx, 1);
	if (b > 0)
		return b;
	return a < 0 && b < 0 ? -1 : 0;
}

int elfsym_has_symtab(const struct elfsym *e)
{
	return e->sym.scn != NULL;
}

static Elf_Scn *find_section(struct elfsym *e, const char *name, GElf_Shdr *sh)
{
	for (Elf_Scn *s = NULL; (s = elf_nextscn(e->elf, s));) {
		const char *sn;

		if (!gelf_getshdr(s, sh))
			continue;
		sn = table_str(&e->shstr, sh->sh_name);
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
		uint64_t delta;

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
		return pread_all(e->fd, buf, len, ph.p_offset + delta);
	}
	return -1;
}

int elfsym_file_offset(struct elfsym *e, uint64_t vaddr, uint64_t *off)
{
	for (size_t i = 0; i < e->nphdrs; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e->elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X))
			continue;
		if (vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_filesz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -1;
}

int elfsym_segment(struct elfsym *e, size_t idx, struct elfsym_seg *seg)
{
	for (size_t i = 0; i < e->nphdrs; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e->elf, (int)i, &ph) || ph.p_type != PT_LOAD || idx--)
			continue;
		seg->vaddr = ph.p_vaddr;
		seg->offset = ph.p_offset;
		seg->filesz = ph.p_filesz;
		seg->memsz = ph.p_memsz;
		seg->exec = !!(ph.p_flags & PF_X);
		return 0;
	}
	return -1;
}

Elf *elfsym_elf(struct elfsym *e)
{
	return e->elf;
}

int elfsym_has_usdt(struct elfsym *e)
{
	GElf_Shdr sh;

	return find_section(e, ".note.stapsdt", &sh) && sh.sh_type == SHT_NOTE;
}

/* One note of a section, its fields checked against the section's bytes. */
struct note {
	uint32_t type;
	const char *name; /* n_namesz bytes */
	uint64_t namesz;
	const unsigned char *desc; /* n_descsz bytes */
	uint64_t descsz;
};

/*
 * The note at *off in t, advancing *off past it (and its padding to align,
 * 4 or 8). 0, or -1 at the end or on a note that does not fit. Every sum is
 * in 64 bits and checked against what is left, so no field (each up to
 * 2^32-1) can wrap an offset.
 */
static int next_note(const struct table *t, uint64_t *off, uint64_t align, struct note *n)
{
	uint32_t h[3];
	uint64_t pos = *off, left;

	if (pos > t->len || t->len - pos < sizeof(h))
		return -1;
	memcpy(h, t->buf + pos, sizeof(h));
	pos += sizeof(h);
	n->namesz = h[0];
	n->descsz = h[1];
	n->type = h[2];
	left = t->len - pos;
	if (n->namesz > left)
		return -1;
	n->name = (const char *)t->buf + pos;
	pos += (n->namesz + align - 1) & ~(align - 1);
	if (pos > t->len)
		return -1;
	left = t->len - pos;
	if (n->descsz > left)
		return -1;
	n->desc = t->buf + pos;
	pos += (n->descsz + align - 1) & ~(align - 1);
	*off = pos < t->len ? pos : t->len;
	return 0;
}

/* Read section s if it is a note section within ELF_MAX_NOTE_SECTION. */
static int note_section(struct elfsym *e, Elf_Scn *s, struct table *t, uint64_t *align)
{
	GElf_Shdr sh;

	memset(t, 0, sizeof(*t));
	if (!gelf_getshdr(s, &sh) || sh.sh_type != SHT_NOTE)
		return -1;
	*align = sh.sh_addralign == 8 ? 8 : 4;
	return read_table(e, t, sh.sh_offset, sh.sh_size, ELF_MAX_NOTE_SECTION);
}

int elfsym_build_id(struct elfsym *e, char *hex, size_t len)
{
	static const char digits[] = "0123456789abcdef";

	for (Elf_Scn *s = NULL; (s = elf_nextscn(e->elf, s));) {
		struct table t;
		struct note n;
		uint64_t off = 0, align;

		if (note_section(e, s, &t, &align))
			continue;
		for (int k = 0; k < ELF_MAX_NOTES && !next_note(&t, &off, align, &n); k++) {
			if (n.type != NT_GNU_BUILD_ID || n.namesz != 4 || memcmp(n.name, "GNU", 4))
				continue;
			/* 64-bit: 2 * descsz + 1 cannot wrap. */
			if (!n.descsz || n.descsz > ELF_MAX_BUILD_ID ||
			    2 * n.descsz + 1 > (uint64_t)len) {
				free(t.buf);
				return -1;
			}
			for (size_t i = 0; i < n.descsz; i++) {
				hex[2 * i] = digits[n.desc[i] >> 4];
				hex[2 * i + 1] = digits[n.desc[i] & 15];
			}
			hex[2 * n.descsz] = '\0';
			free(t.buf);
			return 0;
		}
		free(t.buf);
	}
	return -1;
}

int elfsym_debuglink(struct elfsym *e, char *name, size_t len, uint32_t *crc)
{
	struct table t = {0};
	GElf_Shdr sh;
	size_t n, at;
	int rc = -1;

	if (!find_section(e, ".gnu_debuglink", &sh) || sh.sh_type == SHT_NOBITS ||
	    read_table(e, &t, sh.sh_offset, sh.sh_size, ELF_MAX_DEBUGLINK))
		return -1;
	/* name, NUL, padding to 4, then the 4-byte CRC. */
	n = strnlen((const char *)t.buf, t.len);
	at = (n + 4) & ~(size_t)3;
	if (n && n < len && at + 4 <= t.len && !memchr(t.buf, '/', n)) {
		rc = 0;
		for (size_t i = 0; i < n; i++)
			if (t.buf[i] < 0x20 || t.buf[i] == 0x7f)
				rc = -1;
		if (!rc && n <= 2 && t.buf[0] == '.') /* "." or ".." */
			rc = -1;
		if (!rc) {
			memcpy(name, t.buf, n);
			name[n] = 0;
			memcpy(crc, t.buf + at, 4);
		}
	}
	free(t.buf);
	return rc;
}

static void copy_str(char *dst, size_t cap, const char *src, const char *end)
{
	size_t n = strnlen(src, (size_t)(end - src));

	if (n >= cap)
		n = cap - 1;
	memcpy(dst, src, n);
	dst[n] = 0;
}

/* Add one stapsdt note's probe, merging call sites of the same
 * provider:name. The descriptor is pc, base, semaphore (3 x 8 bytes), then
 * provider, name and args as NUL-terminated strings. */
static int add_probe(struct usdt_probe **v, int *n, int *cap, const char *desc, uint64_t len)
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
	if (*n >= ELF_MAX_PROBES)
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

int elfsym_usdt(struct elfsym *e, struct usdt_probe **out, struct diag *d)
{
	struct usdt_probe *v = NULL;
	int n = 0, cap = 0;

	*out = NULL;
	for (Elf_Scn *s = NULL; (s = elf_nextscn(e->elf, s));) {
		GElf_Shdr sh;
		struct table t;
		struct note nt;
		uint64_t off = 0, align;
		const char *sname;

		if (!gelf_getshdr(s, &sh) || !(sname = table_str(&e->shstr, sh.sh_name)) ||
		    strcmp(sname, ".note.stapsdt") || note_section(e, s, &t, &align))
			continue;
		for (int k = 0; k < ELF_MAX_NOTES && !next_note(&t, &off, align, &nt); k++) {
			if (nt.type == NT_STAPSDT && nt.namesz == 8 &&
			    !memcmp(nt.name, "stapsdt", 8) &&
			    add_probe(&v, &n, &cap, (const char *)nt.desc, nt.descsz)) {
				free(t.buf);
				free(v);
				return diag_errno(d, ENOMEM, "USDT notes");
			}
		}
		free(t.buf);
	}
	*out = v;
	return n;
}

int usdt_list(pid_t pid, const char *path, struct usdt_probe **out, struct diag *d)
{
	struct elfsym *e = elfsym_open_target(pid, path, d);
	int n;

	*out = NULL;
	if (!e)
		return -1;
	n = elfsym_usdt(e, out, d);
	if (n < 0)
		diag_prefix(d, "%s: ", path);
	elfsym_close(e);
	return n;
}

int elf_symbol_file_offset(pid_t pid, const char *path, const char *sym, uint64_t add,
			   uint64_t *off, struct diag *d)
{
	struct elfsym *e = elfsym_open_target(pid, path, d);
	uint64_t vaddr, size;
	int rc;

	if (!e)
		return -1;
	if (elfsym_lookup(e, sym, &vaddr, &size)) {
		elfsym_close(e);
		return diag_set(d, EXIT_USAGE, "symbol '%s' is not in %s", sym, path);
	}
	if (size && add >= size) {
		elfsym_close(e);
		return diag_set(d, EXIT_USAGE, "%s+0x%llx is past the end of %s (size %llu)", sym,
				(unsigned long long)add, sym, (unsigned long long)size);
	}
	rc = elfsym_file_offset(e, vaddr + add, off);
	elfsym_close(e);
	if (rc)
		return diag_set(d, EXIT_USAGE, "symbol '%s' of %s is not in executable code", sym,
				path);
	return 0;
}
