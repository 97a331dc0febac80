# Four threads that each spend their time one way, measuring it themselves,
# for tests/integration/test_offcpu.sh:
#   sleeper  time.sleep(0.01) in a loop, then writes a byte to the pipe
#   holder   holds a threading.Lock while it sleeps 50 ms, lets go 1 ms
#   waiter   acquires that lock and lets go at once: waits for the holder
#   reader   os.read() on the pipe the sleeper feeds every 10 ms
#   burner   pure Python arithmetic, never blocks
# Each thread gives itself an OS name (prctl PR_SET_NAME, which Python 3.14+
# threading also does) so that the profile can be checked per thread by name.
# Prints "ready" once every thread runs, then every 100 ms one line
#   stats T {"name": [tid, blocked_s, cpu_s], ...}
# with T = time.monotonic() and per thread the seconds spent inside its
# blocking call so far (sleep, acquire, read; 0 for the burner) and its CPU
# time (time.thread_time()). The test takes the difference of two lines.
import ctypes
import json
import os
import sys
import threading
import time

# A GIL hand-over every 0.5 ms rather than 5: a woken thread then waits for
# the GIL briefly, so most of what it measures is the wait it is named for.
sys.setswitchinterval(0.0005)

try:
    libc = ctypes.CDLL(None)
except OSError:
    libc = None

stats = {}
lock = threading.Lock()
rfd, wfd = os.pipe()


def name_me(name):
    if libc is not None:
        libc.prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME
    stats[name] = [threading.get_native_id(), 0.0, 0.0]
    return stats[name]


def sleeper():
    st = name_me("sleeper")
    while True:
        t = time.monotonic()
        time.sleep(0.01)
        st[1] += time.monotonic() - t
        os.write(wfd, b"x")
        st[2] = time.thread_time()


def holder():
    st = name_me("holder")
    while True:
        with lock:
            t = time.monotonic()
            time.sleep(0.05)
            st[1] += time.monotonic() - t
        t = time.monotonic()
        time.sleep(0.001)
        st[1] += time.monotonic() - t
        st[2] = time.thread_time()


def waiter():
    st = name_me("waiter")
    while True:
        t = time.monotonic()
        lock.acquire()
        st[1] += time.monotonic() - t
        lock.release()
        st[2] = time.thread_time()


def reader():
    st = name_me("reader")
    while True:
        t = time.monotonic()
        os.read(rfd, 1)
        st[1] += time.monotonic() - t
        st[2] = time.thread_time()


def burner():
    st = name_me("burner")
    x = 0
    while True:
        for i in range(10000):
            x = (x * 31 + i) % 1000003
        st[2] = time.thread_time()


threads = [threading.Thread(target=f, name=f.__name__, daemon=True)
           for f in (sleeper, holder, waiter, reader, burner)]
for th in threads:
    th.start()
while len(stats) < len(threads):
    time.sleep(0.01)
print("ready", flush=True)
while True:
    time.sleep(0.1)
    print("stats %.6f %s" % (time.monotonic(), json.dumps(stats)), flush=True)
