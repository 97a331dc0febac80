# A root task gathers worker-1..3; each awaits its own child task fetch-K,
# which burns CPU in crunch() forever (or for BPFPY_SECONDS), yielding to the
# loop between slices so that every fetch task runs in turn. The expected
# chain of a sample in crunch: [task fetch-K] .. [task worker-K] .. root.
import asyncio, os, sys, time

SECONDS = float(os.environ.get("BPFPY_SECONDS", "1e9"))


def crunch(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


async def fetch(k):
    end = time.monotonic() + SECONDS
    while time.monotonic() < end:
        crunch(20000)
        await asyncio.sleep(0)


async def worker(k):
    t = asyncio.get_running_loop().create_task(fetch(k), name=f"fetch-{k}")
    await t


async def main():
    ws = [asyncio.create_task(worker(k), name=f"worker-{k}") for k in (1, 2, 3)]
    await asyncio.sleep(0.2)  # every fetch task exists and runs
    print("ready", flush=True)
    await asyncio.gather(*ws)


asyncio.run(main())
