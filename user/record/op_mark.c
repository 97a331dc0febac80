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

/* The name, and base where specialized, of the byte op (OP_* flags);
 * NULL base where it is none. */
static const char *op_name(const struct py_process *proc, uint8_t op, uint8_t flags,
			   const char **base, char *buf, size_t len, struct op_stats *st)
{
	const struct py_opcode_table *tab = proc ? py_opcodes_for(proc->bin.version_hex) : NULL;
	const struct py_opcode_name *o = tab ? &tab->ops[op] : NULL;

	*base = NULL;
	if (!(flags & OP_READ)) {
		st->not_read++;
		return flags & OP_NOT_STARTED ? "<not started>"
		       : flags & OP_OUTSIDE   ? "<past end>"
					      : "<unread>";
	}
	st->read++;
	if (!o || !o->name) {
		st->unnamed++;
		snprintf(buf, len, "<op %u>", op);
		return buf;
	}
	if (o->base)
		st->specialized++;
	*base = o->base;
	return o->name;
}

void op_mark_of(const struct py_process *proc, struct code_cache *cache, uint8_t op, uint8_t flags,
		const struct frame_rec *leaf, struct op_mark *m, struct op_stats *st)
{
	const char *base, *name;
	char unknown[16];
	int64_t index = -1;
	int col = -1, endcol = -1;

	/* The leaf frame's file and line: the cache named it, or will. */
	code_cache_symbolize(cache, leaf, &m->f);
	name = op_name(proc, op, flags, &base, unknown, sizeof(unknown), st);
	if ((flags & OP_READ) && proc) {
		int i = walk_instr_index(&proc->cfg.off, leaf->instr);

		if (i >= 0) {
			index = (int64_t)i + OP_PREFIXES(flags);
			code_cache_cols(code_cache_lookup(cache, leaf->code, leaf->fingerprint),
					(int)index, &col, &endcol);
		}
	}
	profile_op_name(m->name, sizeof(m->name), name, base);
	m->f.name = m->name;
	m->f.kind = FRAME_KIND_MARK;
	m->f.firstlineno = 0;
	m->f.addr = profile_op_addr(flags & OP_READ ? op : -1, index, col, endcol);
}

void op_mark_make(struct rec_target *t, const struct sample_hdr *h, const struct frame_rec *frames,
		  struct op_mark *m, struct op_stats *st)
{
	op_mark_of(t->proc, t->cache, h->leaf_op, h->op_flags, &frames[0], m, st);
}

uint32_t op_mark_at(const struct sym_frame *f, uint32_t n)
{
	uint32_t i = 0;

	while (i < n && f[i].kind != FRAME_KIND_PYTHON)
		i++;
	return i;
}
