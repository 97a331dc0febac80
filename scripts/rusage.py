"""rusage.py OUT CMD...: run CMD, then write "user sys maxrss_kb elapsed" of
it to OUT, the times in seconds to the microsecond (wait4's rusage). GNU
time prints hundredths, and 10 ms is 0.1% of a core over a 10 s run: the
step of scripts/bench_system.sh's CPU goal itself. Exits as CMD did. CMD is
this process's only child (bench_system.sh finds it with pgrep -P)."""
import os
import sys
import time


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: rusage.py OUT CMD...")
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(sys.argv[2], sys.argv[2:])
        finally:
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    with open(sys.argv[1], "w") as f:
        f.write("%.6f %.6f %d %.3f\n" % (ru.ru_utime, ru.ru_stime, ru.ru_maxrss,
                                        time.monotonic() - t0))
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
