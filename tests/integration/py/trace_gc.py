# gc__start/gc__done with known generations: collects generation 0, 1, 2
# and 2 again from collect_all(). Args: GO_FILE
import gc
import os
import sys
import time

go = sys.argv[1]


def collect_all():
    for g in (0, 1, 2, 2):
        gc.collect(g)


print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.01)
gc.disable()
collect_all()
print("done", flush=True)
# Names and lines are read from this process after the events are drained:
# stay alive a moment so the tracer can symbolize them (a process that exits
# at once leaves its last events as <unknown>).
time.sleep(1.5)
