"""threads: many threads doing CPU and I/O work. No impossibility rule.

Twelve worker threads (the original used 5 to 100) choose CPU or I/O work
from a per-thread seeded random generator: varied, yet the same sequence in
every run. Each worker bumps the progress counter; the increments race
between threads, which only makes the count a little low.
"""
from _oracle import progress

import random
import threading
import time

N_THREADS = 12


def cpu_work(n):
    total = 0
    for i in range(n):
        total += i
    return total


def io_work(seconds):
    time.sleep(seconds)


def worker(seed):
    rng = random.Random(seed)
    while True:
        if rng.random() < 0.6:
            cpu_work(rng.randint(1000, 20000))
        else:
            io_work(rng.uniform(0.0002, 0.002))
        progress[0] += 1


def main():
    for i in range(N_THREADS):
        threading.Thread(target=worker, args=(i,), daemon=True).start()
    while True:
        time.sleep(0.1)


if __name__ == "__main__":
    main()
