"""ground_truth: phases that measure their own CPU time.

Three phases of unequal length (1 : 2 : 4) run in turn on one thread. Each
adds its own time.thread_time() to a total; on SIGTERM the totals go to the
file named by BPFPY_TRUTH, as {"phase_a": seconds, ...}. The measurement is
inside each phase function, so the time a sampler attributes to a frame of
phase_x is what phase_x measured, to within a clock call.
"""
from _oracle import progress, report_truth_on_term

import time

totals = {"phase_a": 0.0, "phase_b": 0.0, "phase_c": 0.0}


def spin(n):
    total = 0
    for i in range(n):
        total += i
    return total


def phase_a():
    t0 = time.thread_time()
    spin(5000)
    totals["phase_a"] += time.thread_time() - t0


def phase_b():
    t0 = time.thread_time()
    spin(10000)
    totals["phase_b"] += time.thread_time() - t0


def phase_c():
    t0 = time.thread_time()
    spin(20000)
    totals["phase_c"] += time.thread_time() - t0


def main():
    report_truth_on_term(totals)
    while True:
        phase_a()
        phase_b()
        phase_c()
        progress[0] += 1


if __name__ == "__main__":
    main()
