// SPDX-License-Identifier: MIT
/*
 * The oracle's targets: which interpreter runs the snippets, where the
 * snippets are, and the life of one target process -- started pinned, with
 * its progress counter mapped, ended with SIGTERM (so a ground-truth snippet
 * can write its totals) and SIGKILL if it lingers. A target is never left
 * behind: it dies with us (PR_SET_PDEATHSIG) even if we are killed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "oracle_run.h"
#include "proc_maps.h"
#include "py_offsets.h"
#include "signals.h"

/* snprintf for paths: a cut path is an error (ENAMETOOLONG), never a file
 * name we silently did not mean. */
static int __attribute__((format(printf, 3, 4)))
fmt_path(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int oracle_pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

double oracle_host_busy(void)
{
	unsigned long long v[8] = {0};
	FILE *f = fopen("/proc/stat", "r");
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (n < 7)
		return 0;
	/* user nice system idle iowait irq softirq steal: all but idle, iowait */
	return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / sysconf(_SC_CLK_TCK);
}

double oracle_self_busy(void)
{
	struct rusage a, b;

	getrusage(RUSAGE_SELF, &a);
	getrusage(RUSAGE_CHILDREN, &b);
	return a.ru_utime.tv_sec + a.ru_utime.tv_usec / 1e6 + a.ru_stime.tv_sec +
	       a.ru_stime.tv_usec / 1e6 + b.ru_utime.tv_sec + b.ru_utime.tv_usec / 1e6 +
	       b.ru_stime.tv_sec + b.ru_stime.tv_usec / 1e6;
}

/* "3.12.1" -> comparable number. */
static long version_num(const char *v)
{
	int a = 0, b = 0, c = 0;

	sscanf(v, "%d.%d.%d", &a, &b, &c);
	return a * 1000000L + b * 1000L + c;
}

static int matches(const struct oracle_python *p, const char *want)
{
	size_t n = strlen(want);

	if (!strcmp(p->label, want) || !strcmp(p->version, want))
		return 1;
	if (!strncmp(p->label, want, n) && p->label[n] == '-')
		return 1;
	return !strncmp(p->version, want, n) && p->version[n] == '.';
}

/* Fallback when scripts/targets.sh is not installed: python3.X on PATH. */
static int scan_path(struct oracle_python *all, int max)
{
	const char *path = getenv("PATH");
	char dirs[4096], *save = NULL;
	int n = 0;

	snprintf(dirs, sizeof(dirs), "%s", path ? path : "/usr/local/bin:/usr/bin");
	for (int minor = PY_OFFSETS_MIN_MINOR; minor <= 20 && n < max; minor++) {
		strcpy(dirs, path ? path : "/usr/local/bin:/usr/bin");
		for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
			char exe[PATH_MAX];

			snprintf(exe, sizeof(exe), "%s/python3.%d", d, minor);
			if (access(exe, X_OK))
				continue;
			snprintf(all[n].version, sizeof(all[n].version), "3.%d", minor);
			snprintf(all[n].label, sizeof(all[n].label), "local-3.%d", minor);
			strcpy(all[n].root, "/");
			snprintf(all[n].python, sizeof(all[n].python), "%s", exe);
			n++;
			break;
		}
	}
	return n;
}

int oracle_find_python(const char *want, const char *data_dir, struct oracle_python *out,
		       struct diag *d)
{
	struct oracle_python all[64];
	char cmd[PATH_MAX + 64], line[4096];
	int n = 0, best = -1;
	FILE *f;

	memset(out, 0, sizeof(*out));
	if (want && strchr(want, '/')) {
		/* A path: ask the interpreter itself what it is. */
		snprintf(cmd, sizeof(cmd),
			 "'%s' -c 'import sys; print(sys.version.split()[0])' 2>/dev/null", want);
		f = popen(cmd, "r");
		if (!f || !fgets(line, sizeof(line), f) || pclose(f)) {
			if (f)
				pclose(f);
			return diag_set(d, EXIT_USAGE, "--python %s: not a runnable interpreter",
					want);
		}
		line[strcspn(line, "\n")] = 0;
		(void)fmt_path(out->version, sizeof(out->version), "%s", line);
		strcpy(out->label, "path");
		strcpy(out->root, "/");
		snprintf(out->python, sizeof(out->python), "%s", want);
		return 0;
	}
	snprintf(cmd, sizeof(cmd), "%s/scripts/targets.sh", data_dir);
	if (!access(cmd, X_OK)) {
		snprintf(cmd, sizeof(cmd), "'%s/scripts/targets.sh' --no-provision 2>/dev/null",
			 data_dir);
		f = popen(cmd, "r");
		while (f && n < 64 && fgets(line, sizeof(line), f)) {
			struct oracle_python *p = &all[n];

			line[strcspn(line, "\n")] = 0;
			if (sscanf(line, "%31[^\t]\t%63[^\t]\t%4095[^\t]\t%4095s", p->version,
				   p->label, p->root, p->python) == 4)
				n++;
		}
		if (f)
			pclose(f);
	}
	if (!n)
		n = scan_path(all, 64);
	for (int i = 0; i < n; i++) {
		if (want && !matches(&all[i], want))
			continue;
		if (best < 0 || version_num(all[i].version) >= version_num(all[best].version))
			best = i;
	}
	if (best < 0)
		return diag_set(d, EXIT_USAGE,
				want ? "--python %s: no such interpreter (see scripts/targets.sh)"
				     : "no CPython interpreter found%s",
				want ? want : "");
	*out = all[best];
	return 0;
}

const char *oracle_data_dir(const char *exe_dir, char *buf, size_t len)
{
	static const char *const rel[] = {"/..", "/../share/bpfpy"};
	const char *env = getenv("BPFPY_SNIPPETS");
	char p[PATH_MAX];

	if (env && *env) {
		snprintf(buf, len, "%s/..", env);
		return buf;
	}
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(p, sizeof(p), "%s%s/snippets/_oracle.py", exe_dir, rel[i]);
		if (!access(p, R_OK)) {
			snprintf(buf, len, "%s%s", exe_dir, rel[i]);
			return buf;
		}
	}
	snprintf(buf, len, "/usr/local/share/bpfpy");
	return buf;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

int oracle_list_cases(const char *dir, char names[][64], int max)
{
	DIR *dp = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!dp)
		return 0;
	while ((e = readdir(dp)) && n < max) {
		size_t l = strlen(e->d_name);

		/* bench_* cases are make bench's workloads, not accuracy cases:
		 * they run only when named. */
		if (l < 4 || l > 60 || e->d_name[0] == '_' || e->d_name[0] == '.' ||
		    strcmp(e->d_name + l - 3, ".py") || !strncmp(e->d_name, "bench_", 6))
			continue;
		snprintf(names[n], 64, "%.*s", (int)(l - 3), e->d_name);
		n++;
	}
	closedir(dp);
	qsort(names, (size_t)n, 64, cmp_name);
	return n;
}

/* The first line of the module docstring, after "name: ". */
static void read_operation(struct oracle_case *c)
{
	FILE *f = fopen(c->py, "r");
	char line[512], *p;

	strcpy(c->operation, "?");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		p = strstr(line, "\"\"\"");
		if (!p)
			continue;
		p += 3;
		if (!strncmp(p, c->name, strlen(c->name)) && p[strlen(c->name)] == ':')
			p += strlen(c->name) + 1;
		while (*p == ' ')
			p++;
		p[strcspn(p, "\n")] = 0;
		if (*p && p[strlen(p) - 1] == '.')
			p[strlen(p) - 1] = 0;
		snprintf(c->operation, sizeof(c->operation), "%s", *p ? p : "?");
		break;
	}
	fclose(f);
}

int oracle_load_case(const char *name_or_path, const char *dir, struct oracle_case *c,
		     struct diag *d)
{
	char rules[PATH_MAX + 8];
	const char *base;
	size_t l;

	memset(c, 0, sizeof(*c));
	if (strchr(name_or_path, '/') || strstr(name_or_path, ".py")) {
		if (!realpath(name_or_path, c->py))
			return diag_errno(d, errno, "--snippet %s", name_or_path);
	} else {
		snprintf(c->py, sizeof(c->py), "%s/%s.py", dir, name_or_path);
		if (access(c->py, R_OK))
			return diag_set(d, EXIT_USAGE,
					"--snippet %s: no %s (snippets directory: "
					"set BPFPY_SNIPPETS)",
					name_or_path, c->py);
	}
	base = strrchr(c->py, '/') ? strrchr(c->py, '/') + 1 : c->py;
	l = strlen(base);
	if (l < 4 || strcmp(base + l - 3, ".py"))
		return diag_set(d, EXIT_USAGE, "--snippet %s: expected a .py file", name_or_path);
	snprintf(c->name, sizeof(c->name), "%.*s", (int)(l - 3), base);
	snprintf(rules, sizeof(rules), "%.*s.rules", (int)(strlen(c->py) - 3), c->py);
	/* Any program runs as it is: without NAME.rules beside it nothing is
	 * impossible and the case is judged by its distribution only (its
	 * heading says so). A rules file that exists but cannot be read is
	 * still an error. */
	if (access(rules, F_OK) && errno == ENOENT) {
		if (rules_parse("", rules, base, &c->rules, d))
			return -1;
		c->no_rules = 1;
	} else if (rules_load(rules, &c->rules, d)) {
		return -1;
	}
	/* _oracle.py beside the snippet, else the shipped one. */
	snprintf(c->dir, sizeof(c->dir), "%.*s", (int)(base - c->py - 1), c->py);
	(void)fmt_path(rules, sizeof(rules), "%s/_oracle.py", c->dir);
	if (access(rules, R_OK))
		snprintf(c->dir, sizeof(c->dir), "%s", dir);
	read_operation(c);
	return 0;
}

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	/* O_NONBLOCK: a file swapped for a FIFO after the caller's stat
	 * must not block us. */
	int in = open(from, O_RDONLY | O_CLOEXEC | O_NONBLOCK), out;
	ssize_t n;

	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
	close(in);
	close(out);
	return n < 0 ? -1 : 0;
}

/* What a chroot target is given of its program's directory (README,
 * "Any Python file"): everything but hidden entries and __pycache__, up to
 * these bounds; past one, the run is refused rather than half-copied. The
 * depth keeps the copy within what signals_rmtree removes. */
#define PROG_COPY_MAX_BYTES (64ull << 20)
#define PROG_COPY_MAX_FILES 2000
#define PROG_COPY_MAX_DEPTH 4

struct tree_budget {
	unsigned long long bytes;
	int files;
	const char *top; /* for the message */
};

static int copy_tree(const char *from, const char *to, int depth, struct tree_budget *b,
		     struct diag *d)
{
	DIR *dp = opendir(from);
	struct dirent *e;
	int ret = 0;

	if (!dp)
		return diag_errno(d, errno, "cannot read the program's directory %s", from);
	while (!ret && (e = readdir(dp))) {
		char src[PATH_MAX], dst[PATH_MAX];
		struct stat st, lst;

		if (e->d_name[0] == '.' || !strcmp(e->d_name, "__pycache__"))
			continue;
		if (fmt_path(src, sizeof(src), "%s/%s", from, e->d_name) ||
		    fmt_path(dst, sizeof(dst), "%s/%s", to, e->d_name)) {
			ret = diag_errno(d, errno, "%s/%s", from, e->d_name);
			break;
		}
		/* A link to a file is copied as the file; a link to a
		 * directory is not followed (no loops, no escaping). */
		if (lstat(src, &lst) || stat(src, &st))
			continue;
		if (S_ISDIR(st.st_mode) && !S_ISLNK(lst.st_mode)) {
			if (depth >= PROG_COPY_MAX_DEPTH) {
				ret =
				    diag_set(d, EXIT_USAGE,
					     "the program's directory %s is deeper than %d levels "
					     "(%s): a chroot target gets a bounded copy of it; put "
					     "the program in a directory of its own",
					     b->top, PROG_COPY_MAX_DEPTH, src);
				break;
			}
			if (mkdir(dst, 0755) && errno != EEXIST)
				ret = diag_errno(d, errno, "cannot create %s", dst);
			else
				ret = copy_tree(src, dst, depth + 1, b, d);
			continue;
		}
		if (!S_ISREG(st.st_mode))
			continue;
		b->bytes += (unsigned long long)st.st_size;
		if (++b->files > PROG_COPY_MAX_FILES || b->bytes > PROG_COPY_MAX_BYTES) {
			ret = diag_set(d, EXIT_USAGE,
				       "the program's directory %s holds more than %s: a chroot "
				       "target gets a bounded copy of it (at most %d files, %llu "
				       "MiB); put the program in a directory of its own",
				       b->top,
				       b->files > PROG_COPY_MAX_FILES ? "too many files"
								      : "too many bytes",
				       PROG_COPY_MAX_FILES, PROG_COPY_MAX_BYTES >> 20);
			break;
		}
		if (copy_file(src, dst))
			ret = diag_errno(d, errno, "cannot copy %s into %s", src, to);
	}
	closedir(dp);
	return ret;
}

/* Path as the target sees it: host path minus the chroot prefix. */
static const char *inside(const struct oracle_python *py, const char *host)
{
	size_t l = strlen(py->root);

	if (!strcmp(py->root, "/"))
		return host;
	return host + l;
}

int oracle_target_start(struct oracle_target *t, const struct oracle_case *c,
			const struct oracle_python *py, const struct oracle_plan *p, struct diag *d)
{
	char tmpl[PATH_MAX], script[PATH_MAX], oracle_py[PATH_MAX], env_p[PATH_MAX + 32],
	    env_t[PATH_MAX + 32], env_pp[PATH_MAX + 32], lib[PATH_MAX], prog[PATH_MAX];
	const char *base = strrchr(c->py, '/') ? strrchr(c->py, '/') + 1 : c->py;
	int chrooted = strcmp(py->root, "/") != 0, fd;
	uint64_t zero = 0;

	sigset_t held;

	memset(t, 0, sizeof(*t));
	if (fmt_path(tmpl, sizeof(tmpl), "%s/tmp/bpfpy-oracle.XXXXXX", chrooted ? py->root : ""))
		return diag_errno(d, errno, "cannot create a directory like %s", tmpl);
	/* A signal that ends us kills the target and removes the directory:
	 * held from its creation until it is tracked, or it would stay. */
	signals_block(&held);
	if (!mkdtemp(tmpl)) {
		int err = errno;

		signals_restore(&held);
		return diag_errno(d, err, "cannot create a directory like %s", tmpl);
	}
	snprintf(t->tmpdir, sizeof(t->tmpdir), "%s", tmpl);
	signals_track_path(t->tmpdir, 1);
	signals_restore(&held);
	chmod(tmpl, 0755);
	(void)fmt_path(t->progress_path, sizeof(t->progress_path), "%s/progress", tmpl);
	(void)fmt_path(t->truth_path, sizeof(t->truth_path), "%s/truth.json", tmpl);
	(void)fmt_path(t->log_path, sizeof(t->log_path), "%s/log", tmpl);
	/* The counter exists before the target: we map it now, it writes it. */
	fd = open(t->progress_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, &zero, 8) != 8) {
		if (fd >= 0)
			close(fd);
		return diag_errno(d, errno, "cannot create %s", t->progress_path);
	}
	t->map = mmap(NULL, 8, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (t->map == MAP_FAILED) {
		t->map = NULL;
		return diag_errno(d, errno, "cannot map %s", t->progress_path);
	}
	t->progress = t->map;
	/* _oracle alone in a directory of its own on PYTHONPATH: the
	 * snippets directory there would shadow the standard library for
	 * any program (its asyncio.py is a case; an unmodified program's
	 * "import asyncio" loaded it). A snippet finds _oracle beside itself
	 * anyway, as the first entry of its sys.path. */
	if (fmt_path(lib, sizeof(lib), "%s/lib", tmpl) || mkdir(lib, 0755) ||
	    fmt_path(oracle_py, sizeof(oracle_py), "%s/_oracle.py", c->dir) ||
	    fmt_path(script, sizeof(script), "%s/_oracle.py", lib) || copy_file(oracle_py, script))
		return diag_errno(d, errno, "cannot put _oracle.py in %s/lib", tmpl);
	if (chrooted) {
		/* A chroot sees only its own tree: the program's directory goes
		 * in (bounded), so that its own modules import. */
		struct tree_budget b = {0};
		char pdir[PATH_MAX];

		snprintf(pdir, sizeof(pdir), "%.*s", (int)(base - c->py - 1), c->py);
		b.top = pdir;
		if (fmt_path(prog, sizeof(prog), "%s/prog", tmpl) || mkdir(prog, 0755))
			return diag_errno(d, errno, "cannot create %s/prog", tmpl);
		if (copy_tree(pdir, prog, 0, &b, d))
			return -1;
		if (fmt_path(script, sizeof(script), "%s/%s", prog, base))
			return diag_errno(d, errno, "%s/%s", prog, base);
	} else {
		snprintf(script, sizeof(script), "%s", c->py);
	}
	snprintf(env_p, sizeof(env_p), "BPFPY_PROGRESS=%s", inside(py, t->progress_path));
	snprintf(env_t, sizeof(env_t), "BPFPY_TRUTH=%s", inside(py, t->truth_path));
	snprintf(env_pp, sizeof(env_pp), "PYTHONPATH=%s", inside(py, lib));

	t->pid = fork();
	if (t->pid < 0)
		return diag_errno(d, errno, "fork");
	if (t->pid > 0)
		signals_track_child(t->pid);
	if (!t->pid) {
		char *argv[] = {(char *)py->python, (char *)inside(py, script), NULL};
		char *envp[] = {env_p,
				env_t,
				env_pp,
				"PATH=/usr/local/bin:/usr/bin:/bin",
				"PYTHONDONTWRITEBYTECODE=1",
				"LC_ALL=C.UTF-8",
				NULL};
		int log = open(t->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int null = open("/dev/null", O_RDONLY);

		signals_child_reset();
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(127);
		if (p->pinned) {
			cpu_set_t set;

			CPU_ZERO(&set);
			CPU_SET(p->cpu_target, &set);
			sched_setaffinity(0, sizeof(set), &set);
		}
		/* Pinned means measured: at nice -20 the target keeps nearly
		 * all of its CPU against a shared machine's other (nice 0)
		 * load, which otherwise swings its pace by tens of percent
		 * from one tenth of a second to the next (see oracle_gate.h). */
		if (p->pinned)
			(void)setpriority(PRIO_PROCESS, 0, ORACLE_NICE);
		dup2(null, 0);
		dup2(log, 1);
		dup2(log, 2);
		if (chrooted && (chroot(py->root) || chdir("/"))) {
			dprintf(2, "chroot %s: %s\n", py->root, strerror(errno));
			_exit(127);
		}
		execve(py->python, argv, envp);
		dprintf(2, "exec %s: %s\n", py->python, strerror(errno));
		_exit(127);
	}
	return 0;
}

uint64_t oracle_target_progress(const struct oracle_target *t)
{
	return t->progress ? *t->progress : 0;
}

static void read_log(const struct oracle_target *t, char *buf, size_t len)
{
	FILE *f = fopen(t->log_path, "r");
	size_t n = 0;

	buf[0] = 0;
	if (f) {
		n = fread(buf, 1, len - 1, f);
		fclose(f);
	}
	buf[n] = 0;
	for (size_t i = 0; i < n; i++)
		if (buf[i] == '\n')
			buf[i] = n - i > 1 ? '|' : 0;
}

/* Whether the target has mapped its progress counter, i.e. imported
 * _oracle: compared by device and inode, which a chroot does not change. */
static int counter_mapped(const struct oracle_target *t)
{
	struct proc_maps m = {0};
	struct diag d = {0};
	struct stat st;
	int hit = 0;

	if (stat(t->progress_path, &st) || proc_maps_read(t->pid, &m, &d))
		return 0;
	for (size_t i = 0; i < m.n && !hit; i++)
		hit = m.v[i].inode == (uint64_t)st.st_ino &&
		      makedev(m.v[i].dev_major, m.v[i].dev_minor) == st.st_dev;
	proc_maps_free(&m);
	return hit;
}

int oracle_target_wait_ready(struct oracle_target *t, const char *own, double timeout,
			     struct diag *d)
{
	struct oracle_probe *pr = oracle_probe_new();
	double end = mono_s() + timeout, next = 0;
	int shown = 0, ret = -1;
	char log[300];

	if (!pr)
		return diag_errno(d, ENOMEM, "oracle");
	while (mono_s() < end) {
		int st;

		if (oracle_target_progress(t) > 0) {
			ret = 0;
			goto out;
		}
		if (waitpid(t->pid, &st, WNOHANG) == t->pid) {
			t->exited = 1;
			signals_untrack_child(t->pid); /* its pid may be reused */
			t->status = st;
			read_log(t, log, sizeof(log));
			diag_set(d, EXIT_FAIL, "pid %d: the program exited before it ran: %s",
				 t->pid, log);
			goto out;
		}
		/* Every 20 ms at most: each look reads every thread's stack. */
		if (mono_s() >= next) {
			next = mono_s() + 0.02;
			if (!shown) {
				shown = oracle_probe_program(pr, t->pid, own, d);
				if (shown < 0)
					goto out;
			}
			/* A snippet that imported _oracle is ready when its
			 * loop runs, i.e. when the counter moves; any other
			 * program when it runs its own code. */
			if (shown && !counter_mapped(t)) {
				ret = 0;
				goto out;
			}
		}
		usleep(2000);
	}
	diag_set(d, EXIT_FAIL, "pid %d: %s %s in %.0f s (host overloaded?)", t->pid, own,
		 shown ? "mapped its progress counter but the counter did not move"
		       : "ran no frame of its own file outside an import",
		 timeout);
out:
	oracle_probe_free(pr);
	return ret;
}

void oracle_target_stop(struct oracle_target *t, struct keydist **truth)
{
	char p[PATH_MAX + 32];
	struct diag d = {0};

	if (truth)
		*truth = NULL;
	if (t->pid > 0 && !t->exited) {
		double end = mono_s() + 3.0;
		int st;

		kill(t->pid, SIGTERM);
		for (;;) {
			pid_t r = waitpid(t->pid, &st, WNOHANG);

			if (r == t->pid || (r < 0 && errno == ECHILD))
				break;
			if (mono_s() > end) {
				kill(t->pid, SIGKILL);
				waitpid(t->pid, &st, 0);
				break;
			}
			usleep(2000);
		}
		t->exited = 1;
	}
	if (t->pid > 0)
		signals_untrack_child(t->pid);
	if (truth && t->truth_path[0] && !access(t->truth_path, R_OK)) {
		*truth = keydist_new();
		if (*truth && keydist_load_truth(*truth, t->truth_path, &d)) {
			keydist_free(*truth);
			*truth = NULL;
		}
	}
	if (t->map)
		munmap(t->map, 8);
	t->map = NULL;
	t->progress = NULL;
	if (t->tmpdir[0]) {
		/* Only what we put there: what a program writes elsewhere is its
		 * business. prog/ is our copy of a chroot target's directory
		 * (with what the program added to it); lib/ holds _oracle.py. */
		static const char *const names[] = {"progress", "truth.json",	  "truth.json.tmp",
						    "log",	"lib/_oracle.py", "lib"};

		snprintf(p, sizeof(p), "%s/prog", t->tmpdir);
		signals_rmtree(p);
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			snprintf(p, sizeof(p), "%s/%s", t->tmpdir, names[i]);
			if (unlink(p) && errno == EISDIR)
				rmdir(p);
		}
		rmdir(t->tmpdir);
		signals_untrack_path(t->tmpdir);
		t->tmpdir[0] = 0;
	}
}
