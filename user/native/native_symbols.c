// SPDX-License-Identifier: MIT
#include "native_symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "diag.h"
#include "elf_file.h"
#include "monotime.h"
#include "proc_maps.h"
#include "proc_root.h"
#include "py_offsets.h"

/*
 * Bounds. Files: distinct (device, inode) pairs held; a host running -a
 * maps a few hundred distinct libraries, a file past the bound is named by
 * offset only. Kernel: /proc/kallsyms is ~200k lines (10 MiB) on a distro
 * kernel; a file longer than either cap keeps the symbols read so far.
 * Maps: a process's maps are read again on a miss at most this often, so an
 * address in memory that is no file (JIT code, a freed mapping) costs one
 * read per interval, not one per sample. SECURITY.md lists them.
 */
#define NATIVE_SYM_MAX_FILES	  4096
#define NATIVE_SYM_MAX_KSYMS	  (4u << 20)
#define NATIVE_SYM_MAX_KALLSYMS	  (256u << 20)
#define NATIVE_SYM_REREAD_NS	  200000000ull
#define NATIVE_SYM_MAX_SEGMENTS	  16
#define NATIVE_SYM_MAX_DEBUG_NAME 256
/* Stripped eval loops: bytes of the entry scanned, of .eh_frame_hdr read,
 * and the size a found part may have. */
#define NATIVE_SYM_MAX_ENTRY (256u << 10)
#define NATIVE_SYM_MAX_EHHDR ELFSYM_MAX_READ
#define NATIVE_SYM_MAX_PART  (16u << 20)

struct fsym {
	uint64_t vaddr, size;
	uint32_t name; /* offset in the table's names */
	uint32_t rank; /* lower wins among symbols at one address */
};

struct symtab {
	char build_id[72];
	struct fsym *v;
	size_t n, cap;
	char *names;
	size_t nlen, ncap;
	int from_debug;
	struct symtab *next;
};

struct nfile {
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	struct symtab *tab; /* shared by build id; NULL if none could be read */
	struct elfsym_seg seg[NATIVE_SYM_MAX_SEGMENTS];
	int nseg;
	struct native_lib lib;
	char *path, *build_id;
	struct nfile *next;
};

struct nproc {
	pid_t pid;
	struct proc_maps maps;
	uint64_t read_ns;
	struct nproc *next;
};

struct ksym {
	uint64_t addr;
	uint32_t name, module; /* offsets in knames; module 0 is vmlinux */
};

struct native_syms {
	struct nproc *procs;
	struct nfile *files;
	size_t nfiles;
	struct symtab *tabs;
	struct ksym *ks;
	size_t nks;
	char *knames;
	size_t knlen;
	int kread; /* kallsyms tried */
	struct native_syms_stats st;
};

struct native_syms *native_syms_new(void)
{
	return calloc(1, sizeof(struct native_syms));
}

static void symtab_free(struct symtab *t)
{
	free(t->v);
	free(t->names);
	free(t);
}

void native_syms_free(struct native_syms *ns)
{
	if (!ns)
		return;
	for (struct nproc *p = ns->procs, *n; p; p = n) {
		n = p->next;
		proc_maps_free(&p->maps);
		free(p);
	}
	for (struct nfile *f = ns->files, *n; f; f = n) {
		n = f->next;
		free(f->path);
		free(f->build_id);
		free(f);
	}
	for (struct symtab *t = ns->tabs, *n; t; t = n) {
		n = t->next;
		symtab_free(t);
	}
	free(ns->ks);
	free(ns->knames);
	free(ns);
}

/* Append a string to a growing blob; its offset, or UINT32_MAX. */
static uint32_t blob_add(char **blob, size_t *len, size_t *cap, const char *s)
{
	size_t n = strlen(s) + 1;

	if (*len + n > UINT32_MAX)
		return UINT32_MAX;
	if (*len + n > *cap) {
		size_t nc = *cap ? *cap * 2 : 4096;
		char *nb;

		while (nc < *len + n)
			nc *= 2;
		nb = realloc(*blob, nc);
		if (!nb)
			return UINT32_MAX;
		*blob = nb;
		*cap = nc;
	}
	memcpy(*blob + *len, s, n);
	*len += n;
	return (uint32_t)(*len - n);
}

/* A public name (from .dynsym) over a local alias at the same address,
 * then the one with fewer leading underscores (qsort over __qsort). */
static uint32_t sym_rank(const char *name, int dynamic)
{
	uint32_t u = 0;

	while (name[u] == '_' && u < 15)
		u++;
	return (dynamic ? 0 : 16) + u;
}

static int add_func(void *ctx, const char *name, uint64_t value, uint64_t size, int dynamic)
{
	struct symtab *t = ctx;
	uint32_t off;

	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 1024;
		struct fsym *nv = realloc(t->v, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		t->v = nv;
		t->cap = nc;
	}
	off = blob_add(&t->names, &t->nlen, &t->ncap, name);
	if (off == UINT32_MAX)
		return -ENOMEM;
	t->v[t->n++] = (struct fsym){value, size, off, sym_rank(name, dynamic)};
	return 0;
}

static int fsym_cmp(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;

	if (x->vaddr != y->vaddr)
		return x->vaddr < y->vaddr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/* Open a debug file candidate inside pid's root; accept it only if its
 * build id (when both have one) is the file's. */
static struct elfsym *open_debug(pid_t pid, const char *path, const char *build_id)
{
	struct diag d = {0};
	int fd = proc_root_open_file(pid, path, &d);
	struct elfsym *e;
	char bid[72];

	if (fd < 0)
		return NULL;
	e = elfsym_open(fd, path, &d);
	if (!e)
		return NULL;
	if (*build_id && (elfsym_build_id(e, bid, sizeof(bid)) || strcmp(bid, build_id))) {
		elfsym_close(e);
		return NULL;
	}
	if (!elfsym_has_symtab(e)) {
		elfsym_close(e);
		return NULL;
	}
	return e;
}

/* The separate debug file of a stripped file: by build id first, then by
 * .gnu_debuglink beside the file, in its .debug/, under /usr/lib/debug.
 * Every path is the target's (root-relative). */
static struct elfsym *find_debug(pid_t pid, struct elfsym *e, const char *maps_path,
				 const char *build_id)
{
	char path[4096], rel[4096], link[NATIVE_SYM_MAX_DEBUG_NAME], *slash;
	struct elfsym *dbg;
	uint32_t crc;

	if (strlen(build_id) > 2) {
		snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%.2s/%s.debug", build_id,
			 build_id + 2);
		if ((dbg = open_debug(pid, path, build_id)))
			return dbg;
	}
	if (elfsym_debuglink(e, link, sizeof(link), &crc) ||
	    proc_root_path(pid, maps_path, rel, sizeof(rel)))
		return NULL;
	slash = strrchr(rel, '/');
	if (!slash)
		return NULL;
	*slash = 0;
	static const char *const forms[] = {"%s/%s", "%s/.debug/%s", "/usr/lib/debug%s/%s"};
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		if (snprintf(path, sizeof(path), forms[i], rel, link) >= (int)sizeof(path))
			continue;
		/* Not the stripped file itself under its own name. */
		if (!strcmp(path, maps_path))
			continue;
		if ((dbg = open_debug(pid, path, build_id)))
			return dbg;
	}
	return NULL;
}

/* The table entry naming vaddr: the best-ranked symbol at the closest
 * address below, or one a little further down whose size covers vaddr (a
 * function with a local label inside). *exact: a size covers it. */
static const struct fsym *sym_of(const struct symtab *t, uint64_t vaddr, int *exact)
{
	size_t lo = 0, hi = t->n;
	const struct fsym *best;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].vaddr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	size_t i = lo - 1;

	while (i > 0 && t->v[i - 1].vaddr == t->v[i].vaddr)
		i--;
	best = &t->v[i];
	*exact = vaddr - best->vaddr < best->size;
	if (*exact)
		return best;
	for (size_t k = 1; k <= 8 && k <= i; k++) {
		const struct fsym *s = &t->v[i - k];

		if (vaddr - s->vaddr < s->size) {
			*exact = 1;
			return s;
		}
	}
	return best;
}

static int32_t get_s32(const unsigned char *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* The CFI unit (FDE) holding vaddr, from .eh_frame_hdr's sorted table
 * (the layout every GNU toolchain writes: table datarel sdata4, FDEs with
 * pcrel sdata4 addresses; anything else is not read). Its start is checked
 * against the FDE itself. 0 with [*start, *start + *len), or -1. */
static int fde_of(struct elfsym *e, const unsigned char *h, uint64_t hsize, uint64_t haddr,
		  uint64_t vaddr, uint64_t *start, uint64_t *len)
{
	unsigned char fde[16];
	uint64_t n, lo = 0, hi, at;
	int64_t fde_vaddr;

	if (hsize < 12 || h[0] != 1 || h[2] != 0x03 || h[3] != 0x3b)
		return -1;
	n = (uint32_t)get_s32(h + 8);
	if (n > (hsize - 12) / 8)
		return -1;
	hi = n;
	while (lo < hi) { /* the last entry starting at or below vaddr */
		uint64_t mid = lo + (hi - lo) / 2;

		if ((int64_t)haddr + get_s32(h + 12 + 8 * mid) <= (int64_t)vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -1;
	at = 12 + 8 * (lo - 1);
	fde_vaddr = (int64_t)haddr + get_s32(h + at + 4);
	if (fde_vaddr < 0 || elfsym_read(e, (uint64_t)fde_vaddr, fde, sizeof(fde)) ||
	    get_s32(fde) == -1 || !get_s32(fde + 4))
		return -1;
	*start = (uint64_t)(fde_vaddr + 8 + get_s32(fde + 8));
	*len = (uint32_t)get_s32(fde + 12);
	if (*start != (uint64_t)((int64_t)haddr + get_s32(h + at)) || *len > NATIVE_SYM_MAX_PART ||
	    vaddr - *start >= *len)
		return -1;
	return 0;
}

/*
 * A stripped interpreter (Debian sid's 3.14 and 3.15) names the entry of
 * its eval loop in .dynsym but not the part GCC moved out of it
 * (NAME.cold), where a PGO build puts many instruction bodies: unnamed,
 * the splice could not tell those frames belong to the eval loop. The part
 * is the CFI unit that the entry jumps into directly (jmp or jcc rel32 out
 * of its own range) and that no symbol names; it is added as NAME.cold.
 * A stray byte pattern could only add a part that a direct jump of the
 * entry reaches, within one CFI unit, and never over a named function.
 */
static void name_eval_parts(struct symtab *t, struct elfsym *e)
{
	uint64_t haddr, hsize, added = 0;
	unsigned char *h = NULL, *code = NULL;
	const char *name;

	if (elfsym_section(e, ".eh_frame_hdr", &haddr, &hsize) || hsize > NATIVE_SYM_MAX_EHHDR ||
	    !(h = malloc(hsize ? hsize : 1)) || elfsym_read(e, haddr, h, hsize))
		goto out;
	for (size_t k = 0; (name = py_native_eval_name(k)); k++) {
		const struct fsym *entry = NULL;
		uint64_t base, size;
		char cold[160];

		for (size_t i = 0; i < t->n && !entry; i++)
			if (t->v[i].size && !strcmp(t->names + t->v[i].name, name))
				entry = &t->v[i];
		if (!entry || entry->size > NATIVE_SYM_MAX_ENTRY)
			continue;
		base = entry->vaddr;
		size = entry->size;
		free(code);
		if (!(code = malloc(size)) || elfsym_read(e, base, code, size))
			continue;
		snprintf(cold, sizeof(cold), "%s.cold", name);
		for (uint64_t i = 0; i + 5 <= size && added < 16; i++) {
			uint64_t end, target, start, len;
			int exact = 0;
			size_t n0 = t->n;

			if (code[i] == 0xe9)
				end = i + 5;
			else if (code[i] == 0x0f && (code[i + 1] & 0xf0) == 0x80 && i + 6 <= size)
				end = i + 6;
			else
				continue;
			target = base + end + (uint64_t)(int64_t)get_s32(code + end - 4);
			if (target - base < size ||
			    fde_of(e, h, hsize, haddr, target, &start, &len))
				continue;
			if (sym_of(t, target, &exact) && exact)
				continue; /* a named function: a tail call, not a part */
			if (add_func(t, cold, start, len, 1))
				break;
			/* Sorted again for the next lookup (a few times per file). */
			qsort(t->v, t->n, sizeof(*t->v), fsym_cmp);
			added += t->n > n0;
		}
	}
out:
	free(code);
	free(h);
}

static struct symtab *load_symtab(struct native_syms *ns, pid_t pid, struct elfsym *e,
				  const char *maps_path, const char *build_id)
{
	struct symtab *t;
	int rc;

	if (*build_id)
		for (t = ns->tabs; t; t = t->next)
			if (!strcmp(t->build_id, build_id))
				return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	snprintf(t->build_id, sizeof(t->build_id), "%s", build_id);
	rc = elfsym_each_func(e, add_func, t);
	if (rc >= 0 && !elfsym_has_symtab(e)) {
		struct elfsym *dbg = find_debug(pid, e, maps_path, build_id);

		if (dbg) {
			if (elfsym_each_func(dbg, add_func, t) == 0) {
				t->from_debug = 1;
				rc = 0;
			}
			elfsym_close(dbg);
		}
	}
	if (rc < -1 || !t->n) {
		symtab_free(t);
		return NULL;
	}
	qsort(t->v, t->n, sizeof(*t->v), fsym_cmp);
	if (!elfsym_has_symtab(e) && !t->from_debug)
		name_eval_parts(t, e);
	t->next = ns->tabs;
	ns->tabs = t;
	ns->st.files++;
	ns->st.debug_files += t->from_debug;
	return t;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static struct nfile *file_for(struct native_syms *ns, pid_t pid, const struct proc_map *m)
{
	struct nfile *f;
	struct elfsym *e;
	struct diag d = {0};
	char bid[72] = "";
	int fd;

	for (f = ns->files; f; f = f->next)
		if (f->inode == m->inode && f->dev_major == m->dev_major &&
		    f->dev_minor == m->dev_minor)
			return f;
	if (ns->nfiles >= NATIVE_SYM_MAX_FILES)
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->dev_major = m->dev_major;
	f->dev_minor = m->dev_minor;
	f->inode = m->inode;
	/* The kernel's handle first: it is the mapped inode even when the
	 * path was replaced or deleted since; the path inside the target's
	 * root when map_files is closed to us. */
	fd = proc_map_file_open(pid, m->start, m->end, &d);
	if (fd < 0)
		fd = proc_target_file_open(pid, m->path, &d);
	e = fd >= 0 ? elfsym_open(fd, m->path, &d) : NULL;
	if (e) {
		elfsym_build_id(e, bid, sizeof(bid));
		while (f->nseg < NATIVE_SYM_MAX_SEGMENTS &&
		       !elfsym_segment(e, (size_t)f->nseg, &f->seg[f->nseg]))
			f->nseg++;
		f->tab = load_symtab(ns, pid, e, m->path, bid);
		elfsym_close(e);
	}
	if (!f->tab)
		ns->st.no_symbols++;
	f->path = strdup(m->path);
	f->build_id = strdup(bid);
	if (!f->path || !f->build_id) {
		free(f->path);
		free(f->build_id);
		free(f);
		return NULL;
	}
	f->lib = (struct native_lib){
	    .path = f->path,
	    .name = base_name(f->path),
	    .build_id = f->build_id,
	    .start = m->start,
	    .limit = m->end,
	    .offset = m->offset,
	    .has_symbols = f->tab != NULL,
	};
	f->next = ns->files;
	ns->files = f;
	ns->nfiles++;
	return f;
}

static struct nproc *proc_for(struct native_syms *ns, pid_t pid)
{
	struct nproc **pp, *p;

	for (pp = &ns->procs; (p = *pp); pp = &p->next)
		if (p->pid == pid) {
			/* Most recent first: samples come in runs of one process. */
			*pp = p->next;
			p->next = ns->procs;
			ns->procs = p;
			return p;
		}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->next = ns->procs;
	ns->procs = p;
	return p;
}

void native_syms_forget(struct native_syms *ns, pid_t pid)
{
	for (struct nproc **pp = &ns->procs, *p; (p = *pp); pp = &p->next)
		if (p->pid == pid) {
			*pp = p->next;
			proc_maps_free(&p->maps);
			free(p);
			return;
		}
}

static const struct proc_map *map_of(const struct proc_maps *m, uint64_t a)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a < m->v[mid].start)
			hi = mid;
		else if (a >= m->v[mid].end)
			lo = mid + 1;
		else
			return &m->v[mid];
	}
	return NULL;
}

static const struct proc_map *find_map(struct nproc *p, uint64_t a)
{
	const struct proc_map *m = map_of(&p->maps, a);
	uint64_t now = mono_ns();

	if (m || (p->read_ns && now - p->read_ns < NATIVE_SYM_REREAD_NS))
		return m;
	/* New library (dlopen), first sample, or not a file at all. */
	struct proc_maps fresh = {0};
	struct diag d = {0};

	p->read_ns = now;
	if (proc_maps_read(p->pid, &fresh, &d))
		return NULL;
	proc_maps_free(&p->maps);
	p->maps = fresh;
	return map_of(&p->maps, a);
}

int native_syms_prime(struct native_syms *ns, pid_t pid)
{
	struct nproc *p = proc_for(ns, pid);
	struct proc_maps fresh = {0};
	struct diag d = {0};
	int n = 0;

	if (!p || proc_maps_read(pid, &fresh, &d))
		return -1;
	proc_maps_free(&p->maps);
	p->maps = fresh;
	/* read_ns stays 0: the first address in a library loaded since then
	 * still re-reads the maps at once (find_map). */
	for (size_t i = 0; i < p->maps.n; i++) {
		const struct proc_map *m = &p->maps.v[i];

		if (m->perms[2] == 'x' && proc_map_is_file(m) && file_for(ns, pid, m))
			n++;
	}
	return n;
}

static void set_addr_name(struct native_sym *out, uint64_t ip)
{
	snprintf(out->buf, sizeof(out->buf), "0x%" PRIx64, ip);
	out->name = out->buf;
}

int native_syms_user(struct native_syms *ns, pid_t pid, uint64_t ip, int ret,
		     struct native_sym *out)
{
	uint64_t a = ret && ip ? ip - 1 : ip, foff, vaddr = 0;
	const struct proc_map *m;
	const struct fsym *s = NULL;
	struct nproc *p;
	struct nfile *f;
	int exact = 0, in_seg = 0;

	memset(out, 0, offsetof(struct native_sym, buf));
	out->addr = a;
	ns->st.lookups++;
	p = proc_for(ns, pid);
	m = p ? find_map(p, a) : NULL;
	if (!m || !proc_map_is_file(m)) {
		ns->st.unmapped++;
		if (m && m->path && m->path[0] == '[') { /* [vdso], [heap], ... */
			snprintf(out->buf, sizeof(out->buf), "%.32s+0x%" PRIx64, m->path,
				 a - m->start);
			out->name = out->buf;
			return 0;
		}
		set_addr_name(out, ip);
		return -1;
	}
	foff = a - m->start + m->offset;
	f = file_for(ns, pid, m);
	if (f) {
		out->lib = &f->lib;
		for (int i = 0; i < f->nseg; i++)
			if (foff >= f->seg[i].offset &&
			    foff - f->seg[i].offset < f->seg[i].filesz) {
				vaddr = foff - f->seg[i].offset + f->seg[i].vaddr;
				in_seg = 1;
				break;
			}
		if (in_seg && f->tab)
			s = sym_of(f->tab, vaddr, &exact);
	}
	if (s && exact) {
		out->name = f->tab->names + s->name;
		out->sym_vaddr = s->vaddr;
		out->exact = 1;
	} else if (s) {
		snprintf(out->buf, sizeof(out->buf), "%.100s+0x%" PRIx64, f->tab->names + s->name,
			 vaddr - s->vaddr);
		out->name = out->buf;
		out->sym_vaddr = vaddr;
	} else {
		snprintf(out->buf, sizeof(out->buf), "%.100s+0x%" PRIx64, base_name(m->path), foff);
		out->name = out->buf;
		out->sym_vaddr = vaddr;
	}
	return 0;
}

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* One pass over /proc/kallsyms: text symbols (t, T, w, W) only. Lines are
 * "ADDR TYPE NAME" or "ADDR TYPE NAME\t[MODULE]". */
static void read_kallsyms(struct native_syms *ns)
{
	FILE *f;
	char line[512];
	size_t cap = 0, kcap = 0, bytes = 0;
	uint32_t none;

	ns->kread = 1;
	f = fopen("/proc/kallsyms", "re");
	if (!f)
		return;
	none = blob_add(&ns->knames, &ns->knlen, &kcap, "");
	while (none != UINT32_MAX && fgets(line, sizeof(line), f)) {
		char *name, *mod, *end, type;
		uint64_t addr;
		struct ksym k;

		bytes += strlen(line);
		if (bytes > NATIVE_SYM_MAX_KALLSYMS || ns->nks >= NATIVE_SYM_MAX_KSYMS)
			break;
		addr = strtoull(line, &end, 16);
		if (end == line || end[0] != ' ' || !end[1] || end[2] != ' ' || !addr)
			continue;
		type = end[1];
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		name = end + 3;
		name[strcspn(name, "\t\n")] = 0;
		mod = name + strlen(name) + 1;
		k.addr = addr;
		k.name = blob_add(&ns->knames, &ns->knlen, &kcap, name);
		k.module = none;
		if (mod < line + sizeof(line) && mod[-1] == 0 && *mod == '[') {
			mod[strcspn(mod, "]\n")] = 0;
			k.module = blob_add(&ns->knames, &ns->knlen, &kcap, mod + 1);
		}
		if (k.name == UINT32_MAX || k.module == UINT32_MAX)
			break;
		if (ns->nks == cap) {
			size_t nc = cap ? cap * 2 : 65536;
			struct ksym *nv = realloc(ns->ks, nc * sizeof(*nv));

			if (!nv)
				break;
			ns->ks = nv;
			cap = nc;
		}
		ns->ks[ns->nks++] = k;
	}
	fclose(f);
	qsort(ns->ks, ns->nks, sizeof(*ns->ks), ksym_cmp);
	ns->st.kernel_syms = ns->nks;
}

int native_syms_kernel(struct native_syms *ns, uint64_t ip, int ret, struct native_sym *out)
{
	uint64_t a = ret && ip ? ip - 1 : ip;
	size_t lo = 0, hi;

	memset(out, 0, offsetof(struct native_sym, buf));
	out->addr = a;
	if (!ns->kread)
		read_kallsyms(ns);
	hi = ns->nks;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ns->ks[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo) {
		set_addr_name(out, ip);
		return -1;
	}
	const struct ksym *k = &ns->ks[lo - 1];

	out->name = ns->knames + k->name;
	out->module = ns->knames[k->module] ? ns->knames + k->module : NULL;
	out->sym_vaddr = k->addr;
	out->exact = 1;
	return 0;
}

void native_syms_stats(const struct native_syms *ns, struct native_syms_stats *st)
{
	*st = ns->st;
}
