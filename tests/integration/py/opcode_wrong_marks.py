#!/usr/bin/env python3
"""A sampler that names its instructions wrong on purpose, for the oracle.

    opcode_wrong_marks.py REF.json SNIPPET.py            an external:CMD mode
    opcode_wrong_marks.py REF.json SNIPPET.py --count

Replays, in the oracle's external protocol, the stacks an earlier oracle
run's reference took of snippets/opcode_phases.py on the same interpreter
(REF.json's first mode), each stack one attempt, with the instruction marks
of the two add lines (found by their "# L:int" and "# L:mixed" markers in
SNIPPET.py) mixed up:
  - int add line: BINARY_OP_ADD_INT shown as the generic BINARY_OP (3.11+),
    BINARY_ADD as BINARY_OP_ADD_INT (3.8-3.10: a name of another version);
  - mixed add line: BINARY_OP or BINARY_OP_ADAPTIVE shown as
    BINARY_OP_ADD_INT (3.11+), BINARY_ADD as BINARY_OP_ADD_FLOAT.
The case's rules must reject every changed stack and no other: --count
prints how many stacks change (what the oracle's impossible column must
then read).
"""
import json
import re
import sys


def add_lines(snippet):
    """{"int_add:N": "int", "mixed_add:M": "mixed"} from the markers."""
    out, func = {}, None
    for n, line in enumerate(open(snippet, encoding="utf-8"), 1):
        m = re.match(r"def (\w+)\(", line)
        if m:
            func = m.group(1)
        m = re.search(r"# L:(int|mixed)\b", line)
        if m:
            out["%s:%d" % (func, n)] = m.group(1)
    return out


SWAP = {
    "int": {"BINARY_OP_ADD_INT": "BINARY_OP", "BINARY_ADD": "BINARY_OP_ADD_INT"},
    "mixed": {"BINARY_OP": "BINARY_OP_ADD_INT", "BINARY_OP_ADAPTIVE": "BINARY_OP_ADD_INT",
              "BINARY_ADD": "BINARY_OP_ADD_FLOAT"},
}


def wrong(key, lines):
    """The key (leaf first) with its fault, or None when it has none."""
    f = key.split(";")
    if len(f) < 2 or not f[0].startswith("[op ") or f[1] not in lines:
        return None
    new = SWAP[lines[f[1]]].get(f[0][4:-1])
    return ";".join(["[op %s]" % new] + f[1:]) if new else None


def main():
    ref = json.load(open(sys.argv[1]))
    lines = add_lines(sys.argv[2])
    case = next(c for c in ref["cases"] if c["name"] == "opcode_phases")
    dist = case["modes"][0]["runs"][0]["distribution"]
    if "--count" in sys.argv:
        print(sum(int(n) for k, n in dist.items() if wrong(k, lines)))
        return 0
    out = ["S\n"]
    for key, n in dist.items():
        key = wrong(key, lines) or key
        out.append((";".join(reversed(key.split(";"))) + "\n") * int(n))
    sys.stdout.write("".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
