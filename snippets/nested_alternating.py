"""nested_alternating: a_parent -> a_leaf -> burn_a, then the same for b.

burn_* is a 20 000-step Python loop, so most samples see the full chain.
"""
from _oracle import progress


def burn_a():
    total = 0
    for i in range(20000):
        total += i
    return total


def burn_b():
    total = 0
    for i in range(20000):
        total -= i
    return total


def a_leaf():
    return burn_a()


def b_leaf():
    return burn_b()


def a_parent():
    return a_leaf()


def b_parent():
    return b_leaf()


def main():
    while True:
        a_parent()
        b_parent()
        progress[0] += 1


if __name__ == "__main__":
    main()
