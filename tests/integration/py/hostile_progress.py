# A well-behaved target for the signal tests: the main thread counts and
# publishes the count to argv[1] every ~20 ms (so a test sees whether the
# process still makes progress), three threads sleep, spin in Python, and
# spin in C, so a stop catches threads in every state.
import hashlib
import os
import sys
import threading
import time


def sleeper():
    while True:
        time.sleep(0.01)


def spinner():
    x = 0
    while True:
        x += 1


def c_spinner():
    while True:
        hashlib.pbkdf2_hmac("sha256", b"x", b"y", 20000)


# argv[2]: extra sleeping threads, so that a stop of every thread lasts
# long enough (milliseconds) for a test to catch it and kill the tracer.
extra = int(sys.argv[2]) if len(sys.argv) > 2 else 0
for fn in (sleeper, spinner, c_spinner) + (sleeper,) * extra:
    threading.Thread(target=fn, daemon=True).start()
print("ready", os.getpid(), flush=True)
path, n, last = sys.argv[1], 0, 0.0
while True:
    n += 1
    if n % 1024 == 0:
        now = time.monotonic()
        if now - last > 0.02:
            last = now
            with open(path + ".tmp", "w") as f:
                f.write(str(n))
            os.replace(path + ".tmp", path)
