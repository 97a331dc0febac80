// SPDX-License-Identifier: MIT
#include "proc_maps.h"

#include "diag.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* vm.max_map_count defaults to 65530; allow far more, but not unbounded, so a
 * hostile or runaway input cannot make us allocate without limit. */
#define MAPS_MAX_ENTRIES (1u << 22)
#define MAPS_MAX_LINE	 (PATH_MAX + 256)

static const char deleted_suffix[] = " (deleted)";

static int parse_hex(char **s, uint64_t *out, char stop)
{
	char *end;
	unsigned long long v;

	if (!isxdigit((unsigned char)**s))
		return -1;
	errno = 0;
	v = strtoull(*s, &end, 16);
	if (errno || *end != stop)
		return -1;
	*out = v;
	*s = end + (stop ? 1 : 0);
	return 0;
}

int proc_maps_parse_line(char *line, struct proc_map *out)
{
	char *s = line, *end;
	uint64_t maj, min;
	unsigned long long ino;
	size_t n;

	memset(out, 0, sizeof(*out));
	if (parse_hex(&s, &out->start, '-') || parse_hex(&s, &out->end, ' '))
		return -1;
	if (out->end < out->start)
		return -1;
	for (int i = 0; i < 4; i++) {
		if (!*s || *s == ' ')
			return -1;
		out->perms[i] = *s++;
	}
	if (*s++ != ' ')
		return -1;
	if (parse_hex(&s, &out->offset, ' ') || parse_hex(&s, &maj, ':') ||
	    parse_hex(&s, &min, ' '))
		return -1;
	if (maj > UINT32_MAX || min > UINT32_MAX)
		return -1;
	out->dev_major = (uint32_t)maj;
	out->dev_minor = (uint32_t)min;
	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	ino = strtoull(s, &end, 10);
	if (errno || (*end && *end != ' ' && *end != '\n'))
		return -1;
	out->inode = ino;
	s = end;
	/* The kernel pads the inode column with spaces; the path is the rest of
	 * the line and may itself contain spaces. */
	while (*s == ' ')
		s++;
	n = strlen(s);
	if (n && s[n - 1] == '\n')
		s[--n] = '\0';
	if (n >= sizeof(deleted_suffix) &&
	    !strcmp(s + n - (sizeof(deleted_suffix) - 1), deleted_suffix)) {
		s[n - (sizeof(deleted_suffix) - 1)] = '\0';
		out->deleted = 1;
	}
	out->path = s;
	return 0;
}

void proc_maps_free(struct proc_maps *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

int proc_maps_parse(FILE *f, struct proc_maps *m, struct diag *d)
{
	char *line = NULL;
	size_t linecap = 0, lineno = 0;
	ssize_t len;
	int err;

	memset(m, 0, sizeof(*m));
	errno = 0;
	while ((len = getline(&line, &linecap, f)) > 0) {
		struct proc_map p;

		lineno++;
		if (len > MAPS_MAX_LINE || proc_maps_parse_line(line, &p)) {
			diag_set(d, EXIT_FAIL, "maps line %zu is malformed", lineno);
			goto fail;
		}
		if (m->n == m->cap) {
			size_t cap = m->cap ? m->cap * 2 : 64;
			struct proc_map *v;

			if (cap > MAPS_MAX_ENTRIES) {
				diag_set(d, EXIT_FAIL, "more than %u mappings", MAPS_MAX_ENTRIES);
				goto fail;
			}
			v = realloc(m->v, cap * sizeof(*v));
			if (!v) {
				diag_errno(d, ENOMEM, "maps: %zu entries", cap);
				goto fail;
			}
			m->v = v;
			m->cap = cap;
		}
		p.path = strdup(p.path);
		if (!p.path) {
			diag_errno(d, ENOMEM, "maps line %zu", lineno);
			goto fail;
		}
		m->v[m->n++] = p;
		errno = 0;
	}
	/* getline() says -1 both at EOF and on error; only errno tells. ESRCH
	 * here means the process exited while we read. */
	err = errno;
	if (len < 0 && err) {
		diag_errno(d, err, "reading maps");
		goto fail;
	}
	free(line);
	return 0;
fail:
	free(line);
	proc_maps_free(m);
	return -1;
}

int proc_maps_read(pid_t pid, struct proc_maps *m, struct diag *d)
{
	char path[64];
	FILE *f;
	int rc;

	memset(m, 0, sizeof(*m));
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if (pid <= 0)
		return diag_set(d, EXIT_NO_PROCESS, "pid %d: no such process", (int)pid);
	f = fopen(path, "re");
	if (!f) {
		int err = errno;

		if (err == ENOENT || err == ESRCH)
			return diag_set(d, EXIT_NO_PROCESS, "pid %d: no such process", (int)pid);
		return diag_errno(d, err, "pid %d: cannot open %s", (int)pid, path);
	}
	rc = proc_maps_parse(f, m, d);
	fclose(f);
	if (rc) {
		if (d && d->sys_errno == ESRCH)
			return diag_set(d, EXIT_NO_PROCESS, "pid %d: exited while reading its maps",
					(int)pid);
		diag_prefix(d, "pid %d: ", (int)pid);
	}
	return rc;
}

int proc_map_is_file(const struct proc_map *p)
{
	return p->inode != 0 && p->path && p->path[0] == '/';
}

size_t proc_maps_of_file(const struct proc_maps *m, const char *path, size_t *idx, size_t max)
{
	size_t count = 0;

	/* The kernel lists mappings in address order, so the result is too. */
	for (size_t i = 0; i < m->n; i++) {
		if (!proc_map_is_file(&m->v[i]) || strcmp(m->v[i].path, path))
			continue;
		if (count < max)
			idx[count] = i;
		count++;
	}
	return count;
}

int proc_maps_file_base(const struct proc_maps *m, const char *path, uint64_t *base)
{
	int found = 0;

	for (size_t i = 0; i < m->n; i++) {
		if (!proc_map_is_file(&m->v[i]) || strcmp(m->v[i].path, path))
			continue;
		if (!found || m->v[i].start < *base)
			*base = m->v[i].start;
		found = 1;
	}
	return found ? 0 : -1;
}
