"""inlined_comprehension: PEP 709 (3.12) inlines list comprehensions.

build() spends its time in a list comprehension that calls square(). Up to
3.11 the comprehension is a function of its own, <listcomp>, between build
and square; from 3.12 it runs inside build's frame. total() uses a
generator expression, which stays a frame (<genexpr>) on every version.
"""
from _oracle import progress


def square(x):
    return x * x


def build():
    return [square(x) for x in range(2000)]


def total(values):
    return sum(v for v in values if v & 1)


def main():
    while True:
        total(build())
        progress[0] += 1


if __name__ == "__main__":
    main()
