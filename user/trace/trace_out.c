// SPDX-License-Identifier: MIT
/*
 * The outputs of bpfpy trace of its own: a summary table and Chrome
 * trace-event JSON, from struct trace_data. Folded stacks and the other
 * profile formats come from the one format table (user/profile), written
 * from the profile cmd_trace.c builds of the hits.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "diag.h"
#include "profile.h"
#include "bpfpy.h"
#include "text_escape.h"
#include "trace_model.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static const struct trace_data *sort_td;

static int cmp_loc_hits(const void *a, const void *b)
{
	const struct trace_loc *x = &sort_td->locs[*(const uint32_t *)a];
	const struct trace_loc *y = &sort_td->locs[*(const uint32_t *)b];

	return x->hits < y->hits ? 1 : x->hits > y->hits ? -1 : 0;
}

/* Nearest-rank percentile of sorted v. */
static uint64_t pct(const uint64_t *v, size_t n, double p)
{
	size_t k = (size_t)(p * (double)n + 0.999999);

	if (k < 1)
		k = 1;
	return v[(k > n ? n : k) - 1];
}

static const char *loc_name(const struct trace_data *td, const struct trace_loc *l, char *buf,
			    size_t len)
{
	if (l->name != TRACE_NONE)
		return strtab_get(&td->strs, l->name);
	if (!l->code)
		return "<no Python frame>";
	snprintf(buf, len, "<code 0x%llx>", (unsigned long long)l->code);
	return buf;
}

int trace_write_summary(FILE *f, struct trace_data *td, int top, struct diag *d)
{
	uint32_t *ix = malloc((td->nlocs + 1) * sizeof(*ix));
	uint64_t hits = 0, emitted = 0;
	char buf[64], ename[64], ever[64];

	if (!ix)
		return diag_errno(d, ENOMEM, "summary");
	for (uint32_t i = 0; i < td->nlocs; i++) {
		ix[i] = i;
		hits += td->locs[i].hits;
		emitted += td->locs[i].emitted;
		if (td->locs[i].nlat)
			qsort(td->locs[i].lat, td->locs[i].nlat, sizeof(uint64_t), cmp_u64);
	}
	sort_td = td;
	qsort(ix, td->nlocs, sizeof(*ix), cmp_loc_hits);
	fprintf(f, "bpfpy trace: pid %d (%s), CPython %s, %.2f s, threshold %u%s\n", td->pid,
		text_esc(td->comm, ename, sizeof(ename)), text_esc(td->version, ever, sizeof(ever)),
		(td->t1_ns - td->t0_ns) / 1e9, td->threshold,
		td->threshold ? "" : " (full tracing)");
	fprintf(f,
		"hits %llu, emitted %llu, events kept %zu, lost %llu, walk errors %llu, "
		"no thread state %llu\n",
		(unsigned long long)hits, (unsigned long long)emitted, td->nev,
		(unsigned long long)td->lost, (unsigned long long)td->walk_errors,
		(unsigned long long)td->no_python);
	fprintf(f, "detached %.3f s in total (%u detach%s, %u rearm%s)\n", td->detached_ns / 1e9,
		td->ndetach, td->ndetach == 1 ? "" : "es", td->nrearm, td->nrearm == 1 ? "" : "s");
	for (int i = 0; i < td->nprobes; i++) {
		const struct trace_probe *tp = &td->probes[i];

		if (tp->detached_at_ns && tp->role != TRACE_ROLE_RETURN)
			fprintf(f,
				"%s%s%s: detached at %.3f s, %llu location%s below the threshold "
				"cut off\n",
				tp->label, tp->pair >= 0 ? " + " : "",
				tp->pair >= 0 ? td->probes[tp->pair].label : "",
				(tp->detached_at_ns - td->t0_ns) / 1e9,
				(unsigned long long)tp->cut_locs, tp->cut_locs == 1 ? "" : "s");
	}
	fprintf(f, "%10s %9s %10s %10s %8s %10s %10s %10s %10s  %s\n", "HITS", "EMITTED", "COUNTED",
		"SATURATED", "CALLS", "TOTAL_us", "MEAN_us", "P50_us", "P99_us", "PROBE  LOCATION");
	for (uint32_t k = 0; k < td->nlocs && (int)k < top; k++) {
		const struct trace_loc *l = &td->locs[ix[k]];
		char sat[32] = "-";

		if (l->saturated_ns && l->saturated_ns >= td->t0_ns)
			snprintf(sat, sizeof(sat), "%.3fs", (l->saturated_ns - td->t0_ns) / 1e9);
		fprintf(f, "%10llu %9llu %10llu %10s ", (unsigned long long)l->hits,
			(unsigned long long)l->emitted, (unsigned long long)(l->hits - l->emitted),
			sat);
		if (l->nlat) {
			uint64_t tot = 0;

			for (size_t i = 0; i < l->nlat; i++)
				tot += l->lat[i];
			fprintf(f, "%8zu %10.1f %10.3f %10.3f %10.3f  ", l->nlat, tot / 1e3,
				tot / 1e3 / (double)l->nlat, pct(l->lat, l->nlat, 0.5) / 1e3,
				pct(l->lat, l->nlat, 0.99) / 1e3);
		} else {
			fprintf(f, "%8s %10s %10s %10s %10s  ", "-", "-", "-", "-", "-");
		}
		/* The location names the target's code: escaped. */
		fprintf(f, "%s  ", td->probes[l->probe_id].label);
		text_put(f, loc_name(td, l, buf, sizeof(buf)));
		fputc('\n', f);
		/* --native: which C path led from the Python frame to the probe. */
		if (l->native_via != TRACE_NONE) {
			fputs("           via ", f);
			text_put(f, strtab_get(&td->strs, l->native_via));
			fputc('\n', f);
		}
	}
	if (td->nlocs > (uint32_t)top)
		fprintf(f, "(%u more locations; --top N)\n", td->nlocs - (uint32_t)top);
	free(ix);
	return ferror(f) ? diag_errno(d, EIO, "writing the summary") : 0;
}

static int cmp_ev_ts(const void *a, const void *b)
{
	const struct trace_event *x = &sort_td->ev[*(const uint32_t *)a];
	const struct trace_event *y = &sort_td->ev[*(const uint32_t *)b];

	if (x->ts_ns != y->ts_ns)
		return x->ts_ns < y->ts_ns ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* The stack as a JSON array, leaf first (as a debugger prints it). */
static json_object *stack_json(const struct trace_data *td, uint32_t stack)
{
	json_object *a = json_object_new_array();
	const char *s = strtab_get(&td->strs, stack), *e;
	size_t n = 0;
	const char *parts[TRACE_MAX_FRAMES];
	size_t lens[TRACE_MAX_FRAMES];

	while (*s && n < TRACE_MAX_FRAMES) {
		e = strchr(s, ';');
		parts[n] = s;
		lens[n++] = e ? (size_t)(e - s) : strlen(s);
		if (!e)
			break;
		s = e + 1;
	}
	while (n--)
		json_object_array_add(a, json_object_new_string_len(parts[n], (int)lens[n]));
	return a;
}

static json_object *event_json(const struct trace_data *td, const struct trace_event *e,
			       const char *ph, const char *name)
{
	const struct trace_probe *tp = &td->probes[e->probe_id];
	json_object *o = json_object_new_object(), *args = json_object_new_object();

	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "cat",
			       json_object_new_string(tp->kind == TRACE_USDT	 ? "usdt"
						      : tp->kind == TRACE_UPROBE ? "uprobe"
										 : "uretprobe"));
	json_object_object_add(o, "ph", json_object_new_string(ph));
	json_object_object_add(o, "ts", json_object_new_double((e->ts_ns - td->t0_ns) / 1e3));
	json_object_object_add(o, "pid", json_object_new_int(e->pid));
	json_object_object_add(o, "tid", json_object_new_int(e->tid));
	if (ph[0] == 'i')
		json_object_object_add(o, "s", json_object_new_string("t"));
	json_object_object_add(args, "probe", json_object_new_string(tp->label));
	for (int i = 0; i < 2 && tp->argfmt[i]; i++) {
		json_object *v;
		char hex[24];

		if (tp->argfmt[i] == 's')
			v = json_object_new_string(strtab_get(&td->strs, e->str[i]));
		else if (tp->argfmt[i] == 'i')
			v = json_object_new_int64((int64_t)e->args[i]);
		else {
			snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)e->args[i]);
			v = json_object_new_string(hex);
		}
		json_object_object_add(args, tp->argname[i] ? tp->argname[i] : "arg", v);
	}
	if (e->stack != TRACE_NONE)
		json_object_object_add(args, "stack", stack_json(td, e->stack));
	json_object_object_add(o, "args", args);
	return o;
}

struct chrome_tid {
	uint32_t tid, depth, pid;
};

/* The "sf" of an event: its stack (interned root first, ';'-joined) in the
 * stackFrames table, or -1. */
static int64_t event_sf(const struct trace_data *td, const struct trace_event *e,
			struct chrome_frames *cf)
{
	const char *s = strtab_get(&td->strs, e->stack);
	const char *names[TRACE_MAX_FRAMES + 1];
	char *copy, *p, *part;
	uint32_t n = 0;
	int64_t sf;

	if (e->stack == TRACE_NONE || !*s || !(copy = strdup(s)))
		return -1;
	for (p = copy; n < TRACE_MAX_FRAMES + 1 && (part = strsep(&p, ";")) != NULL;)
		names[n++] = part;
	sf = chrome_frames_add(cf, names, n);
	free(copy);
	return sf;
}

/* B/E must nest per thread: an E whose B we never saw (entered before we
 * attached) becomes an instant event instead of closing someone else's B. */
static uint32_t *depth_of(struct chrome_tid **v, size_t *n, uint32_t tid, uint32_t pid)
{
	struct chrome_tid *nv;

	for (size_t i = 0; i < *n; i++)
		if ((*v)[i].tid == tid)
			return &(*v)[i].depth;
	nv = realloc(*v, (*n + 1) * sizeof(*nv));
	if (!nv)
		return NULL;
	*v = nv;
	nv[*n].tid = tid;
	nv[*n].depth = 0;
	nv[*n].pid = pid;
	return &nv[(*n)++].depth;
}

static void pair_name(const struct trace_data *td, const struct trace_event *e, char *buf,
		      size_t len)
{
	const struct trace_probe *tp = &td->probes[e->probe_id];

	/* The leaf frame was read in the kernel at the hit; the funcname
	 * argument only later, from memory that may have changed since. */
	if (tp->kind == TRACE_USDT && e->leaf != TRACE_NONE)
		snprintf(buf, len, "%s", strtab_get(&td->strs, e->leaf));
	else if (tp->kind == TRACE_USDT && e->str[1] != TRACE_NONE)
		snprintf(buf, len, "%s", strtab_get(&td->strs, e->str[1]));
	else if (tp->kind != TRACE_USDT)
		snprintf(buf, len, "%s", tp->symbol);
	else
		snprintf(buf, len, "%s", tp->label);
}

int trace_write_chrome(FILE *f, struct trace_data *td, const struct profile *names, struct diag *d)
{
	uint32_t *ix = malloc((td->nev + 1) * sizeof(*ix));
	struct chrome_tid *tids = NULL;
	size_t ntids = 0;
	json_object *meta;
	char name[512];
	struct chrome_frames *cf = chrome_frames_new();
	int rc;

	if (!ix || !cf) {
		free(ix);
		chrome_frames_free(cf);
		return diag_errno(d, ENOMEM, "chrome trace");
	}
	for (size_t i = 0; i < td->nev; i++)
		ix[i] = (uint32_t)i;
	sort_td = td;
	qsort(ix, td->nev, sizeof(*ix), cmp_ev_ts);
	fprintf(f, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
	meta = json_object_new_object();
	json_object_object_add(meta, "name", json_object_new_string("process_name"));
	json_object_object_add(meta, "ph", json_object_new_string("M"));
	json_object_object_add(meta, "pid", json_object_new_int(td->pid));
	json_object_object_add(meta, "tid", json_object_new_int(td->pid));
	snprintf(name, sizeof(name), "%s (pid %d, CPython %s)", td->comm, td->pid, td->version);
	{
		json_object *a = json_object_new_object();

		json_object_object_add(a, "name", json_object_new_string(name));
		json_object_object_add(meta, "args", a);
	}
	fputs(json_object_to_json_string_ext(meta, JSON_C_TO_STRING_PLAIN), f);
	json_object_put(meta);
	for (size_t k = 0; k < td->nev; k++) {
		const struct trace_event *e = &td->ev[ix[k]];
		const struct trace_probe *tp = &td->probes[e->probe_id];
		uint32_t *depth = depth_of(&tids, &ntids, e->tid, e->pid);
		const char *ph = "i";
		json_object *o;

		if (tp->pair >= 0 && tp->role == TRACE_ROLE_ENTRY && depth) {
			ph = "B";
			(*depth)++;
		} else if (tp->pair >= 0 && tp->role == TRACE_ROLE_RETURN && depth && *depth) {
			ph = "E";
			(*depth)--;
		}
		if (ph[0] == 'i')
			snprintf(name, sizeof(name), "%s", tp->label);
		else
			pair_name(td, e, name, sizeof(name));
		o = event_json(td, e, ph, name);
		{
			int64_t sf = event_sf(td, e, cf);

			/* The stack natively, for viewers that draw it. */
			if (sf >= 0) {
				char id[24];

				snprintf(id, sizeof(id), "%lld", (long long)sf);
				json_object_object_add(o, "sf", json_object_new_string(id));
			}
		}
		fputs(",\n", f);
		fputs(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), f);
		json_object_put(o);
	}
	/* A name for every thread that has events. */
	for (size_t i = 0; i < ntids; i++) {
		const char *tn =
		    names ? profile_thread_name(names, tids[i].pid, tids[i].tid) : NULL;

		fputs(",\n", f);
		chrome_put_thread_meta(f, tids[i].pid, tids[i].tid, tn);
	}
	fputs("\n],", f);
	rc = chrome_frames_write(f, cf);
	fprintf(f,
		",\n\"otherData\":{\"tool\":\"bpfpy trace\",\"threshold\":%u,"
		"\"detached_s\":%.6f}}\n",
		td->threshold, td->detached_ns / 1e9);
	free(tids);
	free(ix);
	chrome_frames_free(cf);
	if (rc)
		return diag_errno(d, ENOMEM, "chrome trace: stack frames");
	return ferror(f) ? diag_errno(d, EIO, "writing the chrome trace") : 0;
}
