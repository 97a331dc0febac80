# --native: libc's qsort through ctypes, with a Python comparison callback.
# The true stack of a sample in order_cb is, root first:
#   <module> -> sort_block -> (ctypes, libffi) -> qsort (libc) -> ... ->
#   (libffi closure, ctypes callback) -> order_cb
# Prints "ready" once the first block is sorted (correctly), then sorts
# blocks until killed. Runs on 3.8-3.15, host or chroot (no /proc needed).
import ctypes
import sys

libc = ctypes.CDLL("libc.so.6")
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))
N = 512


def order_cb(a, b):
    x, y = a[0], b[0]
    s = 0
    for i in range(40):  # some Python work per comparison, so samples land here
        s += i
    return (x > y) - (x < y)


cmp = CMP(order_cb)
libc.qsort.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, CMP]
libc.qsort.restype = None


def sort_block(seed):
    arr = (ctypes.c_int * N)(*[(i * 7919 + seed) % 1009 for i in range(N)])
    libc.qsort(arr, N, ctypes.sizeof(ctypes.c_int), cmp)
    return arr


first = list(sort_block(1))
assert first == sorted(first), "qsort did not sort"
print("ready", flush=True)
seed = 2
while True:
    sort_block(seed)
    seed += 1
