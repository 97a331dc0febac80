# A target whose interpreter's thread list loops (issue 11 row 9): with
# ctypes it points its own main thread state's `next` at itself, so the
# list reads worker -> main -> main -> ... for ever. Every version keeps
# `next` at offset 8 of PyThreadState; that is checked against the public
# PyThreadState_Next() before anything is written, and the target refuses
# ("skip: ...") rather than write blindly.
#
# The interpreter itself never walks its thread list while this runs: no
# thread is created or ends afterwards, and the GC (which in 3.14 visits
# every thread's frames) is disabled and the loop allocates nothing.
# Writes "ready" to a fresh file argv[1] (written aside, then renamed) once
# the list is corrupt; the main thread then spins in loop_main().
import ctypes
import gc
import os
import sys
import threading
import time

ready = sys.argv[1]
gc.disable()
api = ctypes.pythonapi
api.PyThreadState_Get.restype = ctypes.c_void_p
api.PyInterpreterState_Head.restype = ctypes.c_void_p  # the only interpreter here
api.PyInterpreterState_ThreadHead.restype = ctypes.c_void_p
api.PyInterpreterState_ThreadHead.argtypes = [ctypes.c_void_p]
api.PyThreadState_Next.restype = ctypes.c_void_p
api.PyThreadState_Next.argtypes = [ctypes.c_void_p]
NEXT = 8  # offsetof(PyThreadState, next), every version
started = threading.Event()


def park():
    started.set()
    while True:
        time.sleep(3600)


threading.Thread(target=park, daemon=True).start()
started.wait()
me = api.PyThreadState_Get()
head = api.PyInterpreterState_ThreadHead(api.PyInterpreterState_Head())
nxt = ctypes.c_uint64.from_address(me + NEXT)
if api.PyThreadState_Next(head) != me or (nxt.value or None) != api.PyThreadState_Next(me):
    print("skip: thread list is not worker -> main, or next is not at +8", flush=True)
    sys.exit(0)
nxt.value = me  # main -> main: the list now loops
with open(ready + ".tmp", "w") as f:
    f.write("ready %d\n" % os.getpid())
os.rename(ready + ".tmp", ready)


def loop_main():
    x = 0
    while True:
        for i in range(100000):  # L:loop_main
            x ^= i


loop_main()
