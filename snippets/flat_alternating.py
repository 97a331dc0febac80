"""flat_alternating: two families that never mix.

main -> hot_a -> leaf_a, then main -> hot_b -> leaf_b, forever. Every one of
the four functions is written on a single line, so a frame of any of them
reported on another line is a line-number error of the sampler.
"""
from _oracle import progress


def leaf_a(): return sum(range(400))
def leaf_b(): return sum(range(400))
def hot_a(): return leaf_a()
def hot_b(): return leaf_b()


def main():
    while True:
        hot_a()
        hot_b()
        progress[0] += 1


if __name__ == "__main__":
    main()
