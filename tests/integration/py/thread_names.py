# Threads with threading names that differ from their OS names, for
# test_thread_names.sh. Each worker burns CPU so that record samples it; the names are longer than the 15 bytes an OS name
# holds, so that a name read from the OS (comm) cannot pass for the Python
# one. On 3.14+ threading sets the OS name from the Python name (cut to 15
# bytes); before, each thread sets it to "os-N" with prctl.
#
# Threads born while bpfpy records: a spawner starts one every 60 ms,
# named churn-python-name-N, busy for 200 ms in churn(), then gone: each
# is first seen during the recording and dead at its end.
#
# One thread has a hostile name: newlines, a forged dump header and a
# forged collapsed prefix, quotes, a backslash escape, a lone surrogate, an
# ESC, and 10 kB of padding. It must come out escaped and cut.
#
# Prints one line once every thread runs and has its names:
#   ready {"NAME": native_id, ...}
import ctypes
import json
import sys
import threading
import time

HOSTILE = ("evil\nThread 1 (GIL held):\n    forged (x.py:1)\n;pid:1;tid:2 (x);"
           "\"quo'te\\xff\udcff\x1b[2J" + "A" * 10000)
LONG = ["python-name-alpha-worker", "python-name-beta-worker", "python-name-ünï-gamma"]

libc = ctypes.CDLL(None)
states = {}
lock = threading.Lock()


def name_os(i):
    if sys.version_info < (3, 14):
        libc.prctl(15, b"os-%d" % i, 0, 0, 0)  # PR_SET_NAME


def spin():
    x = 0
    while True:
        for i in range(10000):
            x += i


def churn():
    end = time.monotonic() + 0.2
    while time.monotonic() < end:
        pass


def run_churn():
    if sys.version_info < (3, 14):
        libc.prctl(15, b"os-churn", 0, 0, 0)
    churn()


def spawner():
    n = 0
    while True:
        time.sleep(0.06)
        n += 1
        threading.Thread(target=run_churn, name="churn-python-name-%d" % n, daemon=True).start()


def run(i, fn):
    name_os(i)
    with lock:
        states[threading.current_thread().name] = threading.get_native_id()
    fn()


threading.current_thread().name = "python-name-of-the-main-thread"
name_os(9)
fns = [spin] * 4
names = LONG + [HOSTILE]
threads = [threading.Thread(target=run, args=(i, f), name=n, daemon=True)
           for i, (f, n) in enumerate(zip(fns, names))]
for t in threads:
    t.start()
while True:
    with lock:
        if len(states) == len(threads):
            break
    time.sleep(0.01)
states["python-name-of-the-main-thread"] = threading.get_native_id()
print("ready", json.dumps(states), flush=True)
threading.Thread(target=spawner, name="spawner", daemon=True).start()
while True:
    time.sleep(0.05)
