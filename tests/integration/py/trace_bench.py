# Call-heavy work for scripts/bench_trace.sh: prints "ready", waits for
# GO_FILE, runs fib(N) REPS times and prints "elapsed SECONDS".
# Args: N REPS GO_FILE
import os
import sys
import time

n, reps, go = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]


def fib(k):
    return k if k < 2 else fib(k - 1) + fib(k - 2)


print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.005)
t = time.perf_counter()
for _ in range(reps):
    fib(n)
print("elapsed %.6f" % (time.perf_counter() - t), flush=True)
