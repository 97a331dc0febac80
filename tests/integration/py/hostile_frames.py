# A target that corrupts its own frames and code objects with ctypes while
# being sampled, to prove bpfpy never trusts what it reads (SECURITY.md).
# CPython 3.12 layout only (pahole on the pyenv 3.12.1 build, the numbers in
# tests/data/pahole_offsets.txt); checked at run time against id() before
# any write, so a different layout refuses instead of corrupting blindly.
#
# Each corrupted thread stops running Python in the damaged frame for good:
# it sleeps, or spins in C with the GIL released (hashlib.pbkdf2_hmac), so
# the interpreter itself never follows the bad links and keeps running.
#   cycle    its frame's previous points to the frame itself
#   cycle2   two frames pointing at each other (a loop the walker can only
#            bound by depth)
#   wild     previous points into unmapped memory
#   badcode  spins in C; its leaf code object's co_qualname is a wild
#            pointer, co_filename a str claiming 2**60 characters and
#            co_linetable a bytes claiming 2**62 bytes
# The main thread keeps counting; argv[1] (optional) receives the count
# every ~50 ms, so a test can see that the target still progresses.
import ctypes
import hashlib
import os
import sys
import threading
import time

if sys.version_info[:2] != (3, 12) or hasattr(sys, "_is_gil_enabled"):
    print("skip: hostile_frames.py knows the 3.12 layout only", flush=True)
    sys.exit(0)

FRAMEOBJ_F_FRAME = 24  # PyFrameObject.f_frame
IFRAME_F_CODE = 0  # _PyInterpreterFrame.f_code
IFRAME_PREVIOUS = 8  # _PyInterpreterFrame.previous
CODE_FILENAME = 112
CODE_QUALNAME = 128
CODE_LINETABLE = 136
VAR_SIZE = 16  # ob_size of bytes, length of str
WILD = 0x00007FFFDEAD0000  # canonical user address, never mapped here

u64 = lambda addr: ctypes.c_uint64.from_address(addr)
keep = []  # objects whose headers we lie in: never freed
ready = threading.Barrier(5)


def iframe(f):
    """The _PyInterpreterFrame of frame object f, checked against id()."""
    addr = u64(id(f) + FRAMEOBJ_F_FRAME).value
    if u64(addr + IFRAME_F_CODE).value != id(f.f_code):
        print("skip: frame layout is not the expected 3.12 one", flush=True)
        os._exit(0)
    return addr


def park():
    ready.wait()
    while True:
        time.sleep(3600)


def cycle_leaf():
    me = iframe(sys._getframe())
    u64(me + IFRAME_PREVIOUS).value = me
    park()


def cycle2_inner(outer):
    me = iframe(sys._getframe())
    u64(outer + IFRAME_PREVIOUS).value = me
    u64(me + IFRAME_PREVIOUS).value = outer
    park()


def cycle2_outer():
    cycle2_inner(iframe(sys._getframe()))


def wild_leaf():
    u64(iframe(sys._getframe()) + IFRAME_PREVIOUS).value = WILD
    park()


def badcode_leaf():
    code = sys._getframe().f_code
    name = "".join(["huge_", "filename"])  # a fresh, non-interned str
    table = bytes(64)
    keep.extend([name, table])
    u64(id(name) + VAR_SIZE).value = 1 << 60
    u64(id(table) + VAR_SIZE).value = 1 << 62
    u64(id(code) + CODE_FILENAME).value = id(name)
    u64(id(code) + CODE_LINETABLE).value = id(table)
    u64(id(code) + CODE_QUALNAME).value = WILD
    ready.wait()
    # C with the GIL released, for ~forever: CPU-clock samples land here.
    while True:
        hashlib.pbkdf2_hmac("sha256", b"x", b"y", 1 << 30)


for fn in (cycle_leaf, cycle2_outer, wild_leaf, badcode_leaf):
    threading.Thread(target=fn, name=fn.__name__, daemon=True).start()
ready.wait()
print("ready", os.getpid(), flush=True)

progress = sys.argv[1] if len(sys.argv) > 1 else None
n = 0
last = time.monotonic()
while True:
    n += 1
    if n % 4096 == 0 and progress:
        now = time.monotonic()
        if now - last > 0.05:
            last = now
            with open(progress + ".tmp", "w") as f:
                f.write(str(n))
            os.replace(progress + ".tmp", progress)
