# 300 frames deep, spinning at the leaf for ever: every sample of it walks
# the whole chain (test_record_deep). Prints "ready" once at the leaf.
import sys

DEPTH = 300
sys.setrecursionlimit(DEPTH + 200)


def spin():
    print("ready", flush=True)
    x = 0
    while True:
        x += 1


def down(n):
    if n == 0:
        spin()
    down(n - 1)


down(DEPTH)
