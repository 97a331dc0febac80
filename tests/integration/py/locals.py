# dump --locals target (tests/integration/test_dump_locals.sh): one
# function blocks with locals of every kind the dump shows by value, a cell
# captured by a closure, a string long enough to be cut, a class that
# borrows the name "int" and a str subclass (both shown by type, not read),
# called from a function compiled at run time with 70 locals (more than the
# 64 a frame shows). Prints "ready" once it is blocked, then sleeps until
# killed.
import sys
import time

Impostor = type("int", (), {})


class Sub(str):
    pass


def holder(arg_int):
    neg_big = -(2**100 + 12345)
    huge = 10**500
    real = 2.5
    tenth = 0.1
    text = "tab\there \x1b[2J caf\u00e9 \u20ac \U0001f600"
    data = b"\x00\xffab\\"
    nothing = None
    yes = True
    no = False
    items = [1, 2, 3]
    captured = "in a cell"
    long_text = "x" * 10000
    impostor = Impostor()
    sub = Sub("abc")

    def inner():
        return captured

    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        time.sleep(0.05)  # L:block
    return inner, neg_big, huge, real, tenth, text, data, nothing, yes, no, items, long_text


WIDE = "def wide():\n" + "".join("    v%d = %d\n" % (i, i * 7) for i in range(70)) + "    holder(42)\n"
exec(compile(WIDE, "wide_made.py", "exec"))
wide()  # noqa: F821 (defined by the exec above)
