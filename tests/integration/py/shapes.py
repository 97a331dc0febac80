# Stack shapes for tests/integration/test_dump.sh, one thread each, every one
# parked in park(): a nested call chain, a generator, a method, a non-ASCII
# function name, code compiled at run time under a made-up file name, a
# coroutine under asyncio (main thread) and the reporter thread.
# "# L:key" marks the lines where the test expects frames of this file;
# "# M:key" the lines of MADE_UP_SRC (line 1 = the line after its opening).
# When every other thread is parked, the reporter prints one line,
#   ready KEY=NATIVE_ID:IDENT ...
# and parks too. park() prints and sleeps on one line, so the reporter's
# stack reads the same whenever the line has been seen.
import asyncio
import sys
import threading
import time


def park(msg=""):
    while True: msg and print(msg, flush=True); msg = ""; time.sleep(1000)  # L:park


def chain_c():
    park()  # L:chain_c


def chain_b():
    chain_c()  # L:chain_b


def chain_a():
    chain_b()  # L:chain_a


def gen():
    yield 1
    park()  # L:gen


def consume():
    for _ in gen():  # L:consume
        pass


class Worker:
    def method(self):
        park()  # L:method


def run_method():
    Worker().method()  # L:run_method


def naïve_処理_𠀋():
    park()  # L:nonascii


MADE_UP_SRC = """\
def made_up_func():
    park()  # M:made_up_func
made_up_func()  # M:made_up_module
"""


def run_compiled():
    code = compile(MADE_UP_SRC, "made_up.py", "exec")
    exec(code, {"park": park})  # L:run_compiled


async def coro_inner():
    park()  # L:coro_inner


async def coro_outer():
    await coro_inner()  # L:coro_outer


THREADS = {
    "chain": chain_a,
    "gen": consume,
    "method": run_method,
    "nonascii": naïve_処理_𠀋,
    "compiled": run_compiled,
}
PARK_LINE = park.__code__.co_firstlineno + 1


def reporter(threads):
    me = threading.get_ident()
    want = len(threads) + 1  # the others and the main thread
    while True:
        parked = [t for t, f in sys._current_frames().items()
                  if t != me and f.f_code is park.__code__ and f.f_lineno == PARK_LINE]
        if len(parked) == want:
            break
        time.sleep(0.01)
    main = threading.main_thread()
    ids = ["main=%d:%d" % (main.native_id, main.ident)]
    ids += ["%s=%d:%d" % (k, t.native_id, t.ident) for k, t in threads.items()]
    ids.append("reporter=%d:%d" % (threading.get_native_id(), me))
    park("ready " + " ".join(ids))  # L:reporter


def main():
    threads = {k: threading.Thread(target=f, name=k, daemon=True) for k, f in THREADS.items()}
    for t in threads.values():
        t.start()
    threading.Thread(target=reporter, args=(threads,), name="reporter", daemon=True).start()
    asyncio.run(coro_outer())  # L:main


main()  # L:module
