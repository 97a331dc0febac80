# The detach of bpfpy trace (test_trace_detach.sh): known calls first, then
# a rare location that fires on its own, then hot calls until the tracer has
# let the probes go. Prints "ready", waits for GO1; calls leaf() N_LEAF
# times from mid() N_MID times and prints "done"; then calls tick() every
# 20 ms until GO2 exists; then hot batches of leaf() (with one tick() each,
# the rare location that never saturates) until STOP exists or 60 s pass.
# leaf() and tick() call repr(), so a uprobe on PyObject_Repr sees them.
# Args: N_MID N_LEAF GO1 GO2 STOP
import os
import sys
import time

n_mid, n_leaf, go1, go2, stop = int(sys.argv[1]), int(sys.argv[2]), *sys.argv[3:6]


def leaf(i):
    return len(repr(i))


def mid(k):
    s = 0
    for i in range(k):
        s += leaf(i)
    return s


def tick():
    return repr(tick)


print("ready", flush=True)
while not os.path.exists(go1):
    time.sleep(0.01)
for _ in range(n_mid):
    mid(n_leaf)
print("done", flush=True)
while not os.path.exists(go2):
    tick()
    time.sleep(0.02)
end = time.monotonic() + 60
while time.monotonic() < end and not os.path.exists(stop):
    tick()
    for i in range(5000):
        leaf(i)
print("end", flush=True)
