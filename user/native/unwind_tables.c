// SPDX-License-Identifier: MIT
#include "unwind_tables.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "elf_file.h"
#include "monotime.h"

/* DWARF register numbers, x86_64 psABI. */
#define DW_RBP 6
#define DW_RSP 7
#define DW_RA  16

/* Rows found backwards from a hit inside a gap at most (see backfill()). */
#define BACKFILL_MAX 64

struct builder {
	struct unwind_table *t;
	Dwarf_CFI *cfi;	 /* .eh_frame */
	Dwarf_CFI *dcfi; /* .debug_frame, only when there is no .eh_frame */
	uint64_t deadline;
	int stop;
};

static int same_rule(const struct unwind_row *a, const struct unwind_row *b)
{
	return a->kind == b->kind && a->cfa_off == b->cfa_off && a->rbp_off == b->rbp_off;
}

/* Append the row r starting at pc, keeping the array sorted and without
 * two adjacent rows alike (a row ends where the next begins). */
static void push(struct builder *b, uint64_t pc, struct unwind_row r)
{
	struct unwind_table *t = b->t;

	r.pc = (uint32_t)pc;
	if (t->n && pc < t->rows[t->n - 1].pc)
		return;
	if (t->n && pc == t->rows[t->n - 1].pc) {
		t->n--; /* a gap row replaced by what was found at its start */
		if (t->n && same_rule(&t->rows[t->n - 1], &r))
			return;
	}
	if (t->n && same_rule(&t->rows[t->n - 1], &r))
		return;
	if (t->n >= UNW_MAX_ROWS) {
		t->truncated = 1;
		b->stop = 1;
		return;
	}
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 1024;
		struct unwind_row *v = realloc(t->rows, (size_t)cap * sizeof(*v));

		if (!v) {
			t->truncated = 1;
			b->stop = 1;
			return;
		}
		t->rows = v;
		t->cap = cap;
	}
	t->rows[t->n++] = r;
}

static struct unwind_row kind_row(unsigned kind)
{
	struct unwind_row r = {.kind = (uint8_t)kind};

	return r;
}

/*
 * The .plt's CFA as GNU ld writes it: rsp + 8, plus 8 more once the entry
 * has pushed its relocation index (ip & 15 >= 11; 10 with some linkers):
 * DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_litN;
 * DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus. N, or -1 if not that.
 */
static int plt_threshold(const Dwarf_Op *o, size_t n)
{
	if (n != 9 || o[0].atom != DW_OP_breg7 || o[0].number != 8 || o[1].atom != DW_OP_breg16 ||
	    o[1].number != 0 || o[2].atom != DW_OP_lit15 || o[3].atom != DW_OP_and ||
	    o[4].atom < DW_OP_lit0 || o[4].atom > DW_OP_lit31 || o[5].atom != DW_OP_ge ||
	    o[6].atom != DW_OP_lit3 || o[7].atom != DW_OP_shl || o[8].atom != DW_OP_plus)
		return -1;
	return o[4].atom - DW_OP_lit0;
}

/* The offset N of a register saved at CFA + N, as libdw spells that rule
 * (DW_OP_call_frame_cfa, then DW_OP_plus_uconst N when N != 0); 0 and *off,
 * or -1 for any other rule. */
static int saved_at_cfa(const Dwarf_Op *o, size_t n, int64_t *off)
{
	if (n == 1 && o[0].atom == DW_OP_call_frame_cfa) {
		*off = 0;
		return 0;
	}
	if (n == 2 && o[0].atom == DW_OP_call_frame_cfa && o[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)o[1].number;
		return 0;
	}
	return -1;
}

/* One frame state of libdw as the kernel's row. */
static struct unwind_row row_of(struct builder *b, Dwarf_Frame *f)
{
	struct unwind_row r = {0};
	Dwarf_Op mem[3], *ops = NULL;
	size_t nops = 0;
	int64_t off;
	unsigned kind, rbp = UNW_RBP_SAME;
	int thr;

	/* Return address: at CFA - 8, or undefined in the outermost frame. */
	if (dwarf_frame_register(f, DW_RA, mem, &ops, &nops))
		goto unsupported;
	if (!nops && ops == mem) {
		b->t->end_rows++;
		return kind_row(UNW_CFA_END);
	}
	if (saved_at_cfa(ops, nops, &off) || off != -8)
		goto unsupported;

	ops = NULL;
	nops = 0;
	if (dwarf_frame_cfa(f, &ops, &nops) || !nops)
		goto unsupported;
	if (nops == 1 && ops[0].atom == DW_OP_bregx &&
	    (ops[0].number == DW_RSP || ops[0].number == DW_RBP)) {
		off = (int64_t)ops[0].number2;
		kind = ops[0].number == DW_RSP ? UNW_CFA_RSP : UNW_CFA_RBP;
		/* The CFA is above the register it is computed from; frames
		 * over 64 KiB (stack buffers) are counted in words. */
		if (off <= 0 || (off > UINT16_MAX && (off % 8 || off / 8 > UINT16_MAX)))
			goto unsupported;
		if (off > UINT16_MAX) {
			kind |= UNW_CFA_SCALED;
			off /= 8;
		}
		r.cfa_off = (uint16_t)off;
	} else if ((thr = plt_threshold(ops, nops)) >= 0) {
		kind = UNW_CFA_PLT;
		r.cfa_off = (uint16_t)thr;
		b->t->plt_rows++;
	} else {
		goto unsupported;
	}

	/* rbp: unchanged, or saved at CFA + 8k. Any other rule (in another
	 * register, an expression) is rare enough to leave the caller's rbp
	 * unknown: kept as it is, which only matters if a caller's CFA is
	 * rbp-based. */
	ops = NULL;
	nops = 0;
	if (dwarf_frame_register(f, DW_RBP, mem, &ops, &nops) == 0 && !nops && !ops) {
		rbp = UNW_RBP_SAME;
	} else if (ops && !saved_at_cfa(ops, nops, &off) && off % 8 == 0 && off / 8 >= -128 &&
		   off / 8 <= 127) {
		rbp = UNW_RBP_CFA;
		r.rbp_off = (int8_t)(off / 8);
	} else {
		rbp = UNW_RBP_UNDEF;
	}
	r.kind = (uint8_t)(kind | rbp << 4);
	return r;
unsupported:
	b->t->unsupported_rows++;
	return kind_row(UNW_CFA_UNSUPPORTED);
}

/* CFI at pc: the row and the range [*start, *end) it holds for. 0, or -1
 * when there is none (or a cap stopped the build: b->stop). */
static int lookup(struct builder *b, uint64_t pc, struct unwind_row *r, uint64_t *start,
		  uint64_t *end)
{
	Dwarf_Frame *f = NULL;
	Dwarf_Addr s = 0, e = 0;
	bool sig = false;

	if (b->t->probes >= UNW_MAX_PROBES ||
	    (!(b->t->probes & 1023) && b->t->probes && mono_ns() > b->deadline)) {
		b->t->truncated = 1;
		b->stop = 1;
		return -1;
	}
	b->t->probes++;
	if (!b->cfi || dwarf_cfi_addrframe(b->cfi, pc, &f)) {
		f = NULL;
		if (b->dcfi && dwarf_cfi_addrframe(b->dcfi, pc, &f))
			f = NULL;
	}
	if (!f)
		return -1;
	if (dwarf_frame_info(f, &s, &e, &sig) < 0 || s > pc || e <= pc) {
		s = pc;
		e = pc + 1;
	}
	/* A signal frame's return address is exact, not after a call: the
	 * kernel's ip - 1 would be off by one. Rare (glibc's restorer); the
	 * kernel does not follow it. */
	*r = sig ? kind_row(UNW_CFA_UNSUPPORTED) : row_of(b, f);
	free(f);
	*start = s;
	*end = e;
	return 0;
}

/*
 * A lookup inside a gap found a row starting at s, after the gap's start:
 * the rows of the same FDE before s (a function's first rows are often a
 * byte or two long, shorter than the gap's 16-byte step) are found going
 * backwards from s - 1, then pushed in order.
 */
static void backfill(struct builder *b, uint64_t gap_start, uint64_t s)
{
	struct {
		uint64_t pc;
		struct unwind_row r;
	} st[BACKFILL_MAX];
	int k = 0;
	uint64_t q = s, s2, e2;
	struct unwind_row r2;

	while (q > gap_start && k < BACKFILL_MAX && !lookup(b, q - 1, &r2, &s2, &e2) && s2 < q) {
		st[k].pc = s2 > gap_start ? s2 : gap_start;
		st[k].r = r2;
		k++;
		q = s2;
	}
	while (k-- > 0)
		push(b, st[k].pc, st[k].r);
}

/* Every row of one executable segment [lo, hi). */
static void sweep(struct builder *b, uint64_t lo, uint64_t hi)
{
	uint64_t pc = lo, gap = UINT64_MAX, s, e;
	struct unwind_row r;

	while (pc < hi && !b->stop) {
		if (!lookup(b, pc, &r, &s, &e)) {
			if (gap != UINT64_MAX && s < pc) {
				backfill(b, gap, s);
				pc = s > gap ? s : gap;
			}
			push(b, pc, r);
			pc = e > pc ? e : pc + 1;
			gap = UINT64_MAX;
			continue;
		}
		if (b->stop)
			break;
		/* No CFI: padding between functions, code without CFI, or
		 * no CFI at all. Probe at the next 16-byte boundary (where
		 * functions start), the backfill finds the rest. */
		if (gap == UINT64_MAX) {
			gap = pc;
			push(b, pc, kind_row(UNW_CFA_NONE));
		}
		pc = (pc + 16) & ~15ull;
	}
	/* Past the segment, or past where a cap stopped: no CFI. */
	push(b, pc < hi ? pc : hi, kind_row(UNW_CFA_NONE));
}

/* A CFI section small enough to let libdw read it; 1 if present and not
 * over the cap. */
static int cfi_section_ok(struct elfsym *e, const char *sec)
{
	uint64_t addr, size;

	return !elfsym_section(e, sec, &addr, &size) && size && size <= UNW_MAX_CFI_BYTES;
}

int unwind_table_build(struct elfsym *e, const char *name, struct unwind_table *t, struct diag *d)
{
	struct builder b = {.t = t};
	Dwarf *dw = NULL;
	struct elfsym_seg seg;
	Elf *elf = elfsym_elf(e);
	uint64_t t0 = mono_ns();

	memset(t, 0, sizeof(*t));
	b.deadline = t0 + (uint64_t)UNW_MAX_BUILD_MS * 1000000;
	if (cfi_section_ok(e, ".eh_frame"))
		b.cfi = dwarf_getcfi_elf(elf);
	if (!b.cfi && cfi_section_ok(e, ".debug_frame") && cfi_section_ok(e, ".debug_info")) {
		dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
		b.dcfi = dw ? dwarf_getcfi(dw) : NULL;
		t->from_debug = !!b.dcfi;
	}
	for (size_t i = 0; !elfsym_segment(e, i, &seg) && !b.stop; i++) {
		uint64_t hi = seg.vaddr + seg.memsz;

		if (!seg.exec || !seg.memsz)
			continue;
		/* Rows hold 32-bit addresses: a segment above 4 GiB (a huge
		 * non-PIE binary) has no table, so frame pointers there. */
		if (hi < seg.vaddr || hi > UINT32_MAX) {
			t->truncated = 1;
			continue;
		}
		sweep(&b, seg.vaddr, hi);
	}
	if (b.cfi)
		dwarf_cfi_end(b.cfi);
	if (dw)
		dwarf_end(dw);
	for (uint32_t i = 0; i < t->n; i++)
		t->nocfi_rows += (t->rows[i].kind & 7) == UNW_CFA_NONE;
	t->build_ns = mono_ns() - t0;
	if (!t->n)
		return diag_set(d, EXIT_FAIL, "%s: no executable segment for an unwind table",
				name ? name : "ELF file");
	return 0;
}

void unwind_table_free(struct unwind_table *t)
{
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

const struct unwind_row *unwind_table_find(const struct unwind_table *t, uint64_t vaddr)
{
	uint32_t lo = 0, hi = t->n;

	if (!t->n || vaddr > UINT32_MAX || vaddr < t->rows[0].pc)
		return NULL;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= vaddr)
			lo = mid;
		else
			hi = mid;
	}
	return &t->rows[lo];
}

uint32_t unwind_row_cfa_off(const struct unwind_row *r)
{
	return r->kind & UNW_CFA_SCALED ? (uint32_t)r->cfa_off * 8 : r->cfa_off;
}

void unwind_row_str(const struct unwind_row *r, char *buf, size_t len)
{
	static const char *const cfa[] = {"nocfi", "rsp", "rbp", "plt", "end", "unsupported"};
	unsigned k = r->kind & 7, rbp = r->kind >> 4;

	if (k == UNW_CFA_RSP || k == UNW_CFA_RBP) {
		if (rbp == UNW_RBP_CFA)
			snprintf(buf, len, "%s+%u rbp=cfa%+d", cfa[k], unwind_row_cfa_off(r),
				 r->rbp_off * 8);
		else
			snprintf(buf, len, "%s+%u rbp=%s", cfa[k], unwind_row_cfa_off(r),
				 rbp == UNW_RBP_SAME ? "same" : "undef");
	} else if (k == UNW_CFA_PLT) {
		snprintf(buf, len, "plt/%d", r->cfa_off);
	} else {
		snprintf(buf, len, "%s", k < sizeof(cfa) / sizeof(cfa[0]) ? cfa[k] : "?");
	}
}
