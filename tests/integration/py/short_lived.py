# Short-lived code for tests/integration/test_short_lived.sh (issue 12 item
# 2): like snippets/code_object_reuse.py, compile, exec, call and delete
# func_a (from A_file.py), then func_b (from B_file.py), in a tight loop, so
# that most code objects a sample shows are freed a few hundred microseconds
# later, often before user space reads their names. Prints "ready" once
# both have run, then loops until killed.
SRC_A = """
def func_a():
    total = 0
    for i in range(3000):
        total += i
    return total
"""
SRC_B = SRC_A.replace("func_a", "func_b").replace("+=", "-=")


def load(src, filename):
    ns = {}
    exec(compile(src, filename, "exec"), ns)
    return ns


def churn():
    ns = load(SRC_A, "A_file.py")
    ns["func_a"]()
    del ns
    ns = load(SRC_B, "B_file.py")
    ns["func_b"]()
    del ns


churn()
print("ready", flush=True)
while True:
    churn()
