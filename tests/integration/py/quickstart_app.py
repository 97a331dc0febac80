# The "app.py" of the README's quick start (tests/integration/test_docs.sh):
# an ordinary program that does a little of everything the quick start's
# commands look at: CPU work in plain functions, asyncio tasks awaiting each
# other, sleeps (off-CPU), file writes with fsync, garbage collections, and
# work inside an except block.
# Runs APP_SECONDS seconds (default 3), printing "ready" once it runs, then
# exits 0.
import asyncio
import gc
import os
import sys
import tempfile
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def write_some(path):
    with open(path, "wb") as f:
        f.write(b"x" * 4096)
        f.flush()
        os.fsync(f.fileno())


def cached(table, key):
    try:
        return table[key]
    except KeyError:  # a miss, computed while it is handled (record --exception)
        # fib(16): about half the CPU work, so that a 1 s recording on a
        # loaded host still holds samples being handled (test_docs).
        table[key] = fib(16)
        return table[key]


async def worker(k, path):
    fib(14 + k % 3)
    cached({}, k)
    await asyncio.sleep(0.002)
    write_some(path)


async def batch(path):
    await asyncio.gather(*(worker(k, path) for k in range(4)))


async def main(seconds, path):
    end = time.monotonic() + seconds
    first = True
    while time.monotonic() < end:
        await asyncio.create_task(batch(path), name="batch")
        gc.collect(0)
        if first:
            sys.stdout.write("ready\n")
            sys.stdout.flush()
            first = False


with tempfile.TemporaryDirectory() as d:
    asyncio.run(main(float(os.environ.get("APP_SECONDS", "3")), os.path.join(d, "f")))
