"""asyncio: eight parent tasks, each awaiting its own child task.

Each parent repeatedly creates a child task and awaits it, then works a
little itself; each child works and yields to the loop. Named like the
standard module on purpose (it is the original's case name): _oracle,
imported first, takes this directory off sys.path.
"""
from _oracle import progress

import asyncio


def parent_work():
    total = 0
    for i in range(3000):
        total += i
    return total


def child_work():
    total = 0
    for i in range(6000):
        total += i
    return total


async def child():
    child_work()
    await asyncio.sleep(0)
    child_work()


async def parent():
    while True:
        await asyncio.get_event_loop().create_task(child())
        parent_work()
        progress[0] += 1
        await asyncio.sleep(0)


async def main():
    await asyncio.gather(*[parent() for _ in range(8)])


if __name__ == "__main__":
    asyncio.run(main())
