# Known calls for bpfpy trace: prints "ready", waits for "go" (a file or
# stdin line), then calls leaf() N_LEAF times from mid() and mid() N_MID
# times, prints "done", and then times batches of calls so that a detach
# shows up as a speed-up. Args: N_MID N_LEAF GO_FILE [SECONDS]
import os
import sys
import time

n_mid, n_leaf, go = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0


def leaf(i):
    return i + 1


def mid(k):
    s = 0
    for i in range(k):
        s = leaf(s)
    return s


print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.01)
for _ in range(n_mid):
    mid(n_leaf)
print("done", flush=True)
end = time.monotonic() + seconds
while time.monotonic() < end:
    t = time.perf_counter()
    # Inline, not in a helper function: a helper would be a location hit
    # once per batch, never saturated, which --cutoff 0 would wait for
    # forever (test_trace_detach.sh has such a location, under the default).
    for _ in range(20000):
        leaf(0)
    print("batch %.6f" % (time.perf_counter() - t), flush=True)
