// SPDX-License-Identifier: MIT
/*
 * py_task_on_stack: which task a thread stack read while stopped runs, as
 * the oracle's async reference finds it (the graph's running task whose
 * coroutine frame is in the stack, the leafmost if several).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "py_asyncio.h"

#define IFRAME 0x30

static void running_task_is_found_at_its_frame(void **state)
{
	struct py_task v[3] = {
	    {.addr = 0x1000, .coro = 0x9000, .state = PY_TASK_PENDING},
	    {.addr = 0x2000, .coro = 0xa000, .state = PY_TASK_RUNNING},
	    {.addr = 0x3000, .coro = 0xb000, .state = PY_TASK_RUNNING},
	};
	struct py_task_graph g = {.v = v, .n = 3, .cap = 3};
	/* leaf first: a leaf function, the running task's coroutine, the loop */
	__u64 stack[4] = {0x7000, 0xa000 + IFRAME, 0x7100, 0x7200};
	/* a pending task's coroutine frame (it cannot be there; a torn
	 * graph could say so) is not taken for the running one */
	__u64 pending[2] = {0x9000 + IFRAME, 0x7100};
	/* two running tasks' frames (one loop nested in another): the leafmost */
	__u64 both[3] = {0x7000, 0xb000 + IFRAME, 0xa000 + IFRAME};
	__u64 none[2] = {0x7000, 0x7100};
	uint32_t idx = 99;
	const struct py_task *t;

	(void)state;
	t = py_task_on_stack(&g, IFRAME, stack, 4, &idx);
	assert_non_null(t);
	assert_int_equal(t->addr, 0x2000);
	assert_int_equal(idx, 1);
	assert_null(py_task_on_stack(&g, IFRAME, pending, 2, &idx));
	t = py_task_on_stack(&g, IFRAME, both, 3, &idx);
	assert_non_null(t);
	assert_int_equal(t->addr, 0x3000);
	assert_int_equal(idx, 1);
	assert_null(py_task_on_stack(&g, IFRAME, none, 2, &idx));
	/* the frame offset matters: the coroutine object itself is no frame */
	stack[1] = 0xa000;
	assert_null(py_task_on_stack(&g, IFRAME, stack, 4, &idx));
	assert_null(py_task_on_stack(&g, IFRAME, stack, 0, &idx));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(running_task_is_found_at_its_frame),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
