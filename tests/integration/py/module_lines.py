# Module-level code with a long line table, each object run once and then
# freed, for tests/integration/test_short_lived.sh. A module's top-level
# code object is freed once its import ran it, often before bpfpy reads
# it: such frames are named from what the kernel copied on first sight.
# Here generated modules (FILLER assignments, then a loop that burns CPU
# for BURST seconds) run one after the other under the file name
# gen_module.py, each compiled anew, for SECONDS in all:
#   module_lines.py [SECONDS]
# Prints "hot LINE" for the loop's two lines (the lines the test expects),
# then "ready", then runs them. 800 filler lines make a line table of
# 1.6 KB on 3.8-3.10 and 3-5 KB on 3.11+: past the first 256 bytes that
# the kernel copied before, and past its first 1 KiB chunk.
import sys
import time

FILLER = 800
BURST = 0.01
seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
lines = ["v%d = %d" % (i, i) for i in range(FILLER)]
lines += [
    "t = time.process_time() + BURST",
    "n = 0",
    "while time.process_time() < t:",
    "    n += 1",
]
source = "\n".join(lines) + "\n"
first_hot = FILLER + 3  # 1-based: the while line, then its body
for i in range(2):
    print("hot %d" % (first_hot + i))
print("ready", flush=True)
end = time.monotonic() + seconds
while time.monotonic() < end:
    exec(compile(source, "gen_module.py", "exec"), {"time": time, "BURST": BURST})
