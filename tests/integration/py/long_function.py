# A function of 40,000 lines (issue 11 row 8): on 3.8/3.9 its co_lnotab is
# 80,000 bytes, more than the 64 KiB bpfpy copies. Two threads run it: one
# stops on its third line (inside the copy), the main thread on its last
# (past the copy). When both are parked, writes "EARLY LAST FIRSTLINENO" to
# the file named by argv[1] (via a rename, so it appears complete), then
# sleeps until killed.
import os
import sys
import threading
import time

LINES = 40000
ready_path = sys.argv[1]
parked = set()
lock = threading.Lock()


def park(tag):
    with lock:
        parked.add(tag)
        if len(parked) == 2:
            tmp = ready_path + ".tmp"
            with open(tmp, "w") as f:
                f.write("%d %d %d\n" % (EARLY, LAST, FIRST))
            os.rename(tmp, ready_path)
    while True:
        time.sleep(1)


FIRST = 1
src = ["def long_fn(early):", "    x = 0", "    if early: park('early')"]
EARLY = len(src)
src += ["    x += 1"] * LINES
src.append("    park('last')")
LAST = len(src)
ns = {"park": park}
exec(compile("\n".join(src) + "\n", "long_generated.py", "exec"), ns)
long_fn = ns["long_fn"]

threading.Thread(target=long_fn, args=(True,), daemon=True).start()
long_fn(False)
