"""deep_recursion: a(300) and b(300) recurse down to leaf().

a(n) calls a(n - 1) until n is 0, which calls leaf(): 301 frames of a over
leaf. A stack holding both a and b, or fewer than 301 a frames over leaf
(a frame lost in the middle), is impossible.
"""
from _oracle import progress

DEPTH = 300


def leaf():
    total = 0
    for i in range(20000):
        total += i
    return total


def a(n):
    if n:
        return a(n - 1)
    return leaf()


def b(n):
    if n:
        return b(n - 1)
    return leaf()


def main():
    while True:
        a(DEPTH)
        b(DEPTH)
        progress[0] += 1


if __name__ == "__main__":
    main()
