"""One light process for scripts/bench_system.sh: a little work every 10 ms,
like an idle service. Writes its readiness file itself once it loops."""
import sys
import time


def tick():
    return sum(range(200))


def main(ready):
    with open(ready + ".tmp", "w") as f:
        f.write("ready\n")
    import os
    os.rename(ready + ".tmp", ready)
    while True:
        tick()
        time.sleep(0.01)


if __name__ == "__main__":
    main(sys.argv[1])
