# Two functions of the same loop body for tests/integration/test_diff.sh:
# `diff_pair.py A B` calls alpha(A * N) and beta(B * N) in turn forever, so
# alpha has about A/(A+B) of the CPU time and beta B/(A+B): recorded with
# 1 1 and then 3 1, alpha's share grows and beta's shrinks. How much, the
# program measures itself: it prints "ready", then every 50 ms
#   stats ALPHA_S BETA_S
# the CPU seconds (time.thread_time) spent in each so far; the test takes
# the difference of two lines around a recording.
import sys
import time

N = 10000


def alpha(n):
    x = 0
    for i in range(n):
        x = x ^ i
    return x


def beta(n):
    x = 0
    for i in range(n):
        x = x ^ i
    return x


def main(a, b):
    print("ready", flush=True)
    spent = [0.0, 0.0]
    last = time.monotonic()
    while True:
        t0 = time.thread_time()
        alpha(a * N)
        t1 = time.thread_time()
        beta(b * N)
        t2 = time.thread_time()
        spent[0] += t1 - t0
        spent[1] += t2 - t1
        if time.monotonic() - last >= 0.05:
            last = time.monotonic()
            print("stats %.6f %.6f" % tuple(spent), flush=True)


main(int(sys.argv[1]), int(sys.argv[2]))
