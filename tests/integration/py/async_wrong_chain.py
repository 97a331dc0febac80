#!/usr/bin/env python3
"""An async sampler that mixes its tasks up on purpose, for the oracle.

    async_wrong_chain.py REF.json            an external:CMD mode
    async_wrong_chain.py REF.json --count CASE

Replays, in the oracle's external protocol, the task chains an earlier
oracle run's reference (ptrace-async) took of the same case on the same
interpreter (REF.json's first mode of that case; the case is the snippet
the target BPFPY_PID runs, from its command line), each stack one attempt,
with two faults:
  - async_running_task: the hot task's mark becomes rare-0's, so hot_leaf
    sits under a rare task;
  - asyncio: a child's chain loses its own mark and its parent's frames,
    so the child's frames sit right under its parent's mark: the parent
    task seems to run the child's code.
Each rule the case's .rules holds for task chains must reject every changed
stack and no other: --count prints how many stacks change (what the
oracle's impossible column must then read).
"""
import json
import os
import re
import sys

PARENT = re.compile(r";\[task [^\]]*\];parent:[0-9?]+;")


def wrong(key):
    """The key (leaf first) with its fault, or None when it has none."""
    if "[task hot]" in key:
        return key.replace("[task hot]", "[task rare-0]")
    if key.startswith("child") and PARENT.search(key):
        return PARENT.sub(";", key, count=1)
    return None


def main():
    ref = json.load(open(sys.argv[1]))
    if "--count" in sys.argv:
        case = sys.argv[sys.argv.index("--count") + 1]
    else:
        with open("/proc/%s/cmdline" % os.environ["BPFPY_PID"], "rb") as f:
            argv = f.read().split(b"\0")
        case = next(os.path.basename(a.decode())[:-3] for a in argv if a.endswith(b".py"))
    dist = next(c for c in ref["cases"] if c["name"] == case)["modes"][0]["runs"][0]["distribution"]
    if "--count" in sys.argv:
        print(sum(int(n) for k, n in dist.items() if wrong(k)))
        return 0
    out = ["S\n"]
    for key, n in dist.items():
        # keys write every unnamed task Task-N; the root task the rules
        # name is asyncio.run's Task-1
        key = wrong(key) or key
        if key.endswith(";[task Task-N]"):
            key = key[: -len("Task-N]")] + "Task-1]"
        stack = ";".join(reversed(key.split(";")))
        out.append((stack + "\n") * int(n))
    sys.stdout.write("".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
