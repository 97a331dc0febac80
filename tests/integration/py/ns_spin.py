# A steady CPU load for tests/integration/test_containers.sh: the main
# thread and one worker spin in pure Python (no allocation of containers,
# so no GC), each in its own function. Once both run, writes "ready" to a
# fresh file argv[1] (atomically: written aside, then renamed), which is
# the test's signal that this very process is ready. argv[2] (optional):
# a file that, once it exists, makes the process exit.
import os
import sys
import threading

ready, stop = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else None)
started = threading.Event()


def spin_worker():
    started.set()
    x = 0
    while True:
        for i in range(100000):  # L:worker
            x ^= i


def spin_main():
    x = 0
    while True:
        for i in range(100000):  # L:main
            x ^= i
        if stop and os.path.exists(stop):
            os._exit(0)


threading.Thread(target=spin_worker, daemon=True).start()
started.wait()
with open(ready + ".tmp", "w") as f:
    f.write("ready %d\n" % os.getpid())
os.rename(ready + ".tmp", ready)
spin_main()
