# For uprobes on libpython: every repr() of a float goes through
# PyObject_Repr from leaf(), called only by mid(). Prints "ready", waits for
# GO_FILE, makes N calls, prints "done". Args: N GO_FILE
import os
import sys
import time

n, go = int(sys.argv[1]), sys.argv[2]
x = 1.5


def leaf():
    return repr(x)


def mid():
    return leaf()


print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.01)
for _ in range(n):
    mid()
print("done", flush=True)
