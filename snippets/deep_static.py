"""deep_static: recurse 900 frames deep, then sleep there for ever.

The stack never changes, so every mode should report the same single key:
a test of deep walks (truncation, per-frame errors), not of timing.
"""
from _oracle import progress

import time

DEPTH = 900


def descend(n):
    if n:
        return descend(n - 1)
    return bottom()


def bottom():
    while True:
        time.sleep(0.05)
        progress[0] += 1


def main():
    descend(DEPTH)


if __name__ == "__main__":
    main()
