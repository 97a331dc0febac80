// SPDX-License-Identifier: MIT
#include "trace_probes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "diag.h"
#include "proc_maps.h"
#include "proc_root.h"
#include "elf_file.h"
#include "py_offsets.h"
#include "text_escape.h"

/* CPython's markers (Include/pydtrace.d) and how we show them. Only two
 * arguments cross the ring buffer; the third of function__* (lineno) is the
 * leaf frame's, which the stack already carries. */
static const struct known_usdt {
	const char *name;
	const char *argfmt;
	const char *a0, *a1;
	const char *pair; /* the other half of an entry/return pair */
	int opens;	  /* 1: this half opens the pair */
} known[] = {
    {"function__entry", "ss", "filename", "funcname", "function__return", 1},
    {"function__return", "ss", "filename", "funcname", "function__entry", 0},
    {"line", "ss", "filename", "funcname", NULL, 0},
    {"gc__start", "i", "generation", NULL, NULL, 0},
    {"gc__done", "i", "collected", NULL, NULL, 0},
    {"import__find__load__start", "s", "module", NULL, NULL, 0},
    {"import__find__load__done", "si", "module", "found", NULL, 0},
    {"audit", "sx", "event", "args", NULL, 0},
};
#define NKNOWN (sizeof(known) / sizeof(known[0]))

static const struct known_usdt *known_of(const char *provider, const char *name)
{
	if (strcmp(provider, "python"))
		return NULL;
	for (size_t i = 0; i < NKNOWN; i++)
		if (!strcmp(known[i].name, name))
			return &known[i];
	return NULL;
}

/* Why the target's interpreter has no such probe, or NULL if we do not
 * know a reason. */
static const char *missing_reason(const struct py_process *p, int have_any, const char *name)
{
	uint32_t hex = p->bin.version_hex;

	if (!have_any)
		return "this build has no USDT probes at all (configured without --with-dtrace, "
		       "e.g. pyenv); use --uprobe on its functions";
	if (!strncmp(name, "function__", 10) && !py_usdt_has_call_probes(hex))
		return "CPython 3.12-3.14 have no call probes (3.15 restores them)";
	if (!strcmp(name, "line") && !py_usdt_has_line_probe(hex))
		return "CPython 3.12 removed the line probe";
	return NULL;
}

static void fix_interpreter_path(struct py_process *p);

int trace_semaphore_value(struct py_process *p, uint64_t addr)
{
	uint16_t v;

	if (!addr || mem_read(&p->mem, &v, sizeof(v), addr))
		return -1;
	return v;
}

int trace_read_cstr(struct py_process *p, uint64_t addr, char *buf, size_t len)
{
	size_t n = 0;

	if (!addr || len < 2)
		return -1;
	/* Chunks that never cross a page: a string near the end of a mapping
	 * must not fail because the bytes after it are unmapped. */
	while (n < len - 1) {
		size_t chunk = 4096 - ((addr + n) & 4095);
		char *z;

		if (chunk > len - 1 - n)
			chunk = len - 1 - n;
		if (mem_read(&p->mem, buf + n, chunk, addr + n))
			return n ? (int)n : -1;
		z = memchr(buf + n, 0, chunk);
		if (z)
			return (int)(z - buf);
		n += chunk;
	}
	buf[n] = 0;
	return (int)n;
}

int trace_list(FILE *f, struct py_process *p, struct diag *d)
{
	struct usdt_probe *v = NULL;
	uint32_t hex = p->bin.version_hex;
	int n;

	fix_interpreter_path(p);
	n = usdt_list(p->pid, p->bin.path, &v, d);
	if (n < 0)
		return -1;
	{
		char ec[64], ev[64], ep[1024];

		fprintf(f, "pid %d (%s): CPython %s, %s %s\n", p->pid,
			text_esc(p->comm, ec, sizeof(ec)), text_esc(p->version, ev, sizeof(ev)),
			p->bin.is_shared_lib ? "library" : "executable",
			text_esc(p->bin.path, ep, sizeof(ep)));
	}
	fprintf(f, "USDT probes (%d):\n", n);
	for (int i = 0; i < n; i++) {
		uint64_t sem = v[i].semaphore ? v[i].semaphore + p->bin.load_bias : 0;
		const struct known_usdt *k = known_of(v[i].provider, v[i].name);

		char epr[256], ena[256], ear[1024];

		/* Notes of a file the target maps: its strings, escaped. */
		fprintf(f, "  %s:%-26s %2d site%s  semaphore ",
			text_esc(v[i].provider, epr, sizeof(epr)),
			text_esc(v[i].name, ena, sizeof(ena)), v[i].nsites,
			v[i].nsites == 1 ? " " : "s");
		if (sem)
			fprintf(f, "0x%llx = %d", (unsigned long long)sem,
				trace_semaphore_value(p, sem));
		else
			fprintf(f, "none");
		fprintf(f, "  args: %s", text_esc(v[i].args, ear, sizeof(ear)));
		if (!strcmp(v[i].name, "function__entry") && py_usdt_has_call_probes(hex) &&
		    !py_usdt_calls_complete(hex))
			fprintf(f, "  (fires only for calls from C, not Python-to-Python calls)");
		fprintf(f, "%s\n", k ? "" : "  (not a CPython marker)");
	}
	for (size_t k = 0; k < NKNOWN; k++) {
		int have = 0;
		const char *why;

		for (int i = 0; i < n; i++)
			have |=
			    !strcmp(v[i].provider, "python") && !strcmp(v[i].name, known[k].name);
		if (have)
			continue;
		why = missing_reason(p, n > 0, known[k].name);
		fprintf(f, "  missing python:%s%s%s\n", known[k].name, why ? ": " : "",
			why ? why : "");
	}
	fprintf(f, "--calls: %s\n",
		!n				? "unavailable (no USDT probes)"
		: !py_usdt_has_call_probes(hex) ? "unavailable (no call probes in 3.12-3.14)"
		: !py_usdt_calls_complete(hex)
		    ? "refused: 3.11's function__entry misses Python-to-Python calls"
		    : "available");
	fprintf(f, "uprobes: any function of a mapped file, e.g. --uprobe python:%s\n",
		py_eval_frame_symbol(hex));
	free(v);
	return 0;
}

/*
 * A path to a file the target maps that open(2) works on. /proc/PID/root
 * plus the maps path is right for a container, but for a chroot in our
 * mount namespace maps already prints a host path, which is then the one
 * to use (the chroot may even hold a symlink that sends the first form
 * elsewhere).
 */
static void usable_path(pid_t pid, const char *path, char *out, size_t len)
{
	char prefix[64];
	size_t n = (size_t)snprintf(prefix, sizeof(prefix), "/proc/%d/root", (int)pid);

	snprintf(out, len, "%s", path);
	if (access(path, R_OK) == 0 || strncmp(path, prefix, n) || path[n] != '/')
		return;
	if (access(path + n, R_OK) == 0)
		snprintf(out, len, "%s", path + n);
}

static void fix_interpreter_path(struct py_process *p)
{
	char tmp[sizeof(p->bin.path)];

	usable_path(p->pid, p->bin.path, tmp, sizeof(tmp));
	memcpy(p->bin.path, tmp, sizeof(tmp));
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* Does the mapped path q answer to what the user typed? Full paths must
 * match exactly; a bare name matches the file name or its stem ("libc" for
 * libc.so.6, "libpython3.12" for libpython3.12.so.1.0). */
static int binary_matches(const char *q, const char *want)
{
	const char *b = base_name(q);
	size_t n = strlen(want);

	if (strchr(want, '/'))
		return !strcmp(q, want);
	if (!strcmp(b, want))
		return 1;
	return !strncmp(b, want, n) && (b[n] == '.' || b[n] == '-');
}

static int resolve_binary(struct py_process *p, const char *want, char *out, size_t len,
			  struct diag *d)
{
	struct proc_maps m = {0};
	char seen[1024] = "";
	size_t used = 0;

	if (!strcmp(want, "python")) {
		usable_path(p->pid, p->bin.path, out, len);
		return 0;
	}
	if (proc_maps_read(p->pid, &m, d))
		return -1;
	for (size_t i = 0; i < m.n; i++) {
		const struct proc_map *mp = &m.v[i];

		if (!proc_map_is_file(mp) || mp->deleted)
			continue;
		if (binary_matches(mp->path, want)) {
			char tmp[PATH_MAX + 32];

			snprintf(tmp, sizeof(tmp), "/proc/%d/root%s", p->pid, mp->path);
			usable_path(p->pid, tmp, out, len);
			proc_maps_free(&m);
			return 0;
		}
		if (strchr(mp->perms, 'x') && !strstr(seen, base_name(mp->path)) &&
		    used + strlen(base_name(mp->path)) + 3 < sizeof(seen))
			used += (size_t)snprintf(seen + used, sizeof(seen) - used, "%s%s",
						 used ? ", " : "", base_name(mp->path));
	}
	proc_maps_free(&m);
	return diag_set(d, EXIT_USAGE,
			"pid %d does not map a file '%s' (executable mappings: %s; 'python' "
			"names the interpreter)",
			p->pid, want, seen);
}

static struct trace_probe *new_probe(struct trace_data *td)
{
	struct trace_probe *np = realloc(td->probes, (td->nprobes + 1) * sizeof(*np));

	if (!np || td->nprobes >= TRACE_MAX_PROBES)
		return NULL;
	td->probes = np;
	np = &td->probes[td->nprobes];
	memset(np, 0, sizeof(*np));
	np->id = td->nprobes++;
	np->pair = -1;
	return np;
}

static int add_usdt(struct trace_data *td, struct py_process *p, const struct usdt_probe *v, int n,
		    const char *text, struct diag *d)
{
	char prov[64] = "python", name[64];
	const char *colon = strchr(text, ':');
	const struct known_usdt *k;
	struct trace_probe *tp;
	int i;

	if (colon) {
		snprintf(prov, sizeof(prov), "%.*s", (int)(colon - text), text);
		text = colon + 1;
	}
	snprintf(name, sizeof(name), "%s", text);
	for (i = 0; i < n; i++)
		if (!strcmp(v[i].provider, prov) && !strcmp(v[i].name, name))
			break;
	if (i == n) {
		const char *why = missing_reason(p, n > 0, name);
		char have[768] = "";
		size_t used = 0;

		for (int j = 0; j < n && used + 80 < sizeof(have); j++)
			used += (size_t)snprintf(have + used, sizeof(have) - used, "%s%s:%s",
						 j ? ", " : "", v[j].provider, v[j].name);
		return diag_set(d, EXIT_USAGE, "no USDT probe %s:%s in %s (CPython %s)%s%s%s%s",
				prov, name, p->bin.path, p->version, why ? ": " : "",
				why ? why : "", n ? "; it has " : "", have);
	}
	for (int j = 0; j < td->nprobes; j++)
		if (td->probes[j].kind == TRACE_USDT && !strcmp(td->probes[j].provider, prov) &&
		    !strcmp(td->probes[j].name, name))
			return 0; /* given twice */
	tp = new_probe(td);
	if (!tp)
		return diag_set(d, EXIT_USAGE, "too many probes (at most %d)", TRACE_MAX_PROBES);
	tp->kind = TRACE_USDT;
	snprintf(tp->provider, sizeof(tp->provider), "%s", prov);
	snprintf(tp->name, sizeof(tp->name), "%s", name);
	snprintf(tp->label, sizeof(tp->label), "%s:%s", prov, name);
	snprintf(tp->path, sizeof(tp->path), "%s", p->bin.path);
	tp->semaphore = v[i].semaphore ? v[i].semaphore + p->bin.load_bias : 0;
	k = known_of(prov, name);
	if (k) {
		snprintf(tp->argfmt, sizeof(tp->argfmt), "%s", k->argfmt);
		tp->argname[0] = k->a0;
		tp->argname[1] = k->a1;
	} else {
		/* From the note: "-4@..." is a signed int, anything else hex. */
		const char *a = v[i].args, *sp = strchr(a, ' ');

		if (*a)
			tp->argfmt[0] = *a == '-' ? 'i' : 'x';
		if (sp)
			tp->argfmt[1] = sp[1] == '-' ? 'i' : 'x';
		tp->argname[0] = "arg0";
		tp->argname[1] = "arg1";
	}
	return 0;
}

static int add_uprobe(struct trace_data *td, struct py_process *p, int kind, const char *text,
		      struct diag *d)
{
	const char *colon = strrchr(text, ':');
	char bin[PATH_MAX], sym[128], *plus;
	struct trace_probe *tp;
	uint64_t add = 0;

	if (!colon || colon == text || !colon[1])
		return diag_set(d, EXIT_USAGE, "'%s': give BINARY:SYMBOL[+OFFSET]", text);
	snprintf(bin, sizeof(bin), "%.*s", (int)(colon - text), text);
	snprintf(sym, sizeof(sym), "%s", colon + 1);
	plus = strchr(sym, '+');
	if (plus) {
		char *end;

		*plus = 0;
		errno = 0;
		add = strtoull(plus + 1, &end, 0);
		if (errno || *end || end == plus + 1)
			return diag_set(d, EXIT_USAGE, "'%s': bad offset '%s'", text, plus + 1);
	}
	tp = new_probe(td);
	if (!tp)
		return diag_set(d, EXIT_USAGE, "too many probes (at most %d)", TRACE_MAX_PROBES);
	tp->kind = kind;
	tp->add = add;
	snprintf(tp->symbol, sizeof(tp->symbol), "%s", sym);
	if (resolve_binary(p, bin, tp->path, sizeof(tp->path), d) ||
	    elf_symbol_file_offset(p->pid, tp->path, sym, add, &tp->file_off, d)) {
		td->nprobes--;
		return -1;
	}
	snprintf(tp->label, sizeof(tp->label), "%s %.100s:%.100s%.40s",
		 kind == TRACE_UPROBE ? "uprobe" : "uretprobe", base_name(tp->path), sym,
		 plus ? colon + 1 + (plus - sym) : "");
	if (kind == TRACE_UPROBE) {
		snprintf(tp->argfmt, sizeof(tp->argfmt), "xx");
		tp->argname[0] = "arg0";
		tp->argname[1] = "arg1";
	} else {
		snprintf(tp->argfmt, sizeof(tp->argfmt), "x");
		tp->argname[0] = "ret";
	}
	return 0;
}

/* Entry/return pairs: function__entry with function__return, and each
 * uretprobe with the uprobe at the same place. */
static void pair_probes(struct trace_data *td)
{
	for (int i = 0; i < td->nprobes; i++) {
		struct trace_probe *a = &td->probes[i];
		const struct known_usdt *k;

		if (a->pair >= 0)
			continue;
		for (int j = 0; j < td->nprobes; j++) {
			struct trace_probe *b = &td->probes[j];
			int match = 0, opens = 0;

			if (j == i || b->pair >= 0)
				continue;
			if (a->kind == TRACE_USDT && b->kind == TRACE_USDT &&
			    (k = known_of(a->provider, a->name)) && k->pair &&
			    !strcmp(b->provider, a->provider) && !strcmp(b->name, k->pair)) {
				match = 1;
				opens = k->opens;
			} else if (a->kind == TRACE_UPROBE && b->kind == TRACE_URETPROBE &&
				   !strcmp(a->path, b->path) && a->file_off == b->file_off) {
				match = opens = 1;
			}
			if (!match || !opens)
				continue;
			a->pair = j;
			b->pair = i;
			a->role = TRACE_ROLE_ENTRY;
			b->role = TRACE_ROLE_RETURN;
			break;
		}
	}
}

int trace_probes_resolve(struct trace_data *td, struct py_process *p,
			 const struct probe_spec *specs, int nspecs, int calls, struct diag *d)
{
	struct usdt_probe *v = NULL;
	int n, ret = 0;

	fix_interpreter_path(p);
	n = usdt_list(p->pid, p->bin.path, &v, d);
	if (n < 0)
		return -1;
	if (calls) {
		const char *why = NULL;
		int have = 0;

		for (int i = 0; i < n; i++)
			have += !strcmp(v[i].provider, "python") &&
				(!strcmp(v[i].name, "function__entry") ||
				 !strcmp(v[i].name, "function__return"));
		if (have < 2)
			why = missing_reason(p, n > 0, "function__entry");
		else if (!py_usdt_calls_complete(p->bin.version_hex))
			why = "its function__entry/return fire only for calls from C, not "
			      "Python-to-Python calls, so most calls would be missing";
		if (have < 2 || why) {
			free(v);
			return diag_set(d, EXIT_UNSUPPORTED,
					"--calls: CPython %s (%s) cannot report every call: %s. "
					"bpfpy does not make calls up from samples.",
					p->version, p->bin.path,
					why ? why : "no function__entry/return probes");
		}
		if (add_usdt(td, p, v, n, "python:function__entry", d) ||
		    add_usdt(td, p, v, n, "python:function__return", d))
			ret = -1;
	}
	for (int i = 0; !ret && i < nspecs; i++) {
		if (specs[i].kind == TRACE_USDT)
			ret = add_usdt(td, p, v, n, specs[i].text, d);
		else
			ret = add_uprobe(td, p, specs[i].kind, specs[i].text, d);
	}
	free(v);
	if (ret)
		return -1;
	pair_probes(td);
	return 0;
}

int trace_probes_attach(struct trace_data *td, struct bpf_program *usdt, struct bpf_program *up,
			struct bpf_program *uret, struct diag *d)
{
	for (int i = 0; i < td->nprobes; i++) {
		struct trace_probe *tp = &td->probes[i];
		int err;

		char fd_path[32];
		int fd;

		if (tp->link)
			continue;
		/* The kernel (and libbpf, for USDT notes) resolve the path we
		 * give. tp->path is the target's name for the file, which may
		 * lead through the target's own symlinks out of its root; so
		 * open it once through the one safe opener and hand over the
		 * inode we checked, as /proc/self/fd/N. */
		fd = proc_target_file_open(td->pid, tp->path, d);
		if (fd < 0) {
			trace_probes_detach(td);
			return -1;
		}
		snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%d", fd);
		if (tp->kind == TRACE_USDT) {
			LIBBPF_OPTS(bpf_usdt_opts, o, .usdt_cookie = (uint64_t)tp->id);

			tp->link = bpf_program__attach_usdt(usdt, td->pid, fd_path, tp->provider,
							    tp->name, &o);
		} else {
			LIBBPF_OPTS(bpf_uprobe_opts, o, .bpf_cookie = (uint64_t)tp->id,
				    .retprobe = tp->kind == TRACE_URETPROBE);

			tp->link = bpf_program__attach_uprobe_opts(
			    tp->kind == TRACE_URETPROBE ? uret : up, td->pid, fd_path,
			    (size_t)tp->file_off, &o);
		}
		err = errno;
		close(fd);
		if (!tp->link) {
			trace_probes_detach(td);
			return diag_errno(d, err, "cannot attach %s (%s)", tp->label, tp->path);
		}
	}
	return 0;
}

void trace_probe_detach_one(struct trace_data *td, int i)
{
	bpf_link__destroy(td->probes[i].link);
	td->probes[i].link = NULL;
}

void trace_probes_detach(struct trace_data *td)
{
	for (int i = 0; i < td->nprobes; i++)
		trace_probe_detach_one(td, i);
}
