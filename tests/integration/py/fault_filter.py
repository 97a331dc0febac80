#!/usr/bin/env python3
"""A sampler with a known defect, for the oracle gate's detection test.

Reads a real sampler's external-protocol lines (bpfpy oracle --help) on
stdin and passes them on, except that a share FAULT_IMPOSSIBLE (0..1,
default 0) of the stacks of flat_alternating's family a get hot_b in place
of hot_a: hot_b calling leaf_a mixes the families, which the case's rules
forbid. FAULT_SEED makes the draw repeatable. With FAULT_IMPOSSIBLE=0 it
is the same sampler, byte for byte.
"""
import os
import random
import sys

share = float(os.environ.get("FAULT_IMPOSSIBLE", "0"))
rng = random.Random(int(os.environ.get("FAULT_SEED", "1")))
out = sys.stdout
for line in sys.stdin:
    if share > 0 and "hot_a:" in line and "leaf_a:" in line and rng.random() < share:
        line = line.replace("hot_a:", "hot_b:")
    out.write(line)
    out.flush()  # 'S' marks the window's start: it must not wait in a buffer
