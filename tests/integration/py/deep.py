# Recursion 1000 deep for tests/integration: <module> -> recurse x 1001 -> park.
# "# L:key" marks the lines the tests expect the frames at.
import sys
import threading
import time

DEPTH = 1000
sys.setrecursionlimit(DEPTH + 500)


def park(msg=""):
    while True: msg and print(msg, flush=True); msg = ""; time.sleep(1000)  # L:park


def recurse(n):
    if n == 0:
        park("ready main=%d:%d" % (threading.get_native_id(), threading.get_ident()))  # L:recurse_leaf
    recurse(n - 1)  # L:recurse


recurse(DEPTH)  # L:module
