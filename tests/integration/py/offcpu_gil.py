# Two threads contending for the GIL, for tests/integration/test_offcpu.sh:
#   spinner  pure Python arithmetic: holds the GIL whenever it runs
#   hasher   sha256 of 4 MiB again and again: hashlib releases the GIL while
#            it hashes (inputs over 2 KiB), so this thread is mostly on a
#            CPU WITHOUT the GIL, and waits for it after every digest
# Prints "ready spinner=TID hasher=TID" once both run.
import hashlib
import threading
import time

tids = {}
data = b"x" * (4 << 20)


def spinner():
    tids["spinner"] = threading.get_native_id()
    x = 0
    while True:
        for i in range(10000):
            x = (x * 31 + i) % 1000003


def hasher():
    tids["hasher"] = threading.get_native_id()
    while True:
        hashlib.sha256(data).digest()


for f in (spinner, hasher):
    threading.Thread(target=f, name=f.__name__, daemon=True).start()
while len(tids) < 2:
    time.sleep(0.01)
print("ready spinner=%d hasher=%d" % (tids["spinner"], tids["hasher"]), flush=True)
while True:
    time.sleep(1)
