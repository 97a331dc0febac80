"""code_object_reuse: compile, exec, call and delete func_a, then func_b.

func_a comes from a file named A_file.py, func_b from B_file.py. Each is
freed before the other is compiled, so the allocator hands the new code
object the old one's address: a sampler that caches code objects by address
without checking them reports one function with the other's name or file.
"""
from _oracle import progress

SRC_A = """
def func_a():
    total = 0
    for i in range(5000):
        total += i
    return total
"""

SRC_B = """
def func_b():
    total = 0
    for i in range(5000):
        total -= i
    return total
"""


def load(src, filename):
    ns = {}
    exec(compile(src, filename, "exec"), ns)
    return ns


def main():
    while True:
        ns = load(SRC_A, "A_file.py")
        ns["func_a"]()
        del ns
        ns = load(SRC_B, "B_file.py")
        ns["func_b"]()
        del ns
        progress[0] += 1


if __name__ == "__main__":
    main()
