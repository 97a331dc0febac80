# A hot loop for tests/integration/test_record.sh: heavy() does twice the work
# of light() (same loop body, twice the iterations), so about 2/3 of the CPU
# time is in heavy and 1/3 in light. "# L:key" marks lines the test expects.
import sys

N = 20000


def heavy(n):
    x = 0
    for i in range(n):  # L:heavy_for
        x = x ^ i  # L:heavy_body
    return x


def light(n):
    x = 0
    for i in range(n):  # L:light_for
        x = x ^ i  # L:light_body
    return x


def main():
    print("ready", flush=True)
    while True:
        heavy(2 * N)  # L:main_heavy
        light(N)  # L:main_light


main()  # L:module
