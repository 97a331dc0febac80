"""bench_threads: the benchmark's 8 busy threads (make bench).

Eight threads each spin in their own loop; the main thread waits. The
progress counter sums every thread's iterations (a lost increment under a
race is harmless: the rate, not the count, is what is compared).
"""
import threading

from _oracle import progress


def work():
    while True:
        x = 0
        for i in range(200):
            x += i
        progress[0] += 1


def main():
    threads = [threading.Thread(target=work, daemon=True) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
