"""async_running_task: one hot asyncio task and eight rare ones.

The task "hot" runs a long leaf between yields to the event loop, the eight
"rare-N" tasks a short one. Each task's coroutine only ever calls its own
leaf, so hot_leaf under rare (or rare_leaf under hot) is impossible.
"""
from _oracle import progress

import asyncio


def hot_leaf():
    total = 0
    for i in range(50000):
        total += i
    return total


def rare_leaf():
    total = 0
    for i in range(500):
        total += i
    return total


async def hot():
    while True:
        hot_leaf()
        progress[0] += 1
        await asyncio.sleep(0)


async def rare():
    while True:
        rare_leaf()
        await asyncio.sleep(0)


async def main():
    tasks = [asyncio.get_event_loop().create_task(hot(), name="hot")]
    for i in range(8):
        tasks.append(asyncio.get_event_loop().create_task(rare(), name="rare-%d" % i))
    await asyncio.gather(*tasks)


if __name__ == "__main__":
    asyncio.run(main())
