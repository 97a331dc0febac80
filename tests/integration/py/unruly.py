# A target that misbehaves on purpose, for tests/integration/test_unruly.sh.
#   unruly.py threads     starts and joins a short-lived thread about every
#                         millisecond, forever (thread churn during a stop)
#   unruly.py fork        forks a child about every 50 ms; each child spins
#                         in Python for 20-120 ms and exits (_exit)
#   unruly.py exec PROG [ARGS...]
#                         spins in Python, then after 1.5 s replaces itself
#                         with PROG (os.execv): the PID stays, the image goes.
#                         With $UNRULY_GO set, the 1.5 s start once that file
#                         exists (the test says when it is ready to watch)
# Every mode prints "ready PID" first, then spins in spin() so samplers see
# Python frames, and counts its progress in the file named by $UNRULY_COUNT
# (when set), so a test can tell the target is still running.
import os
import sys
import threading
import time

count_path = os.environ.get("UNRULY_COUNT")
count = 0


def tick(every=1):
    global count
    count += 1
    if count_path and count % every == 0:
        # Replaced, not rewritten, so a reader never sees it empty.
        with open(count_path + ".tmp", "w") as f:
            f.write(str(count))
        os.replace(count_path + ".tmp", count_path)


def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(range(200))


def short_lived():
    sum(range(50))


def churn_threads():
    while True:
        t = threading.Thread(target=short_lived)
        t.start()
        spin(0.001)
        t.join()
        tick(64)


def churn_forks():
    children = 0
    while True:
        pid = os.fork()
        if pid == 0:
            spin(0.02 + (children % 6) * 0.02)
            os._exit(0)
        children += 1
        spin(0.05)
        while True:  # reap whichever have finished
            try:
                done, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if done == 0:
                break
        tick()


def exec_later(argv):
    go = os.environ.get("UNRULY_GO")
    while go and not os.path.exists(go):
        spin(0.01)
        tick()
    end = time.monotonic() + 1.5
    while time.monotonic() < end:
        spin(0.01)
        tick()
    sys.stdout.flush()
    os.execv(argv[0], argv)


mode = sys.argv[1]
print("ready", os.getpid(), flush=True)
if mode == "threads":
    churn_threads()
elif mode == "fork":
    churn_forks()
elif mode == "exec":
    exec_later(sys.argv[2:])
else:
    sys.exit("unruly.py: unknown mode " + mode)
