"""shared_leaf: one leaf, two callers, two branches.

a_wrapper always takes the short branch of shared_leaf, b_wrapper the long
one, so the line of shared_leaf tells which wrapper must be its parent.
"""
from _oracle import progress


def shared_leaf(long_run):
    total = 0
    if long_run:
        for i in range(30000):
            total += i
    else:
        for i in range(3000):
            total ^= i
    return total


def a_wrapper(): return shared_leaf(False)
def b_wrapper(): return shared_leaf(True)


def main():
    while True:
        a_wrapper()
        b_wrapper()
        progress[0] += 1


if __name__ == "__main__":
    main()
