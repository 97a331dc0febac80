# Task shapes for dump --async (tests/integration/test_async.sh), all pending
# at once, then "ready" and a sleep; expected tree in check/check_async.py:
#   group       a TaskGroup (3.11+) of tg-1, tg-2
#   chain-a     awaits chain-b, which awaits chain-c (three deep)
#   unnamed     a task without a name (Task-N: an int on 3.12+)
#   eager-1     an eager task (3.12+: eager_start), still pending
#   bad\x1b[31m\nname   a name with an escape and a newline (printed escaped)
#   many-N      10,000 pending tasks (sleep), awaited by nobody
#   loop in a second thread: thread-root awaits thread-leaf, which burns CPU
import asyncio, sys, threading, time

N_MANY = 10000
V = sys.version_info[:2]


def spin():
    x = 0
    for i in range(20000):
        x += i
    return x


async def leaf():
    await asyncio.sleep(3600)


async def chain_c():
    await leaf()


async def chain_b():
    await asyncio.get_running_loop().create_task(chain_c(), name="chain-c")


async def chain_a():
    await asyncio.get_running_loop().create_task(chain_b(), name="chain-b")


async def group():
    async with asyncio.TaskGroup() as tg:
        tg.create_task(leaf(), name="tg-1")
        tg.create_task(leaf(), name="tg-2")


async def thread_leaf():
    while True:
        spin()
        await asyncio.sleep(0)


async def thread_root():
    await asyncio.get_running_loop().create_task(thread_leaf(), name="thread-leaf")


def other_loop():
    asyncio.run(thread_root_named())


async def thread_root_named():
    asyncio.current_task().set_name("thread-root")
    await thread_root()


async def main():
    loop = asyncio.get_running_loop()
    asyncio.current_task().set_name("shapes-main")
    ts = [loop.create_task(group(), name="group"),
          loop.create_task(chain_a(), name="chain-a"),
          loop.create_task(leaf()),
          loop.create_task(leaf(), name="bad\x1b[31m\nname")]
    if V >= (3, 12):
        loop.set_task_factory(asyncio.eager_task_factory)
        ts.append(loop.create_task(leaf(), name="eager-1"))
        loop.set_task_factory(None)
    many = [loop.create_task(asyncio.sleep(3600), name=f"many-{i}") for i in range(N_MANY)]
    threading.Thread(target=other_loop, name="loop-thread", daemon=True).start()
    await asyncio.sleep(0.5)
    print("ready", len(many), flush=True)
    await asyncio.sleep(3600)


asyncio.run(main())
