"""Instrumentation shared by the oracle's snippets.

Two services, both designed to leave the sampled stacks alone:

progress
    An 8-byte little-endian counter in a file mapped with mmap, named by the
    environment variable BPFPY_PROGRESS. A snippet does ``progress[0] += 1``
    once per iteration of its main loop. That statement is a subscript on a
    memoryview, done in C: it never pushes a Python frame, so no rule needs
    to mention it. The oracle reads the file while the target runs (iterations
    per second, with and without a sampler attached, is the sampler's cost).
    Without BPFPY_PROGRESS the counter lives in a private buffer and costs
    the same, so a snippet behaves alike with and without the oracle.

report_truth_on_term(totals)
    For ground-truth snippets: on SIGTERM, write ``totals`` (a dict
    phase_key -> seconds, which the snippet keeps up to date) as JSON to the
    file named by BPFPY_TRUTH, then exit 0. The handler's frame appears in
    stacks only while it runs, i.e. after the oracle has stopped sampling.

Importing this module runs code only at import time, before the oracle's
warmup ends. The snippets run unchanged on CPython 3.8 to 3.15.
"""

import json
import mmap
import os
import signal
import sys

# A case may be named like a standard module (asyncio.py is one): once this
# module is imported, the snippets directory leaves sys.path so that the
# snippet's own "import asyncio" finds the standard library. Snippets import
# _oracle before anything else.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]


def _open_progress():
    path = os.environ.get("BPFPY_PROGRESS")
    if not path:
        return memoryview(bytearray(8)).cast("Q")
    if sys.byteorder != "little":
        # memoryview casts are native-endian; the file format is not.
        raise SystemExit("_oracle: BPFPY_PROGRESS needs a little-endian host")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if os.fstat(fd).st_size < 8:
            os.ftruncate(fd, 8)
        mem = mmap.mmap(fd, 8)
    finally:
        os.close(fd)
    return memoryview(mem).cast("Q")


progress = _open_progress()


def report_truth_on_term(totals):
    path = os.environ.get("BPFPY_TRUTH")

    def on_term(signum, frame):
        if path:
            # Write aside and rename, so the oracle never reads half a file.
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(dict(totals), f, sort_keys=True)
            os.replace(tmp, path)
        # os._exit: worker threads of a snippet never finish on their own.
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
