# A benign program that a blocking dump could not stop (issue 11 row 4): one
# thread calls posix_spawn with a file action that opens a FIFO nobody
# writes, so glibc's vfork child blocks in open() before its exec and the
# spawning thread waits for it in the kernel (TASK_KILLABLE: a
# PTRACE_INTERRUPT does not wake it). Meanwhile the main thread runs Python
# code and publishes a counter.
# argv: FIFO READY_FILE COUNTER_FILE. READY_FILE is written (fresh, by this
# process) once the spawning thread has its vfork child: "PID SPAWN_TID".
import ctypes
import os
import sys
import threading
import time

fifo, ready, counter = sys.argv[1], sys.argv[2], sys.argv[3]
tid = []


def spawner():
    # Through ctypes, which releases the GIL (os.posix_spawn holds it), so
    # that the main thread keeps running Python code.
    libc = ctypes.CDLL(None, use_errno=True)
    actions = ctypes.create_string_buffer(256)  # posix_spawn_file_actions_t
    libc.posix_spawn_file_actions_init(actions)
    libc.posix_spawn_file_actions_addopen(actions, 3, fifo.encode(), os.O_RDONLY, 0)
    argv = (ctypes.c_char_p * 2)(b"true", None)
    pid = ctypes.c_int()
    tid.append(threading.get_native_id())
    libc.posix_spawn(ctypes.byref(pid), b"/bin/true", actions, None, argv, None)


def busy(depth):
    if depth:
        return busy(depth - 1)
    x = 0
    for i in range(10000):
        x += i
    return x


threading.Thread(target=spawner, daemon=True).start()
while not tid:
    time.sleep(0.001)
children = "/proc/self/task/%d/children" % tid[0]
while not open(children).read().strip():
    time.sleep(0.001)
with open(ready + ".tmp", "w") as f:
    f.write("%d %d\n" % (os.getpid(), tid[0]))
os.rename(ready + ".tmp", ready)
n = 0
while True:
    busy(5)
    n += 1
    if n % 20 == 0:
        with open(counter + ".tmp", "w") as f:
            f.write("%d\n" % n)
        os.rename(counter + ".tmp", counter)
