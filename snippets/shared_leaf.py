"""shared_leaf: one leaf, two callers, two branches.

a_wrapper always takes the short branch of shared_leaf, b_wrapper the long
one, so the line of shared_leaf tells which wrapper must be its parent.
"""
from _oracle import progress, report_truth_on_term


def shared_leaf(long_run):
    total = 0
    if long_run:
        for i in range(30000):
            total += i
    else:
        for i in range(3000):
            total ^= i
    return total


def a_wrapper(): return shared_leaf(False)
def b_wrapper(): return shared_leaf(True)


def main():
    # Ground truth: main's CPU time (one thread) around each wrapper's call,
    # to BPFPY_TRUTH on SIGTERM. Imported here, not at the top: the rules
    # name lines of the functions above, which must not move.
    from time import thread_time

    totals = {"a_wrapper": 0.0, "b_wrapper": 0.0}
    report_truth_on_term(totals)
    while True:
        t0 = thread_time()
        a_wrapper()
        t1 = thread_time()
        b_wrapper()
        t2 = thread_time()
        totals["a_wrapper"] += t1 - t0
        totals["b_wrapper"] += t2 - t1
        progress[0] += 1


if __name__ == "__main__":
    main()
