"""A hot loop whose instructions specialize, and an in-process instruction
tracer in the Ocular way, for scripts/bench_observer.py.

The loop (work()) does int arithmetic, instance attribute loads and Python
calls, all of which CPython 3.11+ quickens into specialized instructions
(BINARY_OP_ADD_INT, LOAD_ATTR_INSTANCE_VALUE, CALL_PY_EXACT_ARGS, ...). The
program counts its own iterations and prints, every WINDOW seconds,

    rate T_MONO ITERS_PER_S ITERS_PER_CPU_S CALLBACKS

(T_MONO: time.monotonic() at the window's end, the clock of the kernel's
bpf_ktime_get_ns; ITERS_PER_CPU_S: per second of this thread's CPU time,
user and system -- a trap into a uprobe counts, time the thread waited for
a CPU that other processes held does not; CALLBACKS: the tracer's
callbacks in the window).

The tracer (--tracer N, 3.12+): sys.monitoring INSTRUCTION events on every
code object; the callback counts hits per (code, offset) and returns
sys.monitoring.DISABLE for an offset at its N-th hit, which switches that
one instruction's event off. N = 0: never disable (the state before the
threshold, held). Once it prints "all-disabled T_MONO" every offset of the
hot loop's code is disabled (and the reporting code's too: they all run
more than N times in the first seconds).

--start S installs the tracer S seconds in (default 0), so that the windows
before are a baseline taken in the same run ("tracer-on T_MONO" marks it).

    python ocular_loop.py SECONDS [--tracer N] [--start S] [--window S]
"""
import sys
import time


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y


def step(p, i):
    return p.x * i + p.y


def work(n, p):
    s = 0
    for i in range(n):
        s = (s + step(p, i) + p.x) & 0xFFFF
    return s


class OcularTracer:
    """Per-offset counting with DISABLE after n hits (0: never)."""

    def __init__(self, n, hot):
        mon = sys.monitoring
        self.mon, self.n, self.hits, self.calls = mon, n, {}, 0
        self.hot = {c: set() for c in hot}  # hot code -> offsets still live
        self.all_disabled = None
        self.tool = mon.PROFILER_ID
        mon.use_tool_id(self.tool, "ocular_loop")
        mon.register_callback(self.tool, mon.events.INSTRUCTION, self.on_instruction)
        mon.set_events(self.tool, mon.events.INSTRUCTION)

    def on_instruction(self, code, offset):
        self.calls += 1
        key = (code, offset)
        h = self.hits.get(key, 0) + 1
        self.hits[key] = h
        live = self.hot.get(code)
        if live is not None and h == 1:
            live.add(offset)
        if self.n and h >= self.n:
            if live is not None:
                live.discard(offset)
                if self.all_disabled is None and not any(self.hot.values()):
                    self.all_disabled = time.monotonic()
            return self.mon.DISABLE
        return None


def main():
    seconds = float(sys.argv[1])
    args = sys.argv[2:]
    n_thr = int(args[args.index("--tracer") + 1]) if "--tracer" in args else None
    window = float(args[args.index("--window") + 1]) if "--window" in args else 0.25
    start = float(args[args.index("--start") + 1]) if "--start" in args else 0.0
    p = Point(3, 4)
    tracer = None
    print("ready", flush=True)
    t0 = time.monotonic()
    end = t0 + seconds
    last, iters, calls0, said = t0, 0, 0, False
    cpu_last = time.thread_time()
    while True:
        work(2000, p)
        iters += 2000
        now = time.monotonic()
        if n_thr is not None and tracer is None and now - t0 >= start:
            tracer = OcularTracer(n_thr, [work.__code__, step.__code__])
            print("tracer-on %.4f" % time.monotonic(), flush=True)
            last, iters, cpu_last = time.monotonic(), 0, time.thread_time()
            continue
        if now - last >= window:
            calls = tracer.calls if tracer else 0
            cpu = time.thread_time()
            print("rate %.4f %.1f %.1f %d" % (now, iters / (now - last),
                                              iters / max(cpu - cpu_last, 1e-9), calls - calls0),
                  flush=True)
            last, iters, calls0, cpu_last = now, 0, calls, cpu
            if tracer and tracer.all_disabled and not said:
                print("all-disabled %.4f" % tracer.all_disabled, flush=True)
                said = True
            if now >= end:
                break


main()
