"""oversized_chunk: frames of ~14 KB that force new data-stack chunks.

a_outer and a_inner take 1800 parameters each, so each frame holds 1800
locals; since 3.11 such frames do not fit the thread's current data-stack
chunk and CPython allocates new chunks, which a walker must follow. The a
family is compiled as file "a.py", the b family as "b.py".
"""
from _oracle import progress

N_PARAMS = 1800

TEMPLATE = """
def {p}_outer({params}):
    return {p}_inner()

def {p}_inner({params}):
    return {p}_hot()

def {p}_hot():
    total = 0
    for i in range(20000):
        total += i
    return total
"""


def family(p):
    params = ", ".join("x%d=0" % i for i in range(N_PARAMS))
    ns = {}
    exec(compile(TEMPLATE.format(p=p, params=params), p + ".py", "exec"), ns)
    return ns[p + "_outer"]


def main():
    a_outer = family("a")
    b_outer = family("b")
    while True:
        a_outer()
        b_outer()
        progress[0] += 1


if __name__ == "__main__":
    main()
