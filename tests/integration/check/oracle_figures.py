# test_oracle.sh: the --json of one oracle run (flat_alternating and
# ground_truth, modes ptrace and bpf): samples, no impossible stack,
# tvd_truth computed, bpf's tvd_excess at most TOL. Prints what is wrong.
#   oracle_figures.py FILE.json TOL
import json, sys
d = json.load(open(sys.argv[1])); tol = float(sys.argv[2]); fail = 0
def run(case, mode):
    c = next(c for c in d["cases"] if c["name"] == case)
    return next(m for m in c["modes"] if m["mode"] == mode)["runs"][0]
def check(cond, what):
    global fail
    if not cond:
        print("  " + what); fail = 1
for mode in ("ptrace", "bpf"):
    r = run("flat_alternating", mode)
    check(r["samples"] > 20, "%s: only %d samples" % (mode, r["samples"]))
    check(r["impossible"] == 0, "%s: %d impossible: %s" % (mode, r["impossible"], r["impossible_stacks"]))
    t = run("ground_truth", mode)
    check(t["tvd_truth"] is not None, "%s: ground_truth: no tvd_truth (truth=%s)" % (mode, t["truth"]))
b = run("flat_alternating", "bpf")
check(b["tvd_excess"] is not None and b["tvd_excess"] <= tol,
      "bpf tvd_excess %s > %s; bpf %s; ref %s" % (b["tvd_excess"], tol, b["distribution"],
                                                 run("flat_alternating", "ptrace")["distribution"]))
sys.exit(fail)
