// SPDX-License-Identifier: MIT
/*
 * trace's event model (trace_model.h): a per-probe detach forgets the open
 * calls of its own pair only, so the calls of another pair, interleaved on
 * the same thread, still close with their latencies; forgetting every open
 * call leaves nothing to close.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "trace_model.h"

/* Probes 0/1: an entry/return pair; 2/3: another one. */
static void setup_pairs(struct trace_data *td, struct trace_probe *p)
{
	memset(td, 0, sizeof(*td));
	memset(p, 0, 4 * sizeof(*p));
	for (int i = 0; i < 4; i++) {
		p[i].id = i;
		p[i].pair = i ^ 1;
		p[i].role = i & 1 ? TRACE_ROLE_RETURN : TRACE_ROLE_ENTRY;
	}
	td->probes = malloc(4 * sizeof(*p));
	memcpy(td->probes, p, 4 * sizeof(*p));
	td->nprobes = 4;
}

static void add(struct trace_data *td, uint32_t probe, uint64_t ts, uint32_t loc)
{
	struct trace_event e = {.ts_ns = ts, .tid = 7, .probe_id = probe, .loc = loc};

	e.stack = e.leaf = e.str[0] = e.str[1] = TRACE_NONE;
	assert_int_equal(trace_add_event(td, &e), 0);
}

static void test_forget_one_pair(void **state)
{
	struct trace_data td;
	struct trace_probe p[4];
	uint32_t la, lb;

	(void)state;
	setup_pairs(&td, p);
	la = trace_loc_get(&td, 0, 0x1000);
	lb = trace_loc_get(&td, 2, 0x2000);
	assert_int_not_equal(la, TRACE_NONE);
	assert_int_not_equal(lb, TRACE_NONE);
	add(&td, 0, 100, la); /* pair A opens */
	add(&td, 2, 200, lb); /* pair B opens inside it */
	add(&td, 0, 300, la); /* A again, innermost */
	trace_forget_open(&td, 0);
	add(&td, 3, 450, TRACE_NONE); /* B closes: its own entry, 250 ns */
	assert_int_equal(td.locs[lb].nlat, 1);
	assert_int_equal(td.locs[lb].lat[0], 250);
	assert_int_equal(td.locs[la].nlat, 0);
	add(&td, 1, 500, TRACE_NONE); /* an A return now has nothing to close */
	assert_int_equal(td.locs[la].nlat, 0);
	trace_data_free(&td);
}

static void test_forget_all(void **state)
{
	struct trace_data td;
	struct trace_probe p[4];
	uint32_t lb;

	(void)state;
	setup_pairs(&td, p);
	lb = trace_loc_get(&td, 2, 0x2000);
	add(&td, 2, 100, lb);
	add(&td, 2, 200, lb);
	trace_forget_open(&td, -1);
	add(&td, 3, 300, TRACE_NONE);
	assert_int_equal(td.locs[lb].nlat, 0);
	trace_data_free(&td);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_forget_one_pair),
	    cmocka_unit_test(test_forget_all),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
