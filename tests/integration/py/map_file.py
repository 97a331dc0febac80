"""The hostile process of tests/integration/test_hostile_files.sh: maps the
first 4 KiB of a (crafted) file, as any user can map any file it can read,
then says "ready PID" on a fresh file of its own (argv[2]) and waits. The
mapping is asked for at a low address (a hint, as mmap(2) allows), so that
it comes before the real libpython in /proc/PID/maps and is the first
candidate a reader looks at.

    map_file.py FILE READY_FILE [then-delete-and-replace-with MODE PATH]

With MODE ("fifo" or "symlink:TARGET") it afterwards replaces PATH (its own
executable, say) by a FIFO or a symlink, as a user may do with its own
files, and only then says ready.
"""
import ctypes
import mmap
import os
import sys
import time

path, ready = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
fd = os.open(path, os.O_RDONLY)
addr = libc.mmap(0x10000000, 4096, mmap.PROT_READ, mmap.MAP_PRIVATE, fd, 0)
if addr in (None, ctypes.c_void_p(-1).value):
    sys.exit("map_file: mmap: %s" % os.strerror(ctypes.get_errno()))
os.close(fd)
if len(sys.argv) > 4:
    mode, victim = sys.argv[3], sys.argv[4]
    os.unlink(victim)
    if mode == "fifo":
        os.mkfifo(victim)
    else:
        os.symlink(mode.split(":", 1)[1], victim)
tmp = ready + ".tmp"
with open(tmp, "w") as f:
    f.write("ready %d\n" % os.getpid())
os.rename(tmp, ready)
while True:
    time.sleep(1)
