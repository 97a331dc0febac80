"""opcode_phases: a hot loop alternating two phases of known instruction mixes.

int_add adds ints (x = x + 3): CPython 3.11+ specializes that BINARY_OP to
BINARY_OP_ADD_INT once it has run a few times, and nothing here ever makes
it deoptimize. mixed_add adds an int too large to be "compact" (one 30-bit
digit) and a float (t = a + b): no version specializes that mix (3.14's
BINARY_OP_EXTEND takes compact ints only; 3.15's also takes tuple, list and
bytes concatenation, which is why this is not one), so it stays the generic
BINARY_OP (3.11: its adaptive form, BINARY_OP_ADAPTIVE, which failed to
specialize). On 3.8-3.10 both are BINARY_ADD, never quickened.
Each phase times itself (time.thread_time(), CPU time of the one thread)
around its call, so the truth says how the time splits between them; the
rules (opcode_phases.rules) say which instructions each add line can show.
The add lines carry "# L:" markers for the tests.
"""
from _oracle import progress, report_truth_on_term

import time

totals = {"int_add": 0.0, "mixed_add": 0.0}


def int_add(n):
    x = 0
    for _ in range(n):
        x = x + 3  # L:int
    return x


def mixed_add(n):
    a = 10 ** 30
    b = 0.5
    t = b
    for _ in range(n):
        t = a + b  # L:mixed
    return t


def main():
    report_truth_on_term(totals)
    while True:
        t0 = time.thread_time()
        int_add(4000)
        t1 = time.thread_time()
        mixed_add(2000)
        t2 = time.thread_time()
        totals["int_add"] += t1 - t0
        totals["mixed_add"] += t2 - t1
        progress[0] += 1


if __name__ == "__main__":
    main()
