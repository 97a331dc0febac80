"""gen_alternating: two long-lived generators, each driven by its own driver.

agen is only ever resumed by drv_a and bgen only by drv_b, so a generator
frame linked under the other driver is impossible: the test of a sampler
that follows a generator's frame back to a stale parent.
"""
from _oracle import progress


def agen():
    while True:
        total = 0
        for i in range(3000):
            total += i
        yield total


def bgen():
    while True:
        total = 0
        for i in range(3000):
            total -= i
        yield total


def drv_a(gen):
    for _ in range(5):
        next(gen)


def drv_b(gen):
    for _ in range(5):
        next(gen)


def main():
    ga = agen()
    gb = bgen()
    while True:
        drv_a(ga)
        drv_b(gb)
        progress[0] += 1


if __name__ == "__main__":
    main()
