"""c_call_leaves: leaves that spend their time in C, between Python frames.

encode_leaf calls json.dumps, whose C encoder calls back into Python
(to_json, the default= hook) for objects it cannot encode; subst_leaf calls
re.sub with a Python replacement function (repl), which the C regex engine
calls per match. So our frames sit above C code that sits above standard
library frames: the callbacks may appear only under their own leaf.
"""
from _oracle import progress

import json
import re


class Point(object):
    def __init__(self, x, y):
        self.x = x
        self.y = y


def to_json(obj):
    return [obj.x, obj.y]


def repl(match):
    return match.group(0).upper()


DATA = {"points": [Point(i, -i) for i in range(200)], "name": "c_call_leaves"}
TEXT = " ".join("word%d" % i for i in range(2000))
WORD = re.compile(r"word\d+")


def encode_leaf():
    return json.dumps(DATA, default=to_json)


def subst_leaf():
    return WORD.sub(repl, TEXT)


def main():
    while True:
        encode_leaf()
        subst_leaf()
        progress[0] += 1


if __name__ == "__main__":
    main()
