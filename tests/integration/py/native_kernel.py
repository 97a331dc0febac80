# --kernel: a thread in the kernel.
#   pipe_read: blocked in os.read of a pipe nobody writes (wall clock sees it)
#   page_faults: touching fresh anonymous pages, busy in the fault handler
# argv[1] picks one; prints "ready" when it starts, runs until killed.
import mmap
import os
import sys


def pipe_read():
    r, w = os.pipe()
    print("ready", flush=True)
    os.read(r, 1)


def page_faults():
    print("ready", flush=True)
    while True:
        m = mmap.mmap(-1, 64 << 20)
        for off in range(0, 64 << 20, 4096):
            m[off] = 1
        m.close()


{"pipe_read": pipe_read, "page_faults": page_faults}[sys.argv[1]]()
