"""A stand-in for pyperf, so that pyperformance's benchmark files run
unchanged as `bpfpy oracle --snippet` programs (scripts/oracle_pyperformance.sh).

pyperf's Runner spawns worker processes, calibrates and writes statistics;
a sampler watching one process would see the parent wait. This Runner runs
the first benchmark the file asks for in this process, in a loop, until the
oracle ends the window (SIGTERM). What the benchmark itself runs is
pyperformance's code, unchanged: only the harness around it is replaced.

Covers what the benchmark files use: Runner(add_cmdline_args=...),
.argparser, .parse_args(), .metadata, bench_func, bench_time_func,
bench_async_func, and perf_counter.
"""
import argparse
import time

perf_counter = time.perf_counter


class Runner:
    def __init__(self, *args, **kwargs):
        self.argparser = argparse.ArgumentParser()
        self.metadata = {}
        self._args = None

    def parse_args(self, args=None):
        if self._args is None:
            self._args = self.argparser.parse_args(args)
        return self._args

    def bench_func(self, name, func, *args, **kwargs):
        self.parse_args()
        while True:
            func(*args)

    def bench_time_func(self, name, func, *args, **kwargs):
        # func(loops, *args) times loops rounds of its body itself
        self.parse_args()
        while True:
            func(1, *args)

    def bench_async_func(self, name, func, *args, **kwargs):
        import asyncio

        self.parse_args()
        while True:
            asyncio.run(func(*args))
