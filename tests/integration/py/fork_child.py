# A target that, once told to (GO appears), forks a child that never execs:
# a new Python process without an exec, which record --subprocesses must
# find from the kernel's fork event (test_record_newprocs). The child
# writes CHILD_READY itself (pid, then renamed into place) and spins in
# forked_child_spin; the parent spins in parent_spin.
import os
import sys
import time

go, child_ready = sys.argv[1], sys.argv[2]


def forked_child_spin():
    with open(child_ready + ".tmp", "w") as f:
        f.write("%d\n" % os.getpid())
    os.rename(child_ready + ".tmp", child_ready)
    x = 0
    while True:
        x += 1


def parent_spin():
    print("ready", flush=True)
    while not os.path.exists(go):
        time.sleep(0.01)
    if os.fork() == 0:
        forked_child_spin()
    x = 0
    while True:
        x += 1


parent_spin()
