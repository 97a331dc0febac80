# --native: C code of the standard library between Python frames.
#   json_default: json.dumps(..., default=on_default) -> the C encoder calls
#                 on_default for objects it cannot encode
#   re_sub:       re.sub(pattern, on_match, text) -> _sre calls on_match
#   sorted_key:   sorted(items, key=on_key) -> list.sort calls on_key
# argv[1] picks one; prints "ready" after one round, then loops until killed.
import json
import re
import sys


class Opaque:
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v


def burn():
    s = 0
    for i in range(60):
        s += i
    return s


def on_default(o):
    burn()
    return o.v


def on_match(m):
    burn()
    return m.group(0).upper()


def on_key(x):
    burn()
    return -x


DATA = [Opaque(i) for i in range(300)]
TEXT = "ab " * 300
ITEMS = list(range(300))


def json_default():
    return json.dumps(DATA, default=on_default)


def re_sub():
    return re.sub(r"ab", on_match, TEXT)


def sorted_key():
    return sorted(ITEMS, key=on_key)


work = {"json_default": json_default, "re_sub": re_sub, "sorted_key": sorted_key}[sys.argv[1]]
work()
print("ready", flush=True)
while True:
    work()
