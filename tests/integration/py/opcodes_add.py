# record --opcodes (tests/integration/test_opcodes.sh): after "ready", a loop
# of int additions in a function for SECONDS of its CPU time (argv[1],
# default 1.5), then it exits. The line marked "# L:add" is the one whose
# most sampled instruction the test knows: BINARY_OP_ADD_INT on 3.11+ (x
# stays a small, compact int: the specialized form never deoptimizes),
# BINARY_ADD before.
import sys
import time


def add_loop(n):
    x = y = 0
    for _ in range(n):
        x = x + 3  # L:add
        y = x
    return x + y


def main():
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 1.5
    print("ready", flush=True)
    end = time.thread_time() + secs
    while time.thread_time() < end:
        add_loop(100000)


main()
