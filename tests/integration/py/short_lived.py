# Short-lived code for tests/integration/test_short_lived.sh (issue 12 item
# 2): like snippets/code_object_reuse.py, compile, exec, call and delete
# func_a (from A_file.py), then func_b (from B_file.py), in a tight loop, so
# that most code objects a sample shows are freed a few hundred microseconds
# later, often before user space reads their names. Prints "ready" once
# both have run, then loops until killed.
# One template for both, so that only the name, the sign and the file differ.
TEMPLATE = "\ndef func_%s():\n    total = 0\n    for i in range(3000):\n        total %s= i\n    return total\n"
PAIRS = [(TEMPLATE % (n, op), "%s_file.py" % n.upper(), "func_" + n) for n, op in (("a", "+"), ("b", "-"))]


def churn():
    for src, filename, name in PAIRS:
        ns = {}
        exec(compile(src, filename, "exec"), ns)
        ns[name]()
        del ns


churn()
print("ready", flush=True)
while True:
    churn()
