# test_top.sh's target: top_hot_function burns CPU forever, under <module>.
import sys


def top_hot_function():
    t = 0
    for i in range(100000):
        t += i
    return t


print("ready", flush=True)
while True:
    top_hot_function()
