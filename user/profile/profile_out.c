// SPDX-License-Identifier: MIT
/*
 * Choosing a format and creating output files without harm. bpfpy runs as
 * root, often in a directory others can write, so an output path is never
 * opened in place: a symlink planted there must not make root overwrite
 * /etc/shadow, and an existing profile must not be lost to a typo.
 */
#include "profile.h"
#include "signals.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcasecmp(s + n - m, suffix);
}

const char *profile_format_from_path(const char *path)
{
	static const struct {
		const char *ext, *format;
	} map[] = {
	    {".folded", "collapsed"}, {".collapsed", "collapsed"},
	    {".txt", "collapsed"},    {".json", "speedscope"},
	    {".pb.gz", "pprof"},      {".pprof", "pprof"},
	    {".svg", "svg"},	      {".raw", "raw"},
	};

	if (!path)
		return NULL;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (ends_with(path, map[i].ext))
			return map[i].format;
	return NULL;
}

/* A message naming path and the cause; EXIT_USAGE, since the fix is another
 * path or --force, whatever errno says. */
static int path_error(struct diag *d, int err, const char *what, const char *path)
{
	diag_set(d, EXIT_USAGE, "%s %s: %s", what, path, strerror(err));
	if (d)
		d->sys_errno = err;
	return -1;
}

int out_file_open(struct out_file *of, const char *path, int force, struct diag *d)
{
	const char *slash = strrchr(path, '/');
	size_t dirlen = slash ? (size_t)(slash - path + 1) : 0;
	struct stat st;
	int fd = -1;

	memset(of, 0, sizeof(*of));
	if (!*path || (slash && !slash[1]))
		return diag_set(d, EXIT_USAGE, "output path '%s' names no file", path);
	/* A device or a FIFO (-o /dev/null, -o /dev/stdout, a pipe) is written
	 * in place: replacing it with a renamed temp file would destroy it. */
	if (!stat(path, &st) && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !lstat(path, &st) &&
	    !S_ISLNK(st.st_mode)) {
		fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || !(of->f = fdopen(fd, "w"))) {
			int err = errno;

			if (fd >= 0)
				close(fd);
			return path_error(d, err, "cannot write", path);
		}
		of->path = strdup(path);
		return 0;
	}
	/* Refused early, so that a long recording does not end in a refusal;
	 * the link(2) in out_file_commit() closes the race. */
	if (!force && !lstat(path, &st))
		return diag_set(d, EXIT_USAGE, "%s already exists%s (use --force to replace it)",
				path, S_ISLNK(st.st_mode) ? " as a symlink" : "");
	if (force && !lstat(path, &st) && S_ISDIR(st.st_mode))
		return path_error(d, EISDIR, "cannot replace", path);
	of->path = strdup(path);
	of->tmp = malloc(strlen(path) + 32);
	if (!of->path || !of->tmp) {
		out_file_abort(of);
		return diag_errno(d, ENOMEM, "output %s", path);
	}
	/* A hidden name in the same directory, so the final rename is atomic
	 * and a crash leaves nothing that looks like a profile. */
	for (int tries = 0; tries < 100 && fd < 0; tries++) {
		uint32_t r = 0;

		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
			r = (uint32_t)getpid() * 2654435761u + (uint32_t)tries;
		sprintf(of->tmp, "%.*s.%s.%08x.tmp", (int)dirlen, path, path + dirlen, r);
		fd = open(of->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		if (fd < 0 && errno != EEXIST)
			break;
	}
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
	signals_track_path(of->tmp, 0); /* a signal that ends us removes it */
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

int profile_write(const struct profile *p, const char *path, const char *format,
		  const struct profile_out_opts *opts, struct diag *d)
{
	static const struct profile_out_opts defaults;
	struct out_file of;
	int rc;

	if (!opts)
		opts = &defaults;
	if (!format) {
		format = profile_format_from_path(path);
		if (!format)
			return diag_set(d, EXIT_USAGE,
					"%s: cannot tell the format from the extension (use "
					".folded, .json, .pb.gz, .svg or .raw, or name a format)",
					path);
	}
	if (strcmp(format, "collapsed") && strcmp(format, "folded") &&
	    strcmp(format, "speedscope") && strcmp(format, "pprof") && strcmp(format, "svg") &&
	    strcmp(format, "raw"))
		return diag_set(
		    d, EXIT_USAGE,
		    "unknown output format '%s' (collapsed, speedscope, pprof, svg, raw)", format);
	if (p->oom)
		return diag_errno(d, ENOMEM, "%s: the profile is incomplete", path);
	if (out_file_open(&of, path, opts->force, d))
		return -1;
	if (!strcmp(format, "collapsed") || !strcmp(format, "folded"))
		rc = collapsed_write(of.f, p, opts, d);
	else if (!strcmp(format, "speedscope"))
		rc = speedscope_write(of.f, p, opts, d);
	else if (!strcmp(format, "pprof"))
		rc = pprof_write(of.f, p, opts, d);
	else if (!strcmp(format, "svg"))
		rc = svg_write(of.f, p, opts, d);
	else
		rc = raw_write_profile(of.f, p, d);
	if (rc) {
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
