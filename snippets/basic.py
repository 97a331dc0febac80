"""basic: a mixed workload with sleeps. No impossibility rule.

Each iteration computes, formats text, and sleeps briefly, in a fixed order
so the distribution does not drift between the reference and a mode.
"""
from _oracle import progress

import time


def compute():
    total = 0
    for i in range(20000):
        total += i * i
    return total


def format_text():
    parts = []
    for i in range(2000):
        parts.append("%d:%x" % (i, i))
    return ",".join(parts)


def pause():
    time.sleep(0.001)


def work():
    compute()
    format_text()
    pause()


def main():
    while True:
        work()
        progress[0] += 1


if __name__ == "__main__":
    main()
