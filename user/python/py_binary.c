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

static uint64_t sym_addr(struct elfsym *e, const char *name, uint64_t bias)
{
	uint64_t v;

	return elfsym_lookup(e, name, &v, NULL) ? 0 : v + bias;
}

static int fill(pid_t pid, const struct proc_maps *m, const struct candidate *c, struct elfsym *e,
		uint64_t runtime_vaddr, struct py_binary *b, struct diag *d)
{
	uint64_t base = 0, elf_base = 0, v;
	int major, minor;

	b->is_shared_lib = !c->is_exe;
	if (elfsym_type(e) == ET_EXEC) {
		b->load_bias = 0;
	} else {
		if (proc_maps_file_base(m, c->map->path, &base) || elfsym_load_base(e, &elf_base))
			return diag_set(d, EXIT_FAIL, "pid %d: %s has no loadable segment",
					(int)pid, b->path);
		b->load_bias = base - elf_base;
	}
	b->runtime_addr = runtime_vaddr + b->load_bias;
	b->code_type_addr = sym_addr(e, "PyCode_Type", b->load_bias);
	b->none_addr = sym_addr(e, "_Py_NoneStruct", b->load_bias);
	b->frame_type_addr = sym_addr(e, "PyFrame_Type", b->load_bias);
	b->unicode_type_addr = sym_addr(e, "PyUnicode_Type", b->load_bias);
	b->has_usdt = elfsym_has_usdt(e);
	if (elfsym_build_id(e, b->build_id, sizeof(b->build_id)))
		b->build_id[0] = '\0';

	/* Py_Version as the running process has it, else as the file has it;
	 * they differ only if the file was replaced under the process. It is
	 * a "const unsigned long", whose low 4 bytes (little-endian x86) hold
	 * the value whatever its width. */
	if (!elfsym_lookup(e, "Py_Version", &v, NULL)) {
		struct mem_reader r;
		uint32_t ver = 0;

		b->py_version_addr = v + b->load_bias;
		mem_reader_init_pid(&r, pid);
		if (mem_read(&r, &ver, sizeof(ver), b->py_version_addr) ||
		    !py_version_plausible(ver)) {
			if (elfsym_read(e, v, &ver, sizeof(ver)))
				ver = 0;
		}
		if (py_version_plausible(ver))
			b->version_hex = ver;
	}
	if (!b->version_hex) {
		b->version_approximate = 1;
		if (!py_version_from_name(c->map->path, &major, &minor))
			b->version_hex = PY_VERSION(major, minor);
		else
			b->version_hex = version_from_symbols(e);
	}
	if (py_version_too_old(b->version_hex))
		return diag_set(
		    d, EXIT_UNSUPPORTED,
		    "pid %d: Python %u.%u is not supported (bpfpy reads 3.%d and newer)", (int)pid,
		    PY_MAJOR(b->version_hex), PY_MINOR(b->version_hex), PY_OFFSETS_MIN_MINOR);
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
		struct elfsym *e;
		uint64_t rt, size;
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
		e = elfsym_open(fd, host, &od);
		if (!e)
			continue; /* not ELF (a script's interpreter is always ELF) */
		if (!elfsym_lookup(e, "_PyRuntime", &rt, &size) ||
		    !elfsym_section(e, ".PyRuntime", &rt, &size)) {
			snprintf(b->path, sizeof(b->path), "%s", host);
			rc = fill(pid, &m, &cand[i], e, rt, b, d);
			elfsym_close(e);
			if (!rc)
				proc_ns_note(pid, b->ns_note, sizeof(b->ns_note));
			goto out;
		}
		/* Python 2 and 3.6 have no _PyRuntime; recognize them so the
		 * user hears "unsupported version", not "not Python". */
		if (!elfsym_lookup(e, "Py_Initialize", &rt, NULL) && !old_python) {
			old_python = 1;
			old_named =
			    !py_version_from_name(cand[i].map->path, &old_major, &old_minor);
			if (!old_named)
				old_major = elfsym_lookup(e, "PyString_Type", &rt, NULL) ? 3 : 2;
		}
		elfsym_close(e);
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
