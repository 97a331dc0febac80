# record's [gc] frames and --exception (tests/integration/test_gc_exception.sh).
# After "ready" it sleeps 0.5 s (off-CPU: record -p attaches meanwhile),
# then for SECONDS of CPU time (argv[1], default 2.5) repeats three phases:
#   churn()    makes cyclic garbage, so that collections start by themselves
#              on top of it (gen0 threshold 10000: few, large collections,
#              so the callbacks below are a small part of them), then
#              gc.collect() from main
#   handled()  a loop inside an except KeyError block (being handled)
#   deep(60)   raises ValueError 60 frames down, caught in main (in flight
#              while it unwinds, then handled by main's except); 150 times
# It measures in CPU time of its thread (time.thread_time, so that a busy
# machine taking the CPU away from it changes nothing; the sampler's
# cpu clock counts CPU time too): the time the collections took
# (gc.callbacks), the time inside handled()'s except block and the time
# of the deep phase, and prints
#   "gc_share G handled_share H deep_share D"
# (fractions of the phases' CPU time) and exits.
import gc
import sys
import time

clock = time.thread_time
gc_time = 0.0
_gc_start = None


def on_gc(phase, info):
    global gc_time, _gc_start
    if phase == "start":
        _gc_start = clock()
    elif _gc_start is not None:
        gc_time += clock() - _gc_start
        _gc_start = None


class Node:
    def __init__(self):
        self.ref = self


def churn():
    for _ in range(20000):
        Node()


handled_time = 0.0


def handled():
    global handled_time
    try:
        raise KeyError("k")
    except KeyError:
        t = clock()
        s = 0
        for i in range(100000):
            s += i
        handled_time += clock() - t
        return s


def deep(n):
    if n == 0:
        raise ValueError("bottom")
    deep(n - 1)


def main(seconds):
    deep_time = 0.0
    gc.set_threshold(10000, 10, 10)
    print("ready", flush=True)
    time.sleep(0.5)
    gc.callbacks.append(on_gc)
    t0 = clock()
    while clock() - t0 < seconds:
        churn()
        gc.collect()
        handled()
        t = clock()
        for _ in range(150):
            try:
                deep(60)
            except ValueError:
                pass
        deep_time += clock() - t
    total = clock() - t0
    gc.callbacks.remove(on_gc)
    print(
        "gc_share %.4f handled_share %.4f deep_share %.4f"
        % (gc_time / total, handled_time / total, deep_time / total),
        flush=True,
    )


main(float(sys.argv[1]) if len(sys.argv) > 1 else 2.5)
