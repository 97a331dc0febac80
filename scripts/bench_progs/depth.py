"""depth: a CPU-bound loop at a chosen Python stack depth (make bench).

    python depth.py DEPTH [READY_FILE]

Recurses DEPTH - 2 times below main (so a sample shows about DEPTH frames,
the module frame included), then spins in a leaf loop that pushes no frame,
returning to the top now and then so that every level stays in use. Writes
READY_FILE (if given) once it first reaches the bottom: the bench waits for
that, not for a delay. Self-contained on purpose: chroot targets get only
this file (scripts/pyrun.sh), so it may import nothing of the repository.
"""
import sys


def leaf():
    x = 0
    for i in range(20000):
        x += i
    return x


def down(n, ready):
    if n <= 0:
        if ready:
            with open(ready, "w") as f:
                f.write("ready\n")
        return leaf()
    return down(n - 1, ready)


def main():
    depth = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    ready = sys.argv[2] if len(sys.argv) > 2 else ""
    sys.setrecursionlimit(depth + 100)
    while True:
        down(depth - 3, ready)
        ready = ""


if __name__ == "__main__":
    main()
