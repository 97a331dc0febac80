"""bench_shallow: the benchmark's 3-frame hot loop (make bench).

<module> -> main -> spin, a tight loop; progress counts iterations so the
benchmark can measure the target's slowdown under each sampler.
"""
from _oracle import progress


def spin():
    x = 0
    for i in range(200):
        x += i
    return x


def main():
    while True:
        spin()
        progress[0] += 1


if __name__ == "__main__":
    main()
