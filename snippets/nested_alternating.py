"""nested_alternating: a_parent -> a_leaf -> burn_a, then the same for b.

burn_* is a 20 000-step Python loop, so most samples see the full chain.

Ground truth: main times each call with time.thread_time() (CPU time; one
thread, always running) and writes the totals to BPFPY_TRUTH on SIGTERM.
The clock calls are C calls in main's own frame: they add no frame, and a
stack in main alone belongs to no phase.
"""
from _oracle import progress, report_truth_on_term


def burn_a():
    total = 0
    for i in range(20000):
        total += i
    return total


def burn_b():
    total = 0
    for i in range(20000):
        total -= i
    return total


def a_leaf():
    return burn_a()


def b_leaf():
    return burn_b()


def a_parent():
    return a_leaf()


def b_parent():
    return b_leaf()


def main():
    from time import thread_time

    totals = {"a_parent": 0.0, "b_parent": 0.0}
    report_truth_on_term(totals)
    while True:
        t0 = thread_time()
        a_parent()
        t1 = thread_time()
        b_parent()
        t2 = thread_time()
        totals["a_parent"] += t1 - t0
        totals["b_parent"] += t2 - t1
        progress[0] += 1


if __name__ == "__main__":
    main()
