// SPDX-License-Identifier: MIT
/*
 * pprof: a gzip'd perftools.profiles.Profile (user/profile/gen/profile.proto), as read
 * by `go tool pprof` and most profile viewers.
 *
 * A Python frame maps to one Function (qualname, file, first line) and one
 * Location per (function, line); under no_lines one Location per Function,
 * at its first line. Each stack of each thread is one Sample, leaf first,
 * with values [samples/count, cpu|wall/nanoseconds] and numeric labels pid
 * and tid (plus comm), so `-tagfocus=tid=N` isolates a thread. The default
 * sample type is the count, so what `pprof -top` shows first is exactly what
 * the folded output counts.
 */
#include "profile.h"
#include "profile.pb-c.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef Perftools__Profiles__Profile PProfile;
typedef Perftools__Profiles__ValueType PValueType;
typedef Perftools__Profiles__Sample PSample;
typedef Perftools__Profiles__Label PLabel;
typedef Perftools__Profiles__Location PLocation;
typedef Perftools__Profiles__Line PLine;
typedef Perftools__Profiles__Function PFunction;
typedef Perftools__Profiles__Mapping PMapping;

/* Everything a Profile points to, freed in one place. */
struct build {
	PProfile prof;
	PValueType vt[3]; /* samples/count, clock/ns, period type */
	PValueType *vtp[2];
	PMapping *maps; /* [python], each native file, [kernel] */
	PMapping **mapp;
	char **strtab;
	PFunction *funcs;
	PFunction **funcp;
	PLocation *locs;
	PLocation **locp;
	PLine *lines;
	PLine **linep;
	PSample *samples;
	PSample **samplep;
	uint64_t *locids;
	int64_t *values;
	PLabel *labels; /* 3 per thread */
	PLabel **labelp;
};

static void build_free(struct build *b)
{
	free(b->strtab);
	free(b->funcs);
	free(b->funcp);
	free(b->locs);
	free(b->locp);
	free(b->lines);
	free(b->linep);
	free(b->samples);
	free(b->samplep);
	free(b->locids);
	free(b->values);
	free(b->labels);
	free(b->labelp);
	free(b->maps);
	free(b->mapp);
}

static int gzip_to(FILE *f, const uint8_t *data, size_t len)
{
	unsigned char out[65536];
	z_stream z;
	int zrc;

	memset(&z, 0, sizeof(z));
	/* 15 + 16: a gzip wrapper rather than zlib's, as pprof expects. */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -1;
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)len;
	do {
		z.next_out = out;
		z.avail_out = sizeof(out);
		zrc = deflate(&z, Z_FINISH);
		if (zrc == Z_STREAM_ERROR ||
		    fwrite(out, 1, sizeof(out) - z.avail_out, f) != sizeof(out) - z.avail_out) {
			deflateEnd(&z);
			return -1;
		}
	} while (zrc != Z_STREAM_END);
	deflateEnd(&z);
	return 0;
}

/* A native or kernel Location: its file's Mapping, and an address in it
 * (the function's, placed as files whose text has p_vaddr == p_offset are,
 * which is every library a compiler toolchain links). */
static void pprof_native_location(const struct profile *p, const struct prof_func *fn, PLocation *l,
				  uint32_t nmaps)
{
	if (fn->kind == FRAME_KIND_KERNEL) {
		l->mapping_id = nmaps;
		l->address = fn->addr;
	} else if (fn->kind == FRAME_KIND_NATIVE && fn->mapping) {
		const struct prof_mapping *pm = &p->mappings[fn->mapping - 1];

		l->mapping_id = fn->mapping + 1;
		l->address = pm->start - pm->offset + fn->addr;
	}
}

int pprof_write(FILE *f, const struct profile *p, const struct profile_out_opts *o, struct diag *d)
{
	/* Strings of our own, after the profile's interned ones. */
	enum { S_SAMPLES, S_COUNT, S_CLOCK, S_NS, S_PID, S_TID, S_COMM, S_MAP, S_KMAP, S__N };
	const char *extra[S__N] = {"samples", "count", p->clock,   "nanoseconds",      "pid",
				   "tid",     "comm",  "[python]", "[kernel.kallsyms]"};
	/* Mapping ids: 1 [python], 2.. the native files, then [kernel] if a
	 * frame is the kernel's: a Python-only profile keeps its one mapping. */
	uint32_t nmaps = 1 + p->nmappings;
	uint32_t nloc = o->no_lines ? p->nfuncs : p->nframes;
	uint64_t nlocids = 0, at = 0;
	size_t nstr = p->nstrs + S__N + p->nthreads, len;
	struct build b;
	uint8_t *buf = NULL;
	int rc = -1;

	/* A location id count that overflows size_t arithmetic is not a
	 * profile anyone can load; no need to guard it separately. */
	for (uint32_t i = 0; i < p->nstacks; i++)
		nlocids += p->stacks[i].nframes;
	memset(&b, 0, sizeof(b));
	b.strtab = calloc(nstr, sizeof(*b.strtab));
	b.funcs = calloc(p->nfuncs + 1, sizeof(*b.funcs));
	b.funcp = calloc(p->nfuncs + 1, sizeof(*b.funcp));
	b.locs = calloc(nloc + 1, sizeof(*b.locs));
	b.locp = calloc(nloc + 1, sizeof(*b.locp));
	b.lines = calloc(nloc + 1, sizeof(*b.lines));
	b.linep = calloc(nloc + 1, sizeof(*b.linep));
	b.samples = calloc(p->nstacks + 1, sizeof(*b.samples));
	b.samplep = calloc(p->nstacks + 1, sizeof(*b.samplep));
	b.locids = calloc(nlocids + 1, sizeof(*b.locids));
	b.values = calloc(2 * (size_t)p->nstacks + 1, sizeof(*b.values));
	b.labels = calloc(3 * (size_t)p->nthreads + 1, sizeof(*b.labels));
	b.labelp = calloc(3 * (size_t)p->nthreads + 1, sizeof(*b.labelp));
	for (uint32_t i = 0; i < p->nfuncs; i++)
		if (p->funcs[i].kind == FRAME_KIND_KERNEL) {
			nmaps++;
			break;
		}
	b.maps = calloc(nmaps, sizeof(*b.maps));
	b.mapp = calloc(nmaps, sizeof(*b.mapp));
	if (!b.strtab || !b.funcs || !b.funcp || !b.locs || !b.locp || !b.lines || !b.linep ||
	    !b.samples || !b.samplep || !b.locids || !b.values || !b.labels || !b.labelp ||
	    !b.maps || !b.mapp) {
		diag_errno(d, ENOMEM, "pprof output");
		goto out;
	}

	/* The interned strings already start with "", as pprof requires. */
	for (uint32_t i = 0; i < p->nstrs; i++)
		b.strtab[i] = p->strs[i];
	for (int i = 0; i < S__N; i++)
		b.strtab[p->nstrs + i] = (char *)extra[i];
#define SID(x) ((int64_t)p->nstrs + (x))

	for (uint32_t i = 0; i < p->nfuncs; i++) {
		PFunction *fn = &b.funcs[i];

		perftools__profiles__function__init(fn);
		fn->id = i + 1;
		fn->name = fn->system_name = p->funcs[i].name;
		fn->filename = p->funcs[i].file;
		fn->start_line = p->funcs[i].firstlineno;
		b.funcp[i] = fn;
	}
	for (uint32_t i = 0; i < nloc; i++) {
		PLocation *l = &b.locs[i];
		PLine *ln = &b.lines[i];

		perftools__profiles__location__init(l);
		perftools__profiles__line__init(ln);
		l->id = i + 1;
		l->mapping_id = 1;
		if (o->no_lines) {
			ln->function_id = i + 1;
			ln->line = p->funcs[i].firstlineno;
		} else {
			ln->function_id = p->frames[i].func + 1;
			ln->line = p->frames[i].line;
		}
		pprof_native_location(p, &p->funcs[ln->function_id - 1], l, nmaps);
		b.linep[i] = ln;
		l->n_line = 1;
		l->line = &b.linep[i];
		b.locp[i] = l;
	}
	/* Three labels per thread, shared by all its samples. */
	for (uint32_t t = 0; t < p->nthreads; t++) {
		PLabel *l = &b.labels[3 * t];
		const char *comm = profile_comm(p, p->threads[t].pid);

		for (int k = 0; k < 3; k++) {
			perftools__profiles__label__init(&l[k]);
			b.labelp[3 * t + k] = &l[k];
		}
		l[0].key = SID(S_PID);
		l[0].num = p->threads[t].pid;
		l[1].key = SID(S_TID);
		l[1].num = p->threads[t].tid;
		l[2].key = SID(S_COMM);
		b.strtab[p->nstrs + S__N + t] = (char *)(comm ? comm : "");
		l[2].str = SID(S__N + t);
	}
	for (uint32_t i = 0; i < p->nstacks; i++) {
		const struct prof_stack *st = &p->stacks[i];
		PSample *s = &b.samples[i];
		int has_comm = *b.strtab[p->nstrs + S__N + st->thread] != 0;

		perftools__profiles__sample__init(s);
		s->n_location_id = st->nframes;
		s->location_id = &b.locids[at];
		for (uint32_t j = 0; j < st->nframes; j++)
			b.locids[at++] = profile_frame_key(p, st->frames[j], o->no_lines) + 1;
		s->n_value = 2;
		s->value = &b.values[2 * (size_t)i];
		s->value[0] = (int64_t)st->count;
		s->value[1] = (int64_t)(st->count * p->period_ns);
		s->n_label = has_comm ? 3 : 2;
		s->label = &b.labelp[3 * (size_t)st->thread];
		b.samplep[i] = s;
	}

	for (int i = 0; i < 3; i++)
		perftools__profiles__value_type__init(&b.vt[i]);
	b.vt[0].type = SID(S_SAMPLES);
	b.vt[0].unit = SID(S_COUNT);
	b.vt[1].type = b.vt[2].type = SID(S_CLOCK);
	b.vt[1].unit = b.vt[2].unit = SID(S_NS);
	b.vtp[0] = &b.vt[0];
	b.vtp[1] = &b.vt[1];

	/* One mapping that says every location is already symbolized; without
	 * it pprof looks for a binary to symbolize against and complains. */
	for (uint32_t i = 0; i < nmaps; i++) {
		PMapping *m = &b.maps[i];

		perftools__profiles__mapping__init(m);
		m->id = i + 1;
		m->filename = SID(i ? S_KMAP : S_MAP); /* the files' names below */
		m->has_functions = m->has_filenames = m->has_line_numbers = 1;
		if (i && i <= p->nmappings) { /* a native file: where it was */
			const struct prof_mapping *pm = &p->mappings[i - 1];

			m->filename = pm->file;
			m->build_id = pm->build_id;
			m->memory_start = pm->start;
			m->memory_limit = pm->limit;
			m->file_offset = pm->offset;
			m->has_line_numbers = 0;
		}
		b.mapp[i] = m;
	}

	perftools__profiles__profile__init(&b.prof);
	b.prof.n_mapping = nmaps;
	b.prof.mapping = b.mapp;
	b.prof.n_sample_type = 2;
	b.prof.sample_type = b.vtp;
	b.prof.n_sample = p->nstacks;
	b.prof.sample = b.samplep;
	b.prof.n_location = nloc;
	b.prof.location = b.locp;
	b.prof.n_function = p->nfuncs;
	b.prof.function = b.funcp;
	b.prof.n_string_table = nstr;
	b.prof.string_table = b.strtab;
	if (p->total) {
		b.prof.time_nanos = (int64_t)p->first_ns + p->realtime_off;
		b.prof.duration_nanos = (int64_t)(p->last_ns - p->first_ns + p->period_ns);
	}
	b.prof.period_type = &b.vt[2];
	b.prof.period = (int64_t)p->period_ns;
	b.prof.default_sample_type = SID(S_SAMPLES);
#undef SID

	len = protobuf_c_message_get_packed_size(&b.prof.base);
	buf = malloc(len ? len : 1);
	if (!buf) {
		diag_errno(d, ENOMEM, "pprof output (%zu bytes)", len);
		goto out;
	}
	protobuf_c_message_pack(&b.prof.base, buf);
	if (gzip_to(f, buf, len) || ferror(f)) {
		diag_errno(d, errno ? errno : EIO, "writing pprof profile");
		goto out;
	}
	rc = 0;
out:
	free(buf);
	build_free(&b);
	return rc;
}
