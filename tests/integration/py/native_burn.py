# --native: a C extension (tests/integration/native/burnmod.c) that calls
# back into Python and burns CPU in C. argv[1]: the directory holding the
# built burnmod; argv[2]: a file that every round of outer() replaces with
# "C_NS THREAD_NS" (burn_loop's CPU time so far, the thread's), so the test
# reads the figures of the window it recorded.
#   <module> -> outer -> spin [native, burnmod] -> burn_loop [native]
#   <module> -> outer -> spin [native] -> ... -> inner (Python)
import os
import sys
import time

sys.path.insert(0, sys.argv[1])
import burnmod  # noqa: E402


def inner():
    s = 0
    for i in range(20000):
        s += i
    return s


def outer():
    burnmod.spin(inner, 20, 400000)


outer()
print("ready", flush=True)
report = sys.argv[2]
while True:
    outer()
    tmp = report + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d %d\n" % (burnmod.c_ns(), int(time.thread_time() * 1e9)))
    os.replace(tmp, report)
