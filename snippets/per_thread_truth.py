"""per_thread_truth: two threads, each only ever in its own functions.

Thread "alpha" alternates alpha_one and alpha_two, thread "beta" beta_one
and beta_two; the main thread only sleeps. A thread id whose stacks move
from one family to another is a sampler bug (stacks attributed to the wrong
thread, or a thread state read from the wrong thread).

It is also a ground-truth case: each thread measures the wall time it
spends in each phase (time.perf_counter, not CPU time, because a sampler
shows a thread's stack whether or not the thread holds the GIL or a CPU)
and the totals are written to BPFPY_TRUTH on SIGTERM.
"""
from _oracle import progress, report_truth_on_term

import threading
import time

totals = {"alpha_one": 0.0, "alpha_two": 0.0, "beta_one": 0.0, "beta_two": 0.0}


def spin(n):
    total = 0
    for i in range(n):
        total += i
    return total


def alpha_one():
    t0 = time.perf_counter()
    spin(4000)
    totals["alpha_one"] += time.perf_counter() - t0


def alpha_two():
    t0 = time.perf_counter()
    spin(12000)
    totals["alpha_two"] += time.perf_counter() - t0


def beta_one():
    t0 = time.perf_counter()
    spin(8000)
    totals["beta_one"] += time.perf_counter() - t0


def beta_two():
    t0 = time.perf_counter()
    spin(8000)
    totals["beta_two"] += time.perf_counter() - t0


def alpha_loop():
    while True:
        alpha_one()
        alpha_two()
        progress[0] += 1


def beta_loop():
    while True:
        beta_one()
        beta_two()


def main():
    report_truth_on_term(totals)
    threading.Thread(target=alpha_loop, name="alpha", daemon=True).start()
    threading.Thread(target=beta_loop, name="beta", daemon=True).start()
    while True:
        time.sleep(0.05)


if __name__ == "__main__":
    main()
