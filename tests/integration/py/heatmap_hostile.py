# heatmap_hostile.py DIR: one function per entry of DIR, each compiled from
# the same source but under that entry's path as its file name, run in
# turn forever. So record, asked for a heatmap, reads each entry of DIR as
# a source: test_heatmap.sh puts hostile files there (markup and control
# bytes in names and lines, a huge line, bad UTF-8), symlinks to files the
# target may not read or that lie outside its root, and a FIFO.
# The hot line is line 303 (x = x + 3), far down each file, so that the
# page must scroll to show it. Prints "ready" once every function exists.
import os
import sys

SRC = "\n" * 299 + "def spin(n):\n    x = 0\n    for i in range(n):\n        x = x + 3\n    return x\n"

d = sys.argv[1]
funcs = []
for name in sorted(os.listdir(d)):
    ns = {}
    exec(compile(SRC, os.path.join(d, name), "exec"), ns)
    funcs.append(ns["spin"])
print("ready", len(funcs), flush=True)
while True:
    for f in funcs:
        f(20000)
