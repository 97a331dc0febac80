"""gen_alternating: two long-lived generators, each driven by its own driver.

agen is only ever resumed by drv_a and bgen only by drv_b, so a generator
frame linked under the other driver is impossible: the test of a sampler
that follows a generator's frame back to a stale parent.

Ground truth: main times each call with time.thread_time() (CPU time; one
thread, always running) and writes the totals to BPFPY_TRUTH on SIGTERM.
The clock calls are C calls in main's own frame: they add no frame, and a
stack in main alone belongs to no phase.
"""
from _oracle import progress, report_truth_on_term


def agen():
    while True:
        total = 0
        for i in range(3000):
            total += i
        yield total


def bgen():
    while True:
        total = 0
        for i in range(3000):
            total -= i
        yield total


def drv_a(gen):
    for _ in range(5):
        next(gen)


def drv_b(gen):
    for _ in range(5):
        next(gen)


def main():
    ga = agen()
    gb = bgen()
    from time import thread_time

    totals = {"drv_a": 0.0, "drv_b": 0.0}
    report_truth_on_term(totals)
    while True:
        t0 = thread_time()
        drv_a(ga)
        t1 = thread_time()
        drv_b(gb)
        t2 = thread_time()
        totals["drv_a"] += t1 - t0
        totals["drv_b"] += t2 - t1
        progress[0] += 1


if __name__ == "__main__":
    main()
