# trace --native: libc's qsort through ctypes with a Python comparison
# (order_cb), which calls libc's ffs() through ctypes: a uprobe on libc:ffs
# fires inside the callback path, under <module> -> sort_block ->
# ctypes/libffi -> qsort (libc.so.6) -> ... -> order_cb -> ctypes/libffi ->
# ffs. libc, not libpython: a static, LTO-built interpreter (Debian's
# 3.11) inlines PyObject_Repr and the like into their callers, where a
# uprobe on the symbol never fires; nothing in CPython calls ffs, and a
# C library function is never inlined into Python. One sort before "ready" (ctypes has
# loaded libffi by then, so its mapping is in the tables from the
# attach); then waits for GO_FILE, sorts ROUNDS times, prints "done N",
# N the calls of order_cb (= of ffs) since GO_FILE.
# Args: ROUNDS GO_FILE. 3.8-3.15, host or chroot.
import ctypes
import os
import sys
import time

rounds, go = int(sys.argv[1]), sys.argv[2]
libc = ctypes.CDLL("libc.so.6")
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))
libc.qsort.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, CMP]
libc.qsort.restype = None
libc.ffs.argtypes = [ctypes.c_int]
libc.ffs.restype = ctypes.c_int
N = 64
calls = 0


def order_cb(a, b):
    global calls
    calls += 1
    x, y = a[0], b[0]
    libc.ffs(x)  # the probe: only ever called from here
    return (x > y) - (x < y)


cmp = CMP(order_cb)


def sort_block(seed):
    arr = (ctypes.c_int * N)(*[(i * 7919 + seed) % 1009 for i in range(N)])
    libc.qsort(arr, N, ctypes.sizeof(ctypes.c_int), cmp)
    return arr[0]


sort_block(0)
calls = 0
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.01)
for r in range(rounds):
    sort_block(r)
print("done %d" % calls, flush=True)
