# test_trace.sh, the detach: py/trace_calls.py's batch timings (its output
# file), the first (probes attached) against the median of the last ten
# (detached): more than twice as slow.
#   trace_speedup.py TARGET_OUTPUT
import sys
b = [float(l.split()[1]) for l in open(sys.argv[1]) if l.startswith("batch")]
first, last = b[0], sorted(b[-10:])[5]
print("first %.6f last %.6f" % (first, last))
assert first > 2 * last
