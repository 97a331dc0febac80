"""gather_tree: an asyncio service fanning requests out with gather, two levels deep.

Written like ordinary code, without the oracle's instrumentation: it
imports the standard asyncio (the oracle must not shadow it).
"""
import asyncio
import json


def render(payload):
    return json.dumps(payload, sort_keys=True)


async def fetch(key):
    await asyncio.sleep(0)
    return {"key": key, "values": list(range(key % 50))}


async def handle(request):
    parts = await asyncio.gather(*(fetch(request * 10 + i) for i in range(5)))
    return render(parts)


async def serve():
    while True:
        await asyncio.gather(*(handle(r) for r in range(8)))


if __name__ == "__main__":
    asyncio.run(serve())
