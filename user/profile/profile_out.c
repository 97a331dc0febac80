// SPDX-License-Identifier: MIT
/*
 * Choosing a format and creating output files without harm. bpfpy runs as
 * root, often in a directory others can write, so an output path is never
 * opened in place: a symlink planted there must not make root overwrite
 * /etc/shadow, and an existing profile must not be lost to a typo.
 */
#include "profile.h"
#include "signals.h"
#include "text_escape.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* A message naming path and the cause; EXIT_USAGE, since the fix is another
 * path or --force, whatever errno says. */
static int path_error(struct diag *d, int err, const char *what, const char *path)
{
	diag_set(d, EXIT_USAGE, "%s %s: %s", what, path, strerror(err));
	if (d)
		d->sys_errno = err;
	return -1;
}

/* The fd that path names when it is, or links (at most 8 hops) to,
 * /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N or
 * /proc/thread-self/fd/N: the user named one of our own descriptors, as
 * set up by their shell, so that is what gets written. -1 otherwise. */
static int named_fd(const char *path)
{
	char cur[PATH_MAX], next[PATH_MAX];

	snprintf(cur, sizeof(cur), "%s", path);
	for (int hop = 0; hop <= 8; hop++) {
		const char *n = NULL;
		char *end;
		ssize_t len;
		long fd;

		if (!strcmp(cur, "/dev/stdout"))
			return 1;
		if (!strcmp(cur, "/dev/stderr"))
			return 2;
		if (!strncmp(cur, "/dev/fd/", 8))
			n = cur + 8;
		else if (!strncmp(cur, "/proc/self/fd/", 14))
			n = cur + 14;
		else if (!strncmp(cur, "/proc/thread-self/fd/", 21))
			n = cur + 21;
		if (n && *n) {
			fd = strtol(n, &end, 10);
			if (!*end && fd >= 0 && fd < 1 << 20)
				return fcntl((int)fd, F_GETFD) < 0 ? -1 : (int)fd;
			return -1;
		}
		len = readlink(cur, next, sizeof(next) - 1);
		if (len <= 0)
			return -1;
		next[len] = 0;
		if (next[0] != '/') {
			/* Relative to the link's directory. */
			const char *slash = strrchr(cur, '/');
			int dl = slash ? (int)(slash - cur + 1) : 0;
			char joined[PATH_MAX];

			if (snprintf(joined, sizeof(joined), "%.*s%s", dl, cur, next) >=
			    (int)sizeof(joined))
				return -1;
			snprintf(next, sizeof(next), "%s", joined);
		}
		snprintf(cur, sizeof(cur), "%s", next);
	}
	return -1;
}

/* The kernel's protected_symlinks/protected_fifos rule: in a sticky
 * world-writable directory (/tmp), a symlink, FIFO or device that belongs
 * neither to us nor to the directory's owner was planted by someone else,
 * and is never followed or written, --force or not. */
static int planted(const char *path, const struct stat *st, struct diag *d)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	struct stat ds;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	if (stat(dir, &ds) || !(ds.st_mode & S_ISVTX) || !(ds.st_mode & S_IWOTH) ||
	    st->st_uid == geteuid() || st->st_uid == ds.st_uid)
		return 0;
	diag_set(d, EXIT_USAGE,
		 "%s: a %s of uid %u in the sticky world-writable directory %s: refused, even "
		 "with --force",
		 path,
		 S_ISLNK(st->st_mode)	 ? "symlink"
		 : S_ISFIFO(st->st_mode) ? "FIFO"
					 : "device",
		 (unsigned)st->st_uid, dir);
	return 1;
}

static int open_direct(struct out_file *of, int fd, const char *path, struct diag *d)
{
	of->f = fdopen(fd, "w");
	of->path = strdup(path);
	if (!of->f || !of->path) {
		int err = errno;

		if (of->f)
			fclose(of->f);
		else
			close(fd);
		free(of->path);
		memset(of, 0, sizeof(*of));
		return path_error(d, err, "cannot write", path);
	}
	return 0;
}

/*
 * With --force, an existing path st that is a symlink, a FIFO or a
 * character device. 1: opened in place, 0: replace it like a file, -1:
 * refused (d set). A FIFO or device is opened O_NONBLOCK, so a FIFO with
 * no reader fails at once (ENXIO) instead of hanging, then made blocking
 * for the writes.
 */
static int open_in_place(struct out_file *of, const char *path, const struct stat *st,
			 struct diag *d)
{
	int link = S_ISLNK(st->st_mode), fd;
	struct stat ts;

	if (planted(path, st, d))
		return -1;
	if (link) {
		int nfd = named_fd(path);

		if (nfd >= 0) {
			fd = fcntl(nfd, F_DUPFD_CLOEXEC, 3);
			if (fd < 0)
				return path_error(d, errno, "cannot write", path);
			return open_direct(of, fd, path, d) ? -1 : 1;
		}
		/* A link to a file, a directory or nowhere is replaced, never
		 * followed: only FIFOs and devices are written through it. */
		if (stat(path, &ts) || !(S_ISFIFO(ts.st_mode) || S_ISCHR(ts.st_mode)))
			return 0;
	}
	fd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (link ? 0 : O_NOFOLLOW));
	if (fd < 0 && errno == ENXIO)
		return diag_set(d, EXIT_USAGE, "%s: a FIFO that no process reads: not written",
				path);
	if (fd < 0)
		return path_error(d, errno, "cannot write", path);
	/* Swapped since lstat (no O_CREAT, no O_TRUNC: nothing was changed):
	 * anything but a FIFO or a device is replaced like a file. */
	if (fstat(fd, &ts) || !(S_ISFIFO(ts.st_mode) || S_ISCHR(ts.st_mode)) ||
	    (!link && (ts.st_dev != st->st_dev || ts.st_ino != st->st_ino))) {
		close(fd);
		return 0;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)) {
		int err = errno;

		close(fd);
		return path_error(d, err, "cannot write", path);
	}
	return open_direct(of, fd, path, d) ? -1 : 1;
}

int out_file_open(struct out_file *of, const char *path, int force, struct diag *d)
{
	const char *slash = strrchr(path, '/');
	size_t dirlen = slash ? (size_t)(slash - path + 1) : 0;
	struct stat st;
	sigset_t held;
	int fd = -1;

	memset(of, 0, sizeof(*of));
	if (!*path || (slash && !slash[1]))
		return diag_set(d, EXIT_USAGE, "output path '%s' names no file", path);
	if (!lstat(path, &st)) {
		/* Refused early, so that a long recording does not end in a
		 * refusal; the link(2) in out_file_commit() closes the race. */
		if (!force)
			return diag_set(d, EXIT_USAGE,
					"%s already exists%s (use --force to replace it)", path,
					S_ISLNK(st.st_mode)    ? " as a symlink"
					: S_ISFIFO(st.st_mode) ? " as a FIFO"
					: S_ISCHR(st.st_mode)  ? " as a device"
							       : "");
		if (S_ISDIR(st.st_mode))
			return path_error(d, EISDIR, "cannot replace", path);
		if (S_ISBLK(st.st_mode) || S_ISSOCK(st.st_mode))
			return diag_set(d, EXIT_USAGE, "%s: a %s: not written", path,
					S_ISBLK(st.st_mode) ? "block device" : "socket");
		if (S_ISLNK(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
			int rc = open_in_place(of, path, &st, d);

			if (rc)
				return rc > 0 ? 0 : -1;
		}
	}
	of->path = strdup(path);
	of->tmp = malloc(strlen(path) + 32);
	if (!of->path || !of->tmp) {
		out_file_abort(of);
		return diag_errno(d, ENOMEM, "output %s", path);
	}
	/* A hidden name in the same directory, so the final rename is atomic
	 * and a crash leaves nothing that looks like a profile. A signal that
	 * ends us removes it: held from its creation until it is tracked (CI:
	 * a SIGQUIT at once left one behind). */
	signals_block(&held);
	for (int tries = 0; tries < 100 && fd < 0; tries++) {
		uint32_t r = 0;

		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
			r = (uint32_t)getpid() * 2654435761u + (uint32_t)tries;
		sprintf(of->tmp, "%.*s.%s.%08x.tmp", (int)dirlen, path, path + dirlen, r);
		fd = open(of->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd >= 0)
		signals_track_path(of->tmp, 0);
	signals_restore(&held);
	if (fd < 0) {
		int err = errno;

		free(of->tmp);
		of->tmp = NULL;
		out_file_abort(of);
		return path_error(d, err, "cannot create", path);
	}
	of->f = fdopen(fd, "w");
	if (!of->f) {
		int err = errno;

		close(fd);
		out_file_abort(of);
		return path_error(d, err, "cannot create", path);
	}
	of->force = force;
	return 0;
}

void out_file_abort(struct out_file *of)
{
	if (of->f)
		fclose(of->f);
	if (of->tmp)
		unlink(of->tmp);
	signals_untrack_path(of->tmp);
	free(of->tmp);
	free(of->path);
	memset(of, 0, sizeof(*of));
}

int out_file_commit(struct out_file *of, struct diag *d)
{
	int direct = !of->tmp; /* a device or FIFO, written in place */
	int bad = fflush(of->f) || ferror(of->f) || (!direct && fsync(fileno(of->f)));
	int err = errno;

	bad |= fclose(of->f) != 0;
	of->f = NULL;
	if (direct) {
		if (bad)
			path_error(d, err ? err : EIO, "cannot write", of->path);
		free(of->path);
		memset(of, 0, sizeof(*of));
		return bad ? -1 : 0;
	}
	if (bad) {
		path_error(d, err ? err : EIO, "cannot write", of->path);
		out_file_abort(of);
		return -1;
	}
	if (of->force) {
		/* rename(2) replaces the name, never what a symlink points to. */
		if (rename(of->tmp, of->path)) {
			path_error(d, errno, "cannot write", of->path);
			out_file_abort(of);
			return -1;
		}
	} else if (link(of->tmp, of->path)) {
		err = errno;
		/* Filesystems without hard links (vfat, some FUSE): a checked
		 * rename is the best left. */
		if ((err == EPERM || err == ENOTSUP || err == EOPNOTSUPP || err == ENOSYS) &&
		    access(of->path, F_OK) && errno == ENOENT && !rename(of->tmp, of->path))
			goto done;
		if (err == EEXIST)
			diag_set(d, EXIT_USAGE, "%s already exists (use --force to replace it)",
				 of->path);
		else
			path_error(d, err, "cannot write", of->path);
		out_file_abort(of);
		return -1;
	} else {
		unlink(of->tmp);
	}
done:
	signals_untrack_path(of->tmp);
	free(of->tmp);
	free(of->path);
	memset(of, 0, sizeof(*of));
	return 0;
}

void out_file_wrote(const char *cmd, const char *path, uint64_t samples, const char *format)
{
	fprintf(stderr, "bpfpy %s: wrote ", cmd);
	text_put(stderr, path);
	fprintf(stderr, " (%llu samples, %s)\n", (unsigned long long)samples, format);
}

int profile_write(const struct profile *p, const char *path, const char *format,
		  const struct profile_out_opts *opts, struct diag *d)
{
	const struct profile_format *fmt;
	struct out_file of;
	char *names;

	fmt = format ? profile_format_find(format, 0) : profile_format_for_path(path);
	if (!fmt) {
		names = profile_format_list(0, !format, 0);
		if (format)
			diag_set(d, EXIT_USAGE, "unknown output format '%s' (%s)", format,
				 names ? names : "");
		else
			diag_set(d, EXIT_USAGE,
				 "%s: cannot tell the format from the extension (%s; or name a "
				 "format)",
				 path, names ? names : "");
		free(names);
		return -1;
	}
	if (p->oom)
		return diag_errno(d, ENOMEM, "%s: the profile is incomplete", path);
	if (out_file_open(&of, path, opts ? opts->force : 0, d))
		return -1;
	if (profile_format_write(fmt, of.f, p, opts, d)) {
		diag_prefix(d, "%s: ", path);
		out_file_abort(&of);
		return -1;
	}
	return out_file_commit(&of, d);
}

void out_put_markup(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&apos;", f);
			break;
		default:
			/* Controls are not allowed in XML 1.0 at all. */
			putc((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f ? ' ' : c, f);
		}
	}
}
