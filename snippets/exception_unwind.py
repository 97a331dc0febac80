"""exception_unwind: an exception raised deep and caught several frames up.

catcher -> level1 -> level2 -> level3 -> thrower raises, and catcher
catches it and handles it in handle(). After the unwind the dead frames must
not reappear: level* under handle, or thrower without its full chain, is
impossible.
"""
from _oracle import progress


class Boom(Exception):
    pass


def thrower():
    total = 0
    for i in range(5000):
        total += i
    raise Boom(total)


def level3():
    return thrower()


def level2():
    return level3()


def level1():
    return level2()


def handle(exc):
    total = 0
    for i in range(5000):
        total -= i
    return total


def catcher():
    try:
        level1()
    except Boom as exc:
        handle(exc)


def main():
    while True:
        catcher()
        progress[0] += 1


if __name__ == "__main__":
    main()
