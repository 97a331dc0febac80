# --native / --kernel, one process per interpreter so that one recording
# (one BPF load) covers every case. The main thread runs, from <module>,
# one round of each case in turn, each about ROUND seconds of its CPU:
#   sort_block   libc qsort through ctypes, Python comparison order_cb:
#                <module> -> sort_block -> (ctypes, libffi) -> qsort (libc)
#                -> ... -> (libffi closure, ctypes callback) -> order_cb
#   json_default json.dumps(default=on_default): the C encoder calls it
#   re_sub       re.sub(pattern, on_match, text): _sre calls on_match
#   sorted_key   sorted(key=on_key): list.sort calls on_key
#   outer        burnmod.spin (tests/integration/native/burnmod.c, when
#                argv[1] names the directory it was built in): inner
#                (Python) called from C, burn_loop burning CPU in C
#   page_faults  touching fresh anonymous pages (the kernel's fault path)
#   pipe_read    os.read of a pipe a second thread keeps full
# After each turn it replaces argv[2] with "C_NS THREAD_NS": burn_loop's
# CPU time so far (0 without burnmod) and the main thread's. Prints "ready"
# after the first turn; runs until killed. 3.8-3.15, host or chroot.
import ctypes
import json
import mmap
import os
import re
import sys
import threading
import time

ROUND = 0.03
have_burn = len(sys.argv) > 1 and sys.argv[1] != "-"
if have_burn:
    sys.path.insert(0, sys.argv[1])
    import burnmod
report = sys.argv[2] if len(sys.argv) > 2 else None

libc = ctypes.CDLL("libc.so.6")
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))
libc.qsort.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, CMP]
libc.qsort.restype = None
N = 256


def burn():
    s = 0
    for i in range(40):
        s += i
    return s


def order_cb(a, b):
    x, y = a[0], b[0]
    s = 0
    for i in range(40):  # Python work of its own, no deeper frame
        s += i
    return (x > y) - (x < y)


cmp = CMP(order_cb)


def sort_block(seed):
    # The input is copied from a ready array, so the time goes to qsort
    # and order_cb rather than to building it.
    template = (ctypes.c_int * N)(*[(i * 7919 + seed) % 1009 for i in range(N)])
    arr = (ctypes.c_int * N)()
    end = time.thread_time() + ROUND
    while time.thread_time() < end:
        ctypes.memmove(arr, template, ctypes.sizeof(arr))
        libc.qsort(arr, N, ctypes.sizeof(ctypes.c_int), cmp)
    return list(arr)


class Opaque:
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v


def on_default(o):
    burn()
    return o.v


def on_match(m):
    burn()
    return m.group(0).upper()


def on_key(x):
    burn()
    return -x


DATA = [Opaque(i) for i in range(100)]
TEXT = "ab " * 100
ITEMS = list(range(100))


def json_default():
    end = time.thread_time() + ROUND
    while time.thread_time() < end:
        json.dumps(DATA, default=on_default)


def re_sub():
    end = time.thread_time() + ROUND
    while time.thread_time() < end:
        re.sub(r"ab", on_match, TEXT)


def sorted_key():
    end = time.thread_time() + ROUND
    while time.thread_time() < end:
        sorted(ITEMS, key=on_key)


def inner():
    s = 0
    for i in range(3000):
        s += i
    return s


def outer():
    end = time.thread_time() + 3 * ROUND  # enough burn_loop samples to count
    while have_burn and time.thread_time() < end:
        burnmod.spin(inner, 10, 60000)


def page_faults():
    end = time.thread_time() + ROUND
    while time.thread_time() < end:
        m = mmap.mmap(-1, 4 << 20)
        for off in range(0, 4 << 20, 4096):
            m[off] = 1
        m.close()


def writer(w):
    buf = b"x" * 65536
    while True:
        os.write(w, buf)


R, W = os.pipe()
threading.Thread(target=writer, args=(W,), daemon=True).start()


def pipe_read():
    end = time.thread_time() + ROUND
    while time.thread_time() < end:
        os.read(R, 65536)


def put_report():
    if report:
        tmp = report + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d %d\n" % (burnmod.c_ns() if have_burn else 0, int(time.thread_time() * 1e9)))
        os.replace(tmp, report)


first_block = sort_block(1)
assert first_block == sorted(first_block), "qsort did not sort"
first = True
seed = 2
while True:
    sort_block(seed)
    json_default()
    re_sub()
    sorted_key()
    outer()
    page_faults()
    pipe_read()
    put_report()
    seed += 1
    if first:
        print("ready", flush=True)
        first = False
