# A target whose names attack the terminal (issue 11 row 5): the code
# objects of spin() and tick() are replaced by ones whose co_qualname/co_name
# and co_filename hold ESC/OSC/BEL/CR/LF and a forged thread block; spin()
# loops calling tick(), which calls repr(), so that a uprobe on
# PyObject_Repr (3.12) or the function__entry marker (3.15) fires there.
# It also names its thread (comm) with an escape sequence where it can.
# argv[1]: a fresh file written (atomically) once spin() runs: "ready PID".
import os
import sys

EVIL = ("\x1b[2J\x1b]0;owned\x07\r\nThread 1 (GIL held):\n"
        "    sshd_auth (/etc/shadow:1)\\")
EVIL_FILE = "/tmp/evil\x1b[31m\nfile.py"


def tick(n):
    return repr(n)


def spin(ready):
    with open(ready + ".tmp", "w") as f:
        f.write("ready %d\n" % os.getpid())
    os.rename(ready + ".tmp", ready)
    n = 0
    while True:
        n += 1
        tick(n)


try:
    import ctypes

    # PR_SET_NAME: the comm, 15 bytes at most.
    ctypes.CDLL(None).prctl(15, b"ev\x1b[1mil\x07", 0, 0, 0)
except Exception:
    pass
for f in (tick, spin):
    f.__code__ = f.__code__.replace(co_qualname=EVIL, co_name=EVIL, co_filename=EVIL_FILE)
spin(sys.argv[1])
