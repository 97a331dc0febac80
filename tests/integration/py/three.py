# A 3-frame process for tests/integration: <module> -> outer -> park.
# "# L:key" marks the lines the tests expect the frames at (they grep them).
# park() prints its message and sleeps on one line, so a stack read at any
# time after the message was written shows the same frames and lines.
# It prints "ready main=NATIVE_ID:PTHREAD_ID" (deep.py too).
import threading
import time


def park(msg=""):
    while True: msg and print(msg, flush=True); msg = ""; time.sleep(1000)  # L:park


def outer():
    park("ready main=%d:%d" % (threading.get_native_id(), threading.get_ident()))  # L:outer


outer()  # L:module
