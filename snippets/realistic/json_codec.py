"""json_codec: JSON documents encoded with a custom default and decoded with an object hook, as an API layer would.

Written like ordinary code, without the oracle's instrumentation: json's C
encoder and decoder call back into this file (to_wire, from_wire).
"""
import json


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y


def to_wire(obj):
    if isinstance(obj, Point):
        return {"__point__": [obj.x, obj.y]}
    raise TypeError(type(obj).__name__)


def from_wire(d):
    if "__point__" in d:
        return Point(*d["__point__"])
    return d


def make_document(n):
    return {"name": "route-%d" % n, "points": [Point(i, i * 2) for i in range(40)], "meta": {"n": n}}


def round_trip(n):
    text = json.dumps(make_document(n), default=to_wire)
    return json.loads(text, object_hook=from_wire)


def main():
    n = 0
    while True:
        round_trip(n)
        n += 1


if __name__ == "__main__":
    main()
