"""bench_deep: the benchmark's 300-deep recursion (make bench).

Every sample walks about 300 frames, which is what makes a sampler's
per-frame cost visible.
"""
from _oracle import progress


def leaf():
    x = 0
    for i in range(2000):
        x += i
    return x


def down(n):
    if n == 0:
        return leaf()
    return down(n - 1)


def main():
    while True:
        down(300)
        progress[0] += 1


if __name__ == "__main__":
    main()
