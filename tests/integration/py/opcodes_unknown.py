# record --opcodes on a byte the interpreter does not name
# (tests/integration/test_opcodes.sh). A thread calls blocked(), which
# blocks in one call (acquiring a lock the main thread holds); meanwhile the
# main thread overwrites the byte of that call instruction in blocked's
# bytecode (3.11+: co_code_adaptive, inside the code object; before:
# co_code) with a byte this version assigns to no instruction, found in its
# own dis/opcode tables, prints
#     ready BYTE OLD
# and sleeps in short naps (off-CPU intervals, for --clock offcpu) until
# SIGUSR1 (or SECONDS, argv[1], default 20), then puts the old byte back
# and releases the lock. The thread never executes that instruction again
# (the call is under way, and blocked() runs once), so nothing runs the
# forged byte: only a reader of the frame sees it.
import ctypes
import dis
import opcode
import signal
import sys
import threading
import time

stop = []


def blocked(lock):
    lock.acquire()  # L:blocked


def bytecode_addr(co):
    """Where the interpreter keeps the bytecode it runs: 3.11+ inside the
    code object (found by searching the object for it), before in the
    co_code bytes object, after its header."""
    if hasattr(co, "_co_code_adaptive"):
        bc = co._co_code_adaptive
        mem = ctypes.string_at(id(co), sys.getsizeof(co))
        at = mem.find(bc)
        if at <= 0 or mem.find(bc, at + 1) >= 0:
            sys.exit("bytecode not found once in the code object")
        return id(co) + at
    return id(co.co_code) + sys.getsizeof(b"") - 1


def unnamed_byte():
    names = getattr(dis, "_all_opname", opcode.opname)
    for b in range(255, 0, -1):
        if names[b].startswith("<"):
            return b
    sys.exit("this version names every byte")


def main():
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
    signal.signal(signal.SIGUSR1, lambda *_: stop.append(1))
    lock = threading.Lock()
    lock.acquire()
    t = threading.Thread(target=blocked, args=(lock,))
    t.start()
    fr = None
    for _ in range(500):
        fr = sys._current_frames().get(t.ident)
        if fr is not None and fr.f_code is blocked.__code__:
            break
        time.sleep(0.01)
    else:
        sys.exit("the thread never reached blocked()")
    time.sleep(0.1)  # inside the acquire by now
    addr = bytecode_addr(blocked.__code__) + fr.f_lasti
    old = ctypes.string_at(addr, 1)
    byte = unnamed_byte()
    ctypes.memmove(addr, bytes([byte]), 1)
    print("ready", byte, old[0], flush=True)
    end = time.monotonic() + secs
    while not stop and time.monotonic() < end:
        time.sleep(0.01)
    ctypes.memmove(addr, old, 1)
    lock.release()
    t.join()


main()
