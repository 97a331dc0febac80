// SPDX-License-Identifier: MIT
#include "splice.h"

#include <stdlib.h>
#include <string.h>

#include "native_symbols.h"
#include "native_tables.h"
#include "py_offsets.h"

static const char *const cause_names[SPLICE__COUNT] = {
    [SPLICE_EVAL_EMPTY] = "eval frame without Python frames",
    [SPLICE_NO_MARKER] = "Python run without entry marker",
    [SPLICE_PY_UNCLAIMED] = "Python frames no eval frame claimed",
    [SPLICE_NATIVE_LOST] = "Python frames past a lost native unwind",
    [SPLICE_UNMAPPED] = "native address in no file mapping",
    [SPLICE_OVER_LIMIT] = "native/kernel frames over the limit",
};

const char *splice_cause_name(int cause)
{
	return cause >= 0 && cause < SPLICE__COUNT ? cause_names[cause] : "?";
}

static void put(struct sym_frame *out, uint32_t cap, uint32_t *n, const struct sym_frame *f)
{
	if (*n < cap)
		out[*n] = *f;
	(*n)++;
}

/* A complete native stack, root to leaf: each eval frame takes the next run
 * from the root, which starts at its entry marker. The Python chain's root
 * part is the stable one (the leaf end is where frames are pushed and
 * popped around calls), so a sample caught between an eval call and its
 * first frame, or after its last frame is popped, leaves that eval frame
 * native instead of shifting every run by one. */
static uint32_t splice_from_root(const struct splice_input *in, struct sym_frame *tmp, uint32_t cap,
				 uint64_t *causes)
{
	uint32_t n = 0, k = in->npy; /* Python frames py[0..k) are unclaimed */

	for (uint32_t i = in->nnative; i-- > 0;) {
		if (!in->is_eval[i]) {
			put(tmp, cap, &n, &in->native[i]);
			continue;
		}
		if (!k) {
			causes[SPLICE_EVAL_EMPTY]++;
			put(tmp, cap, &n, &in->native[i]);
			continue;
		}
		if (!in->entry[k - 1])
			causes[SPLICE_NO_MARKER]++;
		put(tmp, cap, &n, &in->py[--k]);
		while (k && !in->entry[k - 1])
			put(tmp, cap, &n, &in->py[--k]);
	}
	if (k) {
		struct sym_frame mark = {
		    .name = SPLICE_MARK_UNCLAIMED, .file = "", .kind = FRAME_KIND_MARK};

		causes[SPLICE_PY_UNCLAIMED]++;
		put(tmp, cap, &n, &mark);
		while (k)
			put(tmp, cap, &n, &in->py[--k]);
	}
	return n < cap ? n : cap;
}

uint32_t splice_stack(const struct splice_input *in, struct sym_frame *out, uint32_t cap,
		      uint64_t *causes)
{
	uint32_t n = 0, k = 0;

	for (uint32_t i = 0; i < in->nkernel; i++)
		put(out, cap, &n, &in->kernel[i]);
	if (!(in->flags & SPLICE_NATIVE_INCOMPLETE) && n < cap) {
		/* Root first after the kernel frames, then turned leaf first. */
		uint32_t m = splice_from_root(in, out + n, cap - n, causes);

		for (uint32_t a = n, b = n + m - 1; m && a < b; a++, b--) {
			struct sym_frame t = out[a];

			out[a] = out[b];
			out[b] = t;
		}
		return n + m;
	}
	/* The root part is missing: leaf to root, each eval frame's run ends
	 * at its entry marker; what is left goes behind a mark at the root. */
	for (uint32_t i = 0; i < in->nnative; i++) {
		if (!in->is_eval[i]) {
			put(out, cap, &n, &in->native[i]);
			continue;
		}
		if (k >= in->npy) {
			causes[SPLICE_EVAL_EMPTY]++;
			put(out, cap, &n, &in->native[i]);
			continue;
		}
		while (k < in->npy) {
			int entry = in->entry[k] != 0;

			put(out, cap, &n, &in->py[k++]);
			if (entry)
				break;
			if (k == in->npy)
				causes[SPLICE_NO_MARKER]++;
		}
	}
	if (k < in->npy) {
		struct sym_frame mark = {
		    .name = SPLICE_MARK_LOST, .file = "", .kind = FRAME_KIND_MARK};

		causes[SPLICE_NATIVE_LOST]++;
		put(out, cap, &n, &mark);
		while (k < in->npy)
			put(out, cap, &n, &in->py[k++]);
	}
	return n < cap ? n : cap;
}

struct splice_scratch {
	struct native_sym nsym[SPLICE_MAX_NATIVE], ksym[SPLICE_MAX_NATIVE];
	struct sym_frame native[SPLICE_MAX_NATIVE], kernel[SPLICE_MAX_NATIVE];
	uint8_t is_eval[SPLICE_MAX_NATIVE];
	uint32_t entry[BPFPY_MAX_DEPTH];
	struct sym_frame out[SPLICE_MAX_OUT];
};

struct splice_scratch *splice_scratch_new(void)
{
	return calloc(1, sizeof(struct splice_scratch));
}

void splice_scratch_free(struct splice_scratch *sc)
{
	free(sc);
}

int splice_sample(struct native_syms *ns, struct splice_scratch *sc, const struct splice_sample *s,
		  const struct sym_frame **out, uint32_t *nout, uint64_t *causes)
{
	struct splice_input in = {
	    .py = s->py,
	    .entry = sc->entry,
	    .npy = s->npy < BPFPY_MAX_DEPTH ? s->npy : BPFPY_MAX_DEPTH,
	    .native = sc->native,
	    .is_eval = sc->is_eval,
	    .kernel = sc->kernel,
	    .flags = s->incomplete ? SPLICE_NATIVE_INCOMPLETE : 0,
	};
	uint32_t nu = s->nuser, nk = s->nkernel;

	if (nu > SPLICE_MAX_NATIVE || nk > SPLICE_MAX_NATIVE) {
		causes[SPLICE_OVER_LIMIT]++;
		/* The root part is gone: as good as an unwind that stopped. */
		if (nu > SPLICE_MAX_NATIVE)
			in.flags |= SPLICE_NATIVE_INCOMPLETE;
		nu = nu < SPLICE_MAX_NATIVE ? nu : SPLICE_MAX_NATIVE;
		nk = nk < SPLICE_MAX_NATIVE ? nk : SPLICE_MAX_NATIVE;
	}
	for (uint32_t i = 0; i < in.npy; i++)
		sc->entry[i] = s->rec ? (uint32_t)s->rec[i].instr & FRAME_INSTR_ENTRY : 0;
	for (uint32_t i = 0; i < nu; i++) {
		struct native_sym *y = &sc->nsym[i];

		if (native_syms_user(ns, s->pid, s->uips[i], i > 0, y))
			causes[SPLICE_UNMAPPED]++;
		sc->native[i] = (struct sym_frame){
		    .name = y->name,
		    .file = y->lib ? y->lib->name : "",
		    .kind = FRAME_KIND_NATIVE,
		    .lib = y->lib,
		    .addr = y->sym_vaddr,
		};
		sc->is_eval[i] = y->exact && py_native_is_eval(s->version_hex, y->name);
	}
	for (uint32_t i = 0; i < nk; i++) {
		struct native_sym *y = &sc->ksym[i];

		native_syms_kernel(ns, s->kips[i], i > 0, y);
		sc->kernel[i] = (struct sym_frame){
		    .name = y->name,
		    .file = y->module ? y->module : "",
		    .kind = FRAME_KIND_KERNEL,
		    .addr = y->sym_vaddr,
		};
	}
	in.nnative = nu;
	in.nkernel = nk;
	*nout = splice_stack(&in, sc->out, sizeof(sc->out) / sizeof(sc->out[0]), causes);
	*out = sc->out;
	return 0;
}

int splice_record(struct native_syms *ns, struct splice_scratch *sc, const struct sample_hdr *h,
		  const struct frame_rec *rec, const struct sym_frame *py, uint32_t version_hex,
		  const struct sym_frame **out, uint32_t *nout, uint64_t *causes)
{
	struct splice_sample s = {
	    .pid = (pid_t)h->pid,
	    .version_hex = version_hex,
	    .py = py,
	    .rec = rec,
	    .npy = h->nframes,
	    .uips = native_ips(h),
	    .nuser = h->nnative,
	    .kips = kernel_ips(h),
	    .nkernel = h->nkernel,
	    .incomplete = (h->native_flags & (NATIVE_LOST | NATIVE_TRUNCATED)) != 0,
	};

	return splice_sample(ns, sc, &s, out, nout, causes);
}

void splice_summary(FILE *f, struct native_syms *ns, const uint64_t *causes)
{
	struct native_syms_stats st;
	int any = 0;

	native_syms_stats(ns, &st);
	fprintf(f,
		"  native symbols: %llu files (%llu through debug files, %llu without symbols), "
		"%llu kernel symbols; %llu addresses in no file\n",
		(unsigned long long)st.files, (unsigned long long)st.debug_files,
		(unsigned long long)st.no_symbols, (unsigned long long)st.kernel_syms,
		(unsigned long long)st.unmapped);
	for (int i = 0; i < SPLICE__COUNT; i++)
		if (causes[i]) {
			fprintf(f, "%s%s %llu",
				any ? ", " : "  not placed (samples): ", splice_cause_name(i),
				(unsigned long long)causes[i]);
			any = 1;
		}
	if (any)
		fputc('\n', f);
}
