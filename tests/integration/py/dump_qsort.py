# bpfpy dump --native: two threads, each held inside a ctypes qsort Python
# comparison callback, so that a dump at any moment finds them there:
#   main thread  <module> -> sort_block -> (ctypes, libffi) -> qsort (libc)
#                -> ... -> (libffi closure, ctypes callback) -> order_cb,
#                which spins in Python for ever
#   "blocker"    threading's frames -> sort_block -> ... -> qsort -> ...
#                -> wait_cb, blocked in os.read of a pipe nobody writes
# Prints "ready" once both are inside their callbacks (the blocker just
# before its read). Runs until killed. 3.8-3.15, host or chroot.
import ctypes
import os
import sys
import threading

libc = ctypes.CDLL("libc.so.6")
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))
libc.qsort.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, CMP]
libc.qsort.restype = None
N = 64
rfd, wfd = os.pipe()
blocking = threading.Event()


def sort_block(cb):
    arr = (ctypes.c_int * N)(*range(N, 0, -1))
    libc.qsort(arr, N, ctypes.sizeof(ctypes.c_int), CMP(cb))


def wait_cb(a, b):
    blocking.set()
    os.read(rfd, 1)  # never returns: nothing writes the pipe
    return 0


def order_cb(a, b):
    blocking.wait()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    s = 0
    while True:
        s = (s + a[0] * b[0]) & 0xFFFF


t = threading.Thread(target=sort_block, args=(wait_cb,), name="blocker", daemon=True)
t.start()
sort_block(order_cb)
