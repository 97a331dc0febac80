// SPDX-License-Identifier: MIT
/*
 * record --opcodes: the instruction mark of a sample. See op_mark.h.
 */
#include "op_mark.h"

#include <stdio.h>

#include "code_cache.h"
#include "py_offsets.h"
#include "py_opcodes.h"
#include "walker_user.h"

/* The name, and base where specialized, of the sample's byte; NULL base
 * where it is none. */
static const char *op_name(const struct rec_target *t, const struct sample_hdr *h,
			   const char **base, char *buf, size_t len, struct op_stats *st)
{
	const struct py_opcode_table *tab =
	    t->proc ? py_opcodes_for(t->proc->bin.version_hex) : NULL;
	const struct py_opcode_name *op = tab ? &tab->ops[h->leaf_op] : NULL;

	*base = NULL;
	if (!(h->op_flags & OP_READ)) {
		st->not_read++;
		return h->op_flags & OP_NOT_STARTED ? "<not started>"
		       : h->op_flags & OP_OUTSIDE   ? "<past end>"
						    : "<unread>";
	}
	st->read++;
	if (!op || !op->name) {
		st->unnamed++;
		snprintf(buf, len, "<op %u>", h->leaf_op);
		return buf;
	}
	if (op->base)
		st->specialized++;
	*base = op->base;
	return op->name;
}

void op_mark_make(struct rec_target *t, const struct sample_hdr *h, const struct frame_rec *frames,
		  struct op_mark *m, struct op_stats *st)
{
	const char *base, *name;
	char unknown[16];
	int64_t index = -1;
	int col = -1, endcol = -1;

	/* The leaf frame's file and line: the cache named it, or will. */
	code_cache_symbolize(t->cache, &frames[0], &m->f);
	name = op_name(t, h, &base, unknown, sizeof(unknown), st);
	if ((h->op_flags & OP_READ) && t->proc) {
		int i = walk_instr_index(&t->proc->cfg.off, frames[0].instr);

		if (i >= 0) {
			index = (int64_t)i + OP_PREFIXES(h->op_flags);
			code_cache_cols(
			    code_cache_lookup(t->cache, frames[0].code, frames[0].fingerprint),
			    (int)index, &col, &endcol);
		}
	}
	profile_op_name(m->name, sizeof(m->name), name, base);
	m->f.name = m->name;
	m->f.kind = FRAME_KIND_MARK;
	m->f.firstlineno = 0;
	m->f.addr = profile_op_addr(h->op_flags & OP_READ ? h->leaf_op : -1, index, col, endcol);
}

uint32_t op_mark_at(const struct sym_frame *f, uint32_t n)
{
	uint32_t i = 0;

	while (i < n && f[i].kind != FRAME_KIND_PYTHON)
		i++;
	return i;
}
