// SPDX-License-Identifier: MIT
#include "py_binary.h"

#include "diag.h"
#include "elf_file.h"
#include "mem_reader.h"
#include "proc.h"
#include "proc_maps.h"
#include "proc_root.h"
#include "py_offsets.h"

#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A process maps at most a handful of libpython-like files; more would be a
 * sign of something odd, and each costs an ELF open. */
#define MAX_CANDIDATES 8

struct candidate {
	const struct proc_map *map; /* its lowest mapping */
	int is_exe;
};

int py_version_from_name(const char *path, int *major, int *minor)
{
	const char *s = strrchr(path, '/');
	char *end;
	long ma, mi;

	s = s ? s + 1 : path;
	if (!strncmp(s, "lib", 3))
		s += 3;
	if (strncmp(s, "python", 6))
		return -1;
	s += 6;
	if (!isdigit((unsigned char)*s))
		return -1;
	ma = strtol(s, &end, 10);
	if (*end != '.' || !isdigit((unsigned char)end[1]))
		return -1;
	mi = strtol(end + 1, &end, 10);
	if (ma < 1 || ma > 9 || mi < 0 || mi > 99)
		return -1;
	*major = (int)ma;
	*minor = (int)mi;
	return 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static int add_candidate(struct candidate *c, size_t *n, const struct proc_map *m, int is_exe)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp(c[i].map->path, m->path))
			return 0;
	if (*n == MAX_CANDIDATES)
		return -1;
	c[*n].map = m;
	c[*n].is_exe = is_exe;
	(*n)++;
	return 0;
}

/* The mapping of the executable: by the path /proc/PID/exe links to (the
 * kernel prints both relative to our root), else by inode. */
static const struct proc_map *find_exe(pid_t pid, const struct proc_maps *m)
{
	char p[64], target[PATH_MAX];
	const char *suffix = " (deleted)";
	struct stat st;
	ssize_t n;
	size_t sl = strlen(suffix);

	snprintf(p, sizeof(p), "/proc/%d/exe", (int)pid);
	n = readlink(p, target, sizeof(target) - 1);
	if (n > 0) {
		target[n] = '\0';
		if ((size_t)n > sl && !strcmp(target + n - sl, suffix))
			target[n - sl] = '\0';
		for (size_t i = 0; i < m->n; i++)
			if (proc_map_is_file(&m->v[i]) && !strcmp(m->v[i].path, target))
				return &m->v[i];
	}
	if (stat(p, &st))
		return NULL;
	for (size_t i = 0; i < m->n; i++)
		if (proc_map_is_file(&m->v[i]) && m->v[i].inode == (uint64_t)st.st_ino)
			return &m->v[i];
	return NULL;
}

static int fd_inode_is(int fd, uint64_t ino)
{
	struct stat st;

	return !fstat(fd, &st) && (uint64_t)st.st_ino == ino;
}

/*
 * Open a mapped file, only by the two safe routes (proc_root.h): its name
 * resolved inside the target's root (maps prints it relative to our root
 * in the target's mount namespace, so proc_root_path cuts a chroot's
 * directory off first), else the kernel's own handle on the mapping
 * (/proc/PID/map_files, which also reaches deleted files). Never the name
 * on the host: a chroot's owner can make it a symlink to any host file, or
 * a FIFO. A deleted file's name now belongs to something else and is not
 * tried. The first whose inode is the one in maps wins; only the inode is
 * compared: on overlayfs the device differs between the two views.
 */
/* The name we opened a file by, for messages and for trace. A name too long
 * for the buffer is cut (the open itself used the whole path). */
static void root_name(char *host, size_t hlen, pid_t pid, const char *rel)
{
	if ((size_t)snprintf(host, hlen, "/proc/%d/root%s", (int)pid, rel) >= hlen && hlen)
		host[hlen - 1] = '\0';
}

static int open_mapped(pid_t pid, const struct proc_map *map, char *host, size_t hlen,
		       struct diag *d)
{
	struct diag pd = {0}, md = {0};
	char rel[PATH_MAX];
	int first = -1, fd;

	if (!map->deleted && !proc_root_path(pid, map->path, rel, sizeof(rel))) {
		fd = proc_root_open_file(pid, rel, &pd);
		if (fd >= 0) {
			root_name(host, hlen, pid, rel);
			if (fd_inode_is(fd, map->inode))
				return fd;
			first = fd;
		} else if (pd.code == EXIT_NO_PROCESS) {
			if (d)
				*d = pd;
			return -1;
		}
	}
	fd = proc_map_file_open(pid, map->start, map->end, &md);
	if (fd >= 0 && fd_inode_is(fd, map->inode)) {
		if (first >= 0)
			close(first);
		snprintf(host, hlen, "/proc/%d/map_files/%llx-%llx", (int)pid,
			 (unsigned long long)map->start, (unsigned long long)map->end);
		return fd;
	}
	if (fd >= 0)
		close(fd);
	if (first >= 0) {
		/* Same name, different inode: the file was replaced after the
		 * target mapped it, and the old one is out of reach. */
		root_name(host, hlen, pid, rel);
		return first;
	}
	/* The name's failure says more (a FIFO, a permission) unless the
	 * process is gone or there was no name to try. */
	if (d)
		*d = pd.code && md.code != EXIT_NO_PROCESS ? pd : md;
	if (d && !d->code)
		diag_set(d, EXIT_FAIL, "pid %d: cannot open %s", (int)pid, map->path);
	return -1;
}

/* Major.minor of a binary that defines _PyRuntime but no Py_Version (3.7 to
 * 3.10), from API functions each release added. Exact enough to pick an
 * offsets table, and independent of what the file is called. */
static uint32_t version_from_symbols(struct elfsym *e)
{
	uint64_t v;

	for (size_t i = 0; i < py_api_nmarkers; i++)
		if (!elfsym_lookup(e, py_api_markers[i].sym, &v, NULL))
			return py_api_markers[i].hex;
	return PY_RUNTIME_FIRST;
}

/*
 * What a file says about itself, the same for every process that maps it:
 * whether it is a CPython, the file addresses of its globals, its build-id.
 * Reading them means the ELF headers, the whole symbol table and a linear
 * search per symbol; `record -a` over 200 processes of one interpreter did
 * that 200 times (about 0.6 ms each). So the facts are kept, keyed by the
 * identity of the file actually opened (fstat of the descriptor that the
 * safe routes of open_mapped gave, never a name the target could swap):
 * device, inode, size, mtime and ctime. A file rewritten in place changes
 * mtime or ctime (ctime cannot be set back from user space), a replaced
 * one its inode: either misses. A hostile file gains nothing from a hit it
 * could not have had by a fresh read: the facts are only addresses in its
 * own process, read from there with bounded reads like any other.
 */
enum facts_kind { FACTS_NOT_ELF, FACTS_OTHER, FACTS_OLD_PYTHON, FACTS_PYTHON };
enum { SYM_CODE, SYM_NONE, SYM_FRAME, SYM_UNICODE, SYM_PY_VERSION, NSYMS };

static const char *const fact_syms[NSYMS] = {"PyCode_Type", "_Py_NoneStruct", "PyFrame_Type",
					     "PyUnicode_Type", "Py_Version"};

struct bin_facts {
	uint64_t dev, ino, size, used;
	int64_t mtime_s, mtime_ns, ctime_s, ctime_ns;
	enum facts_kind kind;
	int old_major; /* FACTS_OLD_PYTHON: 2, or 3 for 3.0-3.6 */
	int type;      /* ET_EXEC, ET_DYN */
	int has_base, has_usdt;
	uint64_t elf_base, runtime_vaddr;
	uint64_t sym[NSYMS];
	unsigned sym_found; /* bit i: fact_syms[i] is defined */
	uint32_t file_version, symbols_version;
	char build_id[65];
	uint64_t hook_off[PY_THREAD_HOOK_NAMES]; /* py_binary.hook_off */
};

/* A host runs few interpreters, but every executable of an exec'ing host
 * (a build: sh, cc, as, ld, make...) is a file looked at too, and one not
 * Python is a fact worth keeping: 64 entries of about 200 bytes. */
#define FACTS_CACHE 64

static struct bin_facts facts_cache[FACTS_CACHE];
static uint64_t facts_tick;
static struct py_binary_cache_stats facts_stats;
static pthread_mutex_t facts_lock = PTHREAD_MUTEX_INITIALIZER;

static void facts_key(const struct stat *st, struct bin_facts *f)
{
	f->dev = (uint64_t)st->st_dev;
	f->ino = (uint64_t)st->st_ino;
	f->size = (uint64_t)st->st_size;
	f->mtime_s = st->st_mtim.tv_sec;
	f->mtime_ns = st->st_mtim.tv_nsec;
	f->ctime_s = st->st_ctim.tv_sec;
	f->ctime_ns = st->st_ctim.tv_nsec;
}

static int facts_same_file(const struct bin_facts *a, const struct bin_facts *b)
{
	return a->used && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_s == b->mtime_s && a->mtime_ns == b->mtime_ns && a->ctime_s == b->ctime_s &&
	       a->ctime_ns == b->ctime_ns;
}

/* Read the facts of the ELF file e (the one reader, elf_file.h). */
static void facts_read(struct elfsym *e, struct bin_facts *f)
{
	uint64_t v, size;

	f->type = elfsym_type(e);
	if (!elfsym_lookup(e, "_PyRuntime", &f->runtime_vaddr, &size) ||
	    !elfsym_section(e, ".PyRuntime", &f->runtime_vaddr, &size)) {
		f->kind = FACTS_PYTHON;
	} else if (!elfsym_lookup(e, "Py_Initialize", &v, NULL)) {
		/* Python 2 and 3.6 have no _PyRuntime; recognize them so the
		 * user hears "unsupported version", not "not Python". */
		f->kind = FACTS_OLD_PYTHON;
		f->old_major = elfsym_lookup(e, "PyString_Type", &v, NULL) ? 3 : 2;
		return;
	} else {
		f->kind = FACTS_OTHER;
		return;
	}
	f->has_base = !elfsym_load_base(e, &f->elf_base);
	for (int i = 0; i < NSYMS; i++)
		if (!elfsym_lookup(e, fact_syms[i], &f->sym[i], NULL))
			f->sym_found |= 1u << i;
	f->has_usdt = elfsym_has_usdt(e);
	for (int i = 0; i < PY_THREAD_HOOK_NAMES; i++)
		if (elfsym_lookup(e, py_thread_hook_names[i], &v, NULL) ||
		    elfsym_file_offset(e, v, &f->hook_off[i]))
			f->hook_off[i] = 0;
	if (elfsym_build_id(e, f->build_id, sizeof(f->build_id)))
		f->build_id[0] = '\0';
	if (!(f->sym_found & (1u << SYM_PY_VERSION)) ||
	    elfsym_read(e, f->sym[SYM_PY_VERSION], &f->file_version, sizeof(f->file_version)))
		f->file_version = 0;
	f->symbols_version = version_from_symbols(e);
}

/*
 * The facts of the file open on fd (taken over: closed here), from the
 * cache or read now. -1 if fd cannot be looked at; a file that is not ELF
 * is a fact too (FACTS_NOT_ELF), so a host full of shell scripts' and
 * daemons' executables is read once per file, not once per process.
 */
static int facts_of(int fd, const char *host, struct bin_facts *out)
{
	struct bin_facts key = {0}, *slot = NULL;
	struct diag od = {0};
	struct elfsym *e;
	struct stat st;

	if (fstat(fd, &st)) {
		close(fd);
		return -1;
	}
	facts_key(&st, &key);
	pthread_mutex_lock(&facts_lock);
	for (int i = 0; i < FACTS_CACHE; i++)
		if (facts_same_file(&facts_cache[i], &key)) {
			facts_cache[i].used = ++facts_tick;
			*out = facts_cache[i];
			facts_stats.hits++;
			pthread_mutex_unlock(&facts_lock);
			close(fd);
			return 0;
		}
	pthread_mutex_unlock(&facts_lock);

	e = elfsym_open(fd, host, &od); /* takes fd */
	if (e) {
		facts_read(e, &key);
		elfsym_close(e);
	} else {
		key.kind = FACTS_NOT_ELF;
	}
	pthread_mutex_lock(&facts_lock);
	facts_stats.misses++;
	for (int i = 0; i < FACTS_CACHE; i++)
		if (!slot || facts_cache[i].used < slot->used)
			slot = &facts_cache[i];
	key.used = ++facts_tick;
	*slot = key;
	pthread_mutex_unlock(&facts_lock);
	*out = key;
	return 0;
}

void py_binary_cache_get_stats(struct py_binary_cache_stats *st)
{
	pthread_mutex_lock(&facts_lock);
	*st = facts_stats;
	pthread_mutex_unlock(&facts_lock);
}

static uint64_t sym_addr(const struct bin_facts *f, int i, uint64_t bias)
{
	return f->sym_found & (1u << i) ? f->sym[i] + bias : 0;
}

static int fill(pid_t pid, const struct proc_maps *m, const struct candidate *c,
		const struct bin_facts *f, struct py_binary *b, struct diag *d)
{
	uint64_t base = 0;
	int major, minor;

	b->is_shared_lib = !c->is_exe;
	if (f->type == ET_EXEC) {
		b->load_bias = 0;
	} else {
		if (proc_maps_file_base(m, c->map->path, &base) || !f->has_base)
			return diag_set(d, EXIT_FAIL, "pid %d: %s has no loadable segment",
					(int)pid, b->path);
		b->load_bias = base - f->elf_base;
	}
	b->runtime_addr = f->runtime_vaddr + b->load_bias;
	b->code_type_addr = sym_addr(f, SYM_CODE, b->load_bias);
	b->none_addr = sym_addr(f, SYM_NONE, b->load_bias);
	b->frame_type_addr = sym_addr(f, SYM_FRAME, b->load_bias);
	b->unicode_type_addr = sym_addr(f, SYM_UNICODE, b->load_bias);
	b->has_usdt = f->has_usdt;
	memcpy(b->hook_off, f->hook_off, sizeof(b->hook_off));
	snprintf(b->build_id, sizeof(b->build_id), "%s", f->build_id);

	/* Py_Version as the running process has it, else as the file has it;
	 * they differ only if the file was replaced under the process. It is
	 * a "const unsigned long", whose low 4 bytes (little-endian x86) hold
	 * the value whatever its width. */
	if (f->sym_found & (1u << SYM_PY_VERSION)) {
		struct mem_reader r;
		uint32_t ver = 0;

		b->py_version_addr = sym_addr(f, SYM_PY_VERSION, b->load_bias);
		mem_reader_init_pid(&r, pid);
		if (mem_read(&r, &ver, sizeof(ver), b->py_version_addr) ||
		    !py_version_plausible(ver))
			ver = f->file_version;
		if (py_version_plausible(ver))
			b->version_hex = ver;
	}
	if (!b->version_hex) {
		b->version_approximate = 1;
		if (!py_version_from_name(c->map->path, &major, &minor))
			b->version_hex = PY_VERSION(major, minor);
		else
			b->version_hex = f->symbols_version;
	}
	if (py_version_too_old(b->version_hex))
		return diag_set(
		    d, EXIT_UNSUPPORTED,
		    "pid %d: Python %u.%u is not supported (bpfpy reads 3.%d and newer)", (int)pid,
		    PY_MAJOR(b->version_hex), PY_MINOR(b->version_hex), PY_OFFSETS_MIN_MINOR);
	return 0;
}

uint64_t py_binary_hook_offset(const struct py_binary *b, const char *name)
{
	for (int i = 0; name && i < PY_THREAD_HOOK_NAMES; i++)
		if (!strcmp(py_thread_hook_names[i], name))
			return b->hook_off[i];
	return 0;
}

int py_binary_find(pid_t pid, struct py_binary *b, struct diag *d)
{
	struct candidate cand[MAX_CANDIDATES];
	struct diag open_err = {0};
	struct proc_maps m;
	const struct proc_map *exe;
	char comm[64];
	size_t ncand = 0;
	int old_python = 0, old_named = 0, old_major = 0, old_minor = 0, rc = -1;

	memset(b, 0, sizeof(*b));
	if (pid <= 0)
		return diag_set(d, EXIT_NO_PROCESS, "pid %d: no such process", (int)pid);
	if (proc_maps_read(pid, &m, d))
		return -1;
	proc_comm(pid, comm, sizeof(comm));
	if (!m.n) {
		if (proc_state(pid, 0) == 'Z')
			diag_set(d, EXIT_NO_PROCESS, "pid %d (%s): has exited (a zombie)", (int)pid,
				 comm);
		else
			diag_set(d, EXIT_NOT_PYTHON,
				 "pid %d (%s): not a CPython process (a kernel thread: no memory "
				 "mappings)",
				 (int)pid, comm);
		goto out;
	}
	exe = find_exe(pid, &m);
	if (exe)
		add_candidate(cand, &ncand, exe, 1);
	for (size_t i = 0; i < m.n; i++)
		if (proc_map_is_file(&m.v[i]) && !strncmp(base_name(m.v[i].path), "libpython", 9))
			add_candidate(cand, &ncand, &m.v[i], 0);

	for (size_t i = 0; i < ncand; i++) {
		char host[PATH_MAX];
		struct diag od = {0};
		struct bin_facts f;
		int fd;

		fd = open_mapped(pid, cand[i].map, host, sizeof(host), &od);
		if (fd < 0) {
			if (od.code == EXIT_NO_PROCESS) {
				if (d)
					*d = od;
				goto out;
			}
			if (!open_err.code)
				open_err = od;
			continue;
		}
		if (facts_of(fd, host, &f))
			continue;
		if (f.kind == FACTS_PYTHON) {
			snprintf(b->path, sizeof(b->path), "%s", host);
			rc = fill(pid, &m, &cand[i], &f, b, d);
			if (!rc)
				proc_ns_note(pid, b->ns_note, sizeof(b->ns_note));
			goto out;
		}
		if (f.kind == FACTS_OLD_PYTHON && !old_python) {
			old_python = 1;
			old_named =
			    !py_version_from_name(cand[i].map->path, &old_major, &old_minor);
			if (!old_named)
				old_major = f.old_major;
		}
	}
	if (old_python && old_named)
		diag_set(d, EXIT_UNSUPPORTED,
			 "pid %d: Python %d.%d is not supported (bpfpy reads 3.8 and newer)",
			 (int)pid, old_major, old_minor);
	else if (old_python)
		diag_set(d, EXIT_UNSUPPORTED,
			 "pid %d: Python %d (older than 3.7) is not supported (bpfpy reads 3.8 and "
			 "newer)",
			 (int)pid, old_major);
	else if (open_err.code == EXIT_PERMISSION && d)
		*d = open_err; /* we could not look, so we cannot say "not Python" */
	else
		diag_set(d, EXIT_NOT_PYTHON,
			 "pid %d (%s): not a CPython process (no _PyRuntime in its executable or "
			 "libpython)",
			 (int)pid, comm);
out:
	proc_maps_free(&m);
	return rc;
}
