"""deep_recursion: a(300) and b(300) recurse down to leaf().

a(n) calls a(n - 1) until n is 0, which calls leaf(): 301 frames of a over
leaf. A stack holding both a and b, or fewer than 301 a frames over leaf
(a frame lost in the middle), is impossible.

Ground truth: main times each call with time.thread_time() (CPU time; one
thread, always running) and writes the totals to BPFPY_TRUTH on SIGTERM.
The clock calls are C calls in main's own frame: they add no frame, and a
stack in main alone belongs to no phase.
"""
from _oracle import progress, report_truth_on_term

DEPTH = 300


def leaf():
    total = 0
    for i in range(20000):
        total += i
    return total


def a(n):
    if n:
        return a(n - 1)
    return leaf()


def b(n):
    if n:
        return b(n - 1)
    return leaf()


def main():
    from time import thread_time

    totals = {"a": 0.0, "b": 0.0}
    report_truth_on_term(totals)
    while True:
        t0 = thread_time()
        a(DEPTH)
        t1 = thread_time()
        b(DEPTH)
        t2 = thread_time()
        totals["a"] += t1 - t0
        totals["b"] += t2 - t1
        progress[0] += 1


if __name__ == "__main__":
    main()
